//! A run killed during the environment setup resumes: setup runs in dandori's
//! environment tree (`.git/dandori/environment/tree`), so the half-made `.venv`
//! is nowhere in the user's checkout (and `.git/info/exclude` is not written);
//! the resumed run sets up again over it; a dirty tree that is really dirty is
//! summarised, not listed file by file.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use dandori_test_support::TempGitRepo;
use serde_json::{Value, json};

use super::kill_run_at;
use super::run_llm::dandori;

fn plan(repo: &TempGitRepo, home: &Path, setup: &[&str]) -> PathBuf {
    let o = dandori(
        &["plan", "requests/RQ-3.md", "--json"],
        repo.path(),
        home,
        &[],
    );
    let plan: Value = serde_json::from_slice(&o.stdout).unwrap();
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let path = run_dir.join("planning.json");
    let mut planning: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    planning["selected_environment"] = json!({
        "name": "python", "reason": "test plan", "detected_files": [],
        "setup_commands": setup, "verification_commands": [], "expected_results": {},
        "root": ".", "package_manager": "pip",
    });
    std::fs::write(&path, serde_json::to_string_pretty(&planning).unwrap()).unwrap();
    run_dir
}

#[test]
fn a_kill_during_environment_setup_resumes() {
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# calc\n"),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "requests/RQ-3.md",
            "---\nid: RQ-3\ntitle: Double\n---\n# Double\n\nAdd a `double(x)` function to `calc.py`.\n",
        ),
    ]);
    let home = tempfile::tempdir().unwrap();
    let run_dir = plan(&repo, home.path(), &["python3 -m venv .venv", "sleep 6"]);
    // Killed once the venv is made and `sleep` runs.
    let tree = repo.path().join(".git/dandori/environment/tree");
    let venv = tree.join(".venv/pyvenv.cfg");
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).ok();
    kill_run_at(
        Command::new(env!("CARGO_BIN_EXE_dandori"))
            .args(["--sandbox", "off", "run"])
            .arg(&run_dir)
            .args(["--executor", "none", "--json"])
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path()),
        "the venv is made",
        Duration::from_secs(60),
        Duration::from_millis(300),
        || venv.is_file().then_some(()),
    );
    assert!(
        !tree.join(".venv/.gitignore").exists(),
        "killed before setup finished"
    );
    // The half-made venv is not in the user's checkout at all.
    assert!(!repo.path().join(".venv").exists());
    assert_eq!(
        repo.git(&[
            "status",
            "--porcelain",
            "--ignored",
            "--",
            ".",
            ":(exclude).dandori"
        ]),
        ""
    );
    assert_eq!(
        std::fs::read_to_string(repo.path().join(".git/info/exclude")).ok(),
        exclude
    );
    let o = dandori(
        &[
            "--sandbox",
            "off",
            "resume",
            run_dir.to_str().unwrap(),
            "--executor",
            "none",
            "--json",
        ],
        repo.path(),
        home.path(),
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains("WORKTREE_DIRTY"), "{err}");
    assert_eq!(
        o.status.code(),
        Some(3),
        "needs a model, as with executor none: {err}"
    );
    // The resumed setup finished in the tree, over the half-made venv.
    assert!(tree.join(".venv/.gitignore").is_file(), "{err}");
    assert!(!repo.path().join(".venv").exists());
    // Real dirt, a lot of it: summarised by directory.
    for i in 0..500 {
        std::fs::create_dir_all(repo.path().join("junk")).unwrap();
        std::fs::write(repo.path().join(format!("junk/f{i}.txt")), "x").unwrap();
    }
    let o = dandori(
        &[
            "--sandbox",
            "off",
            "resume",
            run_dir.to_str().unwrap(),
            "--executor",
            "none",
            "--json",
        ],
        repo.path(),
        home.path(),
        &[],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["reason_code"], "WORKTREE_DIRTY", "{v}");
    let m = v["message"].as_str().unwrap();
    assert!(m.contains("500 untracked file(s) under junk/"), "{m}");
    assert!(m.len() < 400, "{m}");
}

/// Issue 36: the first `run`'s choices (`--agent-cmd`, the agent model,
/// `--sandbox`) are written before the environment is set up, so a plain
/// `dandori resume` after a kill there runs the steps with the same agent
/// command under the same sandbox mode, rather than parking them for a model.
#[test]
fn a_plain_resume_after_a_kill_during_environment_setup_keeps_the_agent_command() {
    let repo = TempGitRepo::with_files(&[
        ("README.md", "# calc\n"),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        (
            "requests/RQ-3.md",
            "---\nid: RQ-3\ntitle: Double\n---\n# Double\n\nAdd a `double(x)` function to `calc.py`.\n",
        ),
    ]);
    let home = tempfile::tempdir().unwrap();
    let ctl = tempfile::tempdir().unwrap();
    let ran = ctl.path().join("ran");
    let script = ctl.path().join("agent.sh");
    std::fs::write(
        &script,
        format!(
            "echo \"$1\" >> {}\nprintf '\\n\\ndef double(x):\\n    return 2 * x\\n' >> calc.py\n",
            ran.display()
        ),
    )
    .unwrap();
    let agent = format!("sh {} {{step_id}}", script.display());
    let run_dir = plan(&repo, home.path(), &["python3 -m venv .venv", "sleep 6"]);
    let venv = repo
        .path()
        .join(".git/dandori/environment/tree/.venv/pyvenv.cfg");
    kill_run_at(
        Command::new(env!("CARGO_BIN_EXE_dandori"))
            .args(["--sandbox", "off", "run"])
            .arg(&run_dir)
            .args([
                "--agent-cmd",
                &agent,
                "-c",
                "runner.agent_model=m-1",
                "--json",
            ])
            .current_dir(repo.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path()),
        "the venv is made",
        Duration::from_secs(60),
        Duration::from_millis(300),
        || venv.is_file().then_some(()),
    );
    assert!(!ran.exists(), "killed before any step");
    // `dandori resume RUN_DIR`: nothing named.
    let o = dandori(
        &["resume", run_dir.to_str().unwrap(), "--json"],
        repo.path(),
        home.path(),
        &[],
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(ran.is_file(), "the agent command never ran: {err}");
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    // The resumed run's own record: the same agent command, model and sandbox
    // mode (`off`, though nothing on the resume's command line said so).
    assert_eq!(
        stage["executor"],
        json!({"kind": "command", "agent_cmd": agent, "agent_model": "m-1", "sandbox": "off"})
    );
    for s in stage["steps"].as_array().unwrap() {
        assert_ne!(s["reason_code"], "MODEL_NOT_CONFIGURED", "{s}");
    }
}
