//! Inline enumerations: "ログイン、ログアウト、セッション管理を実装する",
//! "A・B・Cを追加", "AとBを実装", "Add filtering, sorting and paging". Each part
//! becomes a self-contained requirement carrying the shared verb ("ログインを実装する",
//! "Add filtering").
//!
//! Splitting is deliberately conservative (seed 001 §10.8, over-decomposition):
//! separators inside brackets, quotes or backticks never split, and an English
//! "and" only splits a list led by a work verb whose parts are short.

/// Splits a paragraph into sentences (`。`, `！`, `？`, or `. ` / `! ` / `? `).
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let chars: Vec<char> = text.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        let end = match c {
            '。' | '！' | '？' => true,
            '.' | '!' | '?' => chars.get(i + 1).is_none_or(|n| n.is_whitespace()),
            _ => false,
        };
        if end {
            push_trimmed(&mut out, &cur);
            cur.clear();
        }
    }
    push_trimmed(&mut out, &cur);
    out
}

fn push_trimmed(out: &mut Vec<String>, s: &str) {
    let t = s.trim();
    if !t.is_empty() {
        out.push(t.to_string());
    }
}

/// Japanese object markers followed by a work verb: the list is before the marker.
const JA_PREDICATES: &[&str] = &[
    "を実装",
    "を追加",
    "を作成",
    "を修正",
    "を対応",
    "に対応",
    "を改善",
    "を削除",
    "をサポート",
    "を導入",
    "を整備",
    "を用意",
    "を提供",
    "を行",
    "を更新",
    "を変更",
    "を書",
    "を実現",
    "の実装",
    "の追加",
    "の作成",
    "の修正",
    "の対応",
    "の改善",
];

/// English verbs that lead a list of work items.
const EN_VERBS: &[&str] = &[
    "add",
    "implement",
    "create",
    "support",
    "introduce",
    "build",
    "write",
    "provide",
    "expose",
    "fix",
    "document",
    "remove",
    "update",
    "refactor",
];

/// Splits one sentence into its enumerated parts. Returns fewer than two parts when
/// the sentence is not an enumeration.
pub fn split_inline(sentence: &str) -> Vec<String> {
    let s = sentence
        .trim()
        .trim_end_matches(['。', '.', '！', '!'])
        .trim();
    if super::detect_language(s) == super::Language::Ja {
        split_japanese(s)
    } else {
        split_english(s)
    }
}

fn split_japanese(s: &str) -> Vec<String> {
    // The list ends at the last object marker + verb; everything after is the shared
    // predicate ("を実装する").
    let Some((pos, _)) = JA_PREDICATES
        .iter()
        .filter_map(|p| s.rfind(p).map(|i| (i, *p)))
        .max_by_key(|(i, _)| *i)
    else {
        return split_plain_ja(s);
    };
    let (head, predicate) = s.split_at(pos);
    // A leading clause ("本リクエストでは、") is not part of the list: keep what
    // follows the last "は、"/"で、".
    let head = match head.rfind("では、").or_else(|| head.rfind("は、")) {
        Some(i) => {
            let cut = head[i..].find('、').map_or(i, |j| i + j + '、'.len_utf8());
            &head[cut..]
        }
        None => head,
    };
    let parts = split_top_level(head, &['、', ',', '，', '・', '/', '／']);
    let parts = split_last_conjunction(parts, &["および", "及び", "並びに", "と"]);
    if parts.len() < 2 {
        return Vec::new();
    }
    parts
        .into_iter()
        .map(|p| format!("{p}{predicate}"))
        .collect()
}

/// "A・B・C" with no predicate.
fn split_plain_ja(s: &str) -> Vec<String> {
    let parts = split_top_level(s, &['・', '、']);
    if parts.len() >= 3 { parts } else { Vec::new() }
}

