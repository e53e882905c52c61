//! One module per subcommand, each a thin adapter over the library crates.

mod cache;
mod ci;
mod eval;
mod forge;
mod locate;
mod model_progress;
mod plan;
mod plan_llm;

use std::process::ExitCode;

use crate::cli::{Cli, Command, EvalCommand};

mod demo;
mod docs;
mod env;
mod graph;
mod mcp;
pub mod metrics;
mod obs;
mod policy;
mod repl;
mod resume;
mod revise;
mod run;
mod runs;
mod sandbox;
mod schema;
mod trust;
mod validate;
#[cfg(feature = "restate")]
mod worker;

use std::path::Path;

/// Loads the configuration for a command: defaults < config file (`--config`, else
/// `dandori.yaml` / `config.yaml` / `.dandori/config.yaml` in `repo`) < the seed
/// environment variables < `-c key=value`. Warnings (a broken file, a bad
/// variable) go to stderr; the command goes on with the previous layer.
pub fn load_config(
    config: Option<&Path>,
    sets: &[String],
    repo: &Path,
    env: &std::collections::BTreeMap<String, String>,
) -> anyhow::Result<dandori_config::Loaded> {
    load_config_for(config, sets, repo, env, None)
}

/// [`load_config`] with the `planning.task_specific` entry of `task_type` merged
/// (seed 000 §9.3).
pub fn load_config_for(
    config: Option<&Path>,
    sets: &[String],
    repo: &Path,
    env: &std::collections::BTreeMap<String, String>,
    task_type: Option<String>,
) -> anyhow::Result<dandori_config::Loaded> {
    let loaded = dandori_config::load(&dandori_config::LoadOptions {
        repo: repo.to_path_buf(),
        config_path: config.map(Path::to_path_buf),
        task_planning_path: None,
        env: env.clone(),
        overrides: sets.to_vec(),
        task_type,
        user_config_path: None,
    })
    .map_err(|e| anyhow::anyhow!("CONFIG_INVALID: {e}"))?;
    obs::configure(&loaded.config);
    for w in &loaded.warnings {
        crate::output::progress(&format!("warning: {w}"));
    }
    Ok(loaded)
}

/// Reads the planning.json a path argument names: the file itself, or the
/// `planning.json` of a run directory. Errors carry a reason code and say what to
/// pass instead.
pub fn read_planning(path: &Path) -> anyhow::Result<(std::path::PathBuf, Vec<u8>)> {
    let file = if path.is_dir() {
        let f = path.join("planning.json");
        if !f.is_file() {
            anyhow::bail!(
                "{}: {} is a directory without a planning.json; pass a planning.json or a run directory (.dandori/runs/<request-id>/<run-id>)",
                dandori_report::reason::RUN_DIR_INVALID,
                path.display()
            );
        }
        f
    } else {
        path.to_path_buf()
    };
    // Hostile input: a file far larger than any plan is refused before it is read
    // (dandori_plan::validation::bounds bounds what is parsed).
    let max = dandori_plan::validation::bounds::MAX_PLAN_BYTES;
    if let Ok(meta) = std::fs::metadata(&file)
        && meta.len() > max as u64
    {
        anyhow::bail!(
            "{}: {} is {} bytes, over the limit of {max} for a plan; not read",
            dandori_plan::reason_codes::PLAN_TOO_LARGE,
            file.display(),
            meta.len()
        );
    }
    match dandori_fs::read(&file) {
        Ok(bytes) => Ok((file, bytes)),
        Err(e) if e.is_not_found() => anyhow::bail!(
            "{}: {} does not exist (paths are read from the current directory, {}); pass a planning.json or a run directory",
            dandori_report::reason::FILE_NOT_FOUND,
            file.display(),
            std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_else(|_| "unknown".to_string())
        ),
        Err(e) => anyhow::bail!("{}: {e}", dandori_report::reason::IO_ERROR),
    }
}

