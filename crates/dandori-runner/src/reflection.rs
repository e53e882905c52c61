//! Deterministic reflection (seed 000 §5, §8.1.3): after every error or unexpected
//! result, and every `trigger_interval` actions, a reflection record in the seed's
//! JSON shape goes to the trace. With a model the LLM tool loop asks the model for
//! the same record; these rules are what holds when no model is asked (and they
//! are conservative: an unclear result counts as a problem, seed 000 §10.3).

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReflectionStatus {
    Success,
    Failure,
    Partial,
}

impl ReflectionStatus {
    fn as_str(self) -> &'static str {
        match self {
            ReflectionStatus::Success => "success",
            ReflectionStatus::Failure => "failure",
            ReflectionStatus::Partial => "partial",
        }
    }
}

/// Why a reflection happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Error,
    Unexpected,
    Interval,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Error => "error",
            Trigger::Unexpected => "unexpected_result",
            Trigger::Interval => "interval",
        }
    }
}

/// The seed 000 §5 reflection record.
pub fn record(
    action_id: &str,
    trigger: Trigger,
    status: ReflectionStatus,
    evaluation: &str,
    issues: &[String],
    plan_revision_needed: bool,
) -> Value {
    json!({
        "phase": "reflection",
        "trigger": trigger.as_str(),
        "reflection": {
            "action_id": action_id,
            "status": status.as_str(),
            "evaluation": evaluation,
            "alignment_with_plan": if plan_revision_needed { "diverges from the plan" } else { "consistent with the plan" },
            "issues_identified": issues,
            "plan_revision_needed": plan_revision_needed,
        }
    })
}

/// Whether action number `n` (1-based, run-wide) is due a periodic reflection.
pub fn interval_due(n: u32, trigger_interval: u32) -> bool {
    trigger_interval > 0 && n > 0 && n.is_multiple_of(trigger_interval)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_counts_actions() {
        let due: Vec<u32> = (1..=7).filter(|n| interval_due(*n, 3)).collect();
        assert_eq!(due, vec![3, 6]);
        assert!(!interval_due(3, 0));
    }
}
