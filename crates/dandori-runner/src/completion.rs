//! The completion phase: decides the seed 000 completion summary of a run from
//! `stage.json` and the step reports. The types (and `requires_human_intervention`
//! form of §10.4) live in `dandori_report::completion`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use dandori_plan::{
    Commands, ExpectedDiff, Inputs, Planning, RiskLevel, Role, Scope, Stage, Step, StepOutputs,
    StepStatus,
};
use serde_json::Value;

pub use dandori_report::completion::{
    Completion, CompletionStatus, FollowUp, StepSummary, StepTiming, Summary, exit, next_action,
};

use crate::coverage::CoverageResult;
use crate::executor::TokenUsage;
use crate::plan::RunPaths;
use crate::reason;
use crate::step::{StepReport, StepResult};

/// How a step's note starts when the runner replanned it (seed 004 §2,
/// `crate::replan`); the summary's lessons repeat it.
pub const REPLANNED: &str = "replanned after compound test failures";

pub struct CompletionInput<'a> {
    pub planning: &'a Planning,
    pub stage: &'a Stage,
    pub reports: &'a BTreeMap<String, StepReport>,
    pub coverage: &'a CoverageResult,
    pub follow_ups: &'a [FollowUp],
    pub stop_reason: Option<(&'static str, String)>,
    pub revisions: u64,
    pub max_revisions: u64,
    pub tokens: TokenUsage,
    pub executor: &'a str,
    pub lessons: &'a [String],
    pub environment: &'a Value,
    pub run_dir: &'a Path,
    /// [`Completion::evidence`].
    pub evidence: Value,
}

