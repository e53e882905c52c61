//! `llm:`: model providers declared in config, so a new OpenAI-compatible endpoint
//! needs no code.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Name of the provider used when `--provider` is not given. None = offline.
    pub default_provider: Option<String>,
    pub providers: Vec<ProviderConfig>,
    pub budgets: TokenBudgets,
    /// Prices per model name (the model a provider answered with, or the configured
    /// one), for the `api_cost` of `dandori metrics` (seed 000 §16.2.2). A model
    /// without a price is reported as unpriced, never guessed.
    pub pricing: BTreeMap<String, ModelPrice>,
}

/// USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelPrice {
    pub input_usd_per_mtok: f64,
    pub output_usd_per_mtok: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    /// `http://` or `https://` endpoint (up to `/v1`); unused by `agent_cli`.
    #[serde(default)]
    pub base_url: String,
    /// Name of the environment variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Model name sent with each request; for `agent_cli` optional (the CLI's own
    /// default when empty).
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whole-request timeout, seconds.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: u64,
    /// Longest silence inside a stream once the first token has arrived, seconds.
    #[serde(default = "default_idle_timeout")]
    pub stream_idle_timeout_secs: u64,
    /// Longest wait for the first token of an answer, seconds: the model reads
    /// the whole prompt first (seconds to minutes on a local model), which is
    /// not idleness. None: `request_timeout_secs`; never more than it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_timeout_secs: Option<u64>,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
    /// First backoff delay, milliseconds; doubled per retry, with jitter, unless the
    /// server says `retry-after-ms` / `Retry-After`.
    #[serde(default = "default_retry_base_delay_ms")]
    pub retry_base_delay_ms: u64,
    /// Longest single backoff (including a server's `Retry-After`), seconds.
    #[serde(default = "default_retry_max_delay")]
    pub retry_max_delay_secs: u64,
    /// Stream responses (SSE). Off for servers that don't stream.
    #[serde(default = "default_true")]
    pub stream: bool,
    /// `max_tokens` sent with each request (required by Anthropic).
    #[serde(default = "default_max_tokens")]
    pub max_tokens: u32,
    /// How structured output is requested: `native` (OpenAI `response_format`
    /// json_schema, Anthropic forced tool) or `prompt` (schema in the prompt only,
    /// for models without native tool calling / JSON mode).
    #[serde(default)]
    pub structured_output: StructuredOutputMode,
    /// `kind: agent_cli`: which agent CLI answers the prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_cli: Option<AgentCliConfig>,
}

/// An installed agent CLI used as a model provider (`kind: agent_cli`): the
/// prompt goes to the CLI's non-interactive mode and the answer is read from its
/// structured output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentCliConfig {
    /// `claude` (`claude -p --output-format json`), `codex` (`codex exec --json`),
    /// `gemini` (`gemini --output-format json -p`) or `custom` (`command`).
    #[serde(default)]
    pub preset: AgentCliPreset,
    /// `custom`: the whole argv; `{prompt}` is replaced by the prompt (else the
    /// prompt is the last argument), `{model}` by `model`. A preset: replaces the
    /// program name only when one word (`/opt/bin/claude`).
    #[serde(default)]
    pub command: Vec<String>,
    /// Arguments added before the prompt (e.g. `--max-turns`, `1`).
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// How the answer is read from stdout; default: the preset's format, `text`
    /// for `custom`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<AgentCliOutput>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentCliPreset {
    #[default]
    Claude,
    Codex,
    Gemini,
    Custom,
}

impl AgentCliPreset {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentCliPreset::Claude => "claude",
            AgentCliPreset::Codex => "codex",
            AgentCliPreset::Gemini => "gemini",
            AgentCliPreset::Custom => "custom",
        }
    }
}

