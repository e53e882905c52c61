//! errors.json: typed entries with reason codes and next actions.

use dandori_plan::StepStatus;
use dandori_report::completion::next_action;
use dandori_report::errors::{ErrorsFile, for_completion, for_run_error};
use dandori_report::{CompletionStatus, reason};
use pretty_assertions::assert_eq;
use serde_json::json;

use super::fixture::fixture;

#[test]
fn stopped_steps_are_listed_with_reason_codes_and_next_actions() {
    let f = fixture();
    let e = for_completion(&f.planning, &f.completion);
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({
            "request_id": "RQ-7",
            "run_id": "run-7",
            "status": "failed",
            "errors": [
                {
                    "step_id": "S02",
                    "status": "failed",
                    "reason_code": "UNIT_TEST_FAILED",
                    "message": "unit commands failed after 2 fix cycles",
                    "next_action": next_action("S02", reason::UNIT_TEST_FAILED),
                },
                {
                    "step_id": "S03",
                    "status": "skipped",
                    "reason_code": "DEPENDENCY_FAILED",
                    "message": "depends on S02, which did not complete",
                    "next_action": "S03: runs once the step it depends on is done (`dandori resume`)",
                },
                {
                    "step_id": "S04",
                    "status": "needs_input",
                    "reason_code": "APPROVAL_REQUIRED",
                    "message": "run_command needs approval",
                    "next_action": "S04: a tool needs approval: run `dandori resume` on a terminal to answer, or `dandori resume --approve`",
                }
            ]
        })
    );
    // Gaps are not repeated while a step failed: the failure is the cause.
    assert!(e.errors.iter().all(|x| x.ac.is_none()));
}

#[test]
fn uncovered_criteria_are_errors_once_no_step_failed() {
    let mut f = fixture();
    for s in &mut f.completion.steps {
        s.status = StepStatus::Done;
        s.reason_code = None;
        s.message = None;
    }
    f.completion.summary.tasks_failed = 0;
    f.completion.status = CompletionStatus::Failed;
    let e = for_completion(&f.planning, &f.completion);
    assert_eq!(
        serde_json::to_value(&e).unwrap(),
        json!({
            "request_id": "RQ-7",
            "run_id": "run-7",
            "status": "failed",
            "errors": [
                {"ac": "AC-02", "reason_code": "AC_NOT_COVERED", "message": "AC-02 is not covered by a completed step"},
                {"ac": "AC-03", "reason_code": "AC_NOT_COVERED", "message": "AC-03 is not covered by a completed step"}
            ]
        })
    );
}

#[test]
fn a_completed_run_has_no_errors() {
    let mut f = fixture();
    for s in &mut f.completion.steps {
        s.status = StepStatus::Done;
        s.reason_code = None;
        s.message = None;
    }
    f.completion.summary.tasks_failed = 0;
    f.completion.coverage.critical_gaps.clear();
    f.completion.status = CompletionStatus::Completed;
    let e = for_completion(&f.planning, &f.completion);
    assert_eq!(e.status, "completed");
    assert_eq!(e.errors, vec![]);
}

#[test]
fn a_run_error_has_one_entry_and_round_trips() {
    let e = for_run_error(
        "gate_refused",
        reason::WORKTREE_DIRTY,
        "the worktree has uncommitted changes".to_string(),
    );
    let text = serde_json::to_string_pretty(&e).unwrap();
    insta::assert_snapshot!("run_error_json", text);
    let back: ErrorsFile = serde_json::from_str(&text).unwrap();
    assert_eq!(back, e);
}

#[test]
fn completion_status_spelling_matches_its_json() {
    for s in [
        CompletionStatus::Completed,
        CompletionStatus::Failed,
        CompletionStatus::NeedsInput,
        CompletionStatus::Paused,
        CompletionStatus::RequiresHumanIntervention,
    ] {
        assert_eq!(serde_json::to_value(s).unwrap(), json!(s.as_str()));
    }
    assert_eq!(CompletionStatus::RequiresHumanIntervention.exit_code(), 6);
}

#[test]
fn completion_serialises_the_seed_000_summary() {
    let f = fixture();
    let v = serde_json::to_value(&f.completion).unwrap();
    assert_eq!(v["phase"], json!("completion"));
    assert_eq!(
        v["summary"],
        json!({
            "goal_achieved": false,
            "tasks_completed": 2,
            "tasks_failed": 1,
            "key_outcomes": ["S01 Write the \"csv\" module (0123456789)"],
            "lessons_learned": ["S02 used 2 fix cycle(s) and its unit commands still fail"],
            "reason": "1 step(s) failed",
            "current_state": "2 done, 1 failed, 1 waiting, 1 skipped, 0 pending of 5",
            "recommendations": ["S02: read logs/step.S02.unit.log"]
        })
    );
}
