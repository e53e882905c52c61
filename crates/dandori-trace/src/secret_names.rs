//! The one definition of "a variable whose name marks a secret", shared by the
//! masker ([`crate::mask::is_secret_env`]), the child-environment filter
//! (`dandori_exec::child_env`) and the command policy's secret-read rule
//! (`dandori_exec::policy`), so that a variable dropped from a child's
//! environment is also masked wherever its value appears, and a command that
//! reads it is refused.
//!
//! A name is secret when one of its words (split at `_`, `-`, `.`) is one of
//! [`SECRET_NAME_WORDS`] (`AWS_SECRET_ACCESS_KEY`, `DB_PASS`, `SENTRY_DSN`,
//! `GITLAB_PAT`, `db.password`) or ends with one of [`SECRET_NAME_SUFFIXES`]
//! (`GHTOKEN`, `PGPASSWORD`, `OPENAI_APIKEY`), and it is not the shell's
//! working directory (`PWD`, `OLDPWD`).

/// Name words that mark a secret.
pub const SECRET_NAME_WORDS: &[&str] = &[
    "KEY",
    "KEYS",
    "APIKEY",
    "TOKEN",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "PASSPHRASE",
    "PWD",
    "CREDENTIAL",
    "CREDENTIALS",
    "CRED",
    "CREDS",
    "AUTH",
    "DSN",
    "PAT",
    "COOKIE",
    "PRIVATE",
    "JWT",
    "WEBHOOK",
];

/// Endings that mark a secret even inside one word (`GHTOKEN`, `DBPASSWORD`).
pub const SECRET_NAME_SUFFIXES: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "APIKEY",
    "CREDENTIALS",
];

/// Names that match the words above but never hold a secret.
const NEVER_SECRET: &[&str] = &["PWD", "OLDPWD"];

/// Whether the name alone marks `name` as holding a secret (case-insensitive).
pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if NEVER_SECRET.contains(&upper.as_str()) {
        return false;
    }
    upper
        .split(['_', '-', '.'])
        .filter(|w| !w.is_empty())
        .any(|w| {
            SECRET_NAME_WORDS.contains(&w) || SECRET_NAME_SUFFIXES.iter().any(|s| w.ends_with(s))
        })
}

#[cfg(test)]
mod tests {
    use super::is_secret_name;

    #[test]
    fn names_that_hold_secrets() {
        for yes in [
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "AWS_SESSION_TOKEN",
            "GITHUB_TOKEN",
            "GHTOKEN",
            "PGPASSWORD",
            "DB_PASS",
            "MY_SERVICE_CREDENTIAL",
            "SENTRY_DSN",
            "NPM_CONFIG__AUTH",
            "GITLAB_PAT",
            "SSH_AUTH_SOCK",
            "db.password",
            "apikey",
            "SIGNING_PRIVATE_KEY",
            "CI_JOB_JWT",
            "SLACK_WEBHOOK_URL",
        ] {
            assert!(is_secret_name(yes), "{yes}");
        }
        for no in [
            "PATH",
            "PWD",
            "OLDPWD",
            "RUSTUP_AUTO_INSTALL",
            "CARGO_HOME",
            "GIT_AUTHOR_NAME",
            "MAX_TOKENS",
            "TOKENIZERS_PARALLELISM",
            "KEYBOARD_LAYOUT",
            "KEYMAP",
            "MONKEY",
            "PIP_INDEX_URL",
            "HTTPS_PROXY",
            "SSL_CERT_FILE",
            "PASSAGE_DIR",
        ] {
            assert!(!is_secret_name(no), "{no}");
        }
    }
}
