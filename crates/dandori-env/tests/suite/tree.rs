//! A run's environment is prepared in dandori's environment tree
//! (`.git/dandori/environment/tree`), never in the user's working tree: the
//! tree is made, moved with the base, repaired after a kill, reused across runs,
//! and the clone's `git status --ignored` and `.git/info/exclude` stay as they were.

use std::path::Path;
use std::process::Command;

use dandori_config::EnvironmentSetupConfig;
use dandori_env::records::OverallStatus;
use dandori_env::{phase, tree};
use pretty_assertions::assert_eq;

use super::{git_init, system_env};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// What a run may not change in the user's clone.
fn clone_state(repo: &Path) -> (String, Option<String>) {
    (
        git(repo, &["status", "--porcelain", "--ignored"]),
        std::fs::read_to_string(repo.join(".git/info/exclude")).ok(),
    )
}

#[test]
fn the_environment_tree_is_made_moved_and_repaired() {
    let repo = tempfile::tempdir().unwrap();
    let repo = repo.path();
    std::fs::write(repo.join("a.txt"), "one\n").unwrap();
    git_init(repo);
    let before = clone_state(repo);
    let env = system_env();
    let c1 = git(repo, &["rev-parse", "HEAD"]);
    let t = tree::prepare(repo, &c1, &env).unwrap();
    assert!(tree::is_managed(&t), "{}", t.display());
    assert!(t.starts_with(repo.canonicalize().unwrap().join(".git")));
    assert_eq!(std::fs::read_to_string(t.join("a.txt")).unwrap(), "one\n");
    // What a setup leaves: an environment (untracked) and a rewritten file.
    std::fs::create_dir_all(t.join(".venv")).unwrap();
    std::fs::write(t.join(".venv/marker"), "x").unwrap();
    std::fs::write(t.join("a.txt"), "rewritten\n").unwrap();
    let again = tree::prepare(repo, &c1, &env).unwrap();
    assert_eq!(again, t);
    assert_eq!(std::fs::read_to_string(t.join("a.txt")).unwrap(), "one\n");
    assert!(t.join(".venv/marker").is_file());
    // The base moves: the tree follows, the environment stays.
    std::fs::write(repo.join("a.txt"), "two\n").unwrap();
    git(repo, &["commit", "-qam", "two"]);
    let c2 = git(repo, &["rev-parse", "HEAD"]);
    tree::prepare(repo, &c2, &env).unwrap();
    assert_eq!(git(&t, &["rev-parse", "HEAD"]), c2);
    assert_eq!(std::fs::read_to_string(t.join("a.txt")).unwrap(), "two\n");
    assert!(t.join(".venv/marker").is_file());
    // A tree a kill cut short (no `.git` file yet) is made again.
    std::fs::remove_file(t.join(".git")).unwrap();
    tree::prepare(repo, &c2, &env).unwrap();
    assert_eq!(git(&t, &["rev-parse", "HEAD"]), c2);
    // The user's checkout: only the commit it made itself.
    assert_eq!(clone_state(repo), before);
    assert_eq!(
        tree::base_commit(repo, Path::new("/nonexistent-run"), &env).unwrap(),
        c2
    );
}

#[test]
fn a_run_sets_up_in_the_tree_and_reuses_it_across_runs() {
    let repo = tempfile::tempdir().unwrap();
    let repo = repo.path();
    std::fs::write(repo.join("app.py"), "print(1)\n").unwrap();
    git_init(repo);
    let before = clone_state(repo);
    // uv on PATH (scripts/test.sh): the installer decision finds it, so the
    // plan's commands run as they are.
    super::require_tool("uv");
    let env = dandori_exec::run::base_env();
    let runs = tempfile::tempdir().unwrap();
    let prepare = |run: &str| {
        let run_dir = runs.path().join("runs/req").join(run);
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(
            run_dir.join("planning.json"),
            serde_json::json!({
                "base_branch": "HEAD",
                "selected_environment": {
                    "name": "python", "reason": "test plan", "detected_files": ["app.py"],
                    "setup_commands": ["python3 -m venv --without-pip .venv"],
                    "verification_commands": [], "expected_results": {},
                    "root": ".", "package_manager": "pip",
                }
            })
            .to_string(),
        )
        .unwrap();
        phase::prepare_run(
            &EnvironmentSetupConfig::default(),
            &env,
            repo,
            &run_dir,
            None,
            &|_| {},
            None,
        )
        .unwrap()
    };
    let first = prepare("run1");
    assert_eq!(first.status, OverallStatus::Success, "{}", first.message);
    let t = first.prepared_in.clone();
    assert!(t.join(".venv/bin/python").exists());
    assert!(!repo.join(".venv").exists());
    assert_eq!(
        first.activation_env["VIRTUAL_ENV"],
        t.join(".venv").display().to_string()
    );
    assert!(first.activation_env["PATH"].starts_with(&t.join(".venv/bin").display().to_string()));
    let o = first.outcome.as_ref().unwrap();
    assert_eq!(o.setup_result.repo, t.display().to_string());
    assert!(!o.setup_result.reused);
    // The next run: the same fingerprint, nothing set up again.
    let second = prepare("run2");
    assert!(second.outcome.as_ref().unwrap().setup_result.reused);
    assert_eq!(second.prepared_in, t);
    assert_eq!(clone_state(repo), before);
}
