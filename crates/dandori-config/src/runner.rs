//! `runner:`: how plans are executed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RunnerConfig {
    /// Upper bound of concurrently running steps (seed 003 §8.1 `max_parallel_workers`).
    pub max_parallel_workers: u32,
    /// External agent command template, e.g. `aider --message {prompt}`.
    pub agent_cmd: Option<String>,
    /// An agent CLI preset (`claude`, `codex`, `gemini`): its headless invocation,
    /// edit permissions, structured output, sessions and credential variables are
    /// known (docs/agents.md). Wins over `agent_cmd`.
    pub agent: Option<AgentPreset>,
    /// The model the preset's CLI is asked to use (its `--model` / `-m`); unset,
    /// the CLI's own default.
    pub agent_model: Option<String>,
    /// Variables of the caller's environment the agent gets although they are
    /// secrets or outside `shell_environment_policy` (its own credential, e.g.
    /// `ANTHROPIC_API_KEY`): an allow-list; nothing else is passed.
    pub agent_env: Vec<String>,
    /// More state paths of the agent under `HOME` (relative, e.g.
    /// `.config/my-agent`) writable inside the sandbox, beside the built-in ones
    /// (`.claude`, `.claude.json`, `.codex`, `.gemini`, `.aider`, `.cache`, …).
    pub agent_state: Vec<String>,
    /// Where each step runs: `auto` (the default), a copy-on-write overlay
    /// where overlayfs can be mounted and the executor works in one, the pool
    /// otherwise; `overlay`, a copy-on-write view per step (overlayfs in a
    /// mount namespace) over one shared checkout of the run's start, its change
    /// read from the upper layer, mounted at a directory fixed per worker;
    /// `pool`, a pool of git worktrees each holding a checkout of every file,
    /// moved from step to step. `auto` and `overlay` fall back to the pool
    /// where overlayfs cannot be mounted, with a `STEP_WORKSPACE` event and a
    /// line of the report saying why (docs/runner.md).
    pub step_workspace: StepWorkspaceKind,
}

/// `runner.step_workspace`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepWorkspaceKind {
    /// Copy-on-write overlays where overlayfs works, pool worktrees otherwise.
    #[default]
    Auto,
    /// Pool worktrees: one full checkout per worker.
    Pool,
    /// Copy-on-write overlays over one shared checkout.
    Overlay,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            max_parallel_workers: 3,
            agent_cmd: None,
            agent: None,
            agent_model: None,
            agent_env: Vec::new(),
            agent_state: Vec::new(),
            step_workspace: StepWorkspaceKind::Auto,
        }
    }
}

/// The agent CLIs dandori knows how to drive (`runner.agent`, `--agent`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgentPreset {
    /// Claude Code (`claude`, npm `@anthropic-ai/claude-code`).
    Claude,
    /// Codex CLI (`codex`, npm `@openai/codex`).
    Codex,
    /// Gemini CLI (`gemini`, npm `@google/gemini-cli`).
    Gemini,
}

impl AgentPreset {
    pub const ALL: [AgentPreset; 3] =
        [AgentPreset::Claude, AgentPreset::Codex, AgentPreset::Gemini];

    /// `claude`, `codex`, `gemini`: the preset's name and its program's.
    pub fn name(self) -> &'static str {
        match self {
            AgentPreset::Claude => "claude",
            AgentPreset::Codex => "codex",
            AgentPreset::Gemini => "gemini",
        }
    }
}
