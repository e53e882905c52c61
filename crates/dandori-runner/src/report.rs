//! Writes `report.md` and `errors.json` of a run: gathers the input of
//! `dandori_report` from the run's state and writes what it renders atomically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use dandori_plan::{Planning, Stage};
use dandori_report::{StepMetrics, errors, markdown};

use crate::completion::{Completion, StepTiming};
use crate::coverage::AcEvidence;
use crate::error::RunnerError;
use crate::evidence::{AcStatus, Baseline};
use crate::plan::RunPaths;
use crate::step::StepReport;

pub struct ReportInput<'a> {
    pub planning: &'a Planning,
    pub stage: &'a Stage,
    pub reports: &'a BTreeMap<String, StepReport>,
    pub timings: &'a BTreeMap<String, StepTiming>,
    pub completion: &'a Completion,
    pub preds: &'a [BTreeSet<usize>],
    pub paths: &'a RunPaths,
    pub ac_evidence: &'a [AcEvidence],
    /// The run's masker: report.md and errors.json pass through it.
    pub masker: &'a dandori_trace::Masker,
}

/// What report.md shows of each step report.
fn metrics(reports: &BTreeMap<String, StepReport>) -> BTreeMap<String, StepMetrics> {
    reports
        .iter()
        .map(|(id, r)| {
            (
                id.clone(),
                StepMetrics {
                    diff_lines: r.diff_lines,
                    unit_passed: r.unit_passed,
                    autofix_cycles: r.autofix_cycles,
                    tokens: r.tokens,
                },
            )
        })
        .collect()
}

pub fn render(i: &ReportInput<'_>) -> String {
    let baseline: Option<Baseline> = i
        .stage
        .extra
        .get("baseline")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let mut md = render_recorded(
        &markdown::ReportInput {
            planning: i.planning,
            completion: i.completion,
            metrics: &metrics(i.reports),
            timings: i.timings,
            preds: i.preds,
        },
        i.ac_evidence,
        baseline.as_ref(),
        &i.paths.run_dir,
    );
    md.push_str(&scope_section(i.reports));
    md
}

/// report.md from its recorded parts; `dandori report` re-renders a finished run
/// with it from trace.jsonl and stage.json.
pub fn render_recorded(
    input: &markdown::ReportInput<'_>,
    ac_evidence: &[AcEvidence],
    baseline: Option<&Baseline>,
    run_dir: &std::path::Path,
) -> String {
    let mut md = markdown::render(input);
    md.push_str(&evidence_section(ac_evidence, run_dir));
    let checks = crate::evidence::command_checks(
        &input.planning.context.acceptance_criteria,
        &input
            .planning
            .context
            .acceptance_criteria
            .iter()
            .map(|a| a.id.clone())
            .collect::<Vec<_>>(),
    );
    md.push_str(&preexisting_section(baseline, &checks, run_dir));
    md.push_str(&crate::executor::agent_preset::report_section(run_dir));
    md.push_str(&time_targets_section(run_dir));
    md
}

