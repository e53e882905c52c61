//! `dandori metrics`: the seed 000 §16.1–16.3 measures over all runs of a
//! repository (or a runs root), a thin adapter over `dandori_obs::metrics`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::output;

#[derive(Debug, Args)]
pub struct MetricsArgs {
    /// The repository whose runs to measure.
    #[arg(long, default_value = ".", value_parser = crate::cli::existing_path)]
    pub repo: PathBuf,
    /// Root of run directories (default from config `runs.root`).
    #[arg(long)]
    pub runs_root: Option<PathBuf>,
    /// Only runs created at or after this time (RFC 3339, or YYYY-MM-DD = midnight UTC).
    #[arg(long)]
    pub since: Option<String>,
    /// Print the measures as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn metrics(
    config: Option<&std::path::Path>,
    sets: &[String],
    args: &MetricsArgs,
) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = super::load_config(config, sets, &args.repo, &env)?;
    let root = dandori_planner::run_dir::runs_root(
        &args.repo,
        args.runs_root.as_deref(),
        &loaded.config.runs.root,
    );
    let m = match dandori_obs::metrics::metrics_for(
        &root,
        args.since.as_deref(),
        &loaded.config.llm.pricing,
    ) {
        Ok(m) => m,
        Err(e) => {
            output::error(&e.to_string());
            return Ok(ExitCode::from(2));
        }
    };
    if args.json {
        output::json(&m);
    } else {
        for line in dandori_obs::metrics::render_text(&m) {
            output::line(&line);
        }
    }
    Ok(ExitCode::SUCCESS)
}
