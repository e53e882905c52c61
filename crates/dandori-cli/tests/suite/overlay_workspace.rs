//! `runner.step_workspace: overlay` end to end from the CLI, under each sandbox
//! mechanism: the agent works in a copy-on-write view of the user's checkout
//! (its prepared, ignored `.venv` visible without a copy), git works there, the
//! step's change is committed, and nothing reaches the user's checkout. Where
//! overlayfs cannot be mounted, `auto` (the default) runs the steps in pool
//! worktrees and says why.

use std::path::PathBuf;

use dandori_test_support::TempGitRepo;
use serde_json::Value;

use super::run_llm::dandori;

const REQUEST: &str = "---\nid: RQ-7\ntitle: Greet\n---\n# Greet\n\n\
## Requirements\n\n- Add `src/greet.txt` with a greeting\n\n\
## Acceptance criteria\n\n- Given the repository, when src/greet.txt is read, then it greets (check: `grep -q hello src/greet.txt`)\n";

/// `dandori plan` of the request in `repo`: the run directory it made.
fn plan_in(repo: &TempGitRepo, home: &std::path::Path) -> PathBuf {
    let o = dandori(
        &["plan", "requests/RQ-7.md", "--json"],
        repo.path(),
        home,
        &[],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    PathBuf::from(plan["run_dir"].as_str().unwrap())
}

fn run_in(mode: &str) {
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# demo\n"),
        (".gitignore", ".venv/\n"),
        ("src/hello.txt", "hello\n"),
        ("requests/RQ-7.md", REQUEST),
    ]);
    // An environment prepared once in the user's checkout (ignored).
    std::fs::create_dir_all(repo.path().join(".venv/bin")).unwrap();
    std::fs::write(repo.path().join(".venv/bin/tool"), "prepared\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let run_dir = plan_in(&repo, home.path());
    // The agent: reads the prepared environment, writes there and in the
    // change, asks git what changed, and tries to write the user's checkout.
    let agent = home.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nset -e\ncat .venv/bin/tool > seen-venv.txt\necho more > .venv/bin/made-by-step\n\
             mkdir -p src; echo 'hello, friend' > src/greet.txt\n\
             git status --porcelain --untracked-files=all > git-status.txt\n\
             git diff --stat HEAD >> git-status.txt\n\
             echo escaped > {}/escaped.txt 2>/dev/null || true\n",
            repo.path().display()
        ),
    )
    .unwrap();
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    let o = dandori(
        &[
            "--sandbox",
            mode,
            "-c",
            "runner.step_workspace=overlay",
            "run",
            run_dir.to_str().unwrap(),
            "--agent-cmd",
            &agent_cmd,
            "--json",
        ],
        repo.path(),
        home.path(),
        &[],
    );
    let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
    let ws: Value = trace
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "STEP_WORKSPACE")
        .unwrap();
    if ws["data"]["mechanism"] == "pool" {
        // No overlayfs here: the fallback is reported (the agent, which
        // expects the user's `.venv`, then fails in its pool worktree).
        assert!(ws["data"]["fallback_reason"].is_string(), "{mode}: {ws}");
        return;
    }
    assert_eq!(ws["data"]["mechanism"], "overlay", "{mode}: {ws}");
    assert!(
        o.status.success(),
        "{mode}: {}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let work = planning["work_branch"].as_str().unwrap();
    let show = |p: &str| repo.git(&["show", &format!("{work}:{p}")]);
    assert_eq!(show("src/greet.txt"), "hello, friend\n");
    assert_eq!(
        show("seen-venv.txt"),
        "prepared\n",
        "{mode}: the .venv was not visible"
    );
    let status = show("git-status.txt");
    assert!(status.contains("?? src/greet.txt"), "{mode}: {status}");
    assert!(!status.contains(".venv"), "{mode}: {status}");
    assert!(!status.contains(".dandori"), "{mode}: {status}");
    // Ignored files stay out of the commit; the user's checkout is untouched.
    let files = repo.git(&["ls-tree", "-r", "--name-only", work]);
    assert!(!files.contains(".venv"), "{mode}: {files}");
    assert!(!repo.path().join(".venv/bin/made-by-step").exists());
    assert!(
        !repo.path().join("escaped.txt").exists(),
        "{mode}: wrote the checkout"
    );
    assert!(!repo.path().join("src/greet.txt").exists());
    assert_eq!(repo.git(&["branch", "--show-current"]).trim(), "main");
}

