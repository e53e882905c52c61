//! The agent budgets per step: turns and cost.

use dandori_test_support::{FakeAgentModel, Turn, Wire};
use serde_json::{Value, json};

use super::*;

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
