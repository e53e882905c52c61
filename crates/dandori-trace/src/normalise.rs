//! The normalised view of a text that secrets are looked for in, besides the text
//! itself: a secret written split or escaped is still a secret. The view
//!
//! * **joins lines**: a line break and the blanks around it are dropped, and so is
//!   a line continuation (`\` at the end of a line), so a value split over two
//!   lines, or a base64 text wrapped at 76 columns, reads as one run;
//! * **joins string literals**: the seam between two quoted pieces (`"ab" "cd"`,
//!   `'ab' + 'cd'`, `"ab" . "cd"`, `"ab" .. "cd"`, `"ab" ~ "cd"`, `"ab" || "cd"`,
//!   also across a line break) is dropped, so `"ghp_ab" + "cd…"` reads `ghp_abcd…`;
//! * **percent-decodes** every `%XX` (a fully `%XX`-encoded value included);
//! * **unescapes** JSON and language string escapes: `\uXXXX` (with surrogate
//!   pairs), `\u{X…}`, `\xNN`, `\"`, `\'`, `\/`, `\\`; `\n`, `\r` and `\t` are line
//!   breaks, so they join like one.
//!
//! Every byte of the view keeps the span of the text it came from, so a match in
//! the view is masked in the text ([`View::origin`]) and a finding names the line
//! it starts on.

use std::ops::Range;

/// A normalised text and, for each of its bytes, the span of the original.
#[derive(Debug, Clone, Default)]
pub struct View {
    bytes: Vec<u8>,
    /// Start (in the original) of the piece each byte came from.
    starts: Vec<u32>,
    /// End (exclusive) of that piece.
    ends: Vec<u32>,
}

/// Texts longer than this are viewed in windows ([`View::of`] callers: one view a
/// window would do; 4 GiB offsets are out of reach anyway).
const MAX_VIEW: usize = u32::MAX as usize;

impl View {
    /// The view of `text`; None when it would read exactly as the text (nothing to
    /// decode or join), so callers skip the second search.
    pub fn of(text: &str) -> Option<View> {
        let b = text.as_bytes();
        if b.len() >= MAX_VIEW || !b.iter().any(|c| b"%\\\n\r\"'`".contains(c)) {
            return None;
        }
        let mut v = View {
            bytes: Vec::with_capacity(b.len()),
            starts: Vec::with_capacity(b.len()),
            ends: Vec::with_capacity(b.len()),
        };
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match c {
                b'%' => {
                    if let Some(byte) = hex_pair(b, i + 1) {
                        v.push(byte, i, i + 3);
                        i += 3;
                        continue;
                    }
                }
                b'\\' => {
                    if let Some(n) = v.escape(b, i) {
                        i = n;
                        continue;
                    }
                }
                b'\n' | b'\r' => {
                    v.trim_blanks();
                    i = skip_blanks(b, i);
                    continue;
                }
                b'"' | b'\'' | b'`' => {
                    if let Some(n) = seam(b, i) {
                        i = n;
                        continue;
                    }
                }
                _ => {}
            }
            v.push(c, i, i + 1);
            i += 1;
        }
        Some(v)
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The span of the original text that `range` of the view came from.
    pub fn origin(&self, range: Range<usize>) -> Range<usize> {
        if range.is_empty() || range.end > self.bytes.len() {
            return 0..0;
        }
        self.starts[range.start] as usize..self.ends[range.end - 1] as usize
    }

    fn push(&mut self, byte: u8, start: usize, end: usize) {
        self.bytes.push(byte);
        self.starts.push(start as u32);
        self.ends.push(end as u32);
    }

    fn push_char(&mut self, ch: char, start: usize, end: usize) {
        let mut buf = [0u8; 4];
        for &byte in ch.encode_utf8(&mut buf).as_bytes() {
            self.push(byte, start, end);
        }
    }

    /// Blanks before a line break are part of the join.
    fn trim_blanks(&mut self) {
        while matches!(self.bytes.last(), Some(b' ' | b'\t')) {
            self.bytes.pop();
            self.starts.pop();
            self.ends.pop();
        }
    }

    /// Decodes the escape at `b[i] == '\\'`; returns where the text goes on, or
    /// None for a backslash that escapes nothing known.
    fn escape(&mut self, b: &[u8], i: usize) -> Option<usize> {
        let next = *b.get(i + 1)?;
        match next {
            b'u' if b.get(i + 2) == Some(&b'{') => {
                let close = b[i + 3..].iter().take(7).position(|&c| c == b'}')?;
                let digits = std::str::from_utf8(&b[i + 3..i + 3 + close]).ok()?;
                let ch = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
                let end = i + 4 + close;
                self.push_char(ch, i, end);
                Some(end)
            }
            b'u' => {
                let unit = hex_quad(b, i + 2)?;
                let (ch, end) = if (0xD800..0xDC00).contains(&unit) {
                    // A surrogate pair is one character.
                    let low = (b.get(i + 6) == Some(&b'\\') && b.get(i + 7) == Some(&b'u'))
                        .then(|| hex_quad(b, i + 8))
                        .flatten()
                        .filter(|l| (0xDC00..0xE000).contains(l))?;
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    (char::from_u32(code)?, i + 12)
                } else {
                    (char::from_u32(unit)?, i + 6)
                };
                self.push_char(ch, i, end);
                Some(end)
            }
            b'x' => {
                let byte = hex_pair(b, i + 2)?;
                self.push(byte, i, i + 4);
                Some(i + 4)
            }
            b'"' | b'\'' | b'/' | b'\\' => {
                self.push(next, i, i + 2);
                Some(i + 2)
            }
            // An escaped line break, or a line continuation: a join.
            b'n' | b'r' | b't' | b'\n' | b'\r' => {
                self.trim_blanks();
                Some(skip_blanks(b, i + 2))
            }
            _ => None,
        }
    }
}

