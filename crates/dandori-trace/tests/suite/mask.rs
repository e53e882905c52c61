use std::collections::BTreeMap;

use dandori_trace::Masker;
use dandori_trace::mask::{is_secret_env, secret_env_values};
use pretty_assertions::assert_eq;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn secret_variable_names() {
    for name in [
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GITHUB_TOKEN",
        "GH_TOKEN",
        "MY_SERVICE_CREDENTIAL",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "DB_PASSWORD",
        "PGPASSWORD",
        "SENTRY_DSN",
        "NPM_AUTH",
        "GITLAB_PAT",
        "apikey",
        "SLACK_BOT_TOKEN",
        "STRIPE_SECRET",
        "DOCKER_CREDS",
        "COOKIE",
    ] {
        assert!(is_secret_env(name, "x"), "{name}");
    }
    for name in [
        "PATH",
        "HOME",
        "PWD",
        "OLDPWD",
        "GIT_AUTHOR_NAME",
        "MAX_TOKENS",
        "TOKENIZERS_PARALLELISM",
        "SSH_AUTH_SOCK",
        "KEYMAP",
        "RUSTUP_TOOLCHAIN",
        "PIP_INDEX_URL",
        "LANG",
    ] {
        assert!(!is_secret_env(name, "plain"), "{name}");
    }
    // By value: a URL with a password, a known key shape.
    assert!(is_secret_env(
        "DATABASE_URL",
        "postgres://app:s3cretpw@db.internal:5432/app"
    ));
    assert!(is_secret_env(
        "PIP_INDEX_URL",
        "https://user:tok3n-value@pypi.example.com/simple"
    ));
    assert!(!is_secret_env("PIP_INDEX_URL", "https://pypi.org/simple"));
    assert!(is_secret_env("SOMETHING", "AKIAIOSFODNN7EXAMPLE"));
}

#[test]
fn secret_values_include_url_passwords_and_skip_short_values() {
    let values = secret_env_values(&env(&[
        ("DATABASE_URL", "postgres://app:s3cretpw@db/app"),
        ("MY_SERVICE_CREDENTIAL", "cred-0123456789"),
        ("SHORT_TOKEN", "abc"),
        ("HOME", "/home/me"),
    ]));
    assert_eq!(
        values,
        vec![
            "cred-0123456789".to_string(),
            "postgres://app:s3cretpw@db/app".to_string(),
            "s3cretpw".to_string(),
        ]
    );
}

#[test]
fn masks_by_value_shape_and_configured_pattern() {
    let m = Masker::new(true, vec!["password".into(), "dsn".into(), "token".into()])
        .with_env_secrets(&env(&[
            ("MY_SERVICE_CREDENTIAL", "cred-0123456789"),
            ("DATABASE_URL", "postgres://app:s3cretpw@db/app"),
        ]));
    let text = "\
value cred-0123456789 printed
pw s3cretpw alone
url postgres://other:hunter2222@h/db
SENTRY_DSN=https://abc@o1.ingest.sentry.io/1
prompt_tokens: 1234 and max_tokens=4096
jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk
stripe sk_live_4eC39HqLyjWDarjtT1zdp7dc
aws AKIAIOSFODNN7EXAMPLE
slack https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX
google AIzaSyA-1234567890abcdefghijklmnopqrstu
-----BEGIN OPENSSH PRIVATE KEY-----
b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ
";
    let out = m.mask_str(text);
    for secret in [
        "cred-0123456789",
        "s3cretpw",
        "hunter2222",
        "ingest.sentry.io",
        "eyJhbGciOiJIUzI1NiJ9",
        "sk_live_4eC39",
        "AKIAIOSFODNN7EXAMPLE",
        "XXXXXXXXXXXXXXXXXXXXXXXX",
        "AIzaSyA",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ",
    ] {
        assert!(!out.contains(secret), "{secret} in\n{out}");
    }
    // Token counts and the rest of the URL survive.
    assert!(out.contains("prompt_tokens: 1234"), "{out}");
    assert!(out.contains("max_tokens=4096"), "{out}");
    assert!(out.contains("postgres://other:***@h/db"), "{out}");
}

#[test]
fn disabled_masker_masks_nothing() {
    let m = Masker::new(false, vec!["password".into()])
        .with_literal_secrets(["cred-0123456789".to_string()]);
    assert_eq!(m.mask_str("cred-0123456789"), "cred-0123456789");
}
