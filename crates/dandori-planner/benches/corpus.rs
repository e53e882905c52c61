#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

//! Planning time per request over the request corpus
//! (`tests/fixtures/requests/corpus.jsonl`) on the fixture repositories: one
//! pass prints the percentiles of the per-request wall time (p50/p90/p99/max),
//! then criterion measures a short, a Japanese list and a long SWE-bench request.

use std::path::{Path, PathBuf};
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_planner::{PlanOptions, RequestSource};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

const REPOS: &[&str] = &["py-bookshelf", "ts-orders", "rs-ratelimit", "go-shortener"];

fn plan_once(repo: &str, text: &str, runs: &Path) -> bool {
    let mut opts = PlanOptions::new(
        fixtures().join("repos").join(repo),
        RequestSource::Text(text.to_string()),
    );
    opts.runs_root = Some(runs.to_path_buf());
    dandori_planner::plan(&opts).is_ok()
}

fn corpus() -> Vec<serde_json::Value> {
    std::fs::read_to_string(fixtures().join("requests/corpus.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn bench(c: &mut Criterion) {
    let runs = tempfile::tempdir().unwrap();
    let corpus = corpus();
    let mut times: Vec<f64> = Vec::new();
    let mut multi = 0usize;
    for (n, e) in corpus.iter().enumerate() {
        let text = e["text"].as_str().unwrap();
        let repo = REPOS[n % REPOS.len()];
        let t = Instant::now();
        let mut opts = PlanOptions::new(
            fixtures().join("repos").join(repo),
            RequestSource::Text(text.to_string()),
        );
        opts.runs_root = Some(runs.path().to_path_buf());
        if let Ok(o) = dandori_planner::plan(&opts)
            && o.planning.steps.len() > 1
        {
            multi += 1;
        }
        times.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    times.sort_by(f64::total_cmp);
    let pct = |p: f64| times[((times.len() - 1) as f64 * p).round() as usize];
    eprintln!(
        "corpus: {} requests, {} planned into more than one step; per request p50 {:.1} ms, p90 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        times.len(),
        multi,
        pct(0.5),
        pct(0.9),
        pct(0.99),
        times[times.len() - 1]
    );

    let pick = |shape: &str| {
        corpus
            .iter()
            .find(|e| e["shape"].as_str().is_some_and(|s| s.starts_with(shape)))
            .map(|e| e["text"].as_str().unwrap().to_string())
            .unwrap()
    };
    let one_liner = pick("one_liner");
    let ja_list = corpus
        .iter()
        .find(|e| e["lang"] == "ja" && e["shape"] == "feature_list_bulleted")
        .map(|e| e["text"].as_str().unwrap().to_string())
        .unwrap();
    let bug = pick("bug_report");
    c.bench_function("plan one-liner", |b| {
        b.iter(|| plan_once("py-bookshelf", &one_liner, runs.path()))
    });
    c.bench_function("plan japanese feature list", |b| {
        b.iter(|| plan_once("py-bookshelf", &ja_list, runs.path()))
    });
    c.bench_function("plan swe-bench problem statement", |b| {
        b.iter(|| plan_once("py-bookshelf", &bug, runs.path()))
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