/// Seed 000 §13.4: the planning phases and the whole task against their time
/// targets (`dandori_plan::performance`), from the run's trace: the planning
/// phases as `PLANNING_END.phase_durations_ms` recorded them, the task as
/// planning plus execution (an execution still open counts up to the trace's
/// last event).
fn time_targets_section(run_dir: &Path) -> String {
    use dandori_plan::performance::{PLANNING_PHASES, TimeTarget, task_time_target};
    let events = dandori_trace::read_trace(run_dir.join("trace.jsonl")).unwrap_or_default();
    let secs = |a: &str, b: &str| -> Option<f64> {
        let a = chrono::DateTime::parse_from_rfc3339(a).ok()?;
        let b = chrono::DateTime::parse_from_rfc3339(b).ok()?;
        Some((b - a).num_milliseconds().max(0) as f64 / 1000.0)
    };
    let end = events.iter().rev().find(|e| e.event == "PLANNING_END");
    let u = |v: Option<&serde_json::Value>, k: &str| {
        v.and_then(|v| v.get(k)).and_then(serde_json::Value::as_u64)
    };
    // An invocation counts up to its last event before `EXECUTION_END`: the run
    // writes report.md just before that event, and `dandori report` re-renders
    // the same figure from the finished trace.
    let mut execution: Option<f64> = None;
    let mut open: Option<&str> = None;
    let mut last: Option<&str> = None;
    for e in &events {
        match e.event.as_str() {
            "EXECUTION_START" | "EXECUTION_RESUME" => open = Some(&e.timestamp),
            "EXECUTION_END" => {
                if let Some(x) = open.take().zip(last).and_then(|(s, l)| secs(s, l)) {
                    execution = Some(execution.unwrap_or(0.0) + x);
                }
            }
            _ => {}
        }
        last = Some(&e.timestamp);
    }
    if let Some(x) = open.zip(last).and_then(|(s, l)| secs(s, l)) {
        execution = Some(execution.unwrap_or(0.0) + x);
    }
    let category = events
        .iter()
        .find(|e| e.event == "SIZE_ESTIMATION")
        .and_then(|e| e.data.get("size_category"))
        .and_then(serde_json::Value::as_str);
    let row = |label: &str, t: &TimeTarget, value: Option<f64>| match value {
        Some(v) => format!(
            "| {label} | {v:.1} s | {} s | {} |\n",
            t.target,
            if t.met(v) { "yes" } else { "**no**" }
        ),
        None => format!("| {label} | not recorded | {} s | — |\n", t.target),
    };
    let mut md = String::from(
        "\n## Time targets\n\nSeed 000 §13.4: each planning phase and the whole task (planning + execution) against its target.\n\n| Measure | Time | Target | Met |\n|---|---|---|---|\n",
    );
    let durations = end.and_then(|e| e.data.get("phase_durations_ms"));
    for (key, t) in &PLANNING_PHASES {
        let label = key.replace('_', " ");
        md.push_str(&row(
            &label,
            t,
            u(durations, key).map(|ms| ms as f64 / 1000.0),
        ));
    }
    let planning = u(end.map(|e| &e.data), "duration_ms").map(|ms| ms as f64 / 1000.0);
    match category.and_then(|c| task_time_target(c).map(|t| (c, t))) {
        Some((c, t)) => {
            let total = planning.zip(execution).map(|(p, x)| p + x);
            md.push_str(&row(&format!("whole task (size {c})"), &t, total));
        }
        None => {
            md.push_str("| whole task | not recorded (no size estimation in the trace) | — | — |\n")
        }
    }
    md
}

fn relative(p: &str, run_dir: &std::path::Path) -> String {
    std::path::Path::new(p)
        .strip_prefix(run_dir)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| p.to_string())
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('`', "'").replace('\n', " ")
}

/// Per acceptance criterion: its status, its check, what the check said on the
/// base commit and after the steps, the commit that made it green, and the log.
fn evidence_section(evidence: &[AcEvidence], run_dir: &std::path::Path) -> String {
    if evidence.is_empty() {
        return String::new();
    }
    let mut md = String::from(
        "\n## Acceptance criteria evidence\n\nAn acceptance criterion is covered only when its check failed (or did not exist) on the base commit and passes after the steps (regression and non-functional criteria: every test passing on the base still passes). A suite that merely passes is `unverified`.\n\n| AC | status | check | base | after | green commit | log |\n|---|---|---|---|---|---|---|\n",
    );
    for e in evidence {
        let status = match e.status {
            Some(AcStatus::Covered) => "covered".to_string(),
            Some(AcStatus::Unverified) => "**unverified**".to_string(),
            Some(AcStatus::NotCovered) => "**not covered**".to_string(),
            None if e.covered => "covered".to_string(),
            None => "**not covered**".to_string(),
        };
        let check = if e.check.is_empty() {
            "—".to_string()
        } else {
            cell(&e.check)
        };
        let green = match (&e.green_step, &e.green_commit) {
            (Some(s), Some(c)) => format!("{s} `{}`", &c[..c.len().min(10)]),
            _ => "—".to_string(),
        };
        let log = e
            .log
            .as_deref()
            .map(|l| format!("`{}`", relative(l, run_dir)))
            .unwrap_or_else(|| "—".to_string());
        let or_dash = |s: &str| {
            if s.is_empty() {
                "—".to_string()
            } else {
                cell(s)
            }
        };
        md.push_str(&format!(
            "| {} | {status} | {check} | {} | {} | {green} | {log} |\n",
            e.ac,
            or_dash(&e.base_result),
            or_dash(&e.after_result),
        ));
        if !e.covered && !e.missing.is_empty() {
            md.push_str(&format!(
                "| | | {} | | | | |\n",
                cell(&e.missing.join("; "))
            ));
        }
    }
    md
}

