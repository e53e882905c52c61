//! The typed configuration of dandori.
//!
//! * `config.yaml`: seed 000 §9.1 (`planning:` with reflection, revision, cache,
//!   execution, security, logging, permissions), seed 002 §8.1
//!   (`planning.environment_setup`), plus dandori's own sections (`llm`, `runs`,
//!   `runner`, `mcp`).
//! * `task-planning.json`: seed 003 §8.1.
//!
//! Each section lives in its own module, named after the seed's vocabulary.

pub mod diagnostic;
pub mod edit;
pub mod env_vars;
pub mod environment_setup;
pub mod forges;
pub mod llm;
pub mod load;
pub mod mcp;
pub mod planning;
pub mod runner;
pub mod sandbox;
pub mod task_planning;
pub mod trust;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use environment_setup::*;
pub use forges::*;
pub use llm::*;
pub use load::{ConfigWarning, LoadOptions, Loaded, check_overrides, load};
pub use mcp::*;
pub use planning::*;
pub use runner::*;
pub use sandbox::*;
pub use task_planning::*;

/// The one error type of configuration loading.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file named explicitly could not be read.
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    /// A `-c key=value` argument that cannot be applied.
    #[error("-c {arg}: {reason}")]
    InvalidOverride { arg: String, reason: String },
    /// A `-c` key that names no configuration value.
    #[error("-c {key}: unknown configuration key{}", did_you_mean(suggestion))]
    UnknownKey {
        key: String,
        /// The nearest valid key (edit distance).
        suggestion: Option<String>,
    },
    /// A config file that cannot be used: not YAML, an unknown key, a wrong value.
    /// Nothing runs on a configuration that is not the one written.
    #[error("{}{}: {}", path.display(), line.map(|l| format!(":{l}")).unwrap_or_default(), invalid)]
    File {
        path: std::path::PathBuf,
        /// 1-based, when the key could be found in the text.
        line: Option<usize>,
        invalid: diagnostic::Invalid,
    },
    /// The user-level config (`trusted_projects`) cannot be read for an update.
    #[error("{}: {reason}", path.display())]
    UserConfig {
        path: std::path::PathBuf,
        reason: String,
    },
    /// The defaults could not be represented (a bug).
    #[error("internal configuration error: {0}")]
    Internal(String),
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    suggestion
        .as_ref()
        .map(|s| format!("; did you mean `{s}`?"))
        .unwrap_or_default()
}

/// JSON Schemas of the configuration files. The committed copies are
/// `schemas/config.schema.json` and `schemas/task-planning.schema.json`.
pub mod schema {
    /// The JSON Schema of `config.yaml`.
    pub fn config() -> serde_json::Value {
        schemars::schema_for!(crate::Config).to_value()
    }
    /// The JSON Schema of `task-planning.json`.
    pub fn task_planning() -> serde_json::Value {
        schemars::schema_for!(crate::TaskPlanningConfig).to_value()
    }
}

/// The whole `config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub planning: PlanningConfig,
    pub llm: LlmConfig,
    pub runs: RunsConfig,
    pub runner: RunnerConfig,
    pub mcp: McpConfig,
    pub sandbox: SandboxConfig,
    pub shell_environment_policy: ShellEnvironmentPolicy,
    /// GitHub / GitLab issues as the task source.
    pub forges: ForgesConfig,
    /// OpenTelemetry export (seed 000 §16.4.2); the `OTEL_*` variables win.
    pub telemetry: TelemetryConfig,
}

/// `telemetry:` — where spans go. An untrusted repository's file cannot set the
/// endpoint (it names where data goes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetryConfig {
    /// OTLP/HTTP base URL (`/v1/traces` is appended), as `OTEL_EXPORTER_OTLP_ENDPOINT`.
    pub otlp_endpoint: Option<String>,
    /// `http/json` (default) or `http/protobuf`, as `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub otlp_protocol: Option<String>,
    /// `service.name` of the spans (default `dandori`), as `OTEL_SERVICE_NAME`.
    pub service_name: Option<String>,
}

/// Where run directories go.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RunsConfig {
    /// Root of `runs/<request-id>/<run-id>/`, relative to the repository unless
    /// absolute. Default `.dandori/runs`.
    pub root: String,
}

impl Default for RunsConfig {
    fn default() -> Self {
        RunsConfig {
            root: ".dandori/runs".to_string(),
        }
    }
}
