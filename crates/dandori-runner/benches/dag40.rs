//! A 40-step DAG (8 levels of 5 steps, each step depending on two steps of the level
//! above) run by a fake executor of fixed latency, on real generated git
//! repositories (500, 5 000, 50 000 and 100 000 files) with real step workspaces
//! (pool worktrees or copy-on-write overlays), commits and merges.
//!
//! Reported (stderr, one run each, then criterion's timing of the smallest case):
//! for every repository size, latency per step and worker count, the wall time and
//! wall ÷ the critical-path bound (8 levels × latency with 5 workers, 40 steps ×
//! latency with 1 worker), and the CPU time of the run (this process, i.e. the
//! runner, plus every child it waited for: git and the hooks) ÷ 40 steps — the
//! figure a busy machine does not move; dandori's own overhead per step is the
//! zero-latency run with one worker, wall ÷ 40. Beside the CPU per step of the
//! whole run (÷ 40), the **marginal CPU per step**: (CPU of the 40-step run − CPU
//! of a 1-step run of the same repository and settings) ÷ 39, what one more step
//! costs once the run's fixed costs (gates, the first checkout) are paid. The
//! run's extra disk use is the peak growth of the file system's used blocks while
//! it runs (sampled every 20 ms; other writers on the same disk add noise).
//!
//! `DANDORI_BENCH_FILES` (default `500,5000,50000,100000`),
//! `DANDORI_BENCH_LATENCY_MS` (default `1000,200,0`), `DANDORI_BENCH_WORKERS`
//! (default `1,5`) and `DANDORI_BENCH_WORKSPACE` (default `pool,overlay`:
//! `runner.step_workspace`) choose the grid; `DANDORI_BENCH_MARGINAL=0` skips
//! the 1-step runs, `DANDORI_BENCH_CRITERION=0` criterion's timing;
//! `DANDORI_BENCH_REPOS=<dir>` keeps the generated repositories there between
//! runs (`<dir>/files-<n>`).
//!
//! **LangGraph on the same DAG**: where `DANDORI_BENCH_LANGGRAPH` names a Python
//! with `langgraph` (default: `target/test-tools/langgraph/bin/python`, which
//! `scripts/test.sh` installs from PyPI), every cell with a latency also runs
//! `benches/langgraph_dag40.py` on the same repository: the same 40 steps as a
//! LangGraph graph (`max_concurrency` = workers), each step sleeping the latency,
//! writing its file and committing it (`git add` + `git commit` under one lock,
//! in the one checkout). Its wall and CPU (the Python process and its git
//! children) are those of the graph's run, without the interpreter's start.
//!
//! **Disk** (`DANDORI_BENCH_DISK=1`): after the timed cells of a repository,
//! one more 40-step run per workspace kind (0.2 s, 5 workers, not timed) while
//! a thread adds up the allocated bytes under the run directory (its state and
//! the step workspaces; an overlay's merged view is a mount point only the
//! step's namespace sees, so it counts as empty) every 50 ms; printed: that
//! peak, and the growth of the repository's `.git` (objects, administrative
//! files of the workspaces) from before to after the run.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_config::{Config, StepWorkspaceKind};
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
            calls: Vec::new(),
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

