//! Reason codes recorded in `stage.json`, `errors.json` and the trace. The first
//! group is seed 004 verbatim; the rest extend it in the same style. Public
//! contract: the spelling never changes.

// seed 004 §4.1, §5
pub const JSON_PARSE_ERROR: &str = "JSON_PARSE_ERROR";
pub const AC_TOO_FEW: &str = "AC_TOO_FEW";
pub const STEP_TOO_LARGE: &str = "STEP_TOO_LARGE";
pub const UNIT_TEST_FAILED: &str = "UNIT_TEST_FAILED";

// planning.json / run directory problems
pub const PLAN_INVALID: &str = "PLAN_INVALID";
pub const PLAN_ORDER_INVALID: &str = "PLAN_ORDER_INVALID";
pub const RUN_DIR_INVALID: &str = "RUN_DIR_INVALID";
pub const REPO_MISMATCH: &str = "REPO_MISMATCH";

// gates (seed 004 §3.5)
pub const WORKTREE_DIRTY: &str = "WORKTREE_DIRTY";
pub const WORK_BRANCH_REQUIRED: &str = "WORK_BRANCH_REQUIRED";
pub const WORK_BRANCH_NOT_FROM_BASE: &str = "WORK_BRANCH_NOT_FROM_BASE";
pub const BASE_BRANCH_MISSING: &str = "BASE_BRANCH_MISSING";
pub const GH_FORBIDDEN: &str = "GH_FORBIDDEN";
pub const ENVIRONMENT_FAILED: &str = "ENVIRONMENT_FAILED";

// steps
pub const MODEL_NOT_CONFIGURED: &str = "MODEL_NOT_CONFIGURED";
pub const AGENT_FAILED: &str = "AGENT_FAILED";
pub const AGENT_TIMEOUT: &str = "AGENT_TIMEOUT";
pub const UNIT_TEST_TIMEOUT: &str = "UNIT_TEST_TIMEOUT";
pub const E2E_REQUIRED: &str = "E2E_REQUIRED";
pub const FORBIDDEN_PATH_CHANGED: &str = "FORBIDDEN_PATH_CHANGED";
pub const COMMAND_FORBIDDEN: &str = "COMMAND_FORBIDDEN";
/// The pre-commit secret scan found a secret in the step's change: nothing was
/// committed (docs/security.md § Secrets).
pub const SECRET_DETECTED: &str = "SECRET_DETECTED";
/// No sandbox mechanism works and the user did not opt out (`--sandbox off`).
pub const SANDBOX_UNAVAILABLE: &str = "SANDBOX_UNAVAILABLE";
/// A step changed the repository's `.git/config`, hooks or `info/attributes`;
/// the change was reverted.
pub const GIT_CONFIG_TAMPERED: &str = "GIT_CONFIG_TAMPERED";
pub const DEPENDENCY_FAILED: &str = "DEPENDENCY_FAILED";
pub const MERGE_CONFLICT: &str = "MERGE_CONFLICT";
pub const STEP_NO_CHANGE: &str = "STEP_NO_CHANGE";
/// A step changed nothing because its checks were already green: an earlier
/// step did its work (issue 20). Recorded on a `done` step.
pub const ALREADY_SATISFIED: &str = "ALREADY_SATISFIED";
/// A step's edits outside `scope.target_paths` exceeded its scope budget.
pub const STEP_SCOPE_EXCEEDED: &str = "STEP_SCOPE_EXCEEDED";
/// An acceptance criterion whose only evidence is "the suite passes".
pub const AC_UNVERIFIED: &str = "AC_UNVERIFIED";
pub const LOOP_DETECTED: &str = "LOOP_DETECTED";
pub const MAX_ITERATIONS: &str = "MAX_ITERATIONS";
pub const TOKEN_BUDGET_EXCEEDED: &str = "TOKEN_BUDGET_EXCEEDED";
pub const APPROVAL_REQUIRED: &str = "APPROVAL_REQUIRED";
pub const MODEL_ERROR: &str = "MODEL_ERROR";
pub const REQUIRES_HUMAN_INTERVENTION: &str = "REQUIRES_HUMAN_INTERVENTION";

// run-level guardrails (seed 000 §10.4, §11.2.2)
pub const EARLY_TERMINATION: &str = "EARLY_TERMINATION";
pub const TOTAL_TIMEOUT: &str = "TOTAL_TIMEOUT";
pub const MAX_REVISIONS_EXCEEDED: &str = "MAX_REVISIONS_EXCEEDED";
pub const MAX_STEPS_PER_RUN: &str = "MAX_STEPS_PER_RUN";
pub const AC_NOT_COVERED: &str = "AC_NOT_COVERED";

// infrastructure
pub const IO_ERROR: &str = "IO_ERROR";
pub const FILE_NOT_FOUND: &str = "FILE_NOT_FOUND";
/// A `--repo` directory that does not exist (also `locate`, the planner, MCP).
pub const REPO_NOT_FOUND: &str = "REPO_NOT_FOUND";
pub const USAGE_ERROR: &str = "USAGE_ERROR";
pub const GIT_ERROR: &str = "GIT_ERROR";
pub const PROCESS_ERROR: &str = "PROCESS_ERROR";
pub const EXECUTOR_ERROR: &str = "EXECUTOR_ERROR";
