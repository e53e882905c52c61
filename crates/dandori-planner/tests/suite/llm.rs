//! The LLM planner end to end: `plan()` on a real git repository (examples/todo-api)
//! against the fake LLM server over real HTTP, through both provider kinds, with each
//! fault the client must survive, the fail-closed fallback, unclear goals, partial
//! decompositions, and the plan cache.

use std::collections::BTreeMap;
use std::time::Duration;

use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use dandori_planner::llm::LlmPlanner;
use dandori_planner::{PlanOptions, PlanOutcome, PlannerError, RequestSource};
use dandori_test_support::fixtures::{plan_answer, size_answer};
use dandori_test_support::{FakeLlmServer, Reply};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::support::{example_repo, trace_events};

const KEY: &str = "sk-fake-abcdefghijklmnop0123";

fn provider(kind: ProviderKind, url: &str) -> ProviderConfig {
    let mut p = ProviderConfig::new("fake", kind, url, "fake-model");
    p.api_key_env = Some("FAKE_KEY".into());
    p.request_timeout_secs = 1;
    p.stream_idle_timeout_secs = 1;
    p.retry_base_delay_ms = 5;
    p.max_retries = 4;
    p
}

fn planner(kind: ProviderKind, server: &FakeLlmServer) -> LlmPlanner {
    planner_with(provider(kind, &server.base_url()), &TokenBudgets::default())
}

fn planner_with(p: ProviderConfig, budgets: &TokenBudgets) -> LlmPlanner {
    let env = BTreeMap::from([("FAKE_KEY".to_string(), KEY.to_string())]);
    LlmPlanner::new(&p, budgets, &|k| env.get(k).cloned()).unwrap()
}

fn plan_with(repo: &std::path::Path, planner: &LlmPlanner) -> Result<PlanOutcome, PlannerError> {
    let mut opts = PlanOptions::new(repo, RequestSource::File(repo.join("requests/RQ-001.md")));
    opts.planner = Some(planner);
    dandori_planner::plan(&opts)
}

fn names(o: &PlanOutcome) -> Vec<String> {
    trace_events(o).into_iter().map(|e| e.event).collect()
}

fn event(o: &PlanOutcome, name: &str) -> Vec<Value> {
    trace_events(o)
        .into_iter()
        .filter(|e| e.event == name)
        .map(|e| e.data)
        .collect()
}

fn assert_llm_plan(o: &PlanOutcome) {
    assert!(
        o.planner.starts_with("llm:fake/fake-model"),
        "{}",
        o.planner
    );
    assert_eq!(o.skipped, None);
    assert!(o.validation.ok, "{:?}", o.validation.findings);
    let titles: Vec<&str> = o.planning.steps.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        vec![
            // Test-first (issue 20): the model's criteria name no test.
            "Write failing tests for AC-01, AC-02, AC-03",
            "Add Priority to the model and store",
            "Expose priority in the API",
            "Document the query parameters"
        ]
    );
    assert_eq!(
        o.planning.steps[0].extra.get("tdd_phase"),
        Some(&serde_json::json!("red"))
    );
    assert_eq!(
        o.planning.steps[2].consumes.as_deref(),
        Some(
            &[
                "Priority".to_string(),
                "Store.list(priority, sort)".to_string()
            ][..]
        )
    );
    let text = std::fs::read_to_string(&o.trace_jsonl).unwrap();
    assert!(!text.contains(KEY), "the key leaked into the trace");
}

