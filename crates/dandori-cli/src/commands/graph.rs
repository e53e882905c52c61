//! `dandori graph FILE [--format text|json|mermaid]`: the dependency graph and
//! execution groups of a planning.json. Exit 1 when the plan cannot be read or
//! its dependencies are broken (unknown step, cycle); 2 for usage or IO errors.

use std::process::ExitCode;

use dandori_plan::{graph, validation};

use crate::cli::{GraphArgs, GraphFormat};
use crate::commands::validate::finding_line;
use crate::output;

pub fn graph(args: &GraphArgs) -> anyhow::Result<ExitCode> {
    let (path, bytes) = super::read_planning(&args.file)?;
    let text = String::from_utf8_lossy(&bytes);
    let file = path.display();
    let checked = validation::check(&text);
    let Some(planning) = checked.planning else {
        // The plan cannot be read as a plan: show why.
        for f in checked.report.errors() {
            output::error(&format!("{file}: {}", finding_line(f)));
        }
        return Ok(ExitCode::from(1));
    };
    let analysis = match graph::analyze(&planning.steps) {
        Ok(a) => a,
        Err(e) => {
            output::error(&format!("{file}: {e}"));
            return Ok(ExitCode::from(1));
        }
    };
    let other_failures = checked.report.errors().count();
    if other_failures > 0 {
        output::progress(&format!(
            "warning: {file} has {other_failures} validation error(s); see `dandori validate {file}`"
        ));
    }
    match args.format {
        GraphFormat::Json => output::json(&analysis),
        GraphFormat::Text => output::line(graph::to_text(&analysis).trim_end()),
        GraphFormat::Mermaid => {
            output::line(graph::to_mermaid(&analysis, &planning.steps).trim_end())
        }
    }
    Ok(ExitCode::SUCCESS)
}
