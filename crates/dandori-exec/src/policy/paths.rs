//! Where a path points, decided lexically: after `..` resolution against the
//! line's working directory (tracked through `cd`), after resolving the variables
//! the line itself assigned, and with glob characters matched against the names
//! they could expand to (`/e*c/shadow` and `/???/shadow` are `/etc/shadow`).

use std::collections::{BTreeMap, BTreeSet};

use super::lexer::Word;

/// The state a line builds up from left to right: variables it assigned and
/// where `cd` took it.
#[derive(Debug, Clone, Default)]
pub(crate) struct LineState {
    /// `None`: assigned, but from something the policy cannot know.
    pub vars: BTreeMap<String, Option<String>>,
    /// Directories below the worktree root; `None` once `cd` left the worktree
    /// or went somewhere unknown.
    pub cwd_depth: Option<usize>,
    /// Files an earlier command of the line downloads (`curl -o`, `wget`, `curl …
    /// > f`), as written (without a leading `./`): running one is refused.
    pub fetched: BTreeSet<String>,
    /// Symbolic links an earlier command of the line creates (`ln -s … NAME`), as
    /// relative paths: a `..` after one of them is not lexical any more.
    pub links: BTreeSet<String>,
    /// Files an earlier command of the line writes (redirections, `tee`), as
    /// written (without a leading `./`): running one is refused.
    pub written: BTreeSet<String>,
    /// The user's home directory by value (`$HOME` need not be under /home):
    /// absolute paths under it are the home directory.
    pub home: Option<String>,
}

impl LineState {
    pub fn new() -> Self {
        LineState {
            vars: BTreeMap::new(),
            cwd_depth: Some(0),
            fetched: BTreeSet::new(),
            links: BTreeSet::new(),
            written: BTreeSet::new(),
            home: None,
        }
    }
}

/// The final value of a word, when the policy can know it. `~` stands for the
/// home directory in the value.
pub(crate) fn resolve(word: &Word, st: &LineState) -> Option<String> {
    if !word.substitutions.is_empty() {
        return None;
    }
    if !word.expands {
        return Some(word.text.clone());
    }
    let chars: Vec<char> = word.text.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '$' {
            let (name, end, has_op) = match chars.get(i + 1) {
                Some('{') => {
                    let close = (i + 2..chars.len()).find(|&j| chars[j] == '}')?;
                    let inner: String = chars[i + 2..close].iter().collect();
                    let name_len = inner
                        .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                        .unwrap_or(inner.len());
                    let name = inner[..name_len].to_string();
                    let op = &inner[name_len..];
                    // Only the default forms (`${X:-…}`, `${X-…}`, `${X:=…}`,
                    // `${X:?…}`) keep a set X's value; trimming, replacing, slicing
                    // and case changes (`${PWD%/*}`, `${X:0:1}`) make it unknown.
                    if !op.is_empty()
                        && !["-", ":-", "=", ":=", "?", ":?"]
                            .iter()
                            .any(|o| op.starts_with(o) && !op.starts_with(":+"))
                    {
                        return None;
                    }
                    (name, close + 1, name_len != inner.len())
                }
                Some(n) if n.is_ascii_alphabetic() || *n == '_' => {
                    let mut j = i + 1;
                    while j < chars.len() && (chars[j].is_ascii_alphanumeric() || chars[j] == '_') {
                        j += 1;
                    }
                    (chars[i + 1..j].iter().collect(), j, false)
                }
                // `$1`, `$@`, `$(…)`, `$((…))`: unknown.
                Some(_) => return None,
                None => {
                    out.push('$');
                    i += 1;
                    continue;
                }
            };
            let value = match name.as_str() {
                "HOME" => Some("~".to_string()),
                "PWD" => Some(".".to_string()),
                "TMPDIR" => Some("/tmp".to_string()),
                _ => st.vars.get(&name).cloned().flatten(),
            };
            match value {
                // `${X:-…}` of a known, non-empty X is X; anything else is unknown.
                Some(v) if !(has_op && v.is_empty()) => out.push_str(&v),
                _ => return None,
            }
            i = end;
        } else if c == '`' {
            return None;
        } else if c == '~' && i == 0 {
            out.push('~');
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    Some(out)
}

/// The text of a word with every expansion replaced by `*`, for lexical
/// reasoning about where an unknown value could point.
pub(crate) fn as_glob(text: &str) -> String {
    static RE: std::sync::OnceLock<Option<regex::Regex>> = std::sync::OnceLock::new();
    match RE
        .get_or_init(|| {
            regex::Regex::new(r"\$\{[^}]*\}|\$\([^)]*\)\)?|\$[A-Za-z_][A-Za-z0-9_]*|\$.|`[^`]*`")
                .ok()
        })
        .as_ref()
    {
        Some(re) => re.replace_all(text, "*").into_owned(),
        None => "*".to_string(),
    }
}

/// What a resolved path points at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// Inside the worktree.
    Inside,
    /// `/tmp` (and `$TMPDIR`, which is `/tmp` in the sandbox).
    Temp,
    /// `/dev/null` and friends.
    SafeDevice,
    /// Under the home directory; the part after `~/`.
    Home(String),
    /// Another absolute path, normalised.
    Abs(String),
    /// A relative path that climbs out of the worktree (or `cd` went away).
    Escapes,
}