#[test]
fn openai_plan_end_to_end() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 4),
        Reply::openai_stream(
            &format!("Here is the plan:\n```json\n{}\n```", plan_answer()),
            12,
        ),
    ])
    .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_llm_plan(&o);
    let n = names(&o);
    for expected in [
        "PLAN_CACHE_MISS",
        "LLM_CALL",
        "LLM_USAGE",
        "PLAN_CACHE_STORE",
    ] {
        assert!(
            n.iter().any(|x| x == expected),
            "{expected} missing in {n:?}"
        );
    }
    let size = &event(&o, "SIZE_ESTIMATION")[0];
    assert_eq!(size["estimated_file_count"], json!(5));
    assert_eq!(
        size["llm_reasoning"],
        json!("model, store, API, tests and README")
    );
    let usage = &event(&o, "LLM_USAGE")[0];
    assert_eq!(usage["phases"]["planning"]["calls"], json!(2));
    assert!(usage["prompt_tokens"]["planning_prompt"].as_u64().unwrap() < 2000);
    // The repository context went with the planning call.
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("todo/store.py"), "{body}");
    server.assert_no_violations();
}

#[test]
fn anthropic_plan_end_to_end() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::anthropic_stream_tool_use("size_estimation", &size_answer(), 3),
        Reply::anthropic_stream_tool_use("planning", &plan_answer(), 10),
    ])
    .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Anthropic, &server)).unwrap();
    assert_llm_plan(&o);
    let requests = server.requests();
    assert_eq!(
        requests[1].body["tool_choice"],
        json!({"type": "tool", "name": "planning"})
    );
    server.assert_no_violations();
}

#[test]
fn recovers_from_every_fault() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        // size estimation: rate limited, then fine
        Reply::rate_limited(1),
        Reply::openai_stream(&size_answer().to_string(), 2),
        // planning: 500, a cut stream, a garbage body, then malformed JSON (re-ask) …
        Reply::server_error(),
        Reply::openai_stream_cut(&plan_answer().to_string()),
        Reply::malformed_body(),
        Reply::openai_stream("{\"phase\": \"planning\", \"goal_understanding\": {", 3),
        // … the re-ask is slow (timeout, retried), then right.
        Reply::slow(Duration::from_secs(3), Reply::openai_stream("{}", 1)),
        Reply::rate_limited_ms(20),
        Reply::openai_stream(&plan_answer().to_string(), 8),
    ])
    .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_llm_plan(&o);
    assert_eq!(server.request_count(), 9);
    let calls = event(&o, "LLM_CALL");
    let attempts: Vec<u64> = calls
        .iter()
        .map(|c| c["attempts"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts, vec![2, 4, 3]);
    let reasons: Vec<String> = calls
        .iter()
        .flat_map(|c| c["retries"].as_array().unwrap().clone())
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert!(reasons[0].contains("HTTP 429"), "{reasons:?}");
    assert!(reasons[1].contains("HTTP 500"), "{reasons:?}");
    assert!(
        reasons[2].contains("ended before its final event"),
        "{reasons:?}"
    );
    assert!(reasons[3].contains("cannot decode"), "{reasons:?}");
    assert!(reasons[4].contains("timed out after 1s"), "{reasons:?}");
    assert!(reasons[5].contains("HTTP 429"), "{reasons:?}");
    // Retry-After: 1 was honoured.
    assert_eq!(calls[0]["retries"][0]["delay_ms"], json!(1000));
    let reask = &event(&o, "LLM_REASK")[0];
    assert!(
        reask["problems"][0]
            .as_str()
            .unwrap()
            .starts_with("the answer is not valid JSON")
    );
    server.assert_no_violations();
}

#[test]
fn anthropic_overload_and_cut_stream_are_retried() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::overloaded(),
        Reply::anthropic_stream_tool_use("size_estimation", &size_answer(), 3),
        Reply::anthropic_stream_cut("partial"),
        Reply::anthropic_stream_tool_use("planning", &plan_answer(), 10),
    ])
    .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Anthropic, &server)).unwrap();
    assert_llm_plan(&o);
    assert_eq!(server.request_count(), 4);
    server.assert_no_violations();
}

