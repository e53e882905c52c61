//! Secret masking (seed 000 §12.2.1): values under keys that look sensitive
//! (`password`, `token`, `secret`, `api_key`, plus configured patterns) and strings
//! that look like credentials (provider keys, bearer tokens, private keys) are
//! replaced by `***`.

use regex::Regex;
use serde_json::Value;

pub const MASK: &str = "***";

/// Seed 000 §12.2.1 default `sensitive_patterns`.
pub const DEFAULT_SENSITIVE_PATTERNS: &[&str] = &["password", "token", "secret", "api_key"];

#[derive(Debug, Clone)]
pub struct Masker {
    enabled: bool,
    key_patterns: Vec<String>,
    value_res: Vec<Regex>,
}

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

/// Credential shapes that are masked wherever they appear in a string.
const VALUE_PATTERNS: &[&str] = &[
    // OpenAI / Anthropic / OpenRouter style keys
    r"sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,}",
    // GitHub tokens
    r"gh[pousr]_[A-Za-z0-9]{20,}",
    r"github_pat_[A-Za-z0-9_]{20,}",
    // GitLab
    r"glpat-[A-Za-z0-9_\-]{20,}",
    // AWS access key id
    r"AKIA[0-9A-Z]{16}",
    // Slack
    r"xox[abprs]-[A-Za-z0-9\-]{10,}",
    // Google API key
    r"AIza[0-9A-Za-z_\-]{35}",
    // HuggingFace
    r"hf_[A-Za-z0-9]{30,}",
    // Bearer / Basic authorisation values
    r"(?i)(?:bearer|basic)\s+[A-Za-z0-9._~+/=\-]{12,}",
    // key=value / key: value assignments of sensitive names
    r#"(?i)(?:password|passwd|pwd|token|secret|api[_-]?key|access[_-]?key)\s*[=:]\s*["']?[^\s"',;]{4,}"#,
    // PEM private keys
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
];

impl Masker {
    /// `key_patterns` are matched case-insensitively as substrings of object keys.
    pub fn new(enabled: bool, key_patterns: Vec<String>) -> Self {
        let value_res = VALUE_PATTERNS
            .iter()
            .filter_map(|p| Regex::new(p).ok())
            .collect();
        Masker {
            enabled,
            key_patterns: key_patterns.into_iter().map(|p| p.to_lowercase()).collect(),
            value_res,
        }
    }

    /// A masker that also hides these exact secret values (e.g. the API key read
    /// from the environment), wherever they occur.
    pub fn with_literal_secrets<I: IntoIterator<Item = String>>(mut self, secrets: I) -> Self {
        for s in secrets {
            if s.len() >= 6
                && let Ok(re) = Regex::new(&regex::escape(&s))
            {
                self.value_res.push(re);
            }
        }
        self
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
        for re in &self.value_res {
            if re.is_match(&out) {
                out = re.replace_all(&out, MASK).into_owned();
            }
        }
        out
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
