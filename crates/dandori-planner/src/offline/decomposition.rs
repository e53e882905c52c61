//! Work items from a request: units of work, each a change to code that makes
//! sense on its own (a function with its export and its tests is one unit). The
//! request's enumerated requirements (bullets, numbered items, an inline "add A
//! and B") are grouped into units: an item that names nothing new (a property,
//! "export it", the tests or docs of what the others add) joins the unit it
//! belongs to. Fewer than two units: the request as one item. Acceptance
//! criteria never become items: they attach to the steps that can make them
//! true. Items over `max_subtasks` are merged into the last one.

use std::collections::BTreeSet;

use crate::request::{Request, RequirementOrigin};

/// What an item is about, for dependency ordering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    /// Defines an interface, schema, model or type.
    Definition,
    /// Implements or changes behaviour.
    Implementation,
    /// Adds or changes tests.
    Test,
    /// Documentation.
    Docs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Two or more units of work from the enumerated requirements.
    Enumeration,
    /// The request as one unit of work.
    Whole,
}

impl Source {
    pub fn describe(&self) -> &'static str {
        match self {
            Source::Enumeration => "the units of work the request enumerates",
            Source::Whole => "the request as one unit of work",
        }
    }

    pub fn describe_ja(&self) -> &'static str {
        match self {
            Source::Enumeration => "リクエストに列挙された作業単位",
            Source::Whole => "一つの作業単位としてのリクエスト",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    pub title: String,
    pub details: Vec<String>,
    pub kind: ItemKind,
    /// Items merged into this one because of `max_subtasks`.
    pub merged: usize,
    /// Texts of the merged items.
    pub merged_titles: Vec<String>,
    /// For the request as one item: its summary beyond the title (cut at 80
    /// characters). Read for the item's kind and the files it implies (an
    /// export, `python -m pkg`, a failing test), not for retrieval.
    pub context: String,
}

impl Item {
    fn new(title: String, details: Vec<String>) -> Item {
        let kind = classify(&format!("{title} {}", details.join(" ")));
        Item {
            title,
            details,
            kind,
            merged: 0,
            merged_titles: Vec::new(),
            context: String::new(),
        }
    }

    /// The item's text and its context.
    pub fn full_text(&self) -> String {
        if self.context.is_empty() {
            self.intent()
        } else {
            let intent = self.intent();
            let sep = if intent.ends_with(['.', '。', '!', '?']) {
                " "
            } else {
                ". "
            };
            format!("{intent}{sep}{}", self.context)
        }
    }

    /// The full text of the item: title, details, merged items.
    pub fn intent(&self) -> String {
        let mut s = self.title.clone();
        if !self.details.is_empty() {
            s.push_str(" — ");
            s.push_str(&self.details.join("; "));
        }
        for m in &self.merged_titles {
            s.push_str("; ");
            s.push_str(m);
        }
        s
    }
}

const DEFINITION_WORDS: &[&str] = &[
    "define",
    "definition",
    "interface",
    "schema",
    "model",
    "type ",
    "types",
    "enum",
    "struct",
    "protocol",
    "dataclass",
    "migration",
    "定義",
    "インターフェース",
    "インタフェース",
    "スキーマ",
    "型",
    "モデル",
    "列挙",
];
const TEST_WORDS: &[&str] = &["test", "spec ", "テスト", "試験"];

/// `word` (lower case) speaks of tests: it starts with "test" (`tests`,
/// `testing`), is "spec(s)", or holds the Japanese words. Not a word that holds
/// "test" inside (`pytest`, `latest`, `contest`): a tool or another word.
fn test_word(word: &str) -> bool {
    word.split('-')
        .any(|part| part.starts_with("test") || part.starts_with("unittest"))
        || matches!(word, "spec" | "specs")
        || TEST_WORDS[2..].iter().any(|w| word.contains(w))
}
/// A test that fails names a bug, not test work.
const FAILURE_WORDS: &[&str] = &[
    " fails",
    " failing",
    " fail ",
    " failed",
    " broken",
    " breaks",
    "が失敗",
    "が落ちる",
    "失败",
];
const DOC_WORDS: &[&str] = &[
    "readme",
    "document",
    "docs",
    "changelog",
    // A titled section ("a \"Lengths\" section") is a section of a document.
    "\" section",
    "\u{201d} section",
    "ドキュメント",
    "文書",
    "説明書",
    "マニュアル",
];
/// The text asks for documentation.
pub(crate) fn mentions_docs(text: &str) -> bool {
    let t = text.to_lowercase();
    DOC_WORDS.iter().any(|w| t.contains(w))
}

