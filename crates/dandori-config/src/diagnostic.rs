//! Turning a value that does not read as the configuration into an error a person
//! can act on: the dotted key, the line of the file it is on, and the nearest
//! valid key or value (edit distance), as cargo and uv do for their manifests.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Why a value does not read as the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// The dotted key (`planning.logging.level`, `llm.providers[0].kind`); empty for
    /// the whole document.
    pub key: String,
    /// What is wrong, in serde's words, unknown fields named as unknown keys.
    pub reason: String,
    /// The nearest valid key or value, when one is named by the error.
    pub suggestion: Option<String>,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.key.as_str() {
            "" => write!(f, "{}", self.reason)?,
            key => write!(f, "{key}: {}", self.reason)?,
        }
        if let Some(s) = &self.suggestion {
            write!(f, "; did you mean `{s}`?")?;
        }
        Ok(())
    }
}

/// Whether `value` reads as a `T`; the error names the key, and the nearest valid
/// one when the key is unknown or the value is not one of a fixed set.
pub fn check<T: DeserializeOwned>(value: &Value) -> Result<(), Invalid> {
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(value, &mut track);
    match T::deserialize(de) {
        Ok(_) => Ok(()),
        Err(e) => Err(diagnose(&track.path().to_string(), &e.to_string())),
    }
}

/// `path` as serde_path_to_error prints it (`.` for the root) and serde's message.
fn diagnose(path: &str, message: &str) -> Invalid {
    let path = if path == "." { "" } else { path };
    let join = |name: &str| match path {
        "" => name.to_string(),
        p if p.ends_with(&format!(".{name}")) || p == name => p.to_string(),
        p => format!("{p}.{name}"),
    };
    let expected = expected_names(message);
    if let Some(name) = backticked_after(message, "unknown field `") {
        let key = join(&name);
        let suggestion = nearest(&name, expected.iter().map(String::as_str), usize::MAX);
        let reason = match expected.is_empty() {
            true => "unknown key".to_string(),
            false => format!("unknown key (valid keys here: {})", expected.join(", ")),
        };
        return Invalid {
            key,
            reason,
            suggestion: suggestion.map(|s| join_sibling(&join(&name), s)),
        };
    }
    if let Some(value) = backticked_after(message, "unknown variant `") {
        // A value is only suggested when it is close: `VERBOSE` is no typo of `ERROR`.
        let limit = (value.chars().count() / 2).max(2);
        let suggestion = nearest(&value, expected.iter().map(String::as_str), limit);
        return Invalid {
            key: path.to_string(),
            reason: format!(
                "invalid value `{value}`: expected one of {}",
                expected.join(", ")
            ),
            suggestion: suggestion.map(str::to_string),
        };
    }
    Invalid {
        key: path.to_string(),
        reason: message.to_string(),
        suggestion: None,
    }
}

/// `a.b.wrong` with `right` → `a.b.right`.
fn join_sibling(key: &str, name: &str) -> String {
    match key.rsplit_once('.') {
        Some((parent, _)) => format!("{parent}.{name}"),
        None => name.to_string(),
    }
}

/// The text between `start` and the next backtick.
fn backticked_after(message: &str, start: &str) -> Option<String> {
    let rest = &message[message.find(start)? + start.len()..];
    Some(rest[..rest.find('`')?].to_string())
}

