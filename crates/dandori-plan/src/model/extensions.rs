//! Extension data carried in `planning.json` under the other seeds' own names.
//! Field names follow seeds 000 (goal understanding), 002 §4.3 (selected
//! environment) and 003 §3–6 (size, chunking, dependencies, execution plan);
//! where seed 003 indexes subtasks by number, dandori uses `step_id`s.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Extra;

/// Seed 000 phase 1: goal understanding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GoalUnderstanding {
    pub main_objective: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub context: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Per-step complexity: a 1–10 score (seed 003) or a level (seed 000).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Complexity {
    Score(u8),
    Level(ComplexityLevel),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ComplexityLevel {
    Low,
    Medium,
    High,
}

/// Seed 003 §3.2.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub enum SizeCategory {
    XS,
    S,
    M,
    L,
    XL,
}

/// Seed 003 §3.3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SizeEstimation {
    pub task_id: String,
    pub estimated_at: String,
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    /// 1–10.
    pub complexity_score: u8,
    pub dependency_depth: u64,
    /// 0–100.
    pub total_score: f64,
    pub size_category: SizeCategory,
    pub llm_reasoning: String,
    /// 0.0–1.0.
    pub confidence: f64,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 003 §4.3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ChunkingDecision {
    pub task_id: String,
    pub decided_at: String,
    pub should_chunk: bool,
    /// 0 = no chunking.
    pub chunk_count: u64,
    pub decision_criteria: Vec<DecisionCriterion>,
    pub llm_reasoning: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask_definitions: Option<Vec<SubtaskPlan>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// One evaluated criterion of seed 003 §4.1 / §4.2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DecisionCriterion {
    pub name: String,
    pub value: serde_json::Value,
    pub threshold: serde_json::Value,
    pub met: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubtaskPlan {
    pub subtask_index: u64,
    pub prompt: String,
    pub estimated_size: SizeCategory,
    #[serde(default)]
    pub dependencies: Vec<u64>,
}

/// Seed 003 §5.1.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum EdgeType {
    Data,
    Resource,
    Logical,
}

/// An edge `from` → `to`: `to` runs after `from`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
pub struct DependencyEdge {
    pub from: String,
    pub to: String,
    #[serde(rename = "type")]
    pub kind: EdgeType,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum GroupMode {
    Parallel,
    Sequential,
}

/// Seed 003 §5.2 `ExecutionGroup`, by step id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionGroup {
    pub group_index: u64,
    pub mode: GroupMode,
    pub step_ids: Vec<String>,
    #[serde(default)]
    pub depends_on_groups: Vec<u64>,
}

/// Seed 003 §5.2 `DependencyGraph`, by step id.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DependencyGraph {
    #[serde(default)]
    pub edges: Vec<DependencyEdge>,
    #[serde(default)]
    pub execution_groups: Vec<ExecutionGroup>,
    #[serde(default)]
    pub critical_path: Vec<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 003 §6.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    Single,
    Parallel,
    Sequential,
    Hybrid,
}

/// Seed 003 §6.1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExecutionPlan {
    pub execution_mode: ExecutionMode,
    #[serde(default)]
    pub execution_groups: Vec<ExecutionGroup>,
    #[serde(default)]
    pub estimated_total_duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_strategy: Option<WorkerStrategy>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkerStrategy {
    #[serde(rename = "type")]
    pub kind: WorkerStrategyType,
    pub max_parallel_workers: u64,
    pub worker_timeout_ms: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStrategyType {
    Single,
    RoundRobin,
    LeastLoaded,
}

/// Seed 002 §4.3.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SelectedEnvironment {
    /// python | miniforge | node | java | go | rust | …
    pub name: String,
    pub reason: String,
    #[serde(default)]
    pub detected_files: Vec<String>,
    #[serde(default)]
    pub setup_commands: Vec<String>,
    #[serde(default)]
    pub verification_commands: Vec<String>,
    /// Command → expected result (a pattern or a description).
    #[serde(default)]
    pub expected_results: BTreeMap<String, String>,
    #[serde(flatten)]
    pub extra: Extra,
}
