//! `dandori policy check` against the built binary.

use std::path::Path;
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::Value;

fn dandori(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .current_dir(dir)
        .env_clear()
        .output()
        .expect("run dandori")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn allowed_command_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let o = dandori(dir.path(), &["policy", "check", "--", "cargo", "test"]);
    assert_eq!(o.status.code(), Some(0), "{}", out(&o));
    assert_eq!(out(&o), "allowed - [allowlist]: cargo test\n");
}

#[test]
fn refused_command_names_code_and_rule() {
    let dir = tempfile::tempdir().unwrap();
    let o = dandori(dir.path(), &["policy", "check", "--", "x=/; rm -rf $x"]);
    assert_eq!(o.status.code(), Some(1));
    let text = out(&o);
    assert!(
        text.starts_with("refused POLICY_DESTRUCTIVE_DELETE [delete-outside]: x=/; rm -rf $x\n"),
        "{text}"
    );

    let o = dandori(
        dir.path(),
        &[
            "policy",
            "check",
            "--json",
            "--",
            "git -c core.pager='sh -c id' log",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["refused"], 1);
    assert_eq!(v["verdicts"][0]["decision"], "refused");
    assert_eq!(v["verdicts"][0]["code"], "POLICY_GIT_EXEC_OPTION");
    assert_eq!(v["verdicts"][0]["rule"], "git-exec-config");
}

#[test]
fn unknown_program_needs_approval() {
    let dir = tempfile::tempdir().unwrap();
    let o = dandori(
        dir.path(),
        &[
            "policy",
            "check",
            "--json",
            "--",
            "curl",
            "https://example.invalid",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["verdicts"][0]["decision"], "needs_approval");
    assert_eq!(v["verdicts"][0]["code"], "POLICY_NOT_ALLOWED");
}

#[test]
fn file_mode_checks_every_line_and_counts() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cmds.txt");
    std::fs::write(
        &file,
        "# comment\nruff check .\n\nfind . -name '*.py' | xargs wc -l\nenv\n",
    )
    .unwrap();
    let o = dandori(
        dir.path(),
        &[
            "policy",
            "check",
            "--json",
            "--file",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["allowed"].clone(), v["refused"].clone()),
        (2.into(), 1.into())
    );
    assert_eq!(v["verdicts"][2]["code"], "POLICY_SECRET_READ");

    std::fs::write(&file, "pytest -q\ngo test ./...\n").unwrap();
    let o = dandori(
        dir.path(),
        &["policy", "check", "--file", file.to_str().unwrap()],
    );
    assert_eq!(o.status.code(), Some(0));
    assert!(
        out(&o).ends_with("2 allowed, 0 refused, 0 need approval\n"),
        "{}",
        out(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let o = dandori(dir.path(), &["policy", "check"]);
    assert_eq!(o.status.code(), Some(2));
    let o = dandori(dir.path(), &["policy", "check", "--file", "missing.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("missing.txt"));
}
