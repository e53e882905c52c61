//! `planning:` of seed 000 §9.1, §11, §12.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::environment_setup::EnvironmentSetupConfig;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PlanningConfig {
    pub enabled: bool,
    pub strategy: Strategy,
    pub max_subtasks: u32,
    pub decomposition_level: DecompositionLevel,
    /// Seed 000 §11.1.2.
    pub auto_adjust_level: bool,
    pub complexity_threshold: ComplexityThreshold,
    pub reflection: ReflectionConfig,
    pub revision: RevisionConfig,
    pub cache: CacheConfig,
    pub execution: ExecutionConfig,
    pub security: SecurityConfig,
    pub logging: LoggingConfig,
    pub permissions: PermissionsConfig,
    /// Seed 002 §8.1.
    pub environment_setup: EnvironmentSetupConfig,
    /// Seed 000 §9.3: task type (`github_issue`, `github_pr`, `gitlab`, `local`, …)
    /// → a partial `planning:` section merged over this one.
    pub task_specific: BTreeMap<String, serde_json::Value>,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        PlanningConfig {
            enabled: true,
            strategy: Strategy::ChainOfThought,
            max_subtasks: 10,
            decomposition_level: DecompositionLevel::Moderate,
            auto_adjust_level: true,
            complexity_threshold: ComplexityThreshold::default(),
            reflection: ReflectionConfig::default(),
            revision: RevisionConfig::default(),
            cache: CacheConfig::default(),
            execution: ExecutionConfig::default(),
            security: SecurityConfig::default(),
            logging: LoggingConfig::default(),
            permissions: PermissionsConfig::default(),
            environment_setup: EnvironmentSetupConfig::default(),
            task_specific: BTreeMap::new(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Strategy {
    ChainOfThought,
    Hierarchical,
    Simple,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecompositionLevel {
    Detailed,
    Moderate,
    Minimal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ComplexityThreshold {
    pub simple: u32,
    pub moderate: u32,
    pub complex: u32,
}

impl Default for ComplexityThreshold {
    fn default() -> Self {
        ComplexityThreshold {
            simple: 100,
            moderate: 500,
            complex: 9999,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ReflectionConfig {
    pub enabled: bool,
    pub trigger_on_error: bool,
    /// Reflect every N actions; 0 disables periodic reflection. Unset (the
    /// default): chosen per step by its complexity (seed 000 §11.1.3: simple →
    /// on errors only, moderate → every 5 actions, complex → every 3).
    pub trigger_interval: Option<u32>,
    pub depth: ReflectionDepth,
}

impl Default for ReflectionConfig {
    fn default() -> Self {
        ReflectionConfig {
            enabled: true,
            trigger_on_error: true,
            trigger_interval: None,
            depth: ReflectionDepth::Moderate,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionDepth {
    Deep,
    Moderate,
    Shallow,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RevisionConfig {
    pub max_revisions: u32,
    pub require_human_approval: bool,
    /// Seconds.
    pub approval_timeout: u64,
    pub max_history_in_memory: u32,
    pub max_history_on_disk: u32,
    pub auto_summarize: bool,
}

impl Default for RevisionConfig {
    fn default() -> Self {
        RevisionConfig {
            max_revisions: 3,
            require_human_approval: false,
            approval_timeout: 3600,
            max_history_in_memory: 5,
            max_history_on_disk: 50,
            auto_summarize: true,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CacheConfig {
    pub enabled: bool,
    /// Seconds.
    pub ttl: u64,
    /// Similarity (0–1) above which a cached plan for a similar request is reused.
    pub similarity_threshold: f64,
    /// Cache directory; default `.dandori/cache` under the repository.
    pub dir: Option<String>,
}

impl Default for CacheConfig {
    fn default() -> Self {
        CacheConfig {
            enabled: true,
            ttl: 86400,
            similarity_threshold: 0.9,
            dir: None,
        }
    }
}

/// Seed 000 §11.2.2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ExecutionConfig {
    /// Seconds per action.
    pub action_timeout: u64,
    /// Seconds for the whole task.
    pub total_timeout: u64,
    pub early_termination: EarlyTermination,
}

impl Default for ExecutionConfig {
    fn default() -> Self {
        ExecutionConfig {
            action_timeout: 60,
            total_timeout: 3600,
            early_termination: EarlyTermination::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EarlyTermination {
    pub enabled: bool,
    pub max_consecutive_failures: u32,
}

impl Default for EarlyTermination {
    fn default() -> Self {
        EarlyTermination {
            enabled: true,
            max_consecutive_failures: 3,
        }
    }
}

/// Seed 000 §12.1.1: tool globs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SecurityConfig {
    /// Empty means every tool not forbidden.
    pub allowed_tools: Vec<String>,
    pub forbidden_tools: Vec<String>,
    pub require_approval: Vec<String>,
}

/// Seed 000 §12.2.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LoggingConfig {
    pub level: LogLevel,
    pub mask_sensitive_data: bool,
    pub sensitive_patterns: Vec<String>,
}

impl Default for LoggingConfig {
    fn default() -> Self {
        LoggingConfig {
            level: LogLevel::Info,
            mask_sensitive_data: true,
            sensitive_patterns: ["password", "token", "secret", "api_key"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum LogLevel {
    Debug,
    Info,
    Warning,
    Error,
}

/// Seed 000 §12.3.1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PermissionsConfig {
    pub allowed_users: Vec<String>,
    pub auto_execution_allowed: Vec<String>,
    pub always_require_approval: Vec<String>,
}
