//! `runner:`: how plans are executed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RunnerConfig {
    /// Upper bound of concurrently running steps (seed 003 §8.1 `max_parallel_workers`).
    pub max_parallel_workers: u32,
    /// External agent command template, e.g. `claude -p {prompt}`.
    pub agent_cmd: Option<String>,
    /// Variables of the caller's environment the agent gets although they are
    /// secrets or outside `shell_environment_policy` (its own credential, e.g.
    /// `ANTHROPIC_API_KEY`): an allow-list; nothing else is passed.
    pub agent_env: Vec<String>,
    /// More state paths of the agent under `HOME` (relative, e.g.
    /// `.config/my-agent`) writable inside the sandbox, beside the built-in ones
    /// (`.claude`, `.claude.json`, `.codex`, `.gemini`, `.aider`, `.cache`, …).
    pub agent_state: Vec<String>,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            max_parallel_workers: 3,
            agent_cmd: None,
            agent_env: Vec::new(),
            agent_state: Vec::new(),
        }
    }
}
