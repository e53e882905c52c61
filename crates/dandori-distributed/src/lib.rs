//! Distributed execution of dandori runs on the Restate durable execution engine
//! (issue 16, design in `docs/distributed.md`).
//!
//! * [`worker`]: `dandori worker`, a Restate service endpoint (HTTP/2) whose
//!   `DandoriStep/execute` handler runs one step of a run with the very same step
//!   pipeline as a local run (`dandori_runner::run_dispatched_step`), in its own
//!   working directory, from and to a git remote.
//! * [`engine`]: `dandori run --engine restate`, a `dandori_runner::dispatch::StepDispatch`
//!   that sends every step through Restate's ingress as an idempotent durable call and
//!   brings its commit back from the remote; the coordinator (scheduling, merging,
//!   `stage.json`, guardrails, report) is the local one.
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
