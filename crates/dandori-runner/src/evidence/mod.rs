//! Proven completion (issue 20): what the tests said at the base commit (the
//! baseline), what they say after each step, and what that proves.
//!
//! * A test failing at the base is **pre-existing**: never blamed on a step, never
//!   sent to autofix, listed in the report.
//! * A test passing at the base and failing after a step is that step's
//!   **regression**.
//! * An acceptance criterion is **covered** only by a check that was red (failing
//!   or absent) at the base and is green after (FAIL_TO_PASS), or — regression and
//!   non-functional criteria — when every test passing at the base still passes
//!   (PASS_TO_PASS). "The suite passes" alone is **unverified**.

pub mod junit;
pub mod parse;
pub mod runner_hooks;

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::{AcKind, AcceptanceCriterion};
use serde::{Deserialize, Serialize};

pub use parse::TestResults;

/// One run of one test command: its exit and its per-test results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandRun {
    pub command: String,
    /// `None` on a timeout or a signal.
    pub exit_code: Option<i32>,
    /// Test id → passed (empty when the output had no per-test results).
    #[serde(default)]
    pub tests: TestResults,
    /// What the runner's summary counted (`Ran 2 tests`), for output that names
    /// no test: tests ran even though `tests` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<runner_hooks::TestCount>,
    pub log: String,
    /// A command that failed without naming a test (a crash, an import or
    /// collection error): the last line it printed, durations blanked — how a
    /// step's run of the command is told to fail the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<String>,
}

impl CommandRun {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }

    pub fn failing(&self) -> BTreeSet<&str> {
        self.tests
            .iter()
            .filter(|(_, p)| !**p)
            .map(|(t, _)| t.as_str())
            .collect()
    }
}

/// The test commands run once on the base commit before the first step
/// (`stage.json` `baseline`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// The commit the commands ran on (`work_start`).
    pub commit: String,
    pub runs: Vec<CommandRun>,
}

impl Baseline {
    pub fn run_of(&self, command: &str) -> Option<&CommandRun> {
        self.runs.iter().find(|r| r.command == command)
    }

    /// Every test failing at the base, with its command.
    pub fn failures(&self) -> Vec<(&str, &str)> {
        self.runs
            .iter()
            .flat_map(|r| r.failing().into_iter().map(|t| (r.command.as_str(), t)))
            .collect()
    }
}

/// A unit command's run judged against the base.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Passed,
    /// It failed, but only by tests that already failed at the base.
    PreexistingOnly(Vec<String>),
    Failed {
        /// Passed at the base, fail now.
        regressions: Vec<String>,
        /// Failing now, absent at the base (or without a baseline).
        new_failures: Vec<String>,
    },
}

pub fn judge(run: &CommandRun, base: Option<&CommandRun>) -> Verdict {
    if run.passed() {
        return Verdict::Passed;
    }
    let failing = run.failing();
    let failed = |regressions: Vec<String>, new_failures: Vec<String>| Verdict::Failed {
        regressions,
        new_failures,
    };
    // A timeout, or a failure the output does not attribute to tests (a
    // collection error, a crash): the command's own failure.
    if run.exit_code.is_none() || failing.is_empty() {
        return failed(Vec::new(), Vec::new());
    }
    let Some(base) = base else {
        return failed(Vec::new(), failing.iter().map(|s| s.to_string()).collect());
    };
    let base_failing = base.failing();
    let mut regressions = Vec::new();
    let mut new_failures = Vec::new();
    for t in &failing {
        match base.tests.get(*t) {
            Some(true) => regressions.push(t.to_string()),
            Some(false) => {}
            None => new_failures.push(t.to_string()),
        }
    }
    if regressions.is_empty() && new_failures.is_empty() && failing.is_subset(&base_failing) {
        Verdict::PreexistingOnly(failing.iter().map(|s| s.to_string()).collect())
    } else {
        failed(regressions, new_failures)
    }
}

/// `run` crashed the way its command crashed at the base: no test named, the
/// same exit code and the same last line (`crash`). What is said of it then:
/// "`cmd` itself (<last line>)". Still a failure (the command may be the
/// step's gate, its work not done); the fix prompt says the base failed so too.
pub fn same_crash(run: &CommandRun, base: Option<&CommandRun>) -> Option<String> {
    let b = base?;
    let same = run.exit_code.is_some()
        && run.exit_code != Some(0)
        && run.tests.is_empty()
        && b.tests.is_empty()
        && b.exit_code == run.exit_code
        && b.crash.is_some()
        && b.crash == run.crash;
    same.then(|| {
        format!(
            "`{}` itself ({})",
            run.command,
            b.crash.as_deref().unwrap_or_default()
        )
    })
}

