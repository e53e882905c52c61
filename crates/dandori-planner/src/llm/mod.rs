//! The LLM planner: a `DraftPlanner` that asks a model (through `dandori-llm`) for the
//! seed 000 planning answer.
//!
//! * [`prompt`]: templates from `crates/dandori-planner/prompts/`, strategies and
//!   decomposition levels, the repository context packed into its token budget;
//! * [`response`]: the seed 000 response formats, typed, and their schemas;
//! * [`checks`]: checks beyond the schema, quoted back in the corrective re-ask;
//! * [`cache`]: the plan cache of seed 000 §11.1.1.

pub mod cache;
pub mod cache_seal;
pub mod checks;
pub mod engine;
pub mod failure;
pub mod planner;
pub mod prompt;
pub mod provider;
pub mod response;

pub use planner::LlmPlanner;

#[cfg(test)]
mod engine_tests;
