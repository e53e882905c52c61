//! One step, start to commit, inside its own worktree (seed 004 §5): execute, check
//! the diff size (STEP_TOO_LARGE → split), run the unit commands, feed failures back
//! up to `max_autofix_cycles` times, commit. The coordinator later cherry-picks the
//! commits onto the work branch in step order.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use dandori_plan::{Planning, Role, Step};
use dandori_trace::TraceWriter;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::RunnerError;
use crate::executor::{ExecOutcome, ExecRequest, Executor, TokenUsage};
use crate::git::{Git, TRAILER_AC, TRAILER_CHECK, TRAILER_PART, TRAILER_RUN, TRAILER_STEP};
use crate::plan::RunPaths;
use crate::prompt::{self, Feedback};
use crate::reflection::{self, ReflectionStatus, Trigger};
use crate::workspace::StepWorkspace;
use crate::worktree::PoolWorktree;
use crate::{events, process, reason};

/// Shared by every worker of a run.
pub struct StepContext<'a> {
    pub planning: &'a Planning,
    pub paths: &'a RunPaths,
    pub executor: &'a dyn Executor,
    pub trace: &'a TraceWriter,
    pub env: &'a BTreeMap<String, String>,
    pub run_id: &'a str,
    /// `planning.reflection.trigger_interval` when configured; otherwise each
    /// step's comes from its complexity ([`reflection::interval_for`]).
    pub trigger_interval: Option<u32>,
    pub reflection_enabled: bool,
    /// Run-wide action counter (periodic reflection).
    pub actions: &'a AtomicU32,
    /// Run-wide plan revisions used (a split is a revision).
    pub revisions: &'a AtomicU32,
    pub max_revisions: u32,
    /// `llm.budgets`: an agent CLI's per-step cost and turns.
    pub budgets: &'a dandori_config::TokenBudgets,
    /// Masks secrets in logs.
    pub masker: &'a dandori_trace::Masker,
    /// The sandbox of unit commands (and of the agent command).
    pub sandbox: &'a dandori_exec::Sandbox,
    /// The command policy every unit and e2e command passes first.
    pub command_policy: &'a dandori_exec::CommandPolicy,
    /// The main repository's git config, hooks and attributes as they were before
    /// the run: changed files are reverted after each action (`GIT_CONFIG_TAMPERED`).
    pub git_guard: Option<&'a dandori_exec::git::ConfigGuard>,
    /// Seed 002 §7.2: the prepared environment, for the prompt (`None` when the
    /// environment sub-phase did not run).
    pub environment_summary: Option<&'a str>,
    /// The prepared environment's import roots in its environment tree, mapped
    /// into the step's worktree for its agent and tests ([`crate::pythonpath`]).
    pub import_roots: &'a crate::pythonpath::ImportRoots,
    /// The environment's `node_modules`, linked into the step's workspace.
    pub node_links: Option<&'a crate::environment::NodeLinks>,
    /// What the test commands said on the run's base commit (issue 20): failures
    /// already there are never the step's. `None`: no baseline ran.
    pub baseline: Option<&'a crate::evidence::Baseline>,
    /// The run's progress lines (stderr of the CLI): agent heartbeats.
    pub progress: Option<&'a crate::coordinator::Progress>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepResult {
    /// Commits (oldest first) in the step's worktree, ready to cherry-pick.
    Committed { commits: Vec<String> },
    Failed {
        reason_code: &'static str,
        message: String,
    },
    NeedsInput {
        reason_code: &'static str,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    pub index: usize,
    pub step_id: String,
    pub result: StepResult,
    pub tokens: TokenUsage,
    pub diff_lines: u64,
    pub files_changed: Vec<String>,
    pub autofix_cycles: u64,
    pub splits: u32,
    pub unit_passed: Option<bool>,
    pub duration: Duration,
    /// Why the report says what it says (for report.md next actions).
    pub notes: Vec<String>,
    /// The commit the step's worktree started at.
    pub base: Option<String>,
    /// Whether the step's commits form a chain on `base` (each made on the one
    /// before, the first on `base`): nothing else moved the worktree's HEAD.
    pub on_base: bool,
    /// The verifications that ran after the step's last change (recorded in its
    /// commit as `Dandori-Check` trailers): the evidence its ACs are covered.
    pub checks: Vec<Check>,
    /// The test commands' last runs with their per-test results.
    pub test_runs: Vec<crate::evidence::CommandRun>,
    /// Done without a change: its checks were already green (`ALREADY_SATISFIED`).
    pub already_satisfied: bool,
    /// Files changed outside `scope.target_paths`, with their changed lines.
    pub out_of_scope: Vec<(String, u64)>,
    /// What the agent CLI's invocations of this step reported using.
    pub agent: AgentUsage,
}

/// An agent CLI's usage over a step's invocations, each counted once (a resumed
/// session's cumulative figures as deltas): budgeted by
/// `llm.budgets.agent_step_cost_usd` and `llm.budgets.agent_step_turns`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentUsage {
    pub cost_usd: f64,
    pub turns: u64,
    /// Prompt (cache reads included) and completion tokens: part of the step's
    /// `tokens`, not of `llm.budgets.task`.
    pub tokens: u64,
}

impl AgentUsage {
    /// The usage of an executor's `LLM_CALL` records made by an agent CLI.
    pub fn of_calls(calls: &[(&'static str, Value)]) -> AgentUsage {
        let mut u = AgentUsage::default();
        for (event, d) in calls {
            if *event != events::LLM_CALL || d.get("agent").is_none() {
                continue;
            }
            let n = |p: &str| d.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            u.cost_usd += d.get("cost_usd").and_then(Value::as_f64).unwrap_or(0.0);
            u.turns += n("/num_turns");
            u.tokens += n("/usage/prompt_tokens") + n("/usage/completion_tokens");
        }
        u
    }

    pub fn add(&mut self, o: AgentUsage) {
        self.cost_usd += o.cost_usd;
        self.turns += o.turns;
        self.tokens += o.tokens;
    }
}

impl StepReport {
    /// A report of nothing measured yet.
    fn new(index: usize, step_id: &str, result: StepResult, base: Option<&str>) -> StepReport {
        StepReport {
            index,
            step_id: step_id.to_string(),
            result,
            tokens: TokenUsage::default(),
            diff_lines: 0,
            files_changed: Vec::new(),
            autofix_cycles: 0,
            splits: 0,
            unit_passed: None,
            duration: Duration::ZERO,
            notes: Vec::new(),
            base: base.map(str::to_string),
            on_base: true,
            checks: Vec::new(),
            test_runs: Vec::new(),
            already_satisfied: false,
            out_of_scope: Vec::new(),
            agent: AgentUsage::default(),
        }
    }
}

/// One verification of a step: `kind` is `unit`, `e2e`, or `diff` (the runner's own
/// checks of a step without commands: a change within scope, under the size limit,
/// outside forbidden paths); `exit_code` is `None` on a timeout.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub kind: String,
    pub command: String,
    pub exit_code: Option<i32>,
    /// The command failed only by this many tests that already failed on the
    /// base commit (`preexisting=N` in the trailer): not the step's failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preexisting: Option<u32>,
    /// A test-first step (`tdd_phase: "red"`): the command failed only by this
    /// many new tests, as it should before the change (`red=N` in the trailer).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub red: Option<u32>,
}

impl Check {
    pub fn passed(&self) -> bool {
        self.exit_code == Some(0)
            || (self.exit_code.is_some() && (self.preexisting.is_some() || self.red.is_some()))
    }

    /// The `Dandori-Check` trailer value.
    pub fn trailer(&self) -> String {
        let exit = match self.exit_code {
            Some(c) => c.to_string(),
            None => "timeout".to_string(),
        };
        let command: String = self
            .command
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        match (self.preexisting, self.red) {
            (Some(n), _) => format!("{} exit={exit} preexisting={n} {command}", self.kind),
            (None, Some(n)) => format!("{} exit={exit} red={n} {command}", self.kind),
            (None, None) => format!("{} exit={exit} {command}", self.kind),
        }
    }

