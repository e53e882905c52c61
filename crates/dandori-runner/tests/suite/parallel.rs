//! Parallel groups: independent steps run at the same time in pool worktrees and
//! are merged as soon as they finish, into a history that does not depend on the
//! timing; resource-dependent steps never run together.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_runner::CompletionStatus;

/// `step → (start_ns, end_ns)` recorded by the agent.
fn spans(ctl: &std::path::Path) -> BTreeMap<String, (u128, u128)> {
    let mut out = BTreeMap::new();
    for l in std::fs::read_to_string(ctl.join("spans")).unwrap().lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        out.insert(
            f[0].to_string(),
            (f[1].parse().unwrap(), f[2].parse().unwrap()),
        );
    }
    out
}

fn timed_agent(repo: &Repo) -> String {
    let ctl = repo.ctl();
    let agent = repo.agent(&format!(
        r#"start=$(date +%s%N)
mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt"
ls src > "src/$1/seen.txt"
sleep 0.6
echo "$1 $start $(date +%s%N)" >> "{}/spans""#,
        ctl.display()
    ));
    format!("sh {} {{step_id}}", agent.display())
}

#[test]
fn independent_steps_overlap_and_merge_into_their_dependent() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03").deps(&[]),
            S::new("S04")
                .deps(&["S01", "S02", "S03"])
                .unit("test -f src/S01/out.txt && test -f src/S03/out.txt"),
        ],
        json!({}),
    ));
    let mut opts = options(&repo, &run_dir, Some(timed_agent(&repo)));
    opts.config.runner.max_parallel_workers = 3;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    let sp = spans(&repo.ctl());
    let first_end = ["S01", "S02", "S03"]
        .iter()
        .map(|s| sp[*s].1)
        .min()
        .unwrap();
    let last_start = ["S01", "S02", "S03"]
        .iter()
        .map(|s| sp[*s].0)
        .max()
        .unwrap();
    let last_end = ["S01", "S02", "S03"]
        .iter()
        .map(|s| sp[*s].1)
        .max()
        .unwrap();
    assert!(
        last_start < first_end,
        "S01–S03 did not run together: {sp:?}"
    );
    assert!(
        sp["S04"].0 >= last_end,
        "S04 started before its inputs existed: {sp:?}"
    );
    // S04 builds on the plan-ordered merge of S01–S03, whatever order they ended in.
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "dandori/RQ-1/run-1"]),
        "S04: Do S04\n"
    );
    assert_eq!(
        repo.git(&["log", "-1", "--format=%s", "dandori/RQ-1/run-1^"]),
        "dandori: base of S04: merge S01, S02, S03\n"
    );
    assert_eq!(step_subjects(&repo), ["S01", "S02", "S03", "S04"]);
    // S04 saw the work of all three.
    let seen = repo.git(&["show", "dandori/RQ-1/run-1:src/S04/seen.txt"]);
    assert_eq!(seen, "S01\nS02\nS03\nS04\n");
    // Worktrees come from a pool of at most three (one per worker), reused.
    let starts = trace_events(&run_dir, "STEP_START");
    let worktrees: std::collections::BTreeSet<String> = starts
        .iter()
        .map(|e| e["data"]["worktree"].as_str().unwrap().to_string())
        .collect();
    let overlay = trace_events(&run_dir, "STEP_WORKSPACE")[0]["data"]["mechanism"] == "overlay";
    assert!(
        if overlay {
            // Copy-on-write workspaces: one per step, mounted at one fixed
            // directory per worker, reused.
            worktrees.len() <= 3 && worktrees.iter().all(|w| w.contains("/worktrees/ovl-"))
        } else {
            worktrees.len() <= 3 && worktrees.iter().all(|w| w.contains("/worktrees/pool-"))
        },
        "{worktrees:?}"
    );
    // The repository's worktree never left its branch, and is clean.
    assert_eq!(repo.git(&["symbolic-ref", "--short", "HEAD"]), "main\n");
    assert_eq!(
        repo.git(&["status", "--porcelain", "--", ".", ":(exclude).dandori"]),
        ""
    );
}

