//! `planning.environment_setup:` of seed 002 §8.1.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvironmentSetupConfig {
    pub enabled: bool,
    pub execution: EnvExecutionConfig,
    pub verification: EnvVerificationConfig,
    pub regeneration: RegenerationConfig,
    pub analysis: AnalysisConfig,
    /// Seed 002 §11: the command policy.
    pub security: CommandPolicyConfig,
    /// Seed 002 §13.2: ecosystem plugins (docs/environment.md, "Plugins").
    pub plugins: PluginsConfig,
}

/// `planning.environment_setup.plugins:` — where ecosystem plugins are found
/// besides the user's plugin directory (`$DANDORI_CONFIG_HOME/plugins`, else
/// `$XDG_CONFIG_HOME/dandori/plugins`, else `~/.config/dandori/plugins`) and a
/// trusted repository's `.dandori/plugins`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// `false`: no plugin runs, the built-in ecosystems alone.
    pub enabled: bool,
    /// Plugin executables, or directories searched for them (each
    /// `dandori-env-*` executable directly inside, or one directory down).
    pub paths: Vec<String>,
    /// Seconds one plugin call may take.
    pub timeout_seconds: u64,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            enabled: true,
            paths: Vec::new(),
            timeout_seconds: 60,
        }
    }
}

impl Default for EnvironmentSetupConfig {
    fn default() -> Self {
        EnvironmentSetupConfig {
            enabled: true,
            execution: EnvExecutionConfig::default(),
            verification: EnvVerificationConfig::default(),
            regeneration: RegenerationConfig::default(),
            analysis: AnalysisConfig::default(),
            security: CommandPolicyConfig::default(),
            plugins: PluginsConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvExecutionConfig {
    pub command_timeout_seconds: u64,
    pub max_retries: u32,
}

impl Default for EnvExecutionConfig {
    fn default() -> Self {
        EnvExecutionConfig {
            command_timeout_seconds: 1800,
            max_retries: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvVerificationConfig {
    pub enabled: bool,
    /// `fail | warn | ignore`; unset (`null`, the default) is `warn` for the
    /// verification status (seed 002 §8.1) but stops `dandori run` on a failed
    /// environment: only an explicit `warn` or `ignore` lets a run go on.
    pub on_failure: Option<OnFailure>,
}

impl EnvVerificationConfig {
    /// The behaviour of a failed verification: the configured one, else `warn`.
    pub fn on_failure(&self) -> OnFailure {
        self.on_failure.unwrap_or(OnFailure::Warn)
    }
}

impl Default for EnvVerificationConfig {
    fn default() -> Self {
        EnvVerificationConfig {
            enabled: true,
            on_failure: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    Fail,
    Warn,
    Ignore,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RegenerationConfig {
    pub enabled: bool,
    pub max_retries: u32,
}

impl Default for RegenerationConfig {
    fn default() -> Self {
        RegenerationConfig {
            enabled: true,
            max_retries: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AnalysisConfig {
    /// Ecosystem → file names searched for.
    pub file_patterns: BTreeMap<String, Vec<String>>,
    /// Bytes.
    pub max_file_size: u64,
    pub max_search_depth: u32,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        let pats = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut file_patterns = BTreeMap::new();
        file_patterns.insert(
            "python".to_string(),
            pats(&[
                "requirements.txt",
                "pyproject.toml",
                "setup.py",
                "Pipfile",
                "poetry.lock",
                "environment.yml",
                "condaenv.yaml",
            ]),
        );
        file_patterns.insert(
            "node".to_string(),
            pats(&[
                "package.json",
                "package-lock.json",
                "yarn.lock",
                "pnpm-lock.yaml",
            ]),
        );
        file_patterns.insert(
            "java".to_string(),
            pats(&["pom.xml", "build.gradle", "build.gradle.kts"]),
        );
        file_patterns.insert("go".to_string(), pats(&["go.mod", "go.sum"]));
        file_patterns.insert(
            "common".to_string(),
            pats(&["Dockerfile", "docker-compose.yml", "Makefile"]),
        );
        AnalysisConfig {
            file_patterns,
            max_file_size: 102_400,
            max_search_depth: 5,
        }
    }
}

/// Seed 002 §11.1: extra allowed executables and forbidden patterns, on top of the
/// built-in policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CommandPolicyConfig {
    pub allowed_commands: Vec<String>,
    pub forbidden_patterns: Vec<String>,
}