/// Past the blanks, line breaks and escaped line breaks from `i` on.
fn skip_blanks(b: &[u8], mut i: usize) -> usize {
    loop {
        match b.get(i) {
            Some(b' ' | b'\t' | b'\n' | b'\r') => i += 1,
            Some(b'\\') if matches!(b.get(i + 1), Some(b'n' | b'r' | b't' | b'\n' | b'\r')) => {
                i += 2
            }
            _ => return i,
        }
    }
}

/// The end of the seam between two string literals starting with the closing
/// quote at `b[i]`: blanks (line breaks included), at most one concatenation
/// operator, blanks, then an opening quote. None when what follows is not one.
fn seam(b: &[u8], i: usize) -> Option<usize> {
    let mut j = skip_blanks(b, i + 1);
    for op in [&b"||"[..], b"..", b"+", b".", b"~", b"&"] {
        if b[j..].starts_with(op) {
            j = skip_blanks(b, j + op.len());
            break;
        }
    }
    matches!(b.get(j), Some(b'"' | b'\'' | b'`')).then_some(j + 1)
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

fn hex_pair(b: &[u8], i: usize) -> Option<u8> {
    Some(hex_digit(*b.get(i)?)? << 4 | hex_digit(*b.get(i + 1)?)?)
}

fn hex_quad(b: &[u8], i: usize) -> Option<u32> {
    let hi = u32::from(hex_pair(b, i)?);
    let lo = u32::from(hex_pair(b, i + 2)?);
    Some(hi << 8 | lo)
}

/// Whether `word` is an upper-case reason code (`TOKEN_BUDGET_EXCEEDED`,
/// `SECRET_DETECTED`): letters, digits and at least one underscore, starting with
/// a letter. Such a word is never masked: it is what a user reads to know why.
pub fn is_reason_code(word: &str) -> bool {
    let b = word.as_bytes();
    b.first().is_some_and(u8::is_ascii_uppercase)
        && b.contains(&b'_')
        && !b.ends_with(b"_")
        && b.iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// The word of `text` (letters, digits, `_`) around `range`.
pub fn word_around(text: &str, range: Range<usize>) -> &str {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut start = range.start.min(b.len());
    let mut end = range.end.min(b.len());
    while start > 0 && word(b[start - 1]) {
        start -= 1;
    }
    while end < b.len() && word(b[end]) {
        end += 1;
    }
    text.get(start..end).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn read(text: &str) -> String {
        View::of(text).map_or_else(
            || text.to_string(),
            |v| String::from_utf8_lossy(v.bytes()).into_owned(),
        )
    }

    #[test]
    fn decodes_and_joins() {
        assert_eq!(read("a%41%2fb"), "aA/b");
        assert_eq!(read(r"x\u0041\u00e9\ud83d\ude00\x42\u{43}"), "xAé😀BC");
        assert_eq!(read(r#"\"q\/\\"#), r#""q/\"#);
        assert_eq!(read("ab  \n   cd\r\nef"), "abcdef");
        assert_eq!(read(r"ab\ncd\\n"), r"abcd\n");
        assert_eq!(read("t = (\"ab\"\n     \"cd\")"), "t = (\"abcd\")");
        assert_eq!(read("'ab' + 'cd' . \"ef\" .. 'gh'"), "'abcdefgh'");
        assert_eq!(read("a=\"x\"\nb=\"y\""), "a=\"x\"b=\"y\"");
        assert_eq!(read("run \\\n  --flag"), "run--flag");
        // Not escapes: kept as written.
        assert_eq!(read(r"100% \q %zz"), r"100% \q %zz");
    }

    #[test]
    fn origins_point_back_into_the_text() {
        let text = "key=\"sec\" +\n  \"ret\" end";
        let v = View::of(text).unwrap();
        let found = memchr::memmem::find(v.bytes(), b"secret").unwrap();
        let span = v.origin(found..found + 6);
        assert_eq!(&text[span], "sec\" +\n  \"ret");
    }

    #[test]
    fn reason_codes() {
        assert!(is_reason_code("TOKEN_BUDGET_EXCEEDED"));
        assert!(is_reason_code("E2E_FAILED"));
        assert!(!is_reason_code("AKIAQ3R4S5T6U7V8W9X2"));
        assert!(!is_reason_code("ghp_abc"));
        assert!(!is_reason_code("_X"));
        assert_eq!(word_around("a TOKEN_BUDGET b", 4..9), "TOKEN_BUDGET");
    }
}
