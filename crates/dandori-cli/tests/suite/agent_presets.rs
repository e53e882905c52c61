//! `dandori run --agent claude|codex`, end to end with the real CLIs (installed
//! from npm by scripts/test.sh), inside the sandbox, against a scripted local model
//! server: the step's file is written and committed, its failing unit test is fixed
//! in the resumed session, usage lands in the trace, and the CLI sees its own key
//! and no other secret of the caller.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::git::git;
use dandori_test_support::{FakeAgentModel, Turn, Wire, installed_cli};
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

#[test]
fn claude_preset_writes_fixes_in_the_resumed_session_and_records_usage() {
    let Some((claude, p)) = setup("claude") else {
        return;
    };
    let dump = p.run_dir.join("logs/claude-env.txt");
    let server = FakeAgentModel::start(
        Wire::Anthropic,
        vec![
            Turn::tool(
                "Bash",
                json!({"command": env_dump(&dump),
                       "description": "environment"}),
            ),
            Turn::tool(
                "Write",
                json!({"file_path": "{cwd}/calc.py", "content": BUGGY}),
            ),
            Turn::text("Wrote calc.py."),
            // The resumed session gets the failure and fixes it.
            Turn::tool("Read", json!({"file_path": "{cwd}/calc.py"})),
            Turn::tool(
                "Edit",
                json!({"file_path": "{cwd}/calc.py", "old_string": "a - b", "new_string": "a + b"}),
            ),
            Turn::text("Fixed add."),
        ],
    )
    .expect_api_key(ANTHROPIC_KEY);
    let (v, stderr) = dandori_run(
        &p,
        &claude,
        "claude",
        &[("ANTHROPIC_BASE_URL", server.origin())],
        "claude-sonnet-4-5",
    );
    let step = stage_step(&p);
    assert_eq!(
        step["status"],
        "done",
        "{v}\n{stderr}\n{step}\n{}\n{}",
        agent_log(&p),
        seen(&server)
    );
    server.assert_no_violations();
    assert_committed(&p, "claude");
    assert_eq!(server.remaining(), 0, "{stderr}");
    // The fix ran in the same session: its first request carries the first
    // session's turns and id.
    let turns = server.turns_served();
    let first_session = turns[0]
        .header("x-claude-code-session-id")
        .unwrap()
        .to_string();
    let fix = &turns[3];
    assert_eq!(
        fix.header("x-claude-code-session-id"),
        Some(first_session.as_str()),
        "the fix cycle started a new session"
    );
    assert!(
        fix.raw_body.contains("Wrote calc.py."),
        "the resumed request lacks the first session's turns"
    );
    assert!(
        fix.raw_body.contains("FAILED") || fix.raw_body.contains("AssertionError"),
        "the failure is not the next message"
    );
    let kept: Value = serde_json::from_str(
        &std::fs::read_to_string(p.run_dir.join("logs/step.S01.agent-session.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(kept["session_id"], first_session.as_str());
    // Progress: one line per tool call.
    for line in [
        "S01: Write calc.py",
        "S01: Read calc.py",
        "S01: Edit calc.py",
    ] {
        assert!(
            stderr.contains(line),
            "no progress line {line:?}:\n{stderr}"
        );
    }
    assert!(stderr.contains("agent: claude 2.1"), "{stderr}");
    // Usage: two invocations of three turns each, priced by Claude Code.
    let t = trace(&p);
    let calls = events(&t, "LLM_CALL");
    assert_eq!(calls.len(), 2, "{calls:?}");
    for c in &calls {
        let d = &c["data"];
        assert_eq!(d["agent"], "claude");
        assert_eq!(d["num_turns"], 3, "{d}");
        assert_eq!(d["usage"]["prompt_tokens"], 3 * (1200 + 24_000), "{d}");
        assert_eq!(d["usage"]["cache_read_tokens"], 3 * 24_000, "{d}");
        assert_eq!(d["usage"]["completion_tokens"], 3 * 80, "{d}");
        assert!(d["cost_usd"].as_f64().unwrap() > 0.0, "{d}");
        assert_eq!(d["session_id"], first_session.as_str());
    }
    assert_eq!(calls[1]["data"]["resumed"], true);
    assert_fix_cycle(&t);
    assert_only_key(&dump, ANTHROPIC_KEY);
    // The report and `dandori metrics` show the agent's usage and cost.
    let report = std::fs::read_to_string(p.run_dir.join("report.md")).unwrap();
    assert!(report.contains("## Agent usage"), "{report}");
    assert!(
        report.contains(&format!(
            "| S01 | claude | {first_session} (resumed) | 3 | 2 | 75600 / 240 |"
        )),
        "{report}"
    );
    let cost: f64 = calls
        .iter()
        .map(|c| c["data"]["cost_usd"].as_f64().unwrap())
        .sum();
    let m = metrics(&p);
    let a = &m["agents"]["claude"];
    assert_eq!(a["invocations"], 2, "{m}");
    assert_eq!(a["resumed"], 1, "{m}");
    assert_eq!(a["turns"], 6, "{m}");
    assert_eq!(a["tool_calls"], 4, "{m}");
    assert_eq!(a["input_tokens"], 6 * (1200 + 24_000), "{m}");
    assert!((a["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9, "{m}");
}

#[test]
fn codex_preset_writes_fixes_in_the_resumed_session_and_records_usage() {
    let Some((codex, p)) = setup("codex") else {
        return;
    };
    let dump = p.run_dir.join("logs/codex-env.txt");
    let server = FakeAgentModel::start(
        Wire::Responses,
        vec![
            Turn::tool("exec_command", json!({"cmd": env_dump(&dump)})),
            Turn::tool(
                "exec_command",
                json!({"cmd": format!("printf '{}' > calc.py", BUGGY.replace('\n', "\\n"))}),
            ),
            Turn::text("Wrote calc.py."),
            Turn::tool(
                "exec_command",
                json!({"cmd": "sed -i 's/a - b/a + b/' calc.py"}),
            ),
            Turn::text("Fixed add."),
        ],
    )
    .expect_api_key(OPENAI_KEY);
    let (v, stderr) = dandori_run(
        &p,
        &codex,
        "codex",
        &[("OPENAI_BASE_URL", server.base_url())],
        "gpt-5-codex",
    );
    let step = stage_step(&p);
    assert_eq!(
        step["status"],
        "done",
        "{v}\n{stderr}\n{step}\n{}\n{}",
        agent_log(&p),
        seen(&server)
    );
    server.assert_no_violations();
    assert_committed(&p, "codex");
    assert_eq!(server.remaining(), 0, "{stderr}");
    let turns = server.turns_served();
    let fix = &turns[3];
    assert!(
        fix.raw_body.contains("Wrote calc.py."),
        "the resumed request lacks the first session's turns"
    );
    assert!(
        stderr.contains("S01: Bash sed -i 's/a - b/a + b/' calc.py"),
        "{stderr}"
    );
    assert!(stderr.contains("agent: codex codex-cli 0.171"), "{stderr}");
    let t = trace(&p);
    let calls = events(&t, "LLM_CALL");
    assert_eq!(calls.len(), 2, "{calls:?}");
    let session = calls[0]["data"]["session_id"].as_str().unwrap().to_string();
    for c in &calls {
        let d = &c["data"];
        assert_eq!(d["agent"], "codex");
        assert_eq!(d["session_id"], session.as_str());
        assert!(
            d["usage"]["prompt_tokens"].as_u64().unwrap() >= 2 * 1200,
            "{d}"
        );
    }
    assert_eq!(calls[1]["data"]["resumed"], true);
    assert_fix_cycle(&t);
    assert_only_key(&dump, OPENAI_KEY);
}

#[test]
fn a_missing_agent_cli_fails_the_preflight_at_once_with_its_install_command() {
    let p = project();
    let out = Command::new(BIN)
        .arg("run")
        .arg(&p.run_dir)
        .args(["--agent", "gemini", "--json", "--repo"])
        .arg(&p.repo)
        .current_dir(&p.repo)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &p.home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["reason_code"], "PREFLIGHT_FAILED", "{v}");
    let message = v["message"].as_str().unwrap();
    assert!(
        message.contains("npm install -g @google/gemini-cli"),
        "{message}"
    );
    assert!(!p.run_dir.join("logs/step.S01.agent.log").exists());
    // Refused before the gates: no work branch was made.
    let branches = git(&p.repo, &["branch", "--list", "dandori/*"]);
    assert_eq!(branches.trim(), "", "{branches}");
}

/// SIGKILL to every process whose command line names `dir` (the sandbox of the
/// step's agent: bubblewrap takes the CLI with it).
fn kill_naming(dir: &Path) {
    let needle = dir.to_string_lossy().into_owned();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(&needle) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
        }
    }
}

/// `dandori run --agent AGENT` killed (with everything it started) while the
/// agent runs the script's first turn, a long command; then `dandori resume`
/// with `fix` scripted. The step ends done and committed; returns the session id
/// kept before the kill.
fn kill_then_resume(
    p: &Project,
    cli: &Path,
    agent: &str,
    server: &FakeAgentModel,
    env: &[(&str, String)],
    model: &str,
    fix: Vec<Turn>,
) -> String {
    let mut child = dandori_command(p, cli, "run", agent, env, model)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let session_file = p.run_dir.join("logs/step.S01.agent-session.json");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !(session_file.is_file() && server.turns_served().len() == 1) {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent never started: {}",
            agent_log(p)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // Let the CLI start the command, then kill everything.
    std::thread::sleep(std::time::Duration::from_millis(500));
    child.kill().unwrap();
    child.wait().unwrap();
    kill_naming(&p.run_dir);
    let kept: Value =
        serde_json::from_str(&std::fs::read_to_string(&session_file).unwrap()).unwrap();
    let session = kept["session_id"].as_str().unwrap().to_string();
    server.push(fix);
    let out = dandori_command(p, cli, "resume", agent, env, model)
        .output()
        .unwrap();
    let step = stage_step(p);
    assert_eq!(
        step["status"],
        "done",
        "{}\n{}\n{step}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        agent_log(p),
        seen(server)
    );
    server.assert_no_violations();
    assert_committed(p, &format!("resumed {agent}"));
    let t = trace(p);
    let calls = events(&t, "LLM_CALL");
    let last = &calls.last().unwrap()["data"];
    assert_eq!(last["resumed"], true, "{last}");
    assert_eq!(last["session_id"], session.as_str(), "{last}");
    session
}

#[test]
fn a_killed_run_resumes_the_claude_session_of_its_step() {
    let Some((claude, p)) = setup("claude") else {
        return;
    };
    // The agent is busy in a long command when dandori (and everything it
    // started) is killed.
    let server = FakeAgentModel::start(
        Wire::Anthropic,
        vec![Turn::tool(
            "Bash",
            json!({"command": "sleep 60", "description": "wait"}),
        )],
    )
    .expect_api_key(ANTHROPIC_KEY);
    let session = kill_then_resume(
        &p,
        &claude,
        "claude",
        &server,
        &[("ANTHROPIC_BASE_URL", server.origin())],
        "claude-sonnet-4-5",
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": "{cwd}/calc.py", "content": FIXED}),
            ),
            Turn::text("Wrote calc.py."),
        ],
    );
    let turns = server.turns_served();
    assert_eq!(turns.len(), 3, "{}", seen(&server));
    assert_eq!(
        turns[1].header("x-claude-code-session-id"),
        Some(session.as_str()),
        "the resumed run started a new session"
    );
    // Claude Code drops the interrupted tool call on resume and keeps the
    // conversation before it: the step's first prompt, then the new one.
    assert_eq!(
        turns[1]
            .raw_body
            .matches("You are working on step S01")
            .count(),
        2,
        "the resumed request lacks the killed session's prompt"
    );
}

#[test]
fn a_killed_run_resumes_the_codex_session_of_its_step() {
    let Some((codex, p)) = setup("codex") else {
        return;
    };
    let server = FakeAgentModel::start(
        Wire::Responses,
        vec![Turn::tool("exec_command", json!({"cmd": "sleep 60"}))],
    )
    .expect_api_key(OPENAI_KEY);
    let session = kill_then_resume(
        &p,
        &codex,
        "codex",
        &server,
        &[("OPENAI_BASE_URL", server.base_url())],
        "gpt-5-codex",
        vec![
            Turn::tool(
                "exec_command",
                json!({"cmd": format!("printf '{}' > calc.py", FIXED.replace('\n', "\\n"))}),
            ),
            Turn::text("Wrote calc.py."),
        ],
    );
    let turns = server.turns_served();
    assert_eq!(turns.len(), 3, "{}", seen(&server));
    assert!(
        turns[1].raw_body.contains(&session),
        "the resumed run started a new thread"
    );
    assert_eq!(
        turns[1]
            .raw_body
            .matches("You are working on step S01")
            .count(),
        2,
        "the resumed request lacks the killed thread's prompt"
    );
}

#[test]
fn gemini_preset_writes_and_fixes_in_a_fresh_session_when_its_resume_is_refused() {
    let Some((gemini, p)) = setup("gemini") else {
        return;
    };
    let dump = p.run_dir.join("logs/gemini-env.txt");
    let server = FakeAgentModel::start(
        Wire::Gemini,
        vec![
            Turn::tool("run_shell_command", json!({"command": env_dump(&dump)})),
            Turn::tool(
                "write_file",
                json!({"file_path": "{cwd}/calc.py", "content": BUGGY}),
            ),
            Turn::text("Wrote calc.py."),
            Turn::tool(
                "replace",
                json!({"file_path": "{cwd}/calc.py", "old_string": "a - b", "new_string": "a + b",
                       "instruction": "add, not subtract"}),
            ),
            Turn::text("Fixed add."),
        ],
    )
    .expect_api_key(GEMINI_KEY);
    let (stdout, stderr) = dandori_run(
        &p,
        &gemini,
        "gemini",
        &[
            ("GEMINI_API_KEY", GEMINI_KEY.to_string()),
            ("GOOGLE_GEMINI_BASE_URL", server.origin()),
        ],
        "gemini-2.5-pro",
    );
    let step = stage_step(&p);
    assert_eq!(
        step["status"],
        "done",
        "{stdout}\n{stderr}\n{step}\n{}\n{}",
        agent_log(&p),
        seen(&server)
    );
    // Gemini CLI 0.61 resumes the session but sends each function response of
    // its history twice, which the Gemini API refuses (as many responses as
    // calls): dandori starts a fresh session for the fix, with the failure.
    let violations = server.violations();
    assert!(
        !violations.is_empty()
            && violations
                .iter()
                .all(|v| v.contains("do not answer the calls")),
        "{violations:?}"
    );
    assert!(
        stderr.contains("S01: the agent session could not be resumed; starting a new one"),
        "{stderr}"
    );
    assert_committed(&p, "gemini");
    assert_eq!(server.remaining(), 0, "{stderr}");
    let turns = server.turns_served();
    assert!(
        turns[3].raw_body.contains("Wrote calc.py."),
        "the resume attempt lacks the first session's turns"
    );
    assert!(stderr.contains("S01: replace calc.py"), "{stderr}");
    assert!(stderr.contains("agent: gemini 0.61"), "{stderr}");
    let t = trace(&p);
    let calls = events(&t, "LLM_CALL");
    assert_eq!(calls.len(), 2, "{calls:?}");
    for c in &calls {
        let d = &c["data"];
        assert_eq!(d["agent"], "gemini");
        assert!(d["session_id"].is_string(), "{d}");
        assert!(
            d["usage"]["prompt_tokens"].as_u64().unwrap() >= 2 * 1200,
            "{d}"
        );
    }
    assert_ne!(
        calls[0]["data"]["session_id"],
        calls[1]["data"]["session_id"]
    );
    assert_eq!(calls[1]["data"]["resumed"], false);
    assert_fix_cycle(&t);
    assert_only_key(&dump, GEMINI_KEY);
}

/// `llm.budgets.agent_step_turns` bounds the agent's turns on a step: past it
/// the step is not handed to the agent again (its fix cycle here), and fails
/// saying which budget; the realistic usage of a session (tens of thousands of
/// cache-read tokens a turn) does not count against `llm.budgets.task`.
#[test]
fn an_agent_past_its_turn_budget_gets_no_further_invocation_of_the_step() {
    let Some((claude, p)) = setup("claude") else {
        return;
    };
    let server = FakeAgentModel::start(
        Wire::Anthropic,
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": "{cwd}/calc.py", "content": BUGGY}),
            ),
            Turn::text("Wrote calc.py."),
        ],
    )
    .expect_api_key(ANTHROPIC_KEY);
    let out = dandori_command(
        &p,
        &claude,
        "run",
        "claude",
        &[("ANTHROPIC_BASE_URL", server.origin())],
        "claude-sonnet-4-5",
    )
    .args(["-c", "llm.budgets.agent_step_turns=1"])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let step = stage_step(&p);
    assert_eq!(step["status"], "failed", "{stderr}\n{step}");
    assert_eq!(step["reason_code"], "TOKEN_BUDGET_EXCEEDED", "{step}");
    assert!(
        step["message"]
            .as_str()
            .unwrap()
            .contains("the agent took 2 turns on this step, over llm.budgets.agent_step_turns 1"),
        "{step}"
    );
    // One invocation only: the fix cycle was never started.
    assert_eq!(events(&trace(&p), "LLM_CALL").len(), 1);
    assert_eq!(server.remaining(), 0, "{stderr}");
}

