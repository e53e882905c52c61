//! What travels through Restate's journal between the coordinator and a worker.
//! Only the plan, commit hashes and the step's measurements: never a secret (a
//! worker takes its model keys and agent credentials from its own environment) and
//! never file contents (the code moves through the git remote).

use std::time::Duration;

use dandori_runner::executor::TokenUsage;
use dandori_runner::reason;
use dandori_runner::step::{Check, StepReport, StepResult};
use serde::{Deserialize, Serialize};

/// The Restate service a worker serves (its one handler is `execute`).
pub const SERVICE: &str = "DandoriStep";

/// The Restate workflow of a run (keyed by the run id), its `run` handler and its
/// shared handlers.
pub const WORKFLOW: &str = "DandoriRun";

/// What the run's workflow needs to drive the steps: the plan, what is already
/// done, and the limits of the coordinator's scheduler.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    pub run_id: String,
    /// The git remote holding the run's refs.
    pub remote: String,
    /// The run's `planning.json`, verbatim.
    pub planning: String,
    /// The work branch start (`refs/dandori/runs/<run>/start`).
    pub work_start: String,
    /// Every step of the plan, in plan order.
    pub steps: Vec<SpecStep>,
    /// How many steps run at once (`runner.max_parallel_workers`, lowered by the
    /// plan's `worker_strategy`).
    pub max_parallel: usize,
    /// How many steps this workflow may start (`limits.max_steps_per_run`).
    pub max_steps: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpecStep {
    pub step_id: String,
    /// Indices of the steps it builds on.
    pub preds: Vec<usize>,
    /// `pending`, or what it already is (`done` with its commit, `failed`, …):
    /// only `pending` steps are started.
    pub status: String,
    #[serde(default)]
    pub commit: Option<String>,
    /// `stage.json` `attempts` so far.
    #[serde(default)]
    pub attempts: u32,
}

/// The workflow's view of the stage machine (seed 004 §6), kept in its state
/// (`stage`) after every transition and returned by `run` and `status`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkflowState {
    pub run_id: String,
    /// The `run` handler returned: no step starts any more.
    pub finished: bool,
    /// Why starting steps stopped early (the coordinator's guardrail).
    #[serde(default)]
    pub stopped: Option<String>,
    pub steps: Vec<WorkflowStep>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkflowStep {
    pub step_id: String,
    /// pending / running / done / failed / needs_input / skipped.
    pub status: String,
    pub attempt: u32,
    #[serde(default)]
    pub commit: Option<String>,
    #[serde(default)]
    pub reason_code: Option<String>,
    /// The worker that ran it (`host:pid`).
    #[serde(default)]
    pub worker: Option<String>,
}

/// The Restate server cannot be reached, refuses a request, or lacks the worker
/// deployment.
pub const RESTATE_UNAVAILABLE: &str = "RESTATE_UNAVAILABLE";

/// A worker's identity key (`--identity-key`, `DANDORI_RESTATE_IDENTITY_KEYS`) is
/// not a Restate public key.
pub const RESTATE_IDENTITY_INVALID: &str = "RESTATE_IDENTITY_INVALID";

/// One step for a worker: enough to fetch its base from the remote and run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepRequest {
    pub run_id: String,
    pub step_id: String,
    /// The step's index in the plan.
    pub index: usize,
    /// `stage.json` `attempts` of this start.
    pub attempt: u32,
    /// The git remote holding the run's refs (URL or path, as the worker sees it).
    pub remote: String,
    /// The run's `planning.json`, verbatim.
    pub planning: String,
    /// The commits the step builds on, each named by the step that made it.
    pub commits: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeStatus {
    Committed,
    Failed,
    NeedsInput,
}

