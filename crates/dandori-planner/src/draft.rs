//! [`Draft`]: what a planner (offline or LLM) decides; the common code in
//! [`crate::assemble`] turns it into `planning.json`, `stage.json` and the trace.

use dandori_plan::{AcceptanceCriterion, Boundaries, GoalUnderstanding};
use serde::{Deserialize, Serialize};

/// A planner's decisions, before ordering, sizing, chunking and validation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    /// The strategy that produced it: `simple` (offline), `chain_of_thought`,
    /// `hierarchical`.
    pub strategy: String,
    pub goal_understanding: GoalUnderstanding,
    /// `context.summary` (1–3 lines).
    pub summary: String,
    pub constraints: Vec<String>,
    /// Subtasks in the planner's order; the common code reorders them
    /// topologically (stable) before numbering steps S01….
    pub subtasks: Vec<DraftSubtask>,
    /// At least three after [`crate::acceptance::ensure_minimum`]; ids `AC-01`….
    pub acceptance_criteria: Vec<AcceptanceCriterion>,
    pub assumptions: Vec<String>,
    pub risks: Vec<String>,
    /// Seed 003 §3.4 inputs; the score and category are computed from them.
    pub size: SizeInputs,
    /// Seed 003 §4.1 / §4.2 facts about the request.
    pub chunking_signals: ChunkingSignals,
    /// Why the work was split this way (seed 000 `task_decomposition.reasoning`).
    pub reasoning: String,
    /// Set when the planner could not decompose the request (fail-closed, seed 003
    /// §9.2): the plan becomes one step and `PLANNING_SKIPPED` records this reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_decomposable: Option<String>,
    /// Seed 001 §10.3 `Mode` when the planner judged it (a model); else the
    /// request's size against `planning.complexity_threshold` decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<dandori_plan::PlanMode>,
    /// Seed 001 §10.3 `ComplexityScore` (0–1) when the planner judged it; else
    /// the size estimate's total score / 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity_score: Option<f64>,
}

/// One subtask: becomes one step (one commit).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftSubtask {
    /// A key unique within the draft (`task_1`); `depends_on` refers to these.
    pub key: String,
    /// One line.
    pub title: String,
    pub intent: String,
    /// Files or directories (relative, `/`-separated) the step may change.
    pub target_paths: Vec<String>,
    /// Files worth reading first.
    pub code_files_hint: Vec<String>,
    pub context_files: Vec<String>,
    pub produces: Vec<String>,
    pub consumes: Vec<String>,
    pub boundaries: Option<Boundaries>,
    /// Keys of subtasks that must finish first (logical dependencies).
    pub depends_on: Vec<String>,
    /// 1–10.
    pub complexity: u8,
    /// Expected changed lines (before capping at `limits.max_diff_lines`).
    pub estimated_lines: u64,
    pub links_to_ac: Vec<String>,
    pub success_criteria: Vec<String>,
    pub required_tools: Vec<String>,
    /// Seed 001 §10.3 `SuggestedTools` (the model's advice, kept as given).
    #[serde(default)]
    pub suggested_tools: Vec<String>,
    /// Seed 001 §10.3 `SuggestedPersona`.
    #[serde(default)]
    pub suggested_persona: Option<String>,
    /// Test-first (`tdd_phase: "red"` in planning.json): the step writes the
    /// tests of its criteria before the change; they must fail on the base.
    #[serde(default)]
    pub test_first: bool,
    /// Seed 000 §2.3 `action_plan.actions` the planner wrote for this subtask
    /// (`task_id` = its key), kept as given; empty when it wrote none (the
    /// common code then derives them from the subtask's tools).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub actions: Vec<serde_json::Value>,
}

/// Seed 003 §3.4: the raw estimates.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeInputs {
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    /// 1–10.
    pub complexity_score: u8,
    pub dependency_depth: u64,
    pub reasoning: String,
    /// 0.0–1.0.
    pub confidence: f64,
}

/// Facts for the chunking criteria of seed 003 §4.1 / §4.2 that only the request
/// can tell (the size criteria come from [`SizeInputs`], `config_disable_chunk`
/// from config).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChunkingSignals {
    pub explicit_enumeration: bool,
    pub multiple_components: bool,
    pub user_requested_chunk: bool,
    pub user_requested_single: bool,
    pub atomic_operation: bool,
    /// The distinct top-level components touched (for the record).
    pub components: Vec<String>,
}
