//! Issue 39: every configuration dandori reads fails closed the same way. A
//! mistyped `-c` stops every command (exit 2, `CONFIG_INVALID`, the nearest key),
//! also those that read no configuration file; a broken `task-planning.json` stops
//! the commands that read it, naming the file, the line and the key.

use std::path::Path;
use std::process::{Command, Output};

use dandori_test_support::TempGitRepo;

fn dandori(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", cwd.join(".home"))
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A repository with one planned run; returns it and the run directory.
fn planned() -> (TempGitRepo, String) {
    let repo = TempGitRepo::with_files(&[
        ("src/app.py", "def add(a, b):\n    return a + b\n"),
        (
            "tests/test_app.py",
            "from src.app import add\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        ),
        (
            "requests/RQ-1.md",
            "# Add subtraction\n\nAdd a sub function to src/app.py with a test.\n",
        ),
    ]);
    let out = dandori(&["plan", "requests/RQ-1.md", "--json"], repo.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let run_dir = v["run_dir"].as_str().unwrap().to_string();
    (repo, run_dir)
}

const TYPO: &str = "planning.max_subtask=1";
const WANT: &str = "CONFIG_INVALID: -c planning.max_subtask: unknown configuration key; did you mean `planning.max_subtasks`?";

/// One test per command: without the typo it does not stop on configuration;
/// with it, exit 2 and the message `run` gives.
#[test]
fn a_mistyped_override_stops_every_command() {
    let (repo, run_dir) = planned();
    let planning = format!("{run_dir}/planning.json");
    let commands: Vec<Vec<&str>> = vec![
        vec!["validate", &planning],
        vec!["graph", &planning],
        vec!["status", &run_dir],
        vec!["report", &run_dir],
        vec!["trace", &run_dir],
        vec!["runs"],
        vec!["locate", "subtraction"],
        vec!["trust", "--list"],
        vec!["schema", "planning"],
        vec!["metrics"],
        vec!["policy", "check", "--", "pytest -q"],
        vec!["env", "detect"],
        vec!["completions", "bash"],
        vec!["plan", "requests/RQ-1.md"],
        vec!["run", &run_dir],
    ];
    let mut failures = Vec::new();
    for args in &commands {
        // `-c` is global: before the command, so it stays out of `--` arguments.
        let mut with = vec!["-c", TYPO];
        with.extend(args.iter().copied());
        let out = dandori(&with, repo.path());
        let err = stderr(&out);
        if out.status.code() != Some(2) || !err.contains(WANT) {
            failures.push(format!("{args:?}: exit {:?}: {err}", out.status.code()));
        }
        // The same command with a valid override does not stop on it.
        if !matches!(args[0], "run" | "plan") {
            let mut valid = vec!["-c", "planning.max_subtasks=1"];
            valid.extend(args.iter().copied());
            let out = dandori(&valid, repo.path());
            if stderr(&out).contains("CONFIG_INVALID") {
                failures.push(format!("{args:?} refused a valid -c: {}", stderr(&out)));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A wrong value type is refused like an unknown key, by a command that reads no
/// configuration too.
#[test]
fn a_wrong_override_type_stops_validate() {
    let (repo, run_dir) = planned();
    let out = dandori(
        &[
            "validate",
            &format!("{run_dir}/planning.json"),
            "-c",
            "task_planning.execution.max_parallel_workers=four",
        ],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("CONFIG_INVALID: -c task_planning.execution.max_parallel_workers=four"),
        "{}",
        stderr(&out)
    );
}

/// `task-planning.json` with an unknown key or a wrong type: exit 2 naming the
/// file, the line and the key, as `config.yaml` does; never the defaults.
#[test]
fn a_broken_task_planning_json_stops_plan() {
    let (repo, _) = planned();
    for (text, want) in [
        (
            "{\n  \"chunking\": {\n    \"max_subtask\": 3\n  }\n}\n",
            "task-planning.json:3: chunking.max_subtask: unknown key",
        ),
        (
            "{\n  \"execution\": {\n    \"max_parallel_workers\": \"four\"\n  }\n}\n",
            "task-planning.json:3: execution.max_parallel_workers: invalid type",
        ),
        ("{ \"enabled\": tru }", "task-planning.json:1: not JSON"),
    ] {
        repo.write(".dandori/task-planning.json", text);
        let out = dandori(&["plan", "requests/RQ-1.md"], repo.path());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.contains("CONFIG_INVALID: ") && err.contains(want),
            "{err}"
        );
    }
}
