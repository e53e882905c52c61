//! Tokenisation shared by the index and the query side.
//!
//! English and code: lowercase words, identifiers split on camelCase /
//! snake_case / kebab-case with the whole identifier kept too, light stemming,
//! a small stopword list. Japanese (and other CJK): character bigrams over runs of
//! kanji and katakana; hiragana runs (particles, okurigana) separate tokens.

/// How a text is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenOptions {
    /// Emit the parts of `camelCase` / `snake_case` identifiers besides the whole.
    pub split_identifiers: bool,
    /// Treat `-` between letters as part of an identifier (paths, CSS, CLI flags).
    pub kebab: bool,
}

impl TokenOptions {
    /// Contents of a file or a request.
    pub const TEXT: TokenOptions = TokenOptions {
        split_identifiers: true,
        kebab: false,
    };
    /// Paths.
    pub const PATH: TokenOptions = TokenOptions {
        split_identifiers: true,
        kebab: true,
    };
    /// Whole words only (the plain BM25 baseline).
    pub const PLAIN: TokenOptions = TokenOptions {
        split_identifiers: false,
        kebab: false,
    };
}

/// Calls `emit` for every token of `text`.
pub fn tokenize(text: &str, opts: TokenOptions, emit: &mut dyn FnMut(&str)) {
    let mut scratch = String::new();
    let mut cjk: Vec<char> = Vec::new();
    let mut word_start: Option<usize> = None;
    let bytes = text.as_bytes();
    let mut iter = text.char_indices().peekable();
    while let Some((i, c)) = iter.next() {
        let class = classify(c);
        match class {
            CharClass::Word => {
                if !cjk.is_empty() {
                    flush_cjk(&mut cjk, &mut scratch, emit);
                }
                if word_start.is_none() {
                    word_start = Some(i);
                }
                continue;
            }
            CharClass::Hyphen
                if opts.kebab
                    && word_start.is_some()
                    && iter.peek().is_some_and(|(_, n)| {
                        n.is_alphanumeric() && classify(*n) == CharClass::Word
                    }) =>
            {
                continue;
            }
            CharClass::Cjk => {
                if let Some(s) = word_start.take() {
                    emit_word(&text[s..i], opts, &mut scratch, emit);
                }
                cjk.push(c);
                continue;
            }
            CharClass::Hyphen | CharClass::Other | CharClass::Hiragana => {}
        }
        if let Some(s) = word_start.take() {
            emit_word(&text[s..i], opts, &mut scratch, emit);
        }
        if !cjk.is_empty() {
            flush_cjk(&mut cjk, &mut scratch, emit);
        }
    }
    if let Some(s) = word_start {
        emit_word(&text[s..bytes.len()], opts, &mut scratch, emit);
    }
    flush_cjk(&mut cjk, &mut scratch, emit);
}

