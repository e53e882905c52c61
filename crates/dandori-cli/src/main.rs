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
        return match dandori_exec::sandbox::helper::main(&args[1..]) {
            Ok(code) => ExitCode::from(code),
            Err(e) => {
                output::error(&e);
                ExitCode::from(126)
            }
        };
    }
    // No process of the same user may read this one's memory or environment
    // (the API keys) through /proc or ptrace.
    dandori_exec::sandbox::harden_self();
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            let usage = !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion);
            let _ = e.print();
            // A path argument that does not exist has a code of its own.
            let missing = std::error::Error::source(&e)
                .is_some_and(|s| s.downcast_ref::<cli::PathNotFound>().is_some());
            if missing {
                output::progress(&format!(
                    "reason code: {} (pass an existing directory)",
                    dandori_report::reason::REPO_NOT_FOUND
                ));
            } else if usage {
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
