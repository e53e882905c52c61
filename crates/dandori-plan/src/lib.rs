//! The plan model of dandori: `planning.json` (seed 004 §3) and `stage.json`
//! (seed 004 §6) as typed values, plus the extension data of seeds 000, 001 and 003
//! (goal understanding, size estimation, chunking decision, dependency graph,
//! execution plan, selected environment); their validation, dependency analysis,
//! and the size estimation and chunking decision.
//!
//! This crate is pure: it takes values and returns values, it never touches the
//! filesystem, the network or processes.

pub mod graph;
pub mod model;
pub mod performance;
pub mod reason_codes;
pub mod repository;
pub mod schema;
pub mod sizing;
pub mod validation;

pub use model::extensions::*;
pub use model::planning::*;
pub use model::stage::*;
