//! Fail-closed planning (seed 003 §9): whatever goes wrong in planning, a valid
//! single-step plan is written and PLANNING_SKIPPED says why.

use dandori_planner::{
    Draft, DraftPlanner, PlanOptions, PlannerError, PlanningContext, RequestSource,
};
use pretty_assertions::assert_eq;

use super::support::{example_repo, trace_events};

struct Failing;
impl DraftPlanner for Failing {
    fn name(&self) -> String {
        "llm:fake".into()
    }
    fn draft(&self, _: &PlanningContext) -> Result<Draft, PlannerError> {
        Err(PlannerError::Draft {
            planner: "llm:fake".into(),
            message: "timeout after 10000ms".into(),
        })
    }
}

/// The offline planner's draft with a dependency cycle between its first two subtasks.
struct Cyclic;
impl DraftPlanner for Cyclic {
    fn name(&self) -> String {
        "cyclic".into()
    }
    fn draft(&self, ctx: &PlanningContext) -> Result<Draft, PlannerError> {
        let mut d = dandori_planner::offline::SimplePlanner.draft(ctx)?;
        let (a, b) = (d.subtasks[0].key.clone(), d.subtasks[1].key.clone());
        d.subtasks[0].depends_on = vec![b];
        d.subtasks[1].depends_on = vec![a];
        Ok(d)
    }
}

fn skipped_event(o: &dandori_planner::PlanOutcome) -> serde_json::Value {
    let events = trace_events(o);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(names[0], "PLANNING_START");
    assert_eq!(names[1], "PLANNING_SKIPPED", "{names:?}");
    assert_eq!(names.last(), Some(&"PLANNING_END"));
    events[1].data.clone()
}

#[test]
fn failing_planner_falls_back_to_one_step() {
    let repo = example_repo("todo-api");
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-001.md")),
    );
    opts.planner = Some(&Failing);
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation);
    assert_eq!(o.planning.steps.len(), 1);
    assert_eq!(
        o.planning.execution_plan.as_ref().unwrap().execution_mode,
        dandori_plan::ExecutionMode::Single
    );
    let data = skipped_event(&o);
    assert_eq!(data["fallback_mode"], "single_task");
    assert_eq!(data["planning_skipped"], true);
    assert_eq!(
        data["reason"],
        "planner llm:fake failed: PLANNING_DRAFT_FAILED"
    );
    assert_eq!(
        data["error_details"],
        "planner llm:fake: timeout after 10000ms"
    );
    // Seed 003 §9.1: the fallback size category is M, no chunking.
    let size = o.planning.size_estimation.as_ref().unwrap();
    assert_eq!(size.size_category, dandori_plan::SizeCategory::M);
    assert!(!o.planning.chunking_decision.as_ref().unwrap().should_chunk);
    // The single step still covers every acceptance criterion.
    let links = &o.planning.steps[0].links_to_ac;
    for ac in &o.planning.context.acceptance_criteria {
        assert!(links.contains(&ac.id), "{} not linked", ac.id);
    }
}

#[test]
fn undecomposable_large_request_is_skipped_with_reason() {
    let repo = example_repo("todo-api");
    let text = "# Persist tasks\nPlease split this into steps: tasks must survive a restart of the server.";
    let o = dandori_planner::plan(&PlanOptions::new(
        repo.path(),
        RequestSource::Text(text.into()),
    ))
    .unwrap();
    assert_eq!(o.planning.steps.len(), 1);
    let data = skipped_event(&o);
    let reason = data["reason"].as_str().unwrap();
    assert!(reason.contains("user_requested_chunk"), "{reason}");
    assert!(reason.contains("could not be decomposed"), "{reason}");
    assert_eq!(o.skipped.as_deref(), Some(reason));
    assert!(o.validation.ok);
}

#[test]
fn dependency_cycle_runs_sequentially() {
    let repo = example_repo("todo-api");
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-001.md")),
    );
    opts.planner = Some(&Cyclic);
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.validation.ok);
    assert!(o.planning.steps.len() > 2);
    assert_eq!(
        o.planning.execution_plan.as_ref().unwrap().execution_mode,
        dandori_plan::ExecutionMode::Sequential
    );
    let events = trace_events(&o);
    let dep = events
        .iter()
        .find(|e| e.event == "DEPENDENCY_ANALYSIS")
        .unwrap();
    assert!(
        dep.data["fallback"]
            .as_str()
            .unwrap()
            .contains("sequential execution (safe mode)")
    );
}

#[test]
fn small_request_is_one_step_without_skipping() {
    let repo = example_repo("todo-api");
    let o = dandori_planner::plan(&PlanOptions::new(
        repo.path(),
        RequestSource::Text("Fix the typo in the server's startup message".into()),
    ))
    .unwrap();
    assert_eq!(o.planning.steps.len(), 1);
    assert_eq!(o.skipped, None);
    let names: Vec<String> = trace_events(&o).into_iter().map(|e| e.event).collect();
    assert!(!names.iter().any(|n| n == "PLANNING_SKIPPED"));
    // Fewer than three criteria in the request: derived ones, said so in assumptions.
    assert!(o.planning.context.acceptance_criteria.len() >= 3);
    assert!(
        o.planning
            .assumptions
            .as_ref()
            .unwrap()
            .iter()
            .any(|a| a.contains("acceptance criteria"))
    );
}
