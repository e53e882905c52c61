//! Seed 003 §5 on offline plans: a step depends on another only with a reason
//! (a definition it implements, code it tests or documents), a data dependency
//! is a data edge and not also a logical one, and seed 001's `mode` follows
//! `planning.complexity_threshold`. Delete → create ordering is tested on a
//! model's draft (`llm.rs`), where the order is the model's.

use dandori_plan::{EdgeType, Planning};
use dandori_planner::{PlanOptions, RequestSource};

use super::corpus::fixtures;

fn plan(text: &str, edit: impl FnOnce(&mut PlanOptions)) -> Planning {
    let runs = tempfile::tempdir().unwrap();
    let mut opts = PlanOptions::new(
        fixtures().join("repos/py-bookshelf"),
        RequestSource::Text(text.to_string()),
    );
    opts.runs_root = Some(runs.path().to_path_buf());
    edit(&mut opts);
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.validation.ok, "{:?}", o.validation.findings);
    o.planning
}

fn step_of<'a>(p: &'a Planning, title_part: &str) -> &'a dandori_plan::Step {
    p.steps
        .iter()
        .find(|s| s.title.contains(title_part))
        .unwrap_or_else(|| {
            panic!(
                "no step titled like {title_part:?} in {:?}",
                p.steps.iter().map(|s| &s.title).collect::<Vec<_>>()
            )
        })
}

fn edges(p: &Planning, from: &str, to: &str) -> Vec<EdgeType> {
    p.dependency_graph
        .as_ref()
        .unwrap()
        .edges
        .iter()
        .filter(|e| e.from == from && e.to == to)
        .map(|e| e.kind)
        .collect()
}

#[test]
fn an_unrelated_definition_orders_nothing() {
    let p = plan(
        "Two changes\n\n- Define a `Genre` enum in `bookshelf/models.py`\n- Add a `--limit` option to `bookshelf list` in `bookshelf/cli.py`\n\nNo tests needed.",
        |_| {},
    );
    let genre = step_of(&p, "Genre");
    let limit = step_of(&p, "--limit");
    assert_eq!(limit.depends_on, None, "{:?}", limit.depends_on);
    assert_eq!(genre.depends_on, None);
    assert!(edges(&p, &genre.step_id, &limit.step_id).is_empty());
    assert_eq!(
        p.execution_strategy,
        Some(dandori_plan::ExecutionStrategy::Parallel)
    );
}

#[test]
fn a_data_dependency_is_a_data_edge_only() {
    let p = plan(
        "Genres\n\n- Define a `Genre` enum in `bookshelf/models.py`\n- Add a `--genre` option to `bookshelf list` in `bookshelf/cli.py` that keeps the books of one `Genre`\n\nNo tests needed.",
        |_| {},
    );
    let genre = step_of(&p, "Genre` enum");
    let option = step_of(&p, "--genre");
    assert_eq!(option.consumes.as_deref(), Some(&["Genre".to_string()][..]));
    let kinds = edges(&p, &genre.step_id, &option.step_id);
    assert!(kinds.contains(&EdgeType::Data), "{kinds:?}");
    assert!(!kinds.contains(&EdgeType::Logical), "{kinds:?}");
    assert!(option.depends_on.is_none(), "{:?}", option.depends_on);
}

#[test]
fn docs_about_something_else_wait_for_nothing() {
    let p = plan(
        "Two changes\n\n- Add a `--limit` option to `bookshelf list` in `bookshelf/cli.py`\n- Fix the typo \"catalgue\" in `README.md`\n\nNo tests needed.",
        |_| {},
    );
    let typo = step_of(&p, "typo");
    assert_eq!(typo.depends_on, None, "{:?}", typo.depends_on);
    // Documentation of the request's own work is part of that work's step.
    let p = plan(
        "Limit\n\n- Add a `--limit` option to `bookshelf list` in `bookshelf/cli.py`\n- Document the new option in `docs/usage.md`\n\nNo tests needed.",
        |_| {},
    );
    assert_eq!(p.steps.len(), 1, "{:?}", p.steps);
    assert!(
        ["bookshelf/cli.py", "docs/usage.md"]
            .iter()
            .all(|t| p.steps[0].scope.target_paths.iter().any(|p| p == t)),
        "{:?}",
        p.steps[0].scope.target_paths
    );
    // A documentation page of its own about the request's work waits for it.
    let p = plan(
        "Limit\n\n- Add a `--limit` option to `bookshelf list` in `bookshelf/cli.py`\n- Write a section on `--limit` in `docs/usage.md`\n\nNo tests needed.",
        |_| {},
    );
    let code = step_of(&p, "Add a `--limit`");
    let docs = step_of(&p, "docs/usage.md");
    assert_eq!(
        docs.depends_on.as_deref(),
        Some(&[code.step_id.clone()][..])
    );
}

#[test]
fn mode_and_complexity_score_follow_the_thresholds() {
    let text = "Add a `--limit` option to `bookshelf list`.";
    let p = plan(text, |_| {});
    assert_eq!(p.mode, Some(dandori_plan::PlanMode::Simple));
    let score = p.complexity_score.unwrap();
    assert!((0.0..=1.0).contains(&score), "{score}");
    assert_eq!(
        score,
        (p.size_estimation.as_ref().unwrap().total_score / 100.0 * 100.0).round() / 100.0
    );
    let p = plan(text, |o| {
        o.config.planning.complexity_threshold.simple = 2;
        o.config.planning.complexity_threshold.moderate = 5;
    });
    assert_eq!(p.mode, Some(dandori_plan::PlanMode::Complex));
    let p = plan(text, |o| o.config.planning.complexity_threshold.simple = 2);
    assert_eq!(p.mode, Some(dandori_plan::PlanMode::Standard));
}
