//! Planner: request intake, the offline deterministic planner, the LLM planner, the plan cache.

pub mod llm;
