//! Reason codes recorded in `stage.json`, `errors.json` and the trace. They are
//! defined next to errors.json in `dandori_report::reason`.

pub use dandori_report::reason::*;

/// A check before the environment setup failed: the agent program cannot be
/// found, or git has no identity to commit the steps with.
pub const PREFLIGHT_FAILED: &str = "PREFLIGHT_FAILED";

/// The runner's reason code for a validation finding code of `dandori-plan`.
pub fn plan_code(code: &str) -> &'static str {
    match code {
        "JSON_PARSE_ERROR" => JSON_PARSE_ERROR,
        "AC_TOO_FEW" => AC_TOO_FEW,
        _ => dandori_plan::reason_codes::ALL
            .iter()
            .chain(dandori_plan::reason_codes::SANITISATION)
            .find(|c| **c == code)
            .copied()
            .unwrap_or(PLAN_INVALID),
    }
}
