//! `dandori run` / `dandori resume` end to end, including the kill test: the run is
//! SIGKILLed at every step boundary and in the middle of steps, then resumed, and
//! the final commits and stage equal those of an uninterrupted run.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dandori_test_support::git::git;
use dandori_test_support::plans::planning;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    run_dir: PathBuf,
    ctl: PathBuf,
    agent_cmd: String,
    /// `-c` settings every command of the fixture gets (none: the defaults).
    config: Vec<&'static str>,
}

fn step(id: &str, unit: Vec<String>, max_diff: u64) -> Value {
    json!({
        "step_id": id, "title": format!("Write {id}"), "role": "implementer",
        "intent": format!("Write the files of {id}"),
        "scope": {"target_paths": [format!("src/{id}")], "max_diff_lines": max_diff},
        "inputs": {"request_path": "requests/RQ-9.md"},
        "commands": {"unit": unit},
        "success_criteria": ["files exist"],
        "links_to_ac": ["AC-01", "AC-02", "AC-03"],
        "expected_diff": {"lines_max": max_diff, "files_max": 5, "risk_level": "low"},
        "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
    })
}

/// A repository with a three-step plan. S02 is too large at first and gets split
/// into two parts. The agent and the unit script stop (and say so in `ctl/reached`)
/// when they reach the point named in `ctl/killpoint`.
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let ctl = root.join("ctl");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&ctl).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let hold = format!(
        r#"hold() {{ if [ "$(cat "{c}/killpoint" 2>/dev/null)" = "$1" ]; then ps -o pgid= -p $$ | tr -d ' ' > "{c}/pid"; touch "{c}/reached"; sleep 60; fi; }}"#,
        c = ctl.display()
    );
    std::fs::write(
        ctl.join("agent.sh"),
        format!(
            r#"#!/bin/sh
set -e
{hold}
s="$1"; p=""
grep -q "part 1 of 2" "$2" && p=".p1"
grep -q "part 2 of 2" "$2" && p=".p2"
hold "start.$s$p"
mkdir -p "src/$s"
case "$s$p" in
  S02) seq 1 80 > src/S02/a.txt; seq 1 80 > src/S02/b.txt ;;
  S02.p1) seq 1 80 > src/S02/a.txt ;;
  S02.p2) seq 1 80 > src/S02/b.txt ;;
  *) echo "content of $s" > "src/$s/main.txt" ;;
esac
hold "mid.$s$p"
"#
        ),
    )
    .unwrap();
    std::fs::write(
        ctl.join("unit.sh"),
        // With `ctl/junk`, S01's unit command leaves 20 000 untracked files behind,
        // so the next move of its pool worktree (git clean) takes a while.
        format!(
            "#!/bin/sh\n{hold}\nif [ -n \"$DANDORI_BASELINE\" ]; then hold \"baseline.$1\"; else hold \"unit.$1\"; fi\nif [ -f \"{c}/junk\" ] && [ \"$1\" = S01 ]; then mkdir -p junk; (cd junk && seq 1 20000 | xargs touch); fi\ntest -d \"src/$1\"\n",
            c = ctl.display()
        ),
    )
    .unwrap();
    let unit = |id: &str| vec![format!("sh {}/unit.sh {id}", ctl.display())];
    let plan = planning(
        "RQ-9",
        "run-9",
        vec![
            step("S01", unit("S01"), 100),
            step("S02", vec![], 100),
            step("S03", unit("S03"), 100),
        ],
        120,
    );
    let run_dir = repo.join(".dandori/runs/RQ-9/run-9");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("planning.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    let agent_cmd = format!(
        "sh {} {{step_id}} {{prompt_file}}",
        ctl.join("agent.sh").display()
    );
    Fixture {
        _dir: dir,
        repo,
        run_dir,
        ctl,
        agent_cmd,
        config: Vec::new(),
    }
}

/// [`fixture`] with its steps pinned to pool worktrees
/// (`runner.step_workspace: pool`), for what is about the pool's own work.
fn pool_fixture() -> Fixture {
    let mut f = fixture();
    f.config = vec!["-c", "runner.step_workspace=pool"];
    f
}

