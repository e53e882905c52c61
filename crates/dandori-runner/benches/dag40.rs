//! A 40-step DAG (8 levels of 5 steps, each step depending on two steps of the level
//! above) run by a fake executor of fixed latency, on a real temporary git
//! repository with real worktrees, commits and cherry-picks.
//!
//! Reported (stderr, one run each, then criterion's timing):
//! * wall time ÷ the critical-path bound (8 levels × latency) with 5 workers;
//! * dandori's own overhead per step: a zero-latency executor with one worker,
//!   wall time ÷ 40.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_config::Config;
use dandori_runner::executor::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use dandori_runner::{CompletionStatus, RunOptions, RunnerError};
use serde_json::json;

const LEVELS: usize = 8;
const WIDTH: usize = 5;

struct FixedLatency(Duration);

impl Executor for FixedLatency {
    fn name(&self) -> &'static str {
        "fixed-latency"
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        std::thread::sleep(self.0);
        std::fs::create_dir_all(req.workdir.join("src")).unwrap();
        std::fs::write(
            req.workdir.join(format!("src/{}.txt", req.step_id)),
            req.step_id,
        )
        .unwrap();
        Ok(StepExecution {
            outcome: ExecOutcome::Completed,
            tokens: TokenUsage::default(),
            actions: 1,
            reflections: Vec::new(),
            summary: "fixed latency".to_string(),
            tooling: None,
        })
    }
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

fn plan() -> serde_json::Value {
    let mut steps = Vec::new();
    for l in 0..LEVELS {
        for w in 0..WIDTH {
            let id = format!("S{:02}", l * WIDTH + w + 1);
            let deps: Vec<String> = if l == 0 {
                Vec::new()
            } else {
                [w, (w + 1) % WIDTH]
                    .iter()
                    .map(|p| format!("S{:02}", (l - 1) * WIDTH + p + 1))
                    .collect()
            };
            steps.push(json!({
                "step_id": id, "title": format!("step {id}"), "role": "implementer",
                "intent": "write a file", "scope": {"target_paths": [format!("src/{id}.txt")], "max_diff_lines": 100},
                "inputs": {"request_path": "r.md"}, "commands": {}, "success_criteria": ["file"],
                "links_to_ac": ["AC-01", "AC-02", "AC-03"],
                "expected_diff": {"lines_max": 100, "files_max": 1, "risk_level": "low"},
                "outputs": {"patch_path": "p", "log_prefix": "l"}, "depends_on": deps
            }));
        }
    }
    json!({
        "version": "1.0", "request_id": "RQ-B", "run_id": "bench", "created_at": "2026-01-01T00:00:00Z",
        "base_branch": "main", "work_branch": "dandori/bench",
        "limits": {"max_diff_lines": 100, "timeout_sec": 60, "max_steps_per_run": 100, "max_autofix_cycles": 0},
        "context": {"summary": "bench", "constraints": [], "test_instructions": {},
            "acceptance_criteria": [
                {"id": "AC-01", "given": "g", "when": "w", "then": "t"},
                {"id": "AC-02", "given": "g", "when": "w", "then": "t"},
                {"id": "AC-03", "given": "g", "when": "w", "then": "t"}]},
        "steps": steps,
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
            "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 0},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    })
}

/// A fresh repository with the plan; returns (tempdir guard, repo, run dir).
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Bench"]);
    git(&repo, &["config", "user.email", "bench@example.invalid"]);
    std::fs::write(repo.join("README.md"), "bench\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let run_dir = repo.join(".dandori/runs/RQ-B/bench");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("planning.json"), plan().to_string()).unwrap();
    (dir, repo, run_dir)
}

fn run_once(latency: Duration, workers: u32) -> Duration {
    let (_guard, repo, run_dir) = setup();
    let mut config = Config::default();
    config.runner.max_parallel_workers = workers;
    config.planning.reflection.enabled = false;
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    );
    let opts = RunOptions {
        target: run_dir,
        repo,
        config,
        executor: None,
        executor_override: Some(Arc::new(FixedLatency(latency))),
        approve: false,
        resume: false,
        base_env: env,
        environment: None,
        progress: None,
    };
    let start = Instant::now();
    let out = dandori_runner::run(&opts).unwrap();
    let wall = start.elapsed();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    wall
}

/// Latencies per step from `DANDORI_BENCH_LATENCY_MS` (comma-separated), default
/// 1000 and 200; criterion times the first.
fn latencies() -> Vec<Duration> {
    let v = std::env::var("DANDORI_BENCH_LATENCY_MS").unwrap_or_else(|_| "1000,200".to_string());
    let ms: Vec<Duration> = v
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .map(Duration::from_millis)
        .collect();
    if ms.is_empty() {
        vec![Duration::from_millis(1000)]
    } else {
        ms
    }
}

fn bench(c: &mut Criterion) {
    let lats = latencies();
    let lat = lats[0];
    // The longest dependency chain has LEVELS steps, each taking at least `l`.
    for &l in &lats {
        let bound = l * LEVELS as u32;
        let wall = run_once(l, WIDTH as u32);
        eprintln!(
            "dag40: latency {} ms, {WIDTH} workers: wall {:.2} s / critical-path bound {:.2} s = {:.3}",
            l.as_millis(),
            wall.as_secs_f64(),
            bound.as_secs_f64(),
            wall.as_secs_f64() / bound.as_secs_f64()
        );
    }
    let overhead = run_once(Duration::ZERO, 1);
    eprintln!(
        "dag40: overhead per step (zero latency, 1 worker): {:.1} ms ({:.2} s / 40 steps)",
        overhead.as_secs_f64() * 1000.0 / 40.0,
        overhead.as_secs_f64()
    );
    let mut g = c.benchmark_group("dag40");
    g.sample_size(10);
    g.bench_function("zero_latency_1_worker", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_once(Duration::ZERO, 1)).sum())
    });
    g.bench_function("fixed_latency_5_workers", |b| {
        b.iter_custom(|iters| (0..iters).map(|_| run_once(lat, WIDTH as u32)).sum())
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