/// The stdout formats understood.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AgentCliOutput {
    /// One JSON object `{type: result, is_error, result, usage}` (Claude Code).
    ClaudeJson,
    /// JSON lines; the answer is the last `item.completed` agent message, usage
    /// from `turn.completed`, errors from `turn.failed` / `error` (Codex CLI).
    CodexJsonl,
    /// One JSON object `{response, stats, error}` (Gemini CLI).
    GeminiJson,
    /// The whole stdout is the answer.
    Text,
}

impl ProviderConfig {
    /// The wait for the first token: `first_token_timeout_secs`, bounded by
    /// `request_timeout_secs`.
    pub fn first_token_timeout(&self) -> std::time::Duration {
        let whole = self.request_timeout_secs;
        std::time::Duration::from_secs(self.first_token_timeout_secs.unwrap_or(whole).min(whole))
    }

    /// A provider with the defaults of every optional field.
    pub fn new(name: &str, kind: ProviderKind, base_url: &str, model: &str) -> ProviderConfig {
        ProviderConfig {
            name: name.to_string(),
            kind,
            base_url: base_url.to_string(),
            api_key_env: None,
            model: model.to_string(),
            headers: BTreeMap::new(),
            request_timeout_secs: default_request_timeout(),
            stream_idle_timeout_secs: default_idle_timeout(),
            first_token_timeout_secs: None,
            max_retries: default_max_retries(),
            retry_base_delay_ms: default_retry_base_delay_ms(),
            retry_max_delay_secs: default_retry_max_delay(),
            stream: true,
            max_tokens: default_max_tokens(),
            structured_output: StructuredOutputMode::Native,
            agent_cli: None,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StructuredOutputMode {
    #[default]
    Native,
    Prompt,
}

fn default_retry_base_delay_ms() -> u64 {
    500
}
fn default_retry_max_delay() -> u64 {
    60
}
fn default_true() -> bool {
    true
}
fn default_max_tokens() -> u32 {
    4096
}

fn default_request_timeout() -> u64 {
    120
}
fn default_idle_timeout() -> u64 {
    60
}
fn default_max_retries() -> u32 {
    4
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    Openai,
    Anthropic,
    /// An installed agent CLI (`agent_cli:` says which), no API key needed.
    AgentCli,
}

/// Seed 000 §13.4 token budgets, enforced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct TokenBudgets {
    /// Tokens of the planning calls (prompt + completion), not counting the
    /// repository context, which `planning_context` bounds separately.
    pub planning: u64,
    /// Repository context (tree summary, environment, snippets) sent with planning.
    pub planning_context: u64,
    /// Per reflection call.
    pub reflection: u64,
    /// Whole task, every phase, of dandori's own model calls (planning,
    /// reflection, the `llm` executor). An agent CLI's tokens are recorded but
    /// budgeted by `agent_step_cost_usd` and `agent_step_turns`: a real Claude
    /// Code session sends tens of thousands of cache-read tokens a turn.
    pub task: u64,
    /// The tool loop's conversation after the system and step prompts, as sent
    /// with each execution call: past it the oldest turns are compressed into
    /// one summary message (seed 000 §11.3.2).
    pub conversation: u64,
    /// Per step, what the agent CLI reports it cost (USD, summed over the
    /// step's invocations as deltas of a resumed session's cumulative figure);
    /// 0: no limit. An agent that reports no cost is bounded by its turns.
    pub agent_step_cost_usd: f64,
    /// Per step, the agent CLI's turns (model round trips: Claude Code's
    /// `num_turns`, one per Codex `turn.completed`) over its invocations; 0: no
    /// limit.
    pub agent_step_turns: u64,
}

impl Default for TokenBudgets {
    fn default() -> Self {
        TokenBudgets {
            // Room for the size estimation, the planning answer and its one
            // corrective re-ask (which sends the prompt and the first answer
            // again): ~2 × (3k prompt + 1.5k answer) on top of the context.
            planning: 12000,
            planning_context: 3000,
            reflection: 500,
            // Planning's 15 000 plus reflections and the executor's calls.
            task: 40000,
            conversation: 8000,
            agent_step_cost_usd: 10.0,
            agent_step_turns: 400,
        }
    }
}
