//! `dandori demo [DIR]`: a thin adapter over `dandori_demo::run`.

use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::DemoArgs;
use crate::output;

pub fn demo(args: &DemoArgs) -> anyhow::Result<ExitCode> {
    let progress: dandori_runner::Progress = Arc::new(|line: &str| output::progress(line));
    let opts = dandori_demo::DemoOptions {
        dir: args.dir.clone(),
        base_env: std::env::vars().collect(),
        progress: Some(progress),
    };
    let outcome = match dandori_demo::run(&opts) {
        Ok(o) => o,
        Err(e) => {
            output::error(&e.to_string());
            return Ok(ExitCode::from(2));
        }
    };
    let c = &outcome.completion;
    if args.json {
        output::json(c);
        return Ok(ExitCode::from(c.exit_code));
    }
    output::line(&format!(
        "Demo run {} (executor: demo agent, scripted, no model) in {}",
        c.run_id,
        outcome.dir.display()
    ));
    super::run::step_lines(c, "  ");
    output::line(&format!(
        "Unit gate: `{}` ran in every step's worktree before its commit",
        dandori_demo::UNIT_COMMAND
    ));
    output::line(&format!(
        "Commits on {} (after {}), each with its trailers:",
        outcome.work_branch, outcome.base_branch
    ));
    for commit in &outcome.commits {
        for (i, l) in commit.lines().enumerate() {
            output::line(&format!("{}{l}", if i == 0 { "  " } else { "      " }));
        }
    }
    output::line(&format!(
        "Report: {} (Mermaid dependency graph and timeline inside)",
        outcome.report.display()
    ));
    output::line(&format!("{}: {}", super::run::word(&c.status), c.comment));
    output::line(&format!(
        "next: cd {} && git log --stat {}..{}",
        outcome.dir.display(),
        outcome.base_branch,
        outcome.work_branch
    ));
    Ok(ExitCode::from(c.exit_code))
}