    /// Parses [`Check::trailer`]; `None` for anything else.
    pub fn parse(trailer: &str) -> Option<Check> {
        let (kind, rest) = trailer.split_once(' ')?;
        let (exit, command) = rest.strip_prefix("exit=")?.split_once(' ')?;
        let (preexisting, command) = match command
            .strip_prefix("preexisting=")
            .and_then(|r| r.split_once(' '))
        {
            Some((n, c)) => (Some(n.parse().ok()?), c),
            None => (None, command),
        };
        let (red, command) = match command.strip_prefix("red=").and_then(|r| r.split_once(' ')) {
            Some((n, c)) => (Some(n.parse().ok()?), c),
            None => (None, command),
        };
        Some(Check {
            kind: kind.to_string(),
            command: command.to_string(),
            exit_code: match exit {
                "timeout" => None,
                c => Some(c.parse().ok()?),
            },
            preexisting,
            red,
        })
    }
}

/// A test-first step (`tdd_phase: "red"` in planning.json): it writes the tests
/// of its acceptance criteria before the change, so they must fail on the code
/// as it is. Its unit run failing only by new tests is its expected result.
pub fn test_first(step: &Step) -> bool {
    step.extra.get("tdd_phase").and_then(|v| v.as_str()) == Some("red")
}

/// A step that verifies instead of changing files (seed 004 `role` `reviewer` or
/// `qa`, or `expected_diff.lines_max` 0): an empty diff is its expected outcome.
pub fn check_only(step: &Step) -> bool {
    matches!(step.role, Role::Reviewer | Role::Qa) || step.expected_diff.lines_max == 0
}

/// Whether `file` (repository-relative) lies under one of `targets` (files or
/// directories; a glob counts from its first wildcard's directory).
fn in_targets(file: &str, targets: &[String]) -> bool {
    targets.iter().any(|t| {
        let t = match t.find(['*', '?', '[']) {
            Some(i) => t[..i].rsplit_once('/').map_or("", |(d, _)| d),
            None => t.as_str(),
        };
        let t = t.trim_start_matches("./").trim_end_matches('/');
        t.is_empty() || t == "." || file == t || file.starts_with(&format!("{t}/"))
    })
}

/// Where the step's worktree lives. The attempt number is part of the path, so an
/// orphaned agent of a killed run can never write into the rerun's worktree.
pub fn worktree_path(paths: &RunPaths, step_id: &str, attempt: u32) -> PathBuf {
    paths.worktrees.join(format!("{step_id}.{attempt}"))
}

struct Worker<'c, 'a> {
    cx: &'c StepContext<'a>,
    step: &'a Step,
    git: Git,
    wt: &'c Path,
    /// What is known of the worktree's state (staging and the next move cost
    /// what the step touched).
    pool: &'c mut dyn StepWorkspace,
    report: StepReport,
    base: Option<String>,
    /// The patch of the index against `base` as last measured, while that is still
    /// what the step's final commit will hold (no part committed, no unit command run).
    staged_patch: Option<String>,
    /// The step's last commit.
    head: Option<String>,
    /// The output of the unit commands' last failing run (a replan shows it).
    last_unit_failure: String,
    /// The work of this step's killed run put back into the worktree (told to
    /// the agent in its first prompt).
    restored: crate::interrupted::Restored,
}

/// Where a step starts: the commits it builds on, oldest dependency first, each
/// named by the step that made it (the base commit of the run is named `base`).
/// The step's base is their deterministic merge, so it depends on the plan and on
/// what the dependencies produced, never on which step finished first.
pub struct StepBase<'b> {
    pub commits: &'b [(String, String)],
    /// The repository the run's worktrees belong to.
    pub main: &'b Git,
    /// Which of the named commits contain which, as far as the plan tells.
    pub known: &'b crate::git::Ancestry,
}

/// Folds `base.commits` into one commit (merge commits dated by the plan), moves the
/// worktree at `worktree` there (or adds it when it does not exist yet), then runs
/// the step.
pub fn run_step_on_base<'a>(
    cx: &StepContext<'a>,
    index: usize,
    step: &'a Step,
    base: &StepBase<'_>,
    worktree: &Path,
) -> StepReport {
    run_step_in_pool(cx, index, step, base, &mut PoolWorktree::new(worktree))
}

/// [`run_step_on_base`] in a worktree of the pool, which keeps what it knows of
/// the worktree from one step to the next.
pub fn run_step_in_pool<'a>(
    cx: &StepContext<'a>,
    index: usize,
    step: &'a Step,
    base: &StepBase<'_>,
    pool: &mut dyn StepWorkspace,
) -> StepReport {
    let prepared = fold_base(cx, step, base).and_then(|rev| match rev {
        Some(rev) => {
            pool.prepare(base.main, &rev)?;
            Ok(Ok(rev))
        }
        None => Ok(Err(())),
    });
    let failed = |reason_code: &'static str, message: String, note: &str| StepReport {
        notes: vec![note.to_string()],
        ..StepReport::new(
            index,
            &step.step_id,
            StepResult::Failed {
                reason_code,
                message,
            },
            None,
        )
    };
    match prepared {
        Ok(Ok(rev)) => run_step_at(cx, index, step, pool, Some((&rev, base.main))),
        Ok(Err(())) => failed(
            reason::MERGE_CONFLICT,
            format!(
                "the commits of {} conflict with each other",
                base.commits
                    .iter()
                    .map(|(id, _)| id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "the step's dependencies changed the same lines; make one depend on the other in the plan",
        ),
        Err(e) => failed(
            e.reason_code(),
            e.to_string(),
            "the step's worktree could not be prepared; `dandori resume` retries",
        ),
    }
}

/// The author and committer date of every commit of the run: the plan's
/// `created_at` (a fixed, valid date when it is not RFC 3339), so commit hashes
/// depend on the plan and the changes only.
pub fn commit_date(planning: &Planning) -> String {
    match chrono::DateTime::parse_from_rfc3339(&planning.created_at) {
        Ok(t) => t.to_rfc3339(),
        Err(_) => "2000-01-01T00:00:00+00:00".to_string(),
    }
}

/// The merge of the step's base commits, in the order given; `None` on a conflict.
fn fold_base(
    cx: &StepContext<'_>,
    step: &Step,
    base: &StepBase<'_>,
) -> Result<Option<String>, RunnerError> {
    let git = base.main.clone().with_fixed_date(&commit_date(cx.planning));
    git.merge_all_known(
        base.commits,
        &format!("base of {}", step.step_id),
        base.known,
    )
}

/// Runs `step` (index `index` in the plan; follow-up steps have none) in `worktree`.
pub fn run_step<'a>(
    cx: &StepContext<'a>,
    index: usize,
    step: &'a Step,
    worktree: &Path,
) -> StepReport {
    run_step_at(cx, index, step, &mut PoolWorktree::new(worktree), None)
}

/// [`run_step`] in a worktree known to be checked out at the full commit hash
/// `base` (spares asking git for HEAD) of the repository `main`.
fn run_step_at<'a>(
    cx: &StepContext<'a>,
    index: usize,
    step: &'a Step,
    pool: &mut dyn StepWorkspace,
    at: Option<(&str, &Git)>,
) -> StepReport {
    let started = Instant::now();
    let base = at.map(|(b, _)| b);
    let worktree = pool.path().to_path_buf();
    let mut git = Git::new(&worktree)
        .pool_worktree()
        .with_fixed_date(&commit_date(cx.planning));
    if let Some((_, main)) = at {
        git = git.sharing_objects(main);
    }
    let mut w = Worker {
        cx,
        step,
        git,
        wt: &worktree,
        pool,
        base: base.map(str::to_string),
        staged_patch: None,
        head: None,
        restored: crate::interrupted::Restored::Nothing,
        report: StepReport::new(
            index,
            &step.step_id,
            StepResult::Committed {
                commits: Vec::new(),
            },
            base,
        ),
        last_unit_failure: String::new(),
    };
    let result = match w.run() {
        Ok(r) => r,
        Err(e) => StepResult::Failed {
            reason_code: e.reason_code(),
            message: e.to_string(),
        },
    };
    if let StepResult::Failed {
        reason_code,
        message,
    } = &result
    {
        w.reflect(
            Trigger::Error,
            ReflectionStatus::Failure,
            message,
            vec![format!("{reason_code}: {message}")],
            true,
        );
    }
    w.report.result = result;
    w.report.duration = started.elapsed();
    w.report
}

impl Worker<'_, '_> {
    fn step_id(&self) -> &str {
        &self.step.step_id
    }

    fn reflection_interval(&self) -> u32 {
        reflection::interval_for(self.cx.trigger_interval, self.cx.planning, self.step)
    }

    /// Commits the index on the worktree's HEAD, noting whether HEAD still was
    /// where the step's last commit (or its base) left it. HEAD moves to the new
    /// commit only when `more` commits follow (the parts of a split step): after
    /// the step's last commit the worktree is only moved to another base.
    fn commit(&mut self, message: &str, more: bool) -> Result<String, RunnerError> {
        let expected = self.head.as_deref().or(self.base.as_deref());
        let head = match self.git.detached_head() {
            Some(h) => h,
            None => self.git.rev_parse("HEAD")?,
        };
        if expected != Some(head.as_str()) {
            self.report.on_base = false;
        }
        let c = match self.pool.staged_tree() {
            Some(tree) => self.git.commit_written_tree(tree, &head, message)?,
            None => self.git.commit_index(&head, message)?,
        };
        if more {
            self.git.set_head(&c)?;
        }
        self.pool.committed(&c, more);
        self.head = Some(c.clone());
        Ok(c)
    }

    fn emit(&self, event: &str, data: Value) {
        // The trace is an audit record; a failing append must not kill the step.
        let _ = self.cx.trace.emit(event, data);
    }

    fn reflect(
        &self,
        trigger: Trigger,
        status: ReflectionStatus,
        evaluation: &str,
        issues: Vec<String>,
        revision: bool,
    ) {
        if !self.cx.reflection_enabled {
            return;
        }
        let rec = reflection::record(
            self.step_id(),
            trigger,
            status,
            evaluation,
            &issues,
            revision,
        );
        self.emit(events::REFLECTION, rec);
    }

    /// Counts one action run-wide and reflects when the interval is due.
    fn action_done(&self, what: &str, ok: bool) {
        let n = self.cx.actions.fetch_add(1, Ordering::SeqCst) + 1;
        if reflection::interval_due(n, self.reflection_interval()) {
            self.reflect(
                Trigger::Interval,
                if ok {
                    ReflectionStatus::Success
                } else {
                    ReflectionStatus::Failure
                },
                &format!("periodic check after action {n}: {what}"),
                Vec::new(),
                false,
            );
        }
    }