const IMPLEMENT_WORDS: &[&str] = &[
    "implement",
    "export",
    "add ",
    "use ",
    "support",
    "handle",
    "expose",
    "endpoint",
    "command",
    "実装",
    "利用",
    "追加",
    "対応",
    "使用",
];

/// Keyword classes (English and Japanese). Tests and docs win over definitions when
/// an item is mainly about them ("add tests for the model").
pub fn classify(text: &str) -> ItemKind {
    let t = format!("{} ", text.to_lowercase());
    let first_words: String = t.split_whitespace().take(4).collect::<Vec<_>>().join(" ") + " ";
    let has = |words: &[&str], s: &str| words.iter().any(|w| s.contains(w));
    // "`tests/test_x.py` fails: …" reports a bug through a test; the fix is code.
    let failing_test = has(FAILURE_WORDS, &t)
        && !["add ", "write ", "create "]
            .iter()
            .any(|v| first_words.starts_with(v));
    if !failing_test
        && (names_tests(&first_words)
            || (names_tests(&t) && !has(IMPLEMENT_WORDS, &t) && !has(DEFINITION_WORDS, &t)))
    {
        ItemKind::Test
    } else if has(DOC_WORDS, &first_words) || (has(DOC_WORDS, &t) && !has(IMPLEMENT_WORDS, &t)) {
        ItemKind::Docs
    } else if has(DEFINITION_WORDS, &t) && !has(&["implement", "実装"], &t) {
        ItemKind::Definition
    } else {
        ItemKind::Implementation
    }
}

/// The words speak of tests: "test" as a word, not inside a path or an
/// identifier a quoted stack trace holds (`test/import.test.js:14:10`,
/// `TestContext.<anonymous>`, `node:internal/test_runner`), which says where a
/// failure showed, not that the work is tests.
fn names_tests(t: &str) -> bool {
    t.split_whitespace().any(|token| {
        let word = token.trim_matches(|c: char| !c.is_alphanumeric());
        let code_like = word.is_ascii() && word.contains(['/', '.', ':', '_', '(', '<', '\\']);
        !code_like && test_word(word)
    })
}

pub fn items(req: &Request, max_subtasks: usize) -> (Vec<Item>, Source) {
    let units = if enumerated(req) {
        units(req)
    } else {
        Vec::new()
    };
    let (mut items, source) = if units.len() >= 2 {
        (units, Source::Enumeration)
    } else {
        let details = req.requirements.clone();
        let mut item = Item::new(req.title.clone(), details);
        // The request as one item holds all of its prose, not only the title
        // (the first line, cut at 80 characters) nor only the summary's first
        // three sentences: "… Export it from the package." is part of the work.
        item.context = req
            .prose
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && *l != req.title)
            .collect::<Vec<_>>()
            .join(" ");
        if !item.context.is_empty() {
            item.kind = classify(&item.full_text());
        }
        (vec![item], Source::Whole)
    };
    let cap = max_subtasks.max(1);
    if items.len() > cap {
        let tail: Vec<Item> = items.split_off(cap - 1);
        let mut merged = tail[0].clone();
        for extra in &tail[1..] {
            merged.merged += 1;
            merged.merged_titles.push(extra.title.clone());
            merged.details.extend(extra.details.iter().cloned());
        }
        items.push(merged);
    }
    (items, source)
}

