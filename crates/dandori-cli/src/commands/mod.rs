//! One module per subcommand, each a thin adapter over the library crates.

use std::process::ExitCode;

use crate::cli::{Cli, Command};

mod resume;
mod run;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Validate(_)
        | Command::Graph(_)
        | Command::Schema(_)
        | Command::Plan(_)
        | Command::Eval(_)
        | Command::Env(_) => anyhow::bail!("this command is not built yet"),
        Command::Run(args) => run::run(cli.config.as_deref(), &cli.set, args),
        Command::Resume(args) => resume::resume(cli.config.as_deref(), &cli.set, args),
    }
}
