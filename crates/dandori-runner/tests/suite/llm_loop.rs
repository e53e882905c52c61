//! The LLM tool loop against the scripted fake model server over real HTTP: tool
//! calls create files and run tests, a failing test is fixed, the seed 000 JSON
//! format works without native tool calls, loops and escapes are refused.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::*;
use dandori_config::{ProviderConfig, ProviderKind};
use dandori_runner::{CompletionStatus, ExecutorChoice, ExecutorKind, RunOptions};
use dandori_test_support::{FakeLlmServer, Reply};

pub fn completion() -> Reply {
    Reply::openai_text(
        &json!({"phase": "completion", "summary": {"goal_achieved": true, "tasks_completed": 1,
            "tasks_failed": 0, "key_outcomes": ["done"], "lessons_learned": []},
            "done": true, "comment": "finished"})
        .to_string(),
    )
}

pub fn llm_options(repo: &Repo, run_dir: &std::path::Path, server: &FakeLlmServer) -> RunOptions {
    let mut opts = options(repo, run_dir, None);
    let mut provider = ProviderConfig::new(
        "fake",
        ProviderKind::Openai,
        &server.base_url(),
        "fake-model",
    );
    provider.stream = false;
    provider.max_retries = 0;
    opts.config.llm.providers = vec![provider];
    opts.config.llm.default_provider = Some("fake".to_string());
    opts.config.planning.reflection.trigger_interval = Some(0);
    opts.config.llm.budgets.task = 10_000_000;
    opts.config.llm.budgets.reflection = 1_000_000;
    opts.executor = Some(ExecutorChoice {
        kind: ExecutorKind::Llm,
        agent_cmd: None,
        agent: None,
        agent_model: None,
    });
    opts
}

/// The bodies the runner sent, as JSON.
fn bodies(server: &FakeLlmServer) -> Vec<Value> {
    server.requests().iter().map(|r| r.body.clone()).collect()
}

#[test]
fn tool_calls_create_files_run_tests_and_fix_a_failure() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01")
                .unit("sh check.sh")
                .targets(&["answer.txt", "check.sh"]),
        ],
        json!({}),
    ));
    let server = FakeLlmServer::start(vec![
        // attempt 1: write a wrong answer and the test, run it (fails), claim done
        Reply::openai_tool_call("write_file", &json!({"path": "answer.txt", "content": "41\n"})),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "check.sh", "content": "test \"$(cat answer.txt)\" = 42 || { echo \"want 42\"; exit 1; }\n"}),
        ),
        Reply::openai_tool_call("run_command", &json!({"command": "sh check.sh"})),
        // the failed command triggers a reflection
        Reply::openai_text(
            &json!({"phase": "reflection", "reflection": {"action_evaluated": "run_command",
                "status": "failure", "evaluation": "test fails", "issues_identified": ["wrong value"],
                "plan_revision_needed": false}, "comment": "will be fixed"})
            .to_string(),
        ),
        completion(),
        // the runner's unit command fails → fix attempt with the failure output
        Reply::openai_tool_call("write_file", &json!({"path": "answer.txt", "content": "42\n"})),
        Reply::openai_tool_call("run_command", &json!({"command": "sh check.sh"})),
        completion(),
    ]);
    let opts = llm_options(&repo, &run_dir, &server);
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion
    );
    assert_eq!(server.remaining(), 0);
    server.assert_no_violations();
    assert_eq!(repo.git(&["show", "dandori/RQ-1/run-1:answer.txt"]), "42\n");
    let b = bodies(&server);
    // the model saw the tool specs and the step prompt
    let tools: Vec<&str> = b[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for t in ["read_file", "write_file", "run_command", "git_diff"] {
        assert!(tools.contains(&t), "{tools:?}");
    }
    assert!(
        b[0]["messages"][1]["content"]
            .as_str()
            .unwrap()
            .contains("## Intent")
    );
    // the result of the failing command went to the reflection (a compact prompt,
    // not the conversation) and back to the model as the tool result
    let reflection_prompt = b[3]["messages"][1]["content"].as_str().unwrap();
    assert!(
        reflection_prompt.contains("Result (error): ") && reflection_prompt.contains("want 42"),
        "{reflection_prompt}"
    );
    let fourth = b[4]["messages"].as_array().unwrap();
    let last_tool = fourth.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(
        last_tool["content"].as_str().unwrap().contains("want 42"),
        "{last_tool}"
    );
    // the fix attempt got the unit failure output
    let fix_prompt = b[5]["messages"][1]["content"].as_str().unwrap();
    assert!(
        fix_prompt.contains("## Fix attempt 1") && fix_prompt.contains("want 42"),
        "{fix_prompt}"
    );
    assert_eq!(trace_events(&run_dir, "AUTOFIX").len(), 1);
    let refl = trace_events(&run_dir, "REFLECTION");
    assert!(
        refl.iter()
            .any(|e| e["data"]["reflection"]["action_evaluated"] == "run_command")
    );
    let tooling = trace_events(&run_dir, "TOOLING");
    assert!(
        tooling[0]["data"]["tooling"]["sandbox"]["kind"].is_string(),
        "{:?}",
        tooling[0]
    );
    assert_eq!(out.completion.tokens.prompt_tokens, 800);
    // report.md lists the tokens of the step that used the model and the run's total
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    let t = out.completion.tokens;
    assert!(
        report.contains("\n## Tokens\n")
            && report.contains("\n| S01 | ")
            && report.contains(&format!(
                "\n| run | {} | {} | {} |\n",
                t.prompt_tokens,
                t.completion_tokens,
                t.total()
            )),
        "{report}"
    );
}

