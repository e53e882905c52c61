//! End to end on temporary git repositories with a scripted shell agent.

use pretty_assertions::assert_eq;
use serde_json::json;

use super::support::*;
use dandori_runner::CompletionStatus;

fn s(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[test]
fn sequential_steps_are_committed_in_order_with_patches_and_report() {
    let repo = Repo::new();
    let agent = repo.agent(
        r#"mkdir -p "src/$1"
echo "made by $1" > "src/$1/file.txt""#,
    );
    let plan = planning(
        vec![
            S::new("S01").unit("test -f src/S01/file.txt"),
            S::new("S02")
                .acs(&["AC-02"])
                .unit("test -f src/S02/file.txt"),
            S::new("S03").acs(&["AC-03"]),
        ],
        json!({}),
    );
    let run_dir = repo.write_plan(&plan);
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert_eq!(out.completion.exit_code, 0);
    let subjects: Vec<String> = repo
        .commits("dandori/RQ-1/run-1")
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(subjects, vec!["S01: Do S01", "S02: Do S02", "S03: Do S03"]);
    assert_eq!(
        statuses(&run_dir),
        s(&[("S01", "done"), ("S02", "done"), ("S03", "done")])
    );
    let msg = repo.git(&["log", "-1", "--format=%B", "dandori/RQ-1/run-1~1"]);
    assert!(msg.contains("Dandori-Step: S02"), "{msg}");
    assert!(msg.contains("Dandori-Run: run-1"), "{msg}");
    assert!(msg.contains("Acceptance criteria: AC-02"), "{msg}");
    let patch = std::fs::read_to_string(run_dir.join("patches/S02.patch")).unwrap();
    assert!(patch.contains("+made by S02"), "{patch}");
    assert!(run_dir.join("logs/step.S01.unit.log").is_file());
    assert!(run_dir.join("logs/step.S01.agent.log").is_file());
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("| AC-02 |"), "{report}");
    assert!(report.contains("```mermaid\ngantt"), "{report}");
    assert!(!run_dir.join("errors.json").exists());
    // The work branch is created, never checked out: the user's checkout stays.
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert!(
        repo.git(&["log", "--format=%s", "dandori/RQ-1/run-1"])
            .contains("S02"),
        "the steps' commits are on the work branch"
    );
    // The step workspaces (pool worktrees or copy-on-write layers and their
    // mount points) are gone after the run.
    assert_no_step_workspace_left(&run_dir);
    // Run again: everything is proven done by its commit; nothing runs twice.
    let again = run(&opts).unwrap();
    assert_eq!(again.completion.status, CompletionStatus::Completed);
    assert_eq!(repo.commits("dandori/RQ-1/run-1").len(), 3);
}

#[test]
fn prompt_reaches_the_agent_as_one_argument() {
    let repo = Repo::new();
    let ctl = repo.ctl();
    let agent = repo.agent(&format!(
        r#"printf '%s' "$2" > "{}/prompt.$1"
mkdir -p "src/$1"; echo x > "src/$1/f""#,
        ctl.display()
    ));
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}} {{prompt}}", agent.display())),
    );
    run(&opts).unwrap();
    let prompt = std::fs::read_to_string(ctl.join("prompt.S01")).unwrap();
    assert!(
        prompt.contains("## Intent\nCreate the file of S01"),
        "{prompt}"
    );
    assert!(
        prompt.contains("AC-01: Given a repo, when the run ends, then files exist"),
        "{prompt}"
    );
}

#[test]
fn step_too_large_is_split_into_parts() {
    let repo = Repo::new();
    let agent = repo.agent(
        r#"mkdir -p src/S01
if grep -q "part 1 of 2" "$2"; then seq 1 30 > src/S01/a.txt
elif grep -q "part 2 of 2" "$2"; then seq 1 30 > src/S01/b.txt
else seq 1 60 > src/S01/a.txt; seq 1 60 > src/S01/b.txt; fi"#,
    );
    let run_dir = repo.write_plan(&planning(vec![S::new("S01").max_diff(100)], json!({})));
    let opts = options(
        &repo,
        &run_dir,
        Some(format!(
            "sh {} {{step_id}} {{prompt_file}}",
            agent.display()
        )),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    let subjects: Vec<String> = repo
        .commits("dandori/RQ-1/run-1")
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        subjects,
        vec!["S01: Do S01 (part 1/2)", "S01: Do S01 (part 2/2)"]
    );
    let too_large = trace_events(&run_dir, "STEP_TOO_LARGE");
    assert_eq!(too_large.len(), 1);
    assert_eq!(too_large[0]["data"]["diff_lines"], 120);
    assert_eq!(too_large[0]["data"]["split"], true);
    assert!(!trace_events(&run_dir, "REFLECTION").is_empty());
    // Seed 004 §2: the split is a plan revision, recorded as one.
    let revisions = trace_events(&run_dir, "PLAN_REVISION");
    assert_eq!(revisions.len(), 1, "{revisions:#?}");
    let r = &revisions[0]["data"];
    assert_eq!(r["trigger"], "step_too_large");
    assert_eq!(r["revision"], 1);
    assert_eq!(r["parts"], 2);
    assert_eq!(r["diff_lines"], 120);
    assert!(
        r["plan_revision"]["changes"][0]
            .as_str()
            .unwrap()
            .contains("S01: split into 2 parts"),
        "{r}"
    );
    assert_eq!(stage(&run_dir)["revisions"], 1);
}

