//! Writes `report.md` and `errors.json` of a run: gathers the input of
//! `dandori_report` from the run's state and writes what it renders atomically.

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::{Planning, Stage};
use dandori_report::{StepMetrics, errors, markdown};

use crate::completion::{Completion, StepTiming};
use crate::coverage::AcEvidence;
use crate::error::RunnerError;
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
    let mut md = markdown::render(&markdown::ReportInput {
        planning: i.planning,
        completion: i.completion,
        metrics: &metrics(i.reports),
        timings: i.timings,
        preds: i.preds,
    });
    md.push_str(&evidence_section(i.ac_evidence, &i.paths.run_dir));
    md
}

/// Per acceptance criterion: covered or not, and the verifications that say so
/// (command, exit code, log), paths relative to the run directory.
fn evidence_section(evidence: &[AcEvidence], run_dir: &std::path::Path) -> String {
    if evidence.is_empty() {
        return String::new();
    }
    let rel = |p: &str| {
        std::path::Path::new(p)
            .strip_prefix(run_dir)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.to_string())
    };
    let mut md = String::from(
        "\n## Acceptance criteria evidence\n\n| AC | covered | step | check | command | exit | log |\n|---|---|---|---|---|---|---|\n",
    );
    for e in evidence {
        let covered = if e.covered { "yes" } else { "**no**" };
        if e.evidence.is_empty() {
            md.push_str(&format!(
                "| {} | {covered} | {} | — | — | — | — |\n",
                e.ac,
                if e.missing.is_empty() {
                    "no step links it".to_string()
                } else {
                    e.missing.join("; ")
                }
            ));
        }
        for x in &e.evidence {
            let exit = x
                .exit_code
                .map(|c| c.to_string())
                .unwrap_or_else(|| "timeout".to_string());
            md.push_str(&format!(
                "| {} | {covered} | {} | {} | `{}` | {exit} | `{}` |\n",
                e.ac,
                x.step_id,
                x.kind,
                x.command.replace('|', "\\|").replace('`', "'"),
                rel(&x.log)
            ));
        }
    }
    md
}

pub fn write(i: &ReportInput<'_>) -> Result<(), RunnerError> {
    dandori_fs::write_atomic(&i.paths.report, render(i))?;
    let errors = errors::for_completion(i.planning, i.completion);
    if !errors.errors.is_empty() {
        dandori_fs::write_json_atomic(&i.paths.errors, &errors)?;
    } else if i.paths.errors.exists() {
        dandori_fs::remove_file(&i.paths.errors)?;
    }
    Ok(())
}

/// `errors.json` for a run that stopped before completion (a refused gate, a bad
/// plan): one error with the reason code.
pub fn write_run_error(paths: &RunPaths, e: &RunnerError) -> Result<(), RunnerError> {
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
    dandori_fs::write_json_atomic(
        &paths.errors,
        &errors::for_run_error(status, e.reason_code(), e.to_string()),
    )?;
    Ok(())
}
