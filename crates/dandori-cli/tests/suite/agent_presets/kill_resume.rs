//! `dandori run --agent` killed mid-step, then a plain `dandori resume`: the
//! step's session is resumed, and the turns the killed invocation made are
//! recorded in the trace and the metrics.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use dandori_test_support::{FakeAgentModel, Turn, Wire};
use serde_json::{Value, json};

use super::super::kill_run_at;
use super::*;

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
    let session_file = p.run_dir.join("logs/step.S01.agent-session.json");
    // Once the CLI has its session and the first turn, and has started the
    // command (half a second later), everything is killed.
    kill_run_at(
        &mut dandori_command(p, cli, "run", agent, env, model),
        &format!("the {agent} agent starts: {}", agent_log(p)),
        Duration::from_secs(60),
        Duration::from_millis(500),
        || (session_file.is_file() && server.turns_served().len() == 1).then_some(()),
    );
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
    // The killed invocation is recorded first (issue 36): the turn it made and
    // the command it was running, from what the CLI streamed before the kill.
    let cut = &calls[0]["data"];
    assert_eq!(cut["interrupted"], true, "{calls:?}");
    assert_eq!(cut["ok"], false, "{cut}");
    assert_eq!(cut["resumed"], false, "{cut}");
    assert_eq!(cut["session_id"], session.as_str(), "{cut}");
    assert_eq!(cut["num_turns"], 1, "{cut}");
    assert_eq!(cut["tool_calls"], 1, "{cut}");
    assert_eq!(calls.len(), 2, "{calls:?}");
    let tools = events(&t, "TOOL_CALL");
    assert!(
        tools[0]["data"]["call"]
            .as_str()
            .is_some_and(|c| c.contains("sleep 60")),
        "{tools:?}"
    );
    let m = metrics(p);
    let a = &m["agents"][agent];
    assert_eq!(a["invocations"], 2, "{m}");
    assert_eq!(a["interrupted"], 1, "{m}");
    assert_eq!(
        a["turns"].as_u64(),
        Some(1 + last["num_turns"].as_u64().unwrap()),
        "{m}"
    );
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
    // Claude Code streams each response's usage: the killed turn's tokens count.
    let t = trace(&p);
    let cut = &events(&t, "LLM_CALL")[0]["data"];
    assert_eq!(cut["usage"]["prompt_tokens"], 1200 + 24_000, "{cut}");
    assert_eq!(cut["usage"]["cache_read_tokens"], 24_000, "{cut}");
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
    // Codex streams no usage before its turn completes: the killed turn has
    // none, and the resumed turn does not count it twice.
    let t = trace(&p);
    let cut = &events(&t, "LLM_CALL")[0]["data"];
    assert_eq!(cut["usage"]["prompt_tokens"], 0, "{cut}");
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
