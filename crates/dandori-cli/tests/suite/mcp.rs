//! `dandori mcp` driven by the official MCP Python SDK client (PyPI `mcp`,
//! installed by scripts/test.sh): the client lists the tools, probes bad inputs,
//! plans a request and executes the plan step by step as the executor. A second
//! test checks that a plan executed through MCP ends with the same commits, stage
//! and report as `dandori run --executor command` making the same edits.

use std::path::{Path, PathBuf};
use std::process::Command;

pub(super) use dandori_test_support::git::git;
use dandori_test_support::plans::{planning, step, write_plan};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

pub(super) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp")
        .join(name)
}

/// The first `python3` on PATH that has the MCP SDK.
fn python_with_mcp() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let py = dir.join("python3");
        if py.is_file()
            && Command::new(&py)
                .args(["-c", "import mcp.client.stdio"])
                .output()
                .is_ok_and(|o| o.status.success())
        {
            return py;
        }
    }
    panic!(
        "no python3 with the MCP SDK (`mcp`) on PATH: run the tests with ./scripts/test.sh, which installs it into target/test-tools/venv and puts it on PATH"
    );
}

pub(super) fn new_repo(root: &Path, name: &str) -> PathBuf {
    let repo = root.join(name);
    std::fs::create_dir_all(repo.join("notes")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    std::fs::write(repo.join("README.md"), "# notes\n\nA tiny notes tool.\n").unwrap();
    std::fs::write(
        repo.join("notes/calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    repo
}

/// The codes of agent.py's `probe_errors` bad inputs.
pub(super) fn probe_error_codes() -> Value {
    json!({"no_run_dir": "RUN_DIR_INVALID", "missing_arg": "ARGUMENT_INVALID",
           "bad_step": "STEP_UNKNOWN", "not_ready": "STEP_NOT_READY",
           "bad_type": "ARGUMENT_INVALID", "unknown_tool": "TOOL_UNKNOWN"})
}

pub(super) fn agent(config: Value) -> Value {
    let out = Command::new(python_with_mcp())
        .arg(fixture("agent.py"))
        .arg(config.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "agent.py failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn python_sdk_client_plans_and_executes_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let repo = new_repo(&dir.path().canonicalize().unwrap(), "repo");
    let out = agent(json!({
        "bin": BIN, "cwd": repo, "tools": "core", "edit": fixture("edit.py"),
        "plan": {"text": "Add a subtract function to notes/calc.py and document it in README.md"},
        "probe_errors": true,
    }));
    assert_eq!(
        out["tools"],
        json!(["plan", "next", "step", "step_update", "report"])
    );
    let chars = out["schema_chars"].as_u64().unwrap();
    assert!(chars <= 4000, "core tool set costs {chars} characters");
    assert_eq!(out["errors"], probe_error_codes());
    let plan = &out["plan"];
    assert_eq!(plan["valid"], json!(true));
    let steps: Vec<String> = plan["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    assert!(!steps.is_empty());
    // Every step was handed to the client once and committed.
    let mut order: Vec<String> = out["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect();
    order.sort();
    assert_eq!(order, steps);
    for v in out["verdicts"].as_array().unwrap() {
        assert!(
            ["done", "committed"].contains(&v["status"].as_str().unwrap()),
            "{v}"
        );
    }
    assert_eq!(out["completion"]["status"], json!("completed"));
    // The first `next` waits for the environment setup and the baseline: a
    // client with a progress token hears about it every second.
    let waited = out["first_next_sec"].as_f64().unwrap();
    let progress = out["progress"].as_array().unwrap();
    if waited > 1.5 {
        assert!(!progress.is_empty(), "no progress in {waited} s");
        let last = progress.last().unwrap()["message"].as_str().unwrap();
        assert!(last.ends_with(" s)"), "{last}");
    }
    assert_eq!(out["report"]["status"], json!("done"));
    assert_eq!(out["report"]["done"], json!(steps.len()));
    assert_eq!(out["report"]["total"], json!(steps.len()));
    assert!(out["report_md_chars"].as_u64().unwrap() > 200);
    assert_eq!(
        out["resources"],
        json!([
            "environment/setup.json",
            "environment/summary.md",
            "planning.json",
            "report.md",
            "stage.json",
            "trace.jsonl"
        ])
    );
    // The work is on the work branch, one commit per step with dandori's trailers,
    // each changing the step's target.
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let branch = planning["work_branch"].as_str().unwrap();
    let log = git(&repo, &["log", "--format=%B", &format!("main..{branch}")]);
    for s in planning["steps"].as_array().unwrap() {
        let id = s["step_id"].as_str().unwrap();
        assert!(log.contains(&format!("Dandori-Step: {id}")), "{log}");
        let target = s["scope"]["target_paths"][0].as_str().unwrap();
        let text = git(&repo, &["show", &format!("{branch}:{target}")]);
        assert!(
            text.contains(&format!("work of {id}")) || id == "S02",
            "{target}: {text}"
        );
    }
}

/// A repository with a hand-written three-step plan: S02 after S01, S03
/// independent; S02's unit command fails on the first attempt (autofix).
pub(super) fn planned_repo(root: &Path, name: &str) -> (PathBuf, PathBuf) {
    let repo = new_repo(root, name);
    let plan = planning(
        "RQ-7",
        "run-7",
        vec![
            step("S01", "test -f src/S01/main.txt", &[]),
            step("S02", "grep -q work src/S02/main.txt", &["S01"]),
            step("S03", "test -f src/S03/main.txt", &[]),
        ],
        120,
    );
    let run_dir = write_plan(&repo, &plan);
    (repo, run_dir)
}

/// What must be equal between two runs of the same plan: commit messages (with
/// trailers) and trees in topological order, the stage, and report.md with hashes, times and
/// the executor's name blanked.
fn outcome(repo: &Path, run_dir: &Path) -> Value {
    let branch = "dandori/RQ-7/run-7";
    let commits: Vec<Value> = git(
        repo,
        &[
            "log",
            "--reverse",
            // Parallel steps' commits in parent order, not by commit time.
            "--topo-order",
            "--format=%T%x1f%B%x1e",
            &format!("main..{branch}"),
        ],
    )
    .split('\x1e')
    .map(str::trim)
    .filter(|r| !r.is_empty())
    .map(|r| {
        let (tree, msg) = r.split_once('\x1f').unwrap();
        json!({"tree": tree, "message": msg.trim()})
    })
    .collect();
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    let steps: Vec<Value> = stage["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| json!([s["step_id"], s["status"], s["attempts"], s["reason_code"]]))
        .collect();
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let hash = regex::Regex::new(r"`[0-9a-f]{10}`").unwrap();
    let secs = regex::Regex::new(r"\d+\.\d s").unwrap();
    let gantt = regex::Regex::new(r"(S\d\d : \w+, S\d\d), \d+, \d+").unwrap();
    let report = hash.replace_all(&report, "`HASH`");
    let report = secs.replace_all(&report, "T s");
    let report = gantt.replace_all(&report, "$1, T");
    let report = report
        .replace("**Executor:** mcp", "**Executor:** X")
        .replace("**Executor:** command", "**Executor:** X");
    json!({"status": stage["status"], "commits": commits, "steps": steps, "report": report})
}

#[test]
fn a_plan_executed_through_mcp_ends_like_the_command_executor() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let python = python_with_mcp();

    let (repo_a, run_a) = planned_repo(&root, "by-command");
    let agent_cmd = format!(
        "{} {} {{step_id}} {{workdir}} {{prompt_file}}",
        python.display(),
        fixture("edit.py").display()
    );
    let out = Command::new(BIN)
        .args(["run"])
        .arg(&run_a)
        .arg("--repo")
        .arg(&repo_a)
        .args(["--executor", "command", "--agent-cmd", &agent_cmd, "--json"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (repo_b, run_b) = planned_repo(&root, "by-mcp");
    let out = agent(json!({
        "bin": BIN, "cwd": repo_b, "tools": "core", "edit": fixture("edit.py"),
        "run_dir": run_b,
    }));
    assert_eq!(out["completion"]["status"], json!("completed"));
    // S02 came back once: its unit command failed after the draft.
    let s02: Vec<&Value> = out["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["step_id"] == "S02")
        .collect();
    assert_eq!(s02.len(), 2, "{}", out["verdicts"]);
    assert_eq!(s02[0]["status"], json!("retry"));

    let a = outcome(&repo_a, &run_a);
    let b = outcome(&repo_b, &run_b);
    assert_eq!(a, b);
    assert!(
        a["commits"].as_array().unwrap().len() >= 3,
        "{}",
        a["commits"]
    );
}

/// A follow-up step the run adds for a criterion no step proved (seed 001
/// §10.6) is handed to the MCP client like the plan's steps: `next` offers it
/// with its title, `step` gives its prompt, `step_update` takes its answer.
#[test]
fn follow_up_steps_are_executed_through_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = new_repo(&root, "follow-up");
    let mut s01 = step("S01", "test -f src/S01/main.txt", &[]);
    s01["links_to_ac"] = json!(["AC-01", "AC-03"]);
    let mut plan = planning("RQ-8", "run-8", vec![s01], 120);
    plan["limits"]["max_autofix_cycles"] = json!(0);
    plan["gates"]["max_step_too_large_retries"] = json!(0);
    plan["context"]["acceptance_criteria"] = json!([
        {"id": "AC-01", "given": "g", "when": "w", "then": "S01 is written"},
        {"id": "AC-02", "given": "g", "when": "w", "then": "the follow-up's work is there"},
        {"id": "AC-03", "given": "g", "when": "w", "then": "S01 is still written"}
    ]);
    plan["context"]["test_instructions"] = json!({"unit": "grep -q 'work of F01' main.txt"});
    let run_dir = write_plan(&repo, &plan);
    let out = agent(json!({
        "bin": BIN, "cwd": repo, "tools": "core", "edit": fixture("edit.py"),
        "run_dir": run_dir,
    }));
    let verdicts: Vec<(String, String)> = out["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["step_id"].as_str().unwrap_or_default().to_string(),
                v["status"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    assert_eq!(
        verdicts,
        vec![
            ("S01".to_string(), "done".to_string()),
            ("F01".to_string(), "done".to_string())
        ],
        "{out}"
    );
    assert_eq!(out["completion"]["status"], json!("completed"), "{out}");
    // The follow-up's commit is on the work branch.
    let log = git(&repo, &["log", "--format=%B", "main..dandori/RQ-8/run-8"]);
    assert!(log.contains("Dandori-Step: F01"), "{log}");
}

/// The first `mcp-inspector` on PATH (npm `@modelcontextprotocol/inspector`,
/// installed by scripts/test.sh).
fn inspector() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("mcp-inspector"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`mcp-inspector` is not on PATH: run the tests with ./scripts/test.sh, which installs it into target/test-tools/node and puts it on PATH"
            )
        })
}

/// One Inspector CLI call: `mcp-inspector --cli TARGET… --method ARGS…`.
pub(super) fn inspector_call(cwd: &Path, target: &[&str], args: &[&str]) -> Value {
    let out = Command::new(inspector())
        .arg("--cli")
        .args(target)
        .arg("--method")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "mcp-inspector {args:?}:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn inspect(cwd: &Path, args: &[&str]) -> Value {
    inspector_call(cwd, &[BIN, "mcp", "--tools", "all"], args)
}

#[test]
fn mcp_inspector_cli_lists_and_calls_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run_dir) = planned_repo(&dir.path().canonicalize().unwrap(), "repo");
    let listed = inspect(&repo, &["tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "plan",
            "next",
            "step",
            "step_update",
            "report",
            "validate",
            "graph",
            "status",
            "runs",
            "env_detect",
            "revise",
            "env_setup",
            "locate",
            "trace"
        ]
    );
    let run = run_dir.to_str().unwrap();
    let graph = inspect(
        &repo,
        &[
            "tools/call",
            "--tool-name",
            "graph",
            "--tool-arg",
            &format!("path={run}"),
        ],
    );
    assert_eq!(
        graph["structuredContent"]["groups"],
        json!([["S01", "S03"], ["S02"]])
    );
    let status = inspect(
        &repo,
        &[
            "tools/call",
            "--tool-name",
            "status",
            "--tool-arg",
            &format!("run_dir={run}"),
        ],
    );
    assert_eq!(status["structuredContent"]["status"], json!("planned"));
    assert_eq!(status["structuredContent"]["current_step"], json!("S01"));
    // The environment sub-phase of the planned run, its summary as a resource.
    let env = inspect(
        &repo,
        &[
            "tools/call",
            "--tool-name",
            "env_setup",
            "--tool-arg",
            &format!("run_dir={run}"),
        ],
    );
    assert_eq!(env["isError"], json!(false), "{env}");
    assert_eq!(
        env["structuredContent"]["status"],
        json!("success"),
        "{env}"
    );
    let summary = env["structuredContent"]["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        format!("file://{run}/environment/summary.md"),
        "{env}"
    );
    let read = inspect(&repo, &["resources/read", "--uri", summary]);
    let text = read["contents"][0]["text"].as_str().unwrap_or_default();
    assert_eq!(
        dandori_fs::read_to_string(run_dir.join("environment/summary.md")).unwrap(),
        text
    );
    // A bad step id is a tool error, not a dead server.
    let step = inspect(
        &repo,
        &[
            "tools/call",
            "--tool-name",
            "step",
            "--tool-arg",
            &format!("run_dir={run}"),
            "--tool-arg",
            "step_id=S42",
        ],
    );
    assert_eq!(step["isError"], json!(true));
    assert_eq!(
        step["structuredContent"]["error"]["code"],
        json!("STEP_UNKNOWN")
    );
}

/// Malformed lines from a client (broken JSON, batches, a wrong `jsonrpc`, ids
/// that are objects, requests without their params, unknown methods, a 2 MB line,
/// control bytes) each get their JSON-RPC error, and the server goes on answering
/// on the same session. rmcp's own stdio transport would end the session on any
/// of them.
#[test]
fn malformed_client_lines_get_errors_and_the_server_goes_on() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let repo = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["mcp", "--tools", "all"])
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut send = |line: &str| {
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    };
    let mut recv = || {
        let mut l = String::new();
        out.read_line(&mut l).unwrap();
        serde_json::from_str::<Value>(&l).unwrap_or(Value::Null)
    };
    send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}})
        .to_string(),
    );
    assert_eq!(recv()["id"], 1);
    send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    let big = "x".repeat(2 << 20);
    let cases: Vec<(&str, i64)> = vec![
        ("{", -32700),
        ("null", -32600),
        ("[1,2]", -32600),
        (r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":{},"method":"tools/list"}"#, -32600),
        (r#"{"jsonrpc":"2.0","id":8,"method":"tools/call"}"#, -32602),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"plan","arguments":"str"}}"#,
            -32602,
        ),
        (r#"{"jsonrpc":"2.0","id":10,"method":"no/such"}"#, -32601),
        (&big, -32700),
        ("\u{0}\u{1}", -32700),
    ];
    for (k, (line, code)) in cases.iter().enumerate() {
        send(line);
        // A valid request after each: its answer proves the session is alive.
        let id = 1000 + k as i64;
        send(&json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string());
        // Answers may come in either order (JSON-RPC matches them by id).
        let (a, b) = (recv(), recv());
        let (err, pong) = if a["id"] == id { (b, a) } else { (a, b) };
        let shown = &line[..line.len().min(60)];
        assert_eq!(err["error"]["code"], *code, "{shown}: {err}");
        assert_eq!(pong["id"], id, "the server stopped after {shown:?}");
    }
    // Malformed notifications and blank lines get no answer at all.
    send(r#"{"jsonrpc":"2.0","method":"no/such"}"#);
    send("   ");
    send(&json!({"jsonrpc": "2.0", "id": 2000, "method": "tools/list"}).to_string());
    let listed = recv();
    assert_eq!(listed["id"], 2000);
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| t.len() >= 10)
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