/// All tokens of `text`, in order.
pub fn tokens(text: &str, opts: TokenOptions) -> Vec<String> {
    let mut out = Vec::new();
    tokenize(text, opts, &mut |t| out.push(t.to_string()));
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CharClass {
    Word,
    Hyphen,
    Cjk,
    Hiragana,
    Other,
}

fn classify(c: char) -> CharClass {
    if c.is_ascii() {
        return if c.is_ascii_alphanumeric() || c == '_' {
            CharClass::Word
        } else if c == '-' {
            CharClass::Hyphen
        } else {
            CharClass::Other
        };
    }
    let u = c as u32;
    match u {
        0x3040..=0x309F => CharClass::Hiragana,
        // Katakana, prolonged sound mark, half-width katakana, kanji (+ ext. A,
        // compatibility), the iteration mark 々, Hangul syllables.
        0x30A0..=0x30FF
        | 0x31F0..=0x31FF
        | 0xFF66..=0xFF9F
        | 0x3400..=0x4DBF
        | 0x4E00..=0x9FFF
        | 0xF900..=0xFAFF
        | 0x3005
        | 0xAC00..=0xD7AF => CharClass::Cjk,
        _ if c.is_alphanumeric() => CharClass::Word,
        _ => CharClass::Other,
    }
}

fn flush_cjk(run: &mut Vec<char>, scratch: &mut String, emit: &mut dyn FnMut(&str)) {
    match run.len() {
        0 => return,
        1 => {
            scratch.clear();
            scratch.push(run[0]);
            emit(scratch);
        }
        _ => {
            for pair in run.windows(2) {
                scratch.clear();
                scratch.push(pair[0]);
                scratch.push(pair[1]);
                emit(scratch);
            }
        }
    }
    run.clear();
}

fn emit_word(word: &str, opts: TokenOptions, scratch: &mut String, emit: &mut dyn FnMut(&str)) {
    let trimmed = word.trim_matches(|c| c == '_' || c == '-');
    if trimmed.is_empty() {
        return;
    }
    if !opts.split_identifiers {
        emit_part(trimmed, scratch, emit);
        return;
    }
    let mut parts = 0usize;
    let mut first_part: (usize, usize) = (0, 0);
    split_identifier(trimmed, &mut |s, e| {
        if parts == 0 {
            first_part = (s, e);
        }
        parts += 1;
    });
    if parts <= 1 {
        emit_part(trimmed, scratch, emit);
        return;
    }
    // The whole identifier, lowercased and unstemmed.
    lowercase_into(trimmed, scratch);
    if scratch.len() >= 2 {
        emit(scratch);
    }
    split_identifier(trimmed, &mut |s, e| {
        emit_part(&trimmed[s..e], scratch, emit)
    });
}

fn lowercase_into(s: &str, out: &mut String) {
    out.clear();
    if s.is_ascii() {
        out.push_str(s);
        out.make_ascii_lowercase();
    } else {
        out.extend(s.chars().flat_map(char::to_lowercase));
    }
}

/// Lowercases, filters and stems one word.
fn emit_part(part: &str, scratch: &mut String, emit: &mut dyn FnMut(&str)) {
    if part.len() < 2 || part.bytes().all(|b| b.is_ascii_digit()) {
        return;
    }
    lowercase_into(part, scratch);
    if is_stopword(scratch) {
        return;
    }
    stem_in_place(scratch);
    if scratch.len() >= 2 {
        emit(scratch);
    }
}

/// Calls `f(start, end)` for each part of an identifier: `_`, `-` and case
/// boundaries (`parseHTTPResponse` → parse, HTTP, Response; `utf8Decode` → utf8,
/// Decode).
pub fn split_identifier(ident: &str, f: &mut dyn FnMut(usize, usize)) {
    let mut start: Option<usize> = None;
    let mut prev = '\0';
    let mut it = ident.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let next = it.peek().map(|p| p.1);
        let before = std::mem::replace(&mut prev, c);
        if c == '_' || c == '-' {
            if let Some(s) = start.take() {
                f(s, i);
            }
            continue;
        }
        let Some(s) = start else {
            start = Some(i);
            continue;
        };
        let prev = before;
        let boundary = (c.is_uppercase() && (prev.is_lowercase() || prev.is_ascii_digit()))
            || (c.is_uppercase() && prev.is_uppercase() && next.is_some_and(char::is_lowercase));
        if boundary {
            f(s, i);
            start = Some(i);
        }
    }
    if let Some(s) = start {
        f(s, ident.len());
    }
}

/// Light suffix stripping so that plural, gerund and past forms meet:
/// queries → query, parsing/parsed/parses/parse → pars.
pub fn stem_in_place(w: &mut String) {
    if !w.is_ascii() || w.len() <= 3 {
        return;
    }
    if w.ends_with("ies") && w.len() > 4 {
        w.truncate(w.len() - 3);
        w.push('y');
        return;
    }
    if w.ends_with("sses") {
        w.truncate(w.len() - 2);
        return;
    }
    if w.ends_with('s') && !w.ends_with("ss") && !w.ends_with("us") && !w.ends_with("is") {
        w.truncate(w.len() - 1);
    } else if w.ends_with("ing") && w.len() > 5 {
        w.truncate(w.len() - 3);
    } else if w.ends_with("ed") && w.len() > 4 && !w.ends_with("eed") {
        w.truncate(w.len() - 2);
    }
    if w.ends_with('e') && w.len() > 4 {
        w.truncate(w.len() - 1);
    }
}

