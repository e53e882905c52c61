//! The run as a Restate workflow: `DandoriRun`, keyed by the run id (a later
//! generation of the same run, started by `dandori resume` after the workflow
//! ended, by `<run id>.g<n>`). Its `run` handler is the scheduling loop: it starts
//! every ready step (all predecessors done, plan order, at most `max_parallel` at
//! once) as a durable call of `DandoriStep/execute`, collects the outcomes as they
//! complete, skips the dependents of failed steps, and keeps the stage machine of
//! seed 004 §6 in its state (`stage`). All of it is journaled: a workflow whose
//! worker dies is replayed on another one, and the calls already made are not made
//! again. Each outcome resolves the durable promise `step/<step id>`, which the
//! coordinator (`dandori run` / `resume`, attached through the shared `outcome`
//! handler) records, merges and reports; `stop` is how the coordinator's guardrails
//! stop the starting of steps.

use std::collections::{HashMap, HashSet};

use restate_sdk::prelude::*;

use crate::protocol::{
    OutcomeStatus, RunSpec, StepOutcome, StepRequest, WorkflowState, WorkflowStep,
};
use crate::worker::DandoriStepClient;

/// The coordinator's stop signal (a promise).
const STOP: &str = "stop";
/// The workflow state key holding [`WorkflowState`].
const STAGE: &str = "stage";

/// The promise of a step's outcome.
pub fn outcome_promise(step_id: &str) -> String {
    format!("step/{step_id}")
}

/// The scheduling decisions of the workflow, apart from the engine: the same rule
/// as the local coordinator's (`dandori_runner` scheduling).
#[derive(Debug, Clone)]
pub struct Schedule {
    pub spec: RunSpec,
    pub state: WorkflowState,
    started: u64,
}

impl Schedule {
    pub fn new(spec: RunSpec) -> Schedule {
        let steps = spec
            .steps
            .iter()
            .map(|s| WorkflowStep {
                step_id: s.step_id.clone(),
                // A step `running` in stage.json was cut off: it starts again.
                status: match s.status.as_str() {
                    "running" => "pending".to_string(),
                    other => other.to_string(),
                },
                attempt: s.attempts,
                commit: s.commit.clone(),
                reason_code: None,
                worker: None,
            })
            .collect();
        Schedule {
            state: WorkflowState {
                run_id: spec.run_id.clone(),
                finished: false,
                stopped: None,
                steps,
            },
            spec,
            started: 0,
        }
    }

    fn status(&self, i: usize) -> &str {
        self.state.steps[i].status.as_str()
    }

    /// Dependents of failed, skipped or waiting steps never start.
    pub fn block_dependents(&mut self) {
        for i in 0..self.state.steps.len() {
            if self.status(i) != "pending" {
                continue;
            }
            let blocked = self.spec.steps[i].preds.iter().find_map(|p| {
                match self.state.steps.get(*p).map(|s| s.status.as_str()) {
                    Some("failed" | "skipped") => Some("skipped"),
                    Some("needs_input") => Some("needs_input"),
                    _ => None,
                }
            });
            if let Some(status) = blocked {
                let s = &mut self.state.steps[i];
                s.status = status.to_string();
                s.reason_code = Some(dandori_runner::reason::DEPENDENCY_FAILED.to_string());
            }
        }
    }

    fn running(&self) -> usize {
        self.state
            .steps
            .iter()
            .filter(|s| s.status == "running")
            .count()
    }

    /// The steps to start now, in plan order, each marked running with its
    /// request.
    pub fn start_ready(&mut self) -> Vec<(usize, StepRequest)> {
        self.block_dependents();
        let mut out = Vec::new();
        if self.state.stopped.is_some() {
            return out;
        }
        let mut running = self.running();
        for i in 0..self.state.steps.len() {
            if running >= self.spec.max_parallel.max(1) || self.started >= self.spec.max_steps {
                break;
            }
            let preds = &self.spec.steps[i].preds;
            if self.status(i) != "pending" || !preds.iter().all(|p| self.status(*p) == "done") {
                continue;
            }
            // The base: the predecessors' proof commits in plan order, or the work
            // branch start.
            let mut commits: Vec<(String, String)> = preds
                .iter()
                .filter_map(|p| {
                    let s = &self.state.steps[*p];
                    Some((s.step_id.clone(), s.commit.clone()?))
                })
                .collect();
            if commits.is_empty() {
                commits.push((
                    dandori_runner::git::WORK_START.to_string(),
                    self.spec.work_start.clone(),
                ));
            }
            let s = &mut self.state.steps[i];
            s.status = "running".to_string();
            s.attempt += 1;
            s.reason_code = None;
            running += 1;
            self.started += 1;
            out.push((
                i,
                StepRequest {
                    run_id: self.spec.run_id.clone(),
                    step_id: s.step_id.clone(),
                    index: i,
                    attempt: s.attempt,
                    remote: self.spec.remote.clone(),
                    planning: self.spec.planning.clone(),
                    commits,
                },
            ));
        }
        out
    }

