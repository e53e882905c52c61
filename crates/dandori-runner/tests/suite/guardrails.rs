//! Run-level guardrails: AC coverage with follow-up steps (seed 001 §10.5–10.6),
//! limits.max_steps_per_run, max_consecutive_failures, total_timeout.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_runner::CompletionStatus;

fn agent_cmd(repo: &Repo) -> String {
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#);
    format!("sh {} {{step_id}}", agent.display())
}

/// Subjects of the step commits on the work branch, oldest first (merge commits
/// of the runner left out).
fn step_subjects(repo: &Repo) -> Vec<String> {
    repo.commits("dandori/RQ-1/run-1")
        .into_iter()
        .map(|(s, _)| s)
        .filter(|s| !s.starts_with("dandori:"))
        .collect()
}

#[test]
fn an_uncovered_acceptance_criterion_gets_a_follow_up_step() {
    let repo = Repo::new();
    let mut plan = planning(
        vec![S::new("S01").acs(&["AC-01"]), S::new("S02").acs(&["AC-02"])],
        json!({}),
    );
    // The follow-up's test command: red on the base, green once it did its work.
    plan["context"]["test_instructions"]["unit"] = json!("test -d src/F01");
    let run_dir = repo.write_plan(&plan);
    let out = run(&options(&repo, &run_dir, Some(agent_cmd(&repo)))).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion.coverage
    );
    assert_eq!(out.completion.follow_ups.len(), 1);
    assert_eq!(out.completion.follow_ups[0].step_id, "F01");
    assert_eq!(out.completion.follow_ups[0].ac, "AC-03");
    // Seed 001 §10.6: a criterion no step linked is a high-priority gap; the
    // follow-up suggests reading, searching, patching and running the tests.
    assert_eq!(out.completion.follow_ups[0].priority, "high");
    assert_eq!(
        out.completion.follow_ups[0].suggested_tools,
        vec!["read_file", "search", "apply_patch", "run_command"]
    );
    // S01 and S02 merged in plan order, then the follow-up on top.
    assert_eq!(
        step_subjects(&repo),
        vec!["S01: Do S01", "S02: Do S02", "F01: Follow-up: cover AC-03"]
    );
    let evals = trace_events(&run_dir, "COVERAGE_EVALUATION");
    assert_eq!(evals.len(), 2);
    assert_eq!(
        evals[0]["data"]["result"]["critical_gaps"],
        json!(["AC-03"])
    );
    assert_eq!(evals[0]["data"]["result"]["should_continue"], true);
    assert_eq!(evals[1]["data"]["result"]["overall_coverage"], 1.0);
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("F01 (done, high priority)"), "{report}");
    // A second run finds the follow-up's proof commit and adds nothing.
    let again = run(&options(&repo, &run_dir, Some(agent_cmd(&repo)))).unwrap();
    assert_eq!(again.completion.status, CompletionStatus::Completed);
    assert_eq!(step_subjects(&repo).len(), 3);
}

#[test]
fn the_iteration_limit_stops_follow_ups_and_the_gap_is_reported() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").acs(&["AC-01", "AC-02"])],
        json!({}),
    ));
    let mut opts = options(&repo, &run_dir, Some(agent_cmd(&repo)));
    opts.config.planning.revision.max_revisions = 1;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    // The gap gets its follow-up step (seed 001 §10.6), left pending: no iteration left.
    assert_eq!(out.completion.follow_ups.len(), 1);
    assert_eq!(out.completion.follow_ups[0].ac, "AC-03");
    assert_eq!(
        out.completion.follow_ups[0].status,
        dandori_plan::StepStatus::Pending
    );
    assert_eq!(
        out.completion
            .coverage
            .rules_applied
            .last()
            .map(String::as_str),
        Some("rule3_max_iterations")
    );
    let errors = std::fs::read_to_string(run_dir.join("errors.json")).unwrap();
    assert!(
        errors.contains("AC_NOT_COVERED") && errors.contains("AC-03"),
        "{errors}"
    );
}

