//! One module per subcommand, each a thin adapter over the library crates.

mod eval;
mod locate;
mod plan;
mod plan_llm;

use std::process::ExitCode;

use crate::cli::{Cli, Command, EvalCommand};

mod env;
mod graph;
mod resume;
mod run;
mod schema;
mod validate;

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
    let loaded = dandori_config::load(&dandori_config::LoadOptions {
        repo: repo.to_path_buf(),
        config_path: config.map(Path::to_path_buf),
        task_planning_path: None,
        env: env.clone(),
        overrides: sets.to_vec(),
        task_type: None,
    })
    .map_err(|e| anyhow::anyhow!("CONFIG_INVALID: {e}"))?;
    for w in &loaded.warnings {
        crate::output::progress(&format!("warning: {w}"));
    }
    Ok(loaded)
}

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
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
    }
}