fn plan(levels: usize, width: usize) -> serde_json::Value {
    let mut steps = Vec::new();
    for l in 0..levels {
        for w in 0..width {
            let id = format!("S{:02}", l * width + w + 1);
            let deps: Vec<String> = if l == 0 {
                Vec::new()
            } else {
                [w, (w + 1) % width]
                    .iter()
                    .map(|p| format!("S{:02}", (l - 1) * width + p + 1))
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
        // Non-functional criteria: a step that writes a file has no test to turn
        // green, and the run is to complete (proven completion would otherwise,
        // rightly, refuse to call the run done).
        "context": {"summary": "bench", "constraints": [], "test_instructions": {},
            "acceptance_criteria": [
                {"id": "AC-01", "given": "g", "when": "w", "then": "t", "type": "nonfunctional"},
                {"id": "AC-02", "given": "g", "when": "w", "then": "t", "type": "nonfunctional"},
                {"id": "AC-03", "given": "g", "when": "w", "then": "t", "type": "nonfunctional"}]},
        "steps": steps,
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
            "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 0},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    })
}

/// A repository of `files` files (spread over 200 × 13 directories, like a real
/// source tree) committed on `main`.
struct BenchRepo {
    _dir: Option<tempfile::TempDir>,
    repo: PathBuf,
    run_dir: PathBuf,
}

fn generate(files: usize) -> BenchRepo {
    // Kept across runs under `DANDORI_BENCH_REPOS` (made once: 100 000 files
    // take minutes to write, commit and pack).
    if let Some(keep) = std::env::var_os("DANDORI_BENCH_REPOS") {
        let repo = PathBuf::from(keep).join(format!("files-{files}"));
        if !repo.join(".git/refs/heads/main").exists() && !repo.join(".git/packed-refs").exists() {
            let _ = std::fs::remove_dir_all(&repo);
            std::fs::create_dir_all(&repo).unwrap();
            fill(&repo, files);
        }
        let run_dir = repo.join(".dandori/runs/RQ-B/bench");
        return BenchRepo {
            _dir: None,
            repo,
            run_dir,
        };
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    fill(&repo, files);
    let run_dir = repo.join(".dandori/runs/RQ-B/bench");
    BenchRepo {
        _dir: Some(dir),
        repo,
        run_dir,
    }
}

/// `files` files committed on `main` of a new repository at `repo`, packed.
fn fill(repo: &Path, files: usize) {
    let repo = repo.to_path_buf();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Bench"]);
    git(&repo, &["config", "user.email", "bench@example.invalid"]);
    std::fs::write(repo.join("README.md"), "bench\n").unwrap();
    for i in 1..files {
        let d = repo.join(format!("d{}/e{}", i % 200, i % 13));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}.txt")), format!("file {i}\n")).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["-c", "gc.auto=0", "commit", "-q", "-m", "initial"]);
    // Packed like a real repository: no automatic `gc` of thousands of loose
    // objects started by a later git command in the background of the timed runs.
    git(&repo, &["-c", "gc.autoDetach=false", "gc", "-q"]);
}

/// Back to `main` with no work branch and a fresh run directory.
fn reset(r: &BenchRepo, steps: usize) {
    git(&r.repo, &["checkout", "-q", "main"]);
    let _ = Command::new("git")
        .args(["branch", "-q", "-D", "dandori/bench"])
        .current_dir(&r.repo)
        .output();
    let _ = std::fs::remove_dir_all(&r.run_dir);
    git(&r.repo, &["worktree", "prune"]);
    std::fs::create_dir_all(&r.run_dir).unwrap();
    let planning = if steps == 1 {
        plan(1, 1)
    } else {
        plan(LEVELS, WIDTH)
    };
    std::fs::write(r.run_dir.join("planning.json"), planning.to_string()).unwrap();
}

/// The time from the first step's end to the last one's, ÷ the steps after the
/// first: the per-step cost once the pool exists (the first step of a worker also
/// creates its worktree, a checkout of the whole repository once per run), from
/// `stage.json`'s timings.
fn steady_per_step_ms(r: &BenchRepo) -> Option<f64> {
    let text = std::fs::read_to_string(r.run_dir.join("stage.json")).ok()?;
    let stage: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut ends: Vec<f64> = stage["timings"]
        .as_object()?
        .values()
        .filter_map(|t| t["finished_ms"].as_f64())
        .collect();
    ends.sort_by(f64::total_cmp);
    let (first, last) = (ends.first()?, ends.last()?);
    (ends.len() > 1).then(|| (last - first) / (ends.len() - 1) as f64)
}

/// User + system CPU time of this process and of the children it has waited for.
fn cpu_now() -> (Duration, Duration) {
    use nix::sys::resource::{UsageWho, getrusage};
    let of = |who| {
        getrusage(who).map_or(Duration::ZERO, |u| {
            let t = |tv: nix::sys::time::TimeVal| {
                Duration::new(tv.tv_sec() as u64, tv.tv_usec() as u32 * 1000)
            };
            t(u.user_time()) + t(u.system_time())
        })
    };
    (of(UsageWho::RUSAGE_SELF), of(UsageWho::RUSAGE_CHILDREN))
}

/// This process's peak resident size (`VmHWM`), in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// Used bytes of the file system holding `dir`.
fn used_bytes(dir: &Path) -> u64 {
    nix::sys::statvfs::statvfs(dir).map_or(0, |s| {
        s.blocks().saturating_sub(s.blocks_free()) * s.fragment_size()
    })
}

/// What one run measured.
struct Measured {
    wall: Duration,
    /// (runner CPU, children CPU).
    cpu: (Duration, Duration),
    /// Peak growth of the file system's used bytes during the run.
    disk: u64,
    /// Peak resident memory of this process (the runner) during the run.
    peak_rss: u64,
}

/// One run of `steps` (40, or 1 for the fixed costs): its wall time to the
/// result, the CPU time it took (the runner and its waited-for children; the
/// fixed-latency executor only sleeps) and its peak extra disk use.
fn run_once(
    r: &BenchRepo,
    latency: Duration,
    workers: u32,
    workspace: StepWorkspaceKind,
    steps: usize,
) -> Measured {
    reset(r, steps);
    run_prepared(r, latency, workers, workspace)
}

/// [`run_once`] on a run directory [`reset`] made.
fn run_prepared(
    r: &BenchRepo,
    latency: Duration,
    workers: u32,
    workspace: StepWorkspaceKind,
) -> Measured {
    let mut config = Config::default();
    config.runner.max_parallel_workers = workers;
    config.runner.step_workspace = workspace;
    config.planning.reflection.enabled = false;
    let mut env = BTreeMap::new();
    env.insert(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    );
    let opts = RunOptions {
        target: r.run_dir.clone(),
        repo: r.repo.clone(),
        config,
        executor: None,
        executor_override: Some(Arc::new(FixedLatency(latency))),
        approve: false,
        resume: false,
        base_env: env,
        environment: None,
        progress: None,
        dispatch: None,
    };
    let before = used_bytes(&r.repo);
    // The peak resident size counts from here (`clear_refs` 5 resets it).
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let done = std::sync::atomic::AtomicBool::new(false);
    let cpu0 = cpu_now();
    let start = Instant::now();
    let (out, peak) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut peak = before;
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                peak = peak.max(used_bytes(&r.repo));
                std::thread::sleep(Duration::from_millis(20));
            }
            peak.max(used_bytes(&r.repo))
        });
        let out = dandori_runner::run(&opts).unwrap();
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        (out, sampler.join().unwrap())
    });
    let wall = start.elapsed();
    let cpu1 = cpu_now();
    let cpu = (cpu1.0.saturating_sub(cpu0.0), cpu1.1.saturating_sub(cpu0.1));
    // Time to the result: the pool's files are deleted in the background (the
    // CLI waits for that after printing); the next run starts once they are gone.
    dandori_runner::git::wait_for_removals();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    Measured {
        wall,
        cpu,
        disk: peak.saturating_sub(before),
        peak_rss: peak_rss(),
    }
}