/// The enumerated requirements grouped into units of work, in request order.
///
/// * An item naming a subject no earlier item named (a backticked name, an
///   endpoint, a path) starts a unit; so does an item naming nothing that asks
///   for work of its own (led by a verb, numbered, or under a line that
///   introduces a list: "the following:", "three formats:", "以下を追加:").
/// * An item naming nothing new that points back ("export it", "both", "それ"), or naming only earlier
///   subjects ("export `top_words` from the package") joins the unit that named
///   its subject, else the last one; so does a property naming nothing ("ties
///   broken alphabetically").
/// * Tests and docs of the code the request adds ("add tests for the API",
///   "document the new option") join that code's unit (the one naming their
///   subject, else the last code unit): the agent writing a function writes its
///   tests, and a later step for them would have nothing left to do. Tests or
///   docs about something new ("fix the typo in `README.md`") are a unit.
fn units(req: &Request) -> Vec<Item> {
    let has_code = req.requirement_items.iter().any(|r| {
        matches!(
            classify(&r.text),
            ItemKind::Implementation | ItemKind::Definition
        )
    });
    let listed = introduces_list(&req.raw);
    let mut units: Vec<(Item, BTreeSet<String>)> = Vec::new();
    for r in &req.requirement_items {
        let kind = classify(&format!("{} {}", r.text, r.details.join(" ")));
        let subjects = subjects(&r.text);
        let paths: BTreeSet<String> = crate::text::path_like_tokens(&r.text)
            .into_iter()
            .map(|p| p.to_lowercase())
            .collect();
        let new: Vec<&String> = subjects
            .iter()
            .filter(|s| units.iter().all(|u| !u.1.contains(*s)))
            .collect();
        // A new name (a function, an endpoint) is new work; a new path only says
        // where, and "re-export both from `lib.rs`" is about earlier items.
        let new_name = new.iter().any(|s| !paths.contains(*s));
        let companion = has_code && matches!(kind, ItemKind::Test | ItemKind::Docs);
        let back = points_back(&r.text, companion);
        let starts = units.is_empty()
            || if companion {
                !new.is_empty() && !back
            } else {
                new_name
                    || (!back
                        && (!new.is_empty()
                            || (subjects.is_empty()
                                && (listed
                                    || r.origin == RequirementOrigin::Numbered
                                    || asks_for_work(&r.text)))))
            };
        if starts {
            let mut item = Item::new(r.text.clone(), r.details.clone());
            item.kind = kind;
            units.push((item, subjects));
            continue;
        }
        let code_unit = |u: &(Item, BTreeSet<String>)| {
            matches!(u.0.kind, ItemKind::Implementation | ItemKind::Definition)
        };
        let at = units
            .iter()
            .position(|u| !u.1.is_disjoint(&subjects))
            .or_else(|| {
                if companion {
                    units.iter().rposition(code_unit)
                } else {
                    None
                }
            })
            .unwrap_or(units.len() - 1);
        let unit = &mut units[at];
        unit.0.details.push(r.text.clone());
        unit.0.details.extend(r.details.iter().cloned());
        unit.1.extend(subjects);
    }
    units.into_iter().map(|(item, _)| item).collect()
}

/// The line before the request's first list item introduces a list of distinct
/// things: it counts them or says "the following" ("Add three export formats
/// to `x.py`:", "以下を追加:"), or ends in a colon without naming the one thing
/// the items describe ("Add to the CLI:", not "Add `top_words(text, n)`:").
fn introduces_list(raw: &str) -> bool {
    let lines: Vec<&str> = raw.lines().map(str::trim).collect();
    let Some(first) = lines.iter().position(|l| is_list_item(l)) else {
        return false;
    };
    let Some(intro) = lines[..first].iter().rev().find(|l| !l.is_empty()) else {
        return false;
    };
    if intro.starts_with('#') {
        return false;
    }
    let lower = intro.to_lowercase();
    const COUNTS: &[&str] = &[
        "two",
        "three",
        "four",
        "five",
        "six",
        "several",
        "following",
        "these",
    ];
    const COUNTS_CJK: &[&str] = &["以下", "次の", "下記", "如下", "以下功能", "つの", "个"];
    let counted = lower
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| COUNTS.contains(&w))
        || COUNTS_CJK.iter().any(|w| lower.contains(w));
    let colon = lower.ends_with(':') || lower.ends_with('：');
    counted || (colon && !intro.contains('`'))
}

fn is_list_item(line: &str) -> bool {
    if ["- ", "* ", "+ ", "・"].iter().any(|b| line.starts_with(b)) {
        return true;
    }
    let digits = line.chars().take_while(char::is_ascii_digit).count();
    digits > 0 && matches!(line[digits..].chars().next(), Some('.' | ')' | '、' | '．'))
}

/// What an item is about: its backticked spans (a call's name without its
/// arguments, lower-cased) and the paths it names.
fn subjects(text: &str) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = BTreeSet::new();
    for (i, span) in text.split('`').enumerate() {
        if i % 2 == 1 {
            let head = span.split('(').next().unwrap_or(span).trim().to_lowercase();
            if !head.is_empty() {
                out.insert(head);
            }
        }
    }
    out.extend(
        crate::text::path_like_tokens(text)
            .into_iter()
            .map(|p| p.to_lowercase()),
    );
    out
}

/// Words that point back at what an earlier item names.
const BACK_REFERENCES: &[&str] = &[
    "it", "its", "them", "they", "their", "this", "these", "both", "also",
];
const BACK_REFERENCES_CJK: &[&str] = &[
    "それ", "これ", "その", "この", "両方", "上記", "它", "这些", "两者",
];

/// The item points back at an earlier one. Tests and docs also by "new" ("the
/// new option"), "新しい", "新".
fn points_back(text: &str, companion: bool) -> bool {
    let lower = text.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().any(|w| BACK_REFERENCES.contains(w))
        || BACK_REFERENCES_CJK.iter().any(|w| lower.contains(w))
        || (companion && (words.contains(&"new") || lower.contains('新')))
}

