//! The LLM planner on the examples: prompt tokens sent per planning call (the
//! planning prompt — system, instructions, task, schema — against the seed 000
//! §13.4 budget of 2 000, and the repository context reported separately), and the
//! time of a whole `plan()` through the fake model against the offline planner.
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use dandori_planner::llm::LlmPlanner;
use dandori_planner::{PlanOptions, RequestSource};
use dandori_test_support::fixtures::{plan_answer, size_answer};
use dandori_test_support::{FakeLlmServer, Reply, TempGitRepo};

fn todo_api() -> TempGitRepo {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
        let Ok(read) = std::fs::read_dir(dir.join(rel)) else {
            return;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".dandori" || name == "__pycache__" || name == ".pytest_cache" {
                continue;
            }
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            if entry.path().is_dir() {
                walk(dir, &path, out);
            } else if let Ok(text) = std::fs::read_to_string(entry.path()) {
                out.push((path, text));
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/todo-api");
    let mut files = Vec::new();
    walk(&root, "", &mut files);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    TempGitRepo::with_files(&refs)
}

fn llm_planner(url: &str) -> LlmPlanner {
    let p = ProviderConfig::new("fake", ProviderKind::Openai, url, "fake-model");
    LlmPlanner::new(&p, &TokenBudgets::default(), &|_| None).unwrap_or_else(|e| panic!("{e}"))
}

fn options<'a>(repo: &Path, request: &str, planner: Option<&'a LlmPlanner>) -> PlanOptions<'a> {
    let mut opts = PlanOptions::new(repo, RequestSource::File(repo.join(request)));
    opts.config.planning.cache.enabled = false;
    if let Some(p) = planner {
        opts.planner = Some(p);
    }
    opts
}

fn bench(c: &mut Criterion) {
    let repo = todo_api();
    println!("prompt tokens per planning call (estimated, chars/4):");
    println!("request | planning prompt | repo context | size-estimation prompt | sent in body");
    for request in [
        "requests/RQ-001.md",
        "requests/RQ-002.md",
        "requests/RQ-003.md",
    ] {
        let server = FakeLlmServer::start(vec![
            Reply::openai_stream(&size_answer().to_string(), 2),
            Reply::openai_stream(&plan_answer().to_string(), 4),
        ]);
        let planner = llm_planner(&server.base_url());
        let outcome = dandori_planner::plan(&options(repo.path(), request, Some(&planner)))
            .unwrap_or_else(|e| panic!("{e}"));
        let trace =
            dandori_trace::read_trace(&outcome.trace_jsonl).unwrap_or_else(|e| panic!("{e}"));
        let usage = trace
            .iter()
            .find(|e| e.event == "LLM_USAGE")
            .map(|e| e.data.clone())
            .unwrap_or_default();
        let requests = server.requests();
        let tokens = |body: &serde_json::Value| {
            let mut text = String::new();
            for m in body["messages"].as_array().into_iter().flatten() {
                text.push_str(m["content"].as_str().unwrap_or(""));
            }
            text.push_str(&body["response_format"].to_string());
            dandori_llm::estimate_tokens(&text)
        };
        println!(
            "{request} | {} | {} | {} | {}",
            usage["prompt_tokens"]["planning_prompt"],
            usage["prompt_tokens"]["repo_context"],
            requests.first().map(|r| tokens(&r.body)).unwrap_or(0),
            requests.get(1).map(|r| tokens(&r.body)).unwrap_or(0),
        );
    }

    let mut group = c.benchmark_group("plan_rq001");
    group.sample_size(20);
    group.bench_function("offline", |b| {
        b.iter(|| dandori_planner::plan(&options(repo.path(), "requests/RQ-001.md", None)))
    });
    // One answer that satisfies both the size-estimation and the planning schema, so
    // a repeating server can serve every call.
    let mut both = plan_answer();
    if let (Some(obj), Some(size)) = (both.as_object_mut(), size_answer().as_object()) {
        obj.extend(size.clone());
    }
    let server = FakeLlmServer::start_repeating(Reply::openai_stream(&both.to_string(), 8));
    group.bench_function("llm_fake_model", |b| {
        b.iter_batched(
            // A fresh planner per plan: its token ledger starts empty, as in one CLI run.
            || llm_planner(&server.base_url()),
            |planner| {
                dandori_planner::plan(&options(repo.path(), "requests/RQ-001.md", Some(&planner)))
                    .unwrap_or_else(|e| panic!("{e}"))
            },
            criterion::BatchSize::SmallInput,
        )
    });
    server.assert_no_violations();
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
