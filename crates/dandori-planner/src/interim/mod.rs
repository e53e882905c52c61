//! Validation, dependency graph and sizing, following the `dandori-plan` contract
//! (`validation::validate`, `graph::analyze`, `sizing::estimate_size` /
//! `sizing::decide_chunking`). The planner calls them only through these paths so
//! that, once the core crate exports them, this module is replaced by re-exports.

pub mod graph;
pub mod sizing;
pub mod validation;
