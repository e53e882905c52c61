//! `dandori plan`: a thin adapter over `dandori_planner::plan`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use dandori_planner::{PlanOptions, PlanOutcome, Progress, RequestSource};
use serde_json::json;

use crate::cli::PlanArgs;
use crate::output;

/// Exit status when the model asks for clarification instead of planning.
pub const EXIT_UNCLEAR_GOAL: u8 = 3;

pub fn run(args: PlanArgs, config: Option<&Path>, sets: &[String]) -> anyhow::Result<ExitCode> {
    let provider_flags = super::plan_llm::flags(&args);
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
    // Defaults < --config < environment < -c, for both planners. The binary reads the
    // process environment; tests pass their own to the library. A config that cannot
    // be loaded at all falls back to the defaults (seed 003 §9.1); warnings are
    // recorded in the trace.
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let mut config_warnings = Vec::new();
    let loaded = match super::load_config(config, sets, &args.repo, &env) {
        Ok(l) => l,
        Err(e) => {
            let w = format!("{e:#}; planning with the default config");
            output::progress(&format!("warning: {w}"));
            config_warnings.push(w);
            dandori_config::Loaded {
                config: dandori_config::Config::default(),
                task_planning: dandori_config::TaskPlanningConfig::default(),
                warnings: Vec::new(),
                config_file: None,
                task_planning_file: None,
                user_config_file: None,
                repo_trusted: false,
            }
        }
    };
    config_warnings.extend(loaded.warnings.iter().map(|w| w.to_string()));
    // The LLM planner: --provider / the `llm:` config section; else the offline one.
    let llm = match super::plan_llm::select(&provider_flags, &loaded, &env) {
        Ok(selected) => selected,
        Err(e) => {
            output::error(&format!("{}: {e}", e.code()));
            return Ok(ExitCode::from(2));
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
    opts.config = loaded.config;
    opts.task_planning = loaded.task_planning;
    opts.config_warnings = config_warnings;
    opts.progress = Some(&progress);
    if let Some(planner) = &llm {
        opts.planner = Some(planner);
    }

    let outcome = match dandori_planner::plan(&opts) {
        Ok(o) => o,
        // Seed 000 §10.1.1: the model needs answers before it can plan (exit 3).
        Err(dandori_planner::PlannerError::UnclearGoal {
            planner,
            message,
            questions,
        }) => {
            if args.json {
                output::json(&json!({"status": "unclear_goal", "planner": planner,
                    "message": message, "clarification_needed": questions}));
            } else {
                output::error(&format!("PLANNING_UNCLEAR_GOAL: {message}"));
                for q in &questions {
                    output::line(&format!("  ? {q}"));
                }
            }
            return Ok(ExitCode::from(EXIT_UNCLEAR_GOAL));
        }
        Err(e) => {
            output::error(&format!("{}: {e}", e.code()));
            return Ok(ExitCode::from(if e.is_input_error() { 2 } else { 1 }));
        }
    };
    let llm_usage = llm.as_ref().map(|p| p.client().usage());
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
            "llm_usage": llm_usage,
        }));
    } else {
        human(&outcome);
        if let Some(usage) = &llm_usage {
            output::line(&format!(
                "Model tokens: {} in {} call(s)",
                usage.total(),
                usage.phases.values().map(|p| p.calls).sum::<u64>()
            ));
        }
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