/// English function words and the most common keywords of code, which carry no
/// signal for localisation and only make postings long.
pub fn is_stopword(w: &str) -> bool {
    matches!(
        w,
        "a" | "an"
            | "the"
            | "and"
            | "or"
            | "of"
            | "to"
            | "in"
            | "on"
            | "at"
            | "by"
            | "for"
            | "with"
            | "from"
            | "as"
            | "is"
            | "are"
            | "was"
            | "were"
            | "be"
            | "been"
            | "being"
            | "it"
            | "its"
            | "this"
            | "that"
            | "these"
            | "those"
            | "there"
            | "here"
            | "then"
            | "than"
            | "but"
            | "if"
            | "else"
            | "elif"
            | "not"
            | "no"
            | "so"
            | "do"
            | "does"
            | "did"
            | "done"
            | "can"
            | "could"
            | "would"
            | "should"
            | "will"
            | "shall"
            | "may"
            | "might"
            | "must"
            | "have"
            | "has"
            | "had"
            | "we"
            | "you"
            | "he"
            | "she"
            | "they"
            | "them"
            | "our"
            | "your"
            | "their"
            | "my"
            | "me"
            | "which"
            | "what"
            | "when"
            | "where"
            | "who"
            | "how"
            | "why"
            | "all"
            | "any"
            | "some"
            | "such"
            | "also"
            | "just"
            | "only"
            | "into"
            | "out"
            | "up"
            | "about"
            | "because"
            | "while"
            | "more"
            | "most"
            | "other"
            | "very"
            | "self"
            | "def"
            | "return"
            | "import"
            | "none"
            | "true"
            | "false"
            | "null"
            | "let"
            | "var"
            | "const"
            | "new"
            | "fn"
            | "pub"
            | "use"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn t(s: &str) -> Vec<String> {
        tokens(s, TokenOptions::TEXT)
    }

    #[test]
    fn camel_case_keeps_whole_and_parts() {
        assert_eq!(
            t("parseHTTPResponse"),
            vec!["parsehttpresponse", "pars", "http", "respons"]
        );
        assert_eq!(t("QuerySet"), vec!["queryset", "query", "set"]);
    }

    #[test]
    fn snake_case_and_dunder() {
        assert_eq!(t("get_queryset"), vec!["get_queryset", "get", "queryset"]);
        assert_eq!(t("__init__"), vec!["init"]);
        assert_eq!(t("_private_name"), vec!["private_name", "privat", "name"]);
    }

    #[test]
    fn kebab_only_for_paths() {
        assert_eq!(
            tokens("src/big-widget.tsx", TokenOptions::PATH),
            vec!["src", "big-widget", "big", "widget", "tsx"]
        );
        assert_eq!(t("big-widget"), vec!["big", "widget"]);
    }

    #[test]
    fn english_stopwords_and_stems() {
        assert_eq!(
            t("The queries are parsed when parsing"),
            vec!["query", "pars", "pars"]
        );
        assert_eq!(t("a 42 x1 of"), vec!["x1"]);
    }

    #[test]
    fn japanese_bigrams() {
        assert_eq!(
            t("ログイン機能を実装する"),
            vec!["ログ", "グイ", "イン", "ン機", "機能", "実装"]
        );
        assert_eq!(t("認証"), vec!["認証"]);
        assert_eq!(t("API認証を追加"), vec!["api", "認証", "追加"]);
        assert_eq!(t("の"), Vec::<String>::new());
    }

    #[test]
    fn plain_mode_does_not_split() {
        assert_eq!(
            tokens("parseHTTPResponse get_queryset", TokenOptions::PLAIN),
            vec!["parsehttprespons", "get_queryset"]
        );
    }
}