/// Japanese and Chinese predicates of an item that asks for work of its own.
const CJK_WORK: &[&str] = &[
    "追加",
    "実装",
    "作成",
    "対応",
    "削除",
    "変更",
    "できるように",
    "する",
    "添加",
    "实现",
    "支持",
    "修复",
    "删除",
    "增加",
    "新增",
];

/// An item naming no subject asks for work of its own: led by a verb (English)
/// or holding one (Japanese, Chinese).
fn asks_for_work(text: &str) -> bool {
    let lower = text.to_lowercase();
    if lower
        .chars()
        .any(|c| ('\u{3040}'..='\u{9fff}').contains(&c))
    {
        return CJK_WORK.iter().any(|w| lower.contains(w));
    }
    lower
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .is_some_and(|w| WORK_VERBS.contains(&w))
}

/// English verbs that lead a requirement asking for work of its own.
const WORK_VERBS: &[&str] = &[
    "add",
    "implement",
    "create",
    "support",
    "introduce",
    "build",
    "write",
    "expose",
    "provide",
    "allow",
    "enable",
    "persist",
    "store",
    "fix",
    "remove",
    "delete",
    "rename",
    "move",
    "replace",
    "refactor",
    "update",
    "change",
    "document",
    "define",
    "accept",
    "reject",
    "validate",
    "log",
    "cache",
    "migrate",
    "filter",
    "sort",
    "paginate",
];

/// Verbs that give a path a new place: the destination may not exist yet.
pub(crate) const RELOCATE_WORDS: &[&str] = &[
    "move",
    "rename",
    "relocate",
    "copy",
    "split",
    "extract",
    "mv",
    "移動",
    "移す",
    "名前を変更",
    "リネーム",
    "改名",
    "コピー",
    "分割",
    "抽出",
    "移动",
    "重命名",
    "复制",
    "拆分",
    "提取",
];
/// `text` contains one of `words`: ASCII words as words (with a short suffix:
/// "moves", "renamed"), the others as substrings.
pub(crate) fn mentions(text: &str, words: &[&str]) -> bool {
    let l = text.to_lowercase();
    let tokens: Vec<&str> = l.split(|c: char| !c.is_alphanumeric()).collect();
    words.iter().any(|w| {
        if w.is_ascii() {
            tokens
                .iter()
                .any(|x| *x == *w || (w.len() > 3 && x.starts_with(w) && x.len() <= w.len() + 3))
        } else {
            l.contains(w)
        }
    })
}

