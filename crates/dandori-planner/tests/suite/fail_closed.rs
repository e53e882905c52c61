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
            failure: None,
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

/// A model that cannot plan never makes the plan worse than no model: the
/// offline planner's whole plan, `PLANNING_FALLBACK` with the reason code and
/// cause, and an assumption saying so (issue 38).
#[test]
fn failing_planner_falls_back_to_the_offline_plan() {
    let repo = example_repo("todo-api");
    let request = RequestSource::File(repo.path().join("requests/RQ-001.md"));
    let offline = dandori_planner::plan(&PlanOptions::new(repo.path(), request.clone())).unwrap();
    let mut opts = PlanOptions::new(repo.path(), request);
    opts.planner = Some(&Failing);
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation);
    let titles = |p: &dandori_plan::Planning| -> Vec<String> {
        p.steps.iter().map(|s| s.title.clone()).collect()
    };
    assert_eq!(titles(&o.planning), titles(&offline.planning));
    assert!(o.planning.steps.len() > 1);
    assert_eq!(o.skipped, None);
    let fallback = o.fallback.clone().unwrap();
    assert_eq!(fallback.planner, "llm:fake");
    assert_eq!(fallback.fallback, "offline");
    assert_eq!(fallback.failure.reason_code, "PLANNING_DRAFT_FAILED");
    assert_eq!(
        fallback.failure.cause,
        "planner llm:fake: timeout after 10000ms"
    );
    let events = trace_events(&o);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert!(!names.contains(&"PLANNING_SKIPPED"), "{names:?}");
    let data = &events
        .iter()
        .find(|e| e.event == "PLANNING_FALLBACK")
        .unwrap()
        .data;
    assert_eq!(data["reason_code"], "PLANNING_DRAFT_FAILED");
    assert_eq!(data["fallback"], "offline");
    assert_eq!(data["steps"], o.planning.steps.len());
    assert!(
        o.planning
            .assumptions
            .as_ref()
            .unwrap()
            .iter()
            .any(|a| a.contains("The model's plan was not used (PLANNING_DRAFT_FAILED")),
        "{:?}",
        o.planning.assumptions
    );
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

/// A model's draft the assembler cannot use even as one step: two criteria with
/// the same id.
struct Unusable;
impl DraftPlanner for Unusable {
    fn name(&self) -> String {
        "llm:unusable".into()
    }
    fn draft(&self, ctx: &PlanningContext) -> Result<Draft, PlannerError> {
        let mut d = dandori_planner::offline::SimplePlanner.draft(ctx)?;
        let ac = dandori_plan::AcceptanceCriterion {
            id: "AC-01".into(),
            given: "g".into(),
            when: "w".into(),
            then: "t".into(),
            kind: None,
            extra: Default::default(),
        };
        d.acceptance_criteria = vec![ac.clone(), ac.clone(), ac];
        for s in &mut d.subtasks {
            s.links_to_ac = vec!["AC-01".into()];
        }
        Ok(d)
    }
}

#[test]
fn unusable_draft_falls_back_to_the_offline_single_step() {
    let repo = example_repo("todo-api");
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-001.md")),
    );
    opts.planner = Some(&Unusable);
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation);
    assert_eq!(o.planning.steps.len(), 1);
    let data = skipped_event(&o);
    let details = data["error_details"].as_str().unwrap();
    assert!(details.contains("AC_ID_DUPLICATE"), "{details}");
    assert!(
        data["reason"]
            .as_str()
            .unwrap()
            .contains("offline single step"),
        "{data}"
    );
}

/// Issue 10: one-line requests with nothing to derive three criteria from.
#[test]
fn one_line_requests_get_honest_criteria() {
    let repo = example_repo("todo-api");
    for (text, target, docs) in [
        ("Update the README", "README.md", true),
        (
            "Fix the typo in the docstring of todo/api.py",
            "todo/api.py",
            false,
        ),
        ("Add a CHANGELOG.md file", "CHANGELOG.md", true),
        (
            "Document the DELETE endpoint in the README",
            "README.md",
            true,
        ),
        ("README を更新する", "README.md", true),
    ] {
        let o = dandori_planner::plan(&PlanOptions::new(
            repo.path(),
            RequestSource::Text(text.into()),
        ))
        .unwrap();
        assert!(o.validation.ok, "{text}: {:?}", o.validation);
        assert_eq!(o.skipped, None, "{text}");
        assert_eq!(o.planning.steps.len(), 1, "{text}");
        assert_eq!(
            o.planning.steps[0].scope.target_paths,
            vec![target.to_string()],
            "{text}"
        );
        let acs = &o.planning.context.acceptance_criteria;
        assert_eq!(acs.len(), 3, "{text}: {acs:?}");
        let all: String = acs
            .iter()
            .map(|a| format!("{} {} ", a.when, a.then))
            .collect();
        // The change is present; the existing tests pass; nothing else changes.
        assert!(all.contains("python -m pytest"), "{text}: {all}");
        assert!(all.contains(&format!("`{target}`")), "{text}: {all}");
        assert_eq!(
            all.contains("Markdown") || all.contains("相対リンク"),
            docs,
            "{text}: {all}"
        );
        let assumptions = o.planning.assumptions.clone().unwrap_or_default().join(" ");
        assert!(
            assumptions.contains("AC-03") && assumptions.contains("AC-01"),
            "{text}: {assumptions}"
        );
    }
}
