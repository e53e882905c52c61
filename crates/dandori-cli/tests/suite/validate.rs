//! `dandori validate` against the built binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

pub(super) fn plan_fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dandori-plan/tests/fixtures")
        .join(rel)
}

pub(super) fn dandori(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .env_clear()
        .output()
        .expect("run dandori")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn sample_is_ok() {
    let f = plan_fixture("seed004_sample.json");
    let o = dandori(&["validate", path(&f)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        out(&o),
        format!("{}: ok (0 errors, 0 warnings)\n", f.display())
    );
    let o = dandori(&["validate", path(&f), "--json"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, json!({"status": "ok", "errors": [], "warnings": []}));
}

#[test]
fn fail_findings_exit_1_with_json() {
    let f = plan_fixture("codes/AC_TOO_FEW.json");
    let o = dandori(&["validate", path(&f), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({
            "status": "fail",
            "errors": [{
                "code": "AC_TOO_FEW",
                "severity": "FAIL",
                "path": "context.acceptance_criteria",
                "message": "2 acceptance criteria, at least 3 are required"
            }],
            "warnings": []
        })
    );
}

#[test]
fn warnings_exit_0() {
    let f = plan_fixture("codes/TOO_MANY_ASSUMPTIONS.json");
    let o = dandori(&["validate", path(&f)]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        out(&o),
        format!(
            "{f}: WARN TOO_MANY_ASSUMPTIONS assumptions: 9 assumptions (more than 8)\n{f}: ok (0 errors, 1 warning)\n",
            f = f.display()
        )
    );
}

#[test]
fn parse_error_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("planning.json");
    std::fs::write(&f, "{\n  \"version\": \"1.0\",\n  \"steps\": [,]\n}\n").unwrap();
    let o = dandori(&["validate", path(&f), "--json"]);
    // A plan with a syntax error: a FAIL finding like any other (exit 1), with
    // the finding's position.
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["status"], "fail");
    assert_eq!(v["errors"][0]["code"], "JSON_PARSE_ERROR");
    assert_eq!(v["errors"][0]["line"], 3);
    assert_eq!(v["errors"][0]["column"], 13);
    // The same in text: the finding, `fail`, exit 1, no usage error.
    let o = dandori(&["validate", path(&f)]);
    assert_eq!(o.status.code(), Some(1));
    let text = out(&o);
    assert!(text.contains("FAIL JSON_PARSE_ERROR"), "{text}");
    assert!(text.contains(": fail (1 error"), "{text}");
    assert!(
        !String::from_utf8_lossy(&o.stderr).contains("is not JSON"),
        "a plan with a syntax error is not a usage error"
    );
    // Truncated (a plan cut short while written): also exit 1.
    std::fs::write(&f, "\u{feff}  [{\"version\": \"1.0\"").unwrap();
    let o = dandori(&["validate", path(&f), "--json"]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn every_missing_key_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("planning.json");
    std::fs::write(&f, r#"{"version": "1.0", "steps": [{"step_id": "S1"}]}"#).unwrap();
    let o = dandori(&["validate", path(&f), "--json"]);
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let got: Vec<(String, String)> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["code"].as_str().unwrap().to_string(),
                e["path"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let missing: Vec<&str> = got
        .iter()
        .filter(|(c, _)| c == "MISSING_REQUIRED_KEY")
        .map(|(_, p)| p.as_str())
        .collect();
    assert_eq!(
        missing,
        vec![
            "request_id",
            "run_id",
            "created_at",
            "base_branch",
            "work_branch",
            "limits",
            "context",
            "steps[0].title",
            "steps[0].role",
            "steps[0].intent",
            "steps[0].scope",
            "steps[0].inputs",
            "steps[0].commands",
            "steps[0].success_criteria",
            "steps[0].links_to_ac",
            "steps[0].expected_diff",
            "steps[0].outputs",
            "gates",
            "outputs",
        ]
    );
    assert!(got.contains(&("STEP_ID_INVALID".into(), "steps[0].step_id".into())));
}

#[test]
fn io_and_usage_errors_exit_2() {
    let o = dandori(&["validate", "/definitely/not/here.json"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("/definitely/not/here.json"), "{err}");
    assert!(err.contains("FILE_NOT_FOUND"), "{err}");
    assert!(err.contains("current directory"), "{err}");
    let o = dandori(&["validate"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("USAGE_ERROR"));
}

/// The issue's findings: `validate README.md` is a usage error with a reason code;
/// a run directory is accepted wherever a planning.json is.
#[test]
fn non_json_is_exit_2_and_run_directories_are_accepted() {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let o = dandori(&["validate", path(&readme)]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("JSON_PARSE_ERROR") && err.contains("is not JSON"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        plan_fixture("seed004_sample.json"),
        dir.path().join("planning.json"),
    )
    .unwrap();
    let o = dandori(&["validate", path(dir.path())]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = dandori(&["graph", path(dir.path()), "--format", "mermaid"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(out(&o).contains("S01"), "{}", out(&o));
    let empty = tempfile::tempdir().unwrap();
    let o = dandori(&["graph", path(empty.path())]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("RUN_DIR_INVALID"));
}

#[test]
fn arbitrary_bytes_are_a_parse_error() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("planning.json");
    std::fs::write(&f, [0xff, 0xfe, 0x00, 0x7b]).unwrap();
    let o = dandori(&["validate", path(&f), "--json"]);
    assert_eq!(o.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["errors"][0]["code"], "JSON_PARSE_ERROR");
}