/// An acceptance criterion's check (`acceptance_criteria[].check` in
/// planning.json): a test selector — a test id (`tests/test_x.py::test_a`,
/// `test_mod.TestX.test_a`, a node test name), or a prefix of ids (a file, a
/// class: `tests/test_x.py`, `test_mod.TestX`) — as a string or `{"test": …}`;
/// or an executable assertion, `{"command": "…"}`, run on the base and after
/// every step linking the AC (like its unit commands: a step is not done while
/// it fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AcCheck {
    Test(String),
    Command(String),
}

impl AcCheck {
    pub fn state(&self, runs: &[CommandRun]) -> CheckState {
        match self {
            AcCheck::Test(sel) => check_state(sel, runs),
            AcCheck::Command(cmd) => match runs.iter().rfind(|r| &r.command == cmd) {
                None => CheckState::Absent,
                Some(r) if r.passed() => CheckState::Pass,
                Some(_) => CheckState::Fail,
            },
        }
    }

    pub fn describe(&self) -> String {
        match self {
            AcCheck::Test(sel) => format!("test {sel}"),
            AcCheck::Command(cmd) => format!("command `{cmd}`"),
        }
    }
}

pub fn ac_check(ac: &AcceptanceCriterion) -> Option<AcCheck> {
    let v = ac.extra.get("check")?;
    let nonempty = |s: &str| {
        let s = s.trim();
        (!s.is_empty()).then(|| s.to_string())
    };
    if let Some(s) = v.as_str() {
        return nonempty(s).map(AcCheck::Test);
    }
    if let Some(c) = v.get("command").and_then(|t| t.as_str()) {
        return nonempty(c).map(AcCheck::Command);
    }
    v.get("test")
        .and_then(|t| t.as_str())
        .and_then(nonempty)
        .map(AcCheck::Test)
}

/// The command checks of the acceptance criteria a step links.
pub fn command_checks(acs: &[AcceptanceCriterion], links: &[String]) -> Vec<String> {
    acs.iter()
        .filter(|a| links.contains(&a.id))
        .filter_map(|a| match ac_check(a) {
            Some(AcCheck::Command(c)) => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether test `id` is selected by `selector`.
pub fn selects(selector: &str, id: &str) -> bool {
    // A parametrised test (`test_p[1]`) is selected by its function's name.
    let bare = match id.find('[') {
        Some(i) if id.ends_with(']') => &id[..i],
        _ => id,
    };
    if id == selector || bare == selector {
        return true;
    }
    const SEPARATORS: [&str; 4] = ["::", ".", " > ", "/"];
    SEPARATORS.iter().any(|sep| {
        id.strip_prefix(selector)
            .is_some_and(|r| r.starts_with(sep))
            || bare
                .strip_suffix(selector)
                .is_some_and(|r| r.ends_with(sep))
    })
}

/// The acceptance criterion a test names in its id (`test_ac01_…`,
/// `TestAC_02`, `AC-3 returns …`), as test-first steps are asked to name them:
/// the digits after `ac` (with an optional `-` / `_`), leading zeros dropped.
pub fn ac_tag(test_id: &str) -> Option<u32> {
    let lower = test_id.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut i = 0;
    while let Some(off) = lower[i..].find("ac") {
        let at = i + off;
        i = at + 2;
        // `ac` starts a word or a CamelCase part (`tract` is not a tag, `TestAC` is).
        if at > 0 && b[at - 1].is_ascii_alphabetic() && !test_id.as_bytes()[at].is_ascii_uppercase()
        {
            continue;
        }
        let mut j = at + 2;
        if j < b.len() && (b[j] == b'-' || b[j] == b'_') {
            j += 1;
        }
        let digits_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > digits_start
            && (j == b.len() || !b[j].is_ascii_alphanumeric())
            && let Ok(n) = lower[digits_start..j].parse()
        {
            return Some(n);
        }
    }
    None
}

/// Whether `test_id` may evidence the criterion `ac_id`: it names it, or it names
/// no criterion at all (then it counts for every criterion its step links).
pub fn tagged_for(test_id: &str, ac_id: &str) -> bool {
    match ac_tag(test_id) {
        None => true,
        Some(n) => ac_tag(ac_id) == Some(n),
    }
}

/// A check's state in a set of runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckState {
    Pass,
    Fail,
    Absent,
}

impl CheckState {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckState::Pass => "pass",
            CheckState::Fail => "fail",
            CheckState::Absent => "absent",
        }
    }
}

pub fn check_state(selector: &str, runs: &[CommandRun]) -> CheckState {
    let mut seen = false;
    for r in runs {
        for (id, passed) in &r.tests {
            if selects(selector, id) {
                if !passed {
                    return CheckState::Fail;
                }
                seen = true;
            }
        }
    }
    if seen {
        CheckState::Pass
    } else {
        CheckState::Absent
    }
}