/// The step ids of the step commits on the work branch, sorted.
fn step_subjects(repo: &Repo) -> Vec<String> {
    let mut ids: Vec<String> = repo
        .commits("dandori/RQ-1/run-1")
        .into_iter()
        .filter(|(s, _)| !s.starts_with("dandori:"))
        .map(|(s, _)| s.split(':').next().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[test]
fn workers_limit_concurrency() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03").deps(&[]),
        ],
        json!({}),
    ));
    let mut opts = options(&repo, &run_dir, Some(timed_agent(&repo)));
    opts.config.runner.max_parallel_workers = 1;
    run(&opts).unwrap();
    let sp = spans(&repo.ctl());
    assert!(
        sp["S02"].0 >= sp["S01"].1 && sp["S03"].0 >= sp["S02"].1,
        "{sp:?}"
    );
}

#[test]
fn the_plans_worker_strategy_limits_the_workers() {
    let repo = Repo::new();
    let mut plan = planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03").deps(&[]),
        ],
        json!({}),
    );
    plan["execution_plan"] = json!({"execution_mode": "parallel", "execution_groups": [],
        "worker_strategy": {"type": "single", "max_parallel_workers": 3, "worker_timeout_ms": 300000}});
    let run_dir = repo.write_plan(&plan);
    let mut opts = options(&repo, &run_dir, Some(timed_agent(&repo)));
    opts.config.runner.max_parallel_workers = 3;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    let sp = spans(&repo.ctl());
    assert!(
        sp["S02"].0 >= sp["S01"].1 && sp["S03"].0 >= sp["S02"].1,
        "worker_strategy single ignored: {sp:?}"
    );
}

#[test]
fn the_plans_worker_timeout_bounds_the_agent() {
    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01")], json!({}));
    plan["execution_plan"] = json!({"execution_mode": "single", "execution_groups": [],
        "worker_strategy": {"type": "round_robin", "max_parallel_workers": 1, "worker_timeout_ms": 300}});
    let run_dir = repo.write_plan(&plan);
    let agent = repo.agent(r#"sleep 5; mkdir -p "src/$1"; echo x > "src/$1/out.txt""#);
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    let started = std::time::Instant::now();
    run(&opts).unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        json!("AGENT_TIMEOUT")
    );
}

#[test]
fn steps_sharing_a_target_path_never_run_together() {
    let repo = Repo::new();
    let mut a = S::new("S01").deps(&[]);
    a.targets = vec!["src/shared".to_string(), "src/S01".to_string()];
    let mut b = S::new("S02").deps(&[]);
    b.targets = vec!["src/shared/b.rs".to_string(), "src/S02".to_string()];
    let run_dir = repo.write_plan(&planning(vec![a, b, S::new("S03").deps(&[])], json!({})));
    let mut opts = options(&repo, &run_dir, Some(timed_agent(&repo)));
    opts.config.runner.max_parallel_workers = 3;
    run(&opts).unwrap();
    let sp = spans(&repo.ctl());
    assert!(sp["S02"].0 >= sp["S01"].1, "resource edge ignored: {sp:?}");
    assert!(
        sp["S03"].0 < sp["S01"].1,
        "S03 should run beside S01: {sp:?}"
    );
}

#[test]
fn dependency_graph_edges_of_the_plan_are_followed() {
    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01"), S::new("S02"), S::new("S03")], json!({}));
    plan["dependency_graph"] = json!({
        "edges": [{"from": "S01", "to": "S03", "type": "data"}],
        "execution_groups": [],
        "critical_path": ["S01", "S03"]
    });
    let run_dir = repo.write_plan(&plan);
    let mut opts = options(&repo, &run_dir, Some(timed_agent(&repo)));
    opts.config.runner.max_parallel_workers = 3;
    run(&opts).unwrap();
    let sp = spans(&repo.ctl());
    assert!(
        sp["S02"].0 < sp["S01"].1,
        "S01 and S02 are independent: {sp:?}"
    );
    assert!(sp["S03"].0 >= sp["S01"].1, "{sp:?}");
}