#[test]
fn seed_000_execution_json_works_without_native_tool_calls() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let server = FakeLlmServer::start(vec![
        Reply::openai_text(
            "I will create the file.\n```json\n{\"phase\": \"execution\", \"current_task\": \"S01\", \"function_call\": {\"name\": \"write_file\", \"arguments\": {\"path\": \"src/S01/a.txt\", \"content\": \"hi\\n\"}}, \"comment\": \"writing\"}\n```",
        ),
        completion(),
    ]);
    let out = dandori_runner::run(&llm_options(&repo, &run_dir, &server)).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert_eq!(
        repo.git(&["show", "dandori/RQ-1/run-1:src/S01/a.txt"]),
        "hi\n"
    );
    let b = bodies(&server);
    let msgs = b[1]["messages"].as_array().unwrap();
    let last = msgs.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"]
            .as_str()
            .unwrap()
            .starts_with("Result of write_file (ok)"),
        "{last}"
    );
}

#[test]
fn the_same_call_with_the_same_result_is_a_loop_never_success() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let call = Reply::openai_tool_call("list_dir", &json!({"path": "."}));
    let server = FakeLlmServer::start(vec![call.clone(), call.clone(), call, completion()]);
    let out = dandori_runner::run(&llm_options(&repo, &run_dir, &server)).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert!(!out.completion.summary.goal_achieved);
    assert_eq!(stage(&run_dir)["steps"][0]["reason_code"], "LOOP_DETECTED");
    assert_eq!(
        server.remaining(),
        1,
        "the loop must stop before asking again"
    );
}

#[test]
fn escapes_and_forbidden_tools_are_refused_and_fed_back() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let outside = repo.path.parent().unwrap().join("outside.txt");
    std::os::unix::fs::symlink(&outside, repo.path.join("link")).unwrap();
    repo.git(&["add", "link"]);
    repo.git(&["commit", "-q", "-m", "a link out of the repo"]);
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "../escape.txt", "content": "x"}),
        ),
        Reply::openai_tool_call("write_file", &json!({"path": "link", "content": "x"})),
        Reply::openai_tool_call("run_command", &json!({"command": "gh pr list"})),
        Reply::openai_tool_call("run_command", &json!({"command": "sudo rm -rf /tmp/x"})),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "src/S01/ok.txt", "content": "ok\n"}),
        ),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.planning.reflection.trigger_on_error = false;
    opts.config
        .planning
        .execution
        .early_termination
        .max_consecutive_failures = 6;
    opts.config.planning.security.forbidden_tools = vec!["git_*".to_string()];
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert!(!outside.exists());
    assert!(!repo.path.parent().unwrap().join("escape.txt").exists());
    let b = bodies(&server);
    let tool_result = |i: usize| -> String {
        b[i]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        tool_result(1).contains("PATH_OUTSIDE_WORKTREE"),
        "{}",
        tool_result(1)
    );
    assert!(tool_result(2).contains("SYMLINK"), "{}", tool_result(2));
    assert!(
        tool_result(3).contains("GH_FORBIDDEN"),
        "{}",
        tool_result(3)
    );
    let refused = tool_result(4);
    assert!(
        refused.starts_with("error [") && refused.contains("sudo"),
        "{refused}"
    );
    let tools: Vec<&str> = b[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        !tools.iter().any(|t| t.starts_with("git_")),
        "forbidden tools are not offered: {tools:?}"
    );
}

