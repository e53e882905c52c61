//! Evidence-based completion (seed 001 §10.5–10.8, seed 004 §5): a step that had to
//! change files and did not fails with STEP_NO_CHANGE; an acceptance criterion is
//! covered only when a verification ran after the change and passed, and the
//! report shows which (command, exit code, log).

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_plan::StepStatus;
use dandori_runner::CompletionStatus;

fn agent(repo: &Repo, body: &str) -> String {
    format!("sh {} {{step_id}}", repo.agent(body).display())
}

fn report(run_dir: &std::path::Path) -> String {
    std::fs::read_to_string(run_dir.join("report.md")).unwrap()
}

#[test]
fn a_no_op_agent_achieves_nothing_and_its_acs_get_follow_ups() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").acs(&["AC-01", "AC-02", "AC-03"])],
        json!({}),
    ));
    let out = run(&options(&repo, &run_dir, Some(agent(&repo, "true")))).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    assert!(!out.completion.summary.goal_achieved);
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        json!("STEP_NO_CHANGE")
    );
    assert_eq!(
        out.completion.coverage.critical_gaps,
        ["AC-01", "AC-02", "AC-03"]
    );
    assert_eq!(out.completion.coverage.overall_coverage, 0.0);
    // Seed 001 §10.6: a follow-up step per uncovered AC, pending (its step failed).
    let follow: Vec<(String, String, StepStatus)> = out
        .completion
        .follow_ups
        .iter()
        .map(|f| (f.step_id.clone(), f.ac.clone(), f.status))
        .collect();
    assert_eq!(
        follow,
        [
            ("F01".to_string(), "AC-01".to_string(), StepStatus::Pending),
            ("F02".to_string(), "AC-02".to_string(), StepStatus::Pending),
            ("F03".to_string(), "AC-03".to_string(), StepStatus::Pending),
        ]
    );
    assert_eq!(repo.commits("dandori/RQ-1/run-1"), Vec::new());
    let md = report(&run_dir);
    assert!(
        md.contains("| AC-01 | **not covered** | none (no test ran after the linking steps) | n/a | n/a | — | — |\n| | | S01: failed | | | | |"),
        "{md}"
    );
    let errors = std::fs::read_to_string(run_dir.join("errors.json")).unwrap();
    assert!(errors.contains("STEP_NO_CHANGE"), "{errors}");
}

#[test]
fn an_agent_touching_only_files_outside_the_targets_did_not_do_the_step() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let out = run(&options(
        &repo,
        &run_dir,
        Some(agent(&repo, "mkdir -p notes; echo hi > notes/todo.txt")),
    ))
    .unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    assert!(!out.completion.summary.goal_achieved);
    let st = stage(&run_dir);
    assert_eq!(st["steps"][0]["reason_code"], json!("STEP_NO_CHANGE"));
    let msg = st["steps"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("outside scope.target_paths") && msg.contains("notes/todo.txt"),
        "{msg}"
    );
    assert_eq!(out.completion.coverage.overall_coverage, 0.0);
}

#[test]
fn a_check_only_step_may_change_nothing_but_a_check_green_at_the_base_proves_nothing() {
    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01").unit("test -f README.md")], json!({}));
    plan["steps"][0]["role"] = json!("reviewer");
    let run_dir = repo.write_plan(&plan);
    let out = run(&options(&repo, &run_dir, Some(agent(&repo, "true")))).unwrap();
    // The step itself is done (an empty diff is its expected result) …
    assert_eq!(statuses(&run_dir)[0].1, "done");
    // … but its check already passed on the base commit: no AC is proven.
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    assert!(!out.completion.summary.goal_achieved);
    let md = report(&run_dir);
    assert!(
        md.contains(
            "| AC-01 | **unverified** | none named; 'test -f README.md' passed at the base already | pass | pass | — | `logs/step.S01.unit.log` |"
        ),
        "{md}"
    );
}

