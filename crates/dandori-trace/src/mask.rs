//! Secret masking (seed 000 §12.2.1): values under keys that look sensitive
//! (`password`, `token`, `secret`, `api_key`, plus configured patterns), strings
//! that look like credentials (provider keys, bearer tokens, private keys, JWTs,
//! `user:pass@` in URLs, `<sensitive name>=value` assignments) and the literal
//! values of the secret environment variables ([`is_secret_env`]) are replaced by
//! `***`.
//!
//! The literal values are also hidden in their encoded forms (base64 in every
//! alignment, hex, URL-encoded, reversed: [`crate::encodings`]).
//!
//! Literal values, their encoded forms and the credential shapes are looked for
//! twice: in the text, and in its normalised view ([`crate::normalise`]: lines and
//! string literals joined, `%XX` and `\uXXXX` / `\xNN` escapes decoded), whose
//! matches are masked where they came from in the text. The pre-commit scan
//! ([`crate::secret_scan`]) searches the same view with the same [`Matcher`].
//! An upper-case reason code (`TOKEN_BUDGET_EXCEEDED`) is never masked by a match
//! of the view.
//!
//! [`is_secret_env`] is the one definition of "a secret variable": the masker
//! hides their values, the pre-commit scan looks for them, and the child
//! environment filter drops them.

use std::collections::BTreeMap;

use regex::{Captures, Regex};
use serde_json::Value;

use crate::contract_codes::is_contract_code;
use crate::secret_names::is_secret_name;

pub const MASK: &str = "***";

/// Seed 000 §12.2.1 default `sensitive_patterns`.
pub const DEFAULT_SENSITIVE_PATTERNS: &[&str] = &["password", "token", "secret", "api_key"];

#[derive(Debug, Clone)]
pub struct Masker {
    enabled: bool,
    key_patterns: Vec<String>,
    value_res: Vec<Regex>,
    /// `<name containing a configured pattern> = value` in free text.
    assignment_re: Option<Regex>,
    /// Exact secret values, longest first.
    literals: Vec<String>,
    /// Their encoded forms ([`crate::encodings`]): (form, secret, encoding), longest
    /// first.
    encoded: Vec<(String, String, &'static str)>,
    /// Secret value → the variable it came from, for findings that name it.
    sources: BTreeMap<String, String>,
    /// [`Masker::literal_secrets`], kept for the search of the view.
    named: Vec<(String, String)>,
}

/// The one search for secrets in a normalised view ([`crate::normalise::View`]):
/// literal values (and their encoded forms) and credential shapes. The masker
/// and the pre-commit scan use it.
#[derive(Debug, Clone, Copy)]
pub struct Matcher<'a> {
    /// `(name, value)`: what [`Masker::literal_secrets`] returns.
    pub literals: &'a [(String, String)],
    /// Also the looser masking shapes ([`VALUE_PATTERNS`]), not only [`KEY_SHAPES`].
    pub loose: bool,
}

/// One match of [`Matcher::find`] in a view: its range in the view and what it is
/// (`env_value:NAME` for a literal, else a [`KEY_SHAPES`] kind, `credential` for a
/// looser shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewMatch {
    pub range: std::ops::Range<usize>,
    pub kind: String,
}

impl Matcher<'_> {
    pub fn find(&self, view: &crate::normalise::View) -> Vec<ViewMatch> {
        let bytes = view.bytes();
        let mut out = Vec::new();
        for (name, value) in self.literals {
            for at in memchr::memmem::find_iter(bytes, value.as_bytes()) {
                out.push(ViewMatch {
                    range: at..at + value.len(),
                    kind: format!("env_value:{name}"),
                });
            }
        }
        let (loose, shapes) = byte_shapes();
        let loose = loose
            .iter()
            .filter(|_| self.loose)
            .map(|re| ("credential", re));
        for (kind, re) in shapes.iter().map(|(k, re)| (*k, re)).chain(loose) {
            for m in re.find_iter(bytes) {
                out.push(ViewMatch {
                    range: m.range(),
                    kind: kind.to_string(),
                });
            }
        }
        out
    }
}