#[test]
fn step_too_large_without_retries_fails_and_skips_dependents() {
    let repo = Repo::new();
    let agent = repo.agent(
        r#"mkdir -p "src/$1"; if [ "$1" = S01 ]; then seq 1 500 > src/S01/big.txt; else echo 1 > "src/$1/small"; fi"#,
    );
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").max_diff(100),
            S::new("S02").deps(&["S01"]),
            S::new("S03").deps(&[]),
        ],
        json!({"max_step_too_large_retries": 0}),
    ));
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    assert_eq!(out.completion.exit_code, 1);
    assert_eq!(
        statuses(&run_dir),
        s(&[("S01", "failed"), ("S02", "skipped"), ("S03", "done")])
    );
    let st = stage(&run_dir);
    assert_eq!(st["steps"][0]["reason_code"], "STEP_TOO_LARGE");
    // No split, so no revision.
    assert!(trace_events(&run_dir, "PLAN_REVISION").is_empty());
    assert_eq!(st["steps"][1]["reason_code"], "DEPENDENCY_FAILED");
    let errors: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("errors.json")).unwrap())
            .unwrap();
    assert_eq!(errors["errors"][0]["reason_code"], "STEP_TOO_LARGE");
    assert!(
        errors["errors"][0]["next_action"]
            .as_str()
            .unwrap()
            .contains("split the step")
    );
}

#[test]
fn failing_unit_commands_get_fix_attempts_then_pass() {
    let repo = Repo::new();
    // The first attempt writes a wrong value; the fix attempt (its prompt carries the
    // failure output) writes the right one.
    let agent = repo.agent(
        r#"mkdir -p src/S01
if grep -q "Fix attempt" "$2" && grep -q "want 42" "$2"; then echo 42 > src/S01/v; else echo 41 > src/S01/v; fi"#,
    );
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit(
            r#"test "$(cat src/S01/v)" = 42 || { echo "want 42, got $(cat src/S01/v)"; exit 1; }"#,
        )],
        json!({}),
    ));
    let opts = options(
        &repo,
        &run_dir,
        Some(format!(
            "sh {} {{step_id}} {{prompt_file}}",
            agent.display()
        )),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert_eq!(trace_events(&run_dir, "AUTOFIX").len(), 1);
    assert_eq!(
        repo.git(&["show", "dandori/RQ-1/run-1:src/S01/v"]).trim(),
        "42"
    );
    assert!(
        out.completion
            .summary
            .lessons_learned
            .iter()
            .any(|l| l.contains("1 fix cycle"))
    );
}

#[test]
fn unit_failure_after_all_fix_cycles_is_unit_test_failed() {
    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p src/S01; date +%N > src/S01/v"#);
    let run_dir = repo.write_plan(&planning(vec![S::new("S01").unit("exit 3")], json!({})));
    let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Failed);
    let st = stage(&run_dir);
    assert_eq!(st["steps"][0]["reason_code"], "UNIT_TEST_FAILED");
    assert_eq!(trace_events(&run_dir, "AUTOFIX").len(), 2);
    assert!(
        out.completion
            .summary
            .recommendations
            .iter()
            .any(|r| r.contains("logs/step.S01.unit.log"))
    );
}