fn split_english(s: &str) -> Vec<String> {
    let lower = s.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or("");
    let led_by_verb = EN_VERBS.contains(&first);
    let (verb, rest) = if led_by_verb {
        let idx = s.find(char::is_whitespace).unwrap_or(s.len());
        (s[..idx].to_string(), s[idx..].trim())
    } else {
        (String::new(), s)
    };
    // "Add `f(x)` to `core.py`: it returns …, ordered by …" — what follows a
    // colon after the object describes that one item; only "Add the following:
    // a, b, c" (a colon right after a word or two) introduces a list.
    let rest = match split_top_level(rest, &[':']).as_slice() {
        [head, _, ..] if led_by_verb && !introduces_list(head) => return Vec::new(),
        // Everything from the list's first item on (a match starts on a char
        // boundary; the parts are trimmed, so lengths do not locate it).
        [head, tail, ..] if introduces_list(head) => match rest.find(tail.as_str()) {
            Some(at) => rest[at..].trim(),
            None => rest,
        },
        _ => rest,
    };
    let mut parts = split_top_level(rest, &[',', ';']);
    // "…, with tests for both": a trailing modifier that names the whole list
    // belongs to every item, not only the last.
    let shared = match parts.last() {
        Some(last) if parts.len() >= 2 => shared_modifier(last),
        _ => None,
    };
    if shared.is_some() {
        parts.pop();
    }
    // "A, B, and C" / "A, B and C"
    let had_commas = parts.len() >= 2;
    if let Some(last) = parts.pop() {
        let last = last
            .strip_prefix("and ")
            .or_else(|| last.strip_prefix("or "))
            .unwrap_or(&last)
            .to_string();
        let pieces: Vec<&str> = last.splitn(2, " and ").collect();
        let short = |x: &str| x.split_whitespace().count() <= 5;
        if pieces.len() == 2
            && (had_commas
                || (led_by_verb && (shared.is_some() || (short(pieces[0]) && short(pieces[1])))))
        {
            parts.push(pieces[0].trim().to_string());
            parts.push(pieces[1].trim().to_string());
        } else {
            parts.push(last.trim().to_string());
        }
    }
    parts.retain(|p| !p.is_empty());
    // "Add `a` and `b` to `x.py`": the place the last item names is every
    // item's that names none.
    if let Some(place) = parts
        .last()
        .and_then(|l| trailing_place(l))
        .map(str::to_string)
    {
        let n = parts.len();
        for p in parts.iter_mut().take(n - 1) {
            if trailing_place(p).is_none() && !names_a_place(p) {
                p.push_str(&place);
            }
        }
    }
    if let Some(m) = &shared {
        for p in &mut parts {
            p.push_str(", ");
            p.push_str(m);
        }
    }
    // A trailing participle ("…, sorted") qualifies the item before it; so does
    // an appositive ("`fromMeters`, the inverse of `toMeters`, …").
    let mut merged: Vec<String> = Vec::new();
    for p in parts {
        let p = p
            .strip_prefix("and ")
            .or_else(|| p.strip_prefix("or "))
            .map_or(p.clone(), str::to_string);
        match merged.last_mut() {
            Some(prev) if (!p.contains(' ') && p.ends_with("ed")) || is_appositive(&p) => {
                prev.push_str(", ");
                prev.push_str(&p);
            }
            _ => merged.push(p),
        }
    }
    let parts = merged;
    // Clauses of one sentence are not items: a part with a subject pronoun or a
    // relative word ("it returns …", "which …") or a participle modifier
    // ("ordered by …", "ties broken by …") qualifies the item before it.
    if parts.iter().any(|p| is_clause(p)) {
        return Vec::new();
    }
    // Without a leading verb, only an explicit comma list of short noun phrases counts.
    if parts.len() < 2
        || (!led_by_verb
            && (parts.len() < 3 || parts.iter().any(|p| p.split_whitespace().count() > 6)))
    {
        return Vec::new();
    }
    if verb.is_empty() {
        parts
    } else {
        // A part with its own verb ("…, and document them in the README") keeps it.
        parts
            .into_iter()
            .map(|p| {
                let own = p.split_whitespace().next().unwrap_or("").to_lowercase();
                if EN_VERBS.contains(&own.as_str()) || EXTRA_VERBS.contains(&own.as_str()) {
                    upper_first(&p)
                } else {
                    format!("{verb} {p}")
                }
            })
            .collect()
    }
}