/// Issue 36: five criteria no step links get five follow-ups; the first three
/// keep failing, and the fourth and fifth still run (in the next iteration,
/// before the failed ones are tried again), within the iteration limit.
#[test]
fn follow_ups_past_the_first_three_run_while_those_keep_failing() {
    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01").acs(&["AC-01"])], json!({}));
    for n in 4..=6 {
        plan["context"]["acceptance_criteria"]
            .as_array_mut()
            .unwrap()
            .push(json!({"id": format!("AC-0{n}"), "given": "a repo", "when": "the run ends", "then": format!("part {n} exists")}));
    }
    let run_dir = repo.write_plan(&plan);
    let ran = repo.path.join("../ran.txt");
    let agent = repo.agent(&format!(
        r#"echo "$1" >> {}
case "$1" in F01|F02|F03) exit 1 ;; esac
mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#,
        ran.display()
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.planning.revision.max_revisions = 3;
    let out = run(&opts).unwrap();
    let follow_ups: Vec<(String, String, dandori_plan::StepStatus)> = out
        .completion
        .follow_ups
        .iter()
        .map(|f| (f.step_id.clone(), f.ac.clone(), f.status))
        .collect();
    use dandori_plan::StepStatus::{Done, Failed};
    assert_eq!(
        follow_ups,
        [
            ("F01".to_string(), "AC-02".to_string(), Failed),
            ("F02".to_string(), "AC-03".to_string(), Failed),
            ("F03".to_string(), "AC-04".to_string(), Failed),
            ("F04".to_string(), "AC-05".to_string(), Done),
            ("F05".to_string(), "AC-06".to_string(), Done),
        ]
    );
    // Iteration 1: F01-F03; iteration 2: the untried F04 and F05 first, then F01
    // again; iteration 3 is the last: nothing more runs.
    let calls = std::fs::read_to_string(&ran).unwrap();
    let calls: Vec<&str> = calls.lines().filter(|l| l.starts_with('F')).collect();
    assert_eq!(
        calls,
        ["F01", "F02", "F03", "F04", "F05", "F01"],
        "{calls:?}"
    );
    assert_eq!(out.completion.status, CompletionStatus::Failed);
}

#[test]
fn max_steps_per_run_pauses_and_resume_continues() {
    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01"), S::new("S02")], json!({}));
    plan["limits"]["max_steps_per_run"] = json!(1);
    let run_dir = repo.write_plan(&plan);
    let opts = options(&repo, &run_dir, Some(agent_cmd(&repo)));
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Paused);
    assert_eq!(out.completion.exit_code, 5);
    assert_eq!(stage(&run_dir)["current_step_index"], 1);
    assert_eq!(stage(&run_dir)["status"], "running");
    let mut opts = opts;
    opts.resume = true;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert_eq!(stage(&run_dir)["current_step_index"], 2);
    assert_eq!(stage(&run_dir)["status"], "done");
}

#[test]
fn consecutive_step_failures_end_the_run_early() {
    let repo = Repo::new();
    let agent = repo.agent("exit 1");
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03").deps(&[]),
        ],
        json!({}),
    ));
    let mut opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    opts.config
        .planning
        .execution
        .early_termination
        .max_consecutive_failures = 2;
    opts.config.runner.max_parallel_workers = 1;
    let out = run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert_eq!(out.completion.exit_code, 6);
    assert!(
        out.completion
            .summary
            .reason
            .as_deref()
            .unwrap()
            .starts_with("EARLY_TERMINATION")
    );
    let st = statuses(&run_dir);
    assert_eq!(st[2].1, "pending", "the third step never started: {st:?}");
    assert_eq!(trace_events(&run_dir, "EARLY_TERMINATION").len(), 1);
}

#[test]
fn total_timeout_stops_starting_steps() {
    let repo = Repo::new();
    // The limit counts from the run's start (gates, baseline, the workspaces'
    // set-up included): 4 s leave room for those on a loaded machine, and S01
    // outlasts what is left of them.
    let agent = repo.agent(r#"sleep 4.2; mkdir -p "src/$1"; echo 1 > "src/$1/x""#);
    let run_dir = repo.write_plan(&planning(vec![S::new("S01"), S::new("S02")], json!({})));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.planning.execution.total_timeout = 4;
    let out = run(&opts).unwrap();
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
            .starts_with("TOTAL_TIMEOUT")
    );
    assert_eq!(statuses(&run_dir)[0].1, "done");
    assert_eq!(statuses(&run_dir)[1].1, "pending");
}

/// The periodic reflections of a one-step run whose step has `complexity` and six
/// actions (the agent and five unit commands), with `interval` configured or not.
fn interval_reflections(complexity: Option<serde_json::Value>, interval: Option<u32>) -> usize {
    let repo = Repo::new();
    let mut step = S::new("S01").unit("test -d src/S01");
    for _ in 0..4 {
        step = step.unit("true");
    }
    let mut plan = planning(vec![step], json!({}));
    if let Some(c) = complexity {
        plan["steps"][0]["estimated_complexity"] = c;
    }
    let run_dir = repo.write_plan(&plan);
    let mut opts = options(&repo, &run_dir, Some(agent_cmd(&repo)));
    opts.config.planning.reflection.trigger_interval = interval;
    let out = run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::Completed,
        "{:#?}",
        out.completion
    );
    trace_events(&run_dir, "REFLECTION")
        .iter()
        .filter(|e| e["data"]["trigger"] == "interval")
        .count()
}

#[test]
fn the_reflection_interval_follows_the_step_complexity_unless_configured() {
    // Seed 000 §11.1.3: simple → on errors only, moderate → every 5, complex → every 3.
    assert_eq!(interval_reflections(Some(json!("low")), None), 0);
    assert_eq!(interval_reflections(Some(json!(2)), None), 0);
    assert_eq!(interval_reflections(Some(json!("medium")), None), 1);
    assert_eq!(interval_reflections(Some(json!("high")), None), 2);
    assert_eq!(interval_reflections(Some(json!(9)), None), 2);
    // No complexity anywhere in the plan: moderate.
    assert_eq!(interval_reflections(None, None), 1);
    // Configured explicitly: the configuration wins.
    assert_eq!(interval_reflections(Some(json!("low")), Some(2)), 3);
    assert_eq!(interval_reflections(Some(json!("high")), Some(0)), 0);
}