/// `llm.budgets.agent_step_cost_usd` with the cost Claude Code itself reports
/// from the fake model's realistic usage (48 000 cache-read tokens a turn): the
/// first invocation leaves a failing unit run and is already over the step's
/// budget, so no fix cycle starts. The user sees the step failed with
/// `TOKEN_BUDGET_EXCEEDED` and the dollars spent, exit 6 (a budget needs a
/// human: raise it and `dandori resume`), and the report's line.
#[test]
fn an_agent_past_its_cost_budget_gets_no_further_invocation_of_the_step() {
    let Some((claude, p)) = setup("claude") else {
        return;
    };
    let server = FakeAgentModel::start(
        Wire::Anthropic,
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": "{cwd}/calc.py", "content": BUGGY}),
            ),
            Turn::text("Wrote calc.py."),
        ],
    )
    .expect_api_key(ANTHROPIC_KEY);
    let out = dandori_command(
        &p,
        &claude,
        "run",
        "claude",
        &[("ANTHROPIC_BASE_URL", server.origin())],
        "claude-sonnet-4-5",
    )
    .args(["-c", "llm.budgets.agent_step_cost_usd=0.001", "--json"])
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let step = stage_step(&p);
    assert_eq!(step["status"], "failed", "{stderr}\n{step}");
    assert_eq!(step["reason_code"], "TOKEN_BUDGET_EXCEEDED", "{step}");
    let message = step["message"].as_str().unwrap();
    assert!(
        message.starts_with("the agent used $")
            && message.ends_with("on this step, over llm.budgets.agent_step_cost_usd 0.001"),
        "{step}"
    );
    // What Claude Code reported is what was budgeted: at least the cache reads.
    let spent: f64 = message["the agent used $".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(spent > 0.001, "{message}");
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["summary"]["goal_achieved"], json!(false), "{v:#}");
    let report = std::fs::read_to_string(p.run_dir.join("report.md")).unwrap();
    assert!(
        report.contains("TOKEN_BUDGET_EXCEEDED") && report.contains("agent_step_cost_usd"),
        "{report}"
    );
    // One invocation only: the fix cycle was never started.
    assert_eq!(events(&trace(&p), "LLM_CALL").len(), 1);
    assert_eq!(server.remaining(), 0, "{stderr}");
}
