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

/// Seed 003 §7.1 `Visibility` of a trace event: `summary` events tell what a
/// phase decided (the conversation at a glance); `full` events carry the
/// details behind it (estimates, analyses, every model and tool call).
/// `dandori trace --visibility summary` shows only the former; `full` shows all.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Summary,
    Full,
}

impl Visibility {
    pub fn as_str(self) -> &'static str {
        match self {
            Visibility::Summary => "summary",
            Visibility::Full => "full",
        }
    }

    /// `summary` | `full` (case-insensitive).
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "summary" => Some(Visibility::Summary),
            "full" => Some(Visibility::Full),
            _ => None,
        }
    }
}

/// Events of the summary view beyond seed 003 §7.1's table, which names the
/// planning events: the same rule (a phase's start, decision and end) applied
/// to the environment, execution and completion phases.
const SUMMARY: &[&str] = &[
    // Seed 003 §7.1, verbatim.
    PLANNING_START,
    CHUNKING_DECISION,
    EXECUTION_PLAN,
    PLANNING_END,
    // Extensions in the same style.
    PLANNING_SKIPPED,
    PLANNING_FALLBACK,
    "PLAN_CACHE_HIT",
    "PLAN_VALIDATION",
    "ENVIRONMENT_SETUP",
    "EXECUTION_START",
    "EXECUTION_RESUME",
    "STEP_START",
    "STEP_END",
    "STEP_SKIPPED",
    "STEP_TOO_LARGE",
    "PLAN_REVISION",
    "COVERAGE_EVALUATION",
    "EARLY_TERMINATION",
    "REQUIRES_HUMAN_INTERVENTION",
    "EXECUTION_END",
];

/// The visibility of an event by its name: seed 003 §7.1's table
/// (`SIZE_ESTIMATION` and `DEPENDENCY_ANALYSIS` are `full`), the phase events
/// above `summary`, everything else (model, tool and test details) `full`.
pub fn visibility_of(event: &str) -> Visibility {
    if SUMMARY.contains(&event) {
        Visibility::Summary
    } else {
        Visibility::Full
    }
}
