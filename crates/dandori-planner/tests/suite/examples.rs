//! Snapshots of the plans for the example requests: the whole planning.json and
//! the planning trace, with run ids, times and temp paths filtered.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::{example_repo, plan_file, pretty, settings, trace_events};

fn snapshot_plan(request: &str, name: &str) {
    let repo = example_repo("todo-api");
    let outcome = plan_file(repo.path(), request);
    assert!(outcome.validation.ok, "{:?}", outcome.validation);
    assert_eq!(outcome.skipped, None);
    let text = std::fs::read_to_string(&outcome.planning_json).unwrap();
    settings().bind(|| insta::assert_snapshot!(format!("{name}_planning"), text));

    // The trace: every seed 003 §7 planning event, in order, with its data.
    let events = trace_events(&outcome);
    let names: Vec<&str> = events.iter().map(|e| e.event.as_str()).collect();
    assert_eq!(
        names,
        vec![
            "PLANNING_START",
            "SIZE_ESTIMATION",
            "CHUNKING_DECISION",
            "DEPENDENCY_ANALYSIS",
            "EXECUTION_PLAN",
            "PLANNING_END"
        ]
    );
    let data: Vec<_> = events
        .iter()
        .map(|e| json!({"event": e.event, "data": e.data}))
        .collect();
    settings().bind(|| insta::assert_snapshot!(format!("{name}_trace"), pretty(&data)));

    // stage.json mirrors the steps.
    let stage: dandori_plan::Stage =
        serde_json::from_str(&std::fs::read_to_string(&outcome.stage_json).unwrap()).unwrap();
    let ids: Vec<&str> = stage.steps.iter().map(|s| s.step_id.as_str()).collect();
    let plan_ids: Vec<&str> = outcome
        .planning
        .steps
        .iter()
        .map(|s| s.step_id.as_str())
        .collect();
    assert_eq!(ids, plan_ids);
    assert_eq!(stage.current_step_index, 0);

    // Run state never dirties the user's worktree.
    assert_eq!(
        super::support::git(repo.path(), &["status", "--porcelain"]),
        ""
    );
}

#[test]
fn rq001_english_priorities() {
    snapshot_plan("requests/RQ-001.md", "rq001");
}

#[test]
fn rq002_japanese_due_dates() {
    snapshot_plan("requests/RQ-002.md", "rq002");
}

#[test]
fn rq003_inline_enumeration() {
    snapshot_plan("requests/RQ-003.md", "rq003");
}

#[test]
fn same_request_same_plan() {
    let repo = example_repo("todo-api");
    let a = plan_file(repo.path(), "requests/RQ-001.md");
    let b = plan_file(repo.path(), "requests/RQ-001.md");
    assert_ne!(a.run_id, b.run_id);
    let strip = |o: &dandori_planner::PlanOutcome| {
        let text = std::fs::read_to_string(&o.planning_json).unwrap();
        let re =
            regex::Regex::new(r"\d{8}-\d{6}-[0-9a-f]{6}|\d{4}-\d{2}-\d{2}T[0-9:.]+Z?").unwrap();
        re.replace_all(&text, "X").into_owned()
    };
    assert_eq!(strip(&a), strip(&b));
}

#[test]
fn plan_validates_clean_and_has_seed_shape() {
    let repo = example_repo("todo-api");
    let o = plan_file(repo.path(), "requests/RQ-001.md");
    let p = &o.planning;
    assert_eq!(p.version, "1.0");
    assert_eq!(p.base_branch, "main");
    assert_eq!(p.work_branch, format!("dandori/RQ-001/{}", o.run_id));
    assert!(p.context.acceptance_criteria.len() >= 3);
    let run = format!(".dandori/runs/RQ-001/{}", o.run_id);
    assert_eq!(p.outputs.planning_json, format!("{run}/planning.json"));
    assert_eq!(
        p.steps[0].outputs.patch_path,
        format!("{run}/patches/S01.patch")
    );
    assert_eq!(p.steps[0].inputs.request_path, "requests/RQ-001.md");
    // The definition step comes first and the implementations consume what it produces.
    assert_eq!(
        p.steps[0].produces.as_deref(),
        Some(&["Priority".to_string(), "priority".to_string()][..])
    );
    // A data dependency (seed 003 §5.1): a data edge, not also a logical one.
    assert!(p.steps[1].consumes.is_some());
    let edges = &p.dependency_graph.as_ref().unwrap().edges;
    assert!(
        edges
            .iter()
            .any(|e| e.from == "S01" && e.to == "S02" && e.kind == dandori_plan::EdgeType::Data)
    );
    assert!(
        !edges
            .iter()
            .any(|e| e.from == "S01" && e.to == "S02" && e.kind == dandori_plan::EdgeType::Logical)
    );
    // Units of work: the tests and the docs the request lists go with the code
    // they are about, not in steps of their own that would have nothing left to do.
    assert_eq!(p.steps.len(), 4);
    let last = &p.steps[3].scope.target_paths;
    assert!(
        last.iter().any(|t| t == "README.md") && last.iter().any(|t| t.starts_with("tests/")),
        "{last:?}"
    );
    assert!(repo.path().join(".dandori/.gitignore").exists());
}