/// A repository whose `sh check.sh` passes until `answer.txt` changes.
fn with_passing_test() -> Repo {
    let repo = Repo::new();
    std::fs::write(repo.path.join("answer.txt"), "42\n").unwrap();
    std::fs::write(
        repo.path.join("check.sh"),
        "test \"$(cat answer.txt)\" = 42 || { echo \"want 42\"; exit 3; }\n",
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a passing test"]);
    repo
}

#[test]
fn an_agent_that_breaks_a_test_covers_nothing() {
    let repo = with_passing_test();
    let breaker = agent(&repo, "echo 41 > answer.txt");
    // With require_unit_pass (and no fix attempt) the step fails.
    let mut plan = planning(
        vec![S::new("S01").unit("sh check.sh").targets(&["answer.txt"])],
        json!({}),
    );
    plan["limits"]["max_autofix_cycles"] = json!(0);
    let run_dir = repo.write_plan(&plan);
    let out = run(&options(&repo, &run_dir, Some(breaker.clone()))).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        json!("UNIT_TEST_FAILED")
    );
    assert!(!out.completion.summary.goal_achieved);
    assert_eq!(out.completion.coverage.overall_coverage, 0.0);

    // Without it the step is committed, but its failed check covers no AC.
    let other = with_passing_test();
    let mut plan = planning(
        vec![S::new("S01").unit("sh check.sh").targets(&["answer.txt"])],
        json!({"require_unit_pass": false}),
    );
    plan["limits"]["max_autofix_cycles"] = json!(0);
    let run_dir = other.write_plan(&plan);
    let breaker = agent(&other, "echo 41 > answer.txt");
    let out = run(&options(&other, &run_dir, Some(breaker))).unwrap();
    assert_eq!(statuses(&run_dir)[0].1, "done");
    assert!(!out.completion.summary.goal_achieved);
    assert_eq!(
        out.completion.coverage.critical_gaps,
        ["AC-01", "AC-02", "AC-03"]
    );
    let message = other.git(&["log", "-1", "--format=%B", "dandori/RQ-1/run-1"]);
    assert!(
        message.contains("Dandori-Check: unit exit=3 sh check.sh"),
        "{message}"
    );
    let md = report(&run_dir);
    assert!(
        md.contains(
            "| AC-02 | **not covered** | none named; 'sh check.sh' passed at the base already | pass | fail | — | `logs/step.S01.unit.log` |"
        ),
        "{md}"
    );
}

#[test]
fn a_step_verified_by_its_unit_command_covers_its_acs_with_evidence() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit("test -f src/S01/out.txt")],
        json!({}),
    ));
    let out = run(&options(
        &repo,
        &run_dir,
        Some(agent(
            &repo,
            r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#,
        )),
    ))
    .unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert!(out.completion.summary.goal_achieved);
    let message = repo.git(&["log", "-1", "--format=%B", "dandori/RQ-1/run-1"]);
    assert!(
        message.contains("Dandori-Check: unit exit=0 test -f src/S01/out.txt"),
        "{message}"
    );
    let evidence = &stage(&run_dir)["ac_evidence"];
    assert_eq!(evidence[0]["ac"], "AC-01");
    assert_eq!(evidence[0]["covered"], true);
    assert_eq!(
        evidence[0]["evidence"][0]["command"],
        "test -f src/S01/out.txt"
    );
    assert_eq!(evidence[0]["evidence"][0]["exit_code"], 0);
    assert!(
        evidence[0]["evidence"][0]["log"]
            .as_str()
            .unwrap()
            .ends_with("logs/step.S01.unit.log")
    );
}

/// A unit command shaped like `mvn test`: it writes a Surefire report, one
/// test of which (`divides`) passes once `answer.txt` says 42, and prints no
/// per-test lines. The base commit also holds a stale report of a removed
/// test class, which no run rewrites.
fn with_surefire_project() -> Repo {
    let repo = Repo::new();
    std::fs::write(repo.path.join("answer.txt"), "41\n").unwrap();
    std::fs::write(repo.path.join(".gitignore"), "target/\n").unwrap();
    std::fs::write(
        repo.path.join("test.sh"),
        r#"mkdir -p target/surefire-reports
if [ "$(cat answer.txt)" = 42 ]; then
  div='<testcase name="divides" classname="com.ex.CalcTest" time="0.001"/>'; rc=0
else
  div='<testcase name="divides" classname="com.ex.CalcTest" time="0.001"><failure message="expected: &lt;42&gt;" type="org.opentest4j.AssertionFailedError">expected 42</failure></testcase>'; rc=1
fi
cat > target/surefire-reports/TEST-com.ex.CalcTest.xml <<REPORT
<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.ex.CalcTest" time="0.01" tests="2" errors="0" skipped="0" failures="$rc">
  <testcase name="adds" classname="com.ex.CalcTest" time="0.001"/>
  $div
</testsuite>
REPORT
echo "Tests run: 2, Failures: $rc"
exit $rc
"#,
    )
    .unwrap();
    let stale = repo.path.join("target/surefire-reports");
    std::fs::create_dir_all(&stale).unwrap();
    std::fs::write(
        stale.join("TEST-com.ex.OldTest.xml"),
        r#"<testsuite name="com.ex.OldTest" tests="1" failures="1"><testcase name="gone" classname="com.ex.OldTest"><failure/></testcase></testsuite>"#,
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&[
        "add",
        "-f",
        "target/surefire-reports/TEST-com.ex.OldTest.xml",
    ]);
    repo.git(&["commit", "-q", "-m", "a Surefire-shaped suite"]);
    repo
}