#[test]
fn a_step_in_an_overlay_workspace_under_bubblewrap() {
    run_in("bubblewrap");
}

#[test]
fn a_step_in_an_overlay_workspace_under_the_builtin_fallback() {
    run_in("landlock");
}

/// Where overlayfs cannot be mounted (here: dandori started in a user namespace
/// without capabilities that may make no further user namespace, as on a host
/// that blocks unprivileged user namespaces), `auto` runs the steps
/// in pool worktrees and says so: the `STEP_WORKSPACE` event, `stage.json`'s
/// `step_workspace`, and a line of the report. The same run outside the wrapper
/// uses the copy-on-write workspaces.
#[test]
fn without_overlayfs_auto_falls_back_to_the_pool_and_says_so() {
    let run = |confined: bool| {
        let repo = TempGitRepo::with_files(&[
            ("README.md", "# demo\n"),
            ("src/hello.txt", "hello\n"),
            ("requests/RQ-7.md", REQUEST),
        ]);
        let home = tempfile::tempdir().unwrap();
        let run_dir = plan_in(&repo, home.path());
        let agent_cmd = "sh -c 'mkdir -p src; echo hello, friend > src/greet.txt'";
        let bin = env!("CARGO_BIN_EXE_dandori");
        let mut cmd = if confined {
            let mut c = std::process::Command::new("bwrap");
            c.args([
                "--dev-bind",
                "/",
                "/",
                "--unshare-user",
                "--disable-userns",
                "--cap-drop",
                "ALL",
                "--",
                bin,
            ]);
            c
        } else {
            std::process::Command::new(bin)
        };
        let o = cmd
            .args(["--sandbox", "off", "-c", "runner.step_workspace=auto"])
            .args(["run", run_dir.to_str().unwrap()])
            .args(["--agent-cmd", agent_cmd, "--json"])
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .output()
            .unwrap_or_else(|e| panic!("bwrap (bubblewrap, scripts/test.sh puts it on PATH): {e}"));
        assert!(
            o.status.success(),
            "confined {confined}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let trace = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
        let ws: Value = trace
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["event"] == "STEP_WORKSPACE")
            .unwrap();
        let stage: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
                .unwrap();
        let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
        let planning: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
                .unwrap();
        let work = planning["work_branch"].as_str().unwrap();
        assert_eq!(
            repo.git(&["show", &format!("{work}:src/greet.txt")]),
            "hello, friend\n"
        );
        let status = std::process::Command::new(bin)
            .args(["status", run_dir.to_str().unwrap()])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .output()
            .unwrap();
        let status = String::from_utf8_lossy(&status.stdout).into_owned();
        (
            ws["data"].clone(),
            stage["step_workspace"].clone(),
            format!("{report}\n{status}"),
        )
    };
    let (event, recorded, report) = run(true);
    assert_eq!(event["requested"], "auto", "{event}");
    assert_eq!(event["mechanism"], "pool", "{event}");
    let why = event["fallback_reason"].as_str().unwrap_or_default();
    assert!(!why.is_empty(), "{event}");
    assert_eq!(recorded["mechanism"], "pool", "{recorded}");
    assert_eq!(recorded["fallback_reason"], event["fallback_reason"]);
    // The report's lessons and `dandori status` say it.
    assert!(
        report.contains("copy-on-write workspaces not used") && report.contains(why),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "step workspaces: pool (copy-on-write not used: {why})"
        )),
        "{report}"
    );
    let (event, recorded, report) = run(false);
    let scratch = tempfile::tempdir().unwrap();
    if dandori_exec::overlay::available(scratch.path()).is_ok() {
        assert_eq!(event["mechanism"], "overlay", "{event}");
        assert!(event["fallback_reason"].is_null(), "{event}");
        assert_eq!(recorded["mechanism"], "overlay", "{recorded}");
        assert!(
            !report.contains("copy-on-write workspaces not used"),
            "{report}"
        );
    }
}

