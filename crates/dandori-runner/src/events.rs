//! Trace event names of the execution phase, in the style of seed 003 §7.

pub const EXECUTION_START: &str = "EXECUTION_START";
pub const EXECUTION_RESUME: &str = "EXECUTION_RESUME";
pub const PLAN_VALIDATION: &str = "PLAN_VALIDATION";
pub const GATE_CHECK: &str = "GATE_CHECK";
pub const ENVIRONMENT_SETUP: &str = "ENVIRONMENT_SETUP";
pub const STEP_START: &str = "STEP_START";
/// Where the run's steps work (`runner.step_workspace`): `mechanism` (`pool` |
/// `overlay`), `requested`, and `fallback_reason` when overlays were asked for and
/// could not be mounted here.
pub const STEP_WORKSPACE: &str = "STEP_WORKSPACE";
pub const TOOLING: &str = "TOOLING";
pub const STEP_ACTION: &str = "STEP_ACTION";
pub const STEP_TOO_LARGE: &str = "STEP_TOO_LARGE";
pub const UNIT_TEST: &str = "UNIT_TEST";
pub const AUTOFIX: &str = "AUTOFIX";
pub const STEP_WARNING: &str = "STEP_WARNING";
/// The pre-commit secret scan refused the step's change (file, line, kind; never
/// the secret).
pub const SECRET_DETECTED: &str = "SECRET_DETECTED";
/// A step changed the repository's git config, hooks or attributes (reverted).
pub const GIT_CONFIG_TAMPERED: &str = "GIT_CONFIG_TAMPERED";
pub const STEP_END: &str = "STEP_END";
pub const STEP_SKIPPED: &str = "STEP_SKIPPED";
/// A plan revision the runner made itself (seed 004 §2 replan triggers,
/// `crate::replan`): `step_id`, `trigger`, `revision`, `max_revisions`,
/// `failures`, and the seed 000 `plan_revision` (`reason`, `changes`).
pub const PLAN_REVISION: &str = "PLAN_REVISION";
pub const REFLECTION: &str = "REFLECTION";
pub const COVERAGE_EVALUATION: &str = "COVERAGE_EVALUATION";
pub const EARLY_TERMINATION: &str = "EARLY_TERMINATION";
pub const EXECUTION_END: &str = "EXECUTION_END";
/// One model call of the LLM executor (the planner writes the same event for its
/// own calls): `step_id`, `purpose` (`execution` | `reflection`), `provider`,
/// `provider_kind`, `model`, `started_at`, `duration_ms`, `ok`, `usage`.
pub const LLM_CALL: &str = "LLM_CALL";
/// One tool call of the LLM executor: `step_id`, `tool`, `started_at`,
/// `duration_ms`, `ok`, `reason_code` (on failure).
pub const TOOL_CALL: &str = "TOOL_CALL";
/// The test commands ran on the base commit before the first step (issue 20):
/// `commit`, per command its exit code and test counts, the failing tests.
pub const BASELINE: &str = "BASELINE";