fn dandori(f: &Fixture, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .args(&f.config)
        .arg("--repo")
        .arg(&f.repo)
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", f.ctl.to_string_lossy().as_ref())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

fn run_args(f: &Fixture) -> Vec<String> {
    vec![
        "run".into(),
        f.run_dir.to_string_lossy().into_owned(),
        "--executor".into(),
        "command".into(),
        "--agent-cmd".into(),
        f.agent_cmd.clone(),
        "--json".into(),
        // The scripted agent reports to a control directory outside the worktree,
        // which the sandbox forbids; the sandbox has its own suite (sandbox.rs).
        "--sandbox".into(),
        "off".into(),
    ]
}

/// What must be identical between runs: each commit's message and tree, and each
/// step's status and reason.
type Outcome = (Vec<(String, String)>, Vec<(String, String, Value)>);

fn outcome(f: &Fixture) -> Outcome {
    let log = git(
        &f.repo,
        &[
            "log",
            "--reverse",
            "--topo-order",
            "--format=%T%x1f%B%x1e",
            "main..dandori/RQ-9/run-9",
        ],
    );
    let commits = log
        .split('\x1e')
        .filter(|r| !r.trim().is_empty())
        .map(|r| {
            let (t, b) = r.trim_start().split_once('\x1f').unwrap();
            // Unit commands (in Dandori-Check trailers) name the fixture's temp dir.
            let b: Vec<&str> = b
                .trim()
                .split(' ')
                .map(|w| if w.starts_with("/tmp/") { "[tmp]" } else { w })
                .collect();
            (b.join(" "), t.to_string())
        })
        .collect();
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(f.run_dir.join("stage.json")).unwrap())
            .unwrap();
    let steps = stage["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["reason_code"].clone(),
            )
        })
        .collect();
    (commits, steps)
}

/// `dandori run --json` of the fixture's plan, which must exit 0: its summary.
fn run_ok(f: &Fixture) -> Value {
    let args = run_args(f);
    let out = dandori(f, &args.iter().map(String::as_str).collect::<Vec<_>>())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn run_json_prints_the_completion_summary() {
    let f = fixture();
    let v = run_ok(&f);
    assert_eq!(v["phase"], "completion");
    assert_eq!(v["status"], "completed");
    assert_eq!(v["summary"]["goal_achieved"], true);
    assert_eq!(v["summary"]["tasks_completed"], 3);
    let st: Vec<&str> = v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["status"].as_str().unwrap())
        .collect();
    assert_eq!(st, vec!["done", "done", "done"]);
    let (commits, _) = outcome(&f);
    let subjects: Vec<&str> = commits
        .iter()
        .map(|(m, _)| m.lines().next().unwrap())
        .collect();
    assert_eq!(
        subjects,
        vec![
            "S01: Write S01",
            "S02: Write S02 (part 1/2)",
            "S02: Write S02 (part 2/2)",
            "S03: Write S03"
        ]
    );
}