/// The " to `path`" / " in `path`" / " into `path`" that ends an item, when
/// the backticked place looks like a file or directory (`words.py`, `src/`).
fn trailing_place(part: &str) -> Option<&str> {
    [" to `", " in `", " into `"].iter().find_map(|prep| {
        let at = part.rfind(prep)?;
        let place = part[at + prep.len()..].strip_suffix('`')?;
        (!place.is_empty() && !place.contains(['`', ' ']) && place.contains(['/', '.']))
            .then_some(&part[at..])
    })
}

/// Whether an item names a place of its own (" in a new file `x.js`").
fn names_a_place(part: &str) -> bool {
    let lower = part.to_lowercase();
    [" to ", " in ", " into "].iter().any(|p| lower.contains(p))
}

/// A modifier of every item of a list ("with tests for both", "each with a
/// test"), without its pointer back to the list ("with tests").
fn shared_modifier(part: &str) -> Option<String> {
    let lower = part.trim().to_lowercase();
    let modifier = ["with ", "each with ", "including ", "plus "]
        .iter()
        .any(|m| lower.starts_with(m));
    const ALL: &[&str] = &[
        " for both of them",
        " for all of them",
        " for each of them",
        " for both",
        " for each",
        " for all",
        " for them",
    ];
    let cut = ALL.iter().find_map(|a| lower.find(a));
    let each = lower.starts_with("each with ");
    if !modifier || (cut.is_none() && !each) {
        return None;
    }
    let text = part.trim();
    let text = match cut {
        Some(i) => text[..i].trim_end(),
        None => text,
    };
    Some(text.strip_prefix("each ").unwrap_or(text).to_string())
}

/// The text before a colon introduces a list ("the following", "these", "two
/// options") rather than naming the one thing the sentence adds.
fn introduces_list(head: &str) -> bool {
    let lower = head.trim().to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    const COUNTS: &[&str] = &[
        "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "several",
    ];
    words.len() <= 1
        || words
            .iter()
            .any(|w| COUNTS.contains(w) || w.chars().all(|c| c.is_ascii_digit()))
        || words.last().is_some_and(|w| {
            matches!(
                *w,
                "following" | "these" | "items" | "features" | "options" | "commands" | "fields"
            )
        })
}

/// A noun phrase naming what the item before it is ("the inverse of `f`", "a
/// shorthand for `g`"): a determiner, a few words, " of " / " for ", no verb of
/// its own.
fn is_appositive(part: &str) -> bool {
    let lower = part.trim().to_lowercase();
    let words: Vec<&str> = lower.split_whitespace().collect();
    matches!(words.first(), Some(&("the" | "a" | "an")))
        && words.len() <= 6
        && words[1..].iter().any(|w| matches!(*w, "of" | "for"))
        && !words[1..]
            .iter()
            .any(|w| EN_VERBS.contains(w) || EXTRA_VERBS.contains(w))
}

