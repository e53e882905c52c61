//! The execution coordinator (seed 000 §7.1.3). This module holds the run's state
//! and its order of phases; each phase reads alone in its own file:
//! [`gates`] (seed 004 §3.5 gates, environment sub-phase), [`reconcile`] (resume),
//! [`scheduling`] (which step runs when), [`pipeline`] (a finished step onto the
//! work branch) and [`completion_phase`] (coverage, follow-ups, report).

mod baseline;
mod completion_phase;
mod gates;
mod pipeline;
mod reconcile;
mod scheduling;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use std::time::Instant;

use dandori_config::Config;
use dandori_plan::{Planning, RunStatus, Stage, StepStatus};
use dandori_trace::{Masker, TraceWriter, now_rfc3339};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::completion::{Completion, StepTiming};
use crate::coverage::AcEvidence;
use crate::dispatch::StepDispatch;
use crate::environment::EnvironmentPhase;
use crate::error::RunnerError;
use crate::executor::agent_preset::AgentExecutor;
use crate::executor::command::CommandExecutor;
use crate::executor::llm::LlmExecutor;
use crate::executor::none::NoneExecutor;
use crate::executor::{Executor, TokenUsage};
use crate::git::Git;
use crate::plan::{self, RunPaths};
use crate::step::{self, StepContext, StepReport};
use crate::{events, reason, report};

/// The run directory's record of the first `run`'s choices (executor kind,
/// agent, agent command, agent model, and `sandbox`: the sandbox mode), written
/// before the environment is set up; `resume` reuses them.
pub const CHOICES_FILE: &str = "executor.json";

/// Which executor a run uses. Stored in `stage.json` (`executor`) so `resume`
/// continues with the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutorChoice {
    pub kind: ExecutorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cmd: Option<String>,
    /// An agent CLI preset (`--agent`, `runner.agent`); wins over `agent_cmd`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<dandori_config::AgentPreset>,
    /// The agent CLI's model (`runner.agent_model`) the run started with: a
    /// resume whose config names none keeps it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_model: Option<String>,
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
    /// Where steps run; `None` is this process's worktree pool (`--engine local`).
    pub dispatch: Option<Arc<dyn StepDispatch>>,
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
        let _ = report::write_run_error(&paths, e, &run_masker(opts));
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
    /// The part of `tokens` agent CLIs reported: not counted by `llm.budgets.task`.
    agent_tokens: u64,
    stop_reason: Option<(&'static str, String)>,
    consecutive_failures: u32,
    lessons: Vec<String>,
    environment: Value,
    /// Seed 002 §7.2: the environment section of every executor prompt.
    /// Where the prepared Python environment imports the project from, in the
    /// environment tree ([`crate::pythonpath`]): mapped into each worktree,
    /// with the modules its install generated there.
    import_roots: crate::pythonpath::ImportRoots,
    /// The checkout the environment was prepared in (not the user's).
    environment_tree: Option<std::path::PathBuf>,
    /// Its `node_modules`, linked into every step workspace and the baseline's.
    node_links: Option<crate::environment::NodeLinks>,
    environment_summary: Option<String>,
    /// Set when the environment failed and the run went on (`on_failure: warn`):
    /// each failed step's error names the environment as the likely cause.
    environment_failure: Option<String>,
    masker: Masker,
    /// The worktree pool: worktrees of merged steps, ready to be moved to the next
    /// step's base (a failed step's worktree is kept for inspection instead).
    idle: Vec<crate::worktree::PoolWorktree>,
    /// The worktree of each running step.
    in_use: BTreeMap<usize, PathBuf>,
    /// Pool worktrees created by this invocation (their names hold the process id,
    /// so an agent orphaned by a killed run never writes into a new run's worktree).
    pool_created: u32,
    /// A pool worktree could not be made in the background: steps make their
    /// own (and a failure is the step's).
    create_inline: bool,
    /// `runner.step_workspace: overlay` where overlayfs works: the one checkout
    /// every step's copy-on-write workspace shows (steps take no pool worktree).
    overlay_base: Option<std::sync::Arc<crate::workspace::overlay::SharedBase>>,
    /// The workers' fixed directories the steps' overlays are mounted at.
    overlay_mounts: crate::workspace::overlay::MountPoints,
    /// `auto` / `overlay`: the overlayfs probe and the attribute scan, made
    /// while the gates run (`workspace::overlay::look_ahead`).
    look_ahead: Option<
        std::thread::JoinHandle<Result<crate::workspace::overlay::AttributeScan, RunnerError>>,
    >,
    /// The gate found the user's checkout clean (no tracked change, no untracked
    /// file outside the run directory and `.gitignore`).
    user_checkout_clean: bool,
    /// The work branch tip.
    tip: String,
    /// Per acceptance criterion, the verifications that cover it (or not).
    ac_evidence: Vec<AcEvidence>,
    /// The work branch when the run first started: where steps without
    /// dependencies start (`stage.json` `work_start`).
    work_start: String,
    /// Whether every step commit is known to be built on `work_start` (false for a
    /// run directory whose start was recorded after steps were done).
    work_start_below: bool,
    /// The repository's own worktree had the work branch checked out when the
    /// run began (left so by an older dandori, or by hand): it is detached while
    /// steps move the branch and checked out again at the end. Otherwise the
    /// user's checkout is never touched: the branch is created, not checked out.
    reattach_work_branch: bool,
    /// The sandbox of every command run on the plan's or the model's behalf.
    sandbox: dandori_exec::Sandbox,
    /// The command policy of unit and e2e commands.
    command_policy: Arc<dandori_exec::CommandPolicy>,
    /// The main repository's git config, hooks and attributes before the run.
    git_guard: Option<Arc<dandori_exec::git::ConfigGuard>>,
}

