//! The ecosystem plugin protocol, version 1 (seed 002 §13.2): what dandori
//! writes to a plugin's stdin and reads from its stdout for each of
//! `detect_environment`, `generate_setup_code` and `verify_environment`. The
//! answers are read strictly: an unknown field, a wrong type or a missing
//! required field is an error naming the plugin, the function and the JSON path
//! (reason code [`ENV_PLUGIN_INVALID`]). docs/environment.md documents it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The protocol identifier every request carries.
pub const PROTOCOL: &str = "dandori.environment_plugin/1";
/// A plugin answered something the protocol does not allow.
pub const ENV_PLUGIN_INVALID: &str = "ENV_PLUGIN_INVALID";
/// A plugin exited non-zero, timed out, or could not be started.
pub const ENV_PLUGIN_FAILED: &str = "ENV_PLUGIN_FAILED";
/// A repository's own plugin was not run: the repository is not trusted.
pub const ENV_PLUGIN_UNTRUSTED: &str = "ENV_PLUGIN_UNTRUSTED";

/// The three functions of seed 002 §13.2, with the command-line word each is
/// called with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Function {
    Detect,
    Generate,
    Verify,
}

impl Function {
    /// The seed's function name (`function` of the request).
    pub fn name(self) -> &'static str {
        match self {
            Function::Detect => "detect_environment",
            Function::Generate => "generate_setup_code",
            Function::Verify => "verify_environment",
        }
    }

    /// The plugin's first argument.
    pub fn word(self) -> &'static str {
        match self {
            Function::Detect => "detect",
            Function::Generate => "generate",
            Function::Verify => "verify",
        }
    }
}

/// One declared dependency as a plugin reports it: a name (`"rake"`) or an
/// object with the analyser's fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PluginDependency {
    Name(String),
    Full {
        name: String,
        #[serde(default)]
        version_spec: Option<String>,
        /// `prod` (default) | `dev` | `build` | `peer`.
        #[serde(default)]
        kind: Option<String>,
    },
}

/// The answer to `detect_environment`: seed 002 §3.5.1's return format
/// (`detected_files` with their contents, `environment_type`, `dependencies`,
/// `setup_commands`), with `detected` saying whether the plugin applies and a
/// few optional fields the built-in analyser also reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Detection {
    pub detected: bool,
    #[serde(default)]
    pub environment_type: Option<String>,
    /// File path (relative to the repository) → its contents.
    #[serde(default)]
    pub detected_files: BTreeMap<String, String>,
    #[serde(default)]
    pub dependencies: Vec<PluginDependency>,
    #[serde(default)]
    pub setup_commands: Vec<String>,
    /// The environment's directory, relative to the repository (`.`).
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub package_manager: Option<String>,
    #[serde(default)]
    pub runtime_version: Option<String>,
    #[serde(default)]
    pub test_command: Option<String>,
    /// Hosts setup downloads from (allowed when
    /// `network.allowed_domains` filters setup traffic).
    #[serde(default)]
    pub registries: Vec<String>,
}

/// The answer to `generate_setup_code`: the fields of seed 002 §4.3's
/// `selected_environment`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GeneratedSetup {
    pub setup_commands: Vec<String>,
    #[serde(default)]
    pub verification_commands: Vec<String>,
    /// Command → a regular expression its output must match.
    #[serde(default)]
    pub expected_results: BTreeMap<String, String>,
    /// Verification commands whose failure only makes the result partial.
    #[serde(default)]
    pub optional_verification_commands: Vec<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// One result of `verify_environment`, in seed 002 §5.4.3's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginVerification {
    pub command: String,
    #[serde(default)]
    pub expected: String,
    #[serde(default)]
    pub actual: String,
    /// `success` | `failed`.
    pub status: String,
    #[serde(default = "yes")]
    pub required: bool,
    #[serde(default)]
    pub reason: Option<String>,
}

fn yes() -> bool {
    true
}

/// The answer to `verify_environment`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Verified {
    pub verification_results: Vec<PluginVerification>,
}

/// Reads a plugin's answer as `T`; the error names the JSON path and why.
pub fn parse<T: serde::de::DeserializeOwned>(stdout: &str) -> Result<T, String> {
    let text = stdout.trim();
    if text.is_empty() {
        return Err("empty answer on stdout (one JSON object expected)".into());
    }
    let value: Value =
        serde_json::from_str(text).map_err(|e| format!("stdout is not one JSON object: {e}"))?;
    if !value.is_object() {
        return Err("the answer is not a JSON object".into());
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            "$".to_string()
        } else {
            format!("$.{path}")
        };
        format!("at `{at}`: {}", e.inner())
    })
}
