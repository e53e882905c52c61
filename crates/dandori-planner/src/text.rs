//! Small text utilities shared by intake and the offline planner: word tokens for
//! matching (Latin words split on case and underscores, Japanese as character
//! bigrams) and path-like tokens.

use std::collections::BTreeSet;
use std::sync::LazyLock;

use regex::Regex;

use crate::request::is_cjk;

/// Extensions that make a bare token a file path.
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "rs", "ts", "tsx", "js", "jsx", "mjs", "cjs", "go", "java", "kt", "kts", "rb", "php",
    "c", "h", "cc", "cpp", "hpp", "cs", "swift", "scala", "md", "toml", "yaml", "yml", "json",
    "txt", "cfg", "ini", "sh", "sql", "html", "css", "scss", "vue", "svelte", "lock", "xml",
    "gradle", "proto",
];

static PATH_TOKEN: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"`([^`\s]+)`|(?:^|[\s(（「『\[])((?:\.{0,2}/)?[A-Za-z0-9_.\-]+(?:/[A-Za-z0-9_.\-]+)*/?)",
    )
    .ok()
});

/// Path-like tokens in `text`: `a/b.py`, `src/`, `README.md`. URLs and versions are not.
pub fn path_like_tokens(text: &str) -> Vec<String> {
    let Some(re) = PATH_TOKEN.as_ref() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in re.captures_iter(text) {
        let Some(m) = c.get(1).or(c.get(2)) else {
            continue;
        };
        let tok = m
            .as_str()
            .trim_end_matches(['.', ',', ':', ';', ')', '）'])
            .trim_start_matches("./");
        if looks_like_path(tok) {
            out.push(tok.to_string());
        }
    }
    out
}

fn looks_like_path(tok: &str) -> bool {
    if tok.is_empty() || tok.contains("://") || tok.starts_with('/') || tok.contains("..") {
        return false;
    }
    if !tok.chars().any(|c| c.is_ascii_alphabetic()) {
        return false;
    }
    let last = tok.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    let has_ext = last
        .rsplit_once('.')
        .is_some_and(|(stem, ext)| !stem.is_empty() && SOURCE_EXTENSIONS.contains(&ext));
    let has_dir = tok.contains('/')
        && tok
            .split('/')
            .all(|seg| !seg.is_empty() || tok.ends_with('/'));
    has_ext || (has_dir && !tok.chars().next().is_some_and(|c| c.is_ascii_digit()))
}

/// Words that carry no topic: English function words, request boilerplate, and the
/// work verbs the planner classifies separately.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "and",
    "or",
    "of",
    "to",
    "in",
    "on",
    "for",
    "with",
    "by",
    "is",
    "are",
    "be",
    "it",
    "its",
    "this",
    "that",
    "as",
    "at",
    "from",
    "into",
    "so",
    "can",
    "should",
    "must",
    "will",
    "when",
    "then",
    "given",
    "if",
    "not",
    "no",
    "all",
    "each",
    "every",
    "new",
    "existing",
    "add",
    "adds",
    "added",
    "implement",
    "implements",
    "create",
    "support",
    "use",
    "uses",
    "using",
    "make",
    "update",
    "fix",
    "write",
    "test",
    "tests",
    "py",
    "rs",
    "md",
    "ts",
    "js",
    "we",
    "i",
    "you",
    "they",
    "there",
    "their",
    "our",
    "my",
    "also",
    "only",
    "via",
    "per",
    "one",
    "two",
];

/// Japanese particles and boilerplate bigrams that say nothing about the topic.
const JA_STOP_BIGRAMS: &[&str] = &[
    "する",
    "して",
    "した",
    "ます",
    "です",
    "こと",
    "ように",
    "れる",
    "られ",
    "ある",
    "いる",
    "なる",
];

/// Topic tokens of `text`: lower-cased Latin words (camelCase and snake_case split,
/// stopwords dropped, ≥ 2 chars) and bigrams of Japanese runs.
pub fn topic_tokens(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for_each_token(text, |t| {
        out.insert(t);
    });
    out
}

