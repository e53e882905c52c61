//! The model conversation of one planning run, independent of the planner's data
//! types: the seed 003 §3.4 size estimation (fallback category on timeout or
//! error), then the seed 000 planning answer (schema + checks, one corrective
//! re-ask), then — when the caller's validation finds FAILs in the plan — one more
//! round sending the findings back.

use std::time::Duration;

use dandori_config::{DecompositionLevel, Strategy};
use dandori_llm::structured::chat_structured;
use dandori_llm::{
    ChatRequest, ChatResponse, Client, LlmError, Message, Phase, ResponseSchema, RetryNote, Usage,
    estimate_tokens,
};
use serde::Serialize;
use serde_json::Value;

use super::checks::{Limits, check_planning};
use super::prompt::{self, PackedContext, RepoContextInput};
use super::response::{PlanningResponse, SizeEstimateOut, planning_schema, size_estimation_schema};

pub struct EngineInputs<'a> {
    pub request: &'a str,
    pub strategy: Strategy,
    pub decomposition_level: DecompositionLevel,
    pub max_subtasks: usize,
    pub max_diff_lines: u64,
    pub context: &'a RepoContextInput,
    /// Token budget of the repository context (`llm.budgets.planning_context`).
    pub context_budget: u64,
    /// Names of the detected environments.
    pub environments: &'a [String],
    /// `task-planning.json` `size_estimation.timeout_ms`.
    pub size_timeout: Duration,
    /// `size_estimation.fallback_category`.
    pub fallback_category: &'a str,
    /// Plan validation of the caller (FAIL findings as `path: message`); a non-empty
    /// result is sent back once.
    pub validate: &'a (dyn Fn(&PlanningResponse) -> Vec<String> + Sync),
}

/// One model call, for the trace.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// `size_estimation`, `planning`, `planning_validation_correction`.
    pub purpose: &'static str,
    pub usage: Usage,
    pub attempts: u32,
    pub retries: Vec<RetryNote>,
    pub model: String,
    pub streamed: bool,
    /// RFC 3339 start of the call and its duration (retries included).
    pub started_at: String,
    pub duration_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SizeOutcome {
    Estimated(SizeEstimateOut),
    /// Seed 003 §9.1: timeout or error → the fallback category.
    Fallback {
        category: String,
        reason: String,
        error_details: String,
    },
}

/// Estimated prompt tokens of the planning call: the prompt itself (system,
/// instructions, task, schema) and the repository context, reported separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PromptTokens {
    pub planning_prompt: u64,
    pub repo_context: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EngineOutput {
    pub size: SizeOutcome,
    pub response: PlanningResponse,
    pub calls: Vec<CallRecord>,
    pub context: PackedContext,
    pub prompt_tokens: PromptTokens,
    /// Problems of the first planning answer that the corrective re-ask fixed.
    pub reasked_for: Option<Vec<String>>,
    /// Validation FAILs sent back for correction.
    pub validation_corrected: Option<Vec<String>>,
    /// Validation FAILs still present after the correction (the caller falls back).
    pub validation_remaining: Vec<String>,
}

fn record(purpose: &'static str, r: &ChatResponse) -> CallRecord {
    CallRecord {
        purpose,
        usage: r.usage,
        attempts: r.attempts,
        retries: r.retries.clone(),
        model: r.model.clone(),
        streamed: r.streamed,
        started_at: chrono::DateTime::<chrono::Utc>::from(r.started)
            .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
        duration_ms: r.duration_ms,
    }
}

/// Bytes of the request kept in prompts (the request file can be long).
const MAX_REQUEST_CHARS: usize = 4000;

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut out: String = text.chars().take(max).collect();
    out.push_str("\n…(truncated)");
    out
}

/// The messages of the planning call (also used by the token benchmark).
pub fn planning_messages(
    inputs: &EngineInputs<'_>,
    size_summary: &str,
    context_text: &str,
) -> Vec<Message> {
    let system = prompt::render(
        prompt::SYSTEM,
        &[
            ("strategy", prompt::strategy_text(inputs.strategy)),
            ("max_diff_lines", &inputs.max_diff_lines.to_string()),
        ],
    );
    let user = prompt::render(
        prompt::PLANNING,
        &[
            ("request", &clip(inputs.request.trim(), MAX_REQUEST_CHARS)),
            ("max_subtasks", &inputs.max_subtasks.to_string()),
            (
                "decomposition_level",
                prompt::decomposition_text(inputs.decomposition_level),
            ),
            ("size", size_summary),
            ("repo_context", context_text),
        ],
    );
    vec![Message::system(system), Message::user(user)]
}

pub fn planning_request(messages: Vec<Message>) -> ChatRequest {
    let mut req = ChatRequest::new(Phase::Planning, messages);
    req.response_schema = Some(ResponseSchema {
        name: "planning".to_string(),
        schema: planning_schema(),
    });
    req.temperature = Some(0.0);
    req.purpose = "planning";
    req
}

/// Token estimates of the planning call for these inputs.
pub fn prompt_tokens(
    inputs: &EngineInputs<'_>,
    size_summary: &str,
) -> (PromptTokens, PackedContext) {
    let context = prompt::pack_context(inputs.context, inputs.context_budget);
    let bare = planning_messages(inputs, size_summary, "");
    let prompt: u64 = bare
        .iter()
        .map(|m| estimate_tokens(&m.content))
        .sum::<u64>()
        + estimate_tokens(&planning_schema().to_string());
    (
        PromptTokens {
            planning_prompt: prompt,
            repo_context: context.tokens,
        },
        context,
    )
}