/// A step's result as the worker measured it: the transport form of
/// `dandori_runner::step::StepReport`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutcome {
    pub status: OutcomeStatus,
    #[serde(default)]
    pub reason_code: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// The step's commits, oldest first; the last is the proof, pushed to the
    /// step's ref.
    #[serde(default)]
    pub commits: Vec<String>,
    pub tokens: TokenUsage,
    pub diff_lines: u64,
    pub files_changed: Vec<String>,
    pub autofix_cycles: u64,
    pub splits: u32,
    pub unit_passed: Option<bool>,
    pub duration_ms: u64,
    pub notes: Vec<String>,
    pub base: Option<String>,
    /// Whether the step's commits form a chain on `base` (see `StepReport::on_base`).
    #[serde(default)]
    pub on_base: bool,
    /// `Dandori-Check` trailer values.
    pub checks: Vec<String>,
    /// The test commands' last runs with their per-test results (issue 20).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_runs: Vec<dandori_runner::evidence::CommandRun>,
    /// Done without a change, its checks already green (`ALREADY_SATISFIED`).
    #[serde(default)]
    pub already_satisfied: bool,
    /// The agent CLI's usage over the step's invocations (budgeted per step).
    #[serde(default)]
    pub agent: dandori_runner::step::AgentUsage,
    /// Files changed outside the step's targets, with their lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_scope: Vec<(String, u64)>,
    /// Who ran it (`host:pid` of the worker).
    pub worker: String,
    /// The step's commit was already on the remote (an earlier execution pushed it
    /// and died before Restate recorded the result): it was not run again.
    #[serde(default)]
    pub recovered: bool,
    /// The step's logs and patch as the worker wrote them (masked by the step
    /// pipeline), for the coordinator's run directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<StepFile>,
}

/// One file of a step's run-directory output: `logs/step.<step>.<what>.log` or
/// `patches/<step>.patch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepFile {
    pub path: String,
    pub text: String,
}

/// The most of one step file that travels back (the head is kept).
pub const STEP_FILE_LIMIT: usize = 256 * 1024;

impl StepFile {
    /// Whether `path` names a file of step `step_id`'s output (and nothing else:
    /// no directory change, no other step's file).
    pub fn belongs_to(path: &str, step_id: &str) -> bool {
        let name_ok = |n: &str| {
            !n.is_empty()
                && !n.contains("..")
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        };
        match path.split_once('/') {
            Some(("logs", name)) => name_ok(name) && name.starts_with(&format!("step.{step_id}.")),
            Some(("patches", name)) => name == format!("{step_id}.patch"),
            _ => false,
        }
    }
}

impl StepOutcome {
    /// An outcome with nothing measured.
    pub fn bare(status: OutcomeStatus, worker: &str) -> StepOutcome {
        StepOutcome {
            status,
            reason_code: None,
            message: None,
            commits: Vec::new(),
            tokens: TokenUsage::default(),
            diff_lines: 0,
            files_changed: Vec::new(),
            autofix_cycles: 0,
            splits: 0,
            unit_passed: None,
            duration_ms: 0,
            notes: Vec::new(),
            base: None,
            on_base: false,
            checks: Vec::new(),
            test_runs: Vec::new(),
            already_satisfied: false,
            out_of_scope: Vec::new(),
            agent: Default::default(),
            worker: worker.to_string(),
            recovered: false,
            files: Vec::new(),
        }
    }

    pub fn from_report(r: &StepReport, worker: &str) -> StepOutcome {
        let (status, reason_code, message, commits) = match &r.result {
            StepResult::Committed { commits } => {
                (OutcomeStatus::Committed, None, None, commits.clone())
            }
            StepResult::Failed {
                reason_code,
                message,
            } => (
                OutcomeStatus::Failed,
                Some(reason_code.to_string()),
                Some(message.clone()),
                Vec::new(),
            ),
            StepResult::NeedsInput {
                reason_code,
                message,
            } => (
                OutcomeStatus::NeedsInput,
                Some(reason_code.to_string()),
                Some(message.clone()),
                Vec::new(),
            ),
        };
        StepOutcome {
            status,
            reason_code,
            message,
            commits,
            tokens: r.tokens,
            diff_lines: r.diff_lines,
            files_changed: r.files_changed.clone(),
            autofix_cycles: r.autofix_cycles,
            splits: r.splits,
            unit_passed: r.unit_passed,
            duration_ms: r.duration.as_millis() as u64,
            notes: r.notes.clone(),
            base: r.base.clone(),
            on_base: r.on_base,
            checks: r.checks.iter().map(Check::trailer).collect(),
            test_runs: r.test_runs.clone(),
            already_satisfied: r.already_satisfied,
            out_of_scope: r.out_of_scope.clone(),
            agent: r.agent,
            worker: worker.to_string(),
            recovered: false,
            files: Vec::new(),
        }
    }

