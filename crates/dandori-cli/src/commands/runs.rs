//! `dandori runs | status | report | trace`: thin adapters over
//! `dandori_mcp::inspect` (the same code the MCP tools use).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use dandori_mcp::inspect::{self, TraceFilter};

use crate::cli::{ReportArgs, RunsArgs, StatusArgs, TraceArgs};
use crate::output;

fn fail(e: &dandori_mcp::McpError) -> ExitCode {
    output::error(&e.to_string());
    ExitCode::from(2)
}

pub fn runs(config: Option<&Path>, sets: &[String], args: &RunsArgs) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = super::load_config(config, sets, &args.repo, &env)?;
    let root = dandori_planner::run_dir::runs_root(
        &args.repo,
        args.runs_root.as_deref(),
        &loaded.config.runs.root,
    );
    let runs = match inspect::list_runs(&root) {
        Ok(r) => r,
        Err(e) => return Ok(fail(&e)),
    };
    if args.json {
        output::json(&runs);
        return Ok(ExitCode::SUCCESS);
    }
    if runs.is_empty() {
        output::line(&format!("no runs under {}", root.display()));
    }
    for r in &runs {
        output::line(&format!(
            "{:<24} {:<28} {:<12} {}/{} done{}  {}",
            r.request_id,
            r.run_id,
            r.status,
            r.done,
            r.total,
            if r.failed > 0 {
                format!(", {} failed", r.failed)
            } else {
                String::new()
            },
            r.run_dir.display()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// Where the run's steps worked (`stage.json`'s `step_workspace`), and why not
/// in copy-on-write workspaces when they fell back to the pool.
fn step_workspace_line(run_dir: &std::path::Path) -> Option<String> {
    let stage = dandori_runner::plan::RunPaths::locate(run_dir)
        .ok()
        .and_then(|p| dandori_fs::read_to_string(&p.stage).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())?;
    let ws = stage.get("step_workspace")?;
    let mechanism = ws.get("mechanism")?.as_str()?;
    Some(match ws.get("fallback_reason").and_then(|r| r.as_str()) {
        Some(why) => format!("step workspaces: {mechanism} (copy-on-write not used: {why})"),
        None => format!("step workspaces: {mechanism}"),
    })
}

pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let p = match inspect::progress(&args.run_dir) {
        Ok(p) => p,
        Err(e) => return Ok(fail(&e)),
    };
    if args.json {
        output::json(&p);
        return Ok(ExitCode::SUCCESS);
    }
    let s = &p.summary;
    output::line(&format!(
        "{} / {}: {} — {}/{} steps done{}, {} tokens, {:.1} s",
        s.request_id,
        s.run_id,
        s.status,
        s.done,
        s.total,
        if s.failed > 0 {
            format!(", {} failed", s.failed)
        } else {
            String::new()
        },
        p.tokens.total(),
        p.elapsed_ms as f64 / 1000.0
    ));
    if let Some(c) = &p.current_step {
        output::line(&format!("current step: {c}"));
    }
    if let Some(line) = step_workspace_line(&args.run_dir) {
        output::line(&line);
    }
    for (i, g) in p.groups.iter().enumerate() {
        output::line(&format!("group {i}: {}", g.join(", ")));
    }
    for st in &p.steps {
        output::line(&format!(
            "  {} {:<11} {}{}{}{}",
            st.step_id,
            serde_json::to_value(st.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            st.title,
            st.commit
                .as_deref()
                .map(|c| format!("  {}", &c[..c.len().min(10)]))
                .unwrap_or_default(),
            st.reason_code
                .as_deref()
                .map(|r| format!("  [{r}]"))
                .unwrap_or_default(),
            st.duration_ms
                .map(|d| format!("  {:.1} s", d as f64 / 1000.0))
                .unwrap_or_default(),
        ));
    }
    #[cfg(feature = "restate")]
    match dandori_distributed::engine::workflow_status(&args.run_dir) {
        Some(Ok((key, w))) => {
            let count = |status: &str| w.steps.iter().filter(|s| s.status == status).count();
            let running: Vec<String> = w
                .steps
                .iter()
                .filter(|s| s.status == "running")
                .map(|s| s.step_id.clone())
                .collect();
            output::line(&format!(
                "restate workflow DandoriRun/{key}: {} — {}/{} done, {} failed{}{}",
                if w.finished { "finished" } else { "running" },
                count("done"),
                w.steps.len(),
                count("failed"),
                if running.is_empty() {
                    String::new()
                } else {
                    format!(", running: {}", running.join(", "))
                },
                w.stopped
                    .as_deref()
                    .map(|r| format!(" (stopped: {r})"))
                    .unwrap_or_default()
            ));
        }
        Some(Err(e)) => output::line(&format!("restate workflow: {e}")),
        None => {}
    }
    #[cfg(not(feature = "restate"))]
    if super::records_restate(&args.run_dir) {
        output::line(&format!(
            "restate workflow: {}",
            super::restate_not_built("the workflow status")
        ));
    }
    if let Some(r) = &p.report {
        output::line(&format!("report: {}", r.display()));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn report(args: &ReportArgs) -> anyhow::Result<ExitCode> {
    if args.html {
        return Ok(
            match inspect::write_html_report(&args.run_dir, args.out.as_deref()) {
                Ok(path) => {
                    output::line(&path.display().to_string());
                    ExitCode::SUCCESS
                }
                Err(e) => fail(&e),
            },
        );
    }
    match inspect::rerender_report(&args.run_dir) {
        Ok(text) => {
            if args.path_only {
                output::line(&args.run_dir.join("report.md").display().to_string());
            } else {
                output::line(text.trim_end());
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(&e)),
    }
}

pub fn trace(args: &TraceArgs) -> anyhow::Result<ExitCode> {
    let path = if args.run_dir.is_dir() {
        args.run_dir.join("trace.jsonl")
    } else {
        args.run_dir.clone()
    };
    if !path.is_file() {
        output::error(&format!(
            "RUN_DIR_INVALID: {}: no trace.jsonl",
            path.display()
        ));
        return Ok(ExitCode::from(2));
    }
    let since = match args
        .since
        .as_deref()
        .map(|s| inspect::parse_since(s, chrono::Utc::now()))
        .transpose()
    {
        Ok(s) => s,
        Err(e) => return Ok(fail(&e)),
    };
    let visibility = match args
        .visibility
        .as_deref()
        .map(inspect::parse_visibility)
        .transpose()
    {
        Ok(v) => v,
        Err(e) => return Ok(fail(&e)),
    };
    let filter = TraceFilter {
        events: args.event.clone(),
        step: args.step.clone(),
        since,
        visibility,
    };
    let mut seen = 0usize;
    loop {
        let events = dandori_trace::read_trace(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
        let ended = events.iter().any(|e| e.event == "EXECUTION_END");
        for e in events.iter().skip(seen).filter(|e| filter.matches(e)) {
            if args.json {
                output::line(&serde_json::to_string(e)?);
            } else {
                output::line(&inspect::trace_line(e));
            }
        }
        seen = seen.max(events.len());
        if !args.follow || ended {
            return Ok(ExitCode::SUCCESS);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