impl<'o> Coordinator<'o> {
    /// The run's state as loaded from its directory, before any gate or step: what
    /// a whole run and a single dispatched step (a worker's) both start from.
    fn open(
        opts: &'o RunOptions,
        paths: &RunPaths,
    ) -> Result<(Coordinator<'o>, Vec<dandori_plan::validation::Finding>), RunnerError> {
        let (planning, warnings) = plan::load_planning(
            &paths.planning,
            &opts.config.planning.environment_setup.security,
        )?;
        let preds = plan::predecessors(&planning)?;
        let masker = run_masker(opts);
        let trace = Arc::new(TraceWriter::open(
            &paths.trace,
            planning.run_id.clone(),
            planning.request_id.clone(),
            masker.clone(),
        )?);
        let stage_exists = paths.stage.is_file();
        // A run stopped before its first stage.json (during the environment
        // setup) has its choices recorded: resuming it starts it with them.
        let started = paths.run_dir.join(CHOICES_FILE).is_file();
        if opts.resume && !stage_exists && !started {
            return Err(RunnerError::InvalidInput {
                reason_code: reason::RUN_DIR_INVALID,
                path: paths.stage.clone(),
                message: "nothing to resume: no stage.json".to_string(),
            });
        }
        if opts.resume {
            let env_logs = paths.run_dir.join("environment").join("logs");
            crate::interrupted::mask_left_logs(&[&paths.logs, &env_logs], &masker)?;
        }
        let now = now_rfc3339();
        let stage = if stage_exists {
            load_stage(&paths.stage, &planning)?
        } else {
            Stage::for_planning(&planning, &now)
        };
        let repo_root = plan::repository_root(&opts.repo, &paths.run_dir)?;
        let main = Git::new(&repo_root)
            .with_fixed_date(&step::commit_date(&planning))
            .with_object_writer();
        let sandbox = dandori_exec::Sandbox::detect(
            &dandori_exec::SandboxOptions::new(opts.config.sandbox.mode)
                .env(&opts.base_env)
                .home_dir(paths.run_dir.join("home")),
        );
        if let Some(p) = &opts.progress {
            p(&sandbox.status().summary());
        }
        // Plan commands get the same policy as the model's `run_command`.
        let command_policy = Arc::new(
            dandori_tools::tool_command_policy(&opts.config.planning.environment_setup.security)
                .map_err(|e| RunnerError::Executor(format!("command policy: {e}")))?,
        );
        let git_guard = dandori_exec::git::ConfigGuard::capture(&repo_root).map(Arc::new);
        let c = Coordinator {
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
            agent_tokens: 0,
            stop_reason: None,
            consecutive_failures: 0,
            lessons: Vec::new(),
            environment: Value::Null,
            environment_summary: None,
            import_roots: Default::default(),
            environment_tree: None,
            node_links: None,
            environment_failure: None,
            masker,
            idle: Vec::new(),
            in_use: BTreeMap::new(),
            pool_created: 0,
            create_inline: false,
            overlay_base: None,
            overlay_mounts: crate::workspace::overlay::MountPoints::new(paths.worktrees.clone()),
            look_ahead: None,
            user_checkout_clean: false,
            tip: String::new(),
            ac_evidence: Vec::new(),
            work_start: String::new(),
            work_start_below: false,
            reattach_work_branch: false,
            sandbox,
            command_policy,
            git_guard,
        };
        Ok((c, warnings))
    }
}

