//! The `dandori` binary: argument definitions and dispatch. Command bodies live in
//! `commands/` (thin adapters) over the library crates.

mod cli;
mod commands;
#[allow(dead_code)]
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // The built-in sandbox re-executes this binary; it must not go through clap
    // (the command's own arguments follow verbatim).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(dandori_exec::sandbox::HELPER_SUBCOMMAND) {
        output::error(&dandori_exec::sandbox::helper::main(&args[1..]));
        return ExitCode::from(126);
    }
    let cli = cli::Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            output::error(&format!("{err:#}"));
            ExitCode::from(2)
        }
    }
}
