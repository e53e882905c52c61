//! The three verdicts of the policy, as `dandori policy check` prints them.

use serde::Serialize;

use super::{PolicyViolation, codes};

/// What the policy decides about one command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Runs (inside the sandbox).
    Allowed,
    /// Never runs on a model's or a plan's behalf.
    Refused,
    /// Nothing dangerous was found, but the executable is not on the allowlist:
    /// a person may allow it (`allowed_commands`), the model may not.
    NeedsApproval,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Allowed => "allowed",
            Decision::Refused => "refused",
            Decision::NeedsApproval => "needs_approval",
        }
    }
}

/// The verdict on one line, with the reason code and rule that decided it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    pub command: String,
    pub decision: Decision,
    /// `null` when allowed.
    pub code: Option<&'static str>,
    /// `allowlist` when allowed.
    pub rule: String,
    pub message: String,
}

impl Verdict {
    pub(crate) fn of<T>(line: &str, result: Result<T, PolicyViolation>) -> Verdict {
        match result {
            Ok(_) => Verdict {
                command: line.to_string(),
                decision: Decision::Allowed,
                code: None,
                rule: "allowlist".to_string(),
                message: "every command of the line is on the allowlist and no rule refuses it"
                    .to_string(),
            },
            Err(v) => Verdict {
                command: line.to_string(),
                decision: if v.code == codes::POLICY_NOT_ALLOWED {
                    Decision::NeedsApproval
                } else {
                    Decision::Refused
                },
                code: Some(v.code),
                rule: v.rule,
                message: v.message,
            },
        }
    }
}
