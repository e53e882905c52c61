//! `dandori run PLAN_OR_RUN_DIR` and `dandori resume RUN_DIR`: thin adapters over
//! `dandori_runner::run`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use dandori_runner::{ExecutorChoice, ExecutorKind, RunOptions};

use crate::cli::{AgentCli, Engine, EngineArgs, ExecutorKind as CliExecutor, ResumeArgs, RunArgs};
use crate::output;

pub fn run(config: Option<&Path>, sets: &[String], args: RunArgs) -> anyhow::Result<ExitCode> {
    let executor = executor_choice(args.executor, args.agent_cmd.as_deref(), args.agent);
    execute(
        config,
        sets,
        Invocation {
            repo: &args
                .repo
                .clone()
                .unwrap_or_else(|| dandori_runner::plan::default_repo(&args.target)),
            target: &args.target,
            executor,
            resume: false,
            approve: args.approve,
            json: args.json,
            open_pr: args.open_pr,
            engine: &args.engine,
        },
    )
}

pub fn resume(
    config: Option<&Path>,
    sets: &[String],
    args: ResumeArgs,
) -> anyhow::Result<ExitCode> {
    let executor = executor_choice(args.executor, args.agent_cmd.as_deref(), args.agent);
    // The sandbox mode the run started with, unless this command names one.
    let mut sets = sets.to_vec();
    if !sets.iter().any(|s| s.starts_with("sandbox.mode="))
        && let Some(mode) = recorded_sandbox(&args.run_dir)
    {
        sets.insert(0, format!("sandbox.mode={mode}"));
    }
    let sets = &sets[..];
    execute(
        config,
        sets,
        Invocation {
            repo: &args
                .repo
                .clone()
                .unwrap_or_else(|| dandori_runner::plan::default_repo(&args.run_dir)),
            target: &args.run_dir,
            executor,
            resume: true,
            approve: args.approve,
            json: args.json,
            open_pr: args.open_pr,
            engine: &args.engine,
        },
    )
}

/// The sandbox mode recorded by the run's first start (`executor.json`).
fn recorded_sandbox(run_dir: &Path) -> Option<String> {
    let text =
        dandori_fs::read_to_string(run_dir.join(dandori_runner::coordinator::CHOICES_FILE)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("sandbox")?.as_str().map(str::to_string)
}

/// `--executor`, `--agent-cmd` and `--agent` of `run`, `resume` and `worker`: an
/// agent command or preset alone means the command executor; none of them means
/// the recorded or configured one.
pub(crate) fn executor_choice(
    executor: Option<CliExecutor>,
    agent_cmd: Option<&str>,
    agent: Option<AgentCli>,
) -> Option<ExecutorChoice> {
    let agent = agent.map(AgentCli::preset);
    match (executor, agent_cmd, agent) {
        (Some(k), t, a) => Some(ExecutorChoice {
            kind: kind(k),
            agent_cmd: t.map(str::to_string),
            agent: a,
            agent_model: None,
        }),
        (None, None, None) => None,
        (None, t, a) => Some(ExecutorChoice {
            kind: ExecutorKind::Command,
            agent_cmd: t.map(str::to_string),
            agent: a,
            agent_model: None,
        }),
    }
}

fn kind(k: CliExecutor) -> ExecutorKind {
    match k {
        CliExecutor::Llm => ExecutorKind::Llm,
        CliExecutor::Command => ExecutorKind::Command,
        CliExecutor::None => ExecutorKind::None,
    }
}

/// What `run` and `resume` share.
struct Invocation<'a> {
    target: &'a Path,
    repo: &'a Path,
    executor: Option<ExecutorChoice>,
    resume: bool,
    approve: bool,
    json: bool,
    open_pr: bool,
    engine: &'a EngineArgs,
}

