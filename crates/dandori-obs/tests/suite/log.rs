//! The seed 000 §16.4.1 line format and the level filter.

use dandori_config::planning::LogLevel;
use dandori_obs::log;
use dandori_trace::TraceEvent;
use pretty_assertions::assert_eq;
use serde_json::json;

fn ev(event: &str, data: serde_json::Value) -> TraceEvent {
    TraceEvent {
        event: event.to_string(),
        visibility: None,
        timestamp: "2024-01-15T10:35:00.250+00:00".to_string(),
        session_id: "r".to_string(),
        task_id: "issue-123".to_string(),
        data,
    }
}

#[test]
fn lines_follow_the_seed_format() {
    assert_eq!(
        log::lines(&ev("PLANNING_START", json!({})), LogLevel::Info),
        vec!["[2024-01-15 10:35:00] [INFO] [Planning] Task started: issue-123"]
    );
    let reflection = ev(
        "REFLECTION",
        json!({"reflection": {"action_evaluated": "github_get_file_contents",
            "status": "failure", "evaluation": "File not found",
            "issues_identified": ["Incorrect file path"], "plan_revision_needed": true}}),
    );
    assert_eq!(
        log::lines(&reflection, LogLevel::Debug),
        vec![
            "[2024-01-15 10:35:00] [INFO] [Reflection] Evaluating action: github_get_file_contents",
            "[2024-01-15 10:35:00] [WARN] [Reflection] Action failed: File not found",
            "[2024-01-15 10:35:00] [INFO] [Reflection] Issue identified: Incorrect file path",
            "[2024-01-15 10:35:00] [INFO] [Reflection] Plan revision suggested",
        ]
    );
    assert_eq!(
        log::lines(&reflection, LogLevel::Warning),
        vec!["[2024-01-15 10:35:00] [WARN] [Reflection] Action failed: File not found"]
    );
    assert_eq!(
        log::lines(&reflection, LogLevel::Error),
        Vec::<String>::new()
    );
}

#[test]
fn a_message_never_breaks_the_line() {
    let e = ev(
        "STEP_END",
        json!({"step_id": "S01", "status": "failed", "reason_code": "AGENT_FAILED",
            "message": "first\nsecond"}),
    );
    let lines = log::lines(&e, LogLevel::Debug);
    assert_eq!(
        lines,
        vec!["[2024-01-15 10:35:00] [ERROR] [Execution] Step failed: S01 (AGENT_FAILED: first)"]
    );
    let unknown = log::lines(&ev("SOMETHING_NEW", json!({})), LogLevel::Debug);
    assert_eq!(
        unknown,
        vec!["[2024-01-15 10:35:00] [DEBUG] [Trace] SOMETHING_NEW"]
    );
    assert_eq!(
        log::lines(&ev("SOMETHING_NEW", json!({})), LogLevel::Info),
        Vec::<String>::new()
    );
}
