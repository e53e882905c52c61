//! The pre-commit secret scan: the added lines of a unified diff are checked for
//! secrets before a step's change is committed.
//!
//! A line is a hit when it holds
//! 1. the value of a secret environment variable ([`crate::mask::is_secret_env`];
//!    the finding names the variable, never the value);
//! 2. a known credential shape ([`crate::mask::KEY_SHAPES`]: OpenAI, Anthropic,
//!    GitHub, GitLab, AWS, Slack, Stripe, Google, Hugging Face, npm, PyPI,
//!    SendGrid keys, JWTs, private key blocks) made of letters *and* digits;
//! 3. a URL with a password (`scheme://user:password@host`) whose password is not a
//!    placeholder or a variable reference;
//! 4. an assignment (`NAME = "…"`, `name: …`, `NAME=…`, `"name": "…"`) whose name
//!    says secret (`key`, `token`, `secret`, `password`, `credential`, `auth`,
//!    `dsn`, … as a word of the name) and whose value looks random: 12 or more
//!    characters, letters and digits, Shannon entropy ≥ 3.0 bits per character, no
//!    variable reference (`$`, `{`, `(`, `%`, `<`) and no placeholder word
//!    (`example`, `dummy`, `fake`, `placeholder`, `changeme`, `redacted`, `xxxx`,
//!    `your_`, `test`, `sample`, `mock`).
//!
//! Rules 1 and 2 are also checked in the normalised view ([`crate::normalise`])
//! of each run of consecutive added lines of a file, with the masker's own
//! [`crate::mask::Matcher`]: a value split over lines or string literals, fully
//! `%XX`-encoded, written with `\uXXXX` / `\xNN` escapes or base64-wrapped at 76
//! columns is found there; the finding names the lines it spans (`line` to
//! `end_line`).
//!
//! Rules 3 and 4 are skipped in lock files (`Cargo.lock`, `package-lock.json`,
//! `yarn.lock`, `poetry.lock`, `uv.lock`, `go.sum`, …), whose hashes are not
//! secrets. Binary files are not scanned. A finding gives the file, the line in the
//! new file and the kind, never the secret.

use serde::Serialize;

use regex::Regex;

use crate::mask::KEY_SHAPES;

/// One secret found in an added line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SecretFinding {
    /// The path in the new tree.
    pub file: String,
    /// 1-based line number in the new file.
    pub line: u64,
    /// The last line of a secret found over several lines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// What was found: a [`KEY_SHAPES`] kind, `url_credentials`,
    /// `high_entropy_assignment` or `env_value:<VARIABLE>`.
    pub kind: String,
}

impl SecretFinding {
    fn covers(&self, file: &str, line: u64) -> bool {
        self.file == file && (self.line..=self.end_line.unwrap_or(self.line)).contains(&line)
    }
}

impl std::fmt::Display for SecretFinding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.end_line {
            Some(end) => write!(f, "{}:{}-{end} ({})", self.file, self.line, self.kind),
            None => write!(f, "{}:{} ({})", self.file, self.line, self.kind),
        }
    }
}

/// Lock files: rules 3 and 4 do not apply.
const LOCK_FILES: &[&str] = &[
    "Cargo.lock",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "poetry.lock",
    "uv.lock",
    "Pipfile.lock",
    "pdm.lock",
    "go.sum",
    "composer.lock",
    "Gemfile.lock",
    "flake.lock",
    "conda-lock.yml",
    "bun.lock",
];

/// Words of a name that make an assignment worth checking.
const SECRET_WORDS: &[&str] = &[
    "key",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "pass",
    "pwd",
    "credential",
    "credentials",
    "creds",
    "auth",
    "dsn",
    "pat",
    "private",
    "privatekey",
    "accesskey",
    "secretkey",
];

/// Values with these words are examples, not secrets.
const PLACEHOLDER_WORDS: &[&str] = &[
    "example",
    "dummy",
    "fake",
    "placeholder",
    "changeme",
    "change_me",
    "redacted",
    "xxxx",
    "your_",
    "your-",
    "test",
    "sample",
    "mock",
    "***",
];