fn execute(
    config: Option<&Path>,
    sets: &[String],
    inv: Invocation<'_>,
) -> anyhow::Result<ExitCode> {
    super::model_progress::install(inv.json);
    let Invocation {
        target,
        repo,
        executor,
        resume,
        approve,
        json,
        open_pr,
        engine,
    } = inv;
    let base_env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = super::load_config(config, sets, repo, &base_env)?;
    record_config_warnings(target, &loaded.warnings);
    let config = loaded.config;
    // A run planned from an issue reports there; a revision awaiting approval
    // holds the run back.
    if let Some(code) = super::forge::refuse_pending(target) {
        return Ok(code);
    }
    // --open-pr: a run that cannot publish is refused before any slow work.
    let publisher = if open_pr {
        match super::forge::publisher(target, repo, &config, &base_env, json) {
            Ok(p) => Some(p),
            Err(code) => return Ok(code),
        }
    } else {
        None
    };
    let reporter = super::forge::reporter(target, &config, &base_env);
    let progress = super::forge::with_reporter(
        (!json)
            .then(|| -> dandori_runner::Progress { Arc::new(|line: &str| output::progress(line)) }),
        reporter.clone(),
    );
    let environment: Arc<dyn dandori_runner::environment::EnvironmentPhase> =
        Arc::new(super::env::EnvPhase::new(&config, &base_env));
    let (dispatch, stop_engine) = engine_dispatch(engine, target, repo, &config, progress.clone())?;
    let opts = RunOptions {
        target: target.to_path_buf(),
        repo: repo.to_path_buf(),
        config,
        executor,
        executor_override: None,
        approve,
        resume,
        // Package managers dandori bootstraps during the environment phase
        // (pnpm, yarn, uv) are on the steps' PATH, as they are for setup.
        base_env: dandori_env::tools::with_tools_on_path(&base_env),
        environment: Some(environment),
        progress,
        dispatch,
    };
    let result = dandori_runner::run(&opts);
    if let Some(stop) = stop_engine {
        // The run's workflow starts no more steps once its coordinator ended.
        stop(match &result {
            Ok(o) => &o.completion.comment,
            Err(_) => "the coordinator stopped on an error",
        });
    }
    let code = report_outcome(result, reporter.as_deref(), publisher.as_ref(), json);
    // The pool worktrees' files are deleted in the background while the result
    // is printed; the process exits once they are gone.
    dandori_runner::git::wait_for_removals();
    code
}

fn report_outcome(
    result: Result<dandori_runner::RunOutcome, dandori_runner::RunnerError>,
    reporter: Option<&dandori_forge::run_hook::RunReporter>,
    publisher: Option<&dandori_forge::run_hook::Publisher>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    match result {
        Ok(outcome) => {
            let c = &outcome.completion;
            let mut value = serde_json::to_value(c).unwrap_or_default();
            // The pull request first, so the completion comment can link it.
            let mut exit = c.exit_code;
            if let Some(p) = publisher {
                let (pr, ok) = super::forge::publish(p, &value);
                if !ok && exit == 0 {
                    exit = 1;
                }
                if let Some(o) = value.as_object_mut() {
                    o.insert("pull_request".to_string(), pr);
                }
            }
            if let Some(r) = reporter {
                r.finish(&value);
            }
            if json {
                output::json(&value);
            } else {
                step_lines(c, "");
                output::line(&format!(
                    "{}: {} (report: {})",
                    word(&c.status),
                    c.comment,
                    outcome.run_dir.join("report.md").display()
                ));
            }
            Ok(ExitCode::from(exit))
        }
        Err(e) => {
            let code = dandori_runner::exit_code_for_error(&e);
            // A run from an issue that stops before its steps (an environment
            // that cannot be set up, a gate) says so on the issue.
            if let Some(r) = reporter {
                r.finish(&serde_json::json!({
                    "status": "failed",
                    "comment": format!("{}: {e}", e.reason_code()),
                    "summary": {"goal_achieved": false, "tasks_completed": 0, "tasks_failed": 0,
                                "reason": format!("{}: {e}", e.reason_code())},
                }));
            }
            if json {
                output::json(&serde_json::json!({
                    "status": if code == dandori_runner::exit::GATE_REFUSED { "gate_refused" } else { "error" },
                    "reason_code": e.reason_code(),
                    "message": e.to_string(),
                    "exit_code": code,
                }));
            } else {
                output::error(&e.to_string());
            }
            Ok(ExitCode::from(code))
        }
    }
}

/// How a run's steps are dispatched to another engine, and how that engine is
/// told the run ended: both `None` for the local engine.
type EngineDispatch = (
    Option<Arc<dyn dandori_runner::dispatch::StepDispatch>>,
    Option<Box<dyn FnOnce(&str)>>,
);

#[cfg(feature = "restate")]
fn engine_dispatch(
    args: &EngineArgs,
    target: &Path,
    repo: &Path,
    config: &dandori_config::Config,
    progress: Option<dandori_runner::Progress>,
) -> anyhow::Result<EngineDispatch> {
    Ok(
        match restate_engine(args, target, repo, config, progress)? {
            Some(engine) => (
                Some(engine.clone() as Arc<dyn dandori_runner::dispatch::StepDispatch>),
                Some(Box::new(move |why: &str| engine.stop(why))),
            ),
            None => (None, None),
        },
    )
}

