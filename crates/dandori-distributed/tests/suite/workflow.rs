//! The run workflow's scheduling decisions, apart from the engine.

use dandori_distributed::engine::next_generation;
use dandori_distributed::protocol::{OutcomeStatus, RunSpec, SpecStep, StepOutcome};
use dandori_distributed::workflow::Schedule;
use pretty_assertions::assert_eq;

fn step(id: &str, preds: &[usize], status: &str, commit: Option<&str>) -> SpecStep {
    SpecStep {
        step_id: id.to_string(),
        preds: preds.to_vec(),
        status: status.to_string(),
        commit: commit.map(str::to_string),
        attempts: u32::from(commit.is_some()),
    }
}

fn spec(steps: Vec<SpecStep>, max_parallel: usize, max_steps: u64) -> RunSpec {
    RunSpec {
        run_id: "run-1".to_string(),
        remote: "/srv/r.git".to_string(),
        planning: "{}".to_string(),
        work_start: "w0".to_string(),
        steps,
        max_parallel,
        max_steps,
    }
}

fn committed(commit: &str) -> StepOutcome {
    StepOutcome {
        commits: vec![commit.to_string()],
        ..StepOutcome::bare(OutcomeStatus::Committed, "host:1")
    }
}

fn failed() -> StepOutcome {
    StepOutcome {
        reason_code: Some("UNIT_TEST_FAILED".to_string()),
        ..StepOutcome::bare(OutcomeStatus::Failed, "host:2")
    }
}

/// Ids and bases of what `start_ready` starts.
fn starts(s: &mut Schedule) -> Vec<(String, Vec<String>)> {
    s.start_ready()
        .into_iter()
        .map(|(_, r)| (r.step_id, r.commits.into_iter().map(|(_, c)| c).collect()))
        .collect()
}

fn pending(s: &Schedule) -> Vec<&str> {
    s.state
        .steps
        .iter()
        .filter(|st| st.status == "pending")
        .map(|st| st.step_id.as_str())
        .collect()
}

fn ids(v: &[(String, Vec<String>)]) -> Vec<&str> {
    v.iter().map(|(id, _)| id.as_str()).collect()
}

#[test]
fn ready_steps_start_in_plan_order_within_the_parallel_limit_on_their_predecessors_commits() {
    // S01, S02 independent; S03 after S01; S04 after S02 and S03.
    let mut s = Schedule::new(spec(
        vec![
            step("S01", &[], "pending", None),
            step("S02", &[], "pending", None),
            step("S03", &[0], "pending", None),
            step("S04", &[1, 2], "pending", None),
        ],
        2,
        100,
    ));
    let first = starts(&mut s);
    assert_eq!(ids(&first), vec!["S01", "S02"]);
    assert_eq!(first[0].1, vec!["w0".to_string()]);
    // At the limit: nothing more.
    assert!(starts(&mut s).is_empty());
    s.finish(0, &committed("c1"));
    let next = starts(&mut s);
    assert_eq!(next, vec![("S03".to_string(), vec!["c1".to_string()])]);
    s.finish(2, &committed("c3"));
    assert!(starts(&mut s).is_empty(), "S04 waits for S02");
    s.finish(1, &committed("c2"));
    let last = starts(&mut s);
    assert_eq!(
        last,
        vec![("S04".to_string(), vec!["c2".to_string(), "c3".to_string()])]
    );
    assert_eq!(s.state.steps[3].attempt, 1);
    assert_eq!(s.state.steps[0].worker.as_deref(), Some("host:1"));
}

#[test]
fn dependents_of_a_failed_step_are_skipped_and_done_steps_are_not_started_again() {
    let mut s = Schedule::new(spec(
        vec![
            step("S01", &[], "done", Some("c1")),
            step("S02", &[0], "running", None),
            step("S03", &[1], "pending", None),
            step("S04", &[0], "pending", None),
        ],
        4,
        100,
    ));
    // A step cut off while running starts again; a done one never does.
    let first = starts(&mut s);
    assert_eq!(ids(&first), vec!["S02", "S04"]);
    assert_eq!(first[0].1, vec!["c1".to_string()]);
    s.finish(1, &failed());
    assert!(starts(&mut s).is_empty());
    assert_eq!(s.state.steps[2].status, "skipped");
    assert_eq!(
        s.state.steps[2].reason_code.as_deref(),
        Some("DEPENDENCY_FAILED")
    );
    assert_eq!(
        s.state.steps[1].reason_code.as_deref(),
        Some("UNIT_TEST_FAILED")
    );
    assert!(s.state.steps.iter().all(|st| st.status != "pending"));
}

#[test]
fn a_stop_or_the_step_limit_leaves_the_rest_unstarted() {
    let steps = || {
        vec![
            step("S01", &[], "pending", None),
            step("S02", &[], "pending", None),
            step("S03", &[], "pending", None),
        ]
    };
    let mut limited = Schedule::new(spec(steps(), 4, 2));
    assert_eq!(ids(&starts(&mut limited)), vec!["S01", "S02"]);
    assert_eq!(pending(&limited), vec!["S03"]);

    let mut stopped = Schedule::new(spec(steps(), 1, 100));
    assert_eq!(ids(&starts(&mut stopped)), vec!["S01"]);
    stopped.state.stopped = Some("EARLY_TERMINATION".to_string());
    stopped.finish(0, &committed("c1"));
    assert!(starts(&mut stopped).is_empty());
    assert_eq!(pending(&stopped), vec!["S02", "S03"]);
}

#[test]
fn a_finished_workflow_is_followed_by_the_next_generation_of_its_run() {
    assert_eq!(next_generation("run-7", "run-7"), "run-7.g2");
    assert_eq!(next_generation("run-7", "run-7.g2"), "run-7.g3");
    assert_eq!(next_generation("run.g", "run.g"), "run.g.g2");
}
