//! `dandori run --agent claude|codex`, end to end with the real CLIs (installed
//! from npm by scripts/test.sh), inside the sandbox, against a scripted local model
//! server: the step's file is written and committed, its failing unit test is fixed
//! in the resumed session, usage lands in the trace, and the CLI sees its own key
//! and no other secret of the caller. By concern: each preset's write-and-fix
//! run (`presets.rs`), a kill mid-step and its resume (`kill_resume.rs`), the
//! agent budgets (`budgets.rs`).

mod budgets;
mod kill_resume;
mod presets;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::git::git;
use dandori_test_support::{FakeAgentModel, installed_cli};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const ANTHROPIC_KEY: &str = "sk-ant-preset-test-0123456789abcdef";
const OPENAI_KEY: &str = "sk-openai-preset-test-0123456789abcd";
const GEMINI_KEY: &str = "gemini-preset-test-0123456789abcdef";
const GITHUB_TOKEN: &str = "ghp_presetTestToken0123456789abcdefABCD";
const DB_URL: &str = "postgres://app:db-pass-preset-0123@db/x";

const BUGGY: &str = "def add(a, b):\n    return a - b\n";
const FIXED: &str = "def add(a, b):\n    return a + b\n";

struct Project {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    home: PathBuf,
    run_dir: PathBuf,
}

/// The installed CLI `name` and a fresh project; None (skipped, with a message)
/// when the CLI is not installed.
fn setup(name: &str) -> Option<(PathBuf, Project)> {
    let cli = installed_cli(name)?;
    assert!(
        bwrap_on_path(),
        "bwrap is not on PATH: run the tests with ./scripts/test.sh"
    );
    Some((cli, project()))
}

/// A shell command writing the environment of the agent's shell and of the CLI
/// itself (its parent) to `dump`.
fn env_dump(dump: &Path) -> String {
    format!(
        "{{ env; tr '\\0' '\\n' < /proc/$PPID/environ; }} > {}",
        dump.display()
    )
}

fn bwrap_on_path() -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|d| d.join("bwrap").is_file())
}

