//! Writes `report.md` and `errors.json` of a run: gathers the input of
//! `dandori_report` from the run's state and writes what it renders atomically.

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::{Planning, Stage};
use dandori_report::{StepMetrics, errors, markdown};

use crate::completion::{Completion, StepTiming};
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
    markdown::render(&markdown::ReportInput {
        planning: i.planning,
        completion: i.completion,
        metrics: &metrics(i.reports),
        timings: i.timings,
        preds: i.preds,
    })
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