/// What a step's verifications showed, as recorded in `evidence/Sxx.json` once
/// its commit exists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepEvidence {
    pub step_id: String,
    pub commit: String,
    pub runs: Vec<CommandRun>,
    /// The step changed nothing (`ALREADY_SATISFIED`): what it saw green was made
    /// green by an earlier step.
    #[serde(default)]
    pub already_satisfied: bool,
    /// A test-first step's new tests that passed without any change outside its
    /// test targets: they pass on the code as it was and prove nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub vacuous: Vec<String>,
    /// Tests that passed at the base and that the step's change took out of the
    /// sources (renamed or deleted, [`removed_by`]): gone on purpose, not broken.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed_tests: Vec<String>,
}

/// The name a test id gives its test in the sources: `path::mod::name[param]`
/// (pytest, cargo) → `name`; `name (module.Class)` (unittest) → `name`;
/// `suite > name` (jest, vitest, node) → `name`; `Class.name` (JUnit) → `name`;
/// `TestX/sub` (go) → `sub`.
fn test_name(id: &str) -> &str {
    let id = id.split('[').next().unwrap_or(id);
    let id = id.split(" (").next().unwrap_or(id);
    let id = id.rsplit("::").next().unwrap_or(id);
    let id = id.rsplit(" > ").next().unwrap_or(id);
    let id = if id.contains(' ') {
        id
    } else {
        id.rsplit(['.', '/']).next().unwrap_or(id)
    };
    id.trim()
}

/// Whether `patch` (a unified diff) took the test `id` out of the sources: a
/// removed line names it and no added line does. A test that disappears while
/// its definition stays (a collection error, a lost file) is not removed.
pub fn removed_by(patch: &str, id: &str) -> bool {
    let name = test_name(id);
    if name.len() < 3 {
        return false;
    }
    let mut removed = false;
    for line in patch.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        if let Some(l) = line.strip_prefix('+') {
            if names(l, name) {
                return false;
            }
        } else if let Some(l) = line.strip_prefix('-') {
            removed |= names(l, name);
        }
    }
    removed
}

/// `line` holds `name` as a whole word.
fn names(line: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(name).any(|(i, _)| {
        !line[..i].chars().next_back().is_some_and(word)
            && !line[i + name.len()..].chars().next().is_some_and(word)
    })
}

/// A criterion whose check is its whole claim: its then clause asks only that
/// the check succeeds ("it succeeds", "it builds", "exits 0", "成功する",
/// "エラーにならない"), no value, no output. When that check already passed at
/// the base, the criterion guards what worked (`cargo doc` still builds after
/// a docs change); one naming a result ("it returns 3") green at the base is
/// work done before the run, no evidence of it.
pub fn is_guard(ac: &AcceptanceCriterion) -> bool {
    let then = ac.then.trim().trim_end_matches(['.', '。']).to_lowercase();
    let then = then
        .strip_prefix("it ")
        .or_else(|| then.strip_prefix("they "))
        .unwrap_or(&then);
    [
        "succeeds",
        "succeed",
        "still succeeds",
        "passes",
        "pass",
        "builds",
        "still builds",
        "exits 0",
        "exits with 0",
        "exits with status 0",
        "成功する",
        "エラーにならない",
    ]
    .contains(&then.trim())
        && ac_check(ac).is_some_and(|c| matches!(c, AcCheck::Command(_)))
}

/// The step credited with making a check green that `steps[i]` first saw green:
/// itself, or — when it changed nothing (`ALREADY_SATISFIED`) — the last step
/// before it in plan order that changed something.
fn credited(steps: &[StepEvidence], i: usize) -> &StepEvidence {
    if steps[i].already_satisfied
        && let Some(s) = steps[..i].iter().rev().find(|s| !s.already_satisfied)
    {
        return s;
    }
    &steps[i]
}

/// The per-AC verdict (report.md, `run --json`, `stage.json` `ac_evidence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AcStatus {
    /// Red → green (or, regression / non-functional, green → green).
    Covered,
    /// Nothing turned from red to green: the suite passing proves nothing.
    Unverified,
    /// The check fails after the steps, or a regression broke what passed.
    NotCovered,
}

/// The judgement of one acceptance criterion over the baseline and the done
/// steps' evidence (in plan order; follow-ups last).
#[derive(Debug, Clone, PartialEq)]
pub struct AcJudgement {
    pub status: AcStatus,
    pub check: String,
    pub base_result: String,
    pub after_result: String,
    pub green_step: Option<String>,
    pub green_commit: Option<String>,
    pub log: Option<String>,
}