/// A plan made on a detached HEAD (a CI checkout, a bisect, a tag) has the
/// commit id as its base: the run branches from that commit.
#[test]
fn a_plan_on_a_detached_head_runs_from_its_commit() {
    let f = fixture();
    let head = git(&f.repo, &["rev-parse", "HEAD"]).trim().to_string();
    git(&f.repo, &["checkout", "-q", "--detach", "HEAD"]);
    let planning = f.run_dir.join("planning.json");
    let mut plan: Value =
        serde_json::from_str(&std::fs::read_to_string(&planning).unwrap()).unwrap();
    plan["base_branch"] = Value::String(head.clone());
    std::fs::write(&planning, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    run_ok(&f);
    let base = git(&f.repo, &["merge-base", &head, "dandori/RQ-9/run-9"]);
    assert_eq!(base.trim(), head);
}

#[test]
fn resume_without_a_stage_is_an_input_error() {
    let f = fixture();
    let out = dandori(
        &f,
        &[
            "resume",
            f.run_dir.to_str().unwrap(),
            "--json",
            "--sandbox",
            "off",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["reason_code"], "RUN_DIR_INVALID");
}

#[test]
fn killed_at_any_point_resume_ends_like_an_uninterrupted_run() {
    let reference = fixture();
    let args = run_args(&reference);
    let out = dandori(
        &reference,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected = outcome(&reference);
    assert_eq!(expected.0.len(), 4);

    let points = [
        "baseline.S01",
        "start.S01",
        "mid.S01",
        "unit.S01",
        "start.S02",
        "mid.S02",
        "start.S02.p1",
        "mid.S02.p1",
        "start.S02.p2",
        "mid.S02.p2",
        "start.S03",
        "mid.S03",
        "unit.S03",
    ];
    for point in points {
        let f = fixture();
        std::fs::write(f.ctl.join("killpoint"), point).unwrap();
        let args = run_args(&f);
        let mut child = dandori(&f, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !f.ctl.join("reached").exists() {
            assert!(Instant::now() < deadline, "{point}: never reached");
            if let Some(status) = child.try_wait().unwrap() {
                panic!("{point}: dandori exited ({status}) before the kill point");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // The agent is in its own process group and outlives dandori; end it too.
        let pid = std::fs::read_to_string(f.ctl.join("pid")).unwrap();
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", pid.trim())])
            .stderr(Stdio::null())
            .status();
        std::fs::remove_file(f.ctl.join("killpoint")).unwrap();

        assert_eq!(resume(&f, point), expected, "after a kill at {point}");
        // The interrupted step really ran again (its first attempt left no commit).
        let stage: Value =
            serde_json::from_str(&std::fs::read_to_string(f.run_dir.join("stage.json")).unwrap())
                .unwrap();
        let killed = &point[point.find('S').unwrap()..][..3];
        let attempts: Vec<u64> = stage["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["attempts"].as_u64().unwrap())
            .collect();
        // The baseline is in the run state once it completed (issue 20).
        assert_eq!(
            stage["baseline"]["runs"].as_array().map(Vec::len),
            Some(2),
            "{point}"
        );
        if point.starts_with("baseline.") {
            // Killed before any step: the baseline ran again, no step twice.
            assert_eq!(attempts, [1, 1, 1], "{point}");
            continue;
        }
        let idx = ["S01", "S02", "S03"]
            .iter()
            .position(|s| *s == killed)
            .unwrap();
        assert_eq!(attempts[idx], 2, "{point}: {attempts:?}");
        assert!(
            attempts
                .iter()
                .enumerate()
                .all(|(i, a)| i == idx || *a == 1),
            "{point}: {attempts:?}"
        );
    }
}

/// The outcome of an uninterrupted run of a fresh fixture.
fn reference_outcome() -> Outcome {
    outcome_of(fixture())
}

/// The outcome of an uninterrupted run of `reference`.
fn outcome_of(reference: Fixture) -> Outcome {
    let args = run_args(&reference);
    dandori(
        &reference,
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .output()
    .unwrap();
    outcome(&reference)
}

/// `dandori resume` of `f`, which must succeed; then its outcome.
fn resume(f: &Fixture, what: &str) -> Outcome {
    let out = dandori(
        f,
        &[
            "resume",
            f.run_dir.to_str().unwrap(),
            "--json",
            "--sandbox",
            "off",
        ],
    )
    .output()
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: resume failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    outcome(f)
}

/// `dandori run` of `f`, started and left running.
fn spawn_run(f: &Fixture) -> std::process::Child {
    let args = run_args(f);
    dandori(f, &args.iter().map(String::as_str).collect::<Vec<_>>())
        .spawn()
        .unwrap()
}

#[test]
fn killed_between_steps_resume_ends_like_an_uninterrupted_run() {
    // A kill right after a step's stage write: poll stage.json and kill as soon as
    // S01 is done (before, during or after S02 starts: all must resume the same).
    let expected = reference_outcome();
    for target in ["S01", "S02", "S03"] {
        let f = fixture();
        let mut child = spawn_run(&f);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < deadline, "{target}: never done");
            let done = std::fs::read_to_string(f.run_dir.join("stage.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .is_some_and(|s| {
                    s["steps"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .any(|x| x["step_id"] == target && x["status"] == "done")
                });
            if done || child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = child.kill();
        child.wait().unwrap();
        let out = dandori(
            &f,
            &[
                "resume",
                f.run_dir.to_str().unwrap(),
                "--json",
                "--sandbox",
                "off",
            ],
        )
        .output()
        .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{target}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(outcome(&f), expected, "after a kill once {target} was done");
    }
}

/// Pinned to `runner.step_workspace: pool`: the move of a pool worktree from
/// one step's base to the next is what is killed.
#[test]
fn killed_during_a_pool_worktree_move_resume_ends_like_an_uninterrupted_run() {
    let expected = outcome_of(pool_fixture());
    let f = pool_fixture();
    std::fs::write(f.ctl.join("junk"), "").unwrap();
    let mut child = spawn_run(&f);
    // S02 is marked running as its worker starts moving S01's worktree to S02's base.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        assert!(Instant::now() < deadline, "S02 never started");
        let running = std::fs::read_to_string(f.run_dir.join("stage.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|s| s["steps"][1]["status"] == "running");
        if running {
            break;
        }
        assert!(child.try_wait().unwrap().is_none(), "dandori ended early");
        std::thread::sleep(Duration::from_millis(2));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The move was cut short: what S01's unit command left is still (partly) there.
    let pool = std::fs::read_dir(f.run_dir.join("worktrees"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("pool-")
        })
        .unwrap();
    assert!(pool.join("junk").exists(), "the kill missed the move");
    // Let the orphaned `git clean` finish before resuming.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        resume(&f, "worktree move"),
        expected,
        "after a kill during a worktree move"
    );
}
