//! What travels through the journal, and the names the engine derives.

use std::time::Duration;

use dandori_distributed::admin::default_admin_url;
use dandori_distributed::protocol::{OutcomeStatus, StepOutcome};
use dandori_distributed::refs;
use dandori_runner::step::{Check, StepReport, StepResult};
use pretty_assertions::assert_eq;

fn report(result: StepResult) -> StepReport {
    StepReport {
        index: 2,
        step_id: "S03".to_string(),
        result,
        tokens: Default::default(),
        diff_lines: 12,
        files_changed: vec!["src/a.rs".to_string()],
        autofix_cycles: 1,
        splits: 0,
        unit_passed: Some(true),
        duration: Duration::from_millis(1500),
        notes: vec!["n".to_string()],
        base: Some("abc".to_string()),
        on_base: true,
        checks: vec![Check {
            kind: "unit".to_string(),
            command: "cargo test".to_string(),
            exit_code: Some(0),
            preexisting: None,
            red: None,
        }],
        test_runs: vec![dandori_runner::evidence::CommandRun {
            command: "cargo test".to_string(),
            exit_code: Some(0),
            tests: [("a::b".to_string(), true)].into_iter().collect(),
            counted: None,
            log: "logs/step.S03.unit.log".to_string(),
            crash: None,
        }],
        already_satisfied: false,
        out_of_scope: vec![("README.md".to_string(), 2)],
        agent: Default::default(),
    }
}

#[test]
fn a_step_report_survives_the_journal() {
    for result in [
        StepResult::Committed {
            commits: vec!["c1".to_string(), "c2".to_string()],
        },
        StepResult::Failed {
            reason_code: dandori_runner::reason::UNIT_TEST_FAILED,
            message: "exit 1".to_string(),
        },
        StepResult::NeedsInput {
            reason_code: dandori_runner::reason::MODEL_NOT_CONFIGURED,
            message: "no model".to_string(),
        },
    ] {
        let r = report(result);
        let outcome = StepOutcome::from_report(&r, "host:1");
        let text = serde_json::to_string(&outcome).unwrap();
        let back: StepOutcome = serde_json::from_str(&text).unwrap();
        assert_eq!(back.into_report(2, "S03"), r);
    }
}

#[test]
fn an_unknown_reason_code_keeps_its_name_in_the_message() {
    let outcome = StepOutcome {
        reason_code: Some("SOMETHING_NEW".to_string()),
        message: Some("details".to_string()),
        ..StepOutcome::bare(OutcomeStatus::Failed, "w")
    };
    assert_eq!(
        outcome.into_report(0, "S01").result,
        StepResult::Failed {
            reason_code: dandori_runner::reason::EXECUTOR_ERROR,
            message: "SOMETHING_NEW: details".to_string(),
        }
    );
}

#[test]
fn a_recovered_step_says_so() {
    let outcome = StepOutcome {
        commits: vec!["c".to_string()],
        recovered: true,
        ..StepOutcome::bare(OutcomeStatus::Committed, "host:7")
    };
    let r = outcome.into_report(0, "S01");
    assert!(
        r.notes[0].contains("already on the remote (worker host:7)"),
        "{:?}",
        r.notes
    );
}

#[test]
fn ids_that_cannot_name_a_ref_are_refused() {
    for ok in ["run-9", "20260101-120000-ab12cd", "S01", "a.b_c"] {
        assert!(refs::check_component("id", ok).is_ok(), "{ok}");
    }
    for bad in [
        "", "../x", "a/b", "-x", ".x", "a..b", "x.lock", "a b", "a:b", "a~1",
    ] {
        let e = refs::check_component("id", bad).unwrap_err();
        assert_eq!(e.reason_code(), "PLAN_INVALID", "{bad}");
    }
    assert_eq!(
        refs::step_ref("run-9", "S01"),
        "refs/dandori/runs/run-9/steps/S01"
    );
}

#[test]
fn the_admin_url_defaults_to_port_9070_of_the_ingress_host() {
    assert_eq!(
        default_admin_url("http://127.0.0.1:8080"),
        "http://127.0.0.1:9070"
    );
    assert_eq!(
        default_admin_url("https://restate.example/"),
        "https://restate.example:9070"
    );
    assert_eq!(default_admin_url("restate:8080"), "http://restate:9070");
}

#[test]
fn only_the_steps_own_logs_and_patch_come_back() {
    use dandori_distributed::protocol::StepFile;
    assert!(StepFile::belongs_to("logs/step.S01.agent.log", "S01"));
    assert!(StepFile::belongs_to("patches/S01.patch", "S01"));
    for bad in [
        "logs/step.S02.agent.log",
        "logs/step.S01/../../x",
        "logs/../stage.json",
        "patches/S02.patch",
        "stage.json",
        "/etc/passwd",
        "logs/step.S01..log",
        "logs/sub/step.S01.a.log",
    ] {
        assert!(!StepFile::belongs_to(bad, "S01"), "{bad}");
    }
}
