//! `dandori run PLAN_OR_RUN_DIR` and `dandori resume RUN_DIR`: thin adapters over
//! `dandori_runner::run`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use dandori_runner::{ExecutorChoice, ExecutorKind, RunOptions};

use crate::cli::{ExecutorKind as CliExecutor, ResumeArgs, RunArgs};
use crate::output;

pub fn run(config: Option<&Path>, sets: &[String], args: RunArgs) -> anyhow::Result<ExitCode> {
    let executor = args.executor.map(|k| ExecutorChoice {
        kind: kind(k),
        agent_cmd: args.agent_cmd.clone(),
    });
    let executor = match (executor, &args.agent_cmd) {
        (None, Some(t)) => Some(ExecutorChoice {
            kind: ExecutorKind::Command,
            agent_cmd: Some(t.clone()),
        }),
        (e, _) => e,
    };
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
        },
    )
}

pub fn resume(
    config: Option<&Path>,
    sets: &[String],
    args: ResumeArgs,
) -> anyhow::Result<ExitCode> {
    let executor = match (args.executor, &args.agent_cmd) {
        (Some(k), t) => Some(ExecutorChoice {
            kind: kind(k),
            agent_cmd: t.clone(),
        }),
        (None, Some(t)) => Some(ExecutorChoice {
            kind: ExecutorKind::Command,
            agent_cmd: Some(t.clone()),
        }),
        (None, None) => None,
    };
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
        },
    )
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
}

fn execute(
    config: Option<&Path>,
    sets: &[String],
    inv: Invocation<'_>,
) -> anyhow::Result<ExitCode> {
    let Invocation {
        target,
        repo,
        executor,
        resume,
        approve,
        json,
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
    let reporter = super::forge::RunReporter::open(target, &config, &base_env);
    let progress = super::forge::with_reporter(
        (!json)
            .then(|| -> dandori_runner::Progress { Arc::new(|line: &str| output::progress(line)) }),
        reporter.clone(),
    );
    let environment: Arc<dyn dandori_runner::environment::EnvironmentPhase> = Arc::new({
        let child_env = super::env::child_env(&config);
        let sandbox = super::env::detect_sandbox(&config, &child_env);
        super::env::EnvPhase {
            config: config.planning.environment_setup.clone(),
            base_env: child_env,
            sandbox: Some(sandbox),
        }
    });
    let opts = RunOptions {
        target: target.to_path_buf(),
        repo: repo.to_path_buf(),
        config,
        executor,
        executor_override: None,
        approve,
        resume,
        base_env,
        environment: Some(environment),
        progress,
    };
    match dandori_runner::run(&opts) {
        Ok(outcome) => {
            let c = &outcome.completion;
            if let Some(r) = &reporter {
                r.finish(&serde_json::to_value(c).unwrap_or_default());
            }
            if json {
                output::json(c);
            } else {
                step_lines(c, "");
                output::line(&format!(
                    "{}: {} (report: {})",
                    word(&c.status),
                    c.comment,
                    outcome.run_dir.join("report.md").display()
                ));
            }
            Ok(ExitCode::from(c.exit_code))
        }
        Err(e) => {
            let code = dandori_runner::exit_code_for_error(&e);
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
    let ids = dandori_fs::read_to_string(&paths.planning)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .map(|v| {
            let id = |k: &str| v.get(k).and_then(|x| x.as_str()).unwrap_or("").to_string();
            (id("run_id"), id("request_id"))
        })
        .unwrap_or_default();
    if let Ok(trace) = dandori_trace::TraceWriter::open(
        &paths.trace,
        ids.0,
        ids.1,
        dandori_trace::Masker::default(),
    ) {
        let _ = trace.emit(
            dandori_trace::events::CONFIG_WARNING,
            serde_json::json!({ "config_warnings": warnings }),
        );
    }
}