/// The backticked names after `expected` in a serde message.
fn expected_names(message: &str) -> Vec<String> {
    let Some(at) = message.find("expected") else {
        return Vec::new();
    };
    message[at..]
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The candidate nearest to `word` by edit distance (case-insensitive), if within
/// `limit`; the first one on ties.
pub fn nearest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Option<&'a str> {
    let word = word.to_lowercase();
    candidates
        .into_iter()
        .map(|c| (levenshtein(&word, &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Edit distance (insertions, deletions, substitutions), in characters.
pub fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The 1-based line of `key` (`planning.logging.level`, `llm.providers[0].kind`) in
/// a block-style YAML or pretty-printed JSON text, or of its deepest ancestor that
/// is found; `None` when not even the first segment is (flow style, anchors).
pub fn line_of(text: &str, key: &str) -> Option<usize> {
    let lines: Vec<(usize, usize, &str)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let body = l.trim_start();
            let skip = body.is_empty() || body.starts_with('#') || body.starts_with("---");
            (!skip).then(|| (i + 1, l.len() - body.len(), body))
        })
        .collect();
    let mut found = None;
    let mut start = 0usize;
    // The column of the enclosing key or list item; children are deeper.
    let mut parent: Option<usize> = None;
    // Whether `start` is a list item's own line (`- key: v`), whose key is inside it.
    let mut on_item = false;
    for seg in segments(key) {
        let deeper = |col: usize| parent.is_none_or(|p| col > p);
        let hit = match seg {
            Segment::Name(name) => lines[start..]
                .iter()
                .enumerate()
                .take_while(|(i, (_, col, _))| (*i == 0 && on_item) || deeper(*col))
                .find_map(|(i, (_, col, body))| {
                    let (col, body) = strip_dashes(*col, body);
                    (deeper(col) && key_is(body, name)).then_some((start + i, col, start + i + 1))
                }),
            Segment::Index(n) => {
                let items: Vec<(usize, usize)> = lines[start..]
                    .iter()
                    .enumerate()
                    .take_while(|(_, (_, col, _))| deeper(*col))
                    .filter(|(_, (_, _, body))| body.starts_with("- ") || *body == "-")
                    .map(|(i, (_, col, _))| (start + i, *col))
                    .collect();
                let first_col = items.first().map(|(_, c)| *c);
                items
                    .into_iter()
                    .filter(|(_, c)| Some(*c) == first_col)
                    .nth(n)
                    .map(|(i, col)| (i, col, i))
            }
        };
        let Some((index, col, next)) = hit else {
            break;
        };
        found = Some(lines[index].0);
        on_item = next == index;
        parent = Some(col);
        start = next;
    }
    found
}

enum Segment<'a> {
    Name(&'a str),
    Index(usize),
}

fn segments(key: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in key.split('.') {
        let (name, mut rest) = part.split_once('[').map_or((part, ""), |(n, r)| (n, r));
        if !name.is_empty() {
            out.push(Segment::Name(name));
        }
        while let Some((index, after)) = rest.split_once(']') {
            if let Ok(n) = index.parse() {
                out.push(Segment::Index(n));
            }
            rest = after.strip_prefix('[').unwrap_or(after);
        }
    }
    out
}

/// `- - key: v` at column `col` → the column and text of `key: v`.
fn strip_dashes(mut col: usize, mut body: &str) -> (usize, &str) {
    while let Some(rest) = body.strip_prefix("- ") {
        let trimmed = rest.trim_start();
        col += body.len() - trimmed.len();
        body = trimmed;
    }
    (col, body)
}

/// Whether `body` starts with the mapping key `name` (bare, or quoted as in JSON).
fn key_is(body: &str, name: &str) -> bool {
    let rest = ["\"", "'", ""].iter().find_map(|q| {
        let r = body.strip_prefix(q)?.strip_prefix(name)?;
        r.strip_prefix(q)
    });
    rest.is_some_and(|r| r.trim_start().starts_with(':'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn distance_and_nearest() {
        assert_eq!(levenshtein("max_subtask", "max_subtasks"), 1);
        assert_eq!(levenshtein("", "abc"), 3);
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(
            nearest("levl", ["level", "mask_sensitive_data"], usize::MAX),
            Some("level")
        );
        assert_eq!(nearest("VERBOSE", ["DEBUG", "INFO", "ERROR"], 3), None);
    }

    #[test]
    fn lines_of_nested_keys_and_list_items() {
        let text = "# c\nplanning:\n  logging:\n    level: VERBOSE\nllm:\n  providers:\n    - name: a\n      kind: x\n    - name: b\n      kind: y\n";
        assert_eq!(line_of(text, "planning.logging.level"), Some(4));
        assert_eq!(line_of(text, "llm.providers[1].kind"), Some(10));
        assert_eq!(line_of(text, "llm.providers[0]"), Some(7));
        assert_eq!(line_of(text, "planning.nothing"), Some(2));
        assert_eq!(line_of(text, "nothing"), None);
        let json = "{\n  \"chunking\": {\n    \"max_subtasks\": \"x\"\n  }\n}\n";
        assert_eq!(line_of(json, "chunking.max_subtasks"), Some(3));
    }
}
