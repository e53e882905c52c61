use dandori_trace::Masker;
use dandori_trace::secret_scan::{SecretFinding, redact_patch, scan_diff};
use pretty_assertions::assert_eq;

/// A `git diff` of new files, one line per entry.
fn new_file_diff(files: &[(&str, &[&str])]) -> String {
    let mut out = String::new();
    for (path, lines) in files {
        out.push_str(&format!(
            "diff --git a/{path} b/{path}\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{} @@\n",
            lines.len()
        ));
        for l in *lines {
            out.push_str(&format!("+{l}\n"));
        }
    }
    out
}

fn kinds(findings: &[SecretFinding]) -> Vec<(String, u64, String)> {
    findings
        .iter()
        .map(|f| (f.file.clone(), f.line, f.kind.clone()))
        .collect()
}

// Planted secrets are built at run time so that this file holds none.
fn planted() -> Vec<(String, &'static str)> {
    let r = |prefix: &str, n: usize| format!("{prefix}{}", &"a1B2c3D4e5F6g7H8".repeat(6)[..n]);
    vec![
        (format!("OPENAI = \"{}\"", r("sk-proj-", 40)), "openai_key"),
        (format!("k = '{}'", r("sk-ant-api03-", 40)), "anthropic_key"),
        (format!("gh: {}", r("ghp_", 36)), "github_token"),
        (format!("gl = \"{}\"", r("glpat-", 20)), "gitlab_token"),
        (
            format!("aws_id = \"AKIA{}\"", "Q3R4S5T6U7V8W9X2"),
            "aws_access_key_id",
        ),
        (format!("SLACK={}", r("xoxb-", 30)), "slack_token"),
        (
            format!("stripe.api_key = \"{}\"", r("sk_live_", 24)),
            "stripe_key",
        ),
        (format!("maps = \"AIza{}\"", r("", 35)), "google_api_key"),
        ("-----BEGIN RSA PRIVATE KEY-----".to_string(), "private_key"),
        (
            format!("t = \"eyJ{}.eyJ{}.{}\"", r("", 20), r("", 20), r("", 20)),
            "jwt",
        ),
        (
            "DATABASE_URL=postgres://app:Zx9vQ2mK7pL4@db.internal:5432/app".to_string(),
            "url_credentials",
        ),
        (
            "db_password = \"Tr0ub4dor&3xQ9zLm\"".to_string(),
            "high_entropy_assignment",
        ),
        (
            "apiKey: 9f8e7d6c5b4a3f2e1d0c".to_string(),
            "high_entropy_assignment",
        ),
    ]
}

#[test]
fn every_planted_shape_is_found_with_file_and_line() {
    let planted = planted();
    let lines: Vec<&str> = planted.iter().map(|(l, _)| l.as_str()).collect();
    let diff = new_file_diff(&[("src/settings.py", &lines)]);
    let found = scan_diff(&diff, &[]);
    let want: Vec<(String, u64, String)> = planted
        .iter()
        .enumerate()
        .map(|(i, (_, k))| ("src/settings.py".to_string(), i as u64 + 1, k.to_string()))
        .collect();
    assert_eq!(kinds(&found), want);
    // No finding carries the secret itself.
    for f in &found {
        let shown = f.to_string();
        for (l, _) in &planted {
            assert!(!l.contains(&shown) || shown.len() < 8, "{shown}");
        }
    }
}

#[test]
fn values_of_secret_variables_are_found_by_name() {
    let secrets = vec![(
        "MY_SERVICE_CREDENTIAL".to_string(),
        "plain-words-but-secret".to_string(),
    )];
    let diff = new_file_diff(&[("notes.txt", &["hello", "cred plain-words-but-secret here"])]);
    assert_eq!(
        kinds(&scan_diff(&diff, &secrets)),
        vec![(
            "notes.txt".to_string(),
            2,
            "env_value:MY_SERVICE_CREDENTIAL".to_string()
        )]
    );
}

#[test]
fn line_numbers_follow_the_hunks_and_only_added_lines_count() {
    let key = format!("AKIA{}", "Q3R4S5T6U7V8W9X2");
    let diff = format!(
        "diff --git a/app.py b/app.py\nindex 1..2 100644\n--- a/app.py\n+++ b/app.py\n@@ -10,3 +10,4 @@ def f():\n context\n-old = \"{key}\"\n+new = 1\n+aws = \"{key}\"\n context\n"
    );
    assert_eq!(
        kinds(&scan_diff(&diff, &[])),
        vec![("app.py".to_string(), 12, "aws_access_key_id".to_string())]
    );
}

