//! The environment of children (config `shell_environment_policy`): the user's
//! environment minus secrets, keeping tool configuration (`RUSTUP_*`, `CARGO_*`,
//! `PIP_*`, `UV_*`, `NPM_CONFIG_*`, proxies, `PATH`, `HOME`, `LANG`, …).
//!
//! A variable is a secret when its name marks one ([`is_secret_name`], shared
//! with the masker and the command policy), when its
//! value is a URL carrying credentials (`scheme://user:password@host`), when it is
//! a provider key variable (`llm.providers[].api_key_env`), or when it matches
//! `exclude`. `keep` wins over every rule but the provider keys.

use std::collections::BTreeMap;

use dandori_config::{EnvInherit, ShellEnvironmentPolicy};

/// `inherit: core`.
const CORE_VARS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "TMPDIR", "TZ",
];
/// `inherit: toolchain`, beyond [`CORE_VARS`]: exact names.
const TOOLCHAIN_VARS: &[&str] = &[
    "LANGUAGE",
    "COLORTERM",
    "NO_COLOR",
    "FORCE_COLOR",
    "CLICOLOR",
    "CI",
    "VIRTUAL_ENV",
    "JAVA_HOME",
    "M2_HOME",
    "GOROOT",
    "GOPATH",
    "GOBIN",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOPROXY",
    "GOPRIVATE",
    "GONOPROXY",
    "GONOSUMDB",
    "GOSUMDB",
    "GOTOOLCHAIN",
    "GOOS",
    "GOARCH",
    "CC",
    "CXX",
    "AR",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "MAKEFLAGS",
    "PKG_CONFIG_PATH",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
];
/// `inherit: toolchain`: name prefixes of the toolchains' own variables.
const TOOLCHAIN_PREFIXES: &[&str] = &[
    "LC_",
    "RUSTUP_",
    "CARGO_",
    "RUST",
    "PYENV_",
    "PYTHON",
    "PIP_",
    "UV_",
    "POETRY_",
    "PDM_",
    "HATCH_",
    "CONDA_",
    "PYTEST_",
    "NVM_",
    "NODE_",
    "NPM_CONFIG_",
    "npm_config_",
    "YARN_",
    "PNPM_",
    "COREPACK_",
    "BUN_",
    "DENO_",
    "VOLTA_",
    "CGO_",
    "JAVA_",
    "MAVEN_",
    "GRADLE_",
    "SDKMAN_",
    "DOTNET_",
    "GEM_",
    "COMPOSER_",
    "BUNDLE_",
    "RBENV_",
    "RUBY",
    "CMAKE_",
    "DANDORI_",
];

/// True for the variables `inherit: toolchain` keeps.
pub fn is_toolchain_var(name: &str) -> bool {
    CORE_VARS.contains(&name)
        || TOOLCHAIN_VARS.contains(&name)
        || TOOLCHAIN_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Why a variable was removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// A secret rule (name, credential URL, provider key): its value is masked.
    Secret,
    /// `inherit` or `exclude` (not necessarily a secret).
    Policy,
}

/// The result of filtering an environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    pub env: BTreeMap<String, String>,
    /// Names removed as secrets, sorted.
    pub removed_secrets: Vec<String>,
    /// Values of the removed secrets worth masking by value
    /// ([`dandori_trace::mask::worth_masking`]), longest first.
    pub secret_values: Vec<String>,
}

/// True when the name alone marks a secret: the workspace's one definition,
/// [`dandori_trace::secret_names::is_secret_name`].
pub use dandori_trace::secret_names::is_secret_name;

/// True when the value holds a URL with a password (`postgres://u:p@db/x`).
pub fn carries_credentials(value: &str) -> bool {
    let mut rest = value;
    while let Some(i) = rest.find("://") {
        let after = &rest[i + 3..];
        let end = after
            .find(|c: char| c == '/' || c == '?' || c == '#' || c.is_whitespace())
            .unwrap_or(after.len());
        let authority = &after[..end];
        if let Some(at) = authority.rfind('@') {
            let userinfo = &authority[..at];
            // `user:password@` or a bare token as user (`https://TOKEN@github.com`).
            if userinfo.contains(':') || userinfo.len() >= 20 {
                return true;
            }
        }
        rest = after;
    }
    false
}

fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_ascii_uppercase().chars().collect();
    let n: Vec<char> = name.to_ascii_uppercase().chars().collect();
    // Iterative wildcard matching with one backtrack point: linear-ish, no recursion.
    let (mut pi, mut ni, mut star, mut mark) = (0, 0, None, 0);
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    while pi < p.len() && p[pi] == '*' {
        pi += 1;
    }
    pi == p.len()
}

/// Filters `parent` for a child. `provider_keys` are the variables holding model
/// API keys; they are removed whatever `keep` says.
pub fn filter(
    parent: &BTreeMap<String, String>,
    policy: &ShellEnvironmentPolicy,
    provider_keys: &[String],
) -> ChildEnv {
    let mut out = ChildEnv::default();
    for (name, value) in parent {
        let verdict = classify(name, value, policy, provider_keys);
        match verdict {
            None => {
                out.env.insert(name.clone(), value.clone());
            }
            Some(Removal::Secret) => {
                out.removed_secrets.push(name.clone());
                // Not a short value nor a small number: masking `1` or `32000`
                // everywhere would destroy every log.
                if dandori_trace::mask::worth_masking(value) {
                    out.secret_values.push(value.clone());
                }
            }
            Some(Removal::Policy) => {}
        }
    }
    for (k, v) in &policy.set {
        out.env.insert(k.clone(), v.clone());
    }
    if !out.env.contains_key("PATH") {
        out.env.insert(
            "PATH".to_string(),
            "/usr/local/bin:/usr/bin:/bin".to_string(),
        );
    }
    out.secret_values
        .sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.secret_values.dedup();
    out
}

fn classify(
    name: &str,
    value: &str,
    policy: &ShellEnvironmentPolicy,
    provider_keys: &[String],
) -> Option<Removal> {
    if provider_keys.iter().any(|k| k == name) {
        return Some(Removal::Secret);
    }
    let kept = policy.keep.iter().any(|k| k == name);
    if !kept
        && !policy.ignore_default_excludes
        && (is_secret_name(name) || carries_credentials(value))
    {
        return Some(Removal::Secret);
    }
    if !kept && policy.exclude.iter().any(|p| glob_match(p, name)) {
        return Some(Removal::Secret);
    }
    let inherited = match policy.inherit {
        EnvInherit::Toolchain => is_toolchain_var(name),
        EnvInherit::All => true,
        EnvInherit::Core => CORE_VARS.contains(&name) || name.starts_with("LC_"),
        EnvInherit::None => false,
    };
    if inherited || kept {
        None
    } else {
        Some(Removal::Policy)
    }
}

/// The values of the secret variables of this process's environment under the
/// default policy (longest first): what the masking code masks by value.
pub fn secret_env_values() -> Vec<String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    filter(&env, &ShellEnvironmentPolicy::default(), &[]).secret_values
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_names() {
        for yes in [
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ACCESS_KEY_ID",
            "GITHUB_TOKEN",
            "GHTOKEN",
            "DB_PASS",
            "MY_SERVICE_CREDENTIAL",
            "SENTRY_DSN",
            "NPM_CONFIG__AUTH",
            "CARGO_REGISTRY_TOKEN",
            "SSH_AUTH_SOCK",
            "db.password",
        ] {
            assert!(is_secret_name(yes), "{yes}");
        }
        for no in [
            "PATH",
            "PWD",
            "RUSTUP_AUTO_INSTALL",
            "CARGO_HOME",
            "GIT_AUTHOR_NAME",
            "KEYBOARD_LAYOUT",
            "PIP_INDEX_URL",
            "HTTPS_PROXY",
            "MONKEY",
        ] {
            assert!(!is_secret_name(no), "{no}");
        }
    }

    #[test]
    fn credential_urls() {
        assert!(carries_credentials("postgres://app:hunter2@db:5432/x"));
        assert!(carries_credentials(
            "https://ghp_0123456789abcdefghijklmn@github.com/x"
        ));
        assert!(!carries_credentials("https://pypi.org/simple"));
        assert!(!carries_credentials("git@github.com:x/y"));
        assert!(!carries_credentials("http://proxy:3128"));
    }

    #[test]
    fn globs() {
        assert!(glob_match("*_INTERNAL", "corp_internal"));
        assert!(glob_match("A?C*", "ABCDEF"));
        assert!(!glob_match("A?C", "ABCD"));
        assert!(glob_match("*", ""));
    }
}