fn workspaces() -> Vec<StepWorkspaceKind> {
    std::env::var("DANDORI_BENCH_WORKSPACE")
        .unwrap_or_else(|_| "pool,overlay".to_string())
        .split(',')
        .filter_map(|w| match w.trim() {
            "pool" => Some(StepWorkspaceKind::Pool),
            "overlay" => Some(StepWorkspaceKind::Overlay),
            "auto" => Some(StepWorkspaceKind::Auto),
            _ => None,
        })
        .collect()
}

fn kind_name(ws: StepWorkspaceKind) -> &'static str {
    match ws {
        StepWorkspaceKind::Auto => "auto",
        StepWorkspaceKind::Pool => "pool",
        StepWorkspaceKind::Overlay => "overlay",
    }
}

/// The Python that runs `langgraph_dag40.py`, when there is one.
fn langgraph_python() -> Option<PathBuf> {
    let p = match std::env::var_os("DANDORI_BENCH_LANGGRAPH") {
        Some(p) => PathBuf::from(p),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/test-tools/langgraph/bin/python"),
    };
    p.exists().then_some(p)
}

/// One run of the DAG by LangGraph in `r`'s checkout (on a branch of its own,
/// deleted after): (wall, CPU of the Python process, CPU of its git children).
fn run_langgraph(python: &Path, r: &BenchRepo, latency_ms: u64, workers: u64) -> (f64, f64, f64) {
    reset(r, 1);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/langgraph_dag40.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&r.repo)
        .arg(latency_ms.to_string())
        .arg(workers.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "langgraph_dag40.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    git(&r.repo, &["checkout", "-q", "-f", "main"]);
    git(&r.repo, &["branch", "-q", "-D", "langgraph/bench"]);
    let f = |k: &str| v[k].as_f64().unwrap();
    (f("wall_s"), f("cpu_self_s"), f("cpu_children_s"))
}

