//! Where a step runs. By default every step runs in a pool worktree of this process
//! ([`crate::coordinator`]); a [`StepDispatch`] sends it elsewhere instead (the
//! Restate engine of `dandori-distributed` sends it to a worker on any machine),
//! while the coordinator keeps scheduling, merging, `stage.json`, guardrails and the
//! report. The worker side runs the very same step pipeline through
//! [`crate::coordinator::run_dispatched_step`].

use dandori_plan::Planning;

use crate::error::RunnerError;
use crate::git::Git;
use crate::step::StepReport;

/// One step handed to a [`StepDispatch`].
pub struct StepCall<'a> {
    pub planning: &'a Planning,
    /// The run's `planning.json`.
    pub planning_path: &'a std::path::Path,
    /// The step's index in `planning.steps`.
    pub index: usize,
    /// `stage.json` `attempts` of this start (1 for the first).
    pub attempt: u32,
    /// The commits the step builds on, oldest dependency first, each named by the
    /// step that made it (`work` for the work branch start).
    pub commits: &'a [(String, String)],
    /// The run's repository: every commit of a `Committed` report must be present
    /// in it when [`StepDispatch::run_step`] returns.
    pub repo: &'a Git,
}

/// Runs steps somewhere else than in this process's worktree pool.
pub trait StepDispatch: Send + Sync {
    /// For progress lines and the trace (`restate`).
    fn name(&self) -> &str;

    /// What `stage.json` records of this engine (`engine`), so `resume` can
    /// continue on it.
    fn record(&self) -> serde_json::Value;

    /// Called once per invocation, before the first step starts: publishes what
    /// every step may build on (the work branch start `work_start`).
    fn prepare(&self, planning: &Planning, repo: &Git, work_start: &str)
    -> Result<(), RunnerError>;

    /// Runs one step to its end and reports it as the local pipeline would. Blocks;
    /// the coordinator calls it from one thread per running step.
    fn run_step(&self, call: &StepCall<'_>) -> StepReport;
}
