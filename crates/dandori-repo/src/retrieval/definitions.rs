//! Names defined in a file (classes, functions, types, module-level names), found
//! line by line with keyword rules that cover the common languages. A definition
//! of a name the request mentions is a much stronger signal than a use of it.

/// A defined name and its 0-based line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    pub name: String,
    pub line: u32,
}

const MODIFIERS: &[&str] = &[
    "pub",
    "export",
    "default",
    "async",
    "public",
    "private",
    "protected",
    "static",
    "abstract",
    "final",
    "sealed",
    "open",
    "override",
    "internal",
    "inline",
    "unsafe",
    "extern",
    "declare",
    "readonly",
    "virtual",
    "data",
    "suspend",
    "pub(crate)",
    "pub(super)",
    "partial",
];

const KEYWORDS: &[&str] = &[
    "def",
    "class",
    "function",
    "function*",
    "fn",
    "func",
    "struct",
    "enum",
    "trait",
    "interface",
    "type",
    "module",
    "record",
    "object",
    "mod",
    "union",
    "macro_rules!",
];

/// Keywords that define a name only at module level.
const TOP_LEVEL_KEYWORDS: &[&str] = &["const", "let", "var", "static"];

/// Definitions in `text`.
pub fn extract(text: &str, language: Option<&str>) -> Vec<Definition> {
    let python = language == Some("python");
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            continue;
        }
        let top_level = trimmed.len() == line.len();
        let first = trimmed.as_bytes()[0];
        if !(first.is_ascii_alphabetic() || first == b'_' || first == b'@') {
            continue;
        }
        if let Some(name) = definition_in_line(trimmed, top_level, python) {
            out.push(Definition {
                name: name.to_string(),
                line: u32::try_from(n).unwrap_or(u32::MAX),
            });
        }
    }
    out
}

fn definition_in_line(line: &str, top_level: bool, python: bool) -> Option<&str> {
    let mut rest = line;
    let mut saw_access_modifier = false;
    loop {
        let (word, after) = next_word(rest)?;
        if MODIFIERS.contains(&word) {
            saw_access_modifier |= matches!(word, "public" | "private" | "protected");
            rest = after;
            continue;
        }
        if KEYWORDS.contains(&word) || (top_level && TOP_LEVEL_KEYWORDS.contains(&word)) {
            let mut after = after.trim_start();
            // Go methods: `func (r *Recv) Name(`.
            if word == "func" && after.starts_with('(') {
                let close = after.find(')')?;
                after = after[close + 1..].trim_start();
            }
            let after = after.trim_start_matches('*').trim_start();
            return identifier_prefix(after);
        }
        // Python module-level assignment `NAME = …` (not `==`).
        if python && top_level && rest.len() == line.len() {
            let ident = identifier_prefix(line)?;
            let tail = line[ident.len()..].trim_start();
            let tail = match tail.strip_prefix(':') {
                // `NAME: Type = …`
                Some(t) => t.find('=').map_or("", |i| &t[i..]),
                None => tail,
            };
            if tail.starts_with('=') && !tail.starts_with("==") {
                return Some(ident);
            }
            return None;
        }
        // Java/C#/Kotlin methods: `public Foo bar(…) {`.
        if saw_access_modifier {
            let paren = line.find('(')?;
            let head = &line[..paren];
            if head.contains('=') {
                return None;
            }
            let name = head.trim_end().rsplit(|c: char| !is_ident_char(c)).next()?;
            return (!name.is_empty()).then_some(name);
        }
        return None;
    }
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '$'
}

fn next_word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

fn identifier_prefix(s: &str) -> Option<&str> {
    let end = s
        .char_indices()
        .find(|(_, c)| !is_ident_char(*c))
        .map_or(s.len(), |(i, _)| i);
    let ident = &s[..end];
    let first = ident.chars().next()?;
    (first.is_alphabetic() || first == '_' || first == '$').then_some(ident)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn names(text: &str, lang: &str) -> Vec<(String, u32)> {
        extract(text, Some(lang))
            .into_iter()
            .map(|d| (d.name, d.line))
            .collect()
    }

    #[test]
    fn python_definitions() {
        let src = "import os\nclass QuerySet(object):\n    def filter(self, *a):\n        x = 1\n\nasync def run():\n    pass\nMAX_SIZE = 10\nname: str = 'x'\nif a == b:\n    pass\n";
        assert_eq!(
            names(src, "python"),
            vec![
                ("QuerySet".into(), 1),
                ("filter".into(), 2),
                ("run".into(), 5),
                ("MAX_SIZE".into(), 7),
                ("name".into(), 8),
            ]
        );
    }

    #[test]
    fn other_languages() {
        assert_eq!(
            names(
                "func (s *Server) Serve(l net.Listener) error {\ntype Config struct {\n",
                "go"
            ),
            vec![("Serve".into(), 0), ("Config".into(), 1)]
        );
        assert_eq!(
            names(
                "export default function App() {}\nexport const routes = [];\n  const inner = 1;\n",
                "typescript"
            ),
            vec![("App".into(), 0), ("routes".into(), 1)]
        );
        assert_eq!(
            names(
                "pub(crate) fn scan() {}\npub struct Index;\nimpl Index {}\n",
                "rust"
            ),
            vec![("scan".into(), 0), ("Index".into(), 1)]
        );
        assert_eq!(
            names(
                "public class Parser {\n    public static int parseInt(String s) {\n",
                "java"
            ),
            vec![("Parser".into(), 0), ("parseInt".into(), 1)]
        );
    }
}
