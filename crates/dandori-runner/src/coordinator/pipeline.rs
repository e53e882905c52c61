//! A finished step's way onto the work branch: its result recorded, its commits
//! merged.

use dandori_plan::StepStatus;
use dandori_trace::now_rfc3339;
use serde_json::json;

use crate::error::RunnerError;
use crate::git::WORK_START;
use crate::step::{StepReport, StepResult};
use crate::worktree::PoolWorktree;
use crate::{events, reason};

use super::Coordinator;

impl Coordinator<'_> {
    /// Records a finished step; a committed one is merged onto the work branch now.
    pub(super) fn receive(
        &mut self,
        r: StepReport,
        pool: Option<PoolWorktree>,
    ) -> Result<(), RunnerError> {
        if let Some(s) = self
            .stage
            .steps
            .get_mut(r.index)
            .filter(|s| s.step_id == r.step_id)
        {
            // Its worktree matters only while it runs (`crate::interrupted`).
            s.extra.remove("worktree");
            s.extra.remove("overlay");
        }
        self.tokens.add(r.tokens);
        self.agent_tokens += r.agent.tokens;
        let budget = self.opts.config.llm.budgets.task;
        match &r.result {
            StepResult::Committed { .. } => {
                self.consecutive_failures = 0;
                self.integrate(r, pool)?;
            }
            StepResult::Failed {
                reason_code,
                message,
            } => {
                let (code, mut msg) = (*reason_code, message.clone());
                if let Some(env) = &self.environment_failure {
                    msg = format!(
                        "{msg} — likely cause: the environment is not ready (continued with on_failure: warn): {env}"
                    );
                }
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
        // dandori's own model calls only (an agent CLI's are budgeted per step in
        // cost and turns), and only while steps remain: a run whose steps are
        // finished is not stopped after the fact.
        let own = self.tokens.total().saturating_sub(self.agent_tokens);
        let remaining = self
            .stage
            .steps
            .iter()
            .any(|s| s.status == StepStatus::Pending);
        if budget > 0 && own > budget && remaining && self.stop_reason.is_none() {
            self.stop(
                reason::TOKEN_BUDGET_EXCEEDED,
                format!(
                    "{own} tokens of dandori's own model calls used, over llm.budgets.task {budget}; returning what exists"
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
                   "out_of_scope": r.out_of_scope.iter().map(|(f, l)| json!({"path": f, "lines": l})).collect::<Vec<_>>(),
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

    /// Merges a finished step's proof commit (its last) into the work branch: a
    /// fast-forward when the tip is an ancestor, a merge commit otherwise. The tip
    /// between steps depends on timing; [`Coordinator::settle_branch`] replaces it
    /// with the plan-ordered merge at the end, so the final history does not.
    pub(super) fn integrate(
        &mut self,
        r: StepReport,
        pool: Option<PoolWorktree>,
    ) -> Result<(), RunnerError> {
        let StepResult::Committed { commits } = &r.result else {
            return Ok(());
        };
        let wt = self.in_use.remove(&r.index);
        let merged = match commits.last() {
            // Built on the tip itself (a chain of steps): a fast-forward.
            Some(proof) if r.on_base && r.base.as_deref() == Some(self.tip.as_str()) => {
                Some((proof.clone(), proof.clone()))
            }
            // Otherwise the tip cannot be the new commit's ancestor only by chance
            // of timing, and a merge commit holds both either way: no `merge-base`.
            Some(proof) => self
                .main
                .merge_commit(
                    &self.tip,
                    proof,
                    &format!("dandori: integrate {}", r.step_id),
                )?
                .map(|tip| (tip, proof.clone())),
            None => Some((self.tip.clone(), self.tip.clone())),
        };
        if let Some((tip, proof)) = merged {
            if self.opts.dispatch.is_some() {
                // The step ran elsewhere: its test runs come with its report.
                let e = crate::evidence::StepEvidence {
                    step_id: r.step_id.clone(),
                    commit: proof.clone(),
                    runs: r.test_runs.clone(),
                    already_satisfied: r.already_satisfied,
                    // Not carried by a remote step's report yet (docs/runner.md).
                    vacuous: Vec::new(),
                    removed_tests: Vec::new(),
                };
                dandori_fs::write_atomic(
                    self.paths.evidence(&r.step_id),
                    serde_json::to_string_pretty(&e).unwrap_or_default(),
                )?;
            }
            self.main.set_branch(&self.planning.work_branch, &tip)?;
            self.tip = tip;
            let (code, message) = if r.already_satisfied {
                (
                    Some(reason::ALREADY_SATISFIED),
                    r.notes.iter().find(|n| n.contains("already done")).cloned(),
                )
            } else {
                (None, None)
            };
            self.finish_step(&r, StepStatus::Done, code, message, Some(proof));
            self.idle.extend(pool);
        } else {
            self.finish_step(
                &r,
                StepStatus::Failed,
                Some(reason::MERGE_CONFLICT),
                Some(format!(
                    "the commits of {} conflict with the work branch (worktree kept at {})",
                    r.step_id,
                    wt.map(|w| w.display().to_string()).unwrap_or_default()
                )),
                None,
            );
        }
        self.reports.insert(r.step_id.clone(), r);
        // stage.json is written once per scheduling round (execute_steps); a kill
        // before that is repaired by `reconcile`, which trusts the branch's commits.
        Ok(())
    }

    /// Points the work branch at the plan-ordered merge of the done steps no done
    /// step builds on (or at the follow-up chain built on it), and checks it out:
    /// the same plan and the same step commits give the same branch, whatever
    /// order the steps finished in.
    pub(super) fn settle_branch(&mut self) -> Result<(), RunnerError> {
        let n = self.stage.steps.len();
        let done = |i: usize| self.stage.steps[i].status == StepStatus::Done;
        let mut built_on = vec![false; n];
        for i in (0..n).filter(|i| done(*i)) {
            for p in &self.preds[i] {
                built_on[*p] = true;
            }
        }
        let mut commits = vec![(WORK_START.to_string(), self.work_start.clone())];
        for i in (0..n).filter(|i| done(*i) && !built_on[*i]) {
            let s = &self.stage.steps[i];
            if let Some(c) = &s.commit {
                commits.push((s.step_id.clone(), c.clone()));
            }
        }
        let known = self.ancestry();
        let Some(settled) = self.main.merge_all_known(&commits, "work branch", &known)? else {
            self.lessons.push(
                "the done steps conflict when merged in plan order; the work branch keeps the order they finished in"
                    .to_string(),
            );
            return Ok(());
        };
        let follow_up = self
            .follow_ups()
            .iter()
            .rev()
            .find(|f| f.status == StepStatus::Done)
            .and_then(|f| f.commit.clone());
        let tip = match follow_up {
            Some(f) if self.main.is_ancestor(&settled, &f)? => f,
            _ => settled,
        };
        self.main.set_branch(&self.planning.work_branch, &tip)?;
        self.tip = tip;
        Ok(())
    }
}