/// Bytes allocated to the files under `dir` (not following links).
fn allocated(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            total += m.blocks() * 512;
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

/// The disk pass (see the module documentation): peak bytes under the run
/// directory, peak growth of `.git` during the run, growth of `.git` after it.
fn disk_use(r: &BenchRepo, workspace: StepWorkspaceKind) -> (u64, u64, u64) {
    let git_dir = r.repo.join(".git");
    reset(r, LEVELS * WIDTH);
    let before = allocated(&git_dir);
    let done = std::sync::atomic::AtomicBool::new(false);
    let (run_peak, git_peak) = std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let (mut run, mut git) = (0, 0);
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                run = allocated(&r.run_dir).max(run);
                git = allocated(&git_dir).max(git);
                std::thread::sleep(Duration::from_millis(50));
            }
            (run, git)
        });
        run_prepared(r, Duration::from_millis(200), 5, workspace);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        sampler.join().unwrap()
    });
    let after = allocated(&git_dir);
    (
        run_peak,
        git_peak.saturating_sub(before),
        after.saturating_sub(before),
    )
}

fn grid(var: &str, default: &str) -> Vec<u64> {
    std::env::var(var)
        .unwrap_or_else(|_| default.to_string())
        .split(',')
        .filter_map(|x| x.trim().parse().ok())
        .collect()
}

