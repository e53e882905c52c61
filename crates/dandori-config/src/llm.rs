//! `llm:`: model providers declared in config, so a new OpenAI-compatible endpoint
//! needs no code.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LlmConfig {
    /// Name of the provider used when `--provider` is not given. None = offline.
    pub default_provider: Option<String>,
    pub providers: Vec<ProviderConfig>,
    pub budgets: TokenBudgets,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderConfig {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    /// Name of the environment variable holding the key (never the key itself).
    #[serde(default)]
    pub api_key_env: Option<String>,
    pub model: String,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Whole-request timeout, seconds.
    #[serde(default = "default_request_timeout")]
    pub request_timeout_secs: u64,
    /// Longest silence inside a stream, seconds.
    #[serde(default = "default_idle_timeout")]
    pub stream_idle_timeout_secs: u64,
    #[serde(default = "default_max_retries")]
    pub max_retries: u32,
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
}

/// Seed 000 §13.4 token budgets, enforced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct TokenBudgets {
    pub planning: u64,
    pub reflection: u64,
    pub task: u64,
}

impl Default for TokenBudgets {
    fn default() -> Self {
        TokenBudgets {
            planning: 2000,
            reflection: 500,
            task: 10000,
        }
    }
}