/// `size_client` answers the size estimation (seed 003 §8.1
/// `size_estimation.llm_model`), `client` the planning.
pub async fn run(
    client: &Client,
    size_client: &Client,
    inputs: &EngineInputs<'_>,
) -> Result<EngineOutput, LlmError> {
    let mut calls = Vec::new();

    // Seed 003 §3.4.
    let mut size_req = ChatRequest::new(
        Phase::Planning,
        vec![Message::user(prompt::render(
            prompt::SIZE_ESTIMATION,
            &[(
                "user_input",
                &clip(inputs.request.trim(), MAX_REQUEST_CHARS),
            )],
        ))],
    );
    size_req.response_schema = Some(ResponseSchema {
        name: "size_estimation".to_string(),
        schema: size_estimation_schema(),
    });
    size_req.temperature = Some(0.0);
    size_req.purpose = "size_estimation";
    // `size_estimation.timeout_ms` bounds the answer, not the wait for its first
    // token: a local model reads the prompt for seconds first, and that wait is
    // the provider's `first_token_timeout_secs` (within `request_timeout_secs`).
    size_req.answer_timeout = Some(inputs.size_timeout);
    let fallback = |reason: String, details: String| SizeOutcome::Fallback {
        category: inputs.fallback_category.to_string(),
        reason,
        error_details: details,
    };
    let size = match chat_structured(size_client, &size_req, &|_| Vec::new()).await {
        Ok(out) => {
            for r in &out.responses {
                calls.push(record("size_estimation", r));
            }
            match serde_json::from_value::<SizeEstimateOut>(out.value) {
                Ok(s) => SizeOutcome::Estimated(s),
                Err(e) => fallback("size estimation answer unusable".into(), e.to_string()),
            }
        }
        Err(e)
            if matches!(
                e,
                LlmError::BudgetExceeded { .. } | LlmError::Cancelled { .. }
            ) =>
        {
            return Err(e);
        }
        Err(e @ LlmError::AnswerTimeout { .. }) => fallback(
            "LLM timeout during size estimation".to_string(),
            format!(
                "Timeout after {}ms (task_planning.size_estimation.timeout_ms): {e}",
                inputs.size_timeout.as_millis()
            ),
        ),
        Err(e) => {
            let reason = if e.is_timeout() {
                "LLM timeout during size estimation"
            } else {
                "LLM error during size estimation"
            };
            fallback(reason.to_string(), e.to_string())
        }
    };
    let size_summary = match &size {
        SizeOutcome::Estimated(s) => format!(
            "about {} output tokens, {} files, complexity {}/10, dependency depth {}",
            s.estimated_tokens, s.estimated_file_count, s.complexity_score, s.dependency_depth
        ),
        SizeOutcome::Fallback { category, .. } => format!("category {category} (no estimate)"),
    };

    // Seed 000 planning.
    let (prompt_tokens, context) = prompt_tokens(inputs, &size_summary);
    let messages = planning_messages(inputs, &size_summary, &context.text);
    let request = planning_request(messages);
    let limits = Limits {
        max_subtasks: inputs.max_subtasks,
        environments: inputs.environments,
    };
    let check = |v: &Value| check_planning(v, &limits);
    let first = chat_structured(client, &request, &check).await?;
    for r in &first.responses {
        calls.push(record("planning", r));
    }
    let mut response = decode(client, &first.value)?;
    let reasked_for = first.reasked_for.clone();

    // Plan validation FAILs: sent back once.
    let mut validation_corrected = None;
    let mut validation_remaining = Vec::new();
    if response.error.is_none() {
        let findings = (inputs.validate)(&response);
        if !findings.is_empty() {
            let mut again = request.clone();
            if let Some(last) = first.responses.last() {
                again
                    .messages
                    .push(Message::assistant(last.answer_text().to_string()));
            }
            let list: String = findings.iter().map(|f| format!("- {f}\n")).collect();
            again.purpose = "planning_validation_correction";
            again.messages.push(Message::user(prompt::render(
                prompt::VALIDATION_CORRECTION,
                &[("findings", &list)],
            )));
            let second = chat_structured(client, &again, &check).await?;
            for r in &second.responses {
                calls.push(record("planning_validation_correction", r));
            }
            response = decode(client, &second.value)?;
            validation_remaining = if response.error.is_none() {
                (inputs.validate)(&response)
            } else {
                Vec::new()
            };
            validation_corrected = Some(findings);
        }
    }
    Ok(EngineOutput {
        size,
        response,
        calls,
        context,
        prompt_tokens,
        reasked_for,
        validation_corrected,
        validation_remaining,
    })
}

fn decode(client: &Client, value: &Value) -> Result<PlanningResponse, LlmError> {
    serde_json::from_value(value.clone()).map_err(|e| LlmError::InvalidStructuredOutput {
        provider: client.config().name.clone(),
        schema: "planning".to_string(),
        problems: vec![format!("$: {e}")],
    })
}

/// Run a future to completion from synchronous code (also from inside a runtime).
pub use dandori_llm::block_on;