/// Without the Restate worker built in, a run asked (or recorded) to use Restate
/// is refused with how to get a build that has it.
#[cfg(not(feature = "restate"))]
fn engine_dispatch(
    args: &EngineArgs,
    target: &Path,
    _repo: &Path,
    _config: &dandori_config::Config,
    _progress: Option<dandori_runner::Progress>,
) -> anyhow::Result<EngineDispatch> {
    match (args.engine, super::records_restate(target)) {
        (Some(Engine::Local), _) | (None, false) => Ok((None, None)),
        _ => Err(super::restate_not_built("run --engine restate")),
    }
}

/// The engine steps run on: `--engine`, else the one `stage.json` records, else
/// local (`None`). Flags override what is recorded.
#[cfg(feature = "restate")]
fn restate_engine(
    args: &EngineArgs,
    target: &Path,
    repo: &Path,
    config: &dandori_config::Config,
    progress: Option<dandori_runner::Progress>,
) -> anyhow::Result<Option<Arc<dandori_distributed::RestateEngine>>> {
    let recorded: Option<dandori_distributed::EngineOptions> =
        dandori_runner::plan::RunPaths::locate(target)
            .ok()
            .and_then(|p| dandori_fs::read_to_string(&p.stage).ok())
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| serde_json::from_value(v.get("engine")?.clone()).ok());
    let recorded = match (args.engine, recorded) {
        (Some(Engine::Local), _) | (None, None) => return Ok(None),
        (_, r) => r,
    };
    let remote = match args
        .remote
        .clone()
        .or_else(|| recorded.as_ref().map(|r| r.remote.clone()))
    {
        Some(r) => r,
        None => {
            let (ok, out, _) = dandori_runner::git::Git::new(repo)
                .output(&["remote", "get-url", "origin"])
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            if !ok || out.trim().is_empty() {
                anyhow::bail!(
                    "--engine restate needs a git remote the workers can reach: pass --remote URL (the repository has no `origin`)"
                );
            }
            out.trim().to_string()
        }
    };
    // A local path is made absolute: workers run in other directories.
    let remote = match dandori_fs::canonicalize(Path::new(&remote)) {
        Ok(p) if !remote.contains("://") => p.to_string_lossy().into_owned(),
        _ => remote,
    };
    let opts = dandori_distributed::EngineOptions {
        restate_url: args
            .restate_url
            .clone()
            .or_else(|| recorded.as_ref().map(|r| r.restate_url.clone()))
            .unwrap_or_else(|| "http://127.0.0.1:8080".to_string()),
        admin_url: args
            .restate_admin_url
            .clone()
            .or_else(|| recorded.as_ref().and_then(|r| r.admin_url.clone())),
        remote,
        register: args.register_worker.clone(),
        workflow: recorded.as_ref().and_then(|r| r.workflow.clone()),
    };
    let limits = dandori_distributed::engine::Limits {
        max_parallel_workers: config.runner.max_parallel_workers,
    };
    let engine = dandori_distributed::RestateEngine::new(opts, target, limits, progress)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(Some(Arc::new(engine)))
}

/// One line per step: `S01  done        title  [REASON]`.
pub(crate) fn step_lines(c: &dandori_runner::Completion, indent: &str) {
    for s in &c.steps {
        output::line(&format!(
            "{indent}{}  {:<11} {}{}",
            s.step_id,
            word(&s.status),
            s.title,
            s.reason_code
                .as_deref()
                .map(|r| format!("  [{r}]"))
                .unwrap_or_default()
        ));
    }
}

/// A status as the word it serialises to (`done`, `needs_input`, …).
pub(crate) fn word<T: serde::Serialize>(status: &T) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The trace of a run, appended to (masked as every trace), stamped with the
/// plan's run and request ids. None when it cannot be opened (best effort).
pub(crate) fn open_run_trace(
    planning: &Path,
    trace: &Path,
    masker: dandori_trace::Masker,
) -> Option<dandori_trace::TraceWriter> {
    let ids = dandori_fs::read_to_string(planning)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| {
            let id = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            (id("run_id"), id("request_id"))
        })
        .unwrap_or_default();
    dandori_trace::TraceWriter::open(trace, ids.0, ids.1, masker).ok()
}

/// Config warnings (ignored untrusted keys among them) go to the run's trace as
/// well as stderr, so the audit record says what the repository tried to set.
/// Best effort: a target that is no run directory is reported by the runner itself.
fn record_config_warnings(target: &Path, warnings: &[dandori_config::ConfigWarning]) {
    if warnings.is_empty() {
        return;
    }
    let Ok(paths) = dandori_runner::plan::RunPaths::locate(target) else {
        return;
    };
    if let Some(trace) = open_run_trace(
        &paths.planning,
        &paths.trace,
        dandori_trace::Masker::default(),
    ) {
        let _ = trace.emit(
            dandori_trace::events::CONFIG_WARNING,
            serde_json::json!({ "config_warnings": warnings }),
        );
    }
}
