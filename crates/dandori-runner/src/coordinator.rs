//! The execution coordinator (seed 000 §7.1.3): gates, the environment sub-phase,
//! reconciling `stage.json` with the work branch, scheduling steps into worktrees,
//! merging them back in step order, run-level guardrails, completion.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use dandori_config::{Config, OnFailure};
use dandori_plan::{
    Commands, ExpectedDiff, Inputs, Planning, RiskLevel, Role, RunStatus, Scope, Stage, Step,
    StepOutputs, StepStatus,
};
use dandori_trace::{Masker, TraceWriter, now_rfc3339};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::completion::{self, Completion, CompletionStatus, StepTiming};
use crate::coverage::{self, CoverageInput, CoverageResult};
use crate::environment::{EnvironmentPhase, EnvironmentStatus};
use crate::error::RunnerError;
use crate::executor::command::CommandExecutor;
use crate::executor::llm::LlmExecutor;
use crate::executor::none::NoneExecutor;
use crate::executor::{Executor, TokenUsage};
use crate::git::Git;
use crate::plan::{self, RunPaths};
use crate::step::{self, StepContext, StepReport, StepResult};
use crate::{events, reason, report};

/// Which executor a run uses. Stored in `stage.json` (`executor`) so `resume`
/// continues with the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorChoice {
    pub kind: ExecutorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cmd: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutorKind {
    Llm,
    Command,
    None,
}

pub type Progress = Arc<dyn Fn(&str) + Send + Sync>;

pub struct RunOptions {
    /// A planning.json or a run directory.
    pub target: PathBuf,
    /// The repository (any directory inside it).
    pub repo: PathBuf,
    pub config: Config,
    /// Chosen on the command line; otherwise the one stored in stage.json, then config.
    pub executor: Option<ExecutorChoice>,
    /// A ready executor (tests, benchmarks, embedders); wins over `executor`.
    pub executor_override: Option<Arc<dyn Executor>>,
    /// Approve tools that require approval (`--approve`); otherwise they are asked
    /// on a terminal and denied when there is none.
    pub approve: bool,
    /// `resume` requires an existing stage.json.
    pub resume: bool,
    /// Environment of child processes (the CLI passes its own).
    pub base_env: BTreeMap<String, String>,
    pub environment: Option<Arc<dyn EnvironmentPhase>>,
    pub progress: Option<Progress>,
}

#[derive(Debug, Clone)]
pub struct RunOutcome {
    pub completion: Completion,
    pub run_dir: PathBuf,
}

/// Runs (or resumes) a plan to the end. Errors that stop the run before or between
/// steps are also recorded in `errors.json` and the trace.
pub fn run(opts: &RunOptions) -> Result<RunOutcome, RunnerError> {
    let paths = RunPaths::locate(&opts.target)?;
    let result = run_in(opts, &paths);
    if let Err(e) = &result {
        let _ = report::write_run_error(&paths, e);
    }
    result
}

struct Coordinator<'o> {
    opts: &'o RunOptions,
    paths: RunPaths,
    planning: Planning,
    preds: Vec<BTreeSet<usize>>,
    stage: Stage,
    trace: Arc<TraceWriter>,
    main: Git,
    base_commit: String,
    started: Instant,
    timings: BTreeMap<String, StepTiming>,
    reports: BTreeMap<String, StepReport>,
    tokens: TokenUsage,
    stop_reason: Option<(&'static str, String)>,
    consecutive_failures: u32,
    lessons: Vec<String>,
    environment: Value,
    masker: Masker,
    /// Worktrees of merged steps, removed off the critical path.
    to_remove: Vec<PathBuf>,
    /// The work branch tip (HEAD of the main worktree).
    tip: String,
}

fn run_in(opts: &RunOptions, paths: &RunPaths) -> Result<RunOutcome, RunnerError> {
    let (planning, warnings) = plan::load_planning(&paths.planning)?;
    let preds = plan::predecessors(&planning)?;
    let masker = run_masker(opts);
    let trace = Arc::new(TraceWriter::open(
        &paths.trace,
        planning.run_id.clone(),
        planning.request_id.clone(),
        masker.clone(),
    )?);
    let stage_exists = paths.stage.is_file();
    if opts.resume && !stage_exists {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::RUN_DIR_INVALID,
            path: paths.stage.clone(),
            message: "nothing to resume: no stage.json".to_string(),
        });
    }
    let now = now_rfc3339();
    let stage = if stage_exists {
        load_stage(&paths.stage, &planning)?
    } else {
        Stage::for_planning(&planning, &now)
    };
    let repo_root = plan::repository_root(&opts.repo, &paths.run_dir)?;
    let main = Git::new(&repo_root);
    let mut c = Coordinator {
        opts,
        paths: paths.clone(),
        planning,
        preds,
        stage,
        trace,
        main,
        base_commit: String::new(),
        started: Instant::now(),
        timings: BTreeMap::new(),
        reports: BTreeMap::new(),
        tokens: TokenUsage::default(),
        stop_reason: None,
        consecutive_failures: 0,
        lessons: Vec::new(),
        environment: Value::Null,
        masker,
        to_remove: Vec::new(),
        tip: String::new(),
    };
    c.load_timings();
    if !warnings.is_empty() {
        c.emit(
            events::PLAN_VALIDATION,
            json!({"status": "ok", "warnings": warnings}),
        );
    }
    c.emit(
        if stage_exists {
            events::EXECUTION_RESUME
        } else {
            events::EXECUTION_START
        },
        json!({"run_dir": c.paths.run_dir, "steps": c.planning.steps.len()}),
    );
    let executor = c.resolve_executor()?;
    c.gates(stage_exists)?;
    let activation = c.environment_phase()?;
    c.reconcile()?;
    c.stage.status = RunStatus::Running;
    c.save()?;
    let mut env = opts.base_env.clone();
    for (k, v) in activation {
        env.insert(k, v);
    }
    env = c.child_env(env)?;
    if executor.can_execute() {
        c.execute_steps(executor.as_ref(), &env)?;
    } else {
        c.mark_waiting_for_model();
    }
    let coverage = c.coverage_and_follow_ups(executor.as_ref(), &env)?;
    c.finish(executor.name(), coverage)
}

