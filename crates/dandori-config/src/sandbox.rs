//! `sandbox:` and `shell_environment_policy:`: how the commands dandori runs on
//! someone's behalf are confined, and which of the user's environment variables
//! they inherit. See `docs/security.md`.
//!
//! ```yaml
//! sandbox:
//!   mode: auto            # auto | bubblewrap | landlock | off
//! shell_environment_policy:
//!   inherit: all          # all | core | none
//!   exclude: ["*_INTERNAL"]
//!   keep: ["MY_PUBLIC_TOKEN_NAME"]
//!   set: {CI: "1"}
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Which sandbox mechanism confines commands (flag `--sandbox` overrides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// bubblewrap when it works here, else the built-in fallback (namespaces +
    /// Landlock), else model- and plan-issued commands are refused.
    #[default]
    Auto,
    /// bubblewrap only.
    Bubblewrap,
    /// The built-in fallback only (no external binary).
    Landlock,
    /// No sandbox: commands run unconfined (an explicit opt-out).
    Off,
}

impl std::str::FromStr for SandboxMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(SandboxMode::Auto),
            "bubblewrap" | "bwrap" => Ok(SandboxMode::Bubblewrap),
            "landlock" | "fallback" => Ok(SandboxMode::Landlock),
            "off" => Ok(SandboxMode::Off),
            other => Err(format!(
                "unknown sandbox mode `{other}` (expected auto, bubblewrap, landlock or off)"
            )),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct SandboxConfig {
    pub mode: SandboxMode,
}

/// Which variables of the user's environment a child starts from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EnvInherit {
    /// The variables programs and toolchains need (the default): `PATH`,
    /// `HOME`, the user, locale and terminal, proxies and CA bundles, and the
    /// toolchains' own (`RUSTUP_*`, `CARGO_*`, `PYTHON*`, `VIRTUAL_ENV`,
    /// `PIP_*`, `UV_*`, `NODE_*`, `npm_config_*`, `GO*` settings, `JAVA_HOME`,
    /// `CC`, …), minus the secret ones. Anything else only through `keep`/`set`
    /// (and, for an agent, `runner.agent_env`).
    #[default]
    Toolchain,
    /// Every variable (minus the secret ones).
    All,
    /// Only `PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `LANG`, `LC_*`, `TERM`,
    /// `TMPDIR`, `TZ`.
    Core,
    /// Nothing (then `set` and `keep`).
    None,
}

/// The environment of children (codex's `shell_environment_policy`): the user's
/// variables minus secrets, keeping tool configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ShellEnvironmentPolicy {
    pub inherit: EnvInherit,
    /// Do not apply the built-in secret rules (names with key, token, secret,
    /// password, credential, auth, DSN, or a URL carrying credentials). The
    /// provider key variables are removed regardless.
    pub ignore_default_excludes: bool,
    /// More names to remove: globs (`*`, `?`), case-insensitive.
    pub exclude: Vec<String>,
    /// Names kept even when a secret rule matches (exact, case-sensitive).
    pub keep: Vec<String>,
    /// Variables set on top.
    pub set: BTreeMap<String, String>,
}
