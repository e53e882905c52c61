//! Model providers: OpenAI-compatible Chat Completions, Anthropic Messages and
//! installed agent CLIs ([`agent_cli`]: Claude Code, Codex CLI, Gemini CLI). Knows
//! nothing of planning.
//!
//! * [`Client`] is built from a `dandori_config::ProviderConfig`; the API key is read
//!   through an injected environment lookup and never appears in errors or `Debug`.
//! * [`Client::chat`] sends one [`ChatRequest`] (streaming inside when the provider
//!   streams), retrying transient failures ([`retry`]), enforcing the token budgets
//!   ([`budget`]) and the request / stream-idle time limits.
//! * [`structured`] turns model text into validated JSON: extraction from prose and
//!   fences, repair of common slips, a JSON-schema subset validator, and the one
//!   corrective re-ask.

pub mod agent_cli;
pub mod blocking;
pub mod budget;
mod client;
mod error;
pub mod progress;
pub mod retry;
mod sse;
pub mod structured;
mod types;
mod wire;

pub use agent_cli::AgentRuntime;
pub use blocking::block_on;
pub use budget::{LedgerSnapshot, PhaseUsage, TokenLedger, estimate_tokens};
pub use client::{Client, Secret};
pub use error::LlmError;
pub use tokio_util::sync::CancellationToken;
pub use types::*;
