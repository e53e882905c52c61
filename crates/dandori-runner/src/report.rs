//! Writes `report.md` and `errors.json` of a run: gathers the input of
//! `dandori_report` from the run's state and writes what it renders atomically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

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
    render_recorded(
        &markdown::ReportInput {
            planning: i.planning,
            completion: i.completion,
            metrics: &metrics(i.reports),
            timings: i.timings,
            preds: i.preds,
        },
        i.ac_evidence,
        &i.paths.run_dir,
    )
}

/// report.md from its recorded parts; `dandori report` re-renders a finished run
/// with it from trace.jsonl and stage.json.
pub fn render_recorded(
    input: &markdown::ReportInput<'_>,
    ac_evidence: &[AcEvidence],
    run_dir: &std::path::Path,
) -> String {
    let mut md = markdown::render(input);
    md.push_str(&evidence_section(ac_evidence, run_dir));
    md.push_str(&crate::executor::agent_preset::report_section(run_dir));
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

/// Writes `report.md` and `errors.json`, both through the run's masker: a plan's
/// commands and the steps' messages may carry a secret.
pub fn write(i: &ReportInput<'_>) -> Result<(), RunnerError> {
    dandori_fs::write_atomic(&i.paths.report, i.masker.mask_str(&render(i)))?;
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