fn run_in(opts: &RunOptions, paths: &RunPaths) -> Result<RunOutcome, RunnerError> {
    let (mut c, warnings) = Coordinator::open(opts, paths)?;
    let stage_exists = paths.stage.is_file();
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
        json!({"run_dir": c.paths.run_dir, "steps": c.planning.steps.len(),
               "sandbox": c.sandbox.status()}),
    );
    let executor = c.resolve_executor()?;
    if opts.dispatch.is_none()
        && executor.works_in_overlay()
        && opts.config.runner.step_workspace != dandori_config::StepWorkspaceKind::Pool
    {
        // The probe's scratch directory in the run directory itself:
        // `reconcile` empties `worktrees` meanwhile.
        c.look_ahead = Some(crate::workspace::overlay::look_ahead(
            c.main.clone(),
            c.paths.run_dir.clone(),
        ));
    }
    c.sandbox_gate(executor.as_ref())?;
    // Before the gates: a run refused here leaves no work branch behind.
    c.preflight(executor.as_ref())?;
    c.gates(stage_exists)?;
    let activation = match c.environment_phase() {
        Ok(a) => a,
        Err(e) => {
            c.refused(&e);
            return Err(e);
        }
    };
    c.reconcile()?;
    c.stage.status = RunStatus::Running;
    c.stage.extra.remove("reason_code");
    c.stage.extra.remove("message");
    c.save()?;
    let env = c.step_env(activation)?;
    let prepared_in = c.environment_tree.clone();
    let prepared_in = prepared_in.as_deref().unwrap_or(c.main.dir());
    c.import_roots = crate::pythonpath::ImportRoots::find(&env, prepared_in);
    c.node_links = c
        .environment_tree
        .as_deref()
        .and_then(crate::environment::NodeLinks::find);
    if executor.can_execute() || opts.dispatch.is_some() {
        if opts.dispatch.is_none() {
            // Before the baseline, which runs where the steps will.
            c.choose_workspace(executor.as_ref())?;
        }
        c.run_baseline(&env)?;
        c.execute_steps(executor.as_ref(), &env)?;
    } else {
        c.mark_waiting_for_model();
    }
    c.settle_branch()?;
    let coverage = c.coverage_and_follow_ups(executor.as_ref(), &env)?;
    // Dispatched steps ran on the engine's workers, with their executors.
    let executor_name = opts.dispatch.as_ref().map_or(executor.name(), |d| d.name());
    c.finish(executor_name, coverage)
}