/// One bullet is not an enumeration: it is the request restated.
fn enumerated(req: &Request) -> bool {
    req.requirement_items.len() >= 2
        || req
            .requirement_items
            .iter()
            .any(|r| r.origin != RequirementOrigin::Inline && !r.details.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units_of(text: &str) -> (Vec<(String, ItemKind)>, Source) {
        let req = Request::from_text(text).unwrap();
        let (items, source) = items(&req, 8);
        (
            items.into_iter().map(|i| (i.title, i.kind)).collect(),
            source,
        )
    }

    #[test]
    fn a_prose_feature_with_three_criteria_is_one_unit() {
        let (units, source) = units_of(
            "# Multiplication\n\nAdd `mul(a, b)` to `calc/core.py`: it returns the product of `a` and `b`. Export it from the package next to `add`.\n\n## Acceptance criteria\n- Given 2 and 3, when `mul(2, 3)` is called, then it returns `6`.\n- Given 4 and 0, when `mul(4, 0)` is called, then it returns `0`.\n- Given the package, when `from calc import mul` runs, then it succeeds.\n",
        );
        assert_eq!(source, Source::Whole);
        assert_eq!(
            units,
            vec![("Multiplication".to_string(), ItemKind::Implementation)]
        );
    }

    #[test]
    fn facets_of_one_function_are_one_unit() {
        let (units, source) = units_of(
            "# Word counts\n\nAdd `top_words(text, n)` to `text/stats.py`:\n\n- it returns the `n` most common words with their counts\n- ties broken alphabetically\n- export it from the package\n- add tests for it\n",
        );
        assert_eq!(source, Source::Whole, "{units:?}");
        assert_eq!(units.len(), 1);
    }

    #[test]
    fn an_enumeration_of_distinct_requirements_splits() {
        let (units, source) = units_of(
            "# Admin endpoints\n\n- Add `GET /admin/users` listing the users\n- Add `DELETE /admin/users/:id`\n- Add tests for both\n- Document them in the README\n",
        );
        assert_eq!(source, Source::Enumeration);
        assert_eq!(
            units.iter().map(|u| u.0.as_str()).collect::<Vec<_>>(),
            vec![
                "Add `GET /admin/users` listing the users",
                "Add `DELETE /admin/users/:id`"
            ]
        );
        // A list introduced as a list splits though its items name nothing.
        let (units, _) = units_of(
            "Add three export formats to `shelf/export.py`:\n\n- JSON lines, one book per line\n- an HTML table\n- a plain text list\n",
        );
        assert_eq!(units.len(), 3, "{units:?}");
        // An inline pair with a shared "with tests for both".
        let (units, _) = units_of("Add endpoints `GET /a` and `POST /b`, with tests for both.");
        assert_eq!(
            units.iter().map(|u| u.0.as_str()).collect::<Vec<_>>(),
            vec![
                "Add endpoints `GET /a`, with tests",
                "Add `POST /b`, with tests"
            ]
        );
    }

    #[test]
    fn a_bug_report_with_a_traceback_is_one_fix() {
        let (units, source) = units_of(
            "# Crash on empty cart\n\n`checkout()` crashes when the cart is empty:\n\n```\nTraceback (most recent call last):\n  File \"shop/cart.py\", line 42, in checkout\n    avg = total / len(items)\nZeroDivisionError: division by zero\n```\n\nIt should return a zero total instead.\n",
        );
        assert_eq!(source, Source::Whole);
        assert_eq!(units.len(), 1);
        assert_eq!(units[0].1, ItemKind::Implementation);
    }

    #[test]
    fn a_rename_and_a_multi_file_feature_are_one_unit_each() {
        let (units, _) = units_of(
            "Rename `utils/helpers.py` to `utils/text.py` and update every import in `app/main.py` and `app/cli.py`.",
        );
        assert_eq!(units.len(), 1, "{units:?}");
        let (units, _) = units_of(
            "# Verbose mode\n\nAdd a `--verbose` flag in `app/cli.py` that makes `app/log.py` print debug lines, and pass it through `app/main.py`.",
        );
        assert_eq!(units.len(), 1, "{units:?}");
    }

    #[test]
    fn a_docs_only_request_is_docs() {
        let (units, _) = units_of(
            "# Install docs\n\nDocument how to install the tool from source in the README, with the supported Python versions.",
        );
        assert_eq!(units.len(), 1);
        assert_eq!(units[0].1, ItemKind::Docs);
    }

    #[test]
    fn japanese_requests_group_the_same_way() {
        let (units, _) = units_of(
            "# 掛け算\n\n`calc/core.py` に `mul(a, b)` を追加し、パッケージから公開する。\n\n## 受け入れ基準\n- `mul(2, 3)` を呼ぶと 6 を返す\n- `mul(4, 0)` を呼ぶと 0 を返す\n",
        );
        assert_eq!(units.len(), 1, "{units:?}");
        let (units, source) = units_of(
            "# 管理機能\n\n以下を追加する:\n\n- ユーザー一覧の表示\n- ユーザーの削除\n- それぞれのテスト\n",
        );
        assert_eq!(source, Source::Enumeration);
        assert_eq!(units.len(), 2, "{units:?}");
    }

    #[test]
    fn keyword_classes() {
        assert_eq!(classify("Define the `Priority` enum"), ItemKind::Definition);
        assert_eq!(classify("優先度の型を定義する"), ItemKind::Definition);
        assert_eq!(
            classify("Implement filtering by priority"),
            ItemKind::Implementation
        );
        assert_eq!(
            classify("Add tests for the priority filter"),
            ItemKind::Test
        );
        assert_eq!(classify("テストを追加する"), ItemKind::Test);
        assert_eq!(classify("Add unit-tests for the parser"), ItemKind::Test);
        // A tool's name holding "test" is not test work; "breaks" is a bug.
        assert_eq!(
            classify("--runxfail breaks pytest.mark.skip location reporting"),
            ItemKind::Implementation
        );
        assert_eq!(
            classify("pytest crashes when a fixture is parametrized twice"),
            ItemKind::Implementation
        );
        // A stack trace's test paths say where the failure showed: the fix is code.
        assert_eq!(
            classify(
                "toMeters gives NaN for upper-case units. NaN !== 3000 at TestContext.<anonymous> (/srv/import/test/import.test.js:14:10) at Test.run (node:internal/test_runner/test:639:25) `toMeters(3, \"KM\")` should be the same as `toMeters(3, \"km\")`"
            ),
            ItemKind::Implementation
        );
        assert_eq!(classify("Update the README"), ItemKind::Docs);
        assert_eq!(classify("READMEに使い方を追記する"), ItemKind::Docs);
    }
}