    /// The step report the coordinator records, for step `index` `step_id`.
    pub fn into_report(self, index: usize, step_id: &str) -> StepReport {
        let code = || static_code(self.reason_code.as_deref().unwrap_or(""));
        let message = || {
            let m = self.message.clone().unwrap_or_default();
            match self.reason_code.as_deref() {
                Some(c) if c != code() => format!("{c}: {m}"),
                _ => m,
            }
        };
        let result = match self.status {
            OutcomeStatus::Committed => StepResult::Committed {
                commits: self.commits.clone(),
            },
            OutcomeStatus::Failed => StepResult::Failed {
                reason_code: code(),
                message: message(),
            },
            OutcomeStatus::NeedsInput => StepResult::NeedsInput {
                reason_code: code(),
                message: message(),
            },
        };
        let mut notes = self.notes;
        if self.recovered {
            notes.push(format!(
                "the step's commit was already on the remote (worker {}); it was not run again",
                self.worker
            ));
        }
        StepReport {
            index,
            step_id: step_id.to_string(),
            result,
            tokens: self.tokens,
            diff_lines: self.diff_lines,
            files_changed: self.files_changed,
            autofix_cycles: self.autofix_cycles,
            splits: self.splits,
            unit_passed: self.unit_passed,
            duration: Duration::from_millis(self.duration_ms),
            notes,
            base: self.base,
            on_base: self.on_base,
            checks: self.checks.iter().filter_map(|c| Check::parse(c)).collect(),
            test_runs: self.test_runs,
            already_satisfied: self.already_satisfied,
            out_of_scope: self.out_of_scope,
            agent: self.agent,
        }
    }
}

/// The runner's reason code spelled `code`; an unknown one (a newer worker) is
/// `EXECUTOR_ERROR`, and the message keeps the original.
fn static_code(code: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        reason::STEP_TOO_LARGE,
        reason::UNIT_TEST_FAILED,
        reason::UNIT_TEST_TIMEOUT,
        reason::MODEL_NOT_CONFIGURED,
        reason::AGENT_FAILED,
        reason::AGENT_TIMEOUT,
        reason::E2E_REQUIRED,
        reason::FORBIDDEN_PATH_CHANGED,
        reason::COMMAND_FORBIDDEN,
        reason::SECRET_DETECTED,
        reason::SANDBOX_UNAVAILABLE,
        reason::GIT_CONFIG_TAMPERED,
        reason::GH_FORBIDDEN,
        reason::DEPENDENCY_FAILED,
        reason::MERGE_CONFLICT,
        reason::STEP_NO_CHANGE,
        reason::LOOP_DETECTED,
        reason::MAX_ITERATIONS,
        reason::TOKEN_BUDGET_EXCEEDED,
        reason::APPROVAL_REQUIRED,
        reason::MODEL_ERROR,
        reason::REQUIRES_HUMAN_INTERVENTION,
        reason::EARLY_TERMINATION,
        reason::MAX_REVISIONS_EXCEEDED,
        reason::IO_ERROR,
        reason::FILE_NOT_FOUND,
        reason::GIT_ERROR,
        reason::PROCESS_ERROR,
        reason::EXECUTOR_ERROR,
        reason::PLAN_INVALID,
        reason::RUN_DIR_INVALID,
        RESTATE_UNAVAILABLE,
    ];
    KNOWN
        .iter()
        .find(|k| **k == code)
        .copied()
        .unwrap_or(reason::EXECUTOR_ERROR)
}