/// Runs one step of the run in `opts.target` (a run directory holding its
/// `planning.json`) in `worktree`, on the merge of `commits`, through the same
/// pipeline as a local run: the worker side of a [`StepDispatch`]. Nothing of the
/// run's state is written but the step's trace events, logs and patch; the caller
/// owns `stage.json` and the report. `opts.repo` is the repository `worktree`
/// belongs to, holding every commit of `commits`.
pub fn run_dispatched_step(
    opts: &RunOptions,
    index: usize,
    commits: &[(String, String)],
    worktree: &Path,
) -> Result<StepReport, RunnerError> {
    let paths = RunPaths::locate(&opts.target)?;
    let (mut c, _) = Coordinator::open(opts, &paths)?;
    let step = c
        .planning
        .steps
        .get(index)
        .cloned()
        .ok_or_else(|| RunnerError::InvalidInput {
            reason_code: reason::PLAN_INVALID,
            path: paths.planning.clone(),
            message: format!(
                "$.steps[{index}]: no such step ({} steps)",
                c.planning.steps.len()
            ),
        })?;
    let executor = c.resolve_executor()?;
    if opts.dispatch.is_none()
        && executor.works_in_overlay()
        && opts.config.runner.step_workspace != dandori_config::StepWorkspaceKind::Pool
    {
        // The probe's scratch directory in the run directory itself:
        // `reconcile` empties `worktrees` meanwhile.
        c.look_ahead = Some(crate::workspace::overlay::look_ahead(
            c.main.clone(),
            c.paths.run_dir.clone(),
        ));
    }
    c.sandbox_gate(executor.as_ref())?;
    let env = c.step_env(BTreeMap::new())?;
    let shared = c.step_shared(0, opts.config.planning.revision.max_revisions);
    let cx = shared.context(executor.as_ref(), &env);
    let known = c.ancestry();
    let base = step::StepBase {
        commits,
        main: &c.main,
        known: &known,
    };
    Ok(step::run_step_on_base(&cx, index, &step, &base, worktree))
}

/// The variables holding the configured providers' API keys.
fn provider_keys(config: &Config) -> Vec<String> {
    config
        .llm
        .providers
        .iter()
        .filter_map(|p| p.api_key_env.clone())
        .collect()
}

/// The run's masker: the configured patterns plus the literal values of every
/// secret environment variable (`dandori_trace::mask::is_secret_env`) and of every
/// provider's `api_key_env`.
fn run_masker(opts: &RunOptions) -> Masker {
    masker_for(&opts.config, &opts.base_env)
}

