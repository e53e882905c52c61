//! Executors: what does the work of one step inside its worktree. The runner owns
//! everything around them (diff size, unit commands, commits, stage); an executor
//! only changes files.

pub mod agent_preset;
pub mod command;
pub mod conversation;
pub mod interrupted_call;
pub mod llm;
pub mod none;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::error::RunnerError;

/// One invocation of an executor for one step (or one part / fix attempt of it).
#[derive(Clone)]
pub struct ExecRequest<'a> {
    pub step_id: &'a str,
    pub prompt: &'a str,
    /// The step's own git worktree; the only place the executor may write.
    pub workdir: &'a Path,
    /// Where the prompt is also written (the `{prompt_file}` placeholder).
    pub prompt_file: &'a Path,
    /// The log this invocation appends to (`logs/step.Sxx.agent.log`).
    pub log: &'a Path,
    /// Environment of child processes (explicit, never the runner's own mutated).
    pub env: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    /// Masks secrets in what the executor writes to its log.
    pub masker: &'a dandori_trace::Masker,
    /// Reflect every this many actions (0: on errors only), chosen for the step
    /// ([`crate::reflection::interval_for`]).
    pub reflection_interval: u32,
    /// Progress while an agent command runs (every [`crate::process::HEARTBEAT`]:
    /// elapsed time and its last output line, masked).
    pub heartbeat: Option<&'a crate::process::Heartbeat<'a>>,
    /// The step's seed 001 §10.3 `suggested_tools` (empty when the plan names
    /// none): the LLM executor offers them first and names them to the model.
    pub suggested_tools: &'a [String],
    /// The step's seed 001 §10.3 `suggested_persona`: the LLM executor's role.
    pub suggested_persona: Option<&'a str>,
}

/// Tokens spent by a model-backed executor.
pub use dandori_report::TokenUsage;

#[derive(Debug, Clone, PartialEq)]
pub enum ExecOutcome {
    /// The executor believes the step's work is in the worktree.
    Completed,
    /// It could not do the work.
    Failed {
        reason_code: &'static str,
        message: String,
    },
    /// Something outside dandori is needed (a model, an approval).
    NeedsInput {
        reason_code: &'static str,
        message: String,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct StepExecution {
    pub outcome: ExecOutcome,
    pub tokens: TokenUsage,
    /// Tool calls or process runs made (feeds periodic reflection).
    pub actions: u32,
    /// Reflection records produced inside the executor (LLM tool loop).
    pub reflections: Vec<serde_json::Value>,
    /// One-line description for the trace and report.
    pub summary: String,
    /// How tools were confined (tool list, sandbox kind and fallback), for the trace.
    pub tooling: Option<serde_json::Value>,
    /// Each model call and tool call the executor made, as (`LLM_CALL` |
    /// `TOOL_CALL`, event data with `started_at` and `duration_ms`), in order; the
    /// runner writes them to the trace (metrics and OpenTelemetry spans read them).
    pub calls: Vec<(&'static str, serde_json::Value)>,
}

pub trait Executor: Send + Sync {
    /// `command`, `llm` or `none`, as in `--executor`.
    fn name(&self) -> &'static str;
    /// False when no model or agent is configured: steps then wait (needs_input).
    fn can_execute(&self) -> bool {
        true
    }
    /// What can be checked before any slow work (an agent program that is not
    /// there): the problem, or None.
    fn preflight(&self) -> Option<String> {
        None
    }
    /// An agent CLI preset: its name and, after the preflight, its version.
    fn agent(&self) -> Option<(&'static str, Option<String>)> {
        None
    }
    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError>;
    /// False when the executor cannot work in a copy-on-write step workspace
    /// (`runner.step_workspace: overlay`): the runner then uses pool worktrees.
    fn works_in_overlay(&self) -> bool {
        true
    }
}
