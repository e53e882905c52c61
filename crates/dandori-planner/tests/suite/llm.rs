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

/// The user's data directory of these tests (the plan cache's key), outside
/// every repository.
fn data_home() -> String {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .display()
        .to_string()
}

fn planner_with(p: ProviderConfig, budgets: &TokenBudgets) -> LlmPlanner {
    let env = BTreeMap::from([
        ("FAKE_KEY".to_string(), KEY.to_string()),
        ("DANDORI_DATA_HOME".to_string(), data_home()),
    ]);
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
            "Add Priority to the model and store",
            "Expose priority in the API",
            "Document the query parameters"
        ]
    );
    // Test-first (issue 20): the model's criteria name no test, so the steps
    // linking them write their tests first; no step of its own does.
    assert!(
        o.planning
            .steps
            .iter()
            .all(|s| s.extra.get("tdd_phase").is_none())
    );
    assert!(
        o.planning
            .steps
            .iter()
            .filter(|s| !s.links_to_ac.is_empty() && !s.title.starts_with("Document"))
            .all(|s| s.intent.contains("Test first")),
        "{:?}",
        o.planning.steps
    );
    assert_eq!(
        o.planning.steps[1].consumes.as_deref(),
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
    let planning_prompt = usage["prompt_tokens"]["planning_prompt"].as_u64().unwrap();
    // Estimated by script, erring high (docs/llm.md, "Measurements").
    assert!(planning_prompt < 2500, "{planning_prompt}");
    // The repository context went with the planning call.
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("todo/store.py"), "{body}");
    // Seed 002 §3.5.2: each detected environment file with a summary of its contents.
    assert!(
        body.contains("detected files:\\n- README.md: A tiny task-list")
            && body.contains("\\n- pyproject.toml: [build-system]; requires"),
        "{body}"
    );
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
    // A silent server: the first-token limit (the request's 1 s by default).
    assert!(
        // The first-token and request limits are both 1 s here: either may fire.
        (reasons[4].contains("no first token") && reasons[4].contains("within 1s"))
            || reasons[4].contains("timed out after 1s"),
        "{reasons:?}"
    );
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
    // The offline planner's whole plan (issue 38), and why.
    assert!(o.planning.steps.len() > 1);
    let fallback = &event(&o, "PLANNING_FALLBACK")[0];
    assert_eq!(fallback["reason_code"], json!("LLM_HTTP_ERROR"));
    let details = fallback["error_details"].as_str().unwrap();
    assert!(details.contains("quota exhausted"), "{details}");
    // Both failed calls are in the trace.
    let calls = event(&o, "LLM_CALL");
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c["outcome"] == json!("failed")));
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
        conversation: 8000,
        ..TokenBudgets::default()
    };
    let planner = planner_with(provider(ProviderKind::Openai, &server.base_url()), &budgets);
    let o = plan_with(repo.path(), &planner).unwrap();
    assert_eq!(server.request_count(), 0);
    let fallback = &event(&o, "PLANNING_FALLBACK")[0];
    assert_eq!(fallback["reason_code"], json!("TOKEN_BUDGET_EXCEEDED"));
    assert_eq!(fallback["config_key"], json!("llm.budgets.planning"));
    let details = fallback["error_details"].as_str().unwrap().to_string();
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
    // The feasible subtasks.
    assert_eq!(o.planning.steps.len(), 2);
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
        // The size estimation's limit bounds its answer, from the first token.
        Reply::openai_stream_stalled("{\"estimated_tokens\": 1", Duration::from_secs(3)),
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

/// Seed 000 §12.2.2: cache entries are sealed with the user's key (no request
/// word, no plan text in clear on disk), and a request holding a secret (in any
/// form) is never cached: no entry, no store event, the model asked each time.
#[test]
fn the_cache_is_sealed_and_never_keeps_a_secret() {
    use dandori_test_support::secret_forms::{SECRET, SECRET_VAR, forms};
    let repo = example_repo("todo-api");
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan_answer().to_string(), 6),
    ]);
    plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    let plans = repo.path().join(".dandori/cache/plans");
    let entries: Vec<_> = std::fs::read_dir(&plans).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1);
    let on_disk = std::fs::read(entries[0].path()).unwrap();
    let shown = String::from_utf8_lossy(&on_disk);
    for word in ["todo", "request", "steps", "planner", "version"] {
        assert!(!shown.contains(word), "{word} in clear: {shown}");
    }
    let request = std::fs::read_to_string(repo.path().join("requests/RQ-001.md")).unwrap();
    let env = BTreeMap::from([(SECRET_VAR.to_string(), SECRET.to_string())]);
    for (name, form) in forms(SECRET) {
        let _ = std::fs::remove_dir_all(&plans);
        std::fs::write(
            repo.path().join("requests/RQ-001.md"),
            format!("{request}\nUse this credential:\n{form}\n"),
        )
        .unwrap();
        server.push(vec![
            Reply::openai_stream(&size_answer().to_string(), 2),
            Reply::openai_stream(&plan_answer().to_string(), 6),
        ]);
        let p = planner(ProviderKind::Openai, &server).with_secret_env(&env);
        let o = plan_with(repo.path(), &p).unwrap();
        assert!(
            !names(&o).iter().any(|n| n == "PLAN_CACHE_STORE"),
            "{name}: stored"
        );
        let miss = &event(&o, "PLAN_CACHE_MISS")[0];
        assert_eq!(
            miss["reason"],
            json!("the request holds a secret: not cached"),
            "{name}"
        );
        assert!(
            !plans.exists() || std::fs::read_dir(&plans).unwrap().next().is_none(),
            "{name}"
        );
    }
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
    assert!(
        o.planning.steps[1].intent.starts_with(
            "POST accepts priority, GET filters and sorts (goal: Priority in the API)"
        ),
        "{}",
        o.planning.steps[1].intent
    );
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("Decompose top-down"), "{body}");
    assert!(body.contains("Decomposition level detailed"), "{body}");
}