/// [`VALUE_PATTERNS`] and [`KEY_SHAPES`] (by kind) over bytes: a view may hold
/// decoded bytes that are not UTF-8.
#[allow(clippy::type_complexity)]
fn byte_shapes() -> &'static (
    Vec<regex::bytes::Regex>,
    Vec<(&'static str, regex::bytes::Regex)>,
) {
    static RES: std::sync::OnceLock<(
        Vec<regex::bytes::Regex>,
        Vec<(&'static str, regex::bytes::Regex)>,
    )> = std::sync::OnceLock::new();
    RES.get_or_init(|| {
        let loose = VALUE_PATTERNS
            .iter()
            .filter_map(|p| regex::bytes::Regex::new(p).ok())
            .collect();
        let shapes = KEY_SHAPES
            .iter()
            .filter_map(|(k, p)| regex::bytes::Regex::new(p).ok().map(|re| (*k, re)))
            .collect();
        (loose, shapes)
    })
}

/// Names that mark a secret ([`is_secret_name`]) whose values are socket
/// paths, not secrets: children lose them, the masker leaves their values alone.
const NOT_MASKED_NAMES: &[&str] = &["SSH_AUTH_SOCK", "GPG_AGENT_INFO"];

/// Whether the variable `name` (with its `value`) holds a secret: its name marks
/// a secret ([`crate::secret_names::is_secret_name`]), or its value is a URL with
/// a password (`DATABASE_URL=postgres://u:pw@host/db`, `PIP_INDEX_URL`), or its
/// value has a known credential shape.
pub fn is_secret_env(name: &str, value: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if NOT_MASKED_NAMES.contains(&upper.as_str()) {
        return false;
    }
    is_secret_name(name) || url_password(value).is_some() || known_shape(value)
}

/// The values of the secret variables of `env` ([`is_secret_env`]) worth masking
/// ([`worth_masking`]), plus the password of every URL with credentials.
pub fn secret_env_values(env: &BTreeMap<String, String>) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in env {
        if !is_secret_env(k, v) {
            continue;
        }
        if let Some(pw) = url_password(v) {
            out.push(pw.to_string());
        }
        out.push(v.clone());
    }
    out.retain(|v| worth_masking(v));
    out.sort();
    out.dedup();
    out
}

/// Shorter values are not masked as literals: they would hide ordinary words.
const MIN_LITERAL: usize = 6;

/// A value that is a plain number is masked as a literal only from this many
/// characters on.
const MIN_NUMERIC_LITERAL: usize = 12;

/// Whether `value` is hidden wherever it appears (value-based masking). Values
/// shorter than [`MIN_LITERAL`] characters are not: `FEATURE_TOKEN=1` would hide
/// every `1` of every log. Nor are plain numbers shorter than
/// [`MIN_NUMERIC_LITERAL`]: a variable with a secret-looking name holding a number
/// (`AUTH_TIMEOUT=300000`, `RSA_KEY_BITS=4096`) is a setting, and logs are full of
/// numbers (token counts, durations, sizes) that would be hidden whenever they
/// happened to be equal to it. A long digit string (a numeric password, an account
/// number) is still masked.
pub fn worth_masking(value: &str) -> bool {
    let v = value.trim();
    let n = v.chars().count();
    n >= MIN_LITERAL && (n >= MIN_NUMERIC_LITERAL || !is_number(v))
}

/// A JSON-style number: optional sign, digits, optional fraction and exponent.
fn is_number(s: &str) -> bool {
    let s = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (mantissa, exponent) = match s.split_once(['e', 'E']) {
        Some((m, e)) => (m, Some(e.strip_prefix(['-', '+']).unwrap_or(e))),
        None => (s, None),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, "0"));
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    digits(int) && digits(frac) && exponent.is_none_or(digits)
}

/// Whether the value of a `name=value` / `"name":value` assignment is a plain
/// number, boolean or null (a token count, a flag: not a secret), or already
/// masked. The value as captured may carry the brackets of the JSON or code
/// around it (`"maxOutputTokens":32000}}`, `"limit":[128000]`, `f(token=5)`).
fn plain_value(value: &str) -> bool {
    let v = value
        .trim_start_matches(['(', '['])
        .trim_end_matches([')', ']', '}']);
    is_number(v) || matches!(v, "true" | "false" | "null" | "None") || v == MASK
}