pub fn build(i: &CompletionInput<'_>) -> Completion {
    let steps: Vec<StepSummary> = i
        .planning
        .steps
        .iter()
        .zip(&i.stage.steps)
        .map(|(p, s)| StepSummary {
            step_id: s.step_id.clone(),
            title: p.title.clone(),
            status: s.status,
            attempts: s.attempts,
            commit: s.commit.clone(),
            reason_code: s.reason_code.clone(),
            message: s.message.clone(),
            links_to_ac: p.links_to_ac.clone(),
        })
        .collect();
    let count = |st: StepStatus| steps.iter().filter(|s| s.status == st).count();
    let done = count(StepStatus::Done);
    let failed = count(StepStatus::Failed);
    let needs_input = count(StepStatus::NeedsInput);
    let pending = count(StepStatus::Pending);
    let loop_detected = steps.iter().any(|s| {
        matches!(
            s.reason_code.as_deref(),
            Some(
                reason::LOOP_DETECTED
                    | reason::MAX_REVISIONS_EXCEEDED
                    | reason::EARLY_TERMINATION
                    | reason::REQUIRES_HUMAN_INTERVENTION
                    | reason::MAX_ITERATIONS
            )
        )
    });
    let revisions_exhausted = i.max_revisions > 0
        && i.revisions >= i.max_revisions
        && steps
            .iter()
            .any(|s| s.reason_code.as_deref() == Some(reason::STEP_TOO_LARGE));
    let human = i.stop_reason.is_some() || loop_detected || revisions_exhausted;
    let gaps = !i.coverage.critical_gaps.is_empty();
    let status = if human {
        CompletionStatus::RequiresHumanIntervention
    } else if failed > 0 {
        CompletionStatus::Failed
    } else if needs_input > 0 {
        CompletionStatus::NeedsInput
    } else if pending > 0 {
        CompletionStatus::Paused
    } else if gaps {
        CompletionStatus::Failed
    } else {
        CompletionStatus::Completed
    };

    let mut key_outcomes = Vec::new();
    for s in &steps {
        if s.status == StepStatus::Done {
            let short = s
                .commit
                .as_deref()
                .map(|c| &c[..c.len().min(10)])
                .unwrap_or("");
            key_outcomes.push(format!("{} {} ({short})", s.step_id, s.title));
        }
    }
    for f in i.follow_ups.iter().filter(|f| f.status == StepStatus::Done) {
        key_outcomes.push(format!("{} covered {}", f.step_id, f.ac));
    }
    let mut lessons: Vec<String> = i.lessons.to_vec();
    let mut recommendations = Vec::new();
    for (s, r) in steps
        .iter()
        .filter_map(|s| i.reports.get(&s.step_id).map(|r| (s, r)))
    {
        if r.splits > 0 {
            lessons.push(format!("{} was split after STEP_TOO_LARGE", s.step_id));
        }
        // Seed 004 §2 replans (crate::replan), as the step noted them.
        for n in r.notes.iter().filter(|n| n.starts_with(REPLANNED)) {
            lessons.push(format!("{} was {n}", s.step_id));
        }
        if r.autofix_cycles > 0 {
            lessons.push(if s.status == StepStatus::Done {
                format!(
                    "{} needed {} fix cycle(s) before its unit commands passed",
                    s.step_id, r.autofix_cycles
                )
            } else {
                format!(
                    "{} used {} fix cycle(s) and its unit commands still fail",
                    s.step_id, r.autofix_cycles
                )
            });
        }
        if matches!(
            r.result,
            StepResult::Failed { .. } | StepResult::NeedsInput { .. }
        ) {
            recommendations.extend(r.notes.iter().cloned());
        }
    }
    for s in &steps {
        match (s.status, s.reason_code.as_deref()) {
            (StepStatus::NeedsInput, Some(reason::MODEL_NOT_CONFIGURED)) => {}
            (StepStatus::Failed | StepStatus::NeedsInput, Some(code)) => {
                recommendations.push(next_action(&s.step_id, code));
            }
            _ => {}
        }
    }
    if needs_input > 0
        && steps
            .iter()
            .any(|s| s.reason_code.as_deref() == Some(reason::MODEL_NOT_CONFIGURED))
    {
        recommendations.push(
            "configure a model (llm.default_provider) or an agent (--executor command --agent-cmd 'claude -p {prompt}'), then `dandori resume`"
                .to_string(),
        );
    }
    // Gaps matter once every step has had its chance; before that they only repeat
    // the waiting or failed steps.
    if failed + needs_input + pending == 0 {
        for g in &i.coverage.critical_gaps {
            recommendations.push(format!("{g} is not covered by a completed step"));
        }
    }
    recommendations.dedup();

    let (reason, comment) = match status {
        CompletionStatus::Completed => (None, "All steps are done.".to_string()),
        CompletionStatus::Paused => (
            Some(format!("{} step(s) left after limits.max_steps_per_run", pending)),
            "Paused; `dandori resume` continues.".to_string(),
        ),
        CompletionStatus::NeedsInput => (
            Some(format!("{needs_input} step(s) wait for input")),
            "Some steps wait for input.".to_string(),
        ),
        CompletionStatus::Failed => (
            Some(if failed > 0 {
                format!("{failed} step(s) failed")
            } else {
                format!("{} acceptance criteria not covered ({})", i.coverage.critical_gaps.len(), reason::AC_NOT_COVERED)
            }),
            if failed > 0 {
                "The run stopped with failures; see report.md and errors.json.".to_string()
            } else {
                format!(
                    "Every step is done, but nothing proves {}: no check turned from red to green; see report.md (Acceptance criteria evidence).",
                    i.coverage.critical_gaps.join(", ")
                )
            },
        ),
        CompletionStatus::RequiresHumanIntervention => (
            Some(match &i.stop_reason {
                Some((code, msg)) => format!("{code}: {msg}"),
                None if loop_detected => {
                    let s = steps.iter().find(|s| {
                        matches!(
                            s.reason_code.as_deref(),
                            Some(
                                reason::LOOP_DETECTED
                                    | reason::MAX_REVISIONS_EXCEEDED
                                    | reason::EARLY_TERMINATION
                                    | reason::REQUIRES_HUMAN_INTERVENTION
                                    | reason::MAX_ITERATIONS
                            )
                        )
                    });
                    match s {
                        Some(s) => format!(
                            "{}: {} {}",
                            s.reason_code.as_deref().unwrap_or(""),
                            s.step_id,
                            s.message.as_deref().unwrap_or("")
                        ),
                        None => reason::LOOP_DETECTED.to_string(),
                    }
                }
                None => format!(
                    "{}: the plan-revision limit ({}) was reached",
                    reason::MAX_REVISIONS_EXCEEDED,
                    i.max_revisions
                ),
            }),
            "Automatic processing cannot continue; human intervention is needed (see recommendations)."
                .to_string(),
        ),
    };
    let current_state = (status != CompletionStatus::Completed).then(|| {
        format!(
            "{done} done, {failed} failed, {needs_input} waiting, {} skipped, {pending} pending of {}",
            count(StepStatus::Skipped),
            steps.len()
        )
    });
    Completion {
        phase: "completion",
        status,
        summary: Summary {
            goal_achieved: status == CompletionStatus::Completed,
            tasks_completed: done,
            tasks_failed: failed,
            key_outcomes,
            lessons_learned: lessons,
            revision_attempts: (i.revisions > 0 || human).then_some(i.revisions),
            reason,
            current_state,
            recommendations,
        },
        done: status == CompletionStatus::Completed,
        comment,
        request_id: i.planning.request_id.clone(),
        run_id: i.planning.run_id.clone(),
        run_dir: i.run_dir.to_path_buf(),
        executor: i.executor.to_string(),
        steps,
        follow_ups: i.follow_ups.to_vec(),
        coverage: i.coverage.clone(),
        tokens: i.tokens,
        environment: i.environment.clone(),
        evidence: i.evidence.clone(),
        exit_code: status.exit_code(),
    }
}