/// Judges `ac`, linked by the steps `linking`, over `steps` (every done step's
/// evidence, plan order). A check proves only its own criterion: the runs of
/// another criterion's command check, and the tests another criterion's test
/// check selects, are no evidence for `ac` (`criteria`: the plan's criteria).
pub fn judge_ac(
    ac: &AcceptanceCriterion,
    criteria: &[AcceptanceCriterion],
    linking: &[String],
    baseline: Option<&Baseline>,
    steps: &[StepEvidence],
) -> AcJudgement {
    let regression = matches!(ac.kind, Some(AcKind::Regression | AcKind::Nonfunctional));
    let others: Vec<AcCheck> = criteria
        .iter()
        .filter(|o| o.id != ac.id)
        .filter_map(ac_check)
        .collect();
    let foreign_command = |command: &str| {
        others
            .iter()
            .any(|c| matches!(c, AcCheck::Command(o) if o == command))
    };
    let foreign_test = |id: &str| {
        others
            .iter()
            .any(|c| matches!(c, AcCheck::Test(sel) if selects(sel, id)))
    };
    let linked: Vec<&StepEvidence> = steps
        .iter()
        .filter(|s| linking.contains(&s.step_id))
        .collect();
    let mut j = AcJudgement {
        status: AcStatus::Unverified,
        check: String::new(),
        base_result: "n/a".to_string(),
        after_result: "n/a".to_string(),
        green_step: None,
        green_commit: None,
        log: None,
    };
    let no_baseline = Baseline {
        commit: String::new(),
        runs: Vec::new(),
    };
    let base = baseline.unwrap_or(&no_baseline);
    let vacuous: BTreeSet<&str> = steps
        .iter()
        .flat_map(|s| s.vacuous.iter().map(String::as_str))
        .collect();
    if regression {
        let all_done = !linking.is_empty()
            && linking
                .iter()
                .all(|id| steps.iter().any(|s| &s.step_id == id));
        let nonfunctional = ac.kind == Some(AcKind::Nonfunctional);
        return judge_regression(j, base, &linked, steps, all_done, nonfunctional);
    }
    if let Some(check) = ac_check(ac) {
        j.check = check.describe();
        let at_base = check.state(&base.runs);
        j.base_result = if baseline.is_some() {
            at_base.as_str().to_string()
        } else {
            "not run".to_string()
        };
        // The last step that ran the check says what holds now; the first of the
        // steps since which it stayed green made it green.
        let mut after = None;
        for (i, s) in steps.iter().enumerate() {
            match check.state(&s.runs) {
                CheckState::Absent => {}
                state => {
                    if state == CheckState::Pass && after != Some(CheckState::Pass) {
                        let c = credited(steps, i);
                        j.green_step = Some(c.step_id.clone());
                        j.green_commit = Some(c.commit.clone());
                        j.log = s.runs.first().map(|r| r.log.clone());
                    }
                    if state != CheckState::Pass {
                        j.green_step = None;
                        j.green_commit = None;
                        j.log = s.runs.first().map(|r| r.log.clone());
                    }
                    after = Some(state);
                }
            }
        }
        j.after_result = after.unwrap_or(CheckState::Absent).as_str().to_string();
        let passed_unchanged = match &check {
            AcCheck::Test(sel) => vacuous.iter().any(|t| selects(sel, t)),
            AcCheck::Command(_) => false,
        };
        j.status = match (baseline.is_some(), at_base, after) {
            (true, CheckState::Fail | CheckState::Absent, Some(CheckState::Pass))
                if !passed_unchanged =>
            {
                AcStatus::Covered
            }
            // A guard ("when `cargo doc` runs, then it succeeds") green at the base
            // asks that the change keep it green: green → green is its evidence,
            // as for a regression criterion.
            (true, CheckState::Pass, Some(CheckState::Pass)) if is_guard(ac) => AcStatus::Covered,
            // Already green before any change: no evidence of this run's work.
            (_, _, Some(CheckState::Pass)) => AcStatus::Unverified,
            _ => AcStatus::NotCovered,
        };
        return j;
    }
    // No check named: the tests (or test commands) of the linking steps that were
    // red or absent at the base and are green after.
    for s in &linked {
        for r in s.runs.iter().filter(|r| !foreign_command(&r.command)) {
            let base_run = base.run_of(&r.command);
            let turned: Vec<&String> = r
                .tests
                .iter()
                .filter(|(id, passed)| {
                    **passed
                        && base_run.and_then(|b| b.tests.get(*id)) != Some(&true)
                        && tagged_for(id, &ac.id)
                        && !foreign_test(id)
                        && !vacuous.contains(id.as_str())
                })
                .map(|(id, _)| id)
                .collect();
            if !turned.is_empty() {
                let names: Vec<&str> = turned.iter().take(3).map(|s| s.as_str()).collect();
                let more = turned.len().saturating_sub(3);
                j.check = format!(
                    "tests red or absent at the base: {}{}",
                    names.join(", "),
                    if more > 0 {
                        format!(" (+{more})")
                    } else {
                        String::new()
                    }
                );
                j.base_result = if baseline.is_some() {
                    "fail/absent".to_string()
                } else {
                    "not run".to_string()
                };
                j.after_result = "pass".to_string();
                // Credit the first step (plan order) whose runs had them all green.
                let first = steps.iter().position(|e| {
                    turned.iter().all(|t| {
                        e.runs
                            .iter()
                            .any(|r| r.tests.get(t.as_str()) == Some(&true))
                    })
                });
                let c = match first {
                    Some(i) => credited(steps, i),
                    None => *s,
                };
                j.green_step = Some(c.step_id.clone());
                j.green_commit = Some(c.commit.clone());
                j.log = Some(r.log.clone());
                j.status = if baseline.is_some() {
                    AcStatus::Covered
                } else {
                    AcStatus::Unverified
                };
                return j;
            }
            // A command without per-test results is its own check.
            if r.tests.is_empty()
                && r.passed()
                && let Some(b) = base_run
                && b.tests.is_empty()
                && !b.passed()
            {
                j.check = format!("command `{}`", r.command);
                j.base_result = format!("exit {}", exit_str(b.exit_code));
                j.after_result = "exit 0".to_string();
                let i = steps
                    .iter()
                    .position(|e| e.step_id == s.step_id)
                    .unwrap_or(0);
                let c = if steps.is_empty() {
                    *s
                } else {
                    credited(steps, i)
                };
                j.green_step = Some(c.step_id.clone());
                j.green_commit = Some(c.commit.clone());
                j.log = Some(r.log.clone());
                j.status = AcStatus::Covered;
                return j;
            }
        }
    }
    let Some(r) = linked
        .iter()
        .flat_map(|s| &s.runs)
        .rfind(|r| !foreign_command(&r.command))
    else {
        j.check = "none (no test ran after the linking steps)".to_string();
        // No linking step is done: nothing of it exists.
        if linked.is_empty() {
            j.status = AcStatus::NotCovered;
        }
        return j;
    };
    let base_passed = base.run_of(&r.command).map(CommandRun::passed);
    // A runner that named no test still said how many ran: never "0 tests".
    let counted = match r.counted {
        Some(c) if r.tests.is_empty() => format!(
            " (its summary counted {} test(s), {} failing, without naming them)",
            c.ran, c.failed
        ),
        _ => String::new(),
    };
    j.check = match base_passed {
        Some(true) => format!(
            "none named; `{}` passed at the base already{counted}",
            r.command
        ),
        _ => format!("none named; `{}` names no test{counted}", r.command),
    };
    let ok = matches!(
        judge(r, base.run_of(&r.command)),
        Verdict::Passed | Verdict::PreexistingOnly(_)
    );
    j.after_result = if ok { "pass" } else { "fail" }.to_string();
    j.log = Some(r.log.clone());
    j.base_result = match base_passed {
        None => "not run",
        Some(true) => "pass",
        Some(false) => "fail",
    }
    .to_string();
    if !ok {
        j.status = AcStatus::NotCovered;
    }
    j
}

