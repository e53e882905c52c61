//! The completion summary of a run: the seed 000 completion JSON (`"phase":
//! "completion"` with `goal_achieved`, `tasks_completed`, `tasks_failed`,
//! `key_outcomes`, `lessons_learned`, and the `requires_human_intervention` form
//! of §10.4 with `revision_attempts`, `reason`, `current_state`,
//! `recommendations`), every step's status, the coverage of the acceptance
//! criteria, token usage and the process exit code.
//!
//! These are data types only; the runner decides the values.

use std::path::PathBuf;

use dandori_plan::StepStatus;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::reason;

/// Exit codes of `dandori run` / `dandori resume` (documented in docs/runner.md).
pub mod exit {
    pub const COMPLETED: u8 = 0;
    pub const FAILED: u8 = 1;
    /// Usage, input (planning.json, stage.json) or IO error.
    pub const ERROR: u8 = 2;
    pub const NEEDS_INPUT: u8 = 3;
    pub const GATE_REFUSED: u8 = 4;
    /// `limits.max_steps_per_run` reached with steps left; `dandori resume` goes on.
    pub const PAUSED: u8 = 5;
    pub const REQUIRES_HUMAN_INTERVENTION: u8 = 6;
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionStatus {
    Completed,
    Failed,
    NeedsInput,
    Paused,
    RequiresHumanIntervention,
}

impl CompletionStatus {
    /// The JSON spelling (`completed`, `requires_human_intervention`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            CompletionStatus::Completed => "completed",
            CompletionStatus::Failed => "failed",
            CompletionStatus::NeedsInput => "needs_input",
            CompletionStatus::Paused => "paused",
            CompletionStatus::RequiresHumanIntervention => "requires_human_intervention",
        }
    }

    pub fn exit_code(self) -> u8 {
        match self {
            CompletionStatus::Completed => exit::COMPLETED,
            CompletionStatus::Failed => exit::FAILED,
            CompletionStatus::NeedsInput => exit::NEEDS_INPUT,
            CompletionStatus::Paused => exit::PAUSED,
            CompletionStatus::RequiresHumanIntervention => exit::REQUIRES_HUMAN_INTERVENTION,
        }
    }
}

/// Tokens a model used (prompt and completion), per step or for the whole run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl TokenUsage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
    pub fn add(&mut self, other: TokenUsage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
    }
}

/// Coverage of the acceptance criteria after the steps ran (seed 001 §10.5).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CoverageResult {
    pub overall_coverage: f64,
    pub critical_gaps: Vec<String>,
    pub optional_gaps: Vec<String>,
    pub should_continue: bool,
    /// "continue" | "complete"
    pub recommended_action: String,
    /// "high" | "low"
    pub confidence_level: String,
    /// Which guardrails changed the assessment, in the order applied.
    pub rules_applied: Vec<String>,
}

/// Wall-clock span of a step, for report.md's Gantt chart.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepTiming {
    pub started_at: String,
    pub finished_at: Option<String>,
    /// Milliseconds since the run was created.
    pub started_ms: u64,
    pub finished_ms: Option<u64>,
}

/// A follow-up step created for an acceptance criterion no step covered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FollowUp {
    pub step_id: String,
    pub ac: String,
    pub status: StepStatus,
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub reason_code: Option<String>,
    /// Seed 001 §10.6 `Priority`: `high` (a functional criterion, or one no
    /// step linked), `medium` (regression), `low` (non-functional). Higher
    /// priorities run first.
    #[serde(default = "default_priority")]
    pub priority: String,
    /// Seed 001 §10.6 `SuggestedTools` for the follow-up step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested_tools: Vec<String>,
}

fn default_priority() -> String {
    "high".to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub goal_achieved: bool,
    pub tasks_completed: usize,
    pub tasks_failed: usize,
    pub key_outcomes: Vec<String>,
    pub lessons_learned: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revision_attempts: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_state: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub recommendations: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepSummary {
    pub step_id: String,
    pub title: String,
    pub status: StepStatus,
    pub attempts: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub links_to_ac: Vec<String>,
}

/// The completion record: seed 000's `{"phase": "completion", …}` plus the run's
/// steps. `dandori run --json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Always `"completion"` (read back from a trace as such).
    #[serde(skip_deserializing, default = "completion_phase")]
    pub phase: &'static str,
    pub status: CompletionStatus,
    pub summary: Summary,
    pub done: bool,
    pub comment: String,
    pub request_id: String,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub executor: String,
    pub steps: Vec<StepSummary>,
    pub follow_ups: Vec<FollowUp>,
    pub coverage: CoverageResult,
    pub tokens: TokenUsage,
    pub environment: Value,
    /// Issue 20: per acceptance criterion its check, base and after results, the
    /// commit that made it green and the log (`acceptance_criteria`); the tests
    /// already failing on the base commit (`preexisting_failures`).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub evidence: Value,
    pub exit_code: u8,
}

/// `phase` of a completion read back (from `EXECUTION_END` in trace.jsonl).
fn completion_phase() -> &'static str {
    "completion"
}

/// The next action a human should take for a step stopped with `code`.
pub fn next_action(step_id: &str, code: &str) -> String {
    match code {
        reason::STEP_TOO_LARGE => format!(
            "{step_id}: split the step into smaller steps (scope.max_diff_lines) and plan again"
        ),
        reason::UNIT_TEST_FAILED | reason::UNIT_TEST_TIMEOUT => format!(
            "{step_id}: read logs/step.{step_id}.unit.log, fix the failing tests in the kept worktree or by hand, then `dandori resume`"
        ),
        reason::E2E_REQUIRED => format!(
            "{step_id}: add e2e commands for its regression acceptance criteria (gates.require_e2e_for_regression_ac), then `dandori resume`"
        ),
        reason::DEPENDENCY_FAILED => {
            format!("{step_id}: runs once the step it depends on is done (`dandori resume`)")
        }
        reason::AGENT_FAILED | reason::AGENT_TIMEOUT => format!(
            "{step_id}: read logs/step.{step_id}.agent.log; check the agent command and its login"
        ),
        reason::STEP_NO_CHANGE => format!(
            "{step_id}: the agent changed nothing under scope.target_paths; read logs/step.{step_id}.agent.log, or mark the step check-only (role reviewer/qa, expected_diff.lines_max 0), then `dandori resume`"
        ),
        reason::MERGE_CONFLICT => format!(
            "{step_id}: its change conflicts with an earlier step; add a dependency between them and plan again"
        ),
        reason::SECRET_DETECTED => format!(
            "{step_id}: its change held a secret (file and line in errors.json / trace.jsonl; nothing was committed); have the code read it from the environment, rotate it if it was real, then `dandori resume`"
        ),
        reason::LOOP_DETECTED => {
            format!(
                "{step_id}: the step repeated the same action; rephrase the step or do it by hand"
            )
        }
        reason::MODEL_NOT_CONFIGURED => format!(
            "{step_id}: waits for a model or an agent: configure llm.default_provider (docs/llm.md) and `dandori resume`, or `dandori resume --agent-cmd 'claude -p {{prompt}}'`"
        ),
        reason::APPROVAL_REQUIRED => format!(
            "{step_id}: a tool needs approval: run `dandori resume` on a terminal to answer, or `dandori resume --approve`"
        ),
        other => format!(
            "{step_id}: stopped with {other}; read this entry's message and the step's events in trace.jsonl"
        ),
    }
}
