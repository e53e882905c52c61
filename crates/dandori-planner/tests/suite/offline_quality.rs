//! Offline planner quality found by dogfooding: inline ", and" clauses become
//! steps, mentioned file names resolve to existing files, endpoint work targets
//! the route file, no unit command without tests, the environment reason in the
//! request's language.

use std::path::Path;

use pretty_assertions::assert_eq;

use dandori_planner::{PlanOptions, PlanOutcome, RequestSource};

use super::support::{example_repo, git, plan_file};

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), files);
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "init"]);
    dir
}

fn plan_text(repo: &Path, text: &str) -> PlanOutcome {
    let mut opts = PlanOptions::new(repo, RequestSource::Text(text.to_string()));
    opts.toolchain = Some(dandori_planner::gathering::Toolchain::with(&[
        "python", "pip",
    ]));
    dandori_planner::plan(&opts).unwrap()
}

fn calc_repo(with_tests: bool) -> tempfile::TempDir {
    let mut files = vec![
        ("src/calc.py", "def add(a, b):\n    return a + b\n"),
        ("requirements.txt", "pytest\n"),
        ("README.md", "# Calc\n\nA tiny calculator.\n"),
    ];
    if with_tests {
        files.push((
            "tests/test_calc.py",
            "from src.calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
        ));
    }
    repo(&files)
}

/// Test-first (issue 20): the step that makes a behavioural criterion true
/// writes its failing test first; no step of its own does.
fn writes_its_test_first(o: &PlanOutcome) -> bool {
    o.planning
        .steps
        .iter()
        .all(|s| s.extra.get("tdd_phase").is_none())
        && o.planning
            .steps
            .first()
            .is_some_and(|s| s.intent.contains("Test first"))
}

fn steps(o: &PlanOutcome) -> Vec<(String, Vec<String>, Vec<String>)> {
    o.planning
        .steps
        .iter()
        .map(|s| {
            let deps = o
                .planning
                .dependency_graph
                .as_ref()
                .map(|g| {
                    g.edges
                        .iter()
                        .filter(|e| e.to == s.step_id)
                        .map(|e| e.from.clone())
                        .collect::<std::collections::BTreeSet<_>>()
                        .into_iter()
                        .collect()
                })
                .unwrap_or_default();
            (s.title.clone(), s.scope.target_paths.clone(), deps)
        })
        .collect()
}

#[test]
fn code_then_docs_and_file_name_resolves_to_existing_file() {
    let r = calc_repo(true);
    let o = plan_text(
        r.path(),
        "Add subtract and multiply functions to calc.py, and document them in the README",
    );
    assert!(o.validation.ok, "{:?}", o.validation);
    assert_eq!(
        steps(&o),
        // One unit of work: the functions, their tests and their documentation.
        vec![(
            "Add subtract and multiply functions to calc.py, and document them in the README"
                .to_string(),
            vec![
                "src/calc.py".to_string(),
                "README.md".to_string(),
                "tests/test_calc.py".to_string()
            ],
            vec![],
        ),]
    );
    // English request, English environment reason.
    let env = o.planning.selected_environment.as_ref().unwrap();
    assert_eq!(env.reason, "requirements.txt found: a python project");
}

#[test]
fn a_missing_file_is_only_targeted_when_the_request_creates_it() {
    let r = calc_repo(true);
    let o = plan_text(r.path(), "Fix rounding in stats.py");
    let paths: Vec<String> = o
        .planning
        .steps
        .iter()
        .flat_map(|s| s.scope.target_paths.clone())
        .collect();
    assert!(!paths.contains(&"stats.py".to_string()), "{paths:?}");

    let o = plan_text(r.path(), "Create src/stats.py with a mean function");
    assert_eq!(steps(&o)[0].1[0], "src/stats.py");
    // Its behaviour has no test yet: the step writes one first.
    assert!(writes_its_test_first(&o), "{:?}", o.planning.steps);
}

#[test]
fn no_unit_command_when_the_repository_has_no_tests() {
    let r = calc_repo(false);
    let o = plan_text(r.path(), "Add a subtract function to calc.py");
    assert!(o.validation.ok, "{:?}", o.validation);
    for s in &o.planning.steps {
        assert_eq!(
            s.commands.unit.clone().unwrap_or_default(),
            Vec::<String>::new(),
            "{}",
            s.step_id
        );
    }
    let assumptions = o.planning.assumptions.clone().unwrap_or_default();
    assert!(
        assumptions
            .iter()
            .any(|a| a.contains("no test files") && a.contains("commands.unit is empty")),
        "{assumptions:?}"
    );

    // No suite to re-run: the regression criterion is about behaviour.
    let regression = o
        .planning
        .context
        .acceptance_criteria
        .iter()
        .find(|a| a.kind == Some(dandori_plan::AcKind::Regression))
        .unwrap();
    assert_eq!(
        regression.then,
        "what worked before the change still works".to_string()
    );

    // With tests, the unit command stays.
    let r = calc_repo(true);
    let o = plan_text(r.path(), "Add a subtract function to calc.py");
    assert_eq!(
        o.planning.steps[0]
            .commands
            .unit
            .clone()
            .unwrap_or_default(),
        vec!["python -m pytest".to_string()]
    );
}

#[test]
fn endpoint_work_targets_the_route_file() {
    let r = example_repo("todo-api");
    let o = plan_file(r.path(), "requests/RQ-003.md");
    let s = steps(&o);
    assert_eq!(s[0].0, "Add a `GET /tasks/count` endpoint");
    assert_eq!(s[0].1[0], "todo/api.py");
}

#[test]
fn japanese_request_gets_japanese_reason_and_assumptions() {
    let r = example_repo("todo-api");
    let o = plan_file(r.path(), "requests/RQ-002.md");
    let env = o.planning.selected_environment.as_ref().unwrap();
    assert_eq!(
        env.reason,
        "pyproject.toml を検出したため python プロジェクトと判断した"
    );
    let assumptions = o.planning.assumptions.clone().unwrap_or_default();
    assert!(
        assumptions[0].starts_with("オフラインで計画した"),
        "{assumptions:?}"
    );
    // S02 consumes the `due_date` S01 adds; the overdue list reads it through the API.
    let deps = steps(&o);
    assert_eq!(deps[1].2, vec!["S01".to_string()]);
    assert!(deps[2].1.contains(&"todo/api.py".to_string()), "{deps:?}");
}

/// A move names two paths, one of which does not exist yet: one step owns both
/// (a step per path would leave each half of the move to a different step), and
/// the destination is a target even in a new directory.
#[test]
fn a_move_or_rename_is_one_step_owning_both_paths() {
    let r = calc_repo(true);
    for (text, from, to) in [
        (
            "Move src/calc.py to lib/math/calc.py",
            "src/calc.py",
            "lib/math/calc.py",
        ),
        (
            "Rename tests/test_calc.py to tests/test_arith.py",
            "tests/test_calc.py",
            "tests/test_arith.py",
        ),
        (
            "src/calc.py を pkg/calc.py に移動する",
            "src/calc.py",
            "pkg/calc.py",
        ),
    ] {
        let o = plan_text(r.path(), text);
        let s = steps(&o);
        assert_eq!(s.len(), 1, "{text}: {s:?}");
        assert!(s[0].1.contains(&from.to_string()), "{text}: {s:?}");
        assert!(s[0].1.contains(&to.to_string()), "{text}: {s:?}");
    }
    // Independent files named together still get a step each.
    let o = plan_text(r.path(), "Update src/calc.py and README.md");
    assert_eq!(steps(&o).len(), 2, "{:?}", steps(&o));
}
