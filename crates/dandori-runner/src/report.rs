//! `report.md` and `errors.json` of a run: acceptance criteria ↔ steps ↔ commits,
//! status, timings, tokens, a Mermaid DAG and a Gantt chart of the real timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use dandori_plan::{Planning, Stage, StepStatus};
use serde_json::json;

use crate::completion::{self, Completion, StepTiming};
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

pub fn write(i: &ReportInput<'_>) -> Result<(), RunnerError> {
    dandori_fs::write_atomic(&i.paths.report, render(i))?;
    let errors = errors_json(i);
    if errors["errors"].as_array().is_some_and(|a| !a.is_empty()) {
        dandori_fs::write_json_atomic(&i.paths.errors, &errors)?;
    } else if i.paths.errors.exists() {
        dandori_fs::remove_file(&i.paths.errors)?;
    }
    Ok(())
}

fn status_str(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Pending => "pending",
        StepStatus::Running => "running",
        StepStatus::Done => "done",
        StepStatus::Failed => "failed",
        StepStatus::Skipped => "skipped",
        StepStatus::NeedsInput => "needs_input",
    }
}

fn short(c: &Option<String>) -> String {
    c.as_deref()
        .map(|c| format!("`{}`", &c[..c.len().min(10)]))
        .unwrap_or_else(|| "—".to_string())
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

pub fn render(i: &ReportInput<'_>) -> String {
    let c = i.completion;
    let mut r = String::new();
    let _ = writeln!(
        r,
        "# Run report: {} / {}\n",
        i.planning.request_id, i.planning.run_id
    );
    let _ = writeln!(r, "{}\n", i.planning.context.summary);
    let _ = writeln!(
        r,
        "- **Status:** {} (exit code {})\n- **Goal achieved:** {}\n- **Steps:** {} done, {} failed of {}\n- **Executor:** {}\n- **Branches:** `{}` → `{}`\n- **Tokens:** {} prompt + {} completion\n- **AC coverage:** {:.0}% (confidence {})",
        serde_json::to_value(c.status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        c.exit_code,
        c.summary.goal_achieved,
        c.summary.tasks_completed,
        c.summary.tasks_failed,
        c.steps.len(),
        c.executor,
        i.planning.base_branch,
        i.planning.work_branch,
        c.tokens.prompt_tokens,
        c.tokens.completion_tokens,
        c.coverage.overall_coverage * 100.0,
        c.coverage.confidence_level,
    );
    if let Some(reason) = &c.summary.reason {
        let _ = writeln!(r, "- **Reason:** {}", cell(reason));
    }

    let _ = writeln!(r, "\n## Acceptance criteria\n");
    let _ = writeln!(
        r,
        "| AC | Then | Steps | Commits | Covered |\n|---|---|---|---|---|"
    );
    for ac in &i.planning.context.acceptance_criteria {
        let mut steps = Vec::new();
        let mut commits = Vec::new();
        let mut covered = false;
        for s in &c.steps {
            if s.links_to_ac.contains(&ac.id) {
                steps.push(format!("{} ({})", s.step_id, status_str(s.status)));
                if s.status == StepStatus::Done {
                    covered = true;
                    commits.push(short(&s.commit));
                }
            }
        }
        for f in c.follow_ups.iter().filter(|f| f.ac == ac.id) {
            steps.push(format!("{} ({})", f.step_id, status_str(f.status)));
            if f.status == StepStatus::Done {
                covered = true;
                commits.push(short(&f.commit));
            }
        }
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} |",
            ac.id,
            cell(&ac.then),
            if steps.is_empty() {
                "—".to_string()
            } else {
                steps.join(", ")
            },
            if commits.is_empty() {
                "—".to_string()
            } else {
                commits.join(", ")
            },
            if covered { "yes" } else { "**no**" }
        );
    }

    let _ = writeln!(r, "\n## Steps\n");
    let _ = writeln!(
        r,
        "| Step | Title | Status | Attempts | Commit | Diff lines | Unit | Fix cycles | Duration | Reason |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &c.steps {
        let rep = i.reports.get(&s.step_id);
        let dur = i
            .timings
            .get(&s.step_id)
            .and_then(|t| t.finished_ms.map(|f| f.saturating_sub(t.started_ms)))
            .map(|ms| format!("{:.1} s", ms as f64 / 1000.0))
            .unwrap_or_else(|| "—".to_string());
        let _ = writeln!(
            r,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.step_id,
            cell(&s.title),
            status_str(s.status),
            s.attempts,
            short(&s.commit),
            rep.map(|r| r.diff_lines.to_string())
                .unwrap_or_else(|| "—".to_string()),
            match rep.and_then(|r| r.unit_passed) {
                Some(true) => "pass",
                Some(false) => "fail",
                None => "—",
            },
            rep.map(|r| r.autofix_cycles.to_string())
                .unwrap_or_else(|| "—".to_string()),
            dur,
            s.reason_code.as_deref().unwrap_or("")
        );
    }

    if !c.summary.recommendations.is_empty() {
        let _ = writeln!(r, "\n## Next actions\n");
        for a in &c.summary.recommendations {
            let _ = writeln!(r, "- {a}");
        }
    }
    if !c.summary.lessons_learned.is_empty() {
        let _ = writeln!(r, "\n## Lessons learned\n");
        for a in &c.summary.lessons_learned {
            let _ = writeln!(r, "- {a}");
        }
    }

    let _ = writeln!(r, "\n## Dependency graph\n\n```mermaid\ngraph TD");
    for s in &c.steps {
        let _ = writeln!(
            r,
            "    {}[\"{}: {}\"]:::{}",
            s.step_id,
            s.step_id,
            s.title.replace('"', "'"),
            status_str(s.status)
        );
    }
    for (to, preds) in i.preds.iter().enumerate() {
        for from in preds {
            if let (Some(f), Some(t)) = (c.steps.get(*from), c.steps.get(to)) {
                let _ = writeln!(r, "    {} --> {}", f.step_id, t.step_id);
            }
        }
    }
    let _ = writeln!(
        r,
        "    classDef done fill:#d4edda;\n    classDef failed fill:#f8d7da;\n    classDef skipped fill:#eeeeee;\n    classDef needs_input fill:#fff3cd;\n    classDef pending fill:#ffffff;\n    classDef running fill:#cce5ff;\n```"
    );

    let _ = writeln!(
        r,
        "\n## Timeline\n\n```mermaid\ngantt\n    dateFormat x\n    axisFormat %M:%S\n    title Steps as they ran (time since the run started)"
    );
    for s in &c.steps {
        if let Some(t) = i.timings.get(&s.step_id) {
            let end = t
                .finished_ms
                .unwrap_or(t.started_ms + 1)
                .max(t.started_ms + 1);
            let tag = match s.status {
                StepStatus::Done => "done, ",
                StepStatus::Failed => "crit, ",
                StepStatus::Running => "active, ",
                StepStatus::Pending | StepStatus::Skipped | StepStatus::NeedsInput => "",
            };
            let _ = writeln!(
                r,
                "    {} : {}{}, {}, {}",
                s.step_id, tag, s.step_id, t.started_ms, end
            );
        }
    }
    let _ = writeln!(r, "```");
    let _ = writeln!(
        r,
        "\nPatches: `patches/Sxx.patch`. Logs: `logs/step.Sxx.*`. Trace: `trace.jsonl`."
    );
    r
}

fn errors_json(i: &ReportInput<'_>) -> serde_json::Value {
    let c = i.completion;
    let mut errors = Vec::new();
    for s in &c.steps {
        if let (StepStatus::Failed | StepStatus::NeedsInput | StepStatus::Skipped, Some(code)) =
            (s.status, s.reason_code.as_deref())
        {
            errors.push(json!({
                "step_id": s.step_id,
                "status": status_str(s.status),
                "reason_code": code,
                "message": s.message,
                "next_action": completion::next_action(&s.step_id, code),
            }));
        }
    }
    if c.summary.tasks_failed == 0 && !c.coverage.critical_gaps.is_empty() {
        for g in &c.coverage.critical_gaps {
            errors.push(json!({
                "ac": g,
                "reason_code": crate::reason::AC_NOT_COVERED,
                "message": format!("{g} is not covered by a completed step"),
            }));
        }
    }
    json!({
        "request_id": i.planning.request_id,
        "run_id": i.planning.run_id,
        "status": c.status,
        "errors": errors,
    })
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
        &json!({
            "status": status,
            "errors": [{"reason_code": e.reason_code(), "message": e.to_string()}],
        }),
    )?;
    Ok(())
}
