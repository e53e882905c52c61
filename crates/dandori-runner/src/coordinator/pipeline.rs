//! A finished step's way onto the work branch: its result recorded, its commits
//! merged.

use std::collections::BTreeMap;

use dandori_plan::StepStatus;
use dandori_trace::now_rfc3339;
use serde_json::json;

use crate::error::RunnerError;
use crate::step::{self, StepReport, StepResult};
use crate::{events, reason};

use super::Coordinator;

impl Coordinator<'_> {
    pub(super) fn receive(
        &mut self,
        r: StepReport,
        finished: &mut BTreeMap<usize, StepReport>,
    ) -> Result<(), RunnerError> {
        self.tokens.add(r.tokens);
        let budget = self.opts.config.llm.budgets.task;
        match &r.result {
            StepResult::Committed { .. } => {
                self.consecutive_failures = 0;
                finished.insert(r.index, r);
            }
            StepResult::Failed {
                reason_code,
                message,
            } => {
                let (code, msg) = (*reason_code, message.clone());
                self.finish_step(&r, StepStatus::Failed, Some(code), Some(msg.clone()), None);
                self.consecutive_failures += 1;
                let ee = &self.opts.config.planning.execution.early_termination;
                if ee.enabled && self.consecutive_failures >= ee.max_consecutive_failures {
                    self.stop(
                        reason::EARLY_TERMINATION,
                        format!(
                            "{} consecutive step failures (max_consecutive_failures)",
                            self.consecutive_failures
                        ),
                    );
                }
                if code == reason::TOKEN_BUDGET_EXCEEDED && self.stop_reason.is_none() {
                    self.stop(code, msg.clone());
                }
                if matches!(code, reason::LOOP_DETECTED) {
                    self.lessons.push(format!(
                        "{}: a repeated action was stopped: {msg}",
                        r.step_id
                    ));
                }
                self.reports.insert(r.step_id.clone(), r);
            }
            StepResult::NeedsInput {
                reason_code,
                message,
            } => {
                let (code, msg) = (*reason_code, message.clone());
                self.finish_step(&r, StepStatus::NeedsInput, Some(code), Some(msg), None);
                self.reports.insert(r.step_id.clone(), r);
            }
        }
        if budget > 0 && self.tokens.total() > budget && self.stop_reason.is_none() {
            self.stop(
                reason::TOKEN_BUDGET_EXCEEDED,
                format!(
                    "{} tokens used, over llm.budgets.task {budget}; returning what exists",
                    self.tokens.total()
                ),
            );
        }
        Ok(())
    }

    pub(super) fn finish_step(
        &mut self,
        r: &StepReport,
        status: StepStatus,
        reason_code: Option<&'static str>,
        message: Option<String>,
        commit: Option<String>,
    ) {
        let now = now_rfc3339();
        let ms = self.run_ms();
        if let Some(s) = self.stage.steps.get_mut(r.index) {
            s.status = status;
            s.reason_code = reason_code.map(str::to_string);
            s.message = message.clone();
            s.commit = commit.clone();
            s.finished_at = Some(now.clone());
        }
        if let Some(t) = self.timings.get_mut(&r.step_id) {
            t.finished_at = Some(now);
            t.finished_ms = Some(ms);
        }
        self.emit(
            events::STEP_END,
            json!({"step_id": r.step_id, "status": status, "reason_code": reason_code,
                   "message": message, "commit": commit, "diff_lines": r.diff_lines,
                   "files_changed": r.files_changed, "autofix_cycles": r.autofix_cycles,
                   "splits": r.splits, "unit_passed": r.unit_passed,
                   "duration_ms": r.duration.as_millis() as u64, "tokens": r.tokens}),
        );
        self.progress(&format!(
            "{}: {}{}",
            r.step_id,
            serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            reason_code.map(|c| format!(" ({c})")).unwrap_or_default()
        ));
    }

    /// Cherry-picks a finished step's commits onto the work branch.
    pub(super) fn integrate(&mut self, r: StepReport) -> Result<(), RunnerError> {
        let StepResult::Committed { commits } = &r.result else {
            return Ok(());
        };
        // While the tip is still the step's base, each commit's parent is the tip and
        // git fast-forwards to it instead of copying it (same tree, same message).
        let mut ff = r.base.as_deref() == Some(self.tip.as_str());
        let mut head = None;
        for c in commits {
            head = self.main.cherry_pick(c, ff)?;
            match &head {
                Some(h) => ff = h == c,
                None => break,
            }
        }
        let attempt = self.stage.steps[r.index].attempts;
        let wt = step::worktree_path(&self.paths, &r.step_id, attempt);
        let head = match (head, commits.is_empty()) {
            (Some(h), _) => Some(h),
            (None, true) => Some(self.tip.clone()),
            (None, false) => None,
        };
        if let Some(head) = head {
            self.tip = head.clone();
            self.finish_step(&r, StepStatus::Done, None, None, Some(head));
            self.to_remove.push(wt);
        } else {
            self.finish_step(
                &r,
                StepStatus::Failed,
                Some(reason::MERGE_CONFLICT),
                Some(format!(
                    "the commits of {} do not apply on the work branch (worktree kept at {})",
                    r.step_id,
                    wt.display()
                )),
                None,
            );
        }
        self.reports.insert(r.step_id.clone(), r);
        // stage.json is written once per scheduling round (execute_steps); a kill
        // before that is repaired by `reconcile`, which trusts the branch's commits.
        Ok(())
    }
}