pub(crate) const SAFE_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
    "/dev/fd",
];
/// The sandbox's private temporary directory (`TMPDIR` is `/tmp` there). `/var/tmp`
/// and `/dev/shm` are not: outside the bubblewrap mechanism they are the host's,
/// shared with every user and kept across runs (and reboots, for `/var/tmp`).
const TEMP_DIRS: &[&str] = &["/tmp"];

pub(crate) fn classify(path: &str, st: &LineState, roots: &[String]) -> Place {
    if path == "~" || path.starts_with("~/") {
        return Place::Home(path.trim_start_matches('~').trim_start_matches('/').into());
    }
    if let Some(rest) = path.strip_prefix("~+") {
        // `~+` is the working directory.
        if rest.is_empty() || rest.starts_with('/') {
            return classify(&format!(".{rest}"), st, roots);
        }
    }
    if path == "~-" || path.starts_with("~-/") {
        // `~-` is the previous working directory: unknown.
        return Place::Escapes;
    }
    if let Some(user) = path.strip_prefix('~') {
        // `~user/…`: another user's home.
        return Place::Abs(normalize_abs(&format!("/home/{user}")));
    }
    if path.starts_with('/') {
        let n = normalize_abs(path);
        if roots.iter().any(|r| under(&n, r)) {
            return Place::Inside;
        }
        // (A home under a temporary directory — a test's — stays temporary.)
        let home = st
            .home
            .as_deref()
            .filter(|h| *h != "/" && !TEMP_DIRS.iter().any(|d| under(h, d)));
        if let Some(home) = home.filter(|h| under(&n, h)) {
            return Place::Home(n[home.len()..].trim_start_matches('/').into());
        }
        if SAFE_DEVICES.iter().any(|d| under(&n, d)) {
            return Place::SafeDevice;
        }
        if TEMP_DIRS.iter().any(|d| under(&n, d)) {
            return Place::Temp;
        }
        return Place::Abs(n);
    }
    let Some(mut depth) = st.cwd_depth else {
        return Place::Escapes;
    };
    let mut prefix = String::new();
    let mut through_link = false;
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            // `ln -s .. up && cat up/../x`: `up` may point anywhere, so a `..`
            // after it cannot be reasoned about lexically.
            ".." if through_link => return Place::Escapes,
            ".." => {
                if depth == 0 {
                    return Place::Escapes;
                }
                depth -= 1;
            }
            // `.*` and `.?` match `..` in many shells.
            // (A leading `.` must be written out: `*` never matches it.)
            s if s.starts_with('.') && has_glob(s) && glob_match(s, "..") => {
                return Place::Escapes;
            }
            _ => depth += 1,
        }
        if !matches!(seg, "" | ".") {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(seg);
            through_link |= st.links.contains(&prefix);
        }
    }
    Place::Inside
}

/// Whether `path` names the worktree root itself (`.`, `./`, `src/..`, the root
/// as an absolute path).
pub(crate) fn is_root(path: &str, st: &LineState, roots: &[String]) -> bool {
    if path.starts_with('/') {
        let n = normalize_abs(path);
        return roots.contains(&n);
    }
    let Some(mut depth) = st.cwd_depth else {
        return false;
    };
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            _ => depth += 1,
        }
    }
    depth == 0
}