/// Seed 001 §10.3: the model's `mode`, `complexity_score`, `suggested_tools` and
/// `suggested_persona` reach planning.json; `execution_strategy` comes from the
/// plan's own graph; a `depends_on` that only restates a data edge (task_2
/// consumes what task_1 produces) is not kept as a second, logical edge.
#[test]
fn the_models_seed_001_fields_are_kept() {
    let repo = example_repo("todo-api");
    let mut plan = plan_answer();
    let d = &mut plan["task_decomposition"];
    d["mode"] = json!("complex");
    d["complexity_score"] = json!(0.7);
    d["execution_strategy"] = json!("parallel");
    d["subtasks"][0]["suggested_tools"] = json!(["read_file", "apply_patch"]);
    d["subtasks"][0]["suggested_persona"] = json!("a Python developer who knows dataclasses");
    d["subtasks"][1]["suggested_tools"] = json!(["run_command"]);
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan.to_string(), 6),
    ]);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation.findings);
    let p = &o.planning;
    assert_eq!(p.mode, Some(dandori_plan::PlanMode::Complex));
    assert_eq!(p.complexity_score, Some(0.7));
    // S01 / S02 are the model's task_1 / task_2.
    let s = |i: usize| &p.steps[i];
    assert_eq!(
        s(0).suggested_tools.as_deref(),
        Some(&["read_file".to_string(), "apply_patch".to_string()][..])
    );
    assert_eq!(
        s(0).suggested_persona.as_deref(),
        Some("a Python developer who knows dataclasses")
    );
    assert_eq!(
        s(1).suggested_tools.as_deref(),
        Some(&["run_command".to_string()][..])
    );
    // task_2 → task_1 is a data edge only.
    let edges = &p.dependency_graph.as_ref().unwrap().edges;
    let between = |a: &str, b: &str| -> Vec<dandori_plan::EdgeType> {
        edges
            .iter()
            .filter(|e| e.from == a && e.to == b)
            .map(|e| e.kind)
            .collect()
    };
    assert!(
        between("S01", "S02").contains(&dandori_plan::EdgeType::Data),
        "{edges:?}"
    );
    assert!(
        !between("S01", "S02").contains(&dandori_plan::EdgeType::Logical),
        "{edges:?}"
    );
    // The model said parallel; the plan's graph is one chain (the model, the
    // API on it, the docs on that).
    assert_eq!(
        p.execution_strategy,
        Some(dandori_plan::ExecutionStrategy::Sequential)
    );
    // The saved planning.json has them, and validates.
    let text = std::fs::read_to_string(o.run_dir.join("planning.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["mode"], json!("complex"));
    assert_eq!(
        v["steps"][0]["suggested_persona"],
        json!("a Python developer who knows dataclasses")
    );
    assert!(!dandori_plan::validation::validate_str(&text).has_fail());
}

/// `planning.auto_adjust_level` with `planning.complexity_threshold`: the request's
/// size picks the decomposition level the model is asked for; without
/// auto-adjustment the configured level is used.
#[test]
fn auto_adjust_level_picks_the_decomposition_level_by_the_request_size() {
    let repo = example_repo("todo-api");
    let ask = |auto: bool, simple: u32| -> (String, Option<dandori_plan::PlanMode>) {
        let server = FakeLlmServer::start(vec![
            Reply::openai_stream(&size_answer().to_string(), 2),
            Reply::openai_stream(&plan_answer().to_string(), 6),
        ]);
        let planner = planner(ProviderKind::Openai, &server);
        let mut opts = PlanOptions::new(
            repo.path(),
            RequestSource::File(repo.path().join("requests/RQ-001.md")),
        );
        opts.planner = Some(&planner);
        opts.config.planning.cache.enabled = false;
        opts.config.planning.auto_adjust_level = auto;
        opts.config.planning.complexity_threshold.simple = simple;
        opts.config.planning.decomposition_level = dandori_config::DecompositionLevel::Moderate;
        let o = dandori_planner::plan(&opts).unwrap();
        (server.requests()[1].body.to_string(), o.planning.mode)
    };
    // RQ-001 is about 300 tokens: standard under the default thresholds.
    let (body, mode) = ask(true, 100);
    assert_eq!(mode, Some(dandori_plan::PlanMode::Standard));
    assert!(body.contains("Decomposition level moderate"), "{body}");
    // With `simple: 1000` it is a simple request: minimal planning.
    let (body, mode) = ask(true, 1000);
    assert_eq!(mode, Some(dandori_plan::PlanMode::Simple));
    assert!(body.contains("Decomposition level minimal"), "{body}");
    // Without auto-adjustment the configured level stays.
    let (body, mode) = ask(false, 1000);
    assert_eq!(mode, Some(dandori_plan::PlanMode::Simple));
    assert!(body.contains("Decomposition level moderate"), "{body}");
}

/// Seed 003 §5.1 delete → create: the model lists the re-creation of a file
/// before its deletion; the plan deletes first (a logical edge with that
/// reason), whatever the model's order.
#[test]
fn a_path_deleted_and_created_again_is_deleted_first() {
    let repo = example_repo("todo-api");
    let mut plan = plan_answer();
    plan["task_decomposition"]["subtasks"] = json!([
        {"id": "task_1", "title": "Create README.md from the new template",
         "intent": "write README.md again from the new template", "target_paths": ["README.md"],
         "depends_on": [], "complexity": 2, "estimated_lines": 40, "links_to_ac": ["AC-01"]},
        {"id": "task_2", "title": "Delete the outdated README.md",
         "intent": "remove README.md", "target_paths": ["README.md"],
         "depends_on": [], "complexity": 1, "estimated_lines": 40, "links_to_ac": ["AC-02", "AC-03"]}
    ]);
    plan["action_plan"]["execution_order"] = json!(["task_1", "task_2"]);
    for ac in plan["acceptance_criteria"].as_array_mut().unwrap() {
        ac["type"] = json!("nonfunctional");
    }
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 2),
        Reply::openai_stream(&plan.to_string(), 6),
    ]);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation.findings);
    let titles: Vec<&str> = o.planning.steps.iter().map(|s| s.title.as_str()).collect();
    assert_eq!(
        titles,
        vec![
            "Delete the outdated README.md",
            "Create README.md from the new template"
        ]
    );
    assert_eq!(
        o.planning.steps[1].depends_on.as_deref(),
        Some(&["S01".to_string()][..])
    );
    let edges = &o.planning.dependency_graph.as_ref().unwrap().edges;
    assert!(
        edges
            .iter()
            .any(|e| e.from == "S01" && e.to == "S02" && e.kind == dandori_plan::EdgeType::Logical),
        "{edges:?}"
    );
}

