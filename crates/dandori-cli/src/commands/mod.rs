//! One module per subcommand, each a thin adapter over the library crates.

mod plan;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

mod resume;
mod run;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Plan(args) => plan::run(args, cli.config.as_deref(), &cli.set),
        Command::Validate(_)
        | Command::Graph(_)
        | Command::Schema(_)
        | Command::Eval(_)
        | Command::Env(_) => anyhow::bail!("this command is not built yet"),
        Command::Run(args) => run::run(cli.config.as_deref(), &cli.set, args),
        Command::Resume(args) => resume::resume(cli.config.as_deref(), &cli.set, args),
    }
}
