//! The crate's one error type. Messages name the provider, the URL path and the HTTP
//! status; the API key is scrubbed from anything a server sends back.

use std::time::Duration;

use crate::types::Phase;

#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("provider `{provider}`: environment variable {env_var} (api_key_env) is not set")]
    MissingApiKey { provider: String, env_var: String },
    #[error("provider `{provider}`: invalid configuration: {message}")]
    InvalidConfig { provider: String, message: String },
    #[error("provider `{provider}`: HTTP {status} from {url}: {message}")]
    Http {
        provider: String,
        url: String,
        status: u16,
        message: String,
        /// From `retry-after-ms` or `Retry-After`.
        retry_after: Option<Duration>,
    },
    #[error(
        "provider `{provider}`: quota exhausted (HTTP 429 insufficient_quota from {url}): {message}"
    )]
    QuotaExhausted {
        provider: String,
        url: String,
        message: String,
    },
    #[error("provider `{provider}`: connection to {url} failed: {message}")]
    Connect {
        provider: String,
        url: String,
        message: String,
    },
    #[error("provider `{provider}`: request to {url} timed out after {}s", after.as_secs_f64())]
    Timeout {
        provider: String,
        url: String,
        after: Duration,
    },
    #[error(
        "provider `{provider}`: no first token from {url} within {}s (first_token_timeout_secs)",
        after.as_secs_f64()
    )]
    FirstTokenTimeout {
        provider: String,
        url: String,
        after: Duration,
    },
    /// The answer did not end within the call's own limit
    /// (`ChatRequest::answer_timeout`) after its first token.
    #[error("provider `{provider}`: the answer from {url} did not end within {}s of its first token", after.as_secs_f64())]
    AnswerTimeout {
        provider: String,
        url: String,
        after: Duration,
    },
    #[error("provider `{provider}`: stream from {url} idle for {}s", after.as_secs_f64())]
    IdleTimeout {
        provider: String,
        url: String,
        after: Duration,
    },
    #[error("provider `{provider}`: stream from {url} ended before its final event: {message}")]
    StreamIncomplete {
        provider: String,
        url: String,
        message: String,
    },
    /// The provider reported an error inside an otherwise successful stream.
    #[error("provider `{provider}`: stream error `{kind}` from {url}: {message}")]
    StreamError {
        provider: String,
        url: String,
        kind: String,
        message: String,
        /// Overload / rate limit / server errors are transient.
        transient: bool,
    },
    #[error("provider `{provider}`: cannot decode the response from {url}: {message}")]
    Decode {
        provider: String,
        url: String,
        message: String,
    },
    #[error("the {phase} call was cancelled")]
    Cancelled { phase: &'static str },
    #[error(
        "token budget exceeded for {}: {used} used + {needed} needed > {limit} ({scope})",
        phase.as_str()
    )]
    BudgetExceeded {
        phase: Phase,
        /// `phase` or `task`.
        scope: &'static str,
        used: u64,
        needed: u64,
        limit: u64,
    },
    #[error("provider `{provider}`: the answer does not follow `{schema}` after one corrective re-ask: {}", problems.join("; "))]
    InvalidStructuredOutput {
        provider: String,
        schema: String,
        problems: Vec<String>,
    },
    /// An agent CLI provider (`kind: agent_cli`) failed; `code` is one of
    /// `agent_cli::codes`.
    #[error("provider `{provider}`: {code}: {message}")]
    AgentCli {
        provider: String,
        code: &'static str,
        message: String,
        /// A non-zero exit, a time-out, an unreadable or error envelope: tried again.
        transient: bool,
    },
    #[error("provider `{provider}`: gave up after {attempts} attempts: {last}")]
    RetriesExhausted {
        provider: String,
        attempts: u32,
        last: Box<LlmError>,
    },
}

/// What to do after a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryDecision {
    /// Try again, after the server's hint when it gave one.
    Retry {
        server_hint: Option<Duration>,
    },
    Fail,
}