fn judge_regression(
    mut j: AcJudgement,
    base: &Baseline,
    linked: &[&StepEvidence],
    steps: &[StepEvidence],
    all_done: bool,
    nonfunctional: bool,
) -> AcJudgement {
    // Per test id (or, for a command without per-test results, the command
    // itself) passing at the base: its command.
    let passing_at_base: BTreeMap<String, &str> = base
        .runs
        .iter()
        .flat_map(|r| {
            let tests: Vec<(String, &str)> = if r.tests.is_empty() {
                if r.passed() {
                    vec![(format!("`{}`", r.command), r.command.as_str())]
                } else {
                    Vec::new()
                }
            } else {
                r.tests
                    .iter()
                    .filter(|(_, p)| **p)
                    .map(|(t, _)| (t.clone(), r.command.as_str()))
                    .collect()
            };
            tests
        })
        .collect();
    // A non-functional criterion (scope, size, "nothing else changed") is held
    // by the runner's checks of each step; the tests show the change broke nothing.
    j.check = if nonfunctional {
        "the runner's scope and size checks of every linking step passed, and tests passing at the base still pass"
    } else {
        "tests passing at the base still pass"
    }
    .to_string();
    j.base_result = format!("{} passing", passing_at_base.len());
    if passing_at_base.is_empty() && all_done && !linked.is_empty() {
        // Nothing passed at the base, so nothing can have broken: what holds is
        // what the runner checked of every linking step (scope, size, policy).
        let latest = linked[linked.len() - 1];
        j.check = "no test passed at the base; the runner's scope and size checks of every linking step passed".to_string();
        j.after_result = "nothing to break".to_string();
        j.green_step = Some(latest.step_id.clone());
        j.green_commit = Some(latest.commit.clone());
        j.status = AcStatus::Covered;
        return j;
    }
    if passing_at_base.is_empty() || linked.is_empty() {
        return j;
    }
    // The last run of each command (plan order) is what holds now.
    let last = last_run_per_command(steps.iter().flat_map(|s| &s.runs));
    let removed: std::collections::BTreeSet<&str> = steps
        .iter()
        .flat_map(|s| s.removed_tests.iter().map(String::as_str))
        .collect();
    let mut broken = Vec::new();
    let mut gone = Vec::new();
    let mut checked = 0;
    for (t, cmd) in &passing_at_base {
        if let Some(r) = last.get(cmd) {
            checked += 1;
            let still = if r.tests.is_empty() {
                r.passed()
            } else {
                r.tests.get(t) == Some(&true)
            };
            let taken_out =
                !r.tests.is_empty() && !r.tests.contains_key(t) && removed.contains(t.as_str());
            if still {
                continue;
            }
            if taken_out {
                gone.push(t.as_str());
            } else {
                broken.push(t.as_str());
            }
        }
    }
    let gone_note = if gone.is_empty() {
        String::new()
    } else {
        format!(
            "; {} taken out of the sources by the change: {}",
            gone.len(),
            gone.join(", ")
        )
    };
    if checked == 0 {
        return j;
    }
    let latest = linked[linked.len() - 1];
    j.green_step = Some(latest.step_id.clone());
    j.green_commit = Some(latest.commit.clone());
    j.log = latest.runs.first().map(|r| r.log.clone());
    if broken.is_empty() {
        j.after_result = format!("{} still passing{gone_note}", checked - gone.len());
        j.status = AcStatus::Covered;
    } else {
        j.after_result = format!("{} broken: {}{gone_note}", broken.len(), broken.join(", "));
        j.status = AcStatus::NotCovered;
        j.green_step = None;
        j.green_commit = None;
    }
    j
}