/// A part that is a clause or a modifier of the item before it, not an item.
fn is_clause(part: &str) -> bool {
    let lower = part.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '_' && c != '`')
        .filter(|w| !w.is_empty())
        .collect();
    let pronoun = words.first().is_some_and(|w| {
        matches!(
            *w,
            "it" | "they" | "which" | "whose" | "where" | "so" | "then" | "its" | "their"
        )
    });
    let participle_by = words.windows(2).any(|p| {
        p[1] == "by"
            && (p[0].ends_with("ed")
                || matches!(
                    p[0],
                    "broken" | "given" | "shown" | "driven" | "written" | "chosen"
                ))
    });
    // A modifier phrase: "with title as the default", "keeping … in order".
    let modifier = words.first().is_some_and(|w| {
        matches!(
            *w,
            "with"
                | "without"
                | "by"
                | "using"
                | "keeping"
                | "unless"
                | "except"
                | "including"
                | "falling"
                | "so"
                | "while"
                | "instead"
                // An adverbial phrase: "…, the way `pip` does", "…, for users who …",
                // "…, as `list` does", "…, because …".
                | "for"
                | "as"
                | "like"
                | "because"
                | "since"
                | "when"
                | "if"
                | "although"
                | "though"
                | "once"
                | "until"
        )
    }) || words.starts_with(&["the", "way"]);
    // A relative clause holds the commas that follow it ("… that orders by a, b or c").
    // So does a participle describing the item ("`age(today)` returning …, zero
    // for …").
    let relative = words.iter().skip(1).any(|w| {
        matches!(
            *w,
            "that" | "who" | "returning" | "taking" | "accepting" | "giving" | "yielding"
        )
    });
    // A past participle leading the part describes the item before it
    // ("…, built on the factors of `x.js`, …", "…, based on …").
    let participle = words.first().is_some_and(|w| {
        matches!(
            *w,
            "built"
                | "based"
                | "made"
                | "written"
                | "kept"
                | "given"
                | "derived"
                | "computed"
                | "backed"
                | "driven"
                | "modelled"
                | "modeled"
                | "shared"
                | "stored"
                | "named"
        )
    });
    pronoun || participle_by || modifier || relative || participle
}

/// Verbs that start a clause of their own inside a list but do not lead one.
const EXTRA_VERBS: &[&str] = &[
    "describe", "explain", "mention", "rename", "delete", "make", "handle", "validate", "list",
    "show",
];

fn upper_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Splits on any of `seps` outside (), [], 「」, "", and backticks.
fn split_top_level(s: &str, seps: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut depth = 0i32;
    let mut in_tick = false;
    let mut in_quote = false;
    for c in s.chars() {
        match c {
            '`' => in_tick = !in_tick,
            '"' => in_quote = !in_quote,
            '(' | '[' | '（' | '「' | '『' | '【' => depth += 1,
            ')' | ']' | '）' | '」' | '』' | '】' => depth -= 1,
            _ => {}
        }
        if depth <= 0 && !in_tick && !in_quote && seps.contains(&c) {
            push_trimmed(&mut out, &cur);
            cur.clear();
        } else {
            cur.push(c);
        }
    }
    push_trimmed(&mut out, &cur);
    out
}