#[test]
fn ordinary_code_is_not_a_secret() {
    let lock = [
        "\"integrity\": \"sha512-Q9Jd1pN0ZkS8x3Tg2b5yV6wU7rT4eE1qA0sD9fG8hJ7kL6zX5cV4bN3mM2nB1vC0xZ9aS8dF7gH6jK5lL4==\"",
        "checksum = \"3f7b0c5f2d1a9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c\"",
        "token = \"9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d4c\"",
    ];
    let code = [
        "import os",
        "API_KEY = os.environ[\"API_KEY\"]",
        "token = os.getenv('GITHUB_TOKEN')",
        "password: ${DB_PASSWORD}",
        "secret_name: prod-database-credentials",
        "request_id = \"123e4567-e89b-12d3-a456-426614174000\"",
        "user_uuid: 550e8400-e29b-41d4-a716-446655440000",
        "commit = \"d41d8cd98f00b204e9800998ecf8427e0badc0de\"",
        "FIXTURE_PNG = \"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk\"",
        "api_key = \"your-api-key-here\"",
        "password = \"example-Passw0rd-123\"",
        "TOKEN_LIMIT = 4096",
        "max_tokens: 128000",
        "primary_key=True",
        "url = \"https://user@github.com/org/repo.git\"",
        "dsn = \"postgres://${USER}:${PASSWORD}@localhost/db\"",
        "const keyboardShortcut = \"ctrl+shift+k\";",
        "secret = \"\"",
        "auth_header = f\"Bearer {token}\"",
        "disk-usage-monitoring-service-v2",
    ];
    let diff = new_file_diff(&[
        ("web/package-lock.json", &lock[..1]),
        ("Cargo.lock", &lock[1..2]),
        ("poetry.lock", &lock[2..3]),
        ("src/app.py", &code),
    ]);
    assert_eq!(kinds(&scan_diff(&diff, &[])), vec![]);
}

#[test]
fn a_key_shape_is_a_secret_even_in_a_lock_file() {
    let key = format!("AKIA{}", "Q3R4S5T6U7V8W9X2");
    let line = format!("# {key}");
    let diff = new_file_diff(&[("Cargo.lock", &[line.as_str()])]);
    assert_eq!(scan_diff(&diff, &[]).len(), 1);
}

#[test]
fn redacted_patch_keeps_the_rest_and_names_the_kind() {
    let key = format!("AKIA{}", "Q3R4S5T6U7V8W9X2");
    let hit = format!("aws = \"{key}\"");
    let diff = new_file_diff(&[("a.py", &["x = 1", hit.as_str(), "y = 2"])]);
    let found = scan_diff(&diff, &[]);
    let out = redact_patch(&diff, &found, &Masker::default());
    assert!(!out.contains(&key), "{out}");
    assert!(
        out.contains("+x = 1\n+[line removed by dandori: aws_access_key_id]\n+y = 2\n"),
        "{out}"
    );
}

/// Issue 25: a known secret written encoded (base64 in any alignment, hex,
/// URL-encoded, reversed) is found like the value itself, named by variable and
/// encoding, and masked in what is kept.
#[test]
fn encoded_env_secrets_are_found_and_masked() {
    // Built at run time, so this file holds none.
    let token: String = ["Zq8", "Lw3", "vN7", "pX1", "kR5", "mT9"].concat();
    let env = std::collections::BTreeMap::from([
        ("DEPLOY_TOKEN".to_string(), token.clone()),
        ("DB_PASSWORD".to_string(), ["p@ss/", "w0rd!x9"].concat()),
        ("PATH".to_string(), "/usr/bin".to_string()),
    ]);
    let masker = Masker::default().with_env_secrets(&env);
    let b64 = |data: &[u8]| -> String {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        data.chunks(3)
            .flat_map(|c| {
                let v = (u32::from(c[0]) << 16)
                    | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
                    | u32::from(*c.get(2).unwrap_or(&0));
                (0..4).map(move |i| {
                    if i <= c.len() {
                        char::from(A[((v >> (18 - 6 * i)) & 63) as usize])
                    } else {
                        '='
                    }
                })
            })
            .collect()
    };
    let hex: String = token.bytes().map(|b| format!("{b:02x}")).collect();
    let reversed: String = token.chars().rev().collect();
    let lines = [
        format!("blob = \"{}\"", b64(token.as_bytes())),
        format!("x: {}", b64(format!("t={token}").as_bytes())),
        format!("y: {}", b64(format!("tk={token};").as_bytes())),
        format!("h = {hex}"),
        format!("r = {reversed}"),
        format!(
            "u = https://x.invalid/?p={}",
            ["p%40ss%2F", "w0rd%21x9"].concat()
        ),
    ];
    let line_refs: Vec<&str> = lines.iter().map(String::as_str).collect();
    let patch = new_file_diff(&[("notes.txt", &line_refs)]);
    let found = kinds(&scan_diff(&patch, &masker.literal_secrets()));
    assert_eq!(
        found.iter().map(|(_, l, _)| *l).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6],
        "{found:?}"
    );
    assert!(
        found[..5]
            .iter()
            .all(|(_, _, k)| k.starts_with("env_value:DEPLOY_TOKEN")),
        "{found:?}"
    );
    assert_eq!(found[3].2, "env_value:DEPLOY_TOKEN:hex");
    assert_eq!(found[4].2, "env_value:DEPLOY_TOKEN:reversed");
    assert_eq!(found[5].2, "env_value:DB_PASSWORD:url");
    for line in &lines {
        let masked = masker.mask_str(line);
        assert!(masked.contains("***"), "{line} → {masked}");
        for (_, form) in masker.literal_secrets() {
            assert!(!masked.contains(&form), "{masked}");
        }
    }
}