/// The tests that failed on the base commit before any step: never blamed on a
/// step, never sent to autofix.
fn preexisting_section(
    baseline: Option<&Baseline>,
    ac_checks: &[String],
    run_dir: &std::path::Path,
) -> String {
    let Some(b) = baseline else {
        return String::new();
    };
    let short = &b.commit[..b.commit.len().min(10)];
    let failures = b.failures();
    let mut md = String::from("\n## Pre-existing failures\n\n");
    let log = b
        .runs
        .first()
        .map(|r| relative(&r.log, run_dir))
        .unwrap_or_default();
    if failures.is_empty() {
        let unattributed: Vec<&str> = b
            .runs
            .iter()
            // An AC's command check is expected to fail before the change.
            .filter(|r| !r.passed() && !ac_checks.contains(&r.command))
            .map(|r| r.command.as_str())
            .collect();
        if unattributed.is_empty() {
            md.push_str(&format!(
                "None: every test command passed on the base commit `{short}` (log `{log}`).\n"
            ));
        } else {
            md.push_str(&format!(
                "No test failed on the base commit `{short}`. These commands name no test and failed there (red before any step: a step turning one green proves its change): {} (log `{log}`).\n",
                unattributed
                    .iter()
                    .map(|c| format!("`{}`", cell(c)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        return md;
    }
    md.push_str(&format!(
        "These tests already failed on the base commit `{short}`, before any step ran (log `{log}`). No step is blamed for them and none was sent to autofix.\n\n| test | command |\n|---|---|\n"
    ));
    for (c, t) in failures {
        md.push_str(&format!("| `{}` | `{}` |\n", cell(t), cell(c)));
    }
    md
}

/// Files each step changed outside its `scope.target_paths` (they count against
/// its scope budget).
fn scope_section(reports: &BTreeMap<String, StepReport>) -> String {
    let rows: Vec<String> = reports
        .iter()
        .flat_map(|(id, r)| {
            r.out_of_scope
                .iter()
                .map(move |(f, l)| format!("| {id} | `{}` | {l} |\n", cell(f)))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n## Out-of-scope edits\n\n| step | path | lines |\n|---|---|---|\n{}",
        rows.concat()
    )
}

/// Writes `report.md` and `errors.json`, both through the run's masker: a plan's
/// commands and the steps' messages may carry a secret.
pub fn write(i: &ReportInput<'_>) -> Result<(), RunnerError> {
    dandori_fs::write_atomic_readable(&i.paths.report, i.masker.mask_str(&render(i)))?;
    let errors = errors::for_completion(i.planning, i.completion);
    if !errors.errors.is_empty() {
        write_masked_json(&i.paths.errors, &errors, i.masker)?;
    } else if i.paths.errors.exists() {
        dandori_fs::remove_file(&i.paths.errors)?;
    }
    Ok(())
}

/// `errors.json` for a run that stopped before completion (a refused gate, a bad
/// plan): one error with the reason code.
pub fn write_run_error(
    paths: &RunPaths,
    e: &RunnerError,
    masker: &dandori_trace::Masker,
) -> Result<(), RunnerError> {
    if !paths.run_dir.is_dir() {
        return Ok(());
    }
    let status = match e {
        RunnerError::Gate { .. } => "gate_refused",
        RunnerError::Fs(_)
        | RunnerError::Trace(_)
        | RunnerError::InvalidInput { .. }
        | RunnerError::Git { .. }
        | RunnerError::Process { .. }
        | RunnerError::Executor(_) => "error",
    };
    write_masked_json(
        &paths.errors,
        &errors::for_run_error(status, e.reason_code(), e.to_string()),
        masker,
    )
}

fn write_masked_json<T: serde::Serialize>(
    path: &Path,
    value: &T,
    masker: &dandori_trace::Masker,
) -> Result<(), RunnerError> {
    let value = serde_json::to_value(value).map_err(|e| {
        dandori_fs::FsError::new("serialising JSON for", path, std::io::Error::other(e))
    })?;
    dandori_fs::write_json_atomic(path, &masker.mask_strings(value))?;
    Ok(())
}
