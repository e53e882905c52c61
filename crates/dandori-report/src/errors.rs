//! `errors.json` of a run: one entry per step that stopped (failed, waiting for
//! input, skipped) with its reason code, message and the next action for a human,
//! plus the acceptance criteria left uncovered once no step failed; or, for a run
//! stopped before completion (a refused gate, a bad plan), the one error that
//! stopped it.

use dandori_plan::{Planning, StepStatus};
use serde::{Deserialize, Serialize};

use crate::completion::{Completion, next_action};
use crate::{reason, step_status_str};

/// The whole `errors.json` file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorsFile {
    /// Absent when the run stopped before its plan was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// A completion status (`failed`, `requires_human_intervention`, …), or
    /// `gate_refused` / `error` for a run stopped before completion.
    pub status: String,
    pub errors: Vec<ErrorEntry>,
}

/// One error. A step error has `step_id`, `status` and `next_action`; an uncovered
/// acceptance criterion has `ac`; a run error has neither.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ac: Option<String>,
    /// The step's status: `failed`, `needs_input` or `skipped`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    pub reason_code: String,
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_action: Option<String>,
}

/// `errors.json` of a completed phase. Its `errors` is empty when nothing went
/// wrong (the runner then writes no file).
pub fn for_completion(planning: &Planning, c: &Completion) -> ErrorsFile {
    let mut errors = Vec::new();
    for s in &c.steps {
        if let (StepStatus::Failed | StepStatus::NeedsInput | StepStatus::Skipped, Some(code)) =
            (s.status, s.reason_code.as_deref())
        {
            errors.push(ErrorEntry {
                step_id: Some(s.step_id.clone()),
                ac: None,
                status: Some(step_status_str(s.status).to_string()),
                reason_code: code.to_string(),
                message: s.message.clone(),
                next_action: Some(next_action(&s.step_id, code)),
            });
        }
    }
    if c.summary.tasks_failed == 0 && !c.coverage.critical_gaps.is_empty() {
        for g in &c.coverage.critical_gaps {
            errors.push(ErrorEntry {
                step_id: None,
                ac: Some(g.clone()),
                status: None,
                reason_code: reason::AC_NOT_COVERED.to_string(),
                message: Some(format!("{g} is not covered by a completed step")),
                next_action: None,
            });
        }
    }
    ErrorsFile {
        request_id: Some(planning.request_id.clone()),
        run_id: Some(planning.run_id.clone()),
        status: c.status.as_str().to_string(),
        errors,
    }
}

/// `errors.json` of a run that stopped before completion: `status` is
/// `gate_refused` or `error`, with the one error that stopped it.
pub fn for_run_error(status: &str, reason_code: &str, message: String) -> ErrorsFile {
    ErrorsFile {
        request_id: None,
        run_id: None,
        status: status.to_string(),
        errors: vec![ErrorEntry {
            step_id: None,
            ac: None,
            status: None,
            reason_code: reason_code.to_string(),
            message: Some(message),
            next_action: None,
        }],
    }
}