#[test]
fn a_fix_attempt_that_changes_nothing_is_a_loop_not_success() {
    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p src/S01; echo same > src/S01/v"#);
    let run_dir = repo.write_plan(&planning(
        // Passes at the base, fails once the agent wrote its file.
        vec![S::new("S01").unit("test ! -e src/S01/v || { echo broken; exit 1; }")],
        json!({}),
    ));
    let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    let out = run(&opts).unwrap();
    assert_eq!(
        out.completion.status,
        CompletionStatus::RequiresHumanIntervention
    );
    assert_eq!(out.completion.exit_code, 6);
    assert!(!out.completion.summary.goal_achieved);
    assert_eq!(stage(&run_dir)["steps"][0]["reason_code"], "LOOP_DETECTED");
}

#[test]
fn gh_is_refused_to_agents_and_unit_commands() {
    let repo = Repo::new();
    let agent = repo.agent(r#"gh pr create --fill"#);
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    let out = run(&opts).unwrap();
    assert_eq!(stage(&run_dir)["steps"][0]["reason_code"], "AGENT_FAILED");
    let log = std::fs::read_to_string(run_dir.join("logs/step.S01.agent.log")).unwrap();
    assert!(log.contains("gh is forbidden"), "{log}");
    assert_eq!(out.completion.status, CompletionStatus::Failed);

    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p src/S01; echo 1 > src/S01/x"#);
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit("gh run list")],
        json!({}),
    ));
    let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    run(&opts).unwrap();
    assert_eq!(stage(&run_dir)["steps"][0]["reason_code"], "GH_FORBIDDEN");
}

#[test]
fn gates_refuse_a_dirty_worktree_and_work_on_base() {
    let repo = Repo::new();
    std::fs::write(repo.path.join("README.md"), "changed\n").unwrap();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let opts = options(&repo, &run_dir, Some("true".to_string()));
    let err = run(&opts).unwrap_err();
    assert_eq!(err.reason_code(), "WORKTREE_DIRTY");
    assert_eq!(dandori_runner::exit_code_for_error(&err), 4);
    let errors = std::fs::read_to_string(run_dir.join("errors.json")).unwrap();
    assert!(errors.contains("WORKTREE_DIRTY"), "{errors}");

    let repo = Repo::new();
    let mut plan = planning(vec![S::new("S01")], json!({}));
    plan["work_branch"] = json!("main");
    let run_dir = repo.write_plan(&plan);
    let err = run(&options(&repo, &run_dir, Some("true".to_string()))).unwrap_err();
    assert_eq!(err.reason_code(), "WORK_BRANCH_REQUIRED");
}

#[test]
fn bad_plans_stop_with_reason_codes() {
    let repo = Repo::new();
    let run_dir = repo.path.join(".dandori/runs/RQ-1/run-1");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(run_dir.join("planning.json"), "{\"version\": ").unwrap();
    let err = run(&options(&repo, &run_dir, None)).unwrap_err();
    assert_eq!(err.reason_code(), "JSON_PARSE_ERROR");
    assert!(err.to_string().contains("planning.json"), "{err}");

    let mut plan = planning(vec![S::new("S01")], json!({}));
    plan["context"]["acceptance_criteria"] = json!([]);
    let run_dir = repo.write_plan(&plan);
    assert_eq!(
        run(&options(&repo, &run_dir, None))
            .unwrap_err()
            .reason_code(),
        "AC_TOO_FEW"
    );

    let mut plan = planning(vec![S::new("S01"), S::new("S02").deps(&[])], json!({}));
    plan["steps"][0]["depends_on"] = json!(["S02"]);
    let run_dir = repo.write_plan(&plan);
    assert_eq!(
        run(&options(&repo, &run_dir, None))
            .unwrap_err()
            .reason_code(),
        "PLAN_ORDER_INVALID"
    );
}

#[test]
fn without_a_model_steps_wait_and_the_run_says_so() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01"), S::new("S02")], json!({})));
    let out = run(&options(&repo, &run_dir, None)).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::NeedsInput);
    assert_eq!(out.completion.exit_code, 3);
    assert_eq!(
        statuses(&run_dir),
        s(&[("S01", "needs_input"), ("S02", "needs_input")])
    );
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "MODEL_NOT_CONFIGURED"
    );
    // The gates still ran: the work branch exists; the user's checkout stays.
    assert_eq!(
        repo.git(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    assert!(
        !repo
            .git(&["rev-parse", "--verify", "dandori/RQ-1/run-1"])
            .trim()
            .is_empty()
    );
    // Later, with an agent, resume runs the waiting steps.
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo 1 > "src/$1/x""#);
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.resume = true;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
}

#[test]
fn regression_acceptance_criteria_require_e2e_commands() {
    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo 1 > "src/$1/x""#);
    let mut plan = planning(
        vec![S::new("S01").acs(&["AC-01", "AC-02", "AC-03"])],
        json!({"require_e2e_for_regression_ac": true}),
    );
    plan["context"]["acceptance_criteria"][1]["type"] = json!("regression");
    let run_dir = repo.write_plan(&plan);
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::NeedsInput);
    assert_eq!(stage(&run_dir)["steps"][0]["reason_code"], "E2E_REQUIRED");

    // With e2e commands the step runs them after its unit commands.
    let repo = Repo::new();
    let ctl = repo.ctl();
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo 1 > "src/$1/x""#);
    plan["steps"][0]["commands"]["e2e"] = json!([format!("touch {}/e2e-ran", ctl.display())]);
    let run_dir = repo.write_plan(&plan);
    let opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    assert!(ctl.join("e2e-ran").exists());
}

