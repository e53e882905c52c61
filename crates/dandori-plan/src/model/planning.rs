//! `planning.json` v1, exactly as seed 004 §3 defines it. Required keys are plain
//! fields; optional keys are `Option` and are omitted when absent.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Extra;
use super::extensions::{
    ChunkingDecision, Complexity, DependencyGraph, ExecutionPlan, GoalUnderstanding,
    SelectedEnvironment, SizeEstimation,
};

/// The schema version this crate writes.
pub const PLANNING_VERSION: &str = "1.0";

/// The root of `planning.json` (seed 004 §3.1).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Planning {
    /// Always "1.0".
    pub version: String,
    /// The id of `requests/<id>.md`.
    pub request_id: String,
    /// The run identifier under `runs/<request-id>/`.
    pub run_id: String,
    /// When planning produced this file (ISO 8601).
    pub created_at: String,
    /// The git base branch.
    pub base_branch: String,
    /// The work branch steps are committed on.
    pub work_branch: String,
    pub limits: Limits,
    pub context: Context,
    pub steps: Vec<Step>,
    pub gates: Gates,
    pub outputs: RunOutputs,
    /// Assumptions the planner made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assumptions: Option<Vec<String>>,
    /// Known risks (short sentences).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risks: Option<Vec<String>>,

    // ---- extensions (seeds 000, 002, 003) ----
    /// Seed 000 phase 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_understanding: Option<GoalUnderstanding>,
    /// Seed 003 §3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_estimation: Option<SizeEstimation>,
    /// Seed 003 §4.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunking_decision: Option<ChunkingDecision>,
    /// Seed 003 §5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependency_graph: Option<DependencyGraph>,
    /// Seed 003 §6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_plan: Option<ExecutionPlan>,
    /// Seed 002 §4.3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_environment: Option<SelectedEnvironment>,
    /// Seed 001 §10.3 `DecompositionResult.Mode`: how much planning the request
    /// got (`simple`, `standard`, `complex`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<PlanMode>,
    /// Seed 001 §10.3 `ComplexityScore`, 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity_score: Option<f64>,
    /// Seed 001 §10.4: `parallel` (no step depends on another), `sequential`
    /// (one chain) or `dag` (partial order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_strategy: Option<ExecutionStrategy>,

    /// Unknown keys, preserved.
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 004 §3.2.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Limits {
    /// Maximum diff lines per step.
    pub max_diff_lines: u64,
    /// Recommended about 10 (used for warnings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files_changed: Option<u64>,
    /// Timeout for role execution and tests, in seconds.
    pub timeout_sec: u64,
    /// Steps executed per run.
    pub max_steps_per_run: u64,
    /// Maximum unit-failure → fix cycles.
    pub max_autofix_cycles: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 004 §3.3.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Context {
    /// Summary of the request (1–3 lines).
    pub summary: String,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<AcceptanceCriterion>,
    /// Unit / e2e instructions.
    pub test_instructions: TestInstructions,
    /// Framework, start-up procedure and similar facts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_facts: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `context.test_instructions`: free-form, usually `{"unit": "...", "e2e": "..."}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestInstructions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// An acceptance criterion (Given/When/Then).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AcceptanceCriterion {
    /// `AC-01` form recommended.
    pub id: String,
    pub given: String,
    pub when: String,
    pub then: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<AcKind>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AcKind {
    Functional,
    Regression,
    Nonfunctional,
}

/// Seed 004 §3.4: one step is one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Step {
    /// `S01`, `S02`, …
    pub step_id: String,
    /// One line.
    pub title: String,
    pub role: Role,
    /// What this step achieves (short).
    pub intent: String,
    pub scope: Scope,
    pub inputs: Inputs,
    pub commands: Commands,
    pub success_criteria: Vec<String>,
    /// AC ids this step satisfies.
    pub links_to_ac: Vec<String>,
    pub expected_diff: ExpectedDiff,
    pub outputs: StepOutputs,
    /// Alternative strategy when the role fails.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_conditions: Option<Vec<String>>,

    // ---- extensions (seeds 001 §10.3, 003) ----
    /// Explicit (logical) dependencies on other steps, by step_id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depends_on: Option<Vec<String>>,
    /// Artefacts this step produces (data-dependency sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub produces: Option<Vec<String>>,
    /// Artefacts this step consumes (data-dependency targets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumes: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundaries: Option<Boundaries>,
    /// 1–10.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_complexity: Option<Complexity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_tools: Option<Vec<String>>,
    /// Seed 001 §10.3 `SuggestedTools`: tools the planner suggests for the step
    /// (advice to the executor, not a permission).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_tools: Option<Vec<String>>,
    /// Seed 001 §10.3 `SuggestedPersona`: who should do the step ("a backend
    /// engineer familiar with Express"); given to the executor's prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_persona: Option<String>,

    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 001 §10.3 `Mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PlanMode {
    Simple,
    Standard,
    Complex,
}

/// Seed 001 §10.4 execution strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionStrategy {
    Parallel,
    Sequential,
    Dag,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Implementer,
    Reviewer,
    Qa,
    Planner,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Scope {
    /// Candidate directories / files to change.
    pub target_paths: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forbidden_paths: Option<Vec<String>>,
    /// Step-specific limit (normally inherited from `limits`).
    pub max_diff_lines: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files_changed: Option<u64>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Inputs {
    pub request_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_files: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code_files_hint: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Commands {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExpectedDiff {
    /// At most `limits.max_diff_lines`.
    pub lines_max: u64,
    /// Recommended 10 or fewer.
    pub files_max: u64,
    pub risk_level: RiskLevel,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RiskLevel {
    Low,
    Mid,
    High,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StepOutputs {
    /// `runs/.../patches/S01.patch`
    pub patch_path: String,
    /// `runs/.../logs/step.S01`
    pub log_prefix: String,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 001 §10.3: what a step may and may not touch.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Boundaries {
    #[serde(default)]
    pub in_scope: Vec<String>,
    #[serde(default)]
    pub out_of_scope: Vec<String>,
}

/// Seed 004 §3.5.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Gates {
    pub require_clean_worktree: bool,
    pub require_work_branch: bool,
    pub require_unit_pass: bool,
    pub require_e2e_for_regression_ac: bool,
    /// Must be true in v1.
    pub forbid_gh: bool,
    pub max_step_too_large_retries: u64,
    #[serde(flatten)]
    pub extra: Extra,
}

/// Seed 004 §3.6 (paths relative to the repository).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOutputs {
    pub planning_json: String,
    pub stage_json: String,
    pub report_md: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub errors_json: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}