#[test]
fn consecutive_failed_actions_stop_the_step() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call("read_file", &json!({"path": "missing1"})),
        Reply::openai_tool_call("read_file", &json!({"path": "missing2"})),
        Reply::openai_tool_call("read_file", &json!({"path": "missing3"})),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.planning.reflection.trigger_on_error = false;
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "EARLY_TERMINATION"
    );
}

#[test]
fn reflection_revisions_beyond_max_revisions_require_a_human() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let revise = Reply::openai_text(
        &json!({"phase": "reflection", "reflection": {"action_evaluated": "read_file", "status": "failure",
            "evaluation": "wrong path", "issues_identified": [], "plan_revision_needed": true},
            "plan_revision": {"reason": "find the file", "changes": ["list the directory"]}})
        .to_string(),
    );
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call("read_file", &json!({"path": "a"})),
        revise.clone(),
        Reply::openai_tool_call("read_file", &json!({"path": "b"})),
        revise,
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.planning.revision.max_revisions = 1;
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert_eq!(out.completion.exit_code, 6);
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "MAX_REVISIONS_EXCEEDED"
    );
    let b = bodies(&server);
    let after_revision = b[2]["messages"].as_array().unwrap().last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        after_revision.contains("list the directory"),
        "{after_revision}"
    );
}

#[test]
fn model_plan_revisions_count_in_revision_attempts() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").targets(&["answer.txt"])],
        json!({}),
    ));
    let server = FakeLlmServer::start(vec![
        // a failing read triggers a reflection, which revises the plan
        Reply::openai_tool_call("read_file", &json!({"path": "missing.txt"})),
        Reply::openai_text(
            &json!({"phase": "reflection", "reflection": {"action_evaluated": "read_file",
                "status": "failure", "evaluation": "no such file", "issues_identified": [],
                "plan_revision_needed": true},
                "plan_revision": {"reason": "write it instead", "changes": ["write answer.txt"]}})
            .to_string(),
        ),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "answer.txt", "content": "42\n"}),
        ),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.planning.revision.max_revisions = 3;
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion
    );
    assert_eq!(out.completion.summary.revision_attempts, Some(1));
    assert_eq!(stage(&run_dir)["revisions"], 1);
}

#[test]
fn the_token_budget_stops_the_run_and_keeps_what_exists() {
    let plan = planning(vec![S::new("S01"), S::new("S02")], json!({}));
    let script = || {
        vec![
            Reply::openai_tool_call(
                "write_file",
                &json!({"path": "src/S01/a", "content": "a\n"}),
            ),
            completion(),
            Reply::openai_tool_call(
                "write_file",
                &json!({"path": "src/S02/a", "content": "a\n"}),
            ),
            completion(),
        ]
    };
    // Probe: with a budget of 1 the first call is refused, and the refusal says how
    // many tokens a step's first prompt needs.
    let probe = Repo::new();
    let run_dir = probe.write_plan(&plan);
    let server = FakeLlmServer::start(script());
    let mut opts = llm_options(&probe, &run_dir, &server);
    opts.config.llm.budgets.task = 1;
    dandori_runner::run(&opts).unwrap();
    let msg = stage(&run_dir)["steps"][0]["message"]
        .as_str()
        .unwrap()
        .to_string();
    let needed: u64 = msg
        .split(" needed")
        .next()
        .unwrap()
        .split_whitespace()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        server.request_count(),
        0,
        "a refused call never reaches the provider"
    );

    // Room for S01's two calls (150 tokens each reported), not for S02's first.
    let repo = Repo::new();
    let run_dir = repo.write_plan(&plan);
    let server = FakeLlmServer::start(script());
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.llm.budgets.task = needed + 299;
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert!(
        out.completion
            .summary
            .reason
            .as_deref()
            .unwrap()
            .contains("TOKEN_BUDGET_EXCEEDED"),
        "{:?}",
        out.completion.summary
    );
    assert_eq!(statuses(&run_dir)[0].1, "done");
    assert_eq!(
        stage(&run_dir)["steps"][1]["reason_code"],
        "TOKEN_BUDGET_EXCEEDED"
    );
    assert_eq!(
        repo.commits("dandori/RQ-1/run-1").len(),
        1,
        "what exists is kept"
    );
}