/// Scans the added lines of `patch` (as printed by `git diff`); `secrets` are the
/// `(variable, value)` pairs of rule 1 ([`crate::Masker::literal_secrets`]).
pub fn scan_diff(patch: &str, secrets: &[(String, String)]) -> Vec<SecretFinding> {
    let rules = Rules::get();
    let mut findings = Vec::new();
    // Runs of consecutive added lines: (file, first line, last line, text).
    let mut runs: Vec<(String, u64, u64, String)> = Vec::new();
    walk(patch, |_, added| {
        let Some((file, line, text)) = added else {
            return;
        };
        if let Some(kind) = rules.check_line(text, file, secrets) {
            findings.push(SecretFinding {
                file: file.to_string(),
                line,
                end_line: None,
                kind,
            });
        }
        // What the line shows as written is out of the view's way: a token found
        // here must not be found again running on into the next line.
        let text = rules.blank_raw(text, secrets);
        match runs.last_mut() {
            Some((f, _, last, run)) if f == file && *last + 1 == line => {
                run.push('\n');
                run.push_str(&text);
                *last = line;
            }
            _ => runs.push((file.to_string(), line, line, text)),
        }
    });
    for (file, first, _, run) in &runs {
        for f in view_findings(file, *first, run, secrets) {
            let end = f.end_line.unwrap_or(f.line);
            if !findings
                .iter()
                .any(|h| h.covers(&f.file, f.line) && h.covers(&f.file, end))
            {
                findings.push(f);
            }
        }
    }
    findings.sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    findings
}

/// What the masker's [`crate::mask::Matcher`] finds in the normalised view of
/// `run` (added lines of `file` from line `first` on), one finding per start line.
fn view_findings(
    file: &str,
    first: u64,
    run: &str,
    secrets: &[(String, String)],
) -> Vec<SecretFinding> {
    let Some(view) = crate::normalise::View::of(run) else {
        return Vec::new();
    };
    let matcher = crate::mask::Matcher {
        literals: secrets,
        loose: false,
    };
    let line_of = |at: usize| first + run[..at.min(run.len())].matches('\n').count() as u64;
    let mut out: Vec<SecretFinding> = Vec::new();
    for m in matcher.find(&view) {
        let text = &view.bytes()[m.range.clone()];
        let shape = !m.kind.starts_with("env_value:");
        if shape && m.kind != "private_key" && !letters_and_digits(&String::from_utf8_lossy(text)) {
            continue;
        }
        let span = view.origin(m.range);
        let word = crate::normalise::word_around(run, span.clone());
        if crate::normalise::is_reason_code(word) {
            continue;
        }
        let (line, end) = (line_of(span.start), line_of(span.end.saturating_sub(1)));
        if out.iter().any(|f| f.line == line) {
            continue;
        }
        out.push(SecretFinding {
            file: file.to_string(),
            line,
            end_line: (end > line).then_some(end),
            kind: m.kind,
        });
    }
    out
}

/// Calls `f` with every line of `patch` (newline included) and, for an added line
/// of a text file, its file, its line number in the new file and its text.
fn walk(patch: &str, mut f: impl FnMut(&str, Option<(&str, u64, &str)>)) {
    let mut file: Option<String> = None;
    let mut line_no: u64 = 0;
    let mut in_hunk = false;
    for raw in patch.split_inclusive('\n') {
        let body = raw.trim_end_matches('\n');
        let mut added = None;
        if let Some(rest) = body.strip_prefix("diff --git ") {
            file = rest.rsplit_once(" b/").map(|(_, b)| unquote(b));
            in_hunk = false;
        } else if let Some(h) = body.strip_prefix("@@ ") {
            line_no = hunk_start(h).unwrap_or(1);
            in_hunk = true;
        } else if !in_hunk {
            if let Some(p) = body.strip_prefix("+++ ") {
                file = match p {
                    "/dev/null" => None,
                    p => Some(unquote(p.strip_prefix("b/").unwrap_or(p))),
                };
            }
        } else {
            match body.as_bytes().first() {
                Some(b'+') => {
                    added = file.as_deref().map(|f| (f, line_no, &body[1..]));
                    line_no += 1;
                }
                Some(b' ') => line_no += 1,
                Some(b'-') | Some(b'\\') => {}
                _ => in_hunk = false,
            }
        }
        f(raw, added);
    }
}

/// `-a,b +c,d @@ …` → c.
fn hunk_start(h: &str) -> Option<u64> {
    let plus = h.split_whitespace().find(|t| t.starts_with('+'))?;
    plus[1..].split(',').next()?.parse().ok()
}

fn unquote(p: &str) -> String {
    p.trim_matches('"').to_string()
}

