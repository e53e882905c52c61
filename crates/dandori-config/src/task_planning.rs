//! Seed 003 §8.1 `task-planning.json`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TaskPlanningConfig {
    pub enabled: bool,
    pub size_estimation: SizeEstimationConfig,
    pub chunking: ChunkingConfig,
    pub execution: TaskExecutionConfig,
}

impl Default for TaskPlanningConfig {
    fn default() -> Self {
        TaskPlanningConfig {
            enabled: true,
            size_estimation: SizeEstimationConfig::default(),
            chunking: ChunkingConfig::default(),
            execution: TaskExecutionConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct SizeEstimationConfig {
    pub llm_model: String,
    pub timeout_ms: u64,
    /// XS | S | M | L | XL
    pub fallback_category: String,
}

impl Default for SizeEstimationConfig {
    fn default() -> Self {
        SizeEstimationConfig {
            llm_model: "cheap".to_string(),
            timeout_ms: 10_000,
            fallback_category: "M".to_string(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ChunkingConfig {
    /// XS | S | M | L | XL
    pub auto_chunk_threshold: String,
    pub max_subtasks: u32,
    pub min_subtasks: u32,
}

impl Default for ChunkingConfig {
    fn default() -> Self {
        ChunkingConfig {
            auto_chunk_threshold: "M".to_string(),
            max_subtasks: 10,
            min_subtasks: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TaskExecutionConfig {
    pub max_parallel_workers: u32,
    pub worker_timeout_ms: u64,
    /// single | round_robin | least_loaded
    pub default_strategy: String,
}

impl Default for TaskExecutionConfig {
    fn default() -> Self {
        TaskExecutionConfig {
            max_parallel_workers: 3,
            worker_timeout_ms: 300_000,
            default_strategy: "round_robin".to_string(),
        }
    }
}
