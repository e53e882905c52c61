//! Every reason code the plan validation emits, in one place. The human-readable
//! table with severities and examples is `docs/REASON_CODES.md`; a test keeps the
//! two in sync.
//!
//! `JSON_PARSE_ERROR` and `AC_TOO_FEW` are named by seed 004 §4.1; the others name
//! the remaining rules of seed 004 §4 and the dependency-graph rules.

/// The text is not valid JSON (FAIL). The message carries line and column.
pub const JSON_PARSE_ERROR: &str = "JSON_PARSE_ERROR";
/// A required key is absent (FAIL). One finding per missing key.
pub const MISSING_REQUIRED_KEY: &str = "MISSING_REQUIRED_KEY";
/// A value has the wrong JSON type, e.g. a string where a number belongs (FAIL).
pub const INVALID_TYPE: &str = "INVALID_TYPE";
/// A value has the right type but is not one of the allowed values (FAIL).
pub const INVALID_VALUE: &str = "INVALID_VALUE";
/// `version` is not "1.0" (FAIL).
pub const UNSUPPORTED_VERSION: &str = "UNSUPPORTED_VERSION";
/// `steps` is empty (FAIL): there is nothing to run.
pub const NO_STEPS: &str = "NO_STEPS";
/// `steps[].step_id` does not match `S\d\d` (FAIL).
pub const STEP_ID_INVALID: &str = "STEP_ID_INVALID";
/// `steps[].step_id` appears more than once (FAIL).
pub const STEP_ID_DUPLICATE: &str = "STEP_ID_DUPLICATE";
/// `steps[].expected_diff.lines_max` > `limits.max_diff_lines` (FAIL).
pub const EXPECTED_DIFF_OVER_LIMIT: &str = "EXPECTED_DIFF_OVER_LIMIT";
/// `steps[].scope.max_diff_lines` > `limits.max_diff_lines` (FAIL).
pub const SCOPE_DIFF_OVER_LIMIT: &str = "SCOPE_DIFF_OVER_LIMIT";
/// `gates.forbid_gh` is not true (FAIL, fixed in v1).
pub const GH_NOT_FORBIDDEN: &str = "GH_NOT_FORBIDDEN";
/// `context.acceptance_criteria` has fewer than 3 entries (FAIL).
pub const AC_TOO_FEW: &str = "AC_TOO_FEW";
/// Two acceptance criteria share an id (FAIL): `links_to_ac` would be ambiguous.
pub const AC_ID_DUPLICATE: &str = "AC_ID_DUPLICATE";
/// `steps[].depends_on` names a step that does not exist (FAIL).
pub const UNKNOWN_DEPENDENCY: &str = "UNKNOWN_DEPENDENCY";
/// The steps' dependencies (depends_on and produces → consumes) form a cycle (FAIL).
/// The message names the cycle, e.g. `S01 -> S02 -> S01`.
pub const DEPENDENCY_CYCLE: &str = "DEPENDENCY_CYCLE";
/// `steps[].links_to_ac` names an acceptance criterion that does not exist (FAIL).
pub const UNKNOWN_AC_LINK: &str = "UNKNOWN_AC_LINK";
/// `steps[].expected_diff.files_max` > 10 (WARN).
pub const FILES_MAX_HIGH: &str = "FILES_MAX_HIGH";
/// More than 10 steps (WARN): possibly over-split.
pub const TOO_MANY_STEPS: &str = "TOO_MANY_STEPS";
/// More than 8 assumptions (WARN).
pub const TOO_MANY_ASSUMPTIONS: &str = "TOO_MANY_ASSUMPTIONS";

/// The document is too large to be a plan (bytes, JSON values or nesting over
/// the bounds of `validation::bounds`): refused before it is parsed (FAIL).
pub const PLAN_TOO_LARGE: &str = "PLAN_TOO_LARGE";

/// Every code above but [`PLAN_TOO_LARGE`] (its fixture would be megabytes), in
/// the order of `docs/REASON_CODES.md`.
pub const ALL: &[&str] = &[
    JSON_PARSE_ERROR,
    MISSING_REQUIRED_KEY,
    INVALID_TYPE,
    INVALID_VALUE,
    UNSUPPORTED_VERSION,
    NO_STEPS,
    STEP_ID_INVALID,
    STEP_ID_DUPLICATE,
    EXPECTED_DIFF_OVER_LIMIT,
    SCOPE_DIFF_OVER_LIMIT,
    GH_NOT_FORBIDDEN,
    AC_TOO_FEW,
    AC_ID_DUPLICATE,
    UNKNOWN_DEPENDENCY,
    DEPENDENCY_CYCLE,
    UNKNOWN_AC_LINK,
    FILES_MAX_HIGH,
    TOO_MANY_STEPS,
    TOO_MANY_ASSUMPTIONS,
];

/// Plan sanitisation (seed 000 §12.1.2), reported by
/// [`crate::validation::sanitise`] with the command policy as judge: a target or
/// input path that is absolute, leaves the repository (`..`) or points into `.git`
/// (FAIL).
pub const PLAN_PATH_OUTSIDE_REPO: &str = "PLAN_PATH_OUTSIDE_REPO";
/// A unit or e2e command the command policy refuses (FAIL); the message quotes the
/// policy's reason code and rule.
pub const PLAN_COMMAND_REFUSED: &str = "PLAN_COMMAND_REFUSED";
/// A unit or e2e command whose program is not on the allowlist (WARN): it needs
/// the user's approval (`allowed_commands`) to run.
pub const PLAN_COMMAND_NEEDS_APPROVAL: &str = "PLAN_COMMAND_NEEDS_APPROVAL";
/// A command that never ends: `while true`, `for ((;;))`, `yes |`, `sleep infinity`
/// (FAIL).
pub const PLAN_INFINITE_LOOP: &str = "PLAN_INFINITE_LOOP";
/// A command that leaves a process behind: `&`, `nohup`, `setsid`, `disown` (FAIL).
pub const PLAN_BACKGROUND_PROCESS: &str = "PLAN_BACKGROUND_PROCESS";
/// `sudo`, `su`, `doas`, `chmod +s`, … (FAIL).
pub const PLAN_PRIVILEGE_ESCALATION: &str = "PLAN_PRIVILEGE_ESCALATION";
/// A read of secrets: environment dumps, `/proc/*/environ`, credential stores,
/// secret-named variables (FAIL).
pub const PLAN_SECRET_READ: &str = "PLAN_SECRET_READ";

/// The sanitisation codes, in the order of `docs/REASON_CODES.md`. They need the
/// command policy as judge, so they are not produced by the pure validators; each
/// has a fixture under `tests/fixtures/sanitise/<CODE>.json`.
pub const SANITISATION: &[&str] = &[
    PLAN_PATH_OUTSIDE_REPO,
    PLAN_COMMAND_REFUSED,
    PLAN_COMMAND_NEEDS_APPROVAL,
    PLAN_INFINITE_LOOP,
    PLAN_BACKGROUND_PROCESS,
    PLAN_PRIVILEGE_ESCALATION,
    PLAN_SECRET_READ,
];