struct Rules {
    shapes: Vec<(&'static str, Regex)>,
    url: Option<Regex>,
    assignments: Vec<Regex>,
}

impl Rules {
    fn get() -> &'static Rules {
        static RULES: std::sync::OnceLock<Rules> = std::sync::OnceLock::new();
        RULES.get_or_init(|| Rules {
            shapes: KEY_SHAPES
                .iter()
                .filter_map(|(k, p)| Regex::new(p).ok().map(|re| (*k, re)))
                .collect(),
            url: Regex::new(r"(?i)\b[a-z][a-z0-9+.\-]*://([^/\s:@]*):([^/\s@]+)@").ok(),
            assignments: [
                // NAME = "value", name: 'value', "name": "value", name := "value", key => "value"
                r#"([A-Za-z_][A-Za-z0-9_.\-]*)["']?\s*(?::=|=>|=|:)\s*[rbuf]?["']([^"'\s]+)["']"#,
                // NAME=value / name: value at the start of a line (.env, YAML, INI, shell)
                r#"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*(?:=|:)\s*([^\s"'#,;]+)\s*(?:#.*)?$"#,
            ]
            .iter()
            .filter_map(|p| Regex::new(p).ok())
            .collect(),
        })
    }

    /// `line` with the secret values and credential shapes it holds as written
    /// replaced by `***`.
    fn blank_raw(&self, line: &str, secrets: &[(String, String)]) -> String {
        let mut out = line.to_string();
        for (_, value) in secrets {
            if out.contains(value.as_str()) {
                out = out.replace(value.as_str(), crate::mask::MASK);
            }
        }
        for (_, re) in &self.shapes {
            if re.is_match(&out) {
                out = re.replace_all(&out, crate::mask::MASK).into_owned();
            }
        }
        out
    }

    fn check_line(&self, line: &str, file: &str, secrets: &[(String, String)]) -> Option<String> {
        for (name, value) in secrets {
            if line.contains(value.as_str()) {
                return Some(format!("env_value:{name}"));
            }
        }
        for (kind, re) in &self.shapes {
            for m in re.find_iter(line) {
                if *kind == "private_key" || letters_and_digits(m.as_str()) {
                    return Some((*kind).to_string());
                }
            }
        }
        let base = file.rsplit('/').next().unwrap_or(file);
        if LOCK_FILES.contains(&base) {
            return None;
        }
        if let Some(url) = &self.url {
            for c in url.captures_iter(line) {
                let pw = c.get(2).map_or("", |m| m.as_str());
                if !reference_or_placeholder(pw) && pw.chars().count() >= 3 {
                    return Some("url_credentials".to_string());
                }
            }
        }
        for re in &self.assignments {
            for c in re.captures_iter(line) {
                let (Some(name), Some(value)) = (c.get(1), c.get(2)) else {
                    continue;
                };
                if secret_name(name.as_str()) && random_looking(value.as_str()) {
                    return Some("high_entropy_assignment".to_string());
                }
            }
        }
        None
    }
}

/// Whether a word of `name` (split at `_`, `-`, `.` and camelCase) is a secret word.
fn secret_name(name: &str) -> bool {
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut prev_lower = false;
    for ch in name.chars() {
        if ch == '_' || ch == '-' || ch == '.' {
            words.push(std::mem::take(&mut cur));
            prev_lower = false;
            continue;
        }
        if ch.is_uppercase() && prev_lower {
            words.push(std::mem::take(&mut cur));
        }
        prev_lower = ch.is_lowercase() || ch.is_ascii_digit();
        cur.extend(ch.to_lowercase());
    }
    words.push(cur);
    words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
}

fn letters_and_digits(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit()) && s.chars().any(|c| c.is_ascii_alphabetic())
}

fn reference_or_placeholder(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    v.contains(['$', '{', '}', '(', '%', '<', '>'])
        || PLACEHOLDER_WORDS.iter().any(|w| lower.contains(w))
        || matches!(lower.as_str(), "password" | "pass" | "secret" | "token")
        || v.chars().all(|c| c == v.chars().next().unwrap_or(c))
}

fn random_looking(v: &str) -> bool {
    v.chars().count() >= 12
        && letters_and_digits(v)
        && !reference_or_placeholder(v)
        && entropy(v) >= 3.0
}

/// Shannon entropy, bits per character.
fn entropy(s: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut n = 0usize;
    for c in s.chars() {
        *counts.entry(c).or_insert(0usize) += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    counts
        .values()
        .map(|&k| {
            let p = k as f64 / n as f64;
            -p * p.log2()
        })
        .sum()
}

/// `patch` with each finding's line replaced by a marker naming the kind, then
/// masked by `masker`: what is kept in `patches/Sxx.patch` when the scan refuses a
/// commit.
pub fn redact_patch(patch: &str, findings: &[SecretFinding], masker: &crate::Masker) -> String {
    let mut out = String::with_capacity(patch.len());
    walk(patch, |raw, added| {
        let hit = added.and_then(|(file, line, _)| findings.iter().find(|f| f.covers(file, line)));
        match hit {
            Some(f) => out.push_str(&format!("+[line removed by dandori: {}]\n", f.kind)),
            None => out.push_str(raw),
        }
    });
    masker.mask_str(&out)
}