/// The masker of a run with `config` whose children get `base_env`: the secret
/// variables of `base_env`, the provider keys, and the secrets the config itself
/// holds (provider header values, secret-named `env` of MCP servers and `set` of
/// the child environment) — each also in its encoded forms.
pub fn masker_for(config: &dandori_config::Config, base_env: &BTreeMap<String, String>) -> Masker {
    let logging = &config.planning.logging;
    let provider_keys = config
        .llm
        .providers
        .iter()
        .filter_map(|p| p.api_key_env.as_ref())
        .filter_map(|var| base_env.get(var).cloned());
    let headers = config
        .llm
        .providers
        .iter()
        .flat_map(|p| p.headers.values().cloned());
    let secret_pairs = config
        .mcp
        .servers
        .iter()
        .flat_map(|s| s.env.iter())
        .chain(config.shell_environment_policy.set.iter())
        .filter(|(k, v)| dandori_trace::mask::is_secret_env(k, v))
        .map(|(_, v)| v.clone());
    Masker::new(
        logging.mask_sensitive_data,
        logging.sensitive_patterns.clone(),
    )
    .with_env_secrets(base_env)
    .with_literal_secrets(provider_keys.chain(headers).chain(secret_pairs))
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
            message: format!("$.steps: step ids {ids:?} do not match planning.json {want:?}"),
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
    pub(super) fn emit(&self, event: &str, data: Value) {
        let _ = self.trace.emit(event, data);
    }

    pub(super) fn progress(&self, line: &str) {
        if let Some(p) = &self.opts.progress {
            p(line);
        }
    }

    /// Writes `stage.json` atomically and durably.
    pub(super) fn save(&mut self) -> Result<(), RunnerError> {
        self.write_stage(true)
    }

    /// Writes `stage.json` atomically without syncing it to disk: the saves of the
    /// scheduling rounds. A kill at any moment leaves the previous or the new file,
    /// and the branch's commits are the proof `reconcile` trusts anyway; the save
    /// after the last round is durable ([`Coordinator::save`]).
    pub(super) fn save_round(&mut self) -> Result<(), RunnerError> {
        self.write_stage(false)
    }

    fn write_stage(&mut self, durable: bool) -> Result<(), RunnerError> {
        self.stage.updated_at = now_rfc3339();
        self.stage.extra.insert(
            "timings".to_string(),
            serde_json::to_value(&self.timings).unwrap_or(Value::Null),
        );
        // Through the run's masker like every artefact: a step's command or a
        // message may carry a secret (a plan's unit command with a token in it).
        let serialise_err = |e: serde_json::Error| {
            dandori_fs::FsError::new(
                "serialising JSON for",
                &self.paths.stage,
                std::io::Error::other(e),
            )
        };
        let value = serde_json::to_value(&self.stage).map_err(serialise_err)?;
        let mut text = serde_json::to_string_pretty(&self.masker.mask_strings(value))
            .map_err(serialise_err)?;
        text.push('\n');
        if durable {
            dandori_fs::write_atomic(&self.paths.stage, text)?;
        } else {
            dandori_fs::write_atomic_unsynced(&self.paths.stage, text)?;
        }
        Ok(())
    }

    pub(super) fn load_timings(&mut self) {
        if let Some(t) = self.stage.extra.get("timings")
            && let Ok(t) = serde_json::from_value(t.clone())
        {
            self.timings = t;
        }
    }

    pub(super) fn resolve_executor(&mut self) -> Result<Arc<dyn Executor>, RunnerError> {
        if let Some(e) = &self.opts.executor_override {
            return Ok(e.clone());
        }
        // stage.json's record, else the one written before the environment was
        // set up (a run killed there has no stage.json yet).
        let stored: Option<ExecutorChoice> = self
            .stage
            .extra
            .get("executor")
            .cloned()
            .or_else(|| {
                dandori_fs::read_to_string(self.paths.run_dir.join(CHOICES_FILE))
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
            })
            .and_then(|v| serde_json::from_value(v).ok());
        let cfg = &self.opts.config;
        let stored_model = stored.as_ref().and_then(|c| c.agent_model.clone());
        let mut choice = match (&self.opts.executor, stored) {
            (Some(c), _) => c.clone(),
            (None, Some(c)) => c,
            (None, None) => match (&cfg.runner.agent_cmd, &cfg.llm.default_provider) {
                _ if cfg.runner.agent.is_some() => ExecutorChoice {
                    kind: ExecutorKind::Command,
                    agent_cmd: None,
                    agent: cfg.runner.agent,
                    agent_model: None,
                },
                (Some(t), _) => ExecutorChoice {
                    kind: ExecutorKind::Command,
                    agent_cmd: Some(t.clone()),
                    agent: None,
                    agent_model: None,
                },
                (None, Some(_)) => ExecutorChoice {
                    kind: ExecutorKind::Llm,
                    agent_cmd: None,
                    agent: None,
                    agent_model: None,
                },
                (None, None) => ExecutorChoice {
                    kind: ExecutorKind::None,
                    agent_cmd: None,
                    agent: None,
                    agent_model: None,
                },
            },
        };
        choice.agent_model = cfg.runner.agent_model.clone().or(stored_model);
        let executor: Arc<dyn Executor> = match choice.kind {
            ExecutorKind::None => Arc::new(NoneExecutor),
            ExecutorKind::Command => {
                // The agent gets what the user listed in `runner.agent_env`
                // (its own credential) on top of the step environment: an
                // allow-list, never whatever else happened to be set. A preset
                // adds its own credential and base URL variables.
                let preset = choice.agent.or(if choice.agent_cmd.is_some() {
                    None
                } else {
                    cfg.runner.agent
                });
                let names: Vec<&str> = cfg
                    .runner
                    .agent_env
                    .iter()
                    .map(String::as_str)
                    .chain(preset.into_iter().flat_map(|p| {
                        crate::executor::agent_preset::info(p)
                            .credentials
                            .iter()
                            .copied()
                    }))
                    .collect();
                let secrets = names
                    .into_iter()
                    .filter_map(|k| {
                        self.opts
                            .base_env
                            .get(k)
                            .map(|v| (k.to_string(), v.clone()))
                    })
                    .collect();
                let template = match (preset, choice.agent_cmd.clone()) {
                    (Some(p), _) => crate::executor::agent_preset::info(p).program.to_string(),
                    (None, t) => t.or_else(|| cfg.runner.agent_cmd.clone()).ok_or_else(|| {
                        RunnerError::Executor(
                            "--executor command needs --agent, --agent-cmd, runner.agent or runner.agent_cmd"
                                .to_string(),
                        )
                    })?,
                };
                let command = CommandExecutor::new(&template)?
                    .with_sandbox(self.sandbox.clone())
                    .with_secrets(secrets)
                    .with_state(cfg.runner.agent_state.clone());
                match preset {
                    Some(p) => Arc::new(
                        AgentExecutor::new(p, choice.agent_model.clone(), command)
                            .with_progress(self.opts.progress.clone())
                            .with_caller_env(&self.opts.base_env),
                    ),
                    None => Arc::new(command),
                }
            }
            ExecutorKind::Llm => Arc::new(
                LlmExecutor::from_config(cfg, &self.opts.base_env, self.opts.approve)?
                    .with_sandbox(self.sandbox.clone()),
            ),
        };
        let mut value = serde_json::to_value(&choice).unwrap_or(Value::Null);
        // The sandbox mode too: a plain `dandori resume` runs under the same one.
        if let (Some(o), Ok(mode)) = (
            value.as_object_mut(),
            serde_json::to_value(cfg.sandbox.mode),
        ) {
            o.insert("sandbox".to_string(), mode);
        }
        // Written now, before anything slow (the environment, the baseline): a
        // plain `resume` after a kill there runs with the same choices.
        dandori_fs::write_atomic(
            self.paths.run_dir.join(CHOICES_FILE),
            serde_json::to_string_pretty(&value).unwrap_or_default() + "\n",
        )?;
        self.stage.extra.insert("executor".to_string(), value);
        Ok(executor)
    }

    /// What the steps of this run share, apart from the coordinator so that it can
    /// keep updating its own state while steps run. `revisions` starts the run-wide
    /// revision counter; `max_revisions` is 0 where a step may not revise the plan.
    pub(super) fn step_shared(&self, revisions: u32, max_revisions: u32) -> StepShared {
        let rcfg = &self.opts.config.planning;
        StepShared {
            planning: self.planning.clone(),
            paths: self.paths.clone(),
            masker: self.masker.clone(),
            trace: self.trace.clone(),
            actions: AtomicU32::new(0),
            revisions: AtomicU32::new(revisions),
            trigger_interval: rcfg.reflection.trigger_interval,
            reflection_enabled: rcfg.reflection.enabled,
            max_revisions,
            budgets: self.opts.config.llm.budgets.clone(),
            sandbox: self.sandbox.clone(),
            command_policy: self.command_policy.clone(),
            git_guard: self.git_guard.clone(),
            environment_summary: self.environment_summary.clone(),
            import_roots: self.import_roots.clone(),
            node_links: self.node_links.clone(),
            baseline: self.baseline(),
            progress: self.opts.progress.clone(),
        }
    }

    /// The baseline recorded in `stage.json` (`baseline`), if it ran.
    pub(super) fn baseline(&self) -> Option<crate::evidence::Baseline> {
        self.stage
            .extra
            .get("baseline")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
    }

    /// The sandbox gate: an executor that would run commands needs a sandbox
    /// unless `sandbox.mode` is `off` (`SANDBOX_UNAVAILABLE`).
    fn sandbox_gate(&self, executor: &dyn Executor) -> Result<(), RunnerError> {
        match self.sandbox.refusal() {
            Some(reason) if executor.can_execute() => Err(RunnerError::Gate {
                gate: "sandbox",
                reason_code: reason::SANDBOX_UNAVAILABLE,
                message: reason,
            }),
            _ => Ok(()),
        }
    }

    pub(super) fn update_index(&mut self) {
        self.stage.current_step_index = self
            .stage
            .steps
            .iter()
            .position(|s| s.status != StepStatus::Done)
            .unwrap_or(self.stage.steps.len());
    }

    /// A gate refused the run before its steps: `stage.json` (and so `status`
    /// and `runs`) says so, with the gate's reason code, instead of `planned`.
    pub(super) fn refused(&mut self, e: &RunnerError) {
        self.stage.status = RunStatus::Failed;
        self.stage
            .extra
            .insert("reason_code".to_string(), json!(e.reason_code()));
        self.stage
            .extra
            .insert("message".to_string(), json!(e.to_string()));
        if let Err(w) = self.save() {
            self.progress(&format!("stage.json could not be written: {w}"));
        }
    }

    pub(super) fn stop(&mut self, code: &'static str, message: String) {
        self.emit(
            events::EARLY_TERMINATION,
            json!({"reason_code": code, "message": message}),
        );
        self.progress(&format!("stopping: {message}"));
        self.stop_reason = Some((code, message));
    }

    /// Milliseconds since the run (first invocation) started, for the Gantt chart.
    pub(super) fn run_ms(&self) -> u64 {
        let created = chrono::DateTime::parse_from_rfc3339(&self.stage.created_at)
            .map(|t| t.timestamp_millis())
            .unwrap_or(0);
        (chrono::Utc::now().timestamp_millis() - created).max(0) as u64
    }
}