/// The error of a command that needs the Restate worker (`worker`, `run --engine
/// restate`) in a build without it (cargo feature `restate`, off in a plain
/// `cargo install`; the npm and Python packages have it).
#[cfg(not(feature = "restate"))]
pub fn restate_not_built(what: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "RESTATE_NOT_BUILT: {what} needs the Restate worker, which this dandori was built without: install the npm or Python package, or `cargo install --path crates/dandori-cli --locked --features restate` (docs/distributed.md)"
    )
}

/// Whether the run's `stage.json` records the Restate engine (a distributed run).
#[cfg(not(feature = "restate"))]
pub fn records_restate(target: &Path) -> bool {
    dandori_runner::plan::RunPaths::locate(target)
        .ok()
        .and_then(|p| dandori_fs::read_to_string(&p.stage).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("engine").is_some_and(|e| !e.is_null()))
}

pub fn dispatch(mut cli: Cli) -> anyhow::Result<ExitCode> {
    // `--sandbox MODE` is `-c sandbox.mode=MODE`, applied last.
    if let Some(mode) = cli.sandbox
        && let Some(name) = serde_json::to_value(mode)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
    {
        cli.set.push(format!("sandbox.mode={name}"));
    }
    // A mistyped `-c` is refused by every command, also by those that read no
    // configuration (validate, graph, status, locate, trust --list, …).
    dandori_config::check_overrides(&cli.set)
        .map_err(|e| anyhow::anyhow!("CONFIG_INVALID: {e}"))?;
    // The human log and the OpenTelemetry export of what this command traces.
    let _obs = obs::Session::start();
    // One arm per command, separated so that each command's owner edits one line.
    match cli.command {
        Command::Plan(args) => plan::run(args, cli.config.as_deref(), &cli.set),
        // --
        Command::Validate(args) => validate::validate(&args),
        // --
        Command::Graph(args) => graph::graph(&args),
        // --
        Command::Schema(args) => schema::schema(&args),
        // --
        Command::Eval(EvalCommand::Localize(args)) => eval::localize(&args),
        // --
        Command::Locate(args) => locate::locate(&args),
        // --
        Command::Env(cmd) => env::env(cli.config.as_deref(), &cli.set, cmd),
        // --
        Command::Run(args) => run::run(cli.config.as_deref(), &cli.set, args),
        // --
        Command::Resume(args) => resume::resume(cli.config.as_deref(), &cli.set, args),
        // --
        #[cfg(feature = "restate")]
        Command::Worker(args) => worker::worker(cli.config.as_deref(), &cli.set, &args),
        #[cfg(not(feature = "restate"))]
        Command::Worker(_) => Err(restate_not_built("dandori worker")),
        // --
        Command::Demo(args) => demo::demo(&args),
        // --
        Command::Completions(args) => docs::completions(&args),
        // --
        Command::Man(args) => docs::man(&args),
        // --
        Command::Mcp(args) => mcp::mcp(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Runs(args) => runs::runs(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Status(args) => runs::status(&args),
        // --
        Command::Report(args) => runs::report(&args),
        // --
        Command::Trace(args) => runs::trace(&args),
        // --
        Command::Trust(args) => trust::trust(&args),
        // --
        Command::Metrics(args) => metrics::metrics(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Policy(cmd) => policy::policy(cli.config.as_deref(), &cli.set, cmd),
        Command::Sandbox(cmd) => sandbox::sandbox(cli.config.as_deref(), &cli.set, cmd),
        // --
        Command::Repl(args) => repl::repl(cli.config.as_deref(), &cli.set, &args),
        Command::Revise(args) => revise::revise(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Approve(args) => revise::approve(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Ci(args) => ci::ci(cli.config.as_deref(), &cli.set, &args),
        // --
        Command::Init(cmd) => ci::init(cli.config.as_deref(), &cli.set, &cmd),
        // --
        Command::Cache(cmd) => cache::cache(cli.config.as_deref(), &cli.set, cmd),
    }
}
