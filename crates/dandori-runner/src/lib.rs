//! Runner: the execution coordinator of dandori. It executes a validated
//! `planning.json` step by step (seed 004 §5–6): `stage.json` drives execution,
//! every step runs in a pool worktree (one per worker) moved to the merge of its
//! dependencies' commits, through an [`executor::Executor`], is checked (a change
//! within its targets, diff size, unit commands, autofix) and committed with
//! trailers that prove it done and carry its verification evidence, and is merged
//! onto the work branch as soon as it is done; the history depends on the plan and
//! the changes, not on timing.
//! Reflection, coverage guardrails and run-level limits (seed 000 §5, §10–11,
//! seed 001 §10.5) keep the run from looping or running away; a run killed at any
//! moment resumes from `stage.json` reconciled with the work branch.

pub mod completion;
pub mod coordinator;
pub mod coverage;
pub mod dispatch;
pub mod environment;
pub mod error;
pub mod events;
pub mod evidence;
pub mod executor;
pub mod git;
pub mod interrupted;
pub mod plan;
pub mod process;
pub mod prompt;
pub mod pythonpath;
pub mod reason;
pub mod reflection;
pub mod replan;
pub mod report;
pub mod step;
pub mod workspace;
pub mod worktree;

pub use completion::{Completion, CompletionStatus, exit};
pub use coordinator::{
    ExecutorChoice, ExecutorKind, Progress, RunOptions, RunOutcome, run, run_dispatched_step,
};
pub use error::RunnerError;

/// The exit code for an error that stopped a run before completion.
pub fn exit_code_for_error(e: &RunnerError) -> u8 {
    match e {
        RunnerError::Gate { .. } => exit::GATE_REFUSED,
        RunnerError::Fs(_)
        | RunnerError::Trace(_)
        | RunnerError::InvalidInput { .. }
        | RunnerError::Git { .. }
        | RunnerError::Process { .. }
        | RunnerError::Executor(_) => exit::ERROR,
    }
}
