//! Size estimation and the chunking decision of seed 003 §3–4, following the
//! `dandori-plan` contract (`sizing::estimate_size` / `sizing::decide_chunking`).
//! The planner calls them only through this path so that, once the core crate
//! exports them, this module is replaced by a re-export.

pub mod sizing;
