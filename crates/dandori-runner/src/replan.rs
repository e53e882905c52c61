//! Seed 004 §2 replan triggers. The seed lists three conditions under which a
//! plan is redone rather than patched: `STEP_TOO_LARGE` (the runner splits the
//! step, [`crate::step`]), a contradiction in the request or targets that cannot
//! be chosen (an input problem: the run asks for input), and **compound test
//! failures that call for a new design** — handled here.
//!
//! A step's test failures are compound when, after `limits.max_autofix_cycles`
//! fix attempts (or when the fix loop stopped as `LOOP_DETECTED`: a fix attempt
//! that changed nothing met the same failure), the unit commands still fail by **two or more distinct tests
//! of the step's own** (regressions and new failures judged against the base
//! commit; tests already failing there do not count), or **two or more unit
//! commands** fail. A single failing test stays a local bug: the step ends
//! `UNIT_TEST_FAILED` as before. A timeout is never compound.
//!
//! On compound failures the runner replans the step: its work is reset to the
//! step's base commit and the step is done again from a new design, told what
//! failed, with fresh fix cycles. Each replan is one plan revision (seed 000
//! `planning.revision.max_revisions`, shared with splits and the model's own
//! revisions, counted in `stage.json` `revisions`) and is recorded as a
//! `PLAN_REVISION` trace event in the seed 000 §2.5 `plan_revision` shape
//! (`trigger: compound_test_failure`, `fix_cycles_ended` saying how the fix
//! cycles ended). A split after `STEP_TOO_LARGE` is recorded the same way
//! (`trigger: step_too_large`). The input class (a contradiction in the
//! request, targets that cannot be chosen) is not replanned automatically: a
//! new design from the same input meets the same problem, so the run asks for
//! the input (`needs_input`).

use std::collections::BTreeSet;

use crate::evidence::{Baseline, CommandRun, Verdict, judge};

/// The `trigger` of a replan's `PLAN_REVISION` event.
pub const COMPOUND_TEST_FAILURE: &str = "compound_test_failure";
/// The `trigger` of a split's `PLAN_REVISION` event (the step is redone as parts).
pub const STEP_TOO_LARGE: &str = "step_too_large";

/// What failed in the last runs of a step's unit commands, when it is compound
/// (see the module docs): the failing tests (or the commands, when their output
/// names no test), in order. None when it is not compound.
pub fn compound_failures(runs: &[CommandRun], baseline: Option<&Baseline>) -> Option<Vec<String>> {
    let mut tests: BTreeSet<String> = BTreeSet::new();
    let mut commands: Vec<String> = Vec::new();
    for run in runs {
        // A timeout says nothing about the design.
        run.exit_code?;
        match judge(run, baseline.and_then(|b| b.run_of(&run.command))) {
            Verdict::Passed | Verdict::PreexistingOnly(_) => {}
            Verdict::Failed {
                regressions,
                new_failures,
            } => {
                commands.push(run.command.clone());
                tests.extend(regressions);
                tests.extend(new_failures);
            }
        }
    }
    if tests.len() >= 2 {
        Some(tests.into_iter().collect())
    } else if commands.len() >= 2 {
        Some(commands.into_iter().map(|c| format!("`{c}`")).collect())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str, exit: Option<i32>, tests: &[(&str, bool)]) -> CommandRun {
        CommandRun {
            command: command.to_string(),
            exit_code: exit,
            tests: tests.iter().map(|(t, p)| (t.to_string(), *p)).collect(),
            counted: None,
            log: String::new(),
            crash: None,
        }
    }

    #[test]
    fn two_failing_tests_are_compound_one_is_not() {
        let two = run(
            "pytest",
            Some(1),
            &[("t::a", false), ("t::b", false), ("t::c", true)],
        );
        assert_eq!(
            compound_failures(&[two], None),
            Some(vec!["t::a".to_string(), "t::b".to_string()])
        );
        let one = run("pytest", Some(1), &[("t::a", false), ("t::b", true)]);
        assert_eq!(compound_failures(&[one], None), None);
    }

    #[test]
    fn failures_already_on_the_base_do_not_count() {
        let base = Baseline {
            commit: "c".to_string(),
            runs: vec![run("pytest", Some(1), &[("t::a", false), ("t::b", true)])],
        };
        let now = run("pytest", Some(1), &[("t::a", false), ("t::b", false)]);
        assert_eq!(compound_failures(&[now], Some(&base)), None);
    }

    #[test]
    fn two_failing_commands_without_test_names_are_compound_a_timeout_never() {
        let a = run("make check", Some(2), &[]);
        let b = run("./lint.sh", Some(1), &[]);
        assert_eq!(
            compound_failures(&[a.clone(), b], None),
            Some(vec!["`make check`".to_string(), "`./lint.sh`".to_string()])
        );
        let t = run("pytest", None, &[]);
        assert_eq!(compound_failures(&[a, t], None), None);
    }
}
