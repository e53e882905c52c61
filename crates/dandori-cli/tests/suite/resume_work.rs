//! A step killed mid-way resumes in a worktree holding its uncommitted work
//! (issue 36): `dandori run` is killed (SIGKILL) while its agent, having
//! written half of the step, is still working; a plain `dandori resume` gives
//! the step a new worktree with that half in it, tells the agent so, and the
//! step ends with both halves committed once. Under bubblewrap and Landlock.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dandori_test_support::TempGitRepo;
use serde_json::Value;

use super::kill_run_at;
use super::run_llm::dandori;

const REQUEST: &str = "# Notes\n\nWrite the two halves of the release notes into `src/notes.txt`.\n\n\
## Acceptance criteria\n\n\
- Given the notes, when they are read, then both halves are there (check: `grep -q 'first half' src/notes.txt && grep -q 'second half' src/notes.txt`)\n";

/// The agent: on its first call it writes the first half and keeps working
/// (the test kills dandori then); resumed with its work kept, it adds the
/// second half; told the tree was reset, it fails.
const AGENT: &str = r#"#!/bin/sh
case "$*" in
  *"Resumed after an interruption"*"were kept"*"src/notes.txt"*)
    grep -q 'first half' src/notes.txt || exit 3
    echo 'second half' >> src/notes.txt ;;
  *"Resumed after an interruption"*)
    echo 'the tree was reset' >&2; exit 4 ;;
  *)
    echo 'first half' >> src/notes.txt
    sleep 30 ;;
esac
"#;

fn worktree_holding_the_first_half(run_dir: &Path) -> Option<PathBuf> {
    let dir = std::fs::read_dir(run_dir.join("worktrees")).ok()?;
    // A pool worktree holds the file; a copy-on-write workspace's upper layer does.
    dir.filter_map(Result::ok)
        .flat_map(|e| [e.path(), e.path().join("upper")])
        .find(|p| {
            std::fs::read_to_string(p.join("src/notes.txt")).is_ok_and(|t| t.contains("first half"))
        })
}

fn killed_then_resumed(mech: &str) {
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# notes\n"),
        ("src/notes.txt", "Release notes\n"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let request = home.path().join("request.md");
    std::fs::write(&request, REQUEST).unwrap();
    let o = dandori(
        &["plan", request.to_str().unwrap(), "--json"],
        repo.path(),
        home.path(),
        &[],
    );
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let agent = home.path().join("agent.sh");
    std::fs::write(&agent, AGENT).unwrap();
    let agent_cmd = format!("sh {} {{prompt}}", agent.display());
    let args = |verb: &'static str| -> Vec<String> {
        [
            verb,
            run_dir.to_str().unwrap(),
            "--sandbox",
            mech,
            "--agent-cmd",
            &agent_cmd,
            "-c",
            "planning.environment_setup.enabled=false",
            "--json",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let old = kill_run_at(
        Command::new(env!("CARGO_BIN_EXE_dandori"))
            .args(args("run"))
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path()),
        &format!("{mech}: the agent writes its first half"),
        Duration::from_secs(120),
        Duration::ZERO,
        || worktree_holding_the_first_half(&run_dir),
    );

    let args = args("resume");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = dandori(&args, repo.path(), home.path(), &[]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{mech}: resume\n{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["summary"]["goal_achieved"], Value::Bool(true), "{v:#}");

    // Both halves on the work branch, each once.
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let work = planning["work_branch"].as_str().unwrap();
    let notes = repo.git(&["show", &format!("{work}:src/notes.txt")]);
    assert_eq!(notes, "Release notes\nfirst half\nsecond half\n", "{mech}");
    // The resumed agent was told where it is and what it finds there.
    let prompt = std::fs::read_to_string(run_dir.join("logs/step.S01.prompt.md")).unwrap();
    assert!(
        prompt.contains("## Resumed after an interruption") && prompt.contains("src/notes.txt"),
        "{mech}: {prompt}"
    );
    assert!(!prompt.contains(old.to_str().unwrap()), "{mech}: {prompt}");
    // The snapshot is in the trace, and its ref is gone once the work is back.
    let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
    assert!(
        trace.lines().any(|l| l.contains("EXECUTION_RESUME")
            && l.contains("kept_uncommitted")
            && l.contains("src/notes.txt")),
        "{mech}: {trace}"
    );
    let refs = repo.git(&["for-each-ref", "refs/dandori/interrupted/"]);
    assert_eq!(refs.trim(), "", "{mech}");
    // The killed run's step is not counted done twice.
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    assert_eq!(stage["steps"][0]["status"], "done", "{stage:#}");
    assert!(stage["steps"][0].get("worktree").is_none(), "{stage:#}");
    assert!(stage["steps"][0].get("overlay").is_none(), "{stage:#}");
}

#[test]
fn a_step_killed_mid_way_resumes_with_its_uncommitted_work_under_bubblewrap() {
    killed_then_resumed("bubblewrap");
}

#[test]
fn a_step_killed_mid_way_resumes_with_its_uncommitted_work_under_landlock() {
    killed_then_resumed("landlock");
}