/// The password of `scheme://user:password@host…`.
fn url_password(value: &str) -> Option<&str> {
    let (_, rest) = value.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let (_, pw) = userinfo.split_once(':')?;
    (!pw.is_empty()).then_some(pw)
}

fn known_shape(value: &str) -> bool {
    shape_res().iter().any(|re| re.is_match(value))
}

fn shape_res() -> &'static [Regex] {
    static RES: std::sync::OnceLock<Vec<Regex>> = std::sync::OnceLock::new();
    RES.get_or_init(|| {
        KEY_SHAPES
            .iter()
            .filter_map(|(_, p)| Regex::new(p).ok())
            .collect()
    })
}

/// Known credential shapes, by kind: masked wherever they appear, and what the
/// pre-commit scan reports (by kind, never by value).
pub const KEY_SHAPES: &[(&str, &str)] = &[
    ("anthropic_key", r"\bsk-ant-[A-Za-z0-9_\-]{16,}"),
    (
        "openai_key",
        r"\bsk-(?:proj-|svcacct-|admin-|or-)?[A-Za-z0-9_\-]{20,}",
    ),
    (
        "github_token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
    ),
    (
        "gitlab_token",
        r"\bgl(?:pat|dt|ptt|rt|cbt|oas)-[A-Za-z0-9_\-]{20,}",
    ),
    (
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b",
    ),
    ("slack_token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}"),
    (
        "slack_webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}",
    ),
    ("stripe_key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}"),
    ("google_api_key", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("google_oauth_token", r"\bya29\.[0-9A-Za-z_\-]{20,}"),
    ("huggingface_token", r"\bhf_[A-Za-z0-9]{30,}"),
    ("npm_token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    ("pypi_token", r"\bpypi-AgE[A-Za-z0-9_\-]{50,}"),
    (
        "sendgrid_key",
        r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}",
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}",
    ),
    (
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----",
    ),
];

impl Default for Masker {
    fn default() -> Self {
        Masker::new(
            true,
            DEFAULT_SENSITIVE_PATTERNS
                .iter()
                .map(|s| s.to_string())
                .collect(),
        )
    }
}

/// Credential shapes masked wherever they appear in a string, besides
/// [`KEY_SHAPES`] (looser forms, for masking only).
const VALUE_PATTERNS: &[&str] = &[
    // OpenAI / Anthropic / OpenRouter style keys, shorter ones too
    r"sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,}",
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    r"glpat-[A-Za-z0-9_\-]{20,}",
    // PEM private keys: the whole block, or from the header on when cut
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*)",
];

/// Bearer / Basic authorisation values: the scheme (group 1) is kept, the
/// credentials (group 2) masked unless they are a lower-case word ("basic
/// authentication").
const AUTHORIZATION: &str = r"(?i)\b((?:bearer|basic)\s+)([A-Za-z0-9._~+/=\-]{12,})";

/// `key=value` / `key: value` assignments of sensitive names, whatever the
/// configured patterns: the name (group 1) is kept, the value (group 2) masked
/// unless it is plain ([`plain_value`]).
const SENSITIVE_NAMES: &str = r"password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key";

/// The characters of an assignment's value: no space, quote, comma or
/// semicolon, and no JSON escape of a line break, tab or quote (`\n` in an `env`
/// dump printed inside a JSON event; a secret holds none) — any other
/// backslash pair (`\\`) belongs to the value.
const ASSIGNED_VALUE: &str = r#"(?:[^\s"',;\\]|\\[^\s"nrt])"#;

/// Where the value captured after `name=` really ends ([`mask_assignments`]): at
/// the next parameter of a URL query (`&name=`), else at its end.
fn value_end(value: &str) -> usize {
    static QUERY: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    QUERY
        .get_or_init(|| Regex::new(r"&[A-Za-z0-9_.\-\[\]]+=").ok())
        .as_ref()
        .and_then(|re| re.find(value))
        .map_or(value.len(), |m| m.start())
}

/// `scheme://user:password@`: the password is masked, the rest kept.
const URL_USERINFO: &str = r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@]*:)[^/\s@]+@";