#[test]
fn a_junit_report_the_unit_command_writes_is_per_test_evidence_and_a_stale_one_is_not() {
    let repo = with_surefire_project();
    let mut plan = planning(
        vec![S::new("S01").unit("sh test.sh").targets(&["answer.txt"])],
        json!({}),
    );
    plan["context"]["acceptance_criteria"][1]["check"] = json!("com.ex.CalcTest.divides");
    let run_dir = repo.write_plan(&plan);
    let out = run(&options(
        &repo,
        &run_dir,
        Some(agent(&repo, "echo 42 > answer.txt")),
    ))
    .unwrap();
    assert_eq!(statuses(&run_dir)[0].1, "done");
    // At the base: the report's results, without the stale report's.
    let st = stage(&run_dir);
    assert_eq!(
        st["baseline"]["runs"][0]["tests"],
        json!({"com.ex.CalcTest.adds": true, "com.ex.CalcTest.divides": false}),
        "{st:#}"
    );
    // The step turned the named test green: its criterion is proven by it.
    let md = report(&run_dir);
    assert!(
        md.contains("| AC-02 | covered | test com.ex.CalcTest.divides | fail | pass |"),
        "{md}"
    );
    assert!(
        out.completion
            .coverage
            .critical_gaps
            .iter()
            .all(|a| a != "AC-02")
    );
    let log = std::fs::read_to_string(run_dir.join("logs/step.S01.unit.log")).unwrap();
    assert!(
        log.contains(
            "dandori: 2 test result(s) from the JUnit report target/surefire-reports/TEST-com.ex.CalcTest.xml"
        ) && !log.contains("OldTest"),
        "{log}"
    );
}

#[test]
fn pytest_junitxml_results_and_its_console_summary_name_each_test_once() {
    let repo = Repo::new();
    std::fs::create_dir_all(repo.path.join("tests")).unwrap();
    std::fs::write(repo.path.join("answer.txt"), "41\n").unwrap();
    std::fs::write(repo.path.join(".gitignore"), "out/\n").unwrap();
    std::fs::write(
        repo.path.join("tests/test_calc.py"),
        "import pytest\n\n\ndef test_adds():\n    assert 1 + 1 == 2\n\n\n@pytest.mark.skip(reason='later')\ndef test_later():\n    pass\n\n\nclass TestAnswer:\n    @pytest.mark.parametrize('n', [42])\n    def test_is(self, n):\n        assert open('answer.txt').read().strip() == str(n)\n",
    )
    .unwrap();
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "a pytest suite"]);
    let mut plan = planning(
        vec![
            S::new("S01")
                .unit("pytest -q -p no:cacheprovider --junitxml=out/report.xml")
                .targets(&["answer.txt"]),
        ],
        json!({}),
    );
    plan["context"]["acceptance_criteria"][1]["check"] =
        json!("tests/test_calc.py::TestAnswer::test_is[42]");
    let run_dir = repo.write_plan(&plan);
    run(&options(
        &repo,
        &run_dir,
        Some(agent(&repo, "echo 42 > answer.txt")),
    ))
    .unwrap();
    assert_eq!(statuses(&run_dir)[0].1, "done");
    let st = stage(&run_dir);
    assert_eq!(
        st["baseline"]["runs"][0]["tests"],
        json!({"tests/test_calc.py::TestAnswer::test_is[42]": false,
               "tests/test_calc.py::test_adds": true}),
        "{st:#}"
    );
    let log = std::fs::read_to_string(run_dir.join("logs/step.S01.unit.log")).unwrap();
    assert!(
        log.contains("dandori: 2 test result(s) from the JUnit report out/report.xml"),
        "{log}"
    );
    let md = report(&run_dir);
    assert!(
        md.contains(
            "| AC-02 | covered | test tests/test_calc.py::TestAnswer::test_is[42] | fail | pass |"
        ),
        "{md}"
    );
}
