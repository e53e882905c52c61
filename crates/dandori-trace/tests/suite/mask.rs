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

/// The masker that guards an agent's log: the default patterns plus the secret
/// variables of a realistic environment.
fn agent_log_masker() -> Masker {
    Masker::default().with_env_secrets(&env(&[
        ("ANTHROPIC_API_KEY", "sk-ant-api03-Zq8vN2xLk4Rt7YwBc1Df"),
        ("GITHUB_TOKEN", "ghp_R4nd0mT0kenValue1234567890abcdEF"),
        ("DEPLOY_PASSWORD", "s3cr3t-Passw0rd"),
        ("HOME", "/root"),
    ]))
}

/// Lines an agent CLI prints with no secret in them: each must come out of the
/// masker byte for byte, and the JSON ones must still parse.
#[test]
fn agent_json_events_with_numbers_pass_unchanged() {
    let m = agent_log_masker();
    let claude_result = r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":2739,"duration_api_ms":4417,"num_turns":3,"result":"Done: added the tests.","session_id":"1f0c5b4a-2d7e-4c1a-9f3b-6a8e2d1c0b9f","total_cost_usd":0.0123,"usage":{"input_tokens":4,"cache_creation_input_tokens":5423,"cache_read_input_tokens":13512,"output_tokens":120},"modelUsage":{"claude-sonnet-4-5-20250929":{"inputTokens":4,"outputTokens":120,"cacheReadInputTokens":13512,"cacheCreationInputTokens":5423,"webSearchRequests":0,"costUSD":0.0123,"contextWindow":200000,"maxOutputTokens":32000}},"permission_denials":[],"uuid":"8d1f6c2e-9a7b-4e3d-b5c0-1f2e3d4c5b6a"}"#;
    let claude_assistant = r#"{"type":"assistant","message":{"id":"msg_01ABCdefGHIjkl","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"The token budget is fine."}],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1,"max_tokens":32000}},"parent_tool_use_id":null,"session_id":"1f0c5b4a-2d7e-4c1a-9f3b-6a8e2d1c0b9f"}"#;
    let codex_usage = r#"{"type":"turn.completed","usage":{"input_tokens":24763,"cached_input_tokens":24448,"output_tokens":122}}"#;
    let codex_count = r#"{"id":"0","msg":{"type":"token_count","info":{"total_token_usage":{"input_tokens":9013,"output_tokens":2048,"total_tokens":11061},"model_context_window":272000},"token_limit":[128000],"secret_scanning":true,"auth_required":false}}"#;
    for line in [claude_result, claude_assistant, codex_usage, codex_count] {
        let out = m.mask_str(line);
        assert_eq!(out, line);
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v, serde_json::from_str::<serde_json::Value>(line).unwrap());
    }
    // The same numbers in free text (a human-readable summary, a YAML file).
    for text in [
        "tokens: 1234, max_token: 4096, token=32000",
        "password_min_length: 12",
        "[usage] input_tokens=24763 output_tokens=122}",
        "token_limit=(128000)",
    ] {
        assert_eq!(m.mask_str(text), text);
    }
}

