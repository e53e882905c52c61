//! Reads of secrets: secret-named files and variables, credential stores below
//! the home directory.
//!
//! Hostile lines: class `secret_read` of `tests/fixtures/policy/hostile.txt`.

use super::*;

/// Credential stores below the home directory (also matched by glob).
pub(crate) const HOME_CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gh",
    ".config/gcloud",
    ".azure",
    ".docker",
    ".kube",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
    ".password-store",
    ".vault-token",
];

/// Files that hold secrets by name, wherever they are: `.env` and its variants
/// (not the `.example`/`.sample`/`.template` ones), private keys and keystores,
/// cloud credentials, Terraform state, the repository's git config (tokens of
/// CI checkouts live there).
pub(crate) fn is_secret_file(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    let name = p.rsplit('/').next().unwrap_or(p).to_ascii_lowercase();
    let example = [
        "example", "sample", "template", "dist", "defaults", "default", "tmpl", "test",
    ]
    .iter()
    .any(|e| name.ends_with(&format!(".{e}")) || name.contains(&format!(".{e}.")));
    let fixture = p.split('/').any(|c| {
        matches!(
            c,
            "test" | "tests" | "testdata" | "fixtures" | "spec" | "__tests__" | "examples" | "docs"
        )
    });
    if example || fixture {
        return false;
    }
    let exact = [
        ".env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "credentials.json",
        "master.key",
        ".netrc",
        ".pypirc",
        ".git-credentials",
        ".htpasswd",
        "terraform.tfstate",
    ];
    let suffixes = [
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".tfstate",
        ".tfstate.backup",
    ];
    exact.contains(&name.as_str())
        || name.starts_with(".env.")
        || suffixes.iter().any(|s| name.ends_with(s))
        || (name.starts_with("service-account") && name.ends_with(".json"))
        || p.ends_with(".git/config")
}

pub(crate) fn is_credential(rest: &str) -> bool {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    HOME_CREDENTIALS.iter().any(|c| {
        let cs: Vec<&str> = c.split('/').collect();
        segs.len() >= cs.len()
            && segs.iter().zip(&cs).all(|(a, b)| {
                if paths::has_glob(a) {
                    paths::glob_match(a, b)
                } else {
                    a == b
                }
            })
    })
}

/// Names of variables a command may not read: every secret name of the
/// workspace ([`dandori_trace::secret_names::is_secret_name`]: `OPENAI_API_KEY`,
/// `DB_PASSWORD`, `GITHUB_TOKEN`, …), plus, because reading is riskier than
/// inheriting, session and certificate names (`FLASK_SESSION`, `CLIENT_CERT`) and
/// service URLs that usually carry credentials (`DATABASE_URL`).
pub(crate) fn is_secret_name(name: &str) -> bool {
    if dandori_trace::secret_names::is_secret_name(name) {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    let parts: Vec<&str> = upper.split('_').collect();
    if parts.iter().any(|p| ["SESSION", "CERT"].contains(p)) {
        return true;
    }
    let url_hosts = [
        "DATABASE", "DB", "REDIS", "MONGO", "MONGODB", "POSTGRES", "PG", "MYSQL", "AMQP",
        "RABBITMQ", "SENTRY", "BROKER", "CELERY",
    ];
    (upper.ends_with("_URL") || upper.ends_with("_URI"))
        && parts.first().is_some_and(|p| url_hosts.contains(p))
}

/// Variable names referenced by `$NAME` / `${NAME…}` in a word's text.
pub(crate) fn referenced_vars(text: &str) -> Vec<&str> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = RE
        .get_or_init(|| Regex::new(r"\$\{?[!#]?([A-Za-z_][A-Za-z0-9_]*)").ok())
        .as_ref()
    else {
        return Vec::new();
    };
    re.captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .collect()
}

/// The environment printed as data by a tool that is allowed for other work
/// (`jq env`, `npm run env`, `make -p`, `cmake -E environment`, `mvn
/// help:system`), and `gh auth token`.
pub(crate) fn check_tool_env_dump(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
    let first = args.first().map(String::as_str).unwrap_or("");
    let env_dump = match base {
        "jq" | "gojq" | "jaq" => args.iter().any(|a| {
            !a.starts_with('-')
                && (a.contains("$ENV")
                    || a.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|w| w == "env"))
        }),
        "npm" | "pnpm" | "yarn" | "bun" => {
            (first == "run" || first == "run-script") && args.get(1).is_some_and(|a| a == "env")
                || first == "env"
        }
        "make" | "gmake" => args.iter().any(|a| {
            a == "--print-data-base"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))
        }),
        "cmake" => first == "-E" && args.get(1).is_some_and(|a| a == "environment"),
        "mvn" | "mvnw" => args
            .iter()
            .any(|a| a.starts_with("help:system") || a.contains("env.")),
        _ => false,
    };
    if env_dump {
        return Err(PolicyViolation::new(
            codes::POLICY_SECRET_READ,
            format!("`{base} {}` prints the environment", args.join(" ")),
        )
        .with_rule("env-dump"));
    }
    if base == "gh"
        && args.first().is_some_and(|a| a == "auth")
        && (args.get(1).is_some_and(|a| a == "token")
            || args.iter().any(|a| a == "--show-token" || a == "-t"))
    {
        return Err(PolicyViolation::new(
            codes::POLICY_SECRET_READ,
            "`gh auth token` prints the stored GitHub token".to_string(),
        )
        .with_rule("secret-read"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("echo $GITHUB_TOKEN", POLICY_SECRET_READ),
                ("cat config/.env.production", POLICY_SECRET_READ),
                ("cp deploy/server.pem out.txt", POLICY_SECRET_READ),
                ("printenv", POLICY_SECRET_READ),
                ("echo ${!AWS*}", POLICY_SECRET_READ),
                ("cat ~/.config/gh/hosts.yml", POLICY_CREDENTIAL_ACCESS),
            ],
            &[
                "cat .env.example",
                "cat tests/fixtures/.env",
                "echo $USER",
                "cat docs/keys.md",
            ],
        );
    }
}