#[test]
fn secrets_in_the_environment_never_reach_logs_or_the_trace() {
    let repo = Repo::new();
    let agent =
        repo.agent(r#"echo "using key $DEMO_API_KEY"; mkdir -p src/S01; echo 1 > src/S01/x"#);
    // Plan sanitisation refuses a unit command that names the secret variable
    // (PLAN_SECRET_READ); a script the policy cannot see into still prints it.
    let unit = agent.with_file_name("unit.sh");
    std::fs::write(&unit, "#!/bin/sh\necho \"token=$DEMO_API_KEY\"\n").unwrap();
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit(&format!("sh {}", unit.display()))],
        json!({}),
    ));
    let mut opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    opts.base_env.insert(
        "DEMO_API_KEY".to_string(),
        "plain-secret-value-4711".to_string(),
    );
    // The agent's own credential, passed because the user listed it.
    opts.config.runner.agent_env = vec!["DEMO_API_KEY".to_string()];
    run(&opts).unwrap();
    for f in [
        "logs/step.S01.agent.log",
        "logs/step.S01.unit.log",
        "trace.jsonl",
        "report.md",
    ] {
        let text = std::fs::read_to_string(run_dir.join(f)).unwrap();
        assert!(!text.contains("plain-secret-value-4711"), "{f}: {text}");
    }
    let log = std::fs::read_to_string(run_dir.join("logs/step.S01.agent.log")).unwrap();
    assert!(log.contains("using key ***"), "{log}");
}

#[test]
fn a_plan_the_sanitisation_refuses_never_starts() {
    let repo = Repo::new();
    let agent = repo.agent("mkdir -p src/S01; echo 1 > src/S01/x");
    for (unit, code) in [
        ("sudo make test", "PLAN_PRIVILEGE_ESCALATION"),
        ("while true; do make test; done", "PLAN_INFINITE_LOOP"),
        ("make serve & make test", "PLAN_BACKGROUND_PROCESS"),
        ("cat /proc/self/environ", "PLAN_SECRET_READ"),
    ] {
        let run_dir = repo.write_plan(&planning(vec![S::new("S01").unit(unit)], json!({})));
        let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
        let err = run(&opts).unwrap_err().to_string();
        assert!(err.contains(code), "{unit}: {err}");
        assert!(err.contains("steps[0].commands.unit[0]"), "{err}");
        assert!(!repo.path.join("src/S01/x").exists());
    }
}

/// A unit command that fails at the base without naming a test (an import
/// error, an interpreter too new for the commit) and fails the same way after
/// the step: still the step's failure (the command may be its gate), and the
/// fix prompt says the base failed so too; the baseline recorded the crash.
#[test]
fn a_unit_command_crashing_at_the_base_as_after_the_step_is_said_so() {
    let repo = Repo::new();
    let agent = repo.agent(r#"mkdir -p src/S01; echo v > src/S01/v"#);
    let crash = "echo 'TypeError: required field lineno missing' >&2; exit 1";
    let run_dir = repo.write_plan(&planning(vec![S::new("S01").unit(crash)], json!({})));
    let opts = options(&repo, &run_dir, Some(format!("sh {}", agent.display())));
    run(&opts).unwrap();
    let st = stage(&run_dir);
    assert_eq!(st["steps"][0]["status"], "failed", "{st:#}");
    let base = &st["baseline"]["runs"][0];
    assert_eq!(
        base["crash"], "TypeError: required field lineno missing",
        "{st:#}"
    );
    let prompt = std::fs::read_to_string(run_dir.join("logs/step.S01.prompt.md")).unwrap();
    assert!(
        prompt.contains("how the command failed on the base commit too"),
        "{prompt}"
    );
}