/// The same kinds of lines carrying secrets: the secrets go, and what surrounds
/// them (JSON structure, numbers, the rest of a URL) stays.
#[test]
fn secrets_in_agent_lines_are_masked_and_the_json_still_parses() {
    let m = agent_log_masker();
    let tool_use = r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"curl -H 'Authorization: Bearer ghp_R4nd0mT0kenValue1234567890abcdEF' https://api.github.com/user","timeout":120000}}],"usage":{"input_tokens":12,"output_tokens":64}}}"#;
    let codex_exec = r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"bash -lc 'env | grep KEY'","aggregated_output":"ANTHROPIC_API_KEY=sk-ant-api03-Zq8vN2xLk4Rt7YwBc1Df\nMAX_TOKENS=32000\n","exit_code":0,"status":"completed"}}"#;
    let config_json = r#"{"api_key":"abcd1234efgh","password":"hunter2222","token":"tok_live_0xyz9","max_tokens":32000,"retries":3}"#;
    for (line, secrets) in [
        (tool_use, &["ghp_R4nd0mT0kenValue"][..]),
        (codex_exec, &["sk-ant-api03"][..]),
        (
            config_json,
            &["abcd1234efgh", "hunter2222", "tok_live_0xyz9"][..],
        ),
    ] {
        let out = m.mask_str(line);
        for s in secrets {
            assert!(!out.contains(s), "{s} in {out}");
        }
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let before: serde_json::Value = serde_json::from_str(line).unwrap();
        // Only strings changed: every number is where it was.
        assert_eq!(numbers(&v), numbers(&before), "{out}");
    }
    let out = m.mask_str(config_json);
    assert_eq!(
        out,
        r#"{"api_key":"***","password":"***","token":"***","max_tokens":32000,"retries":3}"#
    );
    // A backslash in a secret (`\\` in JSON) is part of it.
    assert_eq!(
        m.mask_str(r#"{"password":"p\\ss\\w0rd","n":1}"#),
        r#"{"password":"***","n":1}"#
    );
    let out = m.mask_str(codex_exec);
    assert!(
        out.contains(r"ANTHROPIC_API_KEY=***\nMAX_TOKENS=32000\n"),
        "{out}"
    );

    // An HTTP request dump, a URL with a token, a Python traceback, an env dump.
    let text = "\
> GET /v1/models HTTP/1.1
> Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJlLXZhbHVl
> Content-Length: 32000
fetching https://ci.example.com/api/v4/jobs/4417/artifacts?private_token=glpat-Abc123Def456Ghi789Jkl&per_page=100
Traceback (most recent call last):
  File \"/srv/app/client.py\", line 88, in call
    resp = session.post(url, auth=(\"deploy\", \"s3cr3t-Passw0rd\"), timeout=32000)
requests.exceptions.HTTPError: 401 Client Error: Unauthorized for url: https://deploy:s3cr3t-Passw0rd@registry.example.com:5000/v2/
GITHUB_TOKEN=ghp_R4nd0mT0kenValue1234567890abcdEF
Use basic authentication or a bearer tokenization scheme.
callback https://hooks.example.com/cb?token=abc123def456&api_key=zz99yy88xx77&page=2
db password=P&ssw0rd;
";
    let out = m.mask_str(text);
    for secret in [
        "eyJhbGciOiJIUzI1NiJ9",
        "glpat-Abc123",
        "s3cr3t-Passw0rd",
        "ghp_R4nd0mT0ken",
    ] {
        assert!(!out.contains(secret), "{secret} in\n{out}");
    }
    for kept in [
        "> Authorization: Bearer ***\n",
        "> Content-Length: 32000\n",
        "?private_token=***&per_page=100\n",
        "/jobs/4417/artifacts?",
        "&per_page=100\n",
        "line 88, in call",
        "timeout=32000)",
        "401 Client Error",
        "https://deploy:***@registry.example.com:5000/v2/",
        "GITHUB_TOKEN=***\n",
        "Use basic authentication or a bearer tokenization scheme.\n",
        "/cb?token=***&api_key=***&page=2\n",
        "db password=***;\n",
    ] {
        assert!(out.contains(kept), "{kept:?} not in\n{out}");
    }
}

fn numbers(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::Number(n) => vec![n.to_string()],
        serde_json::Value::Array(a) => a.iter().flat_map(numbers).collect(),
        serde_json::Value::Object(o) => o.values().flat_map(numbers).collect(),
        _ => Vec::new(),
    }
}

/// A secret variable whose value is short or a plain number (a setting that
/// happens to have a secret-looking name) must not wipe that text from every log.
#[test]
fn short_and_numeric_secret_values_are_not_masked_by_value() {
    let m = Masker::default().with_env_secrets(&env(&[
        ("FEATURE_TOKEN", "1"),
        ("AUTH_TIMEOUT", "300000"),
        ("SESSION_TOKEN_TTL", "32000"),
        ("RSA_KEY_BITS", "4096"),
        ("DB_PASS", "abc"),
        ("PIN_PASSWORD", "9081726354123"),
        ("API_KEY", "k3y-Val"),
    ]));
    let line = r#"{"duration_ms":300000,"maxOutputTokens":32000,"bits":4096,"n":1,"word":"abc"}"#;
    assert_eq!(m.mask_str(line), line);
    // Long numeric values and short non-numeric ones are still hidden.
    assert_eq!(
        m.mask_str("pin 9081726354123 key k3y-Val"),
        "pin *** key ***"
    );
    let listed: Vec<String> = m.literal_secrets().into_iter().map(|(_, v)| v).collect();
    for short in ["1", "300000", "32000", "4096", "abc"] {
        assert!(!listed.iter().any(|v| v == short), "{short}: {listed:?}");
    }
}

/// A long `env`-style dump inside one JSON string (no whitespace at all): every
/// secret value goes, every number stays, in one pass (no recursion per line).
#[test]
fn a_long_assignment_dump_in_one_json_string() {
    let m = agent_log_masker();
    let lines: Vec<String> = (0..20_000)
        .map(|i| format!("SVC{i}_TOKEN=tok{i}x9z\\nSVC{i}_MAX_TOKENS={i}"))
        .collect();
    let line = format!(
        r#"{{"aggregated_output":"{}","exit_code":0}}"#,
        lines.join("\\n")
    );
    let out = m.mask_str(&line);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let text = v["aggregated_output"].as_str().unwrap();
    assert_eq!(text.matches("_TOKEN=***\n").count(), 20_000);
    assert!(!text.contains("x9z"));
    assert!(
        text.ends_with("SVC19999_MAX_TOKENS=19999"),
        "{}",
        &text[text.len() - 80..]
    );
    assert_eq!(v["exit_code"], 0);
}