/// The same tokens as [`topic_tokens`], in order and with repeats (for term counts).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(t));
    out
}

fn for_each_token(text: &str, mut emit: impl FnMut(String)) {
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, emit: &mut dyn FnMut(String)| {
        if word.is_empty() {
            return;
        }
        for w in split_identifier(word) {
            if w.len() >= 2
                && !STOPWORDS.contains(&w.as_str())
                && !w.chars().all(|c| c.is_ascii_digit())
            {
                emit(w);
            }
        }
        word.clear();
    };
    let flush_cjk = |run: &mut Vec<char>, emit: &mut dyn FnMut(String)| {
        if run.is_empty() {
            return;
        }
        // Kanji/katakana carry the topic; hiragana is mostly grammar.
        if run.len() == 1 && !is_hiragana(run[0]) {
            emit(run[0].to_string());
        }
        for pair in run.windows(2) {
            if is_hiragana(pair[0]) && is_hiragana(pair[1]) {
                continue;
            }
            let bg: String = pair.iter().collect();
            if !JA_STOP_BIGRAMS.contains(&bg.as_str()) {
                emit(bg);
            }
        }
        run.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            flush_cjk(&mut cjk_run, &mut emit);
            word.push(c);
        } else if is_cjk(c) {
            flush_word(&mut word, &mut emit);
            cjk_run.push(c);
        } else {
            flush_word(&mut word, &mut emit);
            flush_cjk(&mut cjk_run, &mut emit);
        }
    }
    flush_word(&mut word, &mut emit);
    flush_cjk(&mut cjk_run, &mut emit);
}

fn is_hiragana(c: char) -> bool {
    ('\u{3040}'..='\u{309f}').contains(&c)
}

/// `dueDate` → [due, date]; `HTTPServer` → [http, server]; lower-cased.
fn split_identifier(w: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let chars: Vec<char> = w.chars().collect();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let boundary = i > 0
            && c.is_ascii_uppercase()
            && (chars[i - 1].is_ascii_lowercase()
                || chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase())
                    && chars[i - 1].is_ascii_uppercase());
        if boundary && !cur.is_empty() {
            parts.push(cur.to_lowercase());
            cur.clear();
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        parts.push(cur.to_lowercase());
    }
    // Simple plural folding so "tasks" meets "task".
    parts
        .into_iter()
        .map(|p| {
            if p.len() > 3 && p.ends_with('s') && !p.ends_with("ss") {
                p[..p.len() - 1].to_string()
            } else {
                p
            }
        })
        .collect()
}

/// Identifiers written in backticks that are not paths (`Priority`, `due_date`).
pub fn backticked_identifiers(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('`') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('`') else { break };
        let tok = &after[..end];
        if !tok.is_empty()
            && !looks_like_path(tok)
            && tok
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':')
            && tok
                .chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
            && !out.iter().any(|o: &String| o == tok)
        {
            out.push(tok.to_string());
        }
        rest = &after[end + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_found_and_prose_is_not() {
        let got = path_like_tokens(
            "Edit `todo/store.py` and tests/test_api.py, see docs/ and README.md. v1.2 is out, http://x.y/z",
        );
        assert_eq!(
            got,
            vec!["todo/store.py", "tests/test_api.py", "docs/", "README.md"]
        );
    }

    #[test]
    fn tokens_split_identifiers_and_japanese() {
        let t = topic_tokens("Add dueDate to task_store; 優先度を追加する");
        assert!(
            t.contains("due") && t.contains("date") && t.contains("task") && t.contains("store")
        );
        assert!(t.contains("優先") && t.contains("先度"));
        assert!(!t.contains("add") && !t.contains("する"));
    }

    #[test]
    fn identifiers_in_backticks() {
        assert_eq!(
            backticked_identifiers("Define `Priority` in `todo/models.py` and use `due_date`"),
            vec!["Priority", "due_date"]
        );
    }
}