/// The last of `runs` (in order) of each command: what holds after them.
pub fn last_run_per_command<'a>(
    runs: impl IntoIterator<Item = &'a CommandRun>,
) -> BTreeMap<&'a str, &'a CommandRun> {
    let mut last = BTreeMap::new();
    for r in runs {
        last.insert(r.command.as_str(), r);
    }
    last
}

pub fn exit_str(code: Option<i32>) -> String {
    code.map_or("timeout".to_string(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_the_change_renamed_is_removed_and_a_lost_one_is_not() {
        let patch = "--- a/src/stats.rs\n+++ b/src/stats.rs\n@@ -1 +1 @@\n-    fn total_of_three() {\n+    fn sum_of_three() {\n";
        assert!(removed_by(patch, "stats::tests::total_of_three"));
        assert!(!removed_by(patch, "stats::tests::sum_of_three"));
        assert!(!removed_by(patch, "stats::tests::mean_of_two"));
        // A test renamed back and forth in one patch stays named by an added line.
        let kept = "-def test_total():\n+def test_total():  # faster\n";
        assert!(!removed_by(kept, "tests/test_s.py::test_total"));
        assert!(removed_by(
            "-    def test_product(self):\n",
            "test_product (tests.test_core.MulTest.test_product)"
        ));
        assert!(removed_by("-  it('adds two', () => {\n", "math > adds two"));
        // A longer name holding the test's name is another test.
        assert!(!removed_by(
            "-fn total_of_three_more() {\n",
            "m::total_of_three"
        ));
    }

    fn run(cmd: &str, exit: i32, tests: &[(&str, bool)]) -> CommandRun {
        CommandRun {
            command: cmd.to_string(),
            exit_code: Some(exit),
            tests: tests.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
            counted: None,
            log: "log".to_string(),
            crash: None,
        }
    }

    #[test]
    fn preexisting_failures_are_not_the_steps() {
        let base = run("t", 1, &[("a", true), ("b", false)]);
        assert_eq!(
            judge(&run("t", 1, &[("a", true), ("b", false)]), Some(&base)),
            Verdict::PreexistingOnly(vec!["b".to_string()])
        );
        assert_eq!(
            judge(&run("t", 1, &[("a", false), ("b", false)]), Some(&base)),
            Verdict::Failed {
                regressions: vec!["a".to_string()],
                new_failures: vec![]
            }
        );
        assert_eq!(
            judge(&run("t", 1, &[("a", true), ("c", false)]), Some(&base)),
            Verdict::Failed {
                regressions: vec![],
                new_failures: vec!["c".to_string()]
            }
        );
        // Unattributed failures are the command's.
        assert!(matches!(
            judge(&run("t", 2, &[]), Some(&base)),
            Verdict::Failed { .. }
        ));
    }

    /// A command that crashes at the base before running a test (an
    /// environment too new for the commit) is not the step's failure when it
    /// crashes the same way after it; another crash is.
    #[test]
    fn the_same_crash_as_at_the_base_is_not_the_steps() {
        let crashed = |exit: i32, line: &str| CommandRun {
            crash: Some(line.to_string()),
            ..run("python -m pytest", exit, &[])
        };
        let base = crashed(1, "TypeError: required field \"lineno\" missing from alias");
        let same = crashed(1, "TypeError: required field \"lineno\" missing from alias");
        assert_eq!(
            same_crash(&same, Some(&base)).as_deref(),
            Some(
                "`python -m pytest` itself (TypeError: required field \"lineno\" missing from alias)"
            )
        );
        // judge alone still calls it the command's failure.
        assert!(matches!(judge(&same, Some(&base)), Verdict::Failed { .. }));
        let other = crashed(1, "SyntaxError: invalid syntax");
        assert_eq!(same_crash(&other, Some(&base)), None);
        let exit2 = crashed(2, "TypeError: required field \"lineno\" missing from alias");
        assert_eq!(same_crash(&exit2, Some(&base)), None);
        assert_eq!(same_crash(&base, None), None);
    }

    fn criterion(id: &str, check: Option<serde_json::Value>) -> AcceptanceCriterion {
        let mut extra = serde_json::Map::new();
        if let Some(c) = check {
            extra.insert("check".to_string(), c);
        }
        AcceptanceCriterion {
            id: id.to_string(),
            given: "g".to_string(),
            when: "w".to_string(),
            then: "t".to_string(),
            kind: Some(AcKind::Functional),
            extra,
        }
    }

    /// A regression criterion is held by the tests that passed at the base; a
    /// non-functional one (scope, size) by the runner's checks of each step too,
    /// and its evidence says so.
    #[test]
    fn a_non_functional_criterion_names_the_runners_checks() {
        let baseline = Baseline {
            commit: "base".to_string(),
            runs: vec![run("python -m pytest", 0, &[("t::test_add", true)])],
        };
        let steps = vec![StepEvidence {
            step_id: "S01".to_string(),
            commit: "c1".to_string(),
            runs: vec![run("python -m pytest", 0, &[("t::test_add", true)])],
            already_satisfied: false,
            vacuous: Vec::new(),
            removed_tests: Vec::new(),
        }];
        let linking = vec!["S01".to_string()];
        let mut scope = criterion("AC-01", None);
        scope.kind = Some(AcKind::Nonfunctional);
        let mut regression = criterion("AC-02", None);
        regression.kind = Some(AcKind::Regression);
        let acs = vec![scope.clone(), regression.clone()];
        let j = judge_ac(&scope, &acs, &linking, Some(&baseline), &steps);
        assert_eq!(j.status, AcStatus::Covered);
        assert!(
            j.check.starts_with("the runner's scope and size checks"),
            "{j:?}"
        );
        assert_eq!(j.after_result, "1 still passing");
        let j = judge_ac(&regression, &acs, &linking, Some(&baseline), &steps);
        assert_eq!(j.check, "tests passing at the base still pass");
    }

    /// Issue 36: AC-02 (no check of its own) shares a step with AC-01, whose
    /// `grep` check went from red to green: that proves AC-01 only. A test the
    /// plan maps to AC-02 (named after it) proves AC-02.
    #[test]
    fn a_check_proves_only_its_own_criterion() {
        let grep = "grep -q mul calc/__init__.py";
        let acs = vec![
            criterion("AC-01", Some(serde_json::json!({ "command": grep }))),
            criterion("AC-02", None),
        ];
        let baseline = Baseline {
            commit: "base".to_string(),
            runs: vec![
                run(grep, 1, &[]),
                run("python -m pytest", 0, &[("t::test_add", true)]),
            ],
        };
        let linking = vec!["S01".to_string()];
        let step = |runs: Vec<CommandRun>| StepEvidence {
            step_id: "S01".to_string(),
            commit: "c1".to_string(),
            runs,
            already_satisfied: false,
            vacuous: Vec::new(),
            removed_tests: Vec::new(),
        };
        let only_grep = vec![step(vec![
            run(grep, 0, &[]),
            run("python -m pytest", 0, &[("t::test_add", true)]),
        ])];
        let j = judge_ac(&acs[0], &acs, &linking, Some(&baseline), &only_grep);
        assert_eq!(j.status, AcStatus::Covered);
        assert_eq!(j.check, format!("command `{grep}`"));
        let j = judge_ac(&acs[1], &acs, &linking, Some(&baseline), &only_grep);
        assert_eq!(j.status, AcStatus::Unverified, "{j:?}");
        assert!(!j.check.contains("grep"), "{}", j.check);

        let with_its_test = vec![step(vec![
            run(grep, 0, &[]),
            run(
                "python -m pytest",
                0,
                &[("t::test_add", true), ("t::test_ac02_mul_by_zero", true)],
            ),
        ])];
        let j = judge_ac(&acs[1], &acs, &linking, Some(&baseline), &with_its_test);
        assert_eq!(j.status, AcStatus::Covered, "{j:?}");
        assert!(j.check.contains("test_ac02_mul_by_zero"), "{}", j.check);
        // AC-01's test check selects a test: that test is no evidence for AC-02.
        let acs = vec![
            criterion("AC-01", Some(serde_json::json!({ "test": "test_mul" }))),
            criterion("AC-02", None),
        ];
        let its_neighbours_test = vec![step(vec![run(
            "python -m pytest",
            0,
            &[("t::test_add", true), ("t::test_mul", true)],
        )])];
        let j = judge_ac(
            &acs[0],
            &acs,
            &linking,
            Some(&baseline),
            &its_neighbours_test,
        );
        assert_eq!(j.status, AcStatus::Covered, "{j:?}");
        let j = judge_ac(
            &acs[1],
            &acs,
            &linking,
            Some(&baseline),
            &its_neighbours_test,
        );
        assert_eq!(j.status, AcStatus::Unverified, "{j:?}");
    }

    /// A runner that names no test (`python -I -m unittest`) is judged by its
    /// exit code, and the evidence says how many tests its summary counted.
    #[test]
    fn a_count_without_ids_is_said_in_the_evidence() {
        let acs = vec![criterion("AC-01", None)];
        let cmd = "python -I -m unittest";
        let counted = |ran, failed| {
            let mut r = run(cmd, i32::from(failed > 0), &[]);
            r.counted = Some(runner_hooks::TestCount { ran, failed });
            r
        };
        let baseline = Baseline {
            commit: "base".to_string(),
            runs: vec![counted(1, 1)],
        };
        let steps = vec![StepEvidence {
            step_id: "S01".to_string(),
            commit: "c1".to_string(),
            runs: vec![counted(2, 0)],
            already_satisfied: false,
            vacuous: Vec::new(),
            removed_tests: Vec::new(),
        }];
        let j = judge_ac(&acs[0], &acs, &["S01".to_string()], Some(&baseline), &steps);
        assert_eq!(j.status, AcStatus::Covered, "{j:?}");
        assert_eq!(j.check, format!("command `{cmd}`"));
        // Green at the base already: unverified, and the count is said.
        let baseline = Baseline {
            commit: "base".to_string(),
            runs: vec![counted(1, 0)],
        };
        let j = judge_ac(&acs[0], &acs, &["S01".to_string()], Some(&baseline), &steps);
        assert_eq!(j.status, AcStatus::Unverified, "{j:?}");
        assert_eq!(
            j.check,
            format!(
                "none named; `{cmd}` passed at the base already (its summary counted 2 test(s), 0 failing, without naming them)"
            )
        );
    }

    /// A criterion asking only that its command succeeds, green at the base
    /// (`cargo doc` after a docs change), is a guard: green → green covers it.
    /// One naming a result, green at the base, stays unverified.
    #[test]
    fn a_guard_green_at_the_base_is_covered_by_staying_green() {
        let doc = "cargo doc --no-deps -q";
        let mut guard = criterion("AC-01", Some(serde_json::json!({ "command": doc })));
        guard.then = "it succeeds".to_string();
        let mut value = criterion("AC-02", Some(serde_json::json!({ "command": "./x" })));
        value.then = "it prints 3".to_string();
        let acs = vec![guard, value];
        let baseline = Baseline {
            commit: "base".to_string(),
            runs: vec![run(doc, 0, &[]), run("./x", 0, &[])],
        };
        let linking = vec!["S01".to_string()];
        let green = |exit| {
            vec![StepEvidence {
                step_id: "S01".to_string(),
                commit: "c1".to_string(),
                runs: vec![run(doc, exit, &[]), run("./x", 0, &[])],
                already_satisfied: false,
                vacuous: Vec::new(),
                removed_tests: Vec::new(),
            }]
        };
        assert!(is_guard(&acs[0]) && !is_guard(&acs[1]));
        let j = judge_ac(&acs[0], &acs, &linking, Some(&baseline), &green(0));
        assert_eq!(j.status, AcStatus::Covered, "{j:?}");
        let j = judge_ac(&acs[0], &acs, &linking, Some(&baseline), &green(1));
        assert_eq!(j.status, AcStatus::NotCovered, "{j:?}");
        let j = judge_ac(&acs[1], &acs, &linking, Some(&baseline), &green(0));
        assert_eq!(j.status, AcStatus::Unverified, "{j:?}");
    }

    #[test]
    fn tests_named_after_a_criterion_evidence_only_that_criterion() {
        assert_eq!(
            ac_tag("tests/test_core.py::test_ac01_returns_sorted"),
            Some(1)
        );
        assert_eq!(ac_tag("test_m.TestAC_12.test_x"), Some(12));
        assert_eq!(ac_tag("AC-3 returns an empty list"), Some(3));
        assert_eq!(ac_tag("tests/test_core.py::test_subtract"), None);
        assert_eq!(ac_tag("test_tract2"), None);
        assert_eq!(ac_tag("test_acme"), None);
        assert!(tagged_for("test_ac01_x", "AC-01"));
        assert!(tagged_for("test_ac1_x", "AC-01"));
        assert!(!tagged_for("test_ac02_x", "AC-01"));
        assert!(tagged_for("test_plain", "AC-01"));
    }

    #[test]
    fn selectors() {
        assert!(selects("test_slugify", "tests/test_slug.py::test_slugify"));
        assert!(selects(
            "tests/test_slug.py",
            "tests/test_slug.py::test_slugify"
        ));
        assert!(selects("test_m.TestX", "test_m.TestX.test_a"));
        assert!(selects("test_a", "test_m.TestX.test_a"));
        assert!(selects("test_p", "tests/t.py::test_p[1]"));
        assert!(!selects("test_a", "test_m.TestX.test_ab"));
        assert!(!selects("slug", "tests/test_slug.py::test_x"));
    }
}
