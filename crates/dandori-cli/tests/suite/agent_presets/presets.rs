//! Each preset writes the step's file and fixes its failing unit test in a
//! second invocation, with its usage in the trace and only its own key.

use std::process::{Command, Stdio};

use dandori_test_support::git::git;
use dandori_test_support::{FakeAgentModel, Turn, Wire};
use serde_json::{Value, json};

use super::*;

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
