//! `Client`: one configured provider, with retries, time limits, cancellation and
//! token budgets around each call.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use dandori_config::{ProviderConfig, ProviderKind, TokenBudgets};
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use tokio_util::sync::CancellationToken;

use crate::agent_cli::{self, AgentRuntime};
use crate::budget::{LedgerSnapshot, TokenLedger, estimate_tokens};
use crate::error::{LlmError, RetryDecision};
use crate::progress::{self, CallProgress, CallState};
use crate::retry::{Backoff, server_hint};
use crate::sse::SseParser;
use crate::types::{CallOutcome, CallRecord, ChatRequest, ChatResponse, RetryNote, Usage};
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
    /// Every call made, whatever its outcome, until taken ([`Client::take_calls`]).
    calls: Arc<Mutex<Vec<CallRecord>>>,
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
                calls: Arc::default(),
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
            calls: Arc::default(),
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

    /// The calls made since the last take, oldest first: answered, failed and
    /// abandoned ones alike (a call whose future was dropped is recorded as
    /// abandoned).
    pub fn take_calls(&self) -> Vec<CallRecord> {
        let mut calls = match self.calls.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::take(&mut *calls)
    }

    /// One call with retries. Cancelling `cancel` stops it (also mid-backoff).
    /// Progress goes to the process's observer ([`progress::set_observer`]), and
    /// the call, whatever its outcome, to [`Client::take_calls`].
    pub async fn chat_cancellable(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
    ) -> Result<ChatResponse, LlmError> {
        let prompt_estimate = estimate_tokens(&prompt_text(request));
        let live = Arc::new(Live::new());
        let mut journal = Journal {
            client: self,
            live: live.clone(),
            number: progress::next_call_number(),
            phase: request.phase,
            purpose: request.purpose,
            prompt_estimate,
            open: true,
        };
        let result = {
            let work = self.call(request, cancel, prompt_estimate, &journal);
            tokio::pin!(work);
            let every = progress::observer().map_or(progress::DEFAULT_INTERVAL, |(_, i)| i);
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tokio::select! {
                    result = &mut work => break result,
                    _ = tick.tick() => journal.report(CallState::Waiting {
                        first_token: live.first_token_ms().is_some(),
                    }),
                }
            }
        };
        journal.finish(&result);
        result
    }

    async fn call(
        &self,
        request: &ChatRequest,
        cancel: &CancellationToken,
        prompt_estimate: u64,
        journal: &Journal<'_>,
    ) -> Result<ChatResponse, LlmError> {
        let started = SystemTime::now();
        let clock = Instant::now();
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
        let live = &journal.live;
        let mut attempt: u32 = 0;
        let parsed = loop {
            attempt += 1;
            live.start_attempt(attempt);
            journal.report(CallState::Started { attempt });
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => return Err(cancelled()),
                outcome = self.attempt(request, body_bytes.clone(), live) => outcome,
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
            live.retry(RetryNote {
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
            retries: live.retries(),
            streamed: self.config.stream && self.agent.is_none(),
            started,
            duration_ms: u64::try_from(clock.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }

    /// One HTTP exchange within the request timeout.
    async fn attempt(
        &self,
        request: &ChatRequest,
        body: bytes::Bytes,
        live: &Live,
    ) -> Result<Parsed, LlmError> {
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
        match tokio::time::timeout(limit, self.exchange(request, body, live)).await {
            Ok(result) => result,
            Err(_) => Err(LlmError::Timeout {
                provider: self.config.name.clone(),
                url: self.url.clone(),
                after: limit,
            }),
        }
    }

    async fn exchange(
        &self,
        request: &ChatRequest,
        body: bytes::Bytes,
        live: &Live,
    ) -> Result<Parsed, LlmError> {
        // A streaming server may hold its headers until the first token: the
        // first-token limit covers the wait for them too.
        let first_token = self.config.first_token_timeout();
        let send = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(body)
            .send();
        let sent = if self.config.stream {
            tokio::time::timeout(first_token, send)
                .await
                .map_err(|_| self.first_token_timeout(first_token))?
        } else {
            send.await
        };
        let response = sent.map_err(|e| self.connect_error(&e))?;
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
            return self.read_stream(response, request, live).await;
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

    async fn read_stream(
        &self,
        response: reqwest::Response,
        request: &ChatRequest,
        live: &Live,
    ) -> Result<Parsed, LlmError> {
        let idle = Duration::from_secs(self.config.stream_idle_timeout_secs);
        let first_token = self.config.first_token_timeout();
        let first_deadline = live.attempt_started() + first_token;
        let mut answer_deadline: Option<Instant> = None;
        let mut stream = response.bytes_stream();
        let mut parser = SseParser::default();
        let mut acc = StreamAccumulator::new(self.config.kind);
        let incomplete = |message: String| LlmError::StreamIncomplete {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            message,
        };
        loop {
            // Before the first token the server is reading the prompt: that is
            // bounded by the first-token limit, not by stream idleness.
            let now = Instant::now();
            let wait = match answer_deadline {
                None => first_deadline.saturating_duration_since(now),
                Some(deadline) => idle.min(deadline.saturating_duration_since(now)),
            };
            let next = match tokio::time::timeout(wait, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    return Err(match answer_deadline {
                        None => self.first_token_timeout(first_token),
                        Some(deadline) if Instant::now() >= deadline => LlmError::AnswerTimeout {
                            provider: self.config.name.clone(),
                            url: self.url.clone(),
                            after: request.answer_timeout.unwrap_or_default(),
                        },
                        Some(_) => LlmError::IdleTimeout {
                            provider: self.config.name.clone(),
                            url: self.url.clone(),
                            after: idle,
                        },
                    });
                }
            };
            match next {
                Some(Ok(chunk)) => {
                    for event in parser.feed(&chunk) {
                        acc.on_event(&event).map_err(|e| self.wire_error(e))?;
                    }
                    let bytes = acc.streamed_bytes();
                    if bytes > 0 && answer_deadline.is_none() {
                        live.first_token();
                        // Far enough to never fire without an answer limit.
                        let limit = request
                            .answer_timeout
                            .unwrap_or(Duration::from_secs(self.config.request_timeout_secs));
                        answer_deadline = Some(Instant::now() + limit);
                    }
                    live.set_tokens((bytes as u64).div_ceil(4));
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

    fn first_token_timeout(&self, after: Duration) -> LlmError {
        LlmError::FirstTokenTimeout {
            provider: self.config.name.clone(),
            url: self.url.clone(),
            after,
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

/// What the progress reports and the call record of one call in flight read.
struct Live {
    attempt_started: Mutex<Instant>,
    first_token_ms: Mutex<Option<u64>>,
    tokens: AtomicU64,
    attempts: AtomicU32,
    retries: Mutex<Vec<RetryNote>>,
    started: SystemTime,
    clock: Instant,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Live {
    fn new() -> Live {
        Live {
            attempt_started: Mutex::new(Instant::now()),
            first_token_ms: Mutex::new(None),
            tokens: AtomicU64::new(0),
            attempts: AtomicU32::new(0),
            retries: Mutex::new(Vec::new()),
            started: SystemTime::now(),
            clock: Instant::now(),
        }
    }
    fn start_attempt(&self, attempt: u32) {
        *lock(&self.attempt_started) = Instant::now();
        *lock(&self.first_token_ms) = None;
        self.tokens.store(0, Ordering::Relaxed);
        self.attempts.store(attempt, Ordering::Relaxed);
    }
    fn attempt_started(&self) -> Instant {
        *lock(&self.attempt_started)
    }
    fn first_token(&self) {
        let ms = u64::try_from(self.attempt_started().elapsed().as_millis()).unwrap_or(u64::MAX);
        *lock(&self.first_token_ms) = Some(ms);
    }
    fn first_token_ms(&self) -> Option<u64> {
        *lock(&self.first_token_ms)
    }
    fn set_tokens(&self, tokens: u64) {
        self.tokens.store(tokens, Ordering::Relaxed);
    }
    fn retry(&self, note: RetryNote) {
        lock(&self.retries).push(note);
    }
    fn retries(&self) -> Vec<RetryNote> {
        lock(&self.retries).clone()
    }
    fn elapsed_ms(&self) -> u64 {
        u64::try_from(self.clock.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

/// Reports a call's progress and records it when it ends, or, when its future
/// is dropped first (a caller's own time limit), as abandoned.
struct Journal<'a> {
    client: &'a Client,
    live: Arc<Live>,
    number: u64,
    phase: crate::types::Phase,
    purpose: &'static str,
    prompt_estimate: u64,
    open: bool,
}

impl Journal<'_> {
    fn progress(&self, state: CallState) -> CallProgress {
        CallProgress {
            call: self.number,
            provider: self.client.config.name.clone(),
            model: self.client.config.model.clone(),
            phase: self.phase,
            purpose: self.purpose,
            elapsed_ms: self.live.elapsed_ms(),
            tokens_streamed: self.live.tokens.load(Ordering::Relaxed),
            state,
        }
    }

    fn report(&self, state: CallState) {
        progress::publish(&self.progress(state));
    }

    fn finish(&mut self, result: &Result<ChatResponse, LlmError>) {
        self.open = false;
        let (outcome, error) = match result {
            Ok(_) => (CallOutcome::Ok, None),
            Err(e @ LlmError::Cancelled { .. }) => (CallOutcome::Abandoned, Some(e)),
            Err(e) => (CallOutcome::Failed, Some(e)),
        };
        if let Ok(r) = result {
            self.live.set_tokens(r.usage.completion_tokens);
        }
        self.close(outcome, error, result.as_ref().ok());
    }

    fn close(&self, outcome: CallOutcome, error: Option<&LlmError>, answer: Option<&ChatResponse>) {
        let message = error.map(|e| e.to_string());
        self.report(CallState::Finished {
            outcome,
            error: message.clone(),
        });
        let attempts = self.live.attempts.load(Ordering::Relaxed);
        // A call refused before anything was sent (its budget) reached no server.
        if attempts == 0 {
            return;
        }
        let streamed = self.live.tokens.load(Ordering::Relaxed);
        let record = CallRecord {
            purpose: self.purpose,
            phase: self.phase,
            outcome,
            error_kind: error.map(LlmError::kind),
            error: message,
            usage: answer.map(|a| a.usage).unwrap_or(Usage {
                prompt_tokens: if matches!(error, Some(LlmError::Connect { .. })) {
                    0
                } else {
                    self.prompt_estimate
                },
                completion_tokens: streamed,
                estimated: true,
            }),
            attempts,
            retries: self.live.retries(),
            model: answer
                .map(|a| a.model.clone())
                .unwrap_or_else(|| self.client.config.model.clone()),
            streamed: self.client.config.stream && self.client.agent.is_none(),
            finish_reason: answer.and_then(|a| a.finish_reason.clone()),
            started_at: chrono::DateTime::<chrono::Utc>::from(self.live.started)
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            duration_ms: self.live.elapsed_ms(),
            first_token_ms: self.live.first_token_ms(),
        };
        lock(&self.client.calls).push(record);
    }
}

impl Drop for Journal<'_> {
    fn drop(&mut self) {
        if self.open {
            self.open = false;
            self.close(CallOutcome::Abandoned, None, None);
        }
    }
}
