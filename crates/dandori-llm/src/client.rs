//! `Client`: one configured provider, with retries, time limits, cancellation and
//! token budgets around each call.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::agent_cli::{self, AgentRuntime};
use crate::budget::{LedgerSnapshot, TokenLedger, estimate_tokens};
use crate::error::{LlmError, RetryDecision};
use crate::retry::{Backoff, server_hint};
use crate::sse::SseParser;
use crate::types::{ChatRequest, ChatResponse, RetryNote, Usage};
use crate::wire::{self, Parsed, StreamAccumulator, WireError};

/// An API key. `Debug` and `Display` never show it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

pub struct Client {
    config: ProviderConfig,
    key: Option<Secret>,
    http: reqwest::Client,
    url: String,
    ledger: Arc<Mutex<TokenLedger>>,
    /// `kind: agent_cli`: what the CLI runs with.
    agent: Option<Arc<AgentRuntime>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("provider", &self.config.name)
            .field("kind", &self.config.kind)
            .field("url", &self.url)
            .field("model", &self.config.model)
            .field("key", &self.key)
            .finish()
    }
}

impl Client {
    /// Build from config. `env` looks up environment variables (the process env in the
    /// binary, an explicit map in tests); the key is read from `api_key_env`.
    pub fn from_config(
        config: &ProviderConfig,
        budgets: &TokenBudgets,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Client, LlmError> {
        let invalid = |message: String| LlmError::InvalidConfig {
            provider: config.name.clone(),
            message,
        };
        if config.kind == ProviderKind::AgentCli {
            agent_cli::settings(config).map_err(&invalid)?;
            return Ok(Client {
                url: wire::endpoint(config),
                config: config.clone(),
                key: None,
                http: reqwest::Client::new(),
                ledger: Arc::new(Mutex::new(TokenLedger::new(budgets.clone()))),
                agent: Some(Arc::new(AgentRuntime {
                    parent_env: std::env::vars().collect(),
                    ..AgentRuntime::default()
                })),
            });
        }
        if !(config.base_url.starts_with("http://") || config.base_url.starts_with("https://")) {
            return Err(invalid(format!(
                "base_url `{}` must start with http:// or https://",
                config.base_url
            )));
        }
        if config.model.trim().is_empty() {
            return Err(invalid("model is empty".to_string()));
        }
        let key = match &config.api_key_env {
            Some(var) => match env(var) {
                Some(value) if !value.trim().is_empty() => Some(Secret(value.trim().to_string())),
                _ => {
                    return Err(LlmError::MissingApiKey {
                        provider: config.name.clone(),
                        env_var: var.clone(),
                    });
                }
            },
            None => None,
        };
        let mut headers = HeaderMap::new();
        for (name, value) in &config.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| invalid(format!("header name `{name}`: {e}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|e| invalid(format!("header `{name}` value: {e}")))?;
            headers.insert(name, value);
        }
        let mut secret_header = |name: &'static str, value: String| -> Result<(), LlmError> {
            let mut value = HeaderValue::from_str(&value)
                .map_err(|_| invalid(format!("the key in {name} has invalid characters")))?;
            value.set_sensitive(true);
            headers.insert(name, value);
            Ok(())
        };
        match (config.kind, &key) {
            (ProviderKind::Openai, Some(k)) => {
                secret_header("authorization", format!("Bearer {}", k.0))?
            }
            (ProviderKind::Anthropic, Some(k)) => secret_header("x-api-key", k.0.clone())?,
            (ProviderKind::Openai, None)
            | (ProviderKind::Anthropic, None)
            | (ProviderKind::AgentCli, _) => {}
        }
        if config.kind == ProviderKind::Anthropic && !headers.contains_key("anthropic-version") {
            headers.insert(
                "anthropic-version",
                HeaderValue::from_static(wire::ANTHROPIC_VERSION),
            );
        }
        let http = reqwest::Client::builder()
            .default_headers(headers)
            .connect_timeout(Duration::from_secs(
                config.request_timeout_secs.clamp(1, 30),
            ))
            .build()
            .map_err(|e| invalid(format!("HTTP client: {e}")))?;
        Ok(Client {
            url: wire::endpoint(config),
            config: config.clone(),
            key,
            http,
            ledger: Arc::new(Mutex::new(TokenLedger::new(budgets.clone()))),
            agent: None,
        })
    }

    /// For an agent CLI provider: the sandbox, environment and command policy its
    /// child runs with (by default the process environment and default policies).
    /// No effect on HTTP providers.
    pub fn with_agent_runtime(mut self, runtime: AgentRuntime) -> Client {
        if self.agent.is_some() {
            self.agent = Some(Arc::new(runtime));
        }
        self
    }

    pub fn config(&self) -> &ProviderConfig {
        &self.config
    }

    pub fn endpoint(&self) -> &str {
        &self.url
    }

    /// Token usage so far, per phase.
    pub fn usage(&self) -> LedgerSnapshot {
        self.ledger().snapshot()
    }

    fn ledger(&self) -> MutexGuard<'_, TokenLedger> {
        match self.ledger.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// The key, for masking what others write (traces, reports).
    pub fn secret(&self) -> Option<&Secret> {
        self.key.as_ref()
    }

    pub async fn chat(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.chat_cancellable(request, &CancellationToken::new())
            .await
    }

    /// One call with retries. Cancelling `cancel` stops it (also mid-backoff).
    pub async fn chat_cancellable(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let started = std::time::SystemTime::now();
        let clock = std::time::Instant::now();
        let prompt_text = prompt_text(request);
        let prompt_estimate = estimate_tokens(&prompt_text);
        let room = self.ledger().admit(request.phase, prompt_estimate)?;
        let wanted = request.max_tokens.unwrap_or(self.config.max_tokens);
        let max_tokens = u32::try_from(room).unwrap_or(u32::MAX).min(wanted).max(1);
        let body = wire::request_body(&self.config, request, max_tokens);
        let body_bytes = bytes::Bytes::from(body.to_string());
        let backoff = Backoff {
            base: Duration::from_millis(self.config.retry_base_delay_ms),
            max: Duration::from_secs(self.config.retry_max_delay_secs),
        };
        let cancelled = || LlmError::Cancelled {
            phase: request.phase.as_str(),
        };
        let mut retries = Vec::new();
        let mut attempt: u32 = 0;
        let parsed = loop {
            attempt += 1;
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                outcome = self.attempt(request, body_bytes.clone()) => outcome,
            };
            let error = match outcome {
                Ok(parsed) => break parsed,
                Err(error) => error,
            };
            let hint = match error.retry_decision() {
                RetryDecision::Fail => return Err(error),
                RetryDecision::Retry { server_hint } => server_hint,
            };
            if attempt > self.config.max_retries {
                return Err(LlmError::RetriesExhausted {
                    provider: self.config.name.clone(),
                    attempts: attempt,
                    last: Box::new(error),
                });
            }
            let delay = backoff.delay(attempt, hint);
            retries.push(RetryNote {
                attempt,
                reason: error.to_string(),
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
            });
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                _ = tokio::time::sleep(delay) => {}
            }
        };
        let usage = match (parsed.usage, self.agent.is_some()) {
            (Some((prompt_tokens, completion_tokens)), false) => Usage {
                prompt_tokens,
                completion_tokens,
                estimated: false,
            },
            // An agent CLI reports its own system prompt, tools and cache reads
            // as input (thousands of tokens a call): the budgets count what dandori
            // sent (estimated) and what the CLI answered (reported).
            (Some((_, completion_tokens)), true) => Usage {
                prompt_tokens: prompt_estimate,
                completion_tokens,
                estimated: true,
            },
            (None, _) => Usage {
                prompt_tokens: prompt_estimate,
                completion_tokens: estimate_tokens(&parsed.text)
                    + parsed
                        .tool_calls
                        .iter()
                        .map(|c| estimate_tokens(&c.arguments))
                        .sum::<u64>(),
                estimated: true,
            },
        };
        self.ledger().record(request.phase, usage);
        let mut tool_calls = parsed.tool_calls;
        let structured = match wire::forced_tool_name(&self.config, request) {
            Some(name) => tool_calls
                .iter()
                .position(|c| c.name == name)
                .map(|i| tool_calls.remove(i).arguments),
            None => None,
        };
        Ok(ChatResponse {
            text: parsed.text,
            tool_calls,
            structured,
            usage,
            finish_reason: parsed.finish_reason,
            model: parsed.model.unwrap_or_else(|| self.config.model.clone()),
            attempts: attempt,
            retries,
            streamed: self.config.stream && self.agent.is_none(),
            started,
            duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// One HTTP exchange within the request timeout.
    async fn attempt(&self, request: &ChatRequest, body: bytes::Bytes) -> Result<Parsed, LlmError> {
        if let Some(runtime) = &self.agent {
            let (config, runtime, request) =
                (self.config.clone(), runtime.clone(), request.clone());
            return tokio::task::spawn_blocking(move || {
                agent_cli::call(&config, &runtime, &request)
            })
            .await
            .map_err(|e| LlmError::AgentCli {
                provider: self.config.name.clone(),
                code: agent_cli::codes::AGENT_CLI_EXIT,
                message: format!("the agent CLI thread ended abnormally: {e}"),
                transient: false,
            })?;
        }
        let limit = Duration::from_secs(self.config.request_timeout_secs);
        match tokio::time::timeout(limit, self.exchange(body)).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Timeout {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                after: limit,
            }),
        }
    }

