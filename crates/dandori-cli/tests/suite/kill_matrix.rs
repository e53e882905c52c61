//! The kill matrix: `dandori run` killed (SIGKILL) at points spread over the
//! whole run — environment setup, each step, the merges, the completion — then
//! `dandori resume`d, ends where an uninterrupted run ends: every step done,
//! the same files on the work branch, no step committed twice, the user's
//! checkout untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dandori_test_support::TempGitRepo;
use serde_json::{Value, json};

use super::run_llm::dandori;

const REQUEST: &str = "---\nid: RQ-9\ntitle: Greet\n---\n# Greet\n\n\
## Requirements\n\n- Add `src/greet.txt` with a greeting\n- Describe `src/greet.txt` in `README.md`\n\n\
## Acceptance criteria\n\n- Given the repository, when src/greet.txt is read, then it greets (check: `grep -q hello src/greet.txt`)\n\
- Given the README, when it is read, then it mentions the greeting (check: `grep -q greet README.md`)\n\
- Given the repository, when it is checked out, then nothing else changed\n";

struct Case {
    repo: TempGitRepo,
    home: tempfile::TempDir,
    run_dir: PathBuf,
    agent_cmd: String,
    /// `runner.step_workspace`: `pool` pins the pool; `default` sets nothing
    /// (`auto`: copy-on-write workspaces where overlayfs mounts).
    workspace: &'static str,
}

fn case(workspace: &'static str) -> Case {
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# demo\n"),
        ("src/hello.txt", "hello\n"),
        ("requests/RQ-9.md", REQUEST),
    ]);
    let home = tempfile::tempdir().unwrap();
    let o = dandori(
        &["plan", "requests/RQ-9.md", "--json"],
        repo.path(),
        home.path(),
        &[],
    );
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let path = run_dir.join("planning.json");
    let mut planning: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    // An environment setup that takes a while, so kills land in it too.
    planning["selected_environment"] = json!({
        "name": "python", "reason": "test plan", "detected_files": [],
        "setup_commands": ["python3 -m venv .venv", "sleep 1"], "verification_commands": [],
        "expected_results": {}, "root": ".", "package_manager": "pip",
    });
    std::fs::write(&path, serde_json::to_string_pretty(&planning).unwrap()).unwrap();
    // The agent does what is left, as a real one does: a step killed after its
    // edit resumes with that edit kept (issue 36), and the agent then finds
    // the README line already there instead of appending it twice.
    let agent = home.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nsleep 0.4\ncase \"$1\" in\n\
         S01) mkdir -p src; echo 'hello, friend' > src/greet.txt ;;\n\
         *) grep -q 'see src/greet.txt' README.md || echo \"see src/greet.txt\" >> README.md ;;\nesac\n",
    )
    .unwrap();
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    Case {
        repo,
        home,
        run_dir,
        agent_cmd,
        workspace,
    }
}

fn args<'a>(c: &'a Case, verb: &'a str) -> Vec<&'a str> {
    let mut args = vec!["--sandbox", "off"];
    if c.workspace == "pool" {
        args.extend(["-c", "runner.step_workspace=pool"]);
    }
    args.extend([
        verb,
        c.run_dir.to_str().unwrap(),
        "--agent-cmd",
        &c.agent_cmd,
        "--json",
    ]);
    args
}

fn spawn(c: &Case) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args(c, "run"))
        .current_dir(c.repo.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", c.home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// What a finished run leaves: the step statuses, the work branch's tree, and
/// how many step commits each step has on it.
fn outcome(c: &Case) -> (Value, String, Vec<(String, usize)>) {
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(c.run_dir.join("stage.json")).unwrap())
            .unwrap();
    let statuses = json!(
        stage["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| json!([s["step_id"], s["status"]]))
            .collect::<Vec<_>>()
    );
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(c.run_dir.join("planning.json")).unwrap())
            .unwrap();
    let work = planning["work_branch"].as_str().unwrap().to_string();
    let tree = c.repo.git(&["rev-parse", &format!("{work}^{{tree}}")]);
    let log = c.repo.git(&[
        "log",
        "--format=%(trailers:key=Dandori-Step,valueonly)",
        &format!("main..{work}"),
    ]);
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for l in log.lines().map(str::trim).filter(|l| !l.is_empty()) {
        *counts.entry(l.to_string()).or_default() += 1;
    }
    (
        statuses,
        tree.trim().to_string(),
        counts.into_iter().collect(),
    )
}

fn finish(c: &Case) {
    let o = dandori(&args(c, "resume"), c.repo.path(), c.home.path(), &[]);
    assert!(
        o.status.success(),
        "resume: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn is_main(p: &Path) -> bool {
    let out = Command::new("git")
        .args(["branch", "--show-current"])
        .current_dir(p)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "main"
}

/// Pinned to `runner.step_workspace: pool`: the pool worktrees' own kill
/// points (a worktree filled, moved, removed).
#[test]
fn a_run_killed_anywhere_resumes_to_the_same_end_in_pool_worktrees() {
    killed_anywhere("pool");
}

/// The same with the default step workspaces (`auto`: copy-on-write where
/// overlayfs mounts, the pool elsewhere): a kill ends the workspace's mount with
/// its holder; resume mounts a killed step's layers again.
#[test]
fn a_run_killed_anywhere_resumes_to_the_same_end_in_the_default_workspaces() {
    killed_anywhere("default");
}

fn killed_anywhere(workspace: &'static str) {
    // The uninterrupted run, timed.
    let reference = case(workspace);
    let start = Instant::now();
    let status = spawn(&reference).wait().unwrap();
    let total = start.elapsed();
    assert!(status.success(), "the uninterrupted run failed");
    let expected = outcome(&reference);
    assert!(
        expected
            .0
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s[1] == "done"),
        "{expected:?}"
    );
    assert!(
        expected.2.iter().any(|(step, n)| step == "S01" && *n >= 1),
        "step commits carry their trailer: {expected:?}"
    );
    // Kills spread over the whole run (from the first millisecond to the end).
    let points = 12;
    for i in 0..points {
        let at = total.mul_f64(f64::from(i) / f64::from(points)) + Duration::from_millis(20);
        let c = case(workspace);
        let mut child = spawn(&c);
        std::thread::sleep(at);
        let _ = child.kill();
        let _ = child.wait();
        finish(&c);
        // A second resume changes nothing: proven steps never run twice.
        finish(&c);
        let got = outcome(&c);
        assert_eq!(got.0, expected.0, "killed at {at:?}: statuses");
        assert_eq!(
            got.1, expected.1,
            "killed at {at:?}: the work branch's files"
        );
        assert_eq!(got.2, expected.2, "killed at {at:?}: step commits");
        assert!(
            is_main(c.repo.path()),
            "killed at {at:?}: the checkout moved"
        );
    }
}
