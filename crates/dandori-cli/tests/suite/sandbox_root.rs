//! The sandbox where CI jobs and containers run dandori: as root. Each escape
//! an attacker tried (unmounting the read-only binds or the fresh /proc,
//! remounting `/` writable, reading other processes' environments, entering the
//! host's network namespace, ptrace, reading a sibling project's `.env` or the
//! user's home, writing outside) must fail under both mechanisms, while what
//! tests legitimately need keeps working: a server on 127.0.0.1, the prepared
//! environment (a virtual environment, `node_modules`, a Rust toolchain) seen
//! from parallel steps in pool worktrees. An `--agent-cmd` agent sees only the
//! allow-listed variables.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::git::git;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const API_KEY: &str = "sk-root-test-key-0123456789abcdef";
const SIBLING: &str = "sibling-project-db-password-4711";
const HISTORY: &str = "history-line-with-a-secret-9876";

const MECHANISMS: [&str; 2] = ["bubblewrap", "landlock"];

struct World {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    sibling: PathBuf,
    home: PathBuf,
}

/// Not under /tmp (bubblewrap's private /tmp would hide it anyway): a repository,
/// a sibling project with a `.env`, and a home with history and an SSH key.
fn world() -> World {
    world_in(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
}

fn world_in(dir: tempfile::TempDir) -> World {
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let sibling = root.join("srv-app");
    let home = root.join("home");
    for d in [&repo, &sibling, &home.join(".ssh")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(sibling.join(".env"), format!("DB_PASSWORD={SIBLING}\n")).unwrap();
    std::fs::write(home.join(".bash_history"), format!("{HISTORY}\n")).unwrap();
    std::fs::write(home.join(".ssh/id_rsa"), "PRIVATE KEY MATERIAL\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    std::fs::write(repo.join("README.md"), "# r\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    World {
        _dir: dir,
        repo,
        sibling,
        home,
    }
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn require_bwrap() {
    assert!(
        on_path("bwrap").is_some(),
        "bwrap is not on PATH: run the tests with ./scripts/test.sh, which unpacks it into target/test-tools"
    );
}

/// `dandori env exec --sandbox MODE -- sh -c LINE`, with the API key in
/// dandori's own environment.
fn exec(w: &World, mode: &str, line: &str) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["env", "exec", "--sandbox", mode, "--repo"])
        .arg(&w.repo)
        .args(["--", "sh", "-c", line])
        .env("HOME", &w.home)
        .env("OPENAI_API_KEY", API_KEY)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn escapes_fail_under_both_mechanisms_whoever_runs_dandori() {
    require_bwrap();
    let w = world();
    let outside = w.repo.parent().unwrap().join("written-outside.txt");
    let python = on_path("python3").expect("python3").display().to_string();
    let dot_env = w.sibling.join(".env").display().to_string();
    let git_dir = w.repo.join(".git").display().to_string();
    for mode in MECHANISMS {
        // No capability but, for root, the override of file modes (bit 1,
        // CAP_DAC_OVERRIDE: root's own files whatever their modes).
        let (code, text) = exec(&w, mode, "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status");
        assert_eq!(code, 0, "[{mode}] {text}");
        let expected = if super::running_as_root() {
            "0000000000000002"
        } else {
            "0000000000000000"
        };
        assert_eq!(
            text.lines().filter(|l| l.ends_with(expected)).count(),
            3,
            "[{mode}] capabilities inside: {text}"
        );
        // Each line must fail; none may print a secret or leave a file outside.
        let hostile = [
            "umount -l /proc && cat /proc/*/environ".to_string(),
            "mount -o remount,bind,rw /".to_string(),
            format!("umount {git_dir} && git config core.hooksPath /tmp/x"),
            "umount -l /tmp".to_string(),
            "unshare -r true".to_string(),
            "nsenter --net=/proc/1/ns/net true".to_string(),
            format!("cat {dot_env}"),
            "cat ~/.bash_history".to_string(),
            "cat ~/.ssh/id_rsa".to_string(),
            format!("echo x > {}", outside.display()),
            format!(
                "{python} -c \"import ctypes, os, sys; r = ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0); sys.exit(0 if r == 0 else 1)\""
            ),
        ];
        // A clone under /tmp or /var/tmp puts `outside` where bubblewrap shows a
        // private, empty temporary directory: the write lands there and is gone
        // with the sandbox (checked below: nothing on the host), so its exit code
        // says nothing.
        let private_tmp = outside.starts_with("/tmp") || outside.starts_with("/var/tmp");
        for line in &hostile {
            let (code, text) = exec(&w, mode, line);
            let write_outside = line.starts_with("echo x > ");
            if !(write_outside && private_tmp && mode == "bubblewrap") {
                assert_ne!(code, 0, "[{mode}] `{line}` succeeded: {text}");
            }
            for secret in [API_KEY, SIBLING, HISTORY, "PRIVATE KEY MATERIAL"] {
                assert!(!text.contains(secret), "[{mode}] `{line}` leaked: {text}");
            }
        }
        assert!(!outside.exists(), "[{mode}] wrote outside");
        // No process outside the sandbox is visible, and none inside holds the key.
        let (_, text) = exec(&w, mode, "cat /proc/[0-9]*/environ | tr '\\0' '\\n'");
        assert!(!text.contains(API_KEY), "[{mode}] {text}");
        let (code, text) = exec(
            &w,
            mode,
            "ls /proc | grep -cE '^[0-9]+$'; ls / | tr '\\n' ' '",
        );
        assert_eq!(code, 0, "[{mode}] {text}");
        let visible: u32 = text
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .parse()
            .unwrap_or(999);
        assert!(visible < 10, "[{mode}] {visible} processes visible: {text}");
        // The .git directory is still read-only.
        let config = std::fs::read_to_string(w.repo.join(".git/config")).unwrap();
        assert!(!config.contains("hooksPath"), "[{mode}] {config}");
    }
}

#[test]
fn a_server_on_loopback_works_inside_both_mechanisms() {
    require_bwrap();
    let w = world();
    let python = on_path("python3").expect("python3").display().to_string();
    let script = "import threading, http.server, urllib.request\n\
s = http.server.HTTPServer(('127.0.0.1', 0), http.server.SimpleHTTPRequestHandler)\n\
threading.Thread(target=s.serve_forever, daemon=True).start()\n\
print('status', urllib.request.urlopen('http://127.0.0.1:%d/' % s.server_port).status)\n";
    std::fs::write(w.repo.join("serve.py"), script).unwrap();
    for mode in MECHANISMS {
        let (code, text) = exec(&w, mode, &format!("{python} serve.py"));
        assert_eq!(code, 0, "[{mode}] {text}");
        assert!(text.contains("status 200"), "[{mode}] {text}");
    }
}

/// A plan of three independent steps (so they run in parallel pool worktrees)
/// whose unit commands need the environment prepared in the repository: the
/// virtual environment's `python`, a package of `node_modules`, the Rust
/// toolchain of the home.
fn environment_project() -> (World, PathBuf, PathBuf) {
    // Under /tmp, where CI jobs and tests keep their checkouts: bubblewrap's
    // private /tmp hid the repository's `.venv` from the pool worktrees.
    let w = world_in(tempfile::tempdir().unwrap());
    let repo = &w.repo;
    let ctl = w.repo.parent().unwrap().join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::create_dir_all(repo.join("vendor/dep")).unwrap();
    std::fs::write(repo.join("vendor/dep/index.js"), "module.exports = 42;\n").unwrap();
    std::fs::write(
        repo.join("Cargo.toml"),
        "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::write(
        repo.join("src/lib.rs"),
        "pub fn one() -> u8 { 1 }\n#[test]\nfn it_is_one() { assert_eq!(one(), 1); }\n",
    )
    .unwrap();
    std::fs::write(repo.join(".gitignore"), ".venv/\nnode_modules/\ntarget/\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "project"]);
    std::fs::write(
        ctl.join("agent.sh"),
        "#!/bin/sh\nset -e\nmkdir -p \"work/$1\"\necho \"done $1\" > \"work/$1/out.txt\"\n",
    )
    .unwrap();
    let step = |id: &str, unit: &str| {
        json!({
            "step_id": id, "title": format!("Write {id}"), "role": "implementer",
            "intent": format!("Write the files of {id}"),
            "scope": {"target_paths": [format!("work/{id}")], "max_diff_lines": 50},
            "inputs": {"request_path": "requests/RQ-7.md"},
            "commands": {"unit": [unit]},
            "success_criteria": ["files exist"],
            "links_to_ac": ["AC-01", "AC-02", "AC-03"],
            "expected_diff": {"lines_max": 50, "files_max": 5, "risk_level": "low"},
            "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
        })
    };
    let plan = json!({
        "version": "1.0", "request_id": "RQ-7", "run_id": "run-7",
        "created_at": "2026-01-01T00:00:00Z", "base_branch": "main",
        "work_branch": "dandori/RQ-7/run-7",
        "limits": {"max_diff_lines": 200, "timeout_sec": 300, "max_steps_per_run": 10, "max_autofix_cycles": 0},
        "context": {
            "summary": "Three independent steps", "constraints": [],
            "acceptance_criteria": [
                {"id": "AC-01", "given": "g", "when": "w", "then": "t1"},
                {"id": "AC-02", "given": "g", "when": "w", "then": "t2"},
                {"id": "AC-03", "given": "g", "when": "w", "then": "t3"}
            ],
            "test_instructions": {}
        },
        "selected_environment": {
            "name": "python", "reason": "test plan", "detected_files": [],
            "setup_commands": [
                "python3 -m venv --without-pip .venv",
                "mkdir -p node_modules && cp -r vendor/dep node_modules/dep"
            ],
            "verification_commands": [], "expected_results": {}, "root": ".",
            "package_manager": "pip"
        },
        "steps": [
            step("S01", "python -c \"import sys; assert sys.prefix.endswith('.venv'), sys.prefix\""),
            // CommonJS, and ESM, which reads no NODE_PATH: the workspace's own
            // `node_modules/` links into the environment tree.
            step("S02", "node -e \"process.exit(require('dep') === 42 ? 0 : 1)\" && node --input-type=module -e \"import d from 'dep'; process.exit(d === 42 ? 0 : 1)\""),
            step("S03", "cargo test --offline -q"),
        ],
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
                  "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 0},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    });
    let run_dir = repo.join(".dandori/runs/RQ-7/run-7");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("planning.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    (w, run_dir, ctl)
}

fn run(
    w: &World,
    run_dir: &Path,
    agent_cmd: &str,
    mode: &str,
    extra: &[&str],
    home: Option<&Path>,
) -> (Value, String) {
    // By default the real home: its toolchains (cargo, rustup) are what the steps use.
    let home = home
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap_or_default()));
    let out = Command::new(BIN)
        .arg("run")
        .arg(run_dir)
        .args(["--executor", "command", "--agent-cmd", agent_cmd, "--json"])
        .args(["--sandbox", mode, "--repo"])
        .arg(&w.repo)
        .args(extra)
        .current_dir(&w.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("OPENAI_API_KEY", API_KEY)
        .env("GITHUB_TOKEN", "ghp_rootTestToken0123456789abcdefABCD")
        .env("DATABASE_URL", "postgres://app:db-pass-0123456789@db/x")
        .env("MY_PROJECT_SETTING", "not-for-the-agent")
        .env("ANTHROPIC_API_KEY", "sk-ant-allowed-0123456789")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: exit {:?}\nstdout: {}\nstderr: {stderr}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (v, stderr)
}

#[test]
fn parallel_steps_see_the_prepared_environment_under_both_mechanisms() {
    require_bwrap();
    assert!(on_path("cargo").is_some() && on_path("node").is_some());
    for mode in MECHANISMS {
        let (w, run_dir, ctl) = environment_project();
        let agent = format!("sh {} {{step_id}}", ctl.join("agent.sh").display());
        let (v, stderr) = run(&w, &run_dir, &agent, mode, &[], None);
        let stage: Value =
            serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
                .unwrap();
        let statuses: Vec<(String, String)> = stage["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["step_id"].as_str().unwrap_or("").to_string(),
                    s["status"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let logs: String = ["S01", "S02", "S03"]
            .iter()
            .map(|s| {
                std::fs::read_to_string(run_dir.join(format!("logs/step.{s}.unit.log")))
                    .unwrap_or_default()
            })
            .collect();
        assert!(
            logs.contains("test result: ok. 1 passed"),
            "[{mode}] {logs}"
        );
        assert_eq!(
            statuses,
            vec![
                ("S01".to_string(), "done".to_string()),
                ("S02".to_string(), "done".to_string()),
                ("S03".to_string(), "done".to_string()),
            ],
            "[{mode}] {v}\n{stderr}\n{logs}"
        );
        // Prepared in the environment tree; nothing in the user's checkout
        // (not even an ignored `.venv`) and `.git/info/exclude` untouched.
        let tree = w.repo.join(".git/dandori/environment/tree");
        assert!(tree.join(".venv/bin/python").exists(), "[{mode}]");
        assert!(tree.join("node_modules/dep/index.js").is_file(), "[{mode}]");
        assert!(!w.repo.join(".venv").exists() && !w.repo.join("node_modules").exists());
        let status = git(&w.repo, &["status", "--porcelain", "--ignored"]);
        let outside: Vec<&str> = status
            .lines()
            .filter(|l| !l.get(3..).unwrap_or("").starts_with(".dandori/"))
            .collect();
        assert!(outside.is_empty(), "[{mode}] {status}");
        let exclude = std::fs::read_to_string(w.repo.join(".git/info/exclude")).unwrap_or_default();
        assert!(!exclude.contains("venv"), "[{mode}] {exclude}");
        // The links never reached a commit.
        let files = git(
            &w.repo,
            &["ls-tree", "-r", "--name-only", "dandori/RQ-7/run-7"],
        );
        assert!(!files.contains("node_modules"), "[{mode}] {files}");
    }
}

#[test]
fn an_agent_command_sees_only_the_allow_listed_variables() {
    require_bwrap();
    for mode in MECHANISMS {
        let (w, run_dir, ctl) = environment_project();
        std::fs::write(
            ctl.join("env-agent.sh"),
            "#!/bin/sh\nset -e\nenv > \"$(dirname \"$2\")/agent-env.$1.txt\"\nmkdir -p \"$HOME/.gemini\"\necho \"$1\" > \"$HOME/.gemini/$1\"\n! cat \"$HOME/.claude/projects/other/t.jsonl\" 2>/dev/null\necho \"$1\" > \"$HOME/.config/my-agent/$1\"\nmkdir -p \"work/$1\"\necho x > \"work/$1/out.txt\"\n",
        )
        .unwrap();
        let agent = format!(
            "sh {} {{step_id}} {{prompt_file}}",
            ctl.join("env-agent.sh").display()
        );
        // The agent's own state (`~/.gemini`) lives in the run's home, never in
        // the user's; another project's transcript in the user's `~/.claude` is
        // not shown; a directory named by `runner.agent_state` is the user's
        // explicit choice and stays writable in the user's home.
        for d in [".gemini", ".config/my-agent", ".claude/projects/other"] {
            std::fs::create_dir_all(w.home.join(d)).unwrap();
        }
        std::fs::write(
            w.home.join(".claude/projects/other/t.jsonl"),
            "another project's session\n",
        )
        .unwrap();
        let (v, stderr) = run(
            &w,
            &run_dir,
            &agent,
            mode,
            &[
                "-c",
                "runner.agent_env=[ANTHROPIC_API_KEY]",
                "-c",
                "runner.agent_state=[.config/my-agent]",
            ],
            Some(&w.home),
        );
        let dump = walk_find(&run_dir, "agent-env.S01.txt")
            .unwrap_or_else(|| panic!("[{mode}] no env dump: {v}\n{stderr}"));
        let env = std::fs::read_to_string(dump).unwrap();
        assert!(
            env.lines()
                .any(|l| l == "ANTHROPIC_API_KEY=sk-ant-allowed-0123456789"),
            "[{mode}] the listed credential is missing:\n{env}"
        );
        assert!(
            w.home.join(".config/my-agent/S01").is_file(),
            "[{mode}] the agent could not write its runner.agent_state: {v}\n{stderr}"
        );
        assert!(
            run_dir.join("home/.gemini/S01").is_file(),
            "[{mode}] the agent's state is not in the run's home: {v}\n{stderr}"
        );
        assert!(
            !w.home.join(".gemini/S01").exists(),
            "[{mode}] the agent wrote the user's ~/.gemini"
        );
        assert!(
            env.lines().any(|l| l.starts_with("PATH=")),
            "[{mode}] {env}"
        );
        for name in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "DATABASE_URL",
            "MY_PROJECT_SETTING",
        ] {
            assert!(
                !env.lines().any(|l| l.starts_with(&format!("{name}="))),
                "[{mode}] {name} reached the agent:\n{env}"
            );
        }
    }
}

fn walk_find(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
        if p.is_dir()
            && let Some(f) = walk_find(&p, name)
        {
            return Some(f);
        }
    }
    None
}

#[test]
fn sandbox_check_says_what_works_here_and_why_not() {
    require_bwrap();
    let out = Command::new(BIN)
        .args(["sandbox", "check", "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["probes"][0]["mechanism"], "bubblewrap");
    assert_eq!(v["probes"][0]["works"], true, "{v}");
    assert_eq!(v["probes"][1]["works"], true, "{v}");
    assert_eq!(v["chosen"], "sandbox: bubblewrap");
    assert!(
        v["denied_syscalls"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "setns"),
        "{v}"
    );
    // Without bwrap on PATH, bubblewrap's probe names the reason; forced to it,
    // commands would be refused (exit 1). An empty PATH: a machine may have
    // bubblewrap in /usr/bin.
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(BIN)
        .args(["sandbox", "check", "--json", "--sandbox", "bubblewrap"])
        .env("PATH", empty.path())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(
        v["probes"][0]["reason"]
            .as_str()
            .unwrap_or("")
            .contains("not found"),
        "{v}"
    );
}