/// The default configuration (`runner.step_workspace` unset, so `auto`; the
/// sandbox's mechanism chosen by dandori) on a host with neither bubblewrap on
/// `PATH` nor overlayfs (dandori started in a user namespace without
/// capabilities that may make no further one): the commands run under the
/// Landlock fallback, the steps in pool worktrees, the run completes, and the
/// fallback is said in the `STEP_WORKSPACE` event, `stage.json` and the report.
#[test]
fn by_default_without_bubblewrap_or_overlayfs_a_run_completes_in_the_pool_under_landlock() {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let bwrap = std::env::split_paths(&path)
        .map(|d| d.join("bwrap"))
        .find(|p| p.is_file())
        .expect("bwrap (bubblewrap, scripts/test.sh puts it on PATH) confines dandori here");
    // dandori's own PATH: every directory holding a bwrap left out.
    let path =
        std::env::join_paths(std::env::split_paths(&path).filter(|d| !d.join("bwrap").exists()))
            .unwrap();
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# demo\n"),
        ("src/hello.txt", "hello\n"),
        ("requests/RQ-7.md", REQUEST),
    ]);
    let home = tempfile::tempdir().unwrap();
    let run_dir = plan_in(&repo, home.path());
    let bin = env!("CARGO_BIN_EXE_dandori");
    let confined = |args: &[&str]| {
        std::process::Command::new(&bwrap)
            .args(["--dev-bind", "/", "/", "--unshare-user", "--disable-userns"])
            .args(["--cap-drop", "ALL", "--", bin])
            .args(args)
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", &path)
            .env("HOME", home.path())
            .output()
            .unwrap()
    };
    let agent_cmd = "sh -c 'mkdir -p src; echo hello, friend > src/greet.txt'";
    let o = confined(&[
        "run",
        run_dir.to_str().unwrap(),
        "--agent-cmd",
        agent_cmd,
        "--json",
    ]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{out}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["summary"]["goal_achieved"], Value::Bool(true), "{v:#}");
    let trace: Vec<Value> = std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let event = |name: &str| {
        trace
            .iter()
            .find(|e| e["event"] == name)
            .unwrap_or_else(|| {
                let names: Vec<&Value> = trace.iter().map(|e| &e["event"]).collect();
                panic!("no {name} in the trace: {names:?}")
            })["data"]
            .clone()
    };
    // The run's first event after planning (the plan left a stage: a resume).
    let sandbox = event("EXECUTION_RESUME")["sandbox"].clone();
    assert_eq!(sandbox["kind"], "landlock", "{sandbox}");
    let ws = event("STEP_WORKSPACE");
    assert_eq!(ws["requested"], "auto", "{ws}");
    assert_eq!(ws["mechanism"], "pool", "{ws}");
    let why = ws["fallback_reason"].as_str().unwrap_or_default();
    assert!(!why.is_empty(), "{ws}");
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    assert_eq!(stage["step_workspace"], ws, "{stage:#}");
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        report.contains(&format!(
            "runner.step_workspace: auto: copy-on-write workspaces not used ({why}); steps ran in pool worktrees"
        )),
        "{report}"
    );
    // The step's work is on the run's branch; the user's checkout is untouched.
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let work = planning["work_branch"].as_str().unwrap();
    assert_eq!(
        repo.git(&["show", &format!("{work}:src/greet.txt")]),
        "hello, friend\n"
    );
    assert!(!repo.path().join("src/greet.txt").exists());
    assert_eq!(repo.git(&["branch", "--show-current"]).trim(), "main");
}
