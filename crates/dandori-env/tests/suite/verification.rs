use std::collections::BTreeMap;
use std::time::Duration;

use dandori_config::OnFailure;
use dandori_env::records::OverallStatus;
use dandori_env::selection::OPTIONAL_VERIFICATION_KEY;
use dandori_env::setup::{self, SetupOptions};
use dandori_plan::SelectedEnvironment;
use pretty_assertions::assert_eq;

fn selected(checks: &[(&str, Option<&str>, bool)]) -> SelectedEnvironment {
    let mut expected = BTreeMap::new();
    let mut optional = Vec::new();
    for (c, x, required) in checks {
        if let Some(x) = x {
            expected.insert(c.to_string(), x.to_string());
        }
        if !required {
            optional.push(c.to_string());
        }
    }
    let mut extra = serde_json::Map::new();
    extra.insert("root".into(), ".".into());
    extra.insert(
        OPTIONAL_VERIFICATION_KEY.into(),
        serde_json::json!(optional),
    );
    SelectedEnvironment {
        name: "python".into(),
        reason: "test".into(),
        detected_files: vec![],
        setup_commands: vec!["echo ready".into()],
        verification_commands: checks.iter().map(|c| c.0.to_string()).collect(),
        expected_results: expected,
        extra,
    }
}

fn run(sel: &SelectedEnvironment, on_failure: OnFailure) -> setup::SetupOutcome {
    let dir = tempfile::tempdir().unwrap();
    let mut opts = SetupOptions::new(dir.path());
    opts.config.verification.on_failure = Some(on_failure);
    opts.backoff_base = Duration::from_millis(1);
    let out = setup::run(sel, &opts).unwrap();
    // Records exist in the default place outside a run.
    let rec = dir.path().join(".dandori/environment");
    assert!(rec.join("setup.json").exists());
    assert!(rec.join("verification.json").exists());
    assert!(rec.join("handover.json").exists());
    out
}

#[test]
fn exit_code_and_pattern_give_success() {
    let out = run(
        &selected(&[
            ("echo Python 3.11.5", Some(r"Python 3\.11"), true),
            ("echo listed", None, true),
        ]),
        OnFailure::Warn,
    );
    assert_eq!(out.overall_status, OverallStatus::Success);
    let v = &out.verification_result.verification_results;
    assert_eq!(
        v.iter()
            .map(|r| (r.actual.as_str(), r.status.as_str()))
            .collect::<Vec<_>>(),
        vec![("Python 3.11.5", "success"), ("listed", "success")]
    );
    assert!(out.proceed);
    assert!(out.handover.environment_ready);
}

#[test]
fn optional_failures_and_warnings_are_partial_success() {
    let out = run(
        &selected(&[("echo ok", Some("ok"), true), ("false", None, false)]),
        OnFailure::Fail,
    );
    assert_eq!(out.overall_status, OverallStatus::PartialSuccess);
    assert!(out.proceed);
    let out = run(
        &selected(&[(
            "echo 'npm WARN deprecated left-pad@1.3.0: use String.prototype.padStart()'",
            None,
            true,
        )]),
        OnFailure::Fail,
    );
    assert_eq!(out.overall_status, OverallStatus::PartialSuccess);
    assert!(
        out.warnings.iter().any(|w| w.contains("deprecated")),
        "{:?}",
        out.warnings
    );
}

#[test]
fn on_failure_fail_warn_ignore() {
    let sel = selected(&[("echo Python 3.8.1", Some(r"Python 3\.11"), true)]);
    let fail = run(&sel, OnFailure::Fail);
    assert_eq!(fail.overall_status, OverallStatus::Failed);
    assert!(!fail.proceed);
    assert_eq!(
        fail.verification_result.verification_results[0]
            .reason
            .as_deref(),
        Some("expected pattern not found in the output")
    );
    let warn = run(&sel, OnFailure::Warn);
    assert_eq!(warn.overall_status, OverallStatus::PartialSuccess);
    assert!(warn.proceed);
    let ignore = run(&sel, OnFailure::Ignore);
    assert_eq!(ignore.overall_status, OverallStatus::Success);
    assert_eq!(
        ignore.verification_result.overall_status,
        OverallStatus::Failed
    );
}

#[test]
fn descriptive_expectations_check_the_exit_code_only() {
    let out = run(
        &selected(&[("echo anything", Some("パッケージ一覧表示"), true)]),
        OnFailure::Fail,
    );
    assert_eq!(out.overall_status, OverallStatus::Success);
}

#[test]
fn refused_verification_commands_fail_with_the_reason() {
    let out = run(&selected(&[("sudo true", None, true)]), OnFailure::Fail);
    assert_eq!(out.overall_status, OverallStatus::Failed);
    let r = out.verification_result.verification_results[0]
        .reason
        .clone()
        .unwrap();
    assert!(r.contains("POLICY_PRIVILEGE_ESCALATION"), "{r}");
}

struct TouchMarker;

impl dandori_env::setup::CommandRegenerator for TouchMarker {
    fn regenerate(
        &self,
        r: &dandori_env::setup::RegenerationRequest,
    ) -> Result<dandori_env::setup::RegeneratedCommands, dandori_env::EnvError> {
        assert!(r.error.contains("verification failed"), "{}", r.error);
        dandori_env::setup::RegeneratedCommands::parse(r#"{"setup_commands": ["touch marker"]}"#)
    }
}

#[test]
fn failed_verification_goes_back_to_regeneration() {
    let dir = tempfile::tempdir().unwrap();
    let sel = selected(&[("test -f marker", None, true)]);
    let mut opts = SetupOptions::new(dir.path());
    opts.config.verification.on_failure = Some(OnFailure::Fail);
    let regen = TouchMarker;
    opts.regenerator = Some(&regen);
    let out = setup::run(&sel, &opts).unwrap();
    assert_eq!(out.overall_status, OverallStatus::Success, "{out:#?}");
    assert_eq!(out.setup_result.regenerations.len(), 1);
    assert_eq!(out.setup_result.setup_commands, vec!["touch marker"]);
}

#[test]
fn secrets_never_reach_records_or_logs() {
    let dir = tempfile::tempdir().unwrap();
    let mut sel = selected(&[("echo ok", Some("ok"), true)]);
    sel.setup_commands =
        vec!["echo token=ghp_abcdefghijklmnopqrstuvwxyz0123456789 && false".into()];
    let out = setup::run(&sel, &SetupOptions::new(dir.path())).unwrap();
    assert_eq!(out.overall_status, OverallStatus::Failed);
    let rec = dir.path().join(".dandori/environment");
    for f in ["setup.json", "error_report.md", "logs/setup.01.stdout.log"] {
        let text = std::fs::read_to_string(rec.join(f)).unwrap();
        assert!(
            !text.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "{f}: {text}"
        );
    }
}

proptest::proptest! {
    /// Model output of any shape is parsed or refused, never a panic.
    #[test]
    fn regeneration_answers_never_panic(text in "\\PC{0,300}") {
        let _ = dandori_env::setup::RegeneratedCommands::parse(&text);
    }
}