/// Normalises an absolute path lexically (`//`, `/./`, `/../`).
pub(crate) fn normalize_abs(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

pub(crate) fn under(path: &str, prefix: &str) -> bool {
    path == prefix
        || (path.starts_with(prefix)
            && (prefix.ends_with('/') || path.as_bytes().get(prefix.len()) == Some(&b'/')))
}

/// Bash brace expansion of one word (`{a,b}`, `x{,/..}`), nested braces
/// included; at most 64 results (the rest are dropped: the policy only needs to
/// see the shapes).
pub(crate) fn brace_expand(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    let Some(open) = chars.iter().position(|&c| c == '{') else {
        return vec![word.to_string()];
    };
    let mut depth = 0;
    let mut parts: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut close = None;
    for (i, &c) in chars.iter().enumerate().skip(open + 1) {
        match c {
            '{' => {
                depth += 1;
                cur.push(c);
            }
            '}' if depth == 0 => {
                close = Some(i);
                break;
            }
            '}' => {
                depth -= 1;
                cur.push(c);
            }
            ',' if depth == 0 => parts.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    let Some(close) = close.filter(|_| !parts.is_empty()) else {
        return vec![word.to_string()];
    };
    parts.push(cur);
    let head: String = chars[..open].iter().collect();
    let tail: String = chars[close + 1..].iter().collect();
    let mut out = Vec::new();
    for p in parts {
        for e in brace_expand(&format!("{head}{p}{tail}")) {
            if out.len() < 64 {
                out.push(e);
            }
        }
    }
    out
}

pub(crate) fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '['])
}

/// True when the normalised absolute `path` is, or could glob-expand to, a path
/// under `prefix` (both absolute). Segment by segment, so the cost is linear.
pub(crate) fn could_be_under(path: &str, prefix: &str) -> bool {
    let p: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let q: Vec<&str> = prefix.split('/').filter(|s| !s.is_empty()).collect();
    if p.len() < q.len() {
        // `/*` could be `/etc` itself only when the prefix has one segment.
        return false;
    }
    p.iter().zip(&q).all(|(a, b)| {
        if has_glob(a) {
            glob_match(a, b)
        } else {
            a == b
        }
    })
}

/// Shell glob matching of one path segment: `*`, `?`, `[…]` (with `!`/`^`
/// negation and ranges). Iterative with one backtrack point: O(len²) worst case on
/// a segment, and segments are short.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() {
            match p[pi] {
                '*' => {
                    star = Some((pi, ni));
                    pi += 1;
                    continue;
                }
                '?' => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                '[' => {
                    if let Some((matched, next)) = class_match(&p, pi, n[ni]) {
                        if matched {
                            pi = next;
                            ni += 1;
                            continue;
                        }
                    } else if n[ni] == '[' {
                        pi += 1;
                        ni += 1;
                        continue;
                    }
                }
                c if c == n[ni] => {
                    pi += 1;
                    ni += 1;
                    continue;
                }
                _ => {}
            }
        }
        match star {
            Some((sp, sn)) => {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            }
            None => return false,
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// Matches `c` against the class starting at `p[start] == '['`; returns whether it
/// matched and the index after the class, or `None` for an unterminated class.
fn class_match(p: &[char], start: usize, c: char) -> Option<(bool, usize)> {
    let mut i = start + 1;
    let negate = matches!(p.get(i), Some('!' | '^'));
    if negate {
        i += 1;
    }
    let mut matched = false;
    let mut first = true;
    while i < p.len() {
        if p[i] == ']' && !first {
            return Some((matched != negate, i + 1));
        }
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            if p[i] <= c && c <= p[i + 2] {
                matched = true;
            }
            i += 3;
        } else {
            if p[i] == c {
                matched = true;
            }
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("e*c", "etc"));
        assert!(glob_match("???", "etc"));
        assert!(glob_match("[e]tc", "etc"));
        assert!(glob_match("[!a]tc", "etc"));
        assert!(!glob_match("???", "proc"));
        assert!(glob_match(".*", ".."));
        assert!(could_be_under("/e*c/shadow", "/etc"));
        assert!(could_be_under("/???/shadow", "/etc"));
        assert!(!could_be_under("/opt/x", "/etc"));
    }

    #[test]
    fn places() {
        let st = LineState::new();
        assert_eq!(classify("src/../x", &st, &[]), Place::Inside);
        assert_eq!(classify("../x", &st, &[]), Place::Escapes);
        assert_eq!(
            classify("~/.bashrc", &st, &[]),
            Place::Home(".bashrc".into())
        );
        assert_eq!(classify("/tmp/x", &st, &[]), Place::Temp);
        assert_eq!(
            classify("/usr/local/bin", &st, &[]),
            Place::Abs("/usr/local/bin".into())
        );
        assert_eq!(
            classify("/w/a/b", &st, &["/w/a".to_string()]),
            Place::Inside
        );
    }
}