impl LlmError {
    /// The one place deciding whether an error is worth another attempt. Exhaustive:
    /// a new variant must be decided here.
    pub fn retry_decision(&self) -> RetryDecision {
        match self {
            LlmError::Http {
                status,
                retry_after,
                ..
            } => {
                if *status == 429 || *status == 408 || *status >= 500 {
                    RetryDecision::Retry {
                        server_hint: *retry_after,
                    }
                } else {
                    RetryDecision::Fail
                }
            }
            LlmError::Connect { .. }
            | LlmError::Timeout { .. }
            | LlmError::FirstTokenTimeout { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::StreamIncomplete { .. }
            | LlmError::Decode { .. } => RetryDecision::Retry { server_hint: None },
            LlmError::StreamError { transient, .. } | LlmError::AgentCli { transient, .. } => {
                if *transient {
                    RetryDecision::Retry { server_hint: None }
                } else {
                    RetryDecision::Fail
                }
            }
            // The phase's own limit: another attempt would be cut the same way.
            LlmError::AnswerTimeout { .. }
            | LlmError::QuotaExhausted { .. }
            | LlmError::MissingApiKey { .. }
            | LlmError::InvalidConfig { .. }
            | LlmError::Cancelled { .. }
            | LlmError::BudgetExceeded { .. }
            | LlmError::InvalidStructuredOutput { .. }
            | LlmError::RetriesExhausted { .. } => RetryDecision::Fail,
        }
    }

    /// A short machine-readable name for traces.
    pub fn kind(&self) -> &'static str {
        match self {
            LlmError::MissingApiKey { .. } => "missing_api_key",
            LlmError::InvalidConfig { .. } => "invalid_config",
            LlmError::Http { .. } => "http_status",
            LlmError::QuotaExhausted { .. } => "quota_exhausted",
            LlmError::Connect { .. } => "connect",
            LlmError::Timeout { .. } => "timeout",
            LlmError::FirstTokenTimeout { .. } => "first_token_timeout",
            LlmError::AnswerTimeout { .. } => "answer_timeout",
            LlmError::IdleTimeout { .. } => "stream_idle_timeout",
            LlmError::StreamIncomplete { .. } => "stream_incomplete",
            LlmError::StreamError { .. } => "stream_error",
            LlmError::Decode { .. } => "decode",
            LlmError::Cancelled { .. } => "cancelled",
            LlmError::BudgetExceeded { .. } => "budget_exceeded",
            LlmError::InvalidStructuredOutput { .. } => "invalid_structured_output",
            LlmError::AgentCli { code, .. } => match *code {
                crate::agent_cli::codes::AGENT_CLI_EXIT => "agent_cli_exit",
                crate::agent_cli::codes::AGENT_CLI_TIMEOUT => "agent_cli_timeout",
                crate::agent_cli::codes::AGENT_CLI_BAD_OUTPUT => "agent_cli_bad_output",
                crate::agent_cli::codes::AGENT_CLI_ERROR => "agent_cli_error",
                _ => "agent_cli_refused",
            },
            LlmError::RetriesExhausted { last, .. } => last.kind(),
        }
    }

    /// The config key a user changes about this error, when one fits.
    pub fn config_key(&self) -> Option<&'static str> {
        match self {
            LlmError::Timeout { .. } => Some("llm.providers[].request_timeout_secs"),
            LlmError::FirstTokenTimeout { .. } => Some("llm.providers[].first_token_timeout_secs"),
            LlmError::IdleTimeout { .. } => Some("llm.providers[].stream_idle_timeout_secs"),
            LlmError::BudgetExceeded { phase, scope, .. } => Some(match (*scope, phase) {
                ("task", _) => "llm.budgets.task",
                (_, Phase::Planning) => "llm.budgets.planning",
                (_, Phase::Reflection) => "llm.budgets.reflection",
                (_, Phase::Execution) => "llm.budgets.task",
            }),
            LlmError::Connect { .. } => Some("llm.providers[].base_url"),
            LlmError::MissingApiKey { .. } => Some("llm.providers[].api_key_env"),
            LlmError::InvalidStructuredOutput { .. } => Some("llm.providers[].structured_output"),
            LlmError::RetriesExhausted { last, .. } => last.config_key(),
            LlmError::AnswerTimeout { .. }
            | LlmError::Http { .. }
            | LlmError::QuotaExhausted { .. }
            | LlmError::InvalidConfig { .. }
            | LlmError::StreamIncomplete { .. }
            | LlmError::StreamError { .. }
            | LlmError::Decode { .. }
            | LlmError::Cancelled { .. }
            | LlmError::AgentCli { .. } => None,
        }
    }

    /// True for a time limit (request or stream idle), including after retries.
    pub fn is_timeout(&self) -> bool {
        match self {
            LlmError::Timeout { .. }
            | LlmError::IdleTimeout { .. }
            | LlmError::FirstTokenTimeout { .. }
            | LlmError::AnswerTimeout { .. } => true,
            LlmError::AgentCli { code, .. } => *code == crate::agent_cli::codes::AGENT_CLI_TIMEOUT,
            LlmError::RetriesExhausted { last, .. } => last.is_timeout(),
            _ => false,
        }
    }
}
