//! Event names. Planning names are seed 003 §7 verbatim; the others extend them in
//! the same style.

pub const PLANNING_START: &str = "PLANNING_START";
pub const SIZE_ESTIMATION: &str = "SIZE_ESTIMATION";
pub const CHUNKING_DECISION: &str = "CHUNKING_DECISION";
pub const DEPENDENCY_ANALYSIS: &str = "DEPENDENCY_ANALYSIS";
pub const EXECUTION_PLAN: &str = "EXECUTION_PLAN";
pub const PLANNING_END: &str = "PLANNING_END";
pub const PLANNING_SKIPPED: &str = "PLANNING_SKIPPED";
/// Config settings that were ignored (an untrusted repository's widening keys, a
/// broken file, a bad variable), recorded by `run` / `resume`; `plan` records them
/// in `PLANNING_START.config_warnings`.
pub const CONFIG_WARNING: &str = "CONFIG_WARNING";
/// The model could not plan; the offline planner's whole plan was used
/// (reason code, cause, config key).
pub const PLANNING_FALLBACK: &str = "PLANNING_FALLBACK";