#[test]
fn model_failure_falls_back_to_the_offline_planner() {
    let repo = example_repo("todo-api");
    // Quota exhausted is not retried: one request per call, then the fallback.
    let server = FakeLlmServer::start(vec![Reply::quota_exhausted(), Reply::quota_exhausted()])
        .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_eq!(server.request_count(), 2);
    assert!(o.validation.ok);
    assert_eq!(o.planning.steps.len(), 1);
    let skipped = &event(&o, "PLANNING_SKIPPED")[0];
    assert_eq!(
        skipped["reason"],
        json!("planner llm:fake/fake-model failed: PLANNING_DRAFT_FAILED")
    );
    let details = skipped["error_details"].as_str().unwrap();
    assert!(details.contains("quota exhausted"), "{details}");
    let failed = &event(&o, "LLM_PLANNING_FAILED")[0];
    assert_eq!(failed["fallback"], json!("offline"));
    // Nothing is cached from a failed plan.
    assert!(!names(&o).iter().any(|n| n == "PLAN_CACHE_STORE"));
}

#[test]
fn budget_exceeded_falls_back_without_a_call() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![]);
    let budgets = TokenBudgets {
        planning: 50,
        planning_context: 0,
        reflection: 500,
        task: 10000,
    };
    let planner = planner_with(provider(ProviderKind::Openai, &server.base_url()), &budgets);
    let o = plan_with(repo.path(), &planner).unwrap();
    assert_eq!(server.request_count(), 0);
    let details = event(&o, "PLANNING_SKIPPED")[0]["error_details"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        details.contains("token budget exceeded for planning"),
        "{details}"
    );
}

#[test]
fn unclear_goal_stops_with_questions() {
    let repo = example_repo("todo-api");
    let unclear = json!({"phase": "planning", "error": {"type": "unclear_goal",
        "message": "The scope is unclear", "clarification_needed": ["Which endpoints?", "What is the default?"]},
        "comment": "Please clarify."});
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&unclear.to_string(), 3),
    ]);
    let err = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap_err();
    match err {
        PlannerError::UnclearGoal {
            message, questions, ..
        } => {
            assert_eq!(message, "The scope is unclear");
            assert_eq!(questions, vec!["Which endpoints?", "What is the default?"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn decomposition_failed_keeps_the_partial_plan() {
    let repo = example_repo("todo-api");
    let plan = plan_answer();
    let feasible = plan["task_decomposition"]["subtasks"].as_array().unwrap()[..2].to_vec();
    let failed = json!({"phase": "planning",
        "goal_understanding": plan["goal_understanding"],
        "acceptance_criteria": plan["acceptance_criteria"],
        "error": {"type": "decomposition_failed", "message": "README tooling is unknown",
            "partial_plan": {"feasible_subtasks": feasible,
                "infeasible_subtasks": [{"title": "Publish docs", "reason": "no docs site"}],
                "alternative_approaches": ["document in the README only"]}},
        "comment": "Partly decomposed."});
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&failed.to_string(), 5),
    ]);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_eq!(o.skipped, None);
    // The feasible subtasks and the test-first step before them.
    assert_eq!(o.planning.steps.len(), 3);
    let risks = o.planning.risks.clone().unwrap_or_default();
    assert!(
        risks.iter().any(|r| r.starts_with("not feasible: {")),
        "{risks:?}"
    );
    assert_eq!(event(&o, "DECOMPOSITION_FAILED")[0]["feasible"], json!(2));
}

#[test]
fn size_estimation_timeout_means_category_m_single_task() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::slow(Duration::from_secs(3), Reply::openai_text("{}")),
        Reply::openai_stream(&plan_answer().to_string(), 4),
    ]);
    let mut p = provider(ProviderKind::Openai, &server.base_url());
    p.request_timeout_secs = 5;
    let planner = planner_with(p, &TokenBudgets::default());
    let repo_path = repo.path();
    let mut opts = PlanOptions::new(
        repo_path,
        RequestSource::File(repo_path.join("requests/RQ-001.md")),
    );
    opts.planner = Some(&planner);
    opts.task_planning.size_estimation.timeout_ms = 300;
    let o = dandori_planner::plan(&opts).unwrap();
    assert_eq!(o.planning.steps.len(), 1);
    let skipped = &event(&o, "PLANNING_SKIPPED")[0];
    assert_eq!(
        skipped["reason"],
        json!("LLM timeout during size estimation")
    );
    let size = &event(&o, "SIZE_ESTIMATION")[0];
    assert_eq!(size["size_category"], json!("M"));
}