/// Splits the last part once on a conjunction ("AとB"), when both sides are words.
fn split_last_conjunction(mut parts: Vec<String>, conjunctions: &[&str]) -> Vec<String> {
    let Some(last) = parts.pop() else {
        return parts;
    };
    for conj in conjunctions {
        if let Some(i) = last.find(conj) {
            let (a, b) = (&last[..i], &last[i + conj.len()..]);
            if a.chars().count() >= 2 && b.chars().count() >= 2 && !b.contains(conj) {
                parts.push(a.trim().to_string());
                parts.push(b.trim().to_string());
                return parts;
            }
        }
    }
    parts.push(last);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Found by the intake fuzz test: a list after a colon whose first item
    /// starts with a multi-byte character.
    #[test]
    fn a_list_after_a_colon_is_cut_on_a_char_boundary() {
        assert!(crate::request::Request::from_text("*id: ## *id: id: 、When").is_ok());
        assert!(crate::request::Request::from_text("Add the following:  、a, b, c").is_ok());
    }

    #[test]
    fn japanese_list_shares_the_predicate() {
        assert_eq!(
            split_inline("ログイン、ログアウト、セッション管理を実装する。"),
            vec![
                "ログインを実装する",
                "ログアウトを実装する",
                "セッション管理を実装する"
            ]
        );
        assert_eq!(
            split_inline("タグ・期限・優先度を追加"),
            vec!["タグを追加", "期限を追加", "優先度を追加"]
        );
        assert_eq!(
            split_inline("検索とフィルタを実装したい"),
            vec!["検索を実装したい", "フィルタを実装したい"]
        );
        assert_eq!(
            split_inline("このリクエストでは、A、B、Cを実装する"),
            vec!["Aを実装する", "Bを実装する", "Cを実装する"]
        );
    }

    #[test]
    fn japanese_without_list_is_not_split() {
        assert!(split_inline("ログイン機能を実装する").is_empty());
        assert!(split_inline("「A、B」を実装する").is_empty());
    }

    #[test]
    fn english_lists() {
        assert_eq!(
            split_inline("Add filtering, sorting, and paging."),
            vec!["Add filtering", "Add sorting", "Add paging"]
        );
        assert_eq!(
            split_inline("Implement login and logout"),
            vec!["Implement login", "Implement logout"]
        );
        assert_eq!(
            split_inline(
                "Add subtract and multiply functions to calc.py, and document them in the README"
            ),
            vec![
                "Add subtract and multiply functions to calc.py",
                "Document them in the README"
            ]
        );
        assert_eq!(
            split_inline("tags, due dates and priorities"),
            vec!["tags", "due dates", "priorities"]
        );
    }

    #[test]
    fn one_feature_in_prose_is_not_split() {
        assert!(
            split_inline(
                "Add `overdue(books, today)` to `bookshelf/models.py`: it returns the loans past due, ordered by due date, ties broken by title."
            )
            .is_empty()
        );
        assert!(
            split_inline("Add a `--limit` option, which caps the rows, and a short help text")
                .is_empty()
        );
        assert_eq!(
            split_inline("Add the following: tags, due dates and priorities"),
            vec!["Add tags", "Add due dates", "Add priorities"]
        );
    }

    #[test]
    fn english_prose_is_not_split() {
        // An appositive describes the item before it.
        let parts = split_inline(
            "Add `fromMeters(value, unit)` to `src/length.js`, the inverse of `toMeters`, and export it from the package",
        );
        assert!(
            parts
                .first()
                .is_some_and(|p| p.contains("the inverse of `toMeters`"))
                && !parts.iter().any(|p| p.starts_with("Add the inverse")),
            "{parts:?}"
        );
        // A participle phrase describes the item: not an enumeration.
        assert!(
            split_inline(
                "Add `convert(v, a, b)` in a new file `src/convert.js`, built on the factors of `src/length.js`, and export it from `index.js`"
            )
            .is_empty()
        );
        // The place the last item names is the others' too.
        assert_eq!(
            split_inline("Add `first(s)` and `last(s)` to `pkg/words.py`, with tests for both"),
            vec![
                "Add `first(s)` to `pkg/words.py`, with tests",
                "Add `last(s)` to `pkg/words.py`, with tests"
            ]
        );
        // An item naming its own place keeps it.
        assert_eq!(
            split_inline("Add `area` in `src/area.js`, and `liters` to `src/volume.js`"),
            vec![
                "Add `area` in `src/area.js`",
                "Add `liters` to `src/volume.js`"
            ]
        );
        assert!(split_inline("Sort tasks by due date and priority").is_empty());
        assert!(split_inline("Make the cache faster").is_empty());
        assert!(split_inline("Add `a, b` handling").is_empty());
    }

    #[test]
    fn sentences_split_on_both_scripts() {
        assert_eq!(
            sentences("一文目。二文目。Third one. Fourth"),
            vec!["一文目。", "二文目。", "Third one.", "Fourth"]
        );
        assert_eq!(sentences("see v1.2 now"), vec!["see v1.2 now"]);
    }
}