/// A repository whose one step writes `calc.py`; its unit test needs `add` right.
/// Not under /tmp (the sandbox's private /tmp would hide it).
fn project() -> Project {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let home = root.join("home");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    std::fs::write(
        repo.join("test_calc.py"),
        "import unittest\nimport calc\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "tests"]);
    let plan = json!({
        "version": "1.0", "request_id": "RQ-9", "run_id": "run-9",
        "created_at": "2026-01-01T00:00:00Z", "base_branch": "main",
        "work_branch": "dandori/RQ-9/run-9",
        "limits": {"max_diff_lines": 200, "timeout_sec": 300, "max_steps_per_run": 10, "max_autofix_cycles": 2},
        "context": {
            "summary": "Add calc.add", "constraints": [],
            "acceptance_criteria": [
                // The unit test fails on the base (no calc.py) and passes after:
                // red → green evidence (issue 20).
                {"id": "AC-01", "given": "calc.py", "when": "add(2, 3)", "then": "5",
                 "check": {"command": "python3 -m unittest -q test_calc"}},
                {"id": "AC-02", "given": "the tests", "when": "run", "then": "they still pass",
                 "type": "regression"},
                {"id": "AC-03", "given": "the change", "when": "committed", "then": "on the work branch",
                 "type": "nonfunctional"}
            ],
            "test_instructions": {}
        },
        "selected_environment": {
            "name": "python", "reason": "test plan", "detected_files": [],
            "setup_commands": [], "verification_commands": [], "expected_results": {},
            "root": ".", "package_manager": "pip"
        },
        "steps": [{
            "step_id": "S01", "title": "Write calc.add", "role": "implementer",
            "intent": "Write calc.py with add(a, b)",
            "scope": {"target_paths": ["calc.py"], "max_diff_lines": 50},
            "inputs": {"request_path": "requests/RQ-9.md"},
            "commands": {"unit": ["python3 -m unittest -q test_calc"]},
            "success_criteria": ["the unit test passes"],
            "links_to_ac": ["AC-01", "AC-02", "AC-03"],
            "expected_diff": {"lines_max": 50, "files_max": 5, "risk_level": "low"},
            "outputs": {"patch_path": "patches/S01.patch", "log_prefix": "logs/step.S01"}
        }],
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
                  "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 0},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    });
    let run_dir = repo.join(".dandori/runs/RQ-9/run-9");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("planning.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    Project {
        _dir: dir,
        repo,
        home,
        run_dir,
    }
}

/// `dandori run RUN_DIR --agent NAME` with the CLI's directory on PATH, the
/// caller's environment full of secrets, and `env` on top: (stdout, stderr), where
/// stderr has the progress lines.
fn dandori_run(
    p: &Project,
    cli: &Path,
    agent: &str,
    env: &[(&str, String)],
    model: &str,
) -> (String, String) {
    let out = dandori_command(p, cli, "run", agent, env, model)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `-c runner.step_workspace=…` when `DANDORI_TEST_STEP_WORKSPACE` is set (read
/// only): the presets' suite run in copy-on-write step workspaces.
fn step_workspace() -> Vec<String> {
    match std::env::var("DANDORI_TEST_STEP_WORKSPACE") {
        Ok(ws) => vec!["-c".to_string(), format!("runner.step_workspace={ws}")],
        Err(_) => Vec::new(),
    }
}

/// `dandori run|resume RUN_DIR --agent NAME …` ready to start.
fn dandori_command(
    p: &Project,
    cli: &Path,
    verb: &str,
    agent: &str,
    env: &[(&str, String)],
    model: &str,
) -> Command {
    let path = format!(
        "{}:{}",
        cli.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(BIN);
    cmd.arg(verb)
        .arg(&p.run_dir)
        .args(["--agent", agent, "--repo"])
        .arg(&p.repo)
        .args(["-c", &format!("runner.agent_model={model}")])
        .args(step_workspace())
        .current_dir(&p.repo)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &p.home)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .env("OPENAI_API_KEY", OPENAI_KEY)
        .env("GITHUB_TOKEN", GITHUB_TOKEN)
        .env("DATABASE_URL", DB_URL)
        .stdin(Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd
}

/// What the server saw, for a failing assertion's message.
fn seen(server: &FakeAgentModel) -> String {
    server
        .requests()
        .iter()
        .map(|r| {
            let keys: Vec<&String> = r
                .body
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            format!("{} {} {keys:?}", r.method, r.path)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn agent_log(p: &Project) -> String {
    std::fs::read_to_string(p.run_dir.join("logs/step.S01.agent.log")).unwrap_or_default()
}

fn trace(p: &Project) -> Vec<Value> {
    std::fs::read_to_string(p.run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn events<'a>(trace: &'a [Value], name: &str) -> Vec<&'a Value> {
    trace.iter().filter(|e| e["event"] == name).collect()
}

/// The second invocation was the fix attempt after the unit failure.
fn assert_fix_cycle(trace: &[Value]) {
    let actions: Vec<&Value> = events(trace, "STEP_ACTION")
        .into_iter()
        .map(|e| &e["data"]["feedback"])
        .collect();
    assert_eq!(
        actions,
        [&Value::Null, &json!({"autofix_cycle": 1})],
        "{actions:?}"
    );
}

/// `dandori metrics --json` over the project's runs.
fn metrics(p: &Project) -> Value {
    let out = Command::new(BIN)
        .args(["metrics", "--json", "--runs-root"])
        .arg(p.repo.join(".dandori/runs"))
        .current_dir(&p.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &p.home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn stage_step(p: &Project) -> Value {
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(p.run_dir.join("stage.json")).unwrap())
            .unwrap();
    stage["steps"][0].clone()
}

/// The work branch holds the fixed calc.py.
fn assert_committed(p: &Project, what: &str) {
    let show = Command::new("git")
        .args(["show", "dandori/RQ-9/run-9:calc.py"])
        .current_dir(&p.repo)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&show.stdout),
        FIXED,
        "{what}: calc.py on the work branch"
    );
}

/// The environment dump the model's command wrote: only the configured key.
fn assert_only_key(dump: &Path, key: &str) {
    let env = std::fs::read_to_string(dump)
        .unwrap_or_else(|e| panic!("no environment dump at {}: {e}", dump.display()));
    assert!(env.contains(key), "the CLI's own key is missing:\n{env}");
    for secret in [ANTHROPIC_KEY, OPENAI_KEY, GEMINI_KEY, GITHUB_TOKEN, DB_URL] {
        if secret != key {
            assert!(
                !env.contains(secret),
                "a secret of the caller reached the CLI:\n{env}"
            );
        }
    }
}