#[test]
fn second_identical_plan_is_a_cache_hit() {
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan_answer().to_string(), 6),
    ]);
    let first = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_eq!(server.request_count(), 2);
    // A new planner (a new process in real use) over the same repository state.
    let second = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_eq!(
        server.request_count(),
        2,
        "the cache hit must not call the model"
    );
    let hit = &event(&second, "PLAN_CACHE_HIT")[0];
    assert_eq!(hit["similarity"], json!(1.0));
    assert_eq!(hit["model_calls"], json!(0));
    // The same plan, apart from the run directory in the output paths.
    let steps = |o: &PlanOutcome| {
        serde_json::to_string(&o.planning.steps)
            .unwrap()
            .replace(&o.run_id, "[RUN_ID]")
    };
    assert_eq!(steps(&first), steps(&second));
    assert!(!names(&second).iter().any(|n| n == "LLM_CALL"));

    // A commit changes the repository state: the model is asked again.
    super::support::git(
        repo.path(),
        &["commit", "-q", "--allow-empty", "-m", "later"],
    );
    server.push(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan_answer().to_string(), 6),
    ]);
    plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_eq!(server.request_count(), 4);
}

#[test]
fn validation_failures_are_sent_back_once() {
    let repo = example_repo("todo-api");
    // task_1 consumes what task_2 produces while task_2 depends on task_1: a cycle
    // only the plan validation sees (produces → consumes edges).
    let mut cyclic = plan_answer();
    cyclic["task_decomposition"]["subtasks"][0]["consumes"] = json!(["GET /tasks?priority"]);
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&cyclic.to_string(), 6),
        Reply::openai_stream(&plan_answer().to_string(), 6),
    ]);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert_llm_plan(&o);
    let correction = &event(&o, "LLM_VALIDATION_CORRECTION")[0];
    let findings = correction["findings"].as_array().unwrap();
    assert_eq!(
        findings,
        &vec![
            json!("assembling planning.json: dependency cycle: S01 -> S02 -> S01"),
            json!("(steps are your subtasks: S01 = task_1, S02 = task_2, S03 = task_3)")
        ]
    );
    let sent = server.requests()[2].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let last = sent.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(last.starts_with("The plan you produced fails dandori's plan validation:\n- assembling planning.json: dependency cycle: S01 -> S02 -> S01\n"), "{last}");
    server.assert_no_violations();
}

#[test]
fn hierarchical_strategy_keeps_goals() {
    let repo = example_repo("todo-api");
    let mut plan = plan_answer();
    for (i, goal) in ["Priority in the data model", "Priority in the API", "Docs"]
        .iter()
        .enumerate()
    {
        plan["task_decomposition"]["subtasks"][i]["parent"] = json!(goal);
    }
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan.to_string(), 6),
    ]);
    let planner = planner(ProviderKind::Openai, &server);
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-001.md")),
    );
    opts.planner = Some(&planner);
    opts.config.planning.strategy = dandori_config::Strategy::Hierarchical;
    opts.config.planning.decomposition_level = dandori_config::DecompositionLevel::Detailed;
    let o = dandori_planner::plan(&opts).unwrap();
    assert_eq!(
        o.planning.steps[2].intent,
        "POST accepts priority, GET filters and sorts (goal: Priority in the API)"
    );
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("Decompose top-down"), "{body}");
    assert!(body.contains("Decomposition level detailed"), "{body}");
}
