//! The `dandori` binary: argument definitions and dispatch. Command bodies live in
//! `commands/` (thin adapters) over the library crates.

mod cli;
mod commands;
#[allow(dead_code)]
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            let usage = !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
            let _ = e.print();
            if usage {
                output::progress(&format!(
                    "reason code: {} (see `dandori help` or `dandori <command> --help`)",
                    dandori_report::reason::USAGE_ERROR
                ));
            }
            return ExitCode::from(if usage { 2 } else { 0 });
        }
    };
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            output::error(&format!("{err:#}"));
            ExitCode::from(2)
        }
    }
}
