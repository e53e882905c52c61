//! The first ten minutes: `dandori demo`, and the runner staying inside the plan's
//! own repository (repository.json, REPO_MISMATCH, runs_exclude, announcements).

use std::path::Path;
use std::process::{Command, Output};

fn dandori(cwd: &Path, args: &[&str]) -> Output {
    run_clean(Path::new(env!("CARGO_BIN_EXE_dandori")), cwd, args)
}

/// `bin` (a dandori binary, built or installed) run in `cwd` with a clean
/// environment: PATH for git, node and python; HOME in the test's directory.
pub(super) fn run_clean(bin: &Path, cwd: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", cwd)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", bin.display()))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(
        o.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn example() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/todo-api")
}

pub(super) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name();
        if name == ".dandori" || name == "__pycache__" || name == ".venv" {
            continue;
        }
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(&name));
        } else {
            std::fs::copy(e.path(), to.join(&name)).unwrap();
        }
    }
}

/// `dandori run RUN --executor none` without the environment sub-phase, from `cwd`.
fn run_none(cwd: &Path, run: &str) -> Output {
    dandori(
        cwd,
        &[
            "run",
            run,
            "--executor",
            "none",
            "-c",
            "planning.environment_setup.enabled=false",
        ],
    )
}

fn only_run_dir(repo: &Path) -> std::path::PathBuf {
    let dirs: Vec<_> = std::fs::read_dir(repo.join(".dandori/runs/RQ-001"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(dirs.len(), 1);
    dirs[0].clone()
}

#[test]
fn demo_runs_the_whole_loop_with_commits_and_a_report() {
    let tmp = tempfile::tempdir().unwrap();
    let o = dandori(tmp.path(), &["demo", "demo-repo"]);
    let (out, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "stdout:\n{out}\nstderr:\n{err}");
    let repo = tmp.path().join("demo-repo");
    let run_dir = only_run_dir(&repo);
    let planning: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let steps = planning["steps"].as_array().unwrap();
    let work = planning["work_branch"].as_str().unwrap();
    // One commit per step, each with its proof trailers, on the work branch.
    let log = git(
        &repo,
        &[
            "log",
            "--reverse",
            "--format=%s%n%(trailers:only)%x00",
            &format!("main..{work}"),
        ],
    );
    // One proof commit per step, with its trailers, on the work branch (parallel
    // steps may land in finishing order, joined by a merge commit).
    let mut proven: Vec<String> = log
        .split('\0')
        .map(str::trim)
        .filter(|c| c.contains("Dandori-Step: "))
        .map(|c| {
            assert!(c.contains("Dandori-Run: "), "{c}");
            let id = c
                .split("Dandori-Step: ")
                .nth(1)
                .unwrap()
                .lines()
                .next()
                .unwrap();
            assert!(c.starts_with(&format!("{id}: ")), "{c}");
            id.trim().to_string()
        })
        .collect();
    proven.sort();
    let mut ids: Vec<String> = steps
        .iter()
        .map(|s| s["step_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    assert_eq!(proven, ids, "{log}");
    // The scripted work is really there and the example's tests pass on it.
    git(&repo, &["checkout", "--quiet", work]);
    let models = std::fs::read_to_string(repo.join("todo/models.py")).unwrap();
    assert!(models.contains("class Priority"), "{models}");
    let unit = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests", "-t", "."])
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(unit.status.success(), "{}", text(&unit.stderr));
    assert!(
        text(&unit.stderr).contains("Ran 13 tests"),
        "{}",
        text(&unit.stderr)
    );
    // The report with both Mermaid charts; every step done.
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        report.contains("```mermaid\ngraph") || report.contains("```mermaid\nflowchart"),
        "{report}"
    );
    assert!(report.contains("gantt"), "{report}");
    let stage: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    for s in stage["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "done", "{s}");
    }
    // The terminal says what happened and what is next; the demo agent is labelled.
    assert!(out.contains("demo agent, scripted, no model"), "{out}");
    assert!(out.contains("Dandori-Step: S01"), "{out}");
    assert!(out.contains("next: cd "), "{out}");
    assert!(err.contains("git: creating branch"), "{err}");
    // The demo refuses to write into a directory that has something in it.
    let again = dandori(tmp.path(), &["demo", "demo-repo"]);
    assert_eq!(again.status.code(), Some(2));
    assert!(
        text(&again.stderr).contains("DEMO_DIR_NOT_EMPTY")
            && text(&again.stderr).contains("To start again: `rm -rf ")
            && text(&again.stderr).contains("` and run `dandori demo "),
        "{}",
        text(&again.stderr)
    );
}

/// The issue's first finding: a plan made for a directory inside another
/// repository (the dandori clone's `examples/todo-api`) is refused before any git
/// or environment action, from any current directory and with any --repo.
#[test]
fn a_plan_for_a_directory_inside_another_repository_is_refused_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let clone = tmp.path().join("clone");
    copy_dir(&example(), &clone.join("examples/todo-api"));
    std::fs::write(clone.join("README.md"), "outer\n").unwrap();
    git(&clone, &["init", "--quiet", "--initial-branch=main"]);
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "--quiet", "-m", "init"]);
    let o = dandori(
        &clone,
        &[
            "plan",
            "examples/todo-api/requests/RQ-001.md",
            "--repo",
            "examples/todo-api",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let run_dir = only_run_dir(&clone.join("examples/todo-api"));
    let record = std::fs::read_to_string(run_dir.join("repository.json")).unwrap();
    assert!(record.contains("todo-api"), "{record}");
    let head = git(&clone, &["rev-parse", "HEAD"]);
    for extra in [
        &[][..],
        &["--repo", "examples/todo-api"][..],
        &["--repo", "."][..],
    ] {
        let mut args = vec!["run", run_dir.to_str().unwrap(), "--executor", "none"];
        args.extend_from_slice(extra);
        let o = dandori(&clone, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(
            text(&o.stderr).contains("REPO_MISMATCH"),
            "{}",
            text(&o.stderr)
        );
    }
    // Nothing happened to the outer repository.
    assert_eq!(git(&clone, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        git(&clone, &["branch", "--format=%(refname:short)"]).trim(),
        "main"
    );
    assert_eq!(
        git(&clone, &["status", "--porcelain", "--untracked-files=all"]),
        ""
    );
    assert!(!clone.join(".venv").exists() && !clone.join(".dandori").exists());
}

/// A plan of its own repository runs from anywhere; a different --repo is refused;
/// the clean-worktree gate sees dirt beside the runs root (runs_exclude excludes
/// only the runs root, not its whole first path component).
#[test]
fn the_runner_uses_the_recorded_repository_and_sees_dirt_beside_the_runs_root() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("app");
    copy_dir(&example(), &repo);
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "--quiet", "-m", "init"]);
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "--quiet"]);
    let o = dandori(
        &repo,
        &[
            "plan",
            "requests/RQ-001.md",
            "--runs-root",
            "state/runs",
            "-c",
            "planning.environment_setup.enabled=false",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let runs = repo.join("state/runs/RQ-001");
    let run_dir = std::fs::read_dir(&runs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let run = run_dir.to_str().unwrap();
    // A different repository is refused.
    let o = dandori(
        tmp.path(),
        &[
            "run",
            run,
            "--executor",
            "none",
            "--repo",
            other.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("REPO_MISMATCH"),
        "{}",
        text(&o.stderr)
    );
    // Dirt beside the runs root (state/notes.txt) is dirt.
    std::fs::write(repo.join("state/notes.txt"), "mine\n").unwrap();
    let o = run_none(tmp.path(), run);
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("WORKTREE_DIRTY"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains("state/notes.txt"),
        "{}",
        text(&o.stderr)
    );
    // With the clean gate off in the plan, a dirty tree does not matter: the work
    // branch is created, never checked out, so nobody's uncommitted work is
    // carried onto it and the user's checkout and files stay as they are.
    let planning_path = run_dir.join("planning.json");
    let original = std::fs::read_to_string(&planning_path).unwrap();
    let mut plan: serde_json::Value = serde_json::from_str(&original).unwrap();
    plan["gates"]["require_clean_worktree"] = serde_json::json!(false);
    std::fs::write(&planning_path, serde_json::to_string_pretty(&plan).unwrap()).unwrap();
    let o = run_none(tmp.path(), run);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert_eq!(git(&repo, &["branch", "--show-current"]).trim(), "main");
    assert_eq!(
        std::fs::read_to_string(repo.join("state/notes.txt")).unwrap(),
        "mine\n"
    );
    std::fs::write(&planning_path, original).unwrap();
    // Clean again: from another directory, without --repo, the recorded repository is used.
    std::fs::remove_file(repo.join("state/notes.txt")).unwrap();
    let o = run_none(tmp.path(), run);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(!err.contains("checking out"), "{err}");
    assert_eq!(git(&repo, &["branch", "--show-current"]).trim(), "main");
    assert!(git(&repo, &["branch", "--list", "dandori/RQ-001/*"]).contains("dandori/RQ-001/"));
}