/// An external tool the tests drive, found on PATH, or a failure saying how to get it.
fn tool_on_path(name: &str) -> std::path::PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH: run the tests with ./scripts/test.sh, which installs it into target/test-tools and puts it on PATH"
            )
        })
}

#[test]
fn tools_of_a_real_mcp_server_are_offered_and_called_namespaced() {
    let git = tool_on_path("mcp-server-git");
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    // The runner runs in this process: its first pool worktree.
    let worktree = run_dir.join(format!("worktrees/pool-{}-1", std::process::id()));
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call(
            "git__git_status",
            &json!({"repo_path": worktree.display().to_string()}),
        ),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "src/S01/a.txt", "content": "a\n"}),
        ),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.mcp.servers = vec![dandori_config::McpServerConfig {
        name: "git".to_string(),
        command: git.display().to_string(),
        args: vec!["--repository".to_string(), "{worktree}".to_string()],
        env: Default::default(),
        sandbox: false,
    }];
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion.steps
    );
    let b = bodies(&server);
    let tools: Vec<&str> = b[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(tools.contains(&"git__git_status"), "{tools:?}");
    let result = b[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "tool")
        .unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!result.starts_with("error ["), "{result}");
    assert!(
        result.to_lowercase().contains("status") || result.contains("HEAD"),
        "{result}"
    );
}

#[test]
fn reflection_fits_the_default_budget_and_succeeds() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01")
                .unit("sh check.sh")
                .targets(&["answer.txt", "check.sh"]),
        ],
        json!({}),
    ));
    let reflection = json!({"phase": "reflection", "reflection": {"action_evaluated": "run_command",
        "status": "failure", "evaluation": "the check fails: answer.txt is missing",
        "issues_identified": ["answer.txt missing"], "plan_revision_needed": false},
        "comment": "write the answer next"});
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call(
            "write_file",
            // a failing check with a long output, so the result must be cut to fit
            &json!({"path": "check.sh", "content": "i=0; while [ $i -lt 400 ]; do echo \"line $i of a long failure output\"; i=$((i+1)); done\ntest \"$(cat answer.txt)\" = 42\n"}),
        ),
        Reply::openai_tool_call("run_command", &json!({"command": "sh check.sh"})),
        Reply::openai_text(&reflection.to_string()),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "answer.txt", "content": "42\n"}),
        ),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    opts.config.llm.budgets = dandori_config::TokenBudgets::default();
    let budget = opts.config.llm.budgets.reflection;
    assert_eq!(budget, 500);
    let out = dandori_runner::run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion
    );
    assert_eq!(server.remaining(), 0);
    server.assert_no_violations();

    // The reflection request: compact, no tools, within the budget with its answer.
    let b = bodies(&server);
    let refl_req = &b[2];
    assert!(refl_req.get("tools").is_none(), "{refl_req}");
    let messages = refl_req["messages"].as_array().unwrap();
    let text: String = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let estimate = dandori_llm::estimate_tokens(&text);
    let max_tokens = refl_req["max_tokens"].as_u64().unwrap();
    assert!(
        estimate + max_tokens <= budget,
        "{estimate} + {max_tokens} > {budget}"
    );
    let user = messages[1]["content"].as_str().unwrap();
    assert!(user.contains("Step S01: Create the file of S01"), "{user}");
    assert!(user.contains("Success criteria: - S01 exists"), "{user}");
    assert!(user.contains("Action (error): run_command"), "{user}");
    assert!(user.contains("line 0 of a long failure output"), "{user}");
    assert!(!user.contains("line 399"), "the long result is cut: {user}");

    // The reflection went to the trace as the model's record, with the tokens.
    let refl = trace_events(&run_dir, "REFLECTION");
    let ok: Vec<&Value> = refl
        .iter()
        .filter(|e| e["data"]["reflection"]["action_evaluated"] == "run_command")
        .collect();
    assert_eq!(ok.len(), 1, "{refl:#?}");
    let data = &ok[0]["data"];
    assert_eq!(data["trigger"], "error");
    assert_eq!(data["reflection"]["status"], "failure");
    assert_eq!(data["tokens"]["prompt_estimate"], estimate);
    assert!(data["tokens"]["prompt_tokens"].as_u64().unwrap() <= budget);
    assert!(
        !refl.iter().any(|e| e["data"]["reflection"]["evaluation"]
            .as_str()
            .unwrap_or("")
            .contains("failed")),
        "{refl:#?}"
    );
}
