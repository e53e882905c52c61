//! One module per subcommand, each a thin adapter over the library crates.

mod eval;

use std::process::ExitCode;

use crate::cli::{Cli, Command, EvalCommand};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Eval(EvalCommand::Localize(args)) => eval::localize(&args),
        Command::Validate(_)
        | Command::Graph(_)
        | Command::Schema(_)
        | Command::Plan(_)
        | Command::Env(_)
        | Command::Run(_)
        | Command::Resume(_) => anyhow::bail!("this command is not built yet"),
    }
}