/// Issue 20's leftover: the planner asks the model for each criterion's proof,
/// and a check the model names (a command or a test id) becomes
/// `acceptance_criteria[].check`; criteria it proves need no test-first step.
#[test]
fn checks_the_model_names_become_the_criteria_checks() {
    let repo = example_repo("todo-api");
    let mut answer = plan_answer();
    let acs = answer["acceptance_criteria"].as_array_mut().unwrap();
    acs[0]["check"] = json!({"test": "tests/test_api.py::test_filter_by_priority"});
    acs[1]["check"] = json!({"test": "tests/test_store.py::test_sort_by_priority"});
    acs[2]["check"] = json!({"command": " python -m pytest -q tests/test_api.py -k urgent "});
    let server = FakeLlmServer::start(vec![
        Reply::openai_stream(&size_answer().to_string(), 4),
        Reply::openai_stream(&answer.to_string(), 12),
    ])
    .expect_api_key(KEY);
    let o = plan_with(repo.path(), &planner(ProviderKind::Openai, &server)).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation.findings);
    let checks: Vec<Option<&Value>> = o
        .planning
        .context
        .acceptance_criteria
        .iter()
        .map(|a| a.extra.get("check"))
        .collect();
    assert_eq!(
        checks,
        vec![
            Some(&json!({"test": "tests/test_api.py::test_filter_by_priority"})),
            Some(&json!({"test": "tests/test_store.py::test_sort_by_priority"})),
            Some(&json!({"command": "python -m pytest -q tests/test_api.py -k urgent"})),
        ]
    );
    assert!(
        o.planning
            .steps
            .iter()
            .all(|s| s.extra.get("tdd_phase").is_none()),
        "every criterion has its proof: no test-first step"
    );
    // The system prompt asked for them.
    let body = server.requests()[1].body.to_string();
    assert!(body.contains("\\\"check\\\""), "{body}");
}