/// The run's masker: the configured patterns plus the literal values of every
/// environment variable whose name looks secret (API keys handed to agents).
fn run_masker(opts: &RunOptions) -> Masker {
    let logging = &opts.config.planning.logging;
    let secret_name = |k: &str| {
        let k = k.to_ascii_uppercase();
        ["_KEY", "_TOKEN", "_SECRET", "_PASSWORD"]
            .iter()
            .any(|suffix| k.ends_with(suffix))
            || k.contains("API_KEY")
    };
    Masker::new(
        logging.mask_sensitive_data,
        logging.sensitive_patterns.clone(),
    )
    .with_literal_secrets(
        opts.base_env
            .iter()
            .filter(|(k, _)| secret_name(k))
            .map(|(_, v)| v.clone()),
    )
}

fn load_stage(path: &Path, planning: &Planning) -> Result<Stage, RunnerError> {
    let text = dandori_fs::read_to_string(path)?;
    let stage: Stage = serde_json::from_str(&text).map_err(|e| RunnerError::InvalidInput {
        reason_code: reason::JSON_PARSE_ERROR,
        path: path.to_path_buf(),
        message: format!("line {} column {}: {e}", e.line(), e.column()),
    })?;
    let ids: Vec<&str> = stage.steps.iter().map(|s| s.step_id.as_str()).collect();
    let want: Vec<&str> = planning.steps.iter().map(|s| s.step_id.as_str()).collect();
    if ids != want {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::RUN_DIR_INVALID,
            path: path.to_path_buf(),
            message: format!(
                "$.steps: step ids {ids:?} do not match planning.json {want:?} (seed 004 §6)"
            ),
        });
    }
    if stage.run_id != planning.run_id {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::RUN_DIR_INVALID,
            path: path.to_path_buf(),
            message: format!(
                "$.run_id: {} differs from planning.json {}",
                stage.run_id, planning.run_id
            ),
        });
    }
    Ok(stage)
}