    async fn exchange(&self, body: bytes::Bytes) -> Result<Parsed, LlmError> {
        let response = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| self.connect_error(&e))?;
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let hint = server_hint(response.headers());
            let text = response.text().await.unwrap_or_default();
            return Err(self.status_error(status, &text, hint));
        }
        let is_sse = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if is_sse {
            return self.read_stream(response).await;
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| LlmError::StreamIncomplete {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                message: self.scrub(&e.to_string()),
            })?;
        let value: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| LlmError::Decode {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                message: format!(
                    "{e}: `{}`",
                    self.scrub(&wire::truncate(&String::from_utf8_lossy(&bytes), 200))
                ),
            })?;
        wire::parse_json(self.config.kind, &value).map_err(|e| self.wire_error(e))
    }

    async fn read_stream(&self, response: reqwest::Response) -> Result<Parsed, LlmError> {
        let idle = Duration::from_secs(self.config.stream_idle_timeout_secs);
        let mut stream = response.bytes_stream();
        let mut parser = SseParser::default();
        let mut acc = StreamAccumulator::new(self.config.kind);
        let incomplete = |message: String| LlmError::StreamIncomplete {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            message,
        };
        loop {
            let next = match tokio::time::timeout(idle, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    return Err(LlmError::IdleTimeout {
                        provider: self.config.name.clone(),
                        url: self.url.clone(),
                        after: idle,
                    });
                }
            };
            match next {
                Some(Ok(chunk)) => {
                    for event in parser.feed(&chunk) {
                        acc.on_event(&event).map_err(|e| self.wire_error(e))?;
                    }
                    if acc.is_done() {
                        return Ok(acc.finish());
                    }
                }
                Some(Err(e)) => return Err(incomplete(self.scrub(&e.to_string()))),
                None => {
                    if let Some(event) = parser.finish() {
                        acc.on_event(&event).map_err(|e| self.wire_error(e))?;
                    }
                    if acc.is_done() || acc.finished_without_terminator() {
                        return Ok(acc.finish());
                    }
                    return Err(incomplete("the body ended".to_string()));
                }
            }
        }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.key {
            Some(k) if !k.0.is_empty() => text.replace(&k.0, "***"),
            Some(_) | None => text.to_string(),
        }
    }

    fn connect_error(&self, e: &reqwest::Error) -> LlmError {
        // reqwest's message includes the URL but never headers.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        LlmError::Connect {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            message: self.scrub(&message),
        }
    }

    fn status_error(&self, status: u16, body: &str, hint: Option<Duration>) -> LlmError {
        let (code, message) = match wire::error_body(body) {
            Some((code, message)) => (Some(code), message),
            None => (None, wire::truncate(body.trim(), 300)),
        };
        let message = self.scrub(&message);
        if status == 429 && code.as_deref() == Some("insufficient_quota") {
            return LlmError::QuotaExhausted {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                message,
            };
        }
        LlmError::Http {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            status,
            message,
            retry_after: hint,
        }
    }

    fn wire_error(&self, e: WireError) -> LlmError {
        let message = self.scrub(&e.message);
        if e.kind == "malformed_response" {
            return LlmError::Decode {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                message,
            };
        }
        LlmError::StreamError {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            kind: e.kind,
            message,
            transient: e.transient,
        }
    }
}

/// Everything in the request that counts as prompt tokens.
fn prompt_text(request: &ChatRequest) -> String {
    let mut text = String::new();
    for m in &request.messages {
        text.push_str(&m.content);
        for c in &m.tool_calls {
            text.push_str(&c.arguments);
        }
    }
    for t in &request.tools {
        text.push_str(&t.description);
        text.push_str(&t.input_schema.to_string());
    }
    if let Some(s) = &request.response_schema {
        text.push_str(&s.schema.to_string());
    }
    text
}