impl Masker {
    /// `key_patterns` are matched case-insensitively as substrings of object keys.
    /// In free text, `NAME=value` / `NAME: value` where NAME contains one of the
    /// patterns has its value masked too (numbers and booleans are kept: token
    /// counts are not secrets).
    pub fn new(enabled: bool, key_patterns: Vec<String>) -> Self {
        // The looser patterns first: a private key block goes whole before its
        // header alone would.
        let value_res = VALUE_PATTERNS
            .iter()
            .copied()
            .chain(KEY_SHAPES.iter().map(|(_, p)| *p))
            .filter_map(|p| Regex::new(p).ok())
            .collect();
        let key_patterns: Vec<String> = key_patterns
            .into_iter()
            .map(|p| p.to_lowercase())
            .filter(|p| !p.trim().is_empty())
            .collect();
        let assignment_re = (!key_patterns.is_empty())
            .then(|| {
                let alts: Vec<String> = key_patterns.iter().map(|p| regex::escape(p)).collect();
                Regex::new(&format!(
                    r#"(?i)([A-Za-z0-9_.\-]*(?:{})[A-Za-z0-9_.\-]*["']?\s*[=:]\s*["']?)({ASSIGNED_VALUE}{{4,}})"#,
                    alts.join("|")
                ))
                .ok()
            })
            .flatten();
        Masker {
            enabled,
            key_patterns,
            value_res,
            assignment_re,
            literals: Vec::new(),
            encoded: Vec::new(),
            sources: BTreeMap::new(),
            named: Vec::new(),
        }
    }

