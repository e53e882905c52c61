//! One module per subcommand, each a thin adapter over the library crates.

mod plan;
mod plan_llm;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

mod env;
mod resume;
mod run;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    // One arm per command, separated so that each command's owner edits one line.
    match cli.command {
        Command::Plan(args) => plan::run(args, cli.config.as_deref(), &cli.set),
        // --
        Command::Validate(_) => anyhow::bail!("this command is not built yet"),
        // --
        Command::Graph(_) => anyhow::bail!("this command is not built yet"),
        // --
        Command::Schema(_) => anyhow::bail!("this command is not built yet"),
        // --
        Command::Eval(_) => anyhow::bail!("this command is not built yet"),
        // --
        Command::Env(cmd) => env::env(cli.config.as_deref(), &cli.set, cmd),
        // --
        Command::Run(args) => run::run(cli.config.as_deref(), &cli.set, args),
        // --
        Command::Resume(args) => resume::resume(cli.config.as_deref(), &cli.set, args),
    }
}
