//! Provider-neutral request and response types.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The phase a call belongs to, for token accounting and budgets (seed 000 §13.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Planning,
    Execution,
    Reflection,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Planning => "planning",
            Phase::Execution => "execution",
            Phase::Reflection => "reflection",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    System,
    User,
    Assistant,
    /// The result of a tool call (`tool_call_id` set).
    Tool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    pub role: Role,
    pub content: String,
    /// Tool calls an assistant message made.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For `Role::Tool`: the call this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl Message {
    pub fn system(text: impl Into<String>) -> Message {
        Message::text(Role::System, text)
    }
    pub fn user(text: impl Into<String>) -> Message {
        Message::text(Role::User, text)
    }
    pub fn assistant(text: impl Into<String>) -> Message {
        Message::text(Role::Assistant, text)
    }
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Message {
        Message {
            role: Role::Tool,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
    fn text(role: Role, text: impl Into<String>) -> Message {
        Message {
            role,
            content: text.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model may call: a name, a description and a JSON schema of its input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// The JSON schema the answer must follow (OpenAI `response_format`, Anthropic forced
/// tool, or only the prompt, per the provider's `structured_output`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// `^[a-zA-Z0-9_-]{1,64}$`.
    pub name: String,
    pub schema: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRequest {
    pub phase: Phase,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub response_schema: Option<ResponseSchema>,
    pub temperature: Option<f32>,
    /// Overrides the provider's `max_tokens` (still capped by the budget).
    pub max_tokens: Option<u32>,
    /// What the call is for (`size_estimation`, `planning`, `reflection`, …), for
    /// progress lines and call records; defaults to the phase.
    pub purpose: &'static str,
    /// Time allowed from the first token to the end of the answer (a phase's own
    /// limit, such as `task_planning.size_estimation.timeout_ms`). The wait for
    /// the first token is the provider's `first_token_timeout_secs`, and the whole
    /// call stays within `request_timeout_secs`.
    pub answer_timeout: Option<std::time::Duration>,
}

impl ChatRequest {
    pub fn new(phase: Phase, messages: Vec<Message>) -> ChatRequest {
        ChatRequest {
            phase,
            messages,
            tools: Vec::new(),
            response_schema: None,
            temperature: None,
            max_tokens: None,
            purpose: phase.as_str(),
            answer_timeout: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text, possibly malformed).
    pub arguments: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// True when the provider reported no usage and these are chars/4 estimates.
    pub estimated: bool,
}

impl Usage {
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

/// One retry the client made before the final answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RetryNote {
    pub attempt: u32,
    pub reason: String,
    pub delay_ms: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    /// The JSON answer when structured output was requested natively and the
    /// provider delivered it out of band (Anthropic forced tool).
    pub structured: Option<String>,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    pub model: String,
    /// Attempts made (1 = no retry).
    pub attempts: u32,
    pub retries: Vec<RetryNote>,
    pub streamed: bool,
    /// When the call began (before the first attempt) and how long it took,
    /// retries included.
    pub started: std::time::SystemTime,
    pub duration_ms: u64,
}

impl ChatResponse {
    /// The text to parse as the structured answer: the forced tool's input when
    /// there is one, else the message text.
    pub fn answer_text(&self) -> &str {
        match &self.structured {
            Some(json) => json,
            None => &self.text,
        }
    }
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// An answer was received.
    Ok,
    /// It ended with an error (after its retries).
    Failed,
    /// The caller stopped waiting (cancelled, or its own time limit): the server
    /// may still have worked on it.
    Abandoned,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Failed => "failed",
            CallOutcome::Abandoned => "abandoned",
        }
    }
}

/// One call as the client saw it, whatever its outcome: what the trace's
/// `LLM_CALL` and `dandori metrics` count. `attempts` is the number of HTTP
/// requests the server received for it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    pub purpose: &'static str,
    pub phase: Phase,
    pub outcome: CallOutcome,
    /// `LlmError::kind` of a failed or abandoned call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Reported by the server, else estimated (prompt sent, text streamed).
    pub usage: Usage,
    pub attempts: u32,
    pub retries: Vec<RetryNote>,
    pub model: String,
    pub streamed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// RFC 3339 start and the duration, retries included.
    pub started_at: String,
    pub duration_ms: u64,
    /// From the start of the last attempt to its first streamed token.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<u64>,
}
