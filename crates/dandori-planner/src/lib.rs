//! The dandori planner: request intake, pre-planning information gathering, the
//! offline deterministic planner, and the common code that turns any planner's
//! decisions into a run directory.
//!
//! # The seam
//!
//! ```text
//! plan(&PlanOptions)
//!   ├─ request::Request::load / from_text        (intake)
//!   ├─ gathering::{scan, Index, select_environment}  (pre-planning gathering)
//!   ├─ PlanningContext { request, scan, index, hits, environment, config, … }
//!   ├─ DraftPlanner::draft(&ctx) -> Draft          ← offline::SimplePlanner, or the
//!   │                                                LLM planner (src/llm/)
//!   ├─ assemble: Draft → planning.json             (ordering, sizing, chunking,
//!   │                                                dependency graph, execution plan,
//!   │                                                validation; fail-closed)
//!   └─ run_dir: runs/<request-id>/<run-id>/{planning.json, stage.json, trace.jsonl}
//! ```
//!
//! A planner implements [`DraftPlanner`]: it reads a [`PlanningContext`] and returns
//! a [`Draft`] — goal understanding, subtasks (title, intent, target paths, produces,
//! consumes, boundaries, depends_on, complexity, links to ACs), acceptance criteria,
//! assumptions, risks and the seed 003 §3.4 size inputs. It decides *what* the work
//! is; everything mechanical is common: topological step order and ids (S01…),
//! limits, size score and category, the chunking decision with every criterion
//! recorded, the dependency graph and execution groups, at least three acceptance
//! criteria ([`acceptance::ensure_minimum`]), paths of outputs, validation, the trace.
//!
//! Fail-closed (seed 003 §9.2): when a planner returns an error, marks its draft
//! [`Draft::not_decomposable`], produces a draft whose dependencies cannot be
//! ordered, or one that fails validation, the plan falls back to a single step and
//! `PLANNING_SKIPPED` records the reason. Only input errors (missing repository,
//! unreadable or empty request) and IO errors stop `plan`.

pub mod acceptance;
pub mod assemble;
pub mod context;
pub mod draft;
pub mod error;
pub mod gathering;
pub mod llm;
pub mod offline;
pub mod pipeline;
pub mod request;
pub mod run_dir;
pub mod test_first;
pub mod text;

pub use context::PlanningContext;
pub use draft::{ChunkingSignals, Draft, DraftSubtask, SizeInputs};
pub use error::PlannerError;
pub use gathering::Progress;
pub use pipeline::{
    PlanFallback, PlanOptions, PlanOutcome, RequestSource, ValidationSummary, plan,
};
pub use request::Request;

/// A planner: decides the work for a request.
pub trait DraftPlanner {
    /// A short name for traces and errors (`offline`, `llm:openai/gpt-4.1`).
    fn name(&self) -> String;
    fn draft(&self, ctx: &PlanningContext) -> Result<Draft, PlannerError>;
    /// Trace events the planner recorded during `draft` (model calls, cache hits,
    /// fallbacks), drained by the pipeline into `trace.jsonl` after each draft.
    fn trace_events(&self) -> Vec<(String, serde_json::Value)> {
        Vec::new()
    }
}

/// Hex SHA-256 of `bytes`.
pub(crate) fn hex_digest(bytes: &[u8]) -> String {
    use sha2::Digest;
    let d = sha2::Sha256::digest(bytes);
    d.iter().map(|b| format!("{b:02x}")).collect()
}