fn bench(c: &mut Criterion) {
    let files = grid("DANDORI_BENCH_FILES", "500,5000,50000,100000");
    let latencies = grid("DANDORI_BENCH_LATENCY_MS", "1000,200,0");
    let workers = grid("DANDORI_BENCH_WORKERS", "1,5");
    let marginal_runs = std::env::var("DANDORI_BENCH_MARGINAL").as_deref() != Ok("0");
    let langgraph = langgraph_python();
    for &n in &files {
        let r = generate(n as usize);
        for &ms in &latencies {
            for &w in &workers {
                for ws in workspaces() {
                    let l = Duration::from_millis(ms);
                    let one = match marginal_runs {
                        true => run_once(&r, l, w as u32, ws, 1),
                        false => Measured {
                            wall: Duration::ZERO,
                            cpu: (Duration::ZERO, Duration::ZERO),
                            disk: 0,
                            peak_rss: 0,
                        },
                    };
                    let m = run_once(&r, l, w as u32, ws, LEVELS * WIDTH);
                    let (wall, (own, children)) = (m.wall, m.cpu);
                    let cpu = own + children;
                    let fixed = one.cpu.0 + one.cpu.1;
                    let marginal = cpu.saturating_sub(fixed).as_secs_f64() * 1000.0
                        / (LEVELS * WIDTH - 1) as f64;
                    // The longest chain has LEVELS steps; one worker runs all 40 in a row.
                    let chain = if w as usize >= WIDTH {
                        LEVELS
                    } else {
                        LEVELS * WIDTH
                    };
                    let bound = l * chain as u32;
                    let ratio = if bound.is_zero() {
                        "-".to_string()
                    } else {
                        format!("{:.3}", wall.as_secs_f64() / bound.as_secs_f64())
                    };
                    eprintln!(
                        "dag40: {n} files, {} workspaces, latency {ms} ms, {w} workers: wall {:.2} s, bound {:.2} s, ratio {ratio}, cpu {:.2} s ({:.1} ms per step: runner {:.1}, children {:.1}; marginal {marginal:.1} ms per step over a 1-step run of {:.2} s cpu), extra disk {:.1} MB, runner peak RSS {:.0} MB{}",
                        kind_name(ws),
                        wall.as_secs_f64(),
                        bound.as_secs_f64(),
                        cpu.as_secs_f64(),
                        cpu.as_secs_f64() * 1000.0 / (LEVELS * WIDTH) as f64,
                        own.as_secs_f64() * 1000.0 / (LEVELS * WIDTH) as f64,
                        children.as_secs_f64() * 1000.0 / (LEVELS * WIDTH) as f64,
                        fixed.as_secs_f64(),
                        m.disk as f64 / 1e6,
                        m.peak_rss as f64 / 1e6,
                        if ms == 0 && w == 1 {
                            format!(
                                ", overhead per step {:.1} ms (after the first step: {:.1} ms)",
                                wall.as_secs_f64() * 1000.0 / (LEVELS * WIDTH) as f64,
                                steady_per_step_ms(&r).unwrap_or(f64::NAN)
                            )
                        } else {
                            String::new()
                        }
                    );
                }
                if let Some(python) = langgraph.as_deref().filter(|_| ms > 0) {
                    let (wall, own, children) = run_langgraph(python, &r, ms, w);
                    let chain = if w as usize >= WIDTH {
                        LEVELS
                    } else {
                        LEVELS * WIDTH
                    };
                    let bound = ms as f64 / 1000.0 * chain as f64;
                    eprintln!(
                        "dag40: {n} files, langgraph, latency {ms} ms, {w} workers: wall {wall:.2} s, bound {bound:.2} s, ratio {:.3}, cpu {:.2} s ({:.1} ms per step: python {:.1}, git {:.1})",
                        wall / bound,
                        own + children,
                        (own + children) * 1000.0 / (LEVELS * WIDTH) as f64,
                        own * 1000.0 / (LEVELS * WIDTH) as f64,
                        children * 1000.0 / (LEVELS * WIDTH) as f64,
                    );
                }
            }
        }
        if std::env::var("DANDORI_BENCH_DISK").as_deref() == Ok("1") {
            for ws in workspaces() {
                let (run, git_peak, git_after) = disk_use(&r, ws);
                eprintln!(
                    "dag40 disk: {n} files, {} workspaces: run directory peak {:.2} MB, .git growth peak {:.2} MB, after the run {:.2} MB",
                    kind_name(ws),
                    run as f64 / 1e6,
                    git_peak as f64 / 1e6,
                    git_after as f64 / 1e6
                );
            }
        }
    }
    if std::env::var("DANDORI_BENCH_CRITERION").as_deref() == Ok("0") {
        return;
    }
    let small = generate(500);
    let mut g = c.benchmark_group("dag40");
    g.sample_size(10);
    for ws in workspaces() {
        let name = format!("zero_latency_1_worker_500_files_{}", kind_name(ws));
        g.bench_function(&name, |b| {
            b.iter_custom(|iters| {
                (0..iters)
                    .map(|_| run_once(&small, Duration::ZERO, 1, ws, LEVELS * WIDTH).wall)
                    .sum()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