impl Coordinator<'_> {
    fn emit(&self, event: &str, data: Value) {
        let _ = self.trace.emit(event, data);
    }

    fn progress(&self, line: &str) {
        if let Some(p) = &self.opts.progress {
            p(line);
        }
    }

    fn save(&mut self) -> Result<(), RunnerError> {
        self.stage.updated_at = now_rfc3339();
        self.stage.extra.insert(
            "timings".to_string(),
            serde_json::to_value(&self.timings).unwrap_or(Value::Null),
        );
        dandori_fs::write_json_atomic(&self.paths.stage, &self.stage)?;
        Ok(())
    }

    fn load_timings(&mut self) {
        if let Some(t) = self.stage.extra.get("timings")
            && let Ok(t) = serde_json::from_value(t.clone())
        {
            self.timings = t;
        }
    }

    fn resolve_executor(&mut self) -> Result<Arc<dyn Executor>, RunnerError> {
        if let Some(e) = &self.opts.executor_override {
            return Ok(e.clone());
        }
        let stored: Option<ExecutorChoice> = self
            .stage
            .extra
            .get("executor")
            .and_then(|v| serde_json::from_value(v.clone()).ok());
        let cfg = &self.opts.config;
        let choice = match (&self.opts.executor, stored) {
            (Some(c), _) => c.clone(),
            (None, Some(c)) => c,
            (None, None) => match (&cfg.runner.agent_cmd, &cfg.llm.default_provider) {
                (Some(t), _) => ExecutorChoice {
                    kind: ExecutorKind::Command,
                    agent_cmd: Some(t.clone()),
                },
                (None, Some(_)) => ExecutorChoice {
                    kind: ExecutorKind::Llm,
                    agent_cmd: None,
                },
                (None, None) => ExecutorChoice {
                    kind: ExecutorKind::None,
                    agent_cmd: None,
                },
            },
        };
        let executor: Arc<dyn Executor> = match choice.kind {
            ExecutorKind::None => Arc::new(NoneExecutor),
            ExecutorKind::Command => {
                let t = choice
                    .agent_cmd
                    .clone()
                    .or_else(|| cfg.runner.agent_cmd.clone())
                    .ok_or_else(|| {
                        RunnerError::Executor(
                            "--executor command needs --agent-cmd or runner.agent_cmd".to_string(),
                        )
                    })?;
                Arc::new(CommandExecutor::new(&t)?)
            }
            ExecutorKind::Llm => Arc::new(LlmExecutor::from_config(
                cfg,
                &self.opts.base_env,
                self.opts.approve,
            )?),
        };
        self.stage.extra.insert(
            "executor".to_string(),
            serde_json::to_value(&choice).unwrap_or(Value::Null),
        );
        Ok(executor)
    }

    /// The runs root (`<root>/<request-id>/<run-id>` → `<root>`) relative to the
    /// repository, excluded from the clean check. Only that directory: a runs root
    /// at `examples/app/.dandori/runs` must not hide the rest of `examples/`.
    fn runs_exclude(&self) -> Option<String> {
        let root = dandori_fs::canonicalize(self.main.dir()).ok()?;
        let runs_root = self.paths.run_dir.parent()?.parent()?;
        let rel = runs_root.strip_prefix(&root).ok()?;
        if rel.as_os_str().is_empty() {
            return None;
        }
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// Seed 004 §3.5 gates that apply before any step.
    fn gates(&mut self, resuming: bool) -> Result<(), RunnerError> {
        let g = self.planning.gates.clone();
        let base = self.planning.base_branch.clone();
        let work = self.planning.work_branch.clone();
        if resuming && self.main.cherry_pick_in_progress()? {
            // Our own merge was interrupted by a kill; its step is rerun.
            self.main.run(&["cherry-pick", "--abort"])?;
        }
        let exclude = self.runs_exclude();
        let dirty = self.main.dirty_paths(exclude.as_deref())?;
        let clean = dirty.is_empty();
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "require_clean_worktree", "required": g.require_clean_worktree,
                   "passed": clean, "dirty": dirty}),
        );
        if g.require_clean_worktree && !clean {
            return Err(RunnerError::Gate {
                gate: "require_clean_worktree",
                reason_code: reason::WORKTREE_DIRTY,
                message: format!(
                    "{} has uncommitted changes: {}",
                    self.main.dir().display(),
                    dirty.join(", ")
                ),
            });
        }
        if !self.main.branch_exists(&base)? {
            return Err(RunnerError::Gate {
                gate: "base_branch",
                reason_code: reason::BASE_BRANCH_MISSING,
                message: format!("base_branch {base:?} does not exist"),
            });
        }
        if g.require_work_branch && (work == base || work.trim().is_empty()) {
            return Err(RunnerError::Gate {
                gate: "require_work_branch",
                reason_code: reason::WORK_BRANCH_REQUIRED,
                message: format!("work_branch {work:?} must differ from base_branch {base:?}"),
            });
        }
        if self.main.branch_exists(&work)? {
            if !self.main.is_ancestor(&base, &work)? {
                return Err(RunnerError::Gate {
                    gate: "require_work_branch",
                    reason_code: reason::WORK_BRANCH_NOT_FROM_BASE,
                    message: format!("work branch {work:?} does not contain base {base:?}"),
                });
            }
        } else {
            self.progress(&format!(
                "git: creating branch {work} from {base} in {}",
                self.main.dir().display()
            ));
            self.main.run(&["branch", &work, &base])?;
        }
        let current = self.main.current_branch()?;
        if current.as_deref() != Some(work.as_str()) {
            if !clean {
                // Never carry someone's uncommitted work onto our branch, even when
                // the clean-worktree gate is off.
                return Err(RunnerError::Gate {
                    gate: "require_clean_worktree",
                    reason_code: reason::WORKTREE_DIRTY,
                    message: format!(
                        "refusing to switch {} to {work}: uncommitted changes ({}); commit or stash them first",
                        self.main.dir().display(),
                        dirty.join(", ")
                    ),
                });
            }
            self.progress(&format!(
                "git: checking out {work} in {} (was {})",
                self.main.dir().display(),
                current.as_deref().unwrap_or("a detached HEAD")
            ));
            self.main.run(&["checkout", "--quiet", &work])?;
        }
        self.base_commit = self.main.rev_parse(&base)?;
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "require_work_branch", "required": g.require_work_branch,
                   "passed": true, "work_branch": work, "base_branch": base}),
        );
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "forbid_gh", "required": true, "passed": g.forbid_gh,
                   "enforced_by": ["gh shim first on PATH of agents and unit commands",
                                   "unit commands calling gh refused",
                                   "tool policy of the llm executor"]}),
        );
        Ok(())
    }

    fn environment_phase(&mut self) -> Result<BTreeMap<String, String>, RunnerError> {
        let cfg = &self.opts.config.planning.environment_setup;
        let Some(phase) = self.opts.environment.clone().filter(|_| cfg.enabled) else {
            self.environment = json!({"status": "skipped",
                "message": "no environment sub-phase configured for this run"});
            self.emit(events::ENVIRONMENT_SETUP, self.environment.clone());
            return Ok(BTreeMap::new());
        };
        self.progress(&format!(
            "environment: setting up in {} (planning.environment_setup.enabled=false skips this)",
            self.main.dir().display()
        ));
        let on_failure = cfg.verification.on_failure;
        let result = phase.prepare(self.main.dir(), &self.paths.run_dir);
        let (status, env, message) = match result {
            Ok(r) => (r.status, r.activation_env, r.message),
            Err(m) => (EnvironmentStatus::Failed, BTreeMap::new(), m),
        };
        self.environment = json!({"status": status, "message": message, "on_failure": on_failure});
        self.emit(events::ENVIRONMENT_SETUP, self.environment.clone());
        match (status, on_failure) {
            (EnvironmentStatus::Failed, OnFailure::Fail) => Err(RunnerError::Gate {
                gate: "environment_setup",
                reason_code: reason::ENVIRONMENT_FAILED,
                message,
            }),
            (EnvironmentStatus::Failed, OnFailure::Warn) => {
                self.lessons.push(format!(
                    "environment setup failed, continued (on_failure: warn): {message}"
                ));
                Ok(env)
            }
            (EnvironmentStatus::Failed, OnFailure::Ignore)
            | (EnvironmentStatus::Success, _)
            | (EnvironmentStatus::PartialSuccess, _) => Ok(env),
        }
    }

    /// The environment of agents and unit commands: the caller's, the prepared
    /// environment's activation, the run's ids, and a `gh` that refuses to run.
    fn child_env(
        &self,
        mut env: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, RunnerError> {
        let bin = self.paths.run_dir.join("bin");
        let gh = bin.join("gh");
        dandori_fs::write_atomic(
            &gh,
            "#!/bin/sh\necho 'dandori: gh is forbidden in this run (gates.forbid_gh)' >&2\nexit 97\n",
        )?;
        set_executable(&gh)?;
        let path = env.get("PATH").cloned().unwrap_or_default();
        env.insert(
            "PATH".to_string(),
            if path.is_empty() {
                bin.to_string_lossy().into_owned()
            } else {
                format!("{}:{path}", bin.to_string_lossy())
            },
        );
        env.insert("DANDORI_RUN_ID".to_string(), self.planning.run_id.clone());
        env.insert(
            "DANDORI_RUN_DIR".to_string(),
            self.paths.run_dir.to_string_lossy().into_owned(),
        );
        Ok(env)
    }

    /// stage.json against the work branch: a step whose commit is on the branch is
    /// done; anything else that was running (or failed, or waiting) runs again from a
    /// clean worktree. Parts of a split step whose last part never landed are
    /// removed from the branch tip first.
    fn reconcile(&mut self) -> Result<(), RunnerError> {
        let run_id = self.planning.run_id.clone();
        let work = self.planning.work_branch.clone();
        loop {
            let head = self.main.step_commits("HEAD^!")?;
            let partial = head
                .first()
                .is_some_and(|c| c.run_id == run_id && !c.completes_step());
            if !partial {
                break;
            }
            self.main.reset_hard("HEAD^")?;
        }
        let range = format!("{}..{work}", self.base_commit);
        let mut finals: BTreeMap<String, String> = BTreeMap::new();
        for c in self.main.step_commits(&range)? {
            if c.run_id == run_id && c.completes_step() {
                // newest first: keep the newest proof
                finals.entry(c.step_id.clone()).or_insert(c.hash.clone());
            }
        }
        let now = now_rfc3339();
        let mut changes = Vec::new();
        for s in &mut self.stage.steps {
            match finals.get(&s.step_id) {
                Some(hash) => {
                    if s.status != StepStatus::Done || s.commit.as_deref() != Some(hash) {
                        changes.push(json!({"step_id": s.step_id, "from": s.status, "to": "done"}));
                        s.status = StepStatus::Done;
                        s.commit = Some(hash.clone());
                        s.reason_code = None;
                        s.message = None;
                        s.finished_at.get_or_insert_with(|| now.clone());
                    }
                }
                None => match s.status {
                    StepStatus::Pending => {}
                    StepStatus::Done
                    | StepStatus::Running
                    | StepStatus::Failed
                    | StepStatus::Skipped
                    | StepStatus::NeedsInput => {
                        changes
                            .push(json!({"step_id": s.step_id, "from": s.status, "to": "pending"}));
                        s.status = StepStatus::Pending;
                        s.commit = None;
                        s.reason_code = None;
                        s.message = None;
                        s.finished_at = None;
                    }
                },
            }
        }
        let mut follow_ups = self.follow_ups();
        for f in &mut follow_ups {
            if let Some(hash) = finals.get(&f.step_id) {
                f.status = StepStatus::Done;
                f.commit = Some(hash.clone());
                f.reason_code = None;
            } else {
                f.status = StepStatus::Pending;
                f.commit = None;
            }
        }
        if !follow_ups.is_empty() {
            self.stage
                .extra
                .insert("follow_ups".to_string(), json!(follow_ups));
        }
        if self.paths.worktrees.exists() {
            std::fs::remove_dir_all(&self.paths.worktrees).map_err(|e| {
                dandori_fs::FsError::new("removing stale worktrees", &self.paths.worktrees, e)
            })?;
        }
        self.main.run(&["worktree", "prune"])?;
        if !changes.is_empty() {
            self.emit(events::EXECUTION_RESUME, json!({"reconciled": changes}));
        }
        self.update_index();
        self.tip = self.main.rev_parse("HEAD")?;
        Ok(())
    }

    fn update_index(&mut self) {
        self.stage.current_step_index = self
            .stage
            .steps
            .iter()
            .position(|s| s.status != StepStatus::Done)
            .unwrap_or(self.stage.steps.len());
    }

    fn mark_waiting_for_model(&mut self) {
        let ids: Vec<String> = self
            .stage
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Pending)
            .map(|s| s.step_id.clone())
            .collect();
        for s in &mut self.stage.steps {
            if s.status == StepStatus::Pending {
                s.status = StepStatus::NeedsInput;
                s.reason_code = Some(reason::MODEL_NOT_CONFIGURED.to_string());
                s.message = Some(
                    "waits for a model: configure llm.default_provider or use --executor command --agent-cmd"
                        .to_string(),
                );
            }
        }
        self.emit(
            events::STEP_SKIPPED,
            json!({"reason_code": reason::MODEL_NOT_CONFIGURED, "steps": ids}),
        );
    }

    fn execute_steps(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
    ) -> Result<(), RunnerError> {
        let workers = self.opts.config.runner.max_parallel_workers.max(1) as usize;
        let total_timeout = Duration::from_secs(self.opts.config.planning.execution.total_timeout);
        let max_steps = self.planning.limits.max_steps_per_run.max(1);
        let actions = AtomicU32::new(0);
        let revisions = AtomicU32::new(
            self.stage
                .extra
                .get("revisions")
                .and_then(Value::as_u64)
                .unwrap_or(0) as u32,
        );
        let planning = self.planning.clone();
        let paths = self.paths.clone();
        let masker = self.masker.clone();
        let trace = self.trace.clone();
        let rcfg = &self.opts.config.planning;
        let cx = StepContext {
            planning: &planning,
            paths: &paths,
            executor,
            trace: &trace,
            env,
            run_id: &planning.run_id,
            trigger_interval: rcfg.reflection.trigger_interval,
            reflection_enabled: rcfg.reflection.enabled,
            actions: &actions,
            revisions: &revisions,
            max_revisions: rcfg.revision.max_revisions,
            masker: &masker,
        };
        let (tx, rx) = mpsc::channel::<StepReport>();
        let n = planning.steps.len();
        let mut finished: BTreeMap<usize, StepReport> = BTreeMap::new();
        let mut running = 0usize;
        let mut started_here: u64 = 0;
        let mut next = 0usize;
        let result = std::thread::scope(|scope| -> Result<(), RunnerError> {
            loop {
                // 1. Merge finished steps in step order.
                while next < n {
                    match self.stage.steps[next].status {
                        StepStatus::Done
                        | StepStatus::Failed
                        | StepStatus::Skipped
                        | StepStatus::NeedsInput => next += 1,
                        StepStatus::Running => match finished.remove(&next) {
                            Some(r) => {
                                self.integrate(r)?;
                                next += 1;
                            }
                            None => break,
                        },
                        StepStatus::Pending => break,
                    }
                }
                // 2. Dependents of failed or waiting steps never run.
                self.block_dependents();
                // 3. Run-level stops.
                if self.stop_reason.is_none() && self.started.elapsed() >= total_timeout {
                    self.stop(
                        reason::TOTAL_TIMEOUT,
                        format!(
                            "planning.execution.total_timeout of {} s reached",
                            total_timeout.as_secs()
                        ),
                    );
                }
                // 4. Start ready steps, on the current tip of the work branch.
                let tip = self.tip.clone();
                for i in 0..n {
                    if running >= workers || self.stop_reason.is_some() || started_here >= max_steps
                    {
                        break;
                    }
                    if self.stage.steps[i].status != StepStatus::Pending
                        || !self.preds[i]
                            .iter()
                            .all(|p| self.stage.steps[*p].status == StepStatus::Done)
                    {
                        continue;
                    }
                    let wt = self.start_step(i)?;
                    running += 1;
                    started_here += 1;
                    let tx = tx.clone();
                    let cx = &cx;
                    let main = self.main.clone();
                    let tip = tip.clone();
                    scope.spawn(move || {
                        let r = step::run_step_in_new_worktree(
                            cx,
                            i,
                            &cx.planning.steps[i],
                            &main,
                            &tip,
                            &wt,
                        );
                        let _ = tx.send(r);
                    });
                }
                // Merged steps' worktrees go now, while the new steps run.
                for wt in std::mem::take(&mut self.to_remove) {
                    self.main.remove_worktree(&wt)?;
                }
                self.stage.extra.insert(
                    "revisions".to_string(),
                    json!(revisions.load(Ordering::SeqCst)),
                );
                self.update_index_running(next);
                self.save()?;
                if running == 0 {
                    // Nothing in flight: merge what finished out of order (a stop left an
                    // earlier step pending), then we are done.
                    let rest: Vec<StepReport> =
                        std::mem::take(&mut finished).into_values().collect();
                    for r in rest {
                        self.integrate(r)?;
                    }
                    if self.stage.steps.iter().any(|s| {
                        s.status == StepStatus::Pending
                            && self.preds_done(s.step_id.as_str())
                            && self.stop_reason.is_none()
                            && started_here < max_steps
                    }) {
                        continue;
                    }
                    break;
                }
                let Ok(r) = rx.recv() else { break };
                running -= 1;
                self.receive(r, &mut finished)?;
            }
            Ok(())
        });
        self.stage.extra.insert(
            "revisions".to_string(),
            json!(revisions.load(Ordering::SeqCst)),
        );
        for wt in std::mem::take(&mut self.to_remove) {
            self.main.remove_worktree(&wt)?;
        }
        if started_here >= max_steps
            && self
                .stage
                .steps
                .iter()
                .any(|s| s.status == StepStatus::Pending)
            && self.stop_reason.is_none()
        {
            self.lessons.push(format!(
                "limits.max_steps_per_run ({max_steps}) reached; `dandori resume` continues"
            ));
        }
        self.update_index();
        self.save()?;
        result
    }

    fn preds_done(&self, step_id: &str) -> bool {
        let Some(i) = self.stage.steps.iter().position(|s| s.step_id == step_id) else {
            return false;
        };
        self.preds[i]
            .iter()
            .all(|p| self.stage.steps[*p].status == StepStatus::Done)
    }

    fn update_index_running(&mut self, next: usize) {
        self.stage.current_step_index = next.min(self.stage.steps.len());
    }

    fn stop(&mut self, code: &'static str, message: String) {
        self.emit(
            events::EARLY_TERMINATION,
            json!({"reason_code": code, "message": message}),
        );
        self.progress(&format!("stopping: {message}"));
        self.stop_reason = Some((code, message));
    }

    fn start_step(&mut self, i: usize) -> Result<PathBuf, RunnerError> {
        let now = now_rfc3339();
        let s = &mut self.stage.steps[i];
        s.status = StepStatus::Running;
        s.attempts += 1;
        s.started_at = Some(now.clone());
        s.finished_at = None;
        s.reason_code = None;
        s.message = None;
        let step_id = s.step_id.clone();
        let attempt = s.attempts;
        let wt = step::worktree_path(&self.paths, &step_id, attempt);
        if wt.exists() {
            self.main.remove_worktree(&wt)?;
        }
        dandori_fs::create_dir_all(&self.paths.worktrees)?;
        self.timings.insert(
            step_id.clone(),
            StepTiming {
                started_at: now,
                finished_at: None,
                started_ms: self.run_ms(),
                finished_ms: None,
            },
        );
        self.emit(
            events::STEP_START,
            json!({"step_id": step_id, "attempt": attempt, "worktree": wt}),
        );
        self.progress(&format!("{step_id}: started (attempt {attempt})"));
        Ok(wt)
    }

    /// Milliseconds since the run (first invocation) started, for the Gantt chart.
    fn run_ms(&self) -> u64 {
        let created = chrono::DateTime::parse_from_rfc3339(&self.stage.created_at)
            .map(|t| t.timestamp_millis())
            .unwrap_or(0);
        (chrono::Utc::now().timestamp_millis() - created).max(0) as u64
    }

    fn receive(
        &mut self,
        r: StepReport,
        finished: &mut BTreeMap<usize, StepReport>,
    ) -> Result<(), RunnerError> {
        self.tokens.add(r.tokens);
        let budget = self.opts.config.llm.budgets.task;
        match &r.result {
            StepResult::Committed { .. } => {
                self.consecutive_failures = 0;
                finished.insert(r.index, r);
            }
            StepResult::Failed {
                reason_code,
                message,
            } => {
                let (code, msg) = (*reason_code, message.clone());
                self.finish_step(&r, StepStatus::Failed, Some(code), Some(msg.clone()), None);
                self.consecutive_failures += 1;
                let ee = &self.opts.config.planning.execution.early_termination;
                if ee.enabled && self.consecutive_failures >= ee.max_consecutive_failures {
                    self.stop(
                        reason::EARLY_TERMINATION,
                        format!(
                            "{} consecutive step failures (max_consecutive_failures)",
                            self.consecutive_failures
                        ),
                    );
                }
                if code == reason::TOKEN_BUDGET_EXCEEDED && self.stop_reason.is_none() {
                    self.stop(code, msg.clone());
                }
                if matches!(code, reason::LOOP_DETECTED) {
                    self.lessons.push(format!(
                        "{}: a repeated action was stopped: {msg}",
                        r.step_id
                    ));
                }
                self.reports.insert(r.step_id.clone(), r);
            }
            StepResult::NeedsInput {
                reason_code,
                message,
            } => {
                let (code, msg) = (*reason_code, message.clone());
                self.finish_step(&r, StepStatus::NeedsInput, Some(code), Some(msg), None);
                self.reports.insert(r.step_id.clone(), r);
            }
        }
        if budget > 0 && self.tokens.total() > budget && self.stop_reason.is_none() {
            self.stop(
                reason::TOKEN_BUDGET_EXCEEDED,
                format!(
                    "{} tokens used, over llm.budgets.task {budget}; returning what exists",
                    self.tokens.total()
                ),
            );
        }
        Ok(())
    }

    fn finish_step(
        &mut self,
        r: &StepReport,
        status: StepStatus,
        reason_code: Option<&'static str>,
        message: Option<String>,
        commit: Option<String>,
    ) {
        let now = now_rfc3339();
        let ms = self.run_ms();
        if let Some(s) = self.stage.steps.get_mut(r.index) {
            s.status = status;
            s.reason_code = reason_code.map(str::to_string);
            s.message = message.clone();
            s.commit = commit.clone();
            s.finished_at = Some(now.clone());
        }
        if let Some(t) = self.timings.get_mut(&r.step_id) {
            t.finished_at = Some(now);
            t.finished_ms = Some(ms);
        }
        self.emit(
            events::STEP_END,
            json!({"step_id": r.step_id, "status": status, "reason_code": reason_code,
                   "message": message, "commit": commit, "diff_lines": r.diff_lines,
                   "files_changed": r.files_changed, "autofix_cycles": r.autofix_cycles,
                   "splits": r.splits, "unit_passed": r.unit_passed,
                   "duration_ms": r.duration.as_millis() as u64, "tokens": r.tokens}),
        );
        self.progress(&format!(
            "{}: {}{}",
            r.step_id,
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            reason_code.map(|c| format!(" ({c})")).unwrap_or_default()
        ));
    }

    /// Cherry-picks a finished step's commits onto the work branch.
    fn integrate(&mut self, r: StepReport) -> Result<(), RunnerError> {
        let StepResult::Committed { commits } = &r.result else {
            return Ok(());
        };
        // While the tip is still the step's base, each commit's parent is the tip and
        // git fast-forwards to it instead of copying it (same tree, same message).
        let mut ff = r.base.as_deref() == Some(self.tip.as_str());
        let mut head = None;
        for c in commits {
            head = self.main.cherry_pick(c, ff)?;
            match &head {
                Some(h) => ff = h == c,
                None => break,
            }
        }
        let attempt = self.stage.steps[r.index].attempts;
        let wt = step::worktree_path(&self.paths, &r.step_id, attempt);
        let head = match (head, commits.is_empty()) {
            (Some(h), _) => Some(h),
            (None, true) => Some(self.tip.clone()),
            (None, false) => None,
        };
        if let Some(head) = head {
            self.tip = head.clone();
            self.finish_step(&r, StepStatus::Done, None, None, Some(head));
            self.to_remove.push(wt);
        } else {
            self.finish_step(
                &r,
                StepStatus::Failed,
                Some(reason::MERGE_CONFLICT),
                Some(format!(
                    "the commits of {} do not apply on the work branch (worktree kept at {})",
                    r.step_id,
                    wt.display()
                )),
                None,
            );
        }
        self.reports.insert(r.step_id.clone(), r);
        // stage.json is written once per scheduling round (execute_steps); a kill
        // before that is repaired by `reconcile`, which trusts the branch's commits.
        Ok(())
    }

    fn block_dependents(&mut self) {
        let n = self.stage.steps.len();
        for i in 0..n {
            if self.stage.steps[i].status != StepStatus::Pending {
                continue;
            }
            let blocker = self.preds[i].iter().find_map(|p| {
                let s = &self.stage.steps[*p];
                match s.status {
                    StepStatus::Failed | StepStatus::Skipped => Some((
                        StepStatus::Skipped,
                        reason::DEPENDENCY_FAILED,
                        s.step_id.clone(),
                    )),
                    StepStatus::NeedsInput => Some((
                        StepStatus::NeedsInput,
                        reason::DEPENDENCY_FAILED,
                        s.step_id.clone(),
                    )),
                    StepStatus::Pending | StepStatus::Running | StepStatus::Done => None,
                }
            });
            if let Some((status, code, dep)) = blocker {
                let s = &mut self.stage.steps[i];
                s.status = status;
                s.reason_code = Some(code.to_string());
                s.message = Some(format!("depends on {dep}, which did not complete"));
                let step_id = s.step_id.clone();
                self.emit(
                    events::STEP_SKIPPED,
                    json!({"step_id": step_id, "status": status, "reason_code": code, "depends_on": dep}),
                );
            }
        }
    }

    /// Follow-up steps recorded in `stage.json` (`follow_ups`).
    fn follow_ups(&self) -> Vec<completion::FollowUp> {
        self.stage
            .extra
            .get("follow_ups")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Seed 001 §10.5: evaluate AC coverage with the deterministic guardrails; plan
    /// gaps (ACs no step links to) get follow-up steps while iterations remain.
    fn coverage_and_follow_ups(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
    ) -> Result<CoverageResult, RunnerError> {
        let max_iterations = self.opts.config.planning.revision.max_revisions.max(1);
        let mut follow_ups = self.follow_ups();
        let mut iteration = 1;
        loop {
            let input = self.coverage_input(&follow_ups, iteration, max_iterations)?;
            let result = coverage::apply_guardrails(&input, coverage::assess(&input));
            self.emit(
                events::COVERAGE_EVALUATION,
                json!({"input": input, "result": result}),
            );
            let all_steps_done = self
                .stage
                .steps
                .iter()
                .all(|s| s.status == StepStatus::Done);
            let gaps: Vec<String> = result
                .critical_gaps
                .iter()
                .filter(|g| input.unplanned.contains(g))
                .filter(|g| {
                    !follow_ups
                        .iter()
                        .any(|f| &f.ac == *g && f.status == StepStatus::Done)
                })
                .cloned()
                .collect();
            if !result.should_continue
                || gaps.is_empty()
                || !all_steps_done
                || !executor.can_execute()
                || self.stop_reason.is_some()
            {
                self.stage
                    .extra
                    .insert("follow_ups".to_string(), json!(follow_ups));
                return Ok(result);
            }
            for ac in gaps.iter().take(3) {
                let idx = match follow_ups.iter().position(|f| &f.ac == ac) {
                    Some(i) => i,
                    None => {
                        follow_ups.push(completion::FollowUp {
                            step_id: format!("F{:02}", follow_ups.len() + 1),
                            ac: ac.clone(),
                            status: StepStatus::Pending,
                            commit: None,
                            reason_code: None,
                        });
                        follow_ups.len() - 1
                    }
                };
                if follow_ups[idx].status == StepStatus::Done {
                    continue;
                }
                let step = self.follow_up_step(&follow_ups[idx].step_id, ac);
                let (status, commit, code) = self.run_follow_up(executor, env, &step)?;
                follow_ups[idx].status = status;
                follow_ups[idx].commit = commit;
                follow_ups[idx].reason_code = code.map(str::to_string);
                self.stage
                    .extra
                    .insert("follow_ups".to_string(), json!(follow_ups));
                self.save()?;
            }
            iteration += 1;
        }
    }

    fn coverage_input(
        &self,
        follow_ups: &[completion::FollowUp],
        iteration: u32,
        max_iterations: u32,
    ) -> Result<CoverageInput, RunnerError> {
        let acs: Vec<String> = self
            .planning
            .context
            .acceptance_criteria
            .iter()
            .map(|a| a.id.clone())
            .collect();
        let mut covered = BTreeSet::new();
        let mut linked = BTreeSet::new();
        for (step, st) in self.planning.steps.iter().zip(&self.stage.steps) {
            for ac in &step.links_to_ac {
                linked.insert(ac.clone());
                if st.status == StepStatus::Done {
                    covered.insert(ac.clone());
                }
            }
        }
        for f in follow_ups {
            if f.status == StepStatus::Done {
                covered.insert(f.ac.clone());
            }
        }
        let numstat = self
            .main
            .run(&["diff", "--numstat", &self.base_commit, "HEAD"])?;
        let synthesis_size = numstat
            .lines()
            .map(|l| {
                let mut it = l.split('\t');
                let a = it.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(1);
                let d = it.next().and_then(|x| x.parse::<u64>().ok()).unwrap_or(0);
                a + d
            })
            .sum();
        Ok(CoverageInput {
            unplanned: acs
                .iter()
                .filter(|a| !linked.contains(*a))
                .cloned()
                .collect(),
            acceptance_criteria: acs,
            covered: covered.into_iter().collect(),
            synthesis_size,
            iteration,
            max_iterations,
        })
    }

    /// A follow-up step for an AC the plan left uncovered (seed 001 §10.6).
    fn follow_up_step(&self, step_id: &str, ac_id: &str) -> Step {
        let ac = self
            .planning
            .context
            .acceptance_criteria
            .iter()
            .find(|a| a.id == ac_id);
        let intent = match ac {
            Some(a) => format!(
                "Satisfy acceptance criterion {}: given {}, when {}, then {}",
                a.id, a.given, a.when, a.then
            ),
            None => format!("Satisfy acceptance criterion {ac_id}"),
        };
        let targets: BTreeSet<String> = self
            .planning
            .steps
            .iter()
            .flat_map(|s| s.scope.target_paths.iter().cloned())
            .collect();
        let unit = self
            .planning
            .context
            .test_instructions
            .unit
            .clone()
            .filter(|u| !u.trim().is_empty());
        let step_id = step_id.to_string();
        Step {
            title: format!("Follow-up: cover {ac_id}"),
            role: Role::Implementer,
            intent,
            scope: Scope {
                target_paths: targets.into_iter().collect(),
                forbidden_paths: None,
                max_diff_lines: self.planning.limits.max_diff_lines,
                max_files_changed: self.planning.limits.max_files_changed,
                extra: Default::default(),
            },
            inputs: Inputs {
                request_path: self
                    .planning
                    .steps
                    .first()
                    .map(|s| s.inputs.request_path.clone())
                    .unwrap_or_default(),
                context_files: None,
                code_files_hint: None,
                extra: Default::default(),
            },
            commands: Commands {
                unit: unit.map(|u| vec![u]),
                e2e: None,
                extra: Default::default(),
            },
            success_criteria: vec![format!("{ac_id} holds")],
            links_to_ac: vec![ac_id.to_string()],
            expected_diff: ExpectedDiff {
                lines_max: self.planning.limits.max_diff_lines,
                files_max: 10,
                risk_level: RiskLevel::Mid,
                extra: Default::default(),
            },
            outputs: StepOutputs {
                patch_path: self.paths.patch(&step_id).to_string_lossy().into_owned(),
                log_prefix: self
                    .paths
                    .logs
                    .join(format!("step.{step_id}"))
                    .to_string_lossy()
                    .into_owned(),
                extra: Default::default(),
            },
            step_id,
            fallback: None,
            stop_conditions: None,
            depends_on: None,
            produces: None,
            consumes: None,
            boundaries: None,
            estimated_complexity: None,
            required_tools: None,
            extra: Default::default(),
        }
    }

    fn run_follow_up(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
        step: &Step,
    ) -> Result<(StepStatus, Option<String>, Option<&'static str>), RunnerError> {
        let actions = AtomicU32::new(0);
        let revisions = AtomicU32::new(0);
        let planning = self.planning.clone();
        let paths = self.paths.clone();
        let masker = self.masker.clone();
        let trace = self.trace.clone();
        let rcfg = &self.opts.config.planning;
        let cx = StepContext {
            planning: &planning,
            paths: &paths,
            executor,
            trace: &trace,
            env,
            run_id: &planning.run_id,
            trigger_interval: rcfg.reflection.trigger_interval,
            reflection_enabled: rcfg.reflection.enabled,
            actions: &actions,
            revisions: &revisions,
            max_revisions: 0,
            masker: &masker,
        };
        let wt = step::worktree_path(&self.paths, &step.step_id, 1);
        if wt.exists() {
            self.main.remove_worktree(&wt)?;
        }
        dandori_fs::create_dir_all(&self.paths.worktrees)?;
        self.main.add_worktree(&wt, "HEAD")?;
        self.emit(
            events::STEP_START,
            json!({"step_id": step.step_id, "follow_up_for": step.links_to_ac}),
        );
        let r = step::run_step(&cx, usize::MAX, step, &wt);
        self.tokens.add(r.tokens);
        let out = match &r.result {
            StepResult::Committed { commits } => {
                let mut head = Some(self.tip.clone());
                for c in commits {
                    head = self.main.cherry_pick(c, false)?;
                    if head.is_none() {
                        break;
                    }
                }
                if let Some(head) = head {
                    self.main.remove_worktree(&wt)?;
                    self.tip = head.clone();
                    (StepStatus::Done, Some(head), None)
                } else {
                    (StepStatus::Failed, None, Some(reason::MERGE_CONFLICT))
                }
            }
            StepResult::Failed { reason_code, .. } => {
                (StepStatus::Failed, None, Some(*reason_code))
            }
            StepResult::NeedsInput { reason_code, .. } => {
                (StepStatus::NeedsInput, None, Some(*reason_code))
            }
        };
        self.emit(
            events::STEP_END,
            json!({"step_id": step.step_id, "status": out.0, "commit": out.1, "reason_code": out.2}),
        );
        self.reports.insert(step.step_id.clone(), r);
        Ok(out)
    }

    fn finish(
        mut self,
        executor_name: &str,
        coverage: CoverageResult,
    ) -> Result<RunOutcome, RunnerError> {
        let follow_ups: Vec<completion::FollowUp> = self
            .stage
            .extra
            .get("follow_ups")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default();
        let revisions = self
            .stage
            .extra
            .get("revisions")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let completion = completion::build(&completion::CompletionInput {
            planning: &self.planning,
            stage: &self.stage,
            reports: &self.reports,
            coverage: &coverage,
            follow_ups: &follow_ups,
            stop_reason: self.stop_reason.clone(),
            revisions,
            max_revisions: self.opts.config.planning.revision.max_revisions as u64,
            tokens: self.tokens,
            executor: executor_name,
            lessons: &self.lessons,
            environment: &self.environment,
            run_dir: &self.paths.run_dir,
        });
        self.stage.status = match completion.status {
            CompletionStatus::Completed => RunStatus::Done,
            CompletionStatus::NeedsInput => RunStatus::NeedsInput,
            CompletionStatus::Paused => RunStatus::Running,
            CompletionStatus::Failed | CompletionStatus::RequiresHumanIntervention => {
                RunStatus::Failed
            }
        };
        self.update_index();
        self.save()?;
        report::write(&report::ReportInput {
            planning: &self.planning,
            stage: &self.stage,
            reports: &self.reports,
            timings: &self.timings,
            completion: &completion,
            preds: &self.preds,
            paths: &self.paths,
        })?;
        self.emit(
            events::EXECUTION_END,
            serde_json::to_value(&completion).unwrap_or(Value::Null),
        );
        Ok(RunOutcome {
            completion,
            run_dir: self.paths.run_dir.clone(),
        })
    }
}

fn set_executable(path: &Path) -> Result<(), RunnerError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| dandori_fs::FsError::new("making executable", path, e))?;
    Ok(())
}
