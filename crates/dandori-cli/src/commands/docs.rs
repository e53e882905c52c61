//! `dandori completions SHELL` and `dandori man [COMMAND]`: generated from the clap
//! definitions in `cli.rs`, the one source of truth for flags.

use std::process::ExitCode;

use clap::CommandFactory;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::output;

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "dandori", &mut buf);
    output::raw(&buf);
    Ok(ExitCode::SUCCESS)
}

/// dandori(1), or `dandori-plan(1)`, `dandori-env-setup(1)`, … for a subcommand.
pub fn man(args: &ManArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    cmd.build();
    let mut name = "dandori".to_string();
    for word in &args.command {
        let Some(sub) = cmd.find_subcommand(word).cloned() else {
            let known: Vec<&str> = cmd.get_subcommands().map(|s| s.get_name()).collect();
            output::error(&format!(
                "{}: {name} has no subcommand {word:?}; one of: {}",
                dandori_report::reason::USAGE_ERROR,
                known.join(", ")
            ));
            return Ok(ExitCode::from(2));
        };
        name = format!("{name}-{word}");
        cmd = sub;
    }
    let cmd = cmd
        .display_name(name.clone())
        .bin_name(name.replace('-', " "));
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd).render(&mut buf)?;
    output::raw(&buf);
    Ok(ExitCode::SUCCESS)
}