    /// Records step `i`'s outcome.
    pub fn finish(&mut self, i: usize, outcome: &StepOutcome) {
        let s = &mut self.state.steps[i];
        s.status = match outcome.status {
            OutcomeStatus::Committed => "done",
            OutcomeStatus::Failed => "failed",
            OutcomeStatus::NeedsInput => "needs_input",
        }
        .to_string();
        s.commit = outcome.commits.last().cloned();
        s.reason_code = outcome.reason_code.clone();
        s.worker = Some(outcome.worker.clone());
    }
}

/// The run's workflow. It runs no step itself: it is served by every worker
/// next to `DandoriStep`, and any of them replays it.
pub struct DandoriRun;

#[restate_sdk::workflow]
impl DandoriRun {
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        spec: Json<RunSpec>,
    ) -> HandlerResult<Json<WorkflowState>> {
        let Json(spec) = spec;
        if spec.run_id != ctx.key() && !ctx.key().starts_with(&format!("{}.g", spec.run_id)) {
            return Err(TerminalError::new(format!(
                "workflow {} is not keyed by run {}",
                ctx.key(),
                spec.run_id
            ))
            .into());
        }
        let mut schedule = Schedule::new(spec);
        let mut calls = DurableFuturesUnordered::new();
        let mut which: HashMap<usize, usize> = HashMap::new();
        let mut called: HashSet<usize> = HashSet::new();
        loop {
            if schedule.state.stopped.is_none()
                && let Some(reason) = ctx.peek_promise::<String>(STOP).await?
            {
                schedule.state.stopped = Some(reason);
            }
            for (i, req) in schedule.start_ready() {
                called.insert(i);
                let call = ctx
                    .service_client::<DandoriStepClient>()
                    .execute(Json(req))
                    .call();
                which.insert(calls.push(call), i);
            }
            ctx.set(STAGE, Json(schedule.state.clone()));
            let Some((k, result)) = calls.next().await? else {
                break;
            };
            let Some(i) = which.remove(&k) else {
                continue;
            };
            let outcome = match result {
                Ok(Json(o)) => o,
                // The step's handler gave up (an invalid request): a failed step.
                Err(e) => StepOutcome {
                    reason_code: Some(dandori_runner::reason::EXECUTOR_ERROR.to_string()),
                    message: Some(e.to_string()),
                    ..StepOutcome::bare(OutcomeStatus::Failed, "")
                },
            };
            schedule.finish(i, &outcome);
            let step_id = schedule.state.steps[i].step_id.clone();
            ctx.resolve_promise(&outcome_promise(&step_id), Json(outcome));
        }
        // Every step the workflow did not call gets an outcome too, so that no
        // coordinator waits forever on one (it asks only for steps it scheduled by
        // the same rule; a stop or a divergence could still leave one).
        for i in (0..schedule.state.steps.len()).filter(|i| !called.contains(i)) {
            let step = &schedule.state.steps[i];
            let (code, why) = if step.status == "skipped" {
                (
                    dandori_runner::reason::DEPENDENCY_FAILED,
                    "it depends on a step that did not complete".to_string(),
                )
            } else {
                (
                    dandori_runner::reason::EXECUTOR_ERROR,
                    format!(
                        "the run's workflow {} ended before starting it{}; `dandori resume` starts it",
                        ctx.key(),
                        schedule
                            .state
                            .stopped
                            .as_deref()
                            .map(|r| format!(" (stopped: {r})"))
                            .unwrap_or_default()
                    ),
                )
            };
            let outcome = StepOutcome {
                reason_code: Some(code.to_string()),
                message: Some(format!("{}: {why}", step.step_id)),
                ..StepOutcome::bare(OutcomeStatus::Failed, "")
            };
            ctx.resolve_promise(&outcome_promise(&step.step_id), Json(outcome));
        }
        schedule.state.finished = true;
        ctx.set(STAGE, Json(schedule.state.clone()));
        Ok(Json(schedule.state))
    }

    /// Waits for a step's outcome (resolved by `run` when the step's call returns).
    #[handler]
    async fn outcome(
        &self,
        ctx: SharedWorkflowContext<'_>,
        step_id: Json<String>,
    ) -> HandlerResult<Json<StepOutcome>> {
        let Json(step_id) = step_id;
        let key = outcome_promise(&step_id);
        let outcome = ctx.promise::<Json<StepOutcome>>(&key).await?;
        Ok(outcome)
    }

    /// The workflow's stage machine as it is now (empty before `run` started).
    #[handler]
    async fn status(&self, ctx: SharedWorkflowContext<'_>) -> HandlerResult<Json<WorkflowState>> {
        let state = ctx.get::<Json<WorkflowState>>(STAGE).await?;
        Ok(state.unwrap_or_default())
    }

    /// Stops the starting of steps (a guardrail of the coordinator, or its end);
    /// running steps finish.
    #[handler]
    async fn stop(
        &self,
        ctx: SharedWorkflowContext<'_>,
        reason: Json<String>,
    ) -> HandlerResult<()> {
        let Json(reason) = reason;
        if ctx.peek_promise::<String>(STOP).await?.is_none() {
            ctx.resolve_promise(STOP, reason);
        }
        Ok(())
    }
}
