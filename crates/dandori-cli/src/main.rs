//! The `dandori` binary: argument definitions and dispatch. Command bodies live in
//! `commands/` (thin adapters) over the library crates.

mod cli;
mod commands;
#[allow(dead_code)]
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            output::error(&format!("{err:#}"));
            ExitCode::from(2)
        }
    }
}