    /// A masker that also hides these exact secret values (e.g. the API key read
    /// from the environment), wherever they occur.
    pub fn with_literal_secrets<I: IntoIterator<Item = String>>(mut self, secrets: I) -> Self {
        self.literals
            .extend(secrets.into_iter().filter(|s| worth_masking(s)));
        // Longest first, so a secret containing another is hidden whole.
        self.literals
            .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        self.literals.dedup();
        let mut encoded: Vec<(String, String, &'static str)> = Vec::new();
        for secret in &self.literals {
            for e in crate::encodings::encoded_forms(secret, MIN_LITERAL) {
                if !self.literals.contains(&e.form) && !encoded.iter().any(|(f, _, _)| *f == e.form)
                {
                    encoded.push((e.form, secret.clone(), e.encoding));
                }
            }
        }
        encoded.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self.encoded = encoded;
        self.named = self.literal_secrets();
        self
    }

    /// A masker that also hides the values of the secret variables of `env`
    /// ([`secret_env_values`]).
    pub fn with_env_secrets(mut self, env: &BTreeMap<String, String>) -> Self {
        for (k, v) in env {
            if is_secret_env(k, v) {
                self.sources.insert(v.clone(), k.clone());
                if let Some(pw) = url_password(v) {
                    self.sources.insert(pw.to_string(), k.clone());
                }
            }
        }
        self.with_literal_secrets(secret_env_values(env))
    }

    /// The exact secret values this masker hides, each with the variable it came
    /// from (`secret value` when it was given without one), then their encoded
    /// forms, named `VARIABLE:encoding` (`GITHUB_TOKEN:base64`): what the pre-commit
    /// scan looks for. Returned even when masking is turned off.
    pub fn literal_secrets(&self) -> Vec<(String, String)> {
        let name = |v: &String| {
            self.sources
                .get(v)
                .cloned()
                .unwrap_or_else(|| "secret value".to_string())
        };
        let raw = self.literals.iter().map(|v| (name(v), v.clone()));
        let encoded = self
            .encoded
            .iter()
            .map(|(form, secret, encoding)| (format!("{}:{encoding}", name(secret)), form.clone()));
        raw.chain(encoded).collect()
    }

    fn key_is_sensitive(&self, key: &str) -> bool {
        let k = key.to_lowercase();
        // Token *counts* are not secrets.
        if k.ends_with("_tokens")
            || k.contains("tokens_")
            || k == "tokens"
            || k.starts_with("max_token")
        {
            return false;
        }
        self.key_patterns.iter().any(|p| k.contains(p.as_str()))
    }

    pub fn mask_str(&self, s: &str) -> String {
        if !self.enabled {
            return s.to_string();
        }
        let mut out = s.to_string();
        let forms = self.encoded.iter().map(|(form, _, _)| form);
        for lit in self.literals.iter().chain(forms) {
            if out.contains(lit.as_str()) {
                out = out.replace(lit.as_str(), MASK);
            }
        }
        for re in &self.value_res {
            if re.is_match(&out) {
                out = re.replace_all(&out, MASK).into_owned();
            }
        }
        // Before the assignments: a value split over two literals is masked whole,
        // not its first half alone.
        out = self.mask_view(out);
        if let Some(re) = authorization_re()
            && re.is_match(&out)
        {
            out = re
                .replace_all(&out, |c: &Captures| {
                    if c[2].bytes().all(|b| b.is_ascii_lowercase()) {
                        c[0].to_string()
                    } else {
                        format!("{}{MASK}", &c[1])
                    }
                })
                .into_owned();
        }
        if let Some(userinfo) = url_userinfo_re()
            && userinfo.is_match(&out)
        {
            out = userinfo
                .replace_all(&out, format!("${{1}}{MASK}@").as_str())
                .into_owned();
        }
        for re in sensitive_assignment_re()
            .into_iter()
            .chain(&self.assignment_re)
        {
            if re.is_match(&out) {
                out = mask_assignments(re, &out);
            }
        }
        out
    }

    /// Whether `text` holds a secret this masker hides: a literal value or one of
    /// its encoded forms, or a credential shape ([`KEY_SHAPES`]), as written or in
    /// the normalised view. Reason codes do not count. Whatever `enabled` says:
    /// this is for deciding what may be kept (the plan cache), not for display.
    pub fn holds_secret(&self, text: &str) -> bool {
        let raw = self.named.iter().any(|(_, v)| text.contains(v.as_str()))
            || shape_res().iter().any(|re| {
                re.find_iter(text).any(|m| {
                    !crate::normalise::is_reason_code(crate::normalise::word_around(
                        text,
                        m.range(),
                    ))
                })
            });
        raw || crate::normalise::View::of(text).is_some_and(|view| {
            Matcher {
                literals: &self.named,
                loose: false,
            }
            .find(&view)
            .into_iter()
            .any(|m| {
                !crate::normalise::is_reason_code(crate::normalise::word_around(
                    text,
                    view.origin(m.range),
                ))
            })
        })
    }

    /// `text` with what [`Matcher::find`] finds in its normalised view masked where
    /// it came from, except inside a reason code ([`crate::normalise::is_reason_code`]).
    fn mask_view(&self, text: String) -> String {
        let Some(view) = crate::normalise::View::of(&text) else {
            return text;
        };
        let matcher = Matcher {
            literals: &self.named,
            loose: true,
        };
        let mut spans: Vec<std::ops::Range<usize>> = matcher
            .find(&view)
            .into_iter()
            .map(|m| char_span(&text, view.origin(m.range)))
            .filter(|s| {
                !s.is_empty()
                    && text.get(s.clone()) != Some(MASK)
                    && !crate::normalise::is_reason_code(crate::normalise::word_around(
                        &text,
                        s.clone(),
                    ))
            })
            .collect();
        if spans.is_empty() {
            return text;
        }
        spans.sort_by_key(|s| (s.start, s.end));
        let mut out = String::with_capacity(text.len());
        let mut pos = 0;
        for s in spans {
            if s.end <= pos {
                continue;
            }
            let start = s.start.max(pos);
            out.push_str(&text[pos..start]);
            if start == s.start {
                out.push_str(MASK);
            }
            pos = s.end;
        }
        out.push_str(&text[pos..]);
        out
    }

    /// `v` with every string masked ([`Masker::mask_str`]) and nothing else
    /// changed: no value is replaced for its key, so a file that is read back
    /// (`stage.json`) keeps its shape and its types.
    pub fn mask_strings(&self, v: Value) -> Value {
        if !self.enabled {
            return v;
        }
        match v {
            Value::String(s) => Value::String(self.mask_str(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.mask_strings(x)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| (k, self.mask_strings(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    pub fn mask_value(&self, v: Value) -> Value {
        if !self.enabled {
            return v;
        }
        match v {
            Value::String(s) => Value::String(self.mask_str(&s)),
            Value::Array(a) => Value::Array(a.into_iter().map(|x| self.mask_value(x)).collect()),
            Value::Object(m) => Value::Object(
                m.into_iter()
                    .map(|(k, v)| {
                        let v = if self.key_is_sensitive(&k)
                            && !v.is_null()
                            && !v.is_number()
                            && !v.is_boolean()
                        {
                            Value::String(MASK.to_string())
                        } else {
                            self.mask_value(v)
                        };
                        (k, v)
                    })
                    .collect(),
            ),
            other => other,
        }
    }
}

/// `span` widened to the characters it touches.
fn char_span(text: &str, span: std::ops::Range<usize>) -> std::ops::Range<usize> {
    let (mut start, mut end) = (span.start.min(text.len()), span.end.min(text.len()));
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    while !text.is_char_boundary(end) {
        end += 1;
    }
    start..end
}

/// `text` with the value of every assignment `re` finds (group 1 the name with
/// what separates it from the value, group 2 the value) masked, unless plain
/// ([`plain_value`]). The value ends at a JSON escape ([`ASSIGNED_VALUE`]) or
/// at the next parameter of a URL query ([`value_end`]); the search goes on from
/// there, so what follows is masked on its own, in one pass over the text.
fn mask_assignments(re: &Regex, text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(c) = re.captures_at(text, pos) {
        let (Some(name), Some(value)) = (c.get(1), c.get(2)) else {
            break;
        };
        let end = value.start() + value_end(value.as_str());
        let v = &text[value.start()..end];
        out.push_str(&text[pos..name.end()]);
        // `TOKEN_BUDGET_EXCEEDED: budget exceeded` is a reason code and its
        // message, and `reason=SECRET_DETECTED` a reason: never a secret.
        let keep = v.is_empty()
            || plain_value(v)
            || is_contract_code(word_around(text, name.start(), name.end()))
            || is_contract_code(v.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '_'));
        out.push_str(if keep { v } else { MASK });
        // Past the name at least: the loop always moves on.
        pos = end;
    }
    out.push_str(&text[pos..]);
    out
}

/// The identifier (letters, digits, `_`) that the name of an assignment
/// found at `start..end` belongs to, the separator after it excluded.
fn word_around(text: &str, start: usize, end: usize) -> &str {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let from = text[..start]
        .char_indices()
        .rev()
        .take_while(|(_, c)| is_word(*c))
        .last()
        .map_or(start, |(i, _)| i);
    let to = text[from..end]
        .char_indices()
        .find(|(_, c)| !is_word(*c))
        .map_or(end, |(i, _)| from + i);
    &text[from..to]
}

fn authorization_re() -> Option<&'static Regex> {
    static RE: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(AUTHORIZATION).ok()).as_ref()
}

fn sensitive_assignment_re() -> Option<&'static Regex> {
    static RE: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(&format!(
            r#"(?i)((?:{SENSITIVE_NAMES})\s*[=:]\s*["']?)({ASSIGNED_VALUE}{{4,}})"#
        ))
        .ok()
    })
    .as_ref()
}

fn url_userinfo_re() -> Option<&'static Regex> {
    static RE: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    RE.get_or_init(|| Regex::new(URL_USERINFO).ok()).as_ref()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn masks_keys_and_credential_shapes() {
        let m = Masker::default().with_literal_secrets(["my-very-own-secret".to_string()]);
        let v = m.mask_value(json!({
            "api_key": "abc",
            "prompt_tokens": 12,
            "cmd": "curl -H 'Authorization: Bearer abcdefghijklmnop1234' x",
            "note": "key sk-ant-abcdefghijklmnopqrstu and ghp_abcdefghijklmnopqrstuvwxyz0123",
            "env": "password=hunter22 ok",
            "lit": "xx my-very-own-secret yy",
        }));
        let s = v.to_string();
        assert!(!s.contains("abcdefghijklmnop1234"), "{s}");
        assert!(!s.contains("sk-ant-"), "{s}");
        assert!(!s.contains("ghp_"), "{s}");
        assert!(!s.contains("hunter22"), "{s}");
        assert!(!s.contains("my-very-own-secret"), "{s}");
        assert_eq!(v["api_key"], "***");
        assert_eq!(v["prompt_tokens"], 12);
    }
}
