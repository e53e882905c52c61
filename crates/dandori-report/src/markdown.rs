//! `report.md` of a run: acceptance criteria ↔ steps ↔ commits, status, timings,
//! tokens, a Mermaid DAG of the step dependencies and a Mermaid Gantt chart of the
//! real timeline.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

use dandori_plan::{Planning, StepStatus};

use crate::completion::{Completion, StepTiming, TokenUsage};
use crate::step_status_str;

/// Everything `report.md` is made of. The runner gathers it; rendering does no IO.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The plan: request and run ids, summary, branches, acceptance criteria.
    pub planning: &'a Planning,
    /// The completion summary: status, every step (in plan order) with its status,
    /// attempts, commit and reason code, follow-up steps, coverage, token totals.
    pub completion: &'a Completion,
    /// Measurements of the steps that ran, by step id. A step without an entry
    /// (skipped, not reached) shows `—`.
    pub metrics: &'a BTreeMap<String, StepMetrics>,
    /// Wall-clock spans of the steps that started, by step id (the Gantt chart and
    /// the duration column).
    pub timings: &'a BTreeMap<String, StepTiming>,
    /// `preds[i]`: indices (into `completion.steps`) of the steps step `i` depends
    /// on (the edges of the Mermaid DAG).
    pub preds: &'a [BTreeSet<usize>],
}

/// What was measured of one step that ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StepMetrics {
    /// Lines added + removed by the step's diff.
    pub diff_lines: u64,
    /// Whether its unit commands passed; `None` when it has none or they did not run.
    pub unit_passed: Option<bool>,
    /// Autofix cycles spent on failing unit commands.
    pub autofix_cycles: u64,
    /// Tokens the step's executor used.
    pub tokens: TokenUsage,
}

fn short(c: &Option<String>) -> String {
    c.as_deref()
        .map(|c| format!("`{}`", c.chars().take(10).collect::<String>()))
        .unwrap_or_else(|| "—".to_string())
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The runner's verdict on one criterion from its own evidence
/// (`completion.evidence.acceptance_criteria[]`).
struct Judgement<'a> {
    status: &'a str,
    check: &'a str,
    after: &'a str,
}

impl Judgement<'_> {
    /// Covered only by evidence of its own; otherwise why not.
    fn cell(&self) -> String {
        let check = if self.check.is_empty() {
            "no check of its own".to_string()
        } else {
            cell(self.check)
        };
        match self.status {
            "covered" => "yes".to_string(),
            "unverified" => format!("**no**: unverified ({check})"),
            _ if self.after.is_empty() => format!("**no**: not covered ({check})"),
            _ => format!("**no**: not covered ({check}: {})", cell(self.after)),
        }
    }
}

fn judgement<'a>(c: &'a Completion, ac: &str) -> Option<Judgement<'a>> {
    let e = c
        .evidence
        .get("acceptance_criteria")?
        .as_array()?
        .iter()
        .find(|e| e.get("ac").and_then(|v| v.as_str()) == Some(ac))?;
    let text = |k: &str| e.get(k).and_then(|v| v.as_str()).unwrap_or("");
    Some(Judgement {
        status: e.get("status").and_then(|v| v.as_str())?,
        check: text("check"),
        after: text("after_result"),
    })
}

/// `report.md` of a run. Pure: the same input gives the same text.
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
        c.status.as_str(),
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
        let judged = judgement(c, &ac.id);
        for s in &c.steps {
            if s.links_to_ac.contains(&ac.id) {
                steps.push(format!("{} ({})", s.step_id, step_status_str(s.status)));
                if s.status == StepStatus::Done {
                    covered = true;
                    commits.push(short(&s.commit));
                }
            }
        }
        for f in c.follow_ups.iter().filter(|f| f.ac == ac.id) {
            steps.push(format!(
                "{} ({}, {} priority)",
                f.step_id,
                step_status_str(f.status),
                f.priority
            ));
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
            match judged {
                // The runner's judgement of its own evidence: the same as the
                // evidence section below.
                Some(j) => j.cell(),
                None if covered => "yes".to_string(),
                None => "**no**".to_string(),
            }
        );
    }

    let _ = writeln!(r, "\n## Steps\n");
    let _ = writeln!(
        r,
        "| Step | Title | Status | Attempts | Commit | Diff lines | Unit | Fix cycles | Duration | Reason |\n|---|---|---|---|---|---|---|---|---|---|"
    );
    for s in &c.steps {
        let rep = i.metrics.get(&s.step_id);
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
            step_status_str(s.status),
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

    let with_tokens: Vec<_> = c
        .steps
        .iter()
        .filter_map(|s| {
            i.metrics
                .get(&s.step_id)
                .filter(|m| m.tokens.total() > 0)
                .map(|m| (s, m.tokens))
        })
        .collect();
    if !with_tokens.is_empty() {
        let _ = writeln!(
            r,
            "\n## Tokens\n\n| Step | Prompt | Completion | Total |\n|---|---|---|---|"
        );
        for (s, t) in &with_tokens {
            let _ = writeln!(
                r,
                "| {} | {} | {} | {} |",
                s.step_id,
                t.prompt_tokens,
                t.completion_tokens,
                t.total()
            );
        }
        let _ = writeln!(
            r,
            "| run | {} | {} | {} |",
            c.tokens.prompt_tokens,
            c.tokens.completion_tokens,
            c.tokens.total()
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
            // Text, not markup, in a Mermaid label: `<b>` would be rendered.
            s.title
                .replace('"', "'")
                .replace('\n', " ")
                .replace('<', "#lt;")
                .replace('>', "#gt;"),
            step_status_str(s.status)
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

    let ran = c.steps.iter().any(|s| i.timings.contains_key(&s.step_id));
    if ran {
        let _ = writeln!(
            r,
            "\n## Timeline\n\n```mermaid\ngantt\n    dateFormat x\n    axisFormat %M:%S\n    title Steps as they ran (time since the run started)"
        );
    } else {
        let _ = writeln!(r, "\n## Timeline\n\nNo step ran in this run.");
    }
    for s in c.steps.iter().filter(|_| ran) {
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
    if ran {
        let _ = writeln!(r, "```");
    }
    let _ = writeln!(
        r,
        "\nPatches: `patches/Sxx.patch`. Logs: `logs/step.Sxx.*`. Trace: `trace.jsonl`."
    );
    r
}