/// Owned copies of what [`StepContext`] borrows, built once per batch of steps.
struct StepShared {
    planning: Planning,
    paths: RunPaths,
    masker: Masker,
    trace: Arc<TraceWriter>,
    actions: AtomicU32,
    revisions: AtomicU32,
    trigger_interval: Option<u32>,
    reflection_enabled: bool,
    max_revisions: u32,
    budgets: dandori_config::TokenBudgets,
    sandbox: dandori_exec::Sandbox,
    command_policy: Arc<dandori_exec::CommandPolicy>,
    git_guard: Option<Arc<dandori_exec::git::ConfigGuard>>,
    environment_summary: Option<String>,
    import_roots: crate::pythonpath::ImportRoots,
    node_links: Option<crate::environment::NodeLinks>,
    baseline: Option<crate::evidence::Baseline>,
    progress: Option<Progress>,
}

impl StepShared {
    fn context<'a>(
        &'a self,
        executor: &'a dyn Executor,
        env: &'a BTreeMap<String, String>,
    ) -> StepContext<'a> {
        StepContext {
            planning: &self.planning,
            paths: &self.paths,
            executor,
            trace: &self.trace,
            env,
            run_id: &self.planning.run_id,
            trigger_interval: self.trigger_interval,
            reflection_enabled: self.reflection_enabled,
            actions: &self.actions,
            revisions: &self.revisions,
            max_revisions: self.max_revisions,
            budgets: &self.budgets,
            masker: &self.masker,
            sandbox: &self.sandbox,
            command_policy: &self.command_policy,
            git_guard: self.git_guard.as_deref(),
            environment_summary: self.environment_summary.as_deref(),
            import_roots: &self.import_roots,
            node_links: self.node_links.as_ref(),
            baseline: self.baseline.as_ref(),
            progress: self.progress.as_ref(),
        }
    }
}
