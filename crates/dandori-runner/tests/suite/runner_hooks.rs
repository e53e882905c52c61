//! Per-test results from test commands as the user wrote them (issue 36): a
//! plain `python -m unittest` names its tests through dandori's hook, a runner
//! that names none still says how many ran; a step whose work an earlier step
//! already did is `ALREADY_SATISFIED` by that evidence; bytecode and tool caches
//! never enter a commit; a resume keeps the first run's executor choice.

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_runner::environment::{EnvironmentPhase, EnvironmentReport};

const UNITTEST: &str = "python3 -m unittest discover";

/// A Python package with one unittest test, no `-v` anywhere.
fn python_repo() -> Repo {
    let repo = Repo::new();
    std::fs::write(
        repo.path.join("calc.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    std::fs::write(
        repo.path.join("test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass TestAdd(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n",
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a package with a test"]);
    repo
}

/// Does the whole feature at S01 (the function, its test) and runs the tests
/// as an agent does, leaving bytecode and a tool cache; changes nothing later.
const WHOLE_FEATURE_AT_ONCE: &str = r#"[ "$1" = S01 ] || exit 0
printf 'def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n' > calc.py
cat >> test_calc.py <<'PY'


class TestMul(unittest.TestCase):
    def test_mul(self):
        from calc import mul
        self.assertEqual(mul(2, 3), 6)
PY
PYTHONDONTWRITEBYTECODE= python3 -B -c 'import py_compile; py_compile.compile("calc.py")'
mkdir -p .pytest_cache/v/cache && echo '{}' > .pytest_cache/v/cache/lastfailed
"#;

fn two_step_plan() -> serde_json::Value {
    let mut plan = planning(
        vec![
            S::new("S01")
                .unit(UNITTEST)
                .targets(&["calc.py", "test_calc.py"])
                .acs(&["AC-01"]),
            S::new("S02")
                .deps(&["S01"])
                .unit(UNITTEST)
                .targets(&["calc.py"])
                .acs(&["AC-02", "AC-03"]),
        ],
        json!({}),
    );
    // Each criterion has its own proof: a check proves only its own criterion.
    plan["context"]["acceptance_criteria"][0]["check"] =
        json!({"command": "python3 -c 'from calc import mul'"});
    plan["context"]["acceptance_criteria"][1]["check"] = json!("test_calc.TestMul.test_mul");
    plan["context"]["acceptance_criteria"][2]["check"] = json!({"test": "test_calc.TestMul"});
    plan
}

#[test]
fn unittest_without_v_names_its_tests_and_the_step_an_earlier_one_did_is_already_satisfied() {
    let repo = python_repo();
    let run_dir = repo.write_plan(&two_step_plan());
    let agent = format!(
        "sh {} {{step_id}}",
        repo.agent(WHOLE_FEATURE_AT_ONCE).display()
    );
    let out = run(&options(&repo, &run_dir, Some(agent))).unwrap();
    let st = stage(&run_dir);
    // The base: the one test, by name, though the log only says `Ran 1 test`.
    assert_eq!(
        st["baseline"]["runs"][0]["tests"],
        json!({"test_calc.TestAdd.test_add": true}),
        "{st:#}"
    );
    assert_eq!(
        statuses(&run_dir),
        [
            ("S01".to_string(), "done".to_string()),
            ("S02".to_string(), "done".to_string())
        ]
    );
    assert_eq!(st["steps"][1]["reason_code"], "ALREADY_SATISFIED", "{st:#}");
    assert!(out.completion.summary.goal_achieved, "{:?}", out.completion);
    // The new test, absent at the base, green since S01: AC-02 is S01's.
    let md = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(
        md.contains("| AC-02 | covered | test test_calc.TestMul.test_mul | absent | pass |"),
        "{md}"
    );
    // The report directories are gone; the hook stays in the run directory.
    assert!(run_dir.join("test-hooks/python/sitecustomize.py").is_file());
    let left: Vec<_> = std::fs::read_dir(run_dir.join("test-reports"))
        .unwrap()
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // Neither the bytecode nor pytest's cache entered a commit.
    let files = repo.git(&["ls-tree", "-r", "--name-only", "dandori/RQ-1/run-1"]);
    assert!(files.lines().any(|f| f == "calc.py"), "{files}");
    assert!(
        !files.contains("__pycache__")
            && !files.contains(".pytest_cache")
            && !files.contains(".pyc"),
        "{files}"
    );
}

#[test]
fn a_runner_that_names_no_test_still_says_how_many_ran() {
    let repo = python_repo();
    // `-I` ignores PYTHONPATH: no hook, only unittest's own summary.
    let cmd = "python3 -I -m unittest discover";
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01")
                .unit(cmd)
                .targets(&["calc.py"])
                .acs(&["AC-01"]),
        ],
        json!({}),
    ));
    let agent = format!(
        "sh {} {{step_id}}",
        repo.agent("echo '# more' >> calc.py").display()
    );
    run(&options(&repo, &run_dir, Some(agent))).unwrap();
    let base = &stage(&run_dir)["baseline"]["runs"][0];
    assert_eq!(base["tests"], json!({}), "{base:#}");
    assert_eq!(base["counted"], json!({"ran": 1, "failed": 0}), "{base:#}");
}

/// An environment sub-phase that fails, as a run killed while it set up the
/// environment never gets past it.
struct FailingEnvironment;

impl EnvironmentPhase for FailingEnvironment {
    fn prepare(
        &self,
        _repo: &std::path::Path,
        _run_dir: &std::path::Path,
    ) -> Result<EnvironmentReport, String> {
        Err("interrupted".to_string())
    }
}

#[test]
fn a_plain_resume_after_the_environment_setup_keeps_the_agent_command() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let agent = format!(
        "sh {} {{step_id}}",
        repo.agent(r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#)
            .display()
    );
    let mut first = options(&repo, &run_dir, Some(agent.clone()));
    first.config.runner.agent_model = Some("model-of-the-first-run".to_string());
    first.environment = Some(Arc::new(FailingEnvironment));
    assert!(run(&first).is_err());
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("executor.json")).unwrap())
            .unwrap();
    assert_eq!(
        recorded,
        json!({"kind": "command", "agent_cmd": agent, "agent_model": "model-of-the-first-run", "sandbox": "off"})
    );
    // `dandori resume RUN_DIR`: no executor, no agent, no model named.
    let mut resume = options(&repo, &run_dir, None);
    resume.executor = None;
    resume.resume = true;
    let out = run(&resume).unwrap();
    assert_eq!(statuses(&run_dir)[0].1, "done", "{:?}", out.completion);
    assert_eq!(
        stage(&run_dir)["executor"],
        json!({"kind": "command", "agent_cmd": agent, "agent_model": "model-of-the-first-run", "sandbox": "off"})
    );
}