/// The follow-up step `step_id` for an AC the plan left uncovered (seed 001
/// §10.6): what the run executes, and what an MCP client is handed for it.
pub fn follow_up_step(planning: &Planning, paths: &RunPaths, step_id: &str, ac_id: &str) -> Step {
    let ac = planning
        .context
        .acceptance_criteria
        .iter()
        .find(|a| a.id == ac_id);
    let intent = match ac {
        Some(a) => format!(
            "Satisfy acceptance criterion {}: given {}, when {}, then {}",
            a.id, a.given, a.when, a.then
        ),
        None => format!("Satisfy acceptance criterion {ac_id}"),
    };
    // The plan's targets, and the whole repository: an acceptance criterion no
    // step covered may need a change anywhere.
    let mut targets: BTreeSet<String> = planning
        .steps
        .iter()
        .flat_map(|s| s.scope.target_paths.iter().cloned())
        .collect();
    targets.insert(".".to_string());
    let unit = planning
        .context
        .test_instructions
        .unit
        .clone()
        .filter(|u| !u.trim().is_empty());
    let step_id = step_id.to_string();
    Step {
        title: format!("Follow-up: cover {ac_id}"),
        role: Role::Implementer,
        intent,
        scope: Scope {
            target_paths: targets.into_iter().collect(),
            forbidden_paths: None,
            max_diff_lines: planning.limits.max_diff_lines,
            max_files_changed: planning.limits.max_files_changed,
            extra: Default::default(),
        },
        inputs: Inputs {
            request_path: planning
                .steps
                .first()
                .map(|s| s.inputs.request_path.clone())
                .unwrap_or_default(),
            context_files: None,
            code_files_hint: None,
            extra: Default::default(),
        },
        commands: Commands {
            unit: unit.map(|u| vec![u]),
            e2e: None,
            extra: Default::default(),
        },
        success_criteria: vec![format!("{ac_id} holds")],
        links_to_ac: vec![ac_id.to_string()],
        expected_diff: ExpectedDiff {
            lines_max: planning.limits.max_diff_lines,
            files_max: 10,
            risk_level: RiskLevel::Mid,
            extra: Default::default(),
        },
        outputs: StepOutputs {
            patch_path: paths.patch(&step_id).to_string_lossy().into_owned(),
            log_prefix: paths
                .logs
                .join(format!("step.{step_id}"))
                .to_string_lossy()
                .into_owned(),
            extra: Default::default(),
        },
        step_id,
        fallback: None,
        stop_conditions: None,
        depends_on: None,
        produces: None,
        consumes: None,
        boundaries: None,
        estimated_complexity: None,
        required_tools: None,
        suggested_tools: None,
        suggested_persona: None,
        extra: Default::default(),
    }
}

/// The follow-up steps a run recorded in its stage (`follow_ups`).
pub fn follow_ups(stage: &Stage) -> Vec<FollowUp> {
    stage
        .extra
        .get("follow_ups")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}