    /// `limits.timeout_sec`, or the plan's `worker_strategy.worker_timeout_ms`
    /// (seed 003 §6.1) when that is shorter.
    /// Why the agent may not be invoked again for this step: its usage so far
    /// is past `llm.budgets.agent_step_cost_usd` or `agent_step_turns`.
    fn agent_over_budget(&self) -> Option<String> {
        let b = self.cx.budgets;
        let u = &self.report.agent;
        if b.agent_step_cost_usd > 0.0 && u.cost_usd > b.agent_step_cost_usd {
            return Some(format!(
                "the agent used ${:.4} on this step, over llm.budgets.agent_step_cost_usd {}",
                u.cost_usd, b.agent_step_cost_usd
            ));
        }
        if b.agent_step_turns > 0 && u.turns > b.agent_step_turns {
            return Some(format!(
                "the agent took {} turns on this step, over llm.budgets.agent_step_turns {}",
                u.turns, b.agent_step_turns
            ));
        }
        None
    }

    fn agent_timeout(&self) -> Duration {
        let limit = Duration::from_secs(self.cx.planning.limits.timeout_sec.max(1));
        let worker = self
            .cx
            .planning
            .execution_plan
            .as_ref()
            .and_then(|p| p.worker_strategy.as_ref())
            .map(|w| w.worker_timeout_ms)
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis);
        worker.map_or(limit, |w| w.min(limit))
    }

    fn limit(&self) -> u64 {
        self.step.scope.max_diff_lines
    }

    /// `gates.require_e2e_for_regression_ac` applies to this step: it links a
    /// regression acceptance criterion.
    fn e2e_required(&self) -> bool {
        self.cx.planning.gates.require_e2e_for_regression_ac
            && self
                .cx
                .planning
                .context
                .acceptance_criteria
                .iter()
                .any(|ac| {
                    ac.kind == Some(dandori_plan::AcKind::Regression)
                        && self.step.links_to_ac.contains(&ac.id)
                })
    }

    fn e2e_commands(&self) -> Vec<String> {
        self.step
            .commands
            .e2e
            .iter()
            .flatten()
            .filter(|c| !c.trim().is_empty())
            .cloned()
            .collect()
    }

    fn run(&mut self) -> Result<StepResult, RunnerError> {
        if self.e2e_required() && self.e2e_commands().is_empty() {
            // Seed 004 §3.5: v1 may answer needs_input here.
            self.report.notes.push(format!(
                "add commands.e2e to {} (it links a regression acceptance criterion), then `dandori resume`",
                self.step_id()
            ));
            return Ok(StepResult::NeedsInput {
                reason_code: reason::E2E_REQUIRED,
                message: "the step links a regression acceptance criterion and has no e2e commands (gates.require_e2e_for_regression_ac)".to_string(),
            });
        }
        let base = match &self.base {
            Some(b) => b.clone(),
            None => {
                let b = self.git.rev_parse("HEAD")?;
                self.report.base = Some(b.clone());
                b
            }
        };
        self.restore_interrupted_work(&base);
        let max_retries = self.cx.planning.gates.max_step_too_large_retries;
        let mut round: u64 = 0;
        let mut parts: u32 = 1;
        let mut commits: Vec<String>;
        let mut replan: Option<Feedback> = None;
        'rounds: loop {
            commits = Vec::new();
            let this_round = parts;
            for part in 1..=this_round {
                let feedback = if parts > 1 {
                    Some(Feedback::SplitPart {
                        part,
                        parts,
                        previous_lines: self.report.diff_lines,
                        limit: self.limit(),
                    })
                } else {
                    replan.take()
                };
                if let Some(r) = self.execute(feedback.as_ref(), "agent")? {
                    return Ok(r);
                }
                let (lines, files, patch) = self.pool.stage(&self.git)?;
                if let Some(r) = self.check_forbidden(&files) {
                    return Ok(r);
                }
                if let Some(r) = self.check_secrets(&patch, &base)? {
                    return Ok(r);
                }
                let out_of_scope = out_of_scope_lines(&patch, &self.step.scope.target_paths);
                self.staged_patch = (parts == 1).then_some(patch);
                if let Some(r) = self.check_changed(&files) {
                    if files.is_empty() && parts == 1 {
                        match self.already_satisfied()? {
                            Ok(why) => return self.commit_satisfied(&why),
                            Err(why) => {
                                if let StepResult::Failed { message, .. } = &r {
                                    return Ok(StepResult::Failed {
                                        reason_code: reason::STEP_NO_CHANGE,
                                        message: format!("{message}; not already satisfied: {why}"),
                                    });
                                }
                            }
                        }
                    }
                    return Ok(r);
                }
                if let Some(r) = self.scope_budget(out_of_scope) {
                    return Ok(r);
                }
                if lines > self.limit() {
                    self.git.reset_hard(&base)?;
                    self.pool.was_reset(&base);
                    self.report.diff_lines = lines;
                    let revisions_left =
                        self.cx.revisions.load(Ordering::SeqCst) < self.cx.max_revisions;
                    let can_split = round < max_retries && revisions_left && parts == 1;
                    self.emit(
                        events::STEP_TOO_LARGE,
                        json!({"step_id": self.step_id(), "diff_lines": lines,
                               "max_diff_lines": self.limit(), "part": part, "parts": parts,
                               "split": can_split, "files": files}),
                    );
                    let msg = format!(
                        "diff of {lines} lines exceeds scope.max_diff_lines {}{}",
                        self.limit(),
                        if parts > 1 {
                            format!(" (part {part} of {parts})")
                        } else {
                            String::new()
                        }
                    );
                    self.reflect(
                        Trigger::Unexpected,
                        ReflectionStatus::Failure,
                        &msg,
                        vec![format!("{}: {msg}", reason::STEP_TOO_LARGE)],
                        can_split,
                    );
                    if can_split {
                        round += 1;
                        let revision = self.cx.revisions.fetch_add(1, Ordering::SeqCst) + 1;
                        parts = split_parts(lines, self.limit());
                        // Seed 004 §2: a split is a plan revision, recorded as one.
                        self.emit(
                            events::PLAN_REVISION,
                            json!({"step_id": self.step_id(), "trigger": crate::replan::STEP_TOO_LARGE,
                                   "revision": revision, "max_revisions": self.cx.max_revisions,
                                   "diff_lines": lines, "max_diff_lines": self.limit(), "parts": parts,
                                   "plan_revision": {
                                       "reason": msg,
                                       "changes": [format!("{}: split into {parts} parts of at most {} lines each", self.step_id(), self.limit())],
                                   }}),
                        );
                        self.report.splits += 1;
                        self.report.notes.push(format!(
                            "split into {parts} parts after a {lines}-line diff (limit {})",
                            self.limit()
                        ));
                        continue 'rounds;
                    }
                    let why = if !revisions_left {
                        "planning.revision.max_revisions reached"
                    } else if parts > 1 {
                        "a part of the split step is still too large"
                    } else {
                        "gates.max_step_too_large_retries exhausted"
                    };
                    self.report.notes.push(format!(
                        "split {} into smaller steps and plan again",
                        self.step_id()
                    ));
                    return Ok(StepResult::Failed {
                        reason_code: reason::STEP_TOO_LARGE,
                        message: format!("{msg}; {why}"),
                    });
                }
                self.report.diff_lines = lines;
                self.warn_files(&files);
                self.report.files_changed = files;
                if part < parts {
                    self.staged_patch = None;
                    let message = self.message(Some((part, parts)));
                    commits.push(self.commit(&message, true)?);
                }
            }
            // Seed 004 §2: compound test failures replan the step (`crate::replan`).
            match self.unit_and_autofix(parts, &base)? {
                None => break,
                // A fix loop stopped as a loop (the same change, the same
                // failure) is considered too: its failures may be compound.
                Some(StepResult::Failed {
                    reason_code: code @ (reason::UNIT_TEST_FAILED | reason::LOOP_DETECTED),
                    message,
                }) if parts == 1 => match self.replan(&base, code)? {
                    Some(feedback) => {
                        replan = Some(feedback);
                        continue 'rounds;
                    }
                    None if code == reason::LOOP_DETECTED => {
                        return Ok(StepResult::Failed {
                            reason_code: code,
                            message,
                        });
                    }
                    None => return Ok(self.unit_test_failed(code, message)),
                },
                Some(StepResult::Failed {
                    reason_code: code @ (reason::UNIT_TEST_FAILED | reason::UNIT_TEST_TIMEOUT),
                    message,
                }) => return Ok(self.unit_test_failed(code, message)),
                Some(r) => return Ok(r),
            }
        }
        if self.git.detached_head().as_deref() != Some(base.as_str()) {
            // Something committed in the worktree: the patch is base..HEAD, taken below.
            self.staged_patch = None;
        }
        let part = (parts > 1).then_some((parts, parts));
        let message = self.message(part);
        let proof = self.commit(&message, false)?;
        let patch = match self.staged_patch.take() {
            // HEAD was `base` when the index was measured and the commit holds that index.
            Some(p) if parts == 1 => p,
            _ => self.git.run(&["diff", "--binary", &base, &proof])?,
        };
        self.write_evidence(&proof, &patch)?;
        commits.push(proof.clone());
        // The patch of a committed change can be made again from the commit.
        dandori_fs::write_atomic_unsynced(self.cx.paths.patch(self.step_id()), patch)?;
        Ok(StepResult::Committed { commits })
    }

    /// The step ends on failing unit commands: what to do next, by hand.
    fn unit_test_failed(&mut self, reason_code: &'static str, message: String) -> StepResult {
        self.report.notes.push(format!(
            "fix the failing unit commands of {} by hand ({}), then `dandori resume`",
            self.step_id(),
            self.step_commands().join("; ")
        ));
        StepResult::Failed {
            reason_code,
            message,
        }
    }

    /// Seed 004 §2 (`crate::replan`): on compound test failures, with a plan
    /// revision left, the step's work is reset to its base and the step is done
    /// again from a new design. Returns the feedback of that attempt, or None
    /// (not compound, or no revision left: the step fails as it is).
    /// `stopped_as` is how the fix cycles ended (`UNIT_TEST_FAILED` when they
    /// ran out, `LOOP_DETECTED` when a fix attempt repeated itself).
    fn replan(
        &mut self,
        base: &str,
        stopped_as: &'static str,
    ) -> Result<Option<Feedback>, RunnerError> {
        let Some(failures) =
            crate::replan::compound_failures(&self.report.test_runs, self.cx.baseline)
        else {
            return Ok(None);
        };
        let used = self.cx.revisions.load(Ordering::SeqCst);
        if used >= self.cx.max_revisions {
            self.report.notes.push(format!(
                "{} failed by several tests ({}) after every fix attempt; no replan: planning.revision.max_revisions ({}) reached",
                self.step_id(),
                failures.join(", "),
                self.cx.max_revisions
            ));
            return Ok(None);
        }
        let revision = self.cx.revisions.fetch_add(1, Ordering::SeqCst) + 1;
        let output = std::mem::take(&mut self.last_unit_failure);
        let reason = format!(
            "compound test failures after {} fix attempt(s){}: {}",
            self.report.autofix_cycles,
            if stopped_as == reason::LOOP_DETECTED {
                " (the fix loop repeated itself)"
            } else {
                ""
            },
            failures.join(", ")
        );
        self.reflect(
            Trigger::Error,
            ReflectionStatus::Failure,
            &reason,
            failures.clone(),
            true,
        );
        self.emit(
            events::PLAN_REVISION,
            json!({"step_id": self.step_id(), "trigger": crate::replan::COMPOUND_TEST_FAILURE,
                   "revision": revision, "max_revisions": self.cx.max_revisions,
                   "failures": failures, "fix_cycles_ended": stopped_as,
                   "plan_revision": {
                       "reason": reason,
                       "changes": [format!("{}: its work is reset to the step's base commit and redone from a new design", self.step_id())],
                   }}),
        );
        self.report.notes.push(format!(
            "{} (plan revision {revision} of {})",
            crate::completion::REPLANNED,
            self.cx.max_revisions
        ));
        self.git.reset_hard(base)?;
        self.pool.was_reset(base);
        self.report.diff_lines = 0;
        self.report.files_changed.clear();
        self.report.unit_passed = None;
        Ok(Some(Feedback::Replan {
            revision,
            max_revisions: self.cx.max_revisions,
            failures,
            output: tail(&output, 3000),
        }))
    }

    /// A run of this step was killed with changes in its worktree: they go into
    /// this worktree again (`crate::interrupted`). Failing to, the step starts
    /// afresh and its agent is told so.
    fn restore_interrupted_work(&mut self, base: &str) {
        use crate::interrupted::{self, Restored};
        let step_id = self.step_id().to_string();
        self.restored = match interrupted::restore(
            &self.git,
            &self.cx.planning.run_id,
            &step_id,
            base,
        ) {
            Ok(r) => r,
            Err(e) => {
                self.report.notes.push(format!(
                        "the work of the interrupted run could not be put back ({e}); the step starts afresh"
                    ));
                Restored::Reset
            }
        };
        if let Restored::Carried(files) = &self.restored {
            self.report.notes.push(format!(
                "the interrupted run's uncommitted changes were put back: {}",
                files.join(", ")
            ));
        }
    }

    /// Runs the executor once; `Some` when the step ends here.
    fn execute(
        &mut self,
        feedback: Option<&Feedback>,
        log: &str,
    ) -> Result<Option<StepResult>, RunnerError> {
        if let Some(over) = self.agent_over_budget() {
            return Ok(Some(StepResult::Failed {
                reason_code: reason::TOKEN_BUDGET_EXCEEDED,
                message: over,
            }));
        }
        let mut prompt = prompt::build(
            self.cx.planning,
            self.step,
            feedback,
            self.cx.environment_summary,
        );
        let restored = std::mem::replace(&mut self.restored, crate::interrupted::Restored::Nothing);
        if let Some(section) =
            crate::interrupted::prompt_section(&dandori_exec::overlay::inner(self.wt), &restored)
        {
            prompt.push_str(&section);
        }
        let prompt_file = self
            .cx
            .paths
            .logs
            .join(format!("step.{}.prompt.md", self.step_id()));
        let log = self.cx.paths.step_log(self.step_id(), log);
        self.link_environment()?;
        let mut env = self.cx.env.clone();
        env.insert("DANDORI_STEP_ID".to_string(), self.step_id().to_string());
        crate::pythonpath::apply(&mut env, self.wt, self.cx.import_roots);
        let step_id = self.step_id().to_string();
        let progress = self.cx.progress;
        let heartbeat = move |elapsed: Duration, last: &str| {
            if let Some(p) = progress {
                p(&format!(
                    "{step_id}: agent working, {}s elapsed{}",
                    elapsed.as_secs(),
                    if last.is_empty() {
                        String::new()
                    } else {
                        format!("; last output: {last}")
                    }
                ));
            }
        };
        let exec = self.cx.executor.execute(&ExecRequest {
            step_id: self.step_id(),
            prompt: &prompt,
            workdir: self.wt,
            prompt_file: &prompt_file,
            log: &log,
            env: &env,
            timeout: self.agent_timeout(),
            masker: self.cx.masker,
            reflection_interval: self.reflection_interval(),
            heartbeat: progress
                .is_some()
                .then_some(&heartbeat as &crate::process::Heartbeat<'_>),
            suggested_tools: self.step.suggested_tools.as_deref().unwrap_or_default(),
            suggested_persona: self.step.suggested_persona.as_deref(),
        })?;
        if let Some(r) = self.git_tampered("the agent")? {
            return Ok(Some(r));
        }
        self.report.tokens.add(exec.tokens);
        self.report.agent.add(AgentUsage::of_calls(&exec.calls));
        if let Some(t) = &exec.tooling {
            self.emit(
                events::TOOLING,
                json!({"step_id": self.step_id(), "tooling": t}),
            );
        }
        for (event, data) in exec.calls {
            self.emit(event, data);
        }
        // Seed 000 `revision_attempts`: every plan revision the model's reflections
        // asked for counts, like the runner's own splits.
        let model_revisions = exec
            .reflections
            .iter()
            .filter(|r| {
                r.pointer("/reflection/plan_revision_needed")
                    .and_then(Value::as_bool)
                    == Some(true)
            })
            .count() as u32;
        if model_revisions > 0 {
            self.cx
                .revisions
                .fetch_add(model_revisions, Ordering::SeqCst);
        }
        for mut r in exec.reflections {
            // The step a reflection judged, for metrics when steps run in parallel.
            if let Some(o) = r.as_object_mut() {
                o.entry("step_id").or_insert_with(|| json!(self.step_id()));
            }
            self.emit(events::REFLECTION, r);
        }
        let ok = exec.outcome == ExecOutcome::Completed;
        self.emit(
            events::STEP_ACTION,
            json!({"step_id": self.step_id(), "executor": self.cx.executor.name(),
                   "feedback": feedback.map(feedback_kind), "ok": ok, "summary": exec.summary,
                   "tokens": exec.tokens}),
        );
        self.action_done(&exec.summary, ok);
        Ok(match exec.outcome {
            ExecOutcome::Completed => None,
            ExecOutcome::Failed {
                reason_code,
                message,
            } => Some(StepResult::Failed {
                reason_code,
                message,
            }),
            ExecOutcome::NeedsInput {
                reason_code,
                message,
            } => Some(StepResult::NeedsInput {
                reason_code,
                message,
            }),
        })
    }

    /// Reverts changes to the repository's git config, hooks and attributes made
    /// by `who`; a change fails the step with `GIT_CONFIG_TAMPERED`.
    fn git_tampered(&self, who: &str) -> Result<Option<StepResult>, RunnerError> {
        let Some(guard) = self.cx.git_guard else {
            return Ok(None);
        };
        let changed = guard.restore()?;
        if changed.is_empty() {
            return Ok(None);
        }
        let files: Vec<String> = changed
            .iter()
            .map(|t| format!("{} ({})", t.path.display(), t.change))
            .collect();
        self.emit(
            events::GIT_CONFIG_TAMPERED,
            json!({"step_id": self.step_id(), "by": who, "files": files, "reverted": true}),
        );
        Ok(Some(StepResult::Failed {
            reason_code: reason::GIT_CONFIG_TAMPERED,
            message: format!(
                "{who} changed the repository's git configuration; reverted: {}",
                files.join(", ")
            ),
        }))
    }

    /// `max_files_changed` is a warning (seed 004 §3.2), recorded, never a stop.
    fn warn_files(&mut self, files: &[String]) {
        let limit = self
            .step
            .scope
            .max_files_changed
            .or(self.cx.planning.limits.max_files_changed);
        if let Some(limit) = limit
            && files.len() as u64 > limit
        {
            let note = format!(
                "{} changed {} files (max_files_changed {limit})",
                self.step_id(),
                files.len()
            );
            self.emit(
                events::STEP_WARNING,
                json!({"step_id": self.step_id(), "warning": "MAX_FILES_CHANGED", "message": note}),
            );
            self.report.notes.push(note);
        }
    }

    /// Commits a step whose work an earlier step did: an empty commit (the base's
    /// tree) carrying its trailers and the checks that ran.
    fn commit_satisfied(&mut self, why: &str) -> Result<StepResult, RunnerError> {
        self.report.already_satisfied = true;
        self.report.notes.push(format!(
            "{} changed nothing: its work was already done ({why})",
            self.step_id()
        ));
        self.emit(
            events::STEP_WARNING,
            json!({"step_id": self.step_id(), "warning": reason::ALREADY_SATISFIED, "message": why}),
        );
        self.staged_patch = None;
        let message = self.message(None);
        let proof = self.commit(&message, false)?;
        dandori_fs::write_atomic_unsynced(self.cx.paths.patch(self.step_id()), "")?;
        self.write_evidence(&proof, "")?;
        Ok(StepResult::Committed {
            commits: vec![proof],
        })
    }

    /// A test-first step whose unit runs name tests, none of them new: it wrote
    /// no test, whatever else it changed (`STEP_NO_CHANGE`). Unknowable, and not
    /// judged, when the runs name no test or there is no baseline.
    fn test_first_without_a_test(&self) -> Option<String> {
        if !test_first(self.step) {
            return None;
        }
        let baseline = self.cx.baseline?;
        let mut named = false;
        for r in &self.report.test_runs {
            let base = baseline.run_of(&r.command);
            for id in r.tests.keys() {
                named = true;
                if base.is_none_or(|b| !b.tests.contains_key(id)) {
                    return None;
                }
            }
        }
        named.then(|| {
            "the test-first step added no test: its unit runs name only tests the base commit already had"
                .to_string()
        })
    }

    /// A test-first step that changed nothing outside its (test) targets and saw
    /// new tests pass: they pass on the code as it was, so they prove nothing.
    fn vacuous_tests(&self) -> Vec<String> {
        if !test_first(self.step)
            || !self
                .report
                .files_changed
                .iter()
                .all(|f| in_targets(f, &self.step.scope.target_paths))
        {
            return Vec::new();
        }
        let mut out = Vec::new();
        for r in &self.report.test_runs {
            let base = self.cx.baseline.and_then(|b| b.run_of(&r.command));
            for (id, passed) in &r.tests {
                if *passed && base.and_then(|b| b.tests.get(id)) != Some(&true) {
                    out.push(id.clone());
                }
            }
        }
        out
    }

    /// Tests that passed at the base, are missing from the step's last run of
    /// their command, and whose names the step's change took out of the sources
    /// (a test the request renamed or deleted, not one that was lost).
    fn removed_tests(&self, patch: &str) -> Vec<String> {
        let Some(baseline) = self.cx.baseline else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (command, r) in crate::evidence::last_run_per_command(&self.report.test_runs) {
            let Some(base) = baseline.run_of(command) else {
                continue;
            };
            for (id, passed) in &base.tests {
                if *passed && !r.tests.contains_key(id) && crate::evidence::removed_by(patch, id) {
                    out.push(id.clone());
                }
            }
        }
        out
    }

    /// `evidence/Sxx.json`: the test runs behind the step's proof commit, read by
    /// the coverage judgement (also after a resume).
    fn write_evidence(&self, commit: &str, patch: &str) -> Result<(), RunnerError> {
        let e = crate::evidence::StepEvidence {
            removed_tests: self.removed_tests(patch),
            step_id: self.step_id().to_string(),
            commit: commit.to_string(),
            runs: self.report.test_runs.clone(),
            already_satisfied: self.report.already_satisfied,
            vacuous: self.vacuous_tests(),
        };
        // Masked like every artefact: a unit command may carry a secret.
        let masked = self
            .cx
            .masker
            .mask_strings(serde_json::to_value(&e).unwrap_or_default());
        let text = serde_json::to_string_pretty(&masked).unwrap_or_default();
        dandori_fs::write_atomic(self.cx.paths.evidence(self.step_id()), text)?;
        Ok(())
    }

    /// Edits outside `scope.target_paths` are reported (path, lines) and count
    /// against the step's scope budget, `scope.max_out_of_scope_lines` (a quarter
    /// of `max_diff_lines`, at least 10, when unset): past it the step fails with
    /// `STEP_SCOPE_EXCEEDED`, whatever else it changed.
    fn scope_budget(&mut self, out: Vec<(String, u64)>) -> Option<StepResult> {
        if out.is_empty() {
            self.report.out_of_scope.clear();
            return None;
        }
        let budget = self
            .step
            .scope
            .extra
            .get("max_out_of_scope_lines")
            .and_then(Value::as_u64)
            .unwrap_or((self.limit() / 4).max(10));
        let total: u64 = out.iter().map(|(_, l)| l).sum();
        let listed: Vec<String> = out
            .iter()
            .map(|(f, l)| format!("{f} ({l} lines)"))
            .collect();
        self.emit(
            events::STEP_WARNING,
            json!({"step_id": self.step_id(), "warning": "OUT_OF_SCOPE_EDIT",
                   "files": out.iter().map(|(f, l)| json!({"path": f, "lines": l})).collect::<Vec<_>>(),
                   "lines": total, "budget": budget}),
        );
        self.report.out_of_scope = out;
        if total > budget {
            return Some(StepResult::Failed {
                reason_code: reason::STEP_SCOPE_EXCEEDED,
                message: format!(
                    "{total} changed lines outside scope.target_paths, over the scope budget of {budget}: {}",
                    listed.join(", ")
                ),
            });
        }
        self.report.notes.push(format!(
            "{} changed files outside scope.target_paths ({total} of {budget} lines allowed): {}",
            self.step_id(),
            listed.join(", ")
        ));
        None
    }

    /// Seed 001 §10.5: a step that had to change files and changed none of its
    /// targets did not do its work, whatever the agent said (`STEP_NO_CHANGE`).
    fn check_changed(&mut self, files: &[String]) -> Option<StepResult> {
        if check_only(self.step) {
            return None;
        }
        let targets = &self.step.scope.target_paths;
        if files.iter().any(|f| in_targets(f, targets)) {
            return None;
        }
        let message = if files.is_empty() {
            "the agent finished without changing any file".to_string()
        } else {
            format!(
                "the agent changed only files outside scope.target_paths ({}): {}",
                targets.join(", "),
                files.join(", ")
            )
        };
        self.report.files_changed = files.to_vec();
        Some(StepResult::Failed {
            reason_code: reason::STEP_NO_CHANGE,
            message,
        })
    }

    fn check_forbidden(&self, files: &[String]) -> Option<StepResult> {
        let forbidden = self.step.scope.forbidden_paths.as_deref().unwrap_or(&[]);
        let hit: Vec<&String> = files
            .iter()
            .filter(|f| {
                forbidden.iter().any(|p| {
                    let p = p.trim_end_matches('/');
                    f.as_str() == p || f.starts_with(&format!("{p}/"))
                })
            })
            .collect();
        (!hit.is_empty()).then(|| StepResult::Failed {
            reason_code: reason::FORBIDDEN_PATH_CHANGED,
            message: format!(
                "changed paths in scope.forbidden_paths: {}",
                hit.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
    }

    /// The pre-commit secret scan (docs/security.md § Secrets) of the staged
    /// change: on a hit nothing is committed, the worktree goes back to `base`, the
    /// objects staging wrote for the flagged files are deleted, and
    /// `patches/Sxx.patch` keeps the change with the flagged lines removed and the
    /// rest masked.
    fn check_secrets(
        &mut self,
        patch: &str,
        base: &str,
    ) -> Result<Option<StepResult>, RunnerError> {
        let findings =
            dandori_trace::secret_scan::scan_diff(patch, &self.cx.masker.literal_secrets());
        if findings.is_empty() {
            return Ok(None);
        }
        dandori_fs::write_atomic(
            self.cx.paths.patch(self.step_id()),
            dandori_trace::secret_scan::redact_patch(patch, &findings, self.cx.masker),
        )?;
        let mut flagged: Vec<&str> = findings.iter().map(|f| f.file.as_str()).collect();
        flagged.sort_unstable();
        flagged.dedup();
        // Staging wrote the secret into blobs: found before the reset, deleted after
        // it (when nothing else reaches them).
        let staged = self.pool.staged_objects(&self.git, &flagged)?;
        self.git.reset_hard(base)?;
        self.pool.was_reset(base);
        self.git.forget_objects(&staged)?;
        self.emit(
            events::SECRET_DETECTED,
            json!({"step_id": self.step_id(), "findings": findings}),
        );
        let listed: Vec<String> = findings.iter().map(ToString::to_string).collect();
        self.report.notes.push(format!(
            "the change of {} was discarded: it held secrets ({}); patches/{}.patch keeps it without those lines",
            self.step_id(),
            listed.join(", "),
            self.step_id()
        ));
        Ok(Some(StepResult::Failed {
            reason_code: reason::SECRET_DETECTED,
            message: format!(
                "secrets in the step's change, nothing committed: {}",
                listed.join(", ")
            ),
        }))
    }

    /// Unit commands, then up to `max_autofix_cycles` fix attempts.
    /// The step's unit commands, and its e2e commands when the gate asks for them.
    fn step_commands(&self) -> Vec<String> {
        let mut commands: Vec<String> = self
            .step
            .commands
            .unit
            .iter()
            .flatten()
            .filter(|c| !c.trim().is_empty())
            .cloned()
            .collect();
        if self.e2e_required() {
            commands.extend(self.e2e_commands());
        }
        // A criterion's command check gates the last step (plan order) linking
        // it: an earlier one does part of the work and cannot make it pass.
        let last_links: Vec<String> = self
            .step
            .links_to_ac
            .iter()
            .filter(|ac| {
                // A follow-up (not in the plan) is there for its criterion.
                self.cx
                    .planning
                    .steps
                    .iter()
                    .rfind(|s| s.links_to_ac.contains(ac))
                    .is_none_or(|s| s.step_id == self.step.step_id)
            })
            .cloned()
            .collect();
        for c in crate::evidence::command_checks(
            &self.cx.planning.context.acceptance_criteria,
            &last_links,
        ) {
            if !commands.contains(&c) {
                commands.push(c);
            }
        }
        commands
    }

    /// A step whose agent changed nothing: done (`ALREADY_SATISFIED`) when its
    /// checks are already green on its base — its unit commands pass (tests failing
    /// at the run's base aside), every check named by its acceptance criteria
    /// passes and failed (or was absent) at the base, and at least one test or test
    /// command has turned from red to green since the base: an earlier step did the
    /// work. `Err` carries why not.
    fn already_satisfied(&mut self) -> Result<Result<String, String>, RunnerError> {
        let commands = self.step_commands();
        if commands.is_empty() {
            return Ok(Err(
                "it has no unit command to show its work is done".to_string()
            ));
        }
        if commands
            .iter()
            .any(|c| invokes_gh(c) || self.cx.command_policy.check(c).is_err())
            || self.cx.sandbox.refusal().is_some()
        {
            return Ok(Err("its unit commands cannot run".to_string()));
        }
        let Some(baseline) = self.cx.baseline else {
            return Ok(Err("no baseline ran to compare its checks with".to_string()));
        };
        match self.run_units(&commands)? {
            Err(StepResult::Failed { message, .. }) => return Ok(Err(message)),
            Err(_) => return Ok(Err("its unit commands did not complete".to_string())),
            Ok(Some((output, _))) => {
                return Ok(Err(format!(
                    "its unit commands fail: {}",
                    tail(&output, 300).lines().last().unwrap_or("")
                )));
            }
            Ok(None) => {}
        }
        let runs = &self.report.test_runs;
        let mut named = Vec::new();
        for ac in &self.cx.planning.context.acceptance_criteria {
            if !self.step.links_to_ac.contains(&ac.id) {
                continue;
            }
            if let Some(check) = crate::evidence::ac_check(ac) {
                let now = check.state(runs);
                let then = check.state(&baseline.runs);
                let sel = check.describe();
                // A guard green at the base stays a guard: green now is all it asks.
                let guard = crate::evidence::is_guard(ac);
                if now != crate::evidence::CheckState::Pass
                    || (then == crate::evidence::CheckState::Pass && !guard)
                {
                    return Ok(Err(format!(
                        "the check of {} ({sel}) is {} now and was {} at the base",
                        ac.id,
                        now.as_str(),
                        then.as_str()
                    )));
                }
                if then != crate::evidence::CheckState::Pass {
                    named.push(format!("{} ({sel})", ac.id));
                }
            }
        }
        let turned: Vec<String> = runs
            .iter()
            .flat_map(|r| {
                let b = baseline.run_of(&r.command);
                let tests: Vec<String> = r
                    .tests
                    .iter()
                    .filter(|(id, p)| **p && b.and_then(|b| b.tests.get(*id)) != Some(&true))
                    .map(|(id, _)| id.clone())
                    .collect();
                let command_turned = r.tests.is_empty()
                    && r.passed()
                    && b.is_some_and(|b| b.tests.is_empty() && !b.passed());
                tests
                    .into_iter()
                    .chain(command_turned.then(|| format!("`{}`", r.command)))
            })
            .collect();
        if turned.is_empty() {
            return Ok(Err(
                "nothing its unit commands check has changed since the base".to_string(),
            ));
        }
        // The work is in the step's base: its last step commit did it.
        let by = self
            .git
            .run(&["log", "-1", "--no-merges", "--format=%h %s", "HEAD"])
            .ok()
            .map(|l| l.trim().to_string())
            .filter(|l| !l.is_empty())
            .map(|l| format!("; made so by commit {l}"))
            .unwrap_or_default();
        Ok(Ok(if named.is_empty() {
            format!("green since the base: {}{by}", turned.join(", "))
        } else {
            format!("checks green: {}{by}", named.join(", "))
        }))
    }

    fn unit_and_autofix(
        &mut self,
        parts: u32,
        base: &str,
    ) -> Result<Option<StepResult>, RunnerError> {
        let commands = self.step_commands();
        if commands.is_empty() {
            if self.report.diff_lines > 0 {
                self.report.checks = vec![Check {
                    kind: "diff".to_string(),
                    command: format!(
                        "{} lines in {} files within scope (no unit or e2e command)",
                        self.report.diff_lines,
                        self.report.files_changed.len()
                    ),
                    exit_code: Some(0),
                    preexisting: None,
                    red: None,
                }];
            }
            return Ok(None);
        }
        if let Some(bad) = commands.iter().find(|c| invokes_gh(c)) {
            return Ok(Some(StepResult::Failed {
                reason_code: reason::GH_FORBIDDEN,
                message: format!("unit command {bad:?} calls gh; gates.forbid_gh forbids it"),
            }));
        }
        for c in &commands {
            if let Err(v) = self.cx.command_policy.check(c) {
                return Ok(Some(StepResult::Failed {
                    reason_code: reason::COMMAND_FORBIDDEN,
                    message: format!(
                        "unit command {c:?} refused by the command policy [{}]: {}",
                        v.code, v.message
                    ),
                }));
            }
        }
        if let Some(reason) = self.cx.sandbox.refusal() {
            return Ok(Some(StepResult::Failed {
                reason_code: reason::SANDBOX_UNAVAILABLE,
                message: format!("unit commands not run: {reason}"),
            }));
        }
        let max_cycles = self.cx.planning.limits.max_autofix_cycles;
        // A replanned step gets its own fix cycles.
        let cycles_before = self.report.autofix_cycles;
        let mut last_failure: Option<(String, String)> = None;
        // A unit command may touch the index itself; the patch is taken afresh.
        self.staged_patch = None;
        loop {
            let failure = match self.run_units(&commands)? {
                Ok(f) => f,
                Err(tampered) => return Ok(Some(tampered)),
            };
            let Some((output, timed_out)) = failure else {
                self.report.unit_passed = Some(true);
                if let Some(message) = self.test_first_without_a_test() {
                    return Ok(Some(StepResult::Failed {
                        reason_code: reason::STEP_NO_CHANGE,
                        message,
                    }));
                }
                return Ok(None);
            };
            self.report.unit_passed = Some(false);
            let msg = format!(
                "unit commands failed{}",
                if timed_out { " (timeout)" } else { "" }
            );
            self.reflect(
                Trigger::Error,
                ReflectionStatus::Failure,
                &msg,
                vec![tail(&output, 400)],
                false,
            );
            let tree = match self.pool.staged_tree() {
                Some(t) => t.to_string(),
                None => self.git.run(&["write-tree"])?.trim().to_string(),
            };
            // The same failure: the same output but for the durations a test
            // runner prints ("Ran 3 tests in 0.001s"), which differ every run.
            let failure = without_durations(&output);
            if last_failure.as_ref() == Some(&(tree.clone(), failure.clone())) {
                // The same change and the same failure again: a fix loop going nowhere.
                self.report
                    .notes
                    .push("the fix attempt changed nothing and the failure repeated".to_string());
                return Ok(Some(StepResult::Failed {
                    reason_code: reason::LOOP_DETECTED,
                    message: format!(
                        "{msg}; the same failure repeated after a fix attempt that changed nothing"
                    ),
                }));
            }
            last_failure = Some((tree, failure));
            self.last_unit_failure = output.clone();
            if self.report.autofix_cycles - cycles_before >= max_cycles {
                if !self.cx.planning.gates.require_unit_pass {
                    self.report
                        .notes
                        .push("unit commands fail; gates.require_unit_pass is false".to_string());
                    return Ok(None);
                }
                return Ok(Some(StepResult::Failed {
                    reason_code: if timed_out {
                        reason::UNIT_TEST_TIMEOUT
                    } else {
                        reason::UNIT_TEST_FAILED
                    },
                    message: format!(
                        "{msg} after {} fix attempt(s): {}",
                        self.report.autofix_cycles - cycles_before,
                        tail(&output, 300).lines().last().unwrap_or("")
                    ),
                }));
            }
            self.report.autofix_cycles += 1;
            // Counted per attempt at the step (a replanned step starts at 1
            // again); `total` is the step's count over every attempt.
            let cycle = self.report.autofix_cycles - cycles_before;
            self.emit(
                events::AUTOFIX,
                json!({"step_id": self.step_id(), "cycle": cycle, "max": max_cycles,
                       "total": self.report.autofix_cycles}),
            );
            if let Some(r) = self.execute(
                Some(&Feedback::UnitFailure {
                    cycle,
                    output: tail(&output, 3000),
                }),
                "agent",
            )? {
                return Ok(Some(r));
            }
            let (lines, files, patch) = self.pool.stage(&self.git)?;
            if let Some(r) = self.check_forbidden(&files) {
                return Ok(Some(r));
            }
            if let Some(r) = self.check_secrets(&patch, base)? {
                return Ok(Some(r));
            }
            if lines > self.limit() {
                self.emit(
                    events::STEP_TOO_LARGE,
                    json!({"step_id": self.step_id(), "diff_lines": lines,
                           "max_diff_lines": self.limit(), "during": "autofix", "parts": parts}),
                );
                return Ok(Some(StepResult::Failed {
                    reason_code: reason::STEP_TOO_LARGE,
                    message: format!(
                        "fix attempt {cycle} grew the diff to {lines} lines (limit {})",
                        self.limit()
                    ),
                }));
            }
            self.report.diff_lines = lines;
            self.report.files_changed = files;
        }
    }

    /// What unit commands may touch: the worktree (its git directories read-only),
    /// the run directory; no network.
    /// The environment's `node_modules` linked into the workspace, again after
    /// anything (a reset, `git clean`) removed them.
    fn link_environment(&self) -> Result<(), RunnerError> {
        if let Some(links) = self.cx.node_links {
            links.link_into(self.wt)?;
        }
        Ok(())
    }

    fn sandbox_policy(&self) -> dandori_exec::SandboxPolicy {
        sandbox_policy(self.wt, &self.cx.paths.run_dir)
    }

    /// Runs every unit command; `Some((output, timed_out))` on the first failure.
    /// `Err(result)`: a command tampered with the git configuration (the step ends).
    #[allow(clippy::type_complexity)]
    fn run_units(
        &mut self,
        commands: &[String],
    ) -> Result<Result<Option<(String, bool)>, StepResult>, RunnerError> {
        let log = self.cx.paths.step_log(self.step_id(), "unit");
        self.link_environment()?;
        let e2e = self.e2e_commands();
        self.report.checks.clear();
        self.report.test_runs.clear();
        let timeout = Duration::from_secs(self.cx.planning.limits.timeout_sec.max(1));
        for cmd in commands {
            let (out, run) = run_test_command(&TestCommand {
                sandbox: self.cx.sandbox,
                policy: &self.sandbox_policy(),
                dir: self.wt,
                run_dir: &self.cx.paths.run_dir,
                command: cmd,
                env: self.cx.env,
                import_roots: self.cx.import_roots,
                timeout,
                log: &log,
                masker: self.cx.masker,
            })?;
            let base_run = self.cx.baseline.and_then(|b| b.run_of(cmd));
            let verdict = crate::evidence::judge(&run, base_run);
            // The same crash as at the base: maybe the step's work not done
            // (a command that is its gate), maybe an environment that does
            // not fit the commit. Still the step's failure; the agent and the
            // user are told which it may be.
            let same_crash = crate::evidence::same_crash(&run, base_run);
            // Test-first: new tests failing (and nothing that passed at the base
            // broken) is what this step is for.
            let red = match &verdict {
                crate::evidence::Verdict::Failed {
                    regressions,
                    new_failures,
                } if test_first(self.step)
                    && regressions.is_empty()
                    && !new_failures.is_empty() =>
                {
                    Some(new_failures.clone())
                }
                _ => None,
            };
            self.emit(
                events::UNIT_TEST,
                json!({"step_id": self.step_id(), "command": cmd, "exit_code": out.exit_code,
                "timed_out": out.timed_out, "duration_ms": out.duration.as_millis() as u64,
                "log": out.log, "tests": run.tests.len(),
                "failing": run.failing().len(),
                "preexisting": match &verdict {
                    crate::evidence::Verdict::PreexistingOnly(t) => t.len(),
                    _ => 0,
                }}),
            );
            self.action_done(cmd, out.success());
            self.report.checks.push(Check {
                kind: if e2e.contains(cmd) { "e2e" } else { "unit" }.to_string(),
                command: cmd.clone(),
                exit_code: if out.timed_out { None } else { out.exit_code },
                preexisting: match &verdict {
                    crate::evidence::Verdict::PreexistingOnly(t) => Some(t.len() as u32),
                    _ => None,
                },
                red: red.as_ref().map(|t| t.len() as u32),
            });
            self.report.test_runs.push(run);
            if let Some(r) = self.git_tampered(&format!("unit command {cmd:?}"))? {
                return Ok(Err(r));
            }
            if let Some(tests) = red {
                let note = format!(
                    "`{cmd}` fails by the new tests only, as a test-first step should before the change: {}",
                    tests.join(", ")
                );
                if !self.report.notes.contains(&note) {
                    self.report.notes.push(note);
                }
                continue;
            }
            match verdict {
                crate::evidence::Verdict::Passed => {}
                crate::evidence::Verdict::PreexistingOnly(tests) => {
                    let note = format!(
                        "`{cmd}` fails only by tests that already failed at the base (not this step's, not sent to autofix): {}",
                        tests.join(", ")
                    );
                    if !self.report.notes.contains(&note) {
                        self.report.notes.push(note);
                    }
                }
                crate::evidence::Verdict::Failed {
                    regressions,
                    new_failures,
                } => {
                    let mut text = String::new();
                    if !regressions.is_empty() {
                        text.push_str(&format!(
                            "Regressions (these tests passed on the base commit and fail after this step): {}\n",
                            regressions.join(", ")
                        ));
                    }
                    if !new_failures.is_empty() {
                        text.push_str(&format!(
                            "Failing tests new since the base commit: {}\n",
                            new_failures.join(", ")
                        ));
                    }
                    if let Some(base) = self.cx.baseline.and_then(|b| b.run_of(cmd)) {
                        let pre: Vec<&str> = base.failing().into_iter().collect();
                        if !pre.is_empty() {
                            text.push_str(&format!(
                                "Already failing on the base commit (not yours, leave them): {}\n",
                                pre.join(", ")
                            ));
                        }
                    }
                    if !regressions.is_empty() {
                        self.emit(
                            events::STEP_WARNING,
                            json!({"step_id": self.step_id(), "warning": "REGRESSION",
                                   "command": cmd, "tests": regressions}),
                        );
                    }
                    if let Some(same) = &same_crash {
                        text.push_str(&format!(
                            "This is how the command failed on the base commit too, before any change ({same}): if your change is done and this is not about it, the environment may not fit this commit; say so.\n"
                        ));
                    }
                    text.push_str(&format!("$ {cmd}\n{}", out.tail));
                    return Ok(Ok(Some((text, out.timed_out))));
                }
            }
        }
        Ok(Ok(None))
    }

    /// The step's commit message: the step, its ACs, and the trailers that make the
    /// commit the proof of completion on resume.
    fn message(&self, part: Option<(u32, u32)>) -> String {
        let acs = self.step.links_to_ac.join(", ");
        let mut m = format!("{}: {}", self.step_id(), self.step.title);
        if let Some((i, k)) = part {
            m.push_str(&format!(" (part {i}/{k})"));
        }
        m.push_str(&format!("\n\n{}\n", self.step.intent));
        if !acs.is_empty() {
            m.push_str(&format!("\nAcceptance criteria: {acs}\n"));
        }
        m.push_str(&format!(
            "\n{TRAILER_RUN}: {}\n{TRAILER_STEP}: {}\n",
            self.cx.run_id,
            self.step_id()
        ));
        if let Some((i, k)) = part {
            m.push_str(&format!("{TRAILER_PART}: {i}/{k}\n"));
        }
        if !acs.is_empty() {
            m.push_str(&format!("{TRAILER_AC}: {acs}\n"));
        }
        for c in &self.report.checks {
            // The command is masked before the trailer folds its line breaks: a
            // secret split over two lines is one there.
            let masked = Check {
                command: self.cx.masker.mask_str(&c.command),
                ..c.clone()
            };
            m.push_str(&format!("{TRAILER_CHECK}: {}\n", masked.trailer()));
        }
        // The message is history: a secret in a title, an intent or a unit
        // command (the `Dandori-Check` trailers) is masked there.
        self.cx.masker.mask_str(&m)
    }
}

/// The sandbox policy of commands in a step worktree: the worktree and the run
/// directory writable, the worktree's `.git` and the repository's git directories
/// read-only, the main repository (with its prepared environment) visible
/// read-only, no network.
pub fn sandbox_policy(
    wt: &std::path::Path,
    run_dir: &std::path::Path,
) -> dandori_exec::SandboxPolicy {
    dandori_exec::SandboxPolicy::worktree(wt, &[run_dir.to_path_buf()]).in_git_worktree(wt)
}

/// Per file outside `targets`, the lines a `git diff` patch adds or removes
/// (a binary file counts 1).
fn out_of_scope_lines(patch: &str, targets: &[String]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut current: Option<usize> = None;
    for line in patch.lines() {
        if let Some(rest) = line.strip_prefix("diff --git a/") {
            let path = rest.split(" b/").next().unwrap_or(rest).to_string();
            current = if in_targets(&path, targets) {
                None
            } else {
                out.push((path, 0));
                Some(out.len() - 1)
            };
            continue;
        }
        let Some(i) = current else { continue };
        if line.starts_with("Binary files ") || line.starts_with("GIT binary patch") {
            out[i].1 = out[i].1.max(1);
        } else if (line.starts_with('+') && !line.starts_with("+++"))
            || (line.starts_with('-') && !line.starts_with("---"))
        {
            out[i].1 += 1;
        }
    }
    out
}

/// A test command to run in a worktree: a step's unit or e2e command, or the
/// baseline's.
pub struct TestCommand<'a> {
    pub sandbox: &'a dandori_exec::Sandbox,
    pub policy: &'a dandori_exec::SandboxPolicy,
    pub dir: &'a Path,
    /// The run directory: the runners' hooks and reports live there.
    pub run_dir: &'a Path,
    pub command: &'a str,
    pub env: &'a BTreeMap<String, String>,
    /// Mapped into `dir` on `PYTHONPATH` ([`crate::pythonpath`]).
    pub import_roots: &'a crate::pythonpath::ImportRoots,
    pub timeout: Duration,
    pub log: &'a Path,
    pub masker: &'a dandori_trace::Masker,
}

/// Runs a test command (`sh -c`, in the sandbox) and reads its per-test results
/// from what it wrote to the log and the reports it wrote; each runner is asked
/// to name its tests through its environment
/// ([`crate::evidence::runner_hooks`]), never by changing the command.
pub fn run_test_command(
    t: &TestCommand<'_>,
) -> Result<(process::ProcOutcome, crate::evidence::CommandRun), RunnerError> {
    let argv = t
        .sandbox
        .wrap(
            vec!["sh".to_string(), "-c".to_string(), t.command.to_string()],
            t.policy,
            t.dir,
            dandori_exec::Origin::Issued,
        )
        .map_err(|e| RunnerError::Process {
            command: t.command.to_string(),
            message: e.to_string(),
        })?;
    let mut env = t.env.clone();
    crate::pythonpath::apply(&mut env, t.dir, t.import_roots);
    let hooks = crate::evidence::runner_hooks::Hooks::prepare(t.run_dir, &mut env)?;
    let start = std::fs::metadata(t.log).map(|m| m.len()).unwrap_or(0);
    let reports = crate::evidence::junit::Reports::before(t.dir, t.command);
    let out = process::run(&process::ProcSpec {
        argv: &argv,
        cwd: t.dir,
        env: &env,
        timeout: t.timeout,
        log: t.log,
        masker: Some(t.masker),
        heartbeat: None,
    })?;
    let text = std::fs::read(t.log)
        .map(|b| String::from_utf8_lossy(b.get(start as usize..).unwrap_or(&b)).into_owned())
        .unwrap_or_default();
    let mut tests = crate::evidence::parse::parse(&text);
    // JUnit XML reports the command wrote, and the ones dandori's hooks wrote: a
    // test in both counts once, as the report says.
    let mut xml = reports.fresh(t.dir, t.command);
    let hooked = hooks.collect(t.dir);
    xml.read.extend(hooked.read);
    xml.errors.extend(hooked.errors);
    for (id, passed) in hooked.tests {
        crate::evidence::parse::record(&mut xml.tests, &id, passed);
    }
    note_reports(t.log, &xml);
    tests.extend(xml.tests);
    let counted = crate::evidence::runner_hooks::count(&text);
    let crash = (!out.timed_out && out.exit_code != Some(0) && tests.is_empty())
        .then(|| crash_line(&text))
        .flatten();
    let run = crate::evidence::CommandRun {
        command: t.command.to_string(),
        exit_code: if out.timed_out { None } else { out.exit_code },
        tests,
        counted,
        log: t.log.to_string_lossy().into_owned(),
        crash,
    };
    Ok((out, run))
}

/// The last non-blank line of a command's output (at most 200 characters),
/// durations blanked: what a crash says.
fn crash_line(text: &str) -> Option<String> {
    let line = crate::executor::command::last_line(text);
    let line = line.trim();
    (!line.is_empty()).then(|| without_durations(line).chars().take(200).collect())
}

/// Says in the command's log which JUnit reports were read and which could
/// not be (their console results still count).
fn note_reports(log: &Path, xml: &crate::evidence::junit::Collected) {
    use std::io::Write as _;
    if xml.read.is_empty() && xml.errors.is_empty() {
        return;
    }
    let mut text = String::new();
    for (path, n) in &xml.read {
        text.push_str(&format!(
            "dandori: {n} test result(s) from the JUnit report {}\n",
            path.display()
        ));
    }
    for e in &xml.errors {
        text.push_str(&format!("dandori: JUnit report not read: {e}\n"));
    }
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// `output` with every duration (`0.001s`, `12 ms`, `1.5 sec`) replaced by `<t>`:
/// what a fix loop compares, so a repeated failure is seen as one whatever the
/// timings the test runner printed.
fn without_durations(output: &str) -> String {
    const UNITS: &[&str] = &["seconds", "second", "secs", "sec", "ms", "s"];
    let b = output.as_bytes();
    let mut out = String::with_capacity(output.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        let starts_word = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.');
        if !(b[i].is_ascii_digit() && starts_word) {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j + 1 < b.len() && b[j] == b'.' && b[j + 1].is_ascii_digit() {
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        let k = if b.get(j) == Some(&b' ') { j + 1 } else { j };
        let unit = UNITS.iter().find(|u| {
            b[k..].starts_with(u.as_bytes())
                && b.get(k + u.len())
                    .is_none_or(|c| !c.is_ascii_alphanumeric())
        });
        match unit {
            Some(u) => {
                out.push_str(&output[copied..i]);
                out.push_str("<t>");
                i = k + u.len();
                copied = i;
            }
            None => i = j,
        }
    }
    out.push_str(&output[copied..]);
    out
}

/// How many parts a too-large step is split into: enough for each to fit, at
/// least two, at most five.
fn split_parts(lines: u64, limit: u64) -> u32 {
    let limit = limit.max(1);
    let n = lines.div_ceil(limit);
    n.clamp(2, 5) as u32
}

fn feedback_kind(f: &Feedback) -> Value {
    match f {
        Feedback::UnitFailure { cycle, .. } => json!({"autofix_cycle": cycle}),
        Feedback::SplitPart { part, parts, .. } => json!({"split_part": part, "parts": parts}),
        Feedback::Replan { revision, .. } => json!({"replan": revision}),
    }
}

/// Whether a shell command line runs `gh` (any simple command of it).
pub fn invokes_gh(cmd: &str) -> bool {
    let words = shell_words::split(cmd)
        .unwrap_or_else(|_| cmd.split_whitespace().map(|s| s.to_string()).collect());
    let mut at_start = true;
    for w in words {
        let w = w.as_str();
        if at_start && (w == "gh" || w.ends_with("/gh")) {
            return true;
        }
        at_start = matches!(
            w,
            "&&" | "||" | ";" | "|" | "sudo" | "env" | "exec" | "xargs"
        ) || w.ends_with(';');
        if !at_start && w.contains('=') && !w.starts_with('-') {
            // `FOO=bar gh …`
            at_start = true;
        }
    }
    false
}

fn tail(s: &str, n: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    chars[chars.len().saturating_sub(n)..].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gh_detection() {
        assert!(invokes_gh("gh pr create"));
        assert!(invokes_gh("make && gh issue list"));
        assert!(invokes_gh("GH_TOKEN=x gh api"));
        assert!(invokes_gh("/usr/bin/gh auth"));
        assert!(!invokes_gh("cargo test -p ghost"));
        assert!(!invokes_gh("echo gh"));
    }

    #[test]
    fn durations_do_not_make_two_failures_differ() {
        assert_eq!(
            without_durations("Ran 3 tests in 0.001s\nFAILED (failures=2)"),
            "Ran 3 tests in <t>\nFAILED (failures=2)"
        );
        assert_eq!(
            without_durations("2 failed in 1.52 seconds; took 12 ms"),
            "2 failed in <t>; took <t>"
        );
        // Counts, versions and names stay.
        assert_eq!(
            without_durations("3 tests, v1.5s2 x3s 10 passed"),
            "3 tests, v1.5s2 x3s 10 passed"
        );
        assert_eq!(without_durations("1.0.3s"), "1.0.3s");
    }

    #[test]
    fn split_counts() {
        assert_eq!(split_parts(130, 100), 2);
        assert_eq!(split_parts(350, 100), 4);
        assert_eq!(split_parts(10_000, 100), 5);
    }
}