#[test]
fn a_failed_step_skips_only_its_dependents() {
    let repo = Repo::new();
    let ctl = repo.ctl();
    let agent = repo.agent(&format!(
        r#"echo "$1" >> "{}/calls"
[ "$1" = S01 ] && exit 1
mkdir -p "src/$1"; echo 1 > "src/$1/x""#,
        ctl.display()
    ));
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03").deps(&["S01"]),
            S::new("S04").deps(&["S03"]),
            S::new("S05").deps(&["S02"]),
        ],
        json!({}),
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.runner.max_parallel_workers = 2;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    let st: Vec<(String, String)> = statuses(&run_dir);
    assert_eq!(
        st,
        [
            ("S01", "failed"),
            ("S02", "done"),
            ("S03", "skipped"),
            ("S04", "skipped"),
            ("S05", "done")
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect::<Vec<_>>()
    );
    let mut calls: Vec<String> = std::fs::read_to_string(ctl.join("calls"))
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        vec!["S01", "S02", "S05"],
        "skipped steps must never run"
    );
}

/// Writes `src/<step>.txt`; with `jitter`, after a delay that differs per step.
struct WriteFile {
    jitter: bool,
}

impl dandori_runner::executor::Executor for WriteFile {
    fn name(&self) -> &'static str {
        "write-file"
    }
    fn execute(
        &self,
        req: &dandori_runner::executor::ExecRequest<'_>,
    ) -> Result<dandori_runner::executor::StepExecution, dandori_runner::RunnerError> {
        if self.jitter {
            let n: u64 = req.step_id[1..].parse().unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis((n * 37) % 5 * 40));
        }
        std::fs::create_dir_all(req.workdir.join("src")).unwrap();
        std::fs::write(
            req.workdir.join(format!("src/{}.txt", req.step_id)),
            req.step_id,
        )
        .unwrap();
        Ok(dandori_runner::executor::StepExecution {
            outcome: dandori_runner::executor::ExecOutcome::Completed,
            tokens: Default::default(),
            actions: 1,
            reflections: Vec::new(),
            summary: String::new(),
            tooling: None,
            calls: Vec::new(),
        })
    }
}

#[test]
fn a_wide_dag_gives_the_same_history_whatever_the_timing() {
    let mut steps = Vec::new();
    let ids: Vec<&'static str> = (1..=20)
        .map(|i| &*Box::leak(format!("S{i:02}").into_boxed_str()))
        .collect();
    for (i, id) in ids.iter().enumerate() {
        let deps: Vec<&'static str> = if i < 5 {
            Vec::new()
        } else {
            vec![ids[i - 5], ids[i - 4]]
        };
        steps.push(S::new(id).deps(&deps).targets(&[&format!("src/{id}.txt")]));
    }
    let repo = Repo::new();
    repo.write_plan(&planning(steps, json!({})));
    let other = repo.copy();
    let mut tips = Vec::new();
    // Five workers with steps of uneven length, then one worker without delays.
    for (r, workers, jitter) in [(&repo, 5, true), (&other, 1, false)] {
        let mut opts = options(r, &r.path.join(".dandori/runs/RQ-1/run-1"), None);
        opts.executor_override = Some(std::sync::Arc::new(WriteFile { jitter }));
        opts.config.runner.max_parallel_workers = workers;
        let out = run(&opts).unwrap();
        assert_eq!(
            out.completion.status,
            CompletionStatus::Completed,
            "{:#?}",
            out.completion.steps
        );
        let want: Vec<String> = ids.iter().map(|id| id.to_string()).collect();
        assert_eq!(step_subjects(r), want);
        tips.push(r.git(&["rev-parse", "dandori/RQ-1/run-1"]));
    }
    assert_eq!(tips[0], tips[1], "the history depends on the timing");
}
