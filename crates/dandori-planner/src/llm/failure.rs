//! Why the model's plan was not used, said where the user looks: a reason code,
//! the cause in figures (HTTP status, the limit that fired, the budget's sums, the
//! answer cut at its token limit, the connection refused) and the config key that
//! changes it. `dandori plan` prints it on one line of stderr and under `fallback`
//! in `--json`; the trace has it in `LLM_PLANNING_FAILED` and `PLANNING_FALLBACK`.

use dandori_config::ProviderConfig;
use dandori_llm::{CallOutcome, CallRecord, LlmError};
use serde::{Deserialize, Serialize};

/// The model's planning calls used up their token budget.
pub const TOKEN_BUDGET_EXCEEDED: &str = "TOKEN_BUDGET_EXCEEDED";
/// A time limit fired: the request, the first token, stream idleness.
pub const LLM_TIMEOUT: &str = "LLM_TIMEOUT";
/// The provider could not be reached (connection refused, DNS, TLS).
pub const LLM_UNREACHABLE: &str = "LLM_UNREACHABLE";
/// The provider answered with an HTTP error status.
pub const LLM_HTTP_ERROR: &str = "LLM_HTTP_ERROR";
/// The answer was cut at its token limit before it was complete.
pub const LLM_ANSWER_TRUNCATED: &str = "LLM_ANSWER_TRUNCATED";
/// The answer did not follow the schema or its checks, after one re-ask.
pub const LLM_ANSWER_INVALID: &str = "LLM_ANSWER_INVALID";
/// The model's plan still failed plan validation after one correction.
pub const LLM_PLAN_INVALID: &str = "LLM_PLAN_INVALID";
/// Anything else.
pub const PLANNING_DRAFT_FAILED: &str = "PLANNING_DRAFT_FAILED";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelFailure {
    pub reason_code: String,
    pub cause: String,
    /// The config key whose value decides this, when one does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_key: Option<String>,
}

impl ModelFailure {
    pub fn new(code: &str, cause: impl Into<String>, key: Option<&str>) -> ModelFailure {
        ModelFailure {
            reason_code: code.to_string(),
            cause: cause.into(),
            config_key: key.map(str::to_string),
        }
    }

    /// `CODE: cause (change KEY)`, on one line (a CLI's stderr in the cause
    /// keeps its words, not its line breaks).
    pub fn line(&self) -> String {
        let cause = self.cause.split_whitespace().collect::<Vec<_>>().join(" ");
        match &self.config_key {
            Some(key) => format!("{}: {cause} (change {key})", self.reason_code),
            None => format!("{}: {cause}", self.reason_code),
        }
    }
}

/// The failure of a model error, with the calls made (the last one tells
/// whether an invalid answer had been cut at its token limit).
pub fn of_error(e: &LlmError, calls: &[CallRecord], provider: &ProviderConfig) -> ModelFailure {
    let last = match e {
        LlmError::RetriesExhausted { last, .. } => last.as_ref(),
        other => other,
    };
    let key = e.config_key();
    let cause = e.to_string();
    match last {
        LlmError::BudgetExceeded { .. } => ModelFailure::new(TOKEN_BUDGET_EXCEEDED, cause, key),
        LlmError::Timeout { .. }
        | LlmError::FirstTokenTimeout { .. }
        | LlmError::IdleTimeout { .. }
        | LlmError::AnswerTimeout { .. } => ModelFailure::new(LLM_TIMEOUT, cause, key),
        LlmError::Connect { .. } => ModelFailure::new(LLM_UNREACHABLE, cause, key),
        LlmError::Http { status, .. } => ModelFailure::new(
            LLM_HTTP_ERROR,
            cause,
            Some(match status {
                401 | 403 => "llm.providers[].api_key_env",
                404 => "llm.providers[].model",
                _ => "llm.providers[].base_url",
            }),
        ),
        LlmError::QuotaExhausted { .. } => ModelFailure::new(LLM_HTTP_ERROR, cause, None),
        LlmError::InvalidStructuredOutput { .. } => match cut_at_limit(calls) {
            Some(call) => {
                // Capped by the budget when under the provider's own limit.
                let by_budget = call.usage.completion_tokens < u64::from(provider.max_tokens);
                ModelFailure::new(
                    LLM_ANSWER_TRUNCATED,
                    format!(
                        "the {} answer was cut at its token limit after {} tokens (finish_reason length): {cause}",
                        call.purpose, call.usage.completion_tokens
                    ),
                    Some(if by_budget {
                        "llm.budgets.planning"
                    } else {
                        "llm.providers[].max_tokens"
                    }),
                )
            }
            None => ModelFailure::new(LLM_ANSWER_INVALID, cause, key),
        },
        // The agent CLI's own code (missing, not signed in, slow, unreadable)
        // and what to change: its command, the provider, its time limit.
        LlmError::AgentCli { code, .. } => ModelFailure::new(
            code,
            cause.replacen(&format!("{code}: "), "", 1),
            Some(agent_cli_key(code)),
        ),
        LlmError::MissingApiKey { .. }
        | LlmError::InvalidConfig { .. }
        | LlmError::StreamIncomplete { .. }
        | LlmError::StreamError { .. }
        | LlmError::Decode { .. }
        | LlmError::Cancelled { .. }
        | LlmError::RetriesExhausted { .. } => ModelFailure::new(PLANNING_DRAFT_FAILED, cause, key),
    }
}

/// What to change when an agent CLI provider fails: its command when it could
/// not run (missing from PATH, refused), the provider when the CLI ran and
/// failed (not signed in, out of quota: sign it in or plan with another
/// provider), its time limit when it was too slow, its output format when its
/// answer could not be read.
fn agent_cli_key(code: &str) -> &'static str {
    use dandori_llm::agent_cli::codes;
    match code {
        codes::AGENT_CLI_TIMEOUT => "llm.providers[].request_timeout_secs",
        codes::AGENT_CLI_BAD_OUTPUT => "llm.providers[].agent_cli.output",
        codes::AGENT_CLI_REFUSED => "llm.providers[].agent_cli.command",
        _ => "--provider (or llm.default_provider)",
    }
}

/// The last answered call that ended at its token limit.
fn cut_at_limit(calls: &[CallRecord]) -> Option<&CallRecord> {
    calls
        .iter()
        .rev()
        .filter(|c| c.outcome == CallOutcome::Ok)
        .find(|c| c.finish_reason.as_deref() == Some("length"))
}
