//! String literals of code files, cut where formatting puts values: the
//! literal text of messages the code emits. An issue that quotes an error or a
//! warning (`'Foo' object has no attribute 'bar'`, built from
//! `"%r object has no attribute %r"` or an f-string) contains one of these
//! fragments verbatim, whatever values the placeholders took.
//!
//! Fragments are normalised (lowercase, whitespace collapsed, punctuation
//! trimmed at both ends) and keyed by their first two words, so a query text is
//! matched in one pass over its words.

/// Fragments shorter than this (bytes) say too little.
pub const MIN_FRAGMENT_LEN: usize = 12;
/// Longest fragment kept (longer ones are cut).
const MAX_FRAGMENT_LEN: usize = 160;

/// A word with punctuation trimmed at both ends.
fn trim_word(w: &str) -> &str {
    w.trim_matches(|c: char| !c.is_alphanumeric())
}

/// The lookup key of a normalised fragment or text position: its first two words.
pub fn key_of(normalised: &str) -> Option<String> {
    let mut words = normalised.split(' ').map(trim_word);
    let a = words.next()?;
    let b = words.next()?;
    if a.is_empty() || b.is_empty() {
        return None;
    }
    Some(format!("{a} {b}"))
}

/// Lowercase, whitespace runs as one space, punctuation trimmed at both ends.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for w in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        for c in w.chars() {
            out.extend(c.to_lowercase());
        }
    }
    out.trim_matches(|c: char| !c.is_alphanumeric()).to_string()
}

/// Fragments worth indexing: two words or more, at least [`MIN_FRAGMENT_LEN`]
/// bytes, some letters.
fn keep(fragment: &str) -> bool {
    fragment.len() >= MIN_FRAGMENT_LEN
        && fragment.contains(' ')
        && fragment.chars().filter(|c| c.is_alphabetic()).count() >= 8
}

/// Cuts a literal's contents at placeholders (`%s`, `%(name)r`, `%.2f`, `{}`,
/// `{name!r}`, `${x}`) and escapes (`\n`, `\"`), and returns the normalised
/// pieces worth indexing.
pub fn fragments_of_literal(body: &str, out: &mut Vec<String>) {
    let mut piece = String::new();
    let flush = |piece: &mut String, out: &mut Vec<String>| {
        let n = normalise(piece);
        piece.clear();
        if keep(&n) {
            let mut n = n;
            if n.len() > MAX_FRAGMENT_LEN {
                let mut cut = MAX_FRAGMENT_LEN;
                while !n.is_char_boundary(cut) {
                    cut -= 1;
                }
                n.truncate(cut);
                // Whole words only.
                if let Some(sp) = n.rfind(' ') {
                    n.truncate(sp);
                }
            }
            out.push(n);
        }
    };
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
                flush(&mut piece, out);
            }
            '{' => {
                for d in chars.by_ref() {
                    if d == '}' {
                        break;
                    }
                }
                flush(&mut piece, out);
            }
            '$' if chars.peek() == Some(&'{') => {}
            '%' => {
                // %s, %-10s, %.3f, %(name)s, %%.
                if chars.peek() == Some(&'(') {
                    for d in chars.by_ref() {
                        if d == ')' {
                            break;
                        }
                    }
                }
                while let Some(&d) = chars.peek() {
                    chars.next();
                    if d.is_ascii_alphabetic() || d == '%' {
                        break;
                    }
                    if !(d.is_ascii_digit() || matches!(d, '.' | '-' | '+' | '#' | ' ' | '*')) {
                        break;
                    }
                }
                flush(&mut piece, out);
            }
            _ => piece.push(c),
        }
    }
    flush(&mut piece, out);
}

/// The fragments of the one-line string literals of a code file. Comment lines
/// and the insides of triple-quoted strings (docstrings) are skipped: they are
/// prose, not messages.
pub fn extract(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_triple: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(delim) = in_triple {
            if trimmed.contains(delim) {
                in_triple = None;
            }
            continue;
        }
        if trimmed.starts_with('#') || trimmed.starts_with("//") || trimmed.starts_with('*') {
            continue;
        }
        let bytes = line.as_bytes();
        let mut i = 0;
        while i < bytes.len() {
            let q = bytes[i];
            if q == b'#' {
                // A trailing comment (or a preprocessor line): no messages.
                break;
            }
            if !matches!(q, b'"' | b'\'' | b'`') {
                i += 1;
                continue;
            }
            // Triple quotes: a docstring or multi-line string.
            if i + 2 < bytes.len() && bytes[i + 1] == q && bytes[i + 2] == q {
                let delim = if q == b'"' { "\"\"\"" } else { "'''" };
                let rest = &line[i + 3..];
                match rest.find(delim) {
                    Some(end) => i += 3 + end + 3,
                    None => {
                        in_triple = Some(delim);
                        break;
                    }
                }
                continue;
            }
            let start = i + 1;
            let mut j = start;
            while j < bytes.len() && bytes[j] != q {
                if bytes[j] == b'\\' {
                    j += 1;
                }
                j += 1;
            }
            if j >= bytes.len() {
                break;
            }
            if let Some(body) = line.get(start..j) {
                fragments_of_literal(body, &mut out);
            }
            i = j + 1;
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Positions in a normalised text where a word starts, with the key of the
/// two words from there.
pub fn text_keys(normalised: &str) -> Vec<(usize, String)> {
    let mut starts: Vec<usize> = Vec::new();
    let mut prev_space = true;
    for (i, c) in normalised.char_indices() {
        if c == ' ' {
            prev_space = true;
        } else if prev_space {
            starts.push(i);
            prev_space = false;
        }
    }
    let mut out = Vec::new();
    for &s in &starts {
        let rest = &normalised[s..];
        // Where the trimmed word starts inside the token.
        let lead = rest
            .char_indices()
            .find(|(_, c)| c.is_alphanumeric() || *c == ' ')
            .map_or(rest.len(), |(i, _)| i);
        let at = s + lead;
        if let Some(key) = key_of(&normalised[at..]) {
            out.push((at, key));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn literals_are_cut_at_placeholders() {
        let code = "def f(x):\n    \"\"\"Docstring with \"quoted words in it here\".\n    more\"\"\"\n    raise ValueError(\"%r object has no attribute %r\" % (x, y))\n    # \"a comment that is not a message\"\n    warn(f\"The argument {name!r} is deprecated since {v}\")\n    log('Could not find the file %(path)s in the cache')\n";
        let got = extract(code);
        assert_eq!(
            got,
            vec![
                "could not find the file",
                "in the cache",
                "is deprecated since",
                "object has no attribute",
                "the argument",
            ]
        );
    }

    #[test]
    fn text_positions_match_fragments() {
        let text = normalise("It fails:\n  AttributeError: 'Foo' object has  no attribute 'bar'");
        let keys = text_keys(&text);
        let (at, _) = keys
            .iter()
            .find(|(_, k)| k == "object has")
            .expect("key present");
        assert!(text[*at..].starts_with("object has no attribute"));
        assert_eq!(
            key_of("object has no attribute").as_deref(),
            Some("object has")
        );
    }
}
