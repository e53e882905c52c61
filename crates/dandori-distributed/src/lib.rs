//! Distributed execution of dandori runs on the Restate durable execution engine
//! (issue 16, design in `docs/distributed.md`).
//!
//! * [`worker`]: `dandori worker`, a Restate service endpoint (HTTP/2) whose
//!   `DandoriStep/execute` handler runs one step of a run with the very same step
//!   pipeline as a local run (`dandori_runner::run_dispatched_step`), in its own
//!   working directory, from and to a git remote.
//! * [`workflow`]: `DandoriRun`, the run as a Restate workflow keyed by the run id:
//!   its `run` handler schedules the steps as parallel durable calls and keeps the
//!   stage machine in its state; served by every worker.
//! * [`engine`]: `dandori run --engine restate`, a `dandori_runner::dispatch::StepDispatch`
//!   that starts (or attaches to) the run's workflow and takes each step's outcome
//!   from it, bringing its commit back from the remote; merging, `stage.json`,
//!   guardrails and the report stay with the local coordinator.
//! * [`identity`]: Restate request identity (the worker answers only its server).
//! * [`admin`]: deployment registration over Restate's admin API.
//! * [`protocol`]: what travels through the engine's journal (never a secret).

pub mod admin;
pub mod engine;
pub mod error;
pub mod identity;
pub mod protocol;
pub mod refs;
pub mod worker;
pub mod workflow;

pub use engine::{EngineOptions, RestateEngine};
pub use error::DistributedError;
pub use worker::{WorkerOptions, serve};
