//! `dandori plan`: a thin adapter over `dandori_planner::plan`.

use std::path::Path;
use std::process::ExitCode;

use dandori_planner::{PlanOptions, PlanOutcome, Progress, RequestSource};
use serde_json::json;

use crate::cli::PlanArgs;
use crate::output;

pub fn run(args: PlanArgs, config: Option<&Path>, sets: &[String]) -> anyhow::Result<ExitCode> {
    let request = match (args.request, args.text) {
        (Some(path), None) => RequestSource::File(path),
        (None, Some(text)) => RequestSource::Text(text),
        (Some(_), Some(_)) => {
            output::error("REQUEST_INVALID: give a request file or --text, not both");
            return Ok(ExitCode::from(2));
        }
        (None, None) => {
            output::error(
                "REQUEST_INVALID: a request file (requests/<id>.md) or --text \"…\" is required",
            );
            return Ok(ExitCode::from(2));
        }
    };
    // Defaults < --config file < -c key=value (the loader `dandori run` uses). A
    // broken config falls back to the defaults (seed 003 §9.1), said on stderr and
    // recorded in the trace.
    let mut config_warnings = Vec::new();
    let config = match super::run::load_config(config, sets) {
        Ok(c) => c,
        Err(e) => {
            let w = format!("config unusable ({e:#}); planning with the default config");
            output::progress(&format!("warning: {w}"));
            config_warnings.push(w);
            dandori_config::Config::default()
        }
    };
    // Only long work is worth a line: small repositories plan in well under a second.
    let progress = |p: &Progress| match p {
        Progress::Scanned { files, millis } if *files >= 2000 || *millis >= 500 => {
            output::progress(&format!("scanned {files} files in {millis} ms"))
        }
        Progress::Indexed { files, millis } if *files >= 2000 || *millis >= 500 => {
            output::progress(&format!("indexed {files} files in {millis} ms"))
        }
        Progress::Scanning { .. }
        | Progress::Scanned { .. }
        | Progress::Indexed { .. }
        | Progress::Drafting { .. }
        | Progress::Assembling { .. }
        | Progress::Writing { .. } => {}
    };
    let mut opts = PlanOptions::new(args.repo, request);
    opts.runs_root = args.runs_root;
    opts.config = config;
    opts.config_warnings = config_warnings;
    opts.progress = Some(&progress);
    // --provider / --base-url / --model / --api-key-env select the LLM planner (not
    // wired here yet); without them the offline planner runs.

    let outcome = match dandori_planner::plan(&opts) {
        Ok(o) => o,
        Err(e) => {
            output::error(&format!("{}: {e}", e.code()));
            return Ok(ExitCode::from(if e.is_input_error() { 2 } else { 1 }));
        }
    };
    if args.json {
        output::json(&json!({
            "run_dir": outcome.run_dir,
            "planning_json": outcome.planning_json,
            "stage_json": outcome.stage_json,
            "trace_jsonl": outcome.trace_jsonl,
            "request_id": outcome.request_id,
            "run_id": outcome.run_id,
            "planner": outcome.planner,
            "steps": outcome.planning.steps.len(),
            "planning_skipped": outcome.skipped,
            "validation": outcome.validation,
        }));
    } else {
        human(&outcome);
    }
    Ok(if outcome.validation.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn human(o: &PlanOutcome) {
    let p = &o.planning;
    let mode = p
        .execution_plan
        .as_ref()
        .map(|e| format!("{:?}", e.execution_mode).to_lowercase())
        .unwrap_or_default();
    let groups = p
        .execution_plan
        .as_ref()
        .map_or(0, |e| e.execution_groups.len());
    output::line(&format!(
        "Planned {} (run {}) with the {} planner: {} step(s), {} group(s), {}",
        o.request_id,
        o.run_id,
        o.planner,
        p.steps.len(),
        groups,
        mode
    ));
    if let Some(reason) = &o.skipped {
        output::line(&format!(
            "Planning skipped (fail-closed, single step): {reason}"
        ));
    }
    for s in &p.steps {
        let after = match &s.depends_on {
            Some(d) if !d.is_empty() => format!(" (after {})", d.join(", ")),
            _ => String::new(),
        };
        output::line(&format!("  {} {}{}", s.step_id, s.title, after));
        output::line(&format!(
            "      targets: {}",
            s.scope.target_paths.join(", ")
        ));
    }
    if let Some(e) = &p.execution_plan {
        for g in &e.execution_groups {
            output::line(&format!(
                "  group {}: {} ({})",
                g.group_index,
                g.step_ids.join(", "),
                format!("{:?}", g.mode).to_lowercase()
            ));
        }
    }
    if let Some(env) = &p.selected_environment {
        output::line(&format!("Environment: {} — {}", env.name, env.reason));
    }
    output::line(&format!(
        "Acceptance criteria: {}; validation: {} ({} FAIL, {} WARN)",
        p.context.acceptance_criteria.len(),
        if o.validation.ok { "ok" } else { "FAILED" },
        o.validation.fail,
        o.validation.warn
    ));
    output::line(&format!("Run directory: {}", o.run_dir.display()));
}
