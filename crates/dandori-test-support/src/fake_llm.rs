//! `FakeLlmServer`: a scripted OpenAI / Anthropic compatible server over real HTTP.
//!
//! Each incoming request takes the next [`Reply`] of the script. Every request is
//! recorded (path, headers, body) and checked against the invariants a real provider
//! enforces (model present, messages non-empty, auth header shape, tool schemas);
//! broken invariants are collected and visible through [`FakeLlmServer::violations`].
//!
//! The server runs on its own thread with its own tokio runtime, so it works from
//! plain `#[test]` functions and from async tests alike.

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A complete HTTP response.
    Http {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// A `text/event-stream` response: each frame is written followed by a blank line,
    /// `gap` apart. With `cut`, the connection is aborted after the frames (a stream
    /// cut mid-way); without, the body simply ends after them.
    Sse {
        frames: Vec<String>,
        gap: Duration,
        cut: bool,
    },
    /// The first `frames` arrive, then the server stays silent for `stall` before
    /// sending the rest (an idle stream).
    StalledSse {
        frames: Vec<String>,
        stall: Duration,
        rest: Vec<String>,
    },
    /// Wait before answering (a slow response).
    Delayed(Duration, Box<Reply>),
}

impl Reply {
    pub fn json(status: u16, body: &Value) -> Reply {
        Reply::Http {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A non-streaming OpenAI chat completion answering `text`.
    pub fn openai_text(text: &str) -> Reply {
        Reply::json(
            200,
            &json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": "fake-model",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop"
                }],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
            }),
        )
    }

    /// A non-streaming OpenAI chat completion with one tool call.
    pub fn openai_tool_call(name: &str, arguments: &Value) -> Reply {
        Reply::json(
            200,
            &json!({
                "id": "chatcmpl-fake",
                "object": "chat.completion",
                "model": "fake-model",
                "choices": [{
                    "index": 0,
                    "message": {"role": "assistant", "content": null, "tool_calls": [{
                        "id": "call_1", "type": "function",
                        "function": {"name": name, "arguments": arguments.to_string()}
                    }]},
                    "finish_reason": "tool_calls"
                }],
                "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150}
            }),
        )
    }

    /// An OpenAI SSE stream delivering `text` in `pieces` content deltas, then the
    /// finish reason, a usage chunk and `[DONE]`.
    pub fn openai_stream(text: &str, pieces: usize) -> Reply {
        Reply::Sse {
            frames: openai_text_frames(text, pieces, true),
            gap: Duration::ZERO,
            cut: false,
        }
    }

    /// An OpenAI SSE stream with one tool call whose name arrives in the first delta
    /// and whose arguments are split across `pieces` deltas.
    pub fn openai_stream_tool_call(name: &str, arguments: &Value, pieces: usize) -> Reply {
        let args = arguments.to_string();
        let mut frames = vec![data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": "call_1", "type": "function",
                "function": {"name": name, "arguments": ""}
            }]}, "finish_reason": null}]
        }))];
        for piece in split_pieces(&args, pieces) {
            frames.push(data(&json!({
                "id": "chatcmpl-fake", "object": "chat.completion.chunk",
                "choices": [{"index": 0, "delta": {"tool_calls": [{
                    "index": 0, "function": {"arguments": piece}
                }]}, "finish_reason": null}]
            })));
        }
        frames.push(data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]
        })));
        frames.push(data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 120, "completion_tokens": 60, "total_tokens": 180}
        })));
        frames.push("data: [DONE]".to_string());
        Reply::Sse {
            frames,
            gap: Duration::ZERO,
            cut: false,
        }
    }

    /// An OpenAI stream that delivers half of `text` and then loses the connection.
    pub fn openai_stream_cut(text: &str) -> Reply {
        let mut frames = openai_text_frames(text, 4, false);
        frames.truncate(3);
        Reply::Sse {
            frames,
            gap: Duration::ZERO,
            cut: true,
        }
    }

    /// An OpenAI stream that goes silent for `stall` after its first delta.
    pub fn openai_stream_stalled(text: &str, stall: Duration) -> Reply {
        let mut frames = openai_text_frames(text, 2, true);
        let rest = frames.split_off(2);
        Reply::StalledSse {
            frames,
            stall,
            rest,
        }
    }

    /// A non-streaming Anthropic message answering `text`.
    pub fn anthropic_text(text: &str) -> Reply {
        Reply::json(
            200,
            &json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 50}
            }),
        )
    }

    /// A non-streaming Anthropic message with one `tool_use` block.
    pub fn anthropic_tool_use(name: &str, input: &Value) -> Reply {
        Reply::json(
            200,
            &json!({
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": name, "input": input}],
                "stop_reason": "tool_use",
                "usage": {"input_tokens": 100, "output_tokens": 50}
            }),
        )
    }

    /// An Anthropic SSE stream (message_start, content_block_start/delta/stop,
    /// message_delta, message_stop) delivering `text` in `pieces` text deltas.
    pub fn anthropic_stream(text: &str, pieces: usize) -> Reply {
        Reply::Sse {
            frames: anthropic_frames(
                json!({"type": "text", "text": ""}),
                split_pieces(text, pieces)
                    .into_iter()
                    .map(|p| json!({"type": "text_delta", "text": p}))
                    .collect(),
                "end_turn",
                true,
            ),
            gap: Duration::ZERO,
            cut: false,
        }
    }

    /// An Anthropic SSE stream with one `tool_use` block whose input arrives as
    /// `input_json_delta` pieces.
    pub fn anthropic_stream_tool_use(name: &str, input: &Value, pieces: usize) -> Reply {
        Reply::Sse {
            frames: anthropic_frames(
                json!({"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}),
                split_pieces(&input.to_string(), pieces)
                    .into_iter()
                    .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
                    .collect(),
                "tool_use",
                true,
            ),
            gap: Duration::ZERO,
            cut: false,
        }
    }

    /// An Anthropic stream that delivers part of `text` and then loses the connection
    /// before `message_stop`.
    pub fn anthropic_stream_cut(text: &str) -> Reply {
        let mut frames = anthropic_frames(
            json!({"type": "text", "text": ""}),
            split_pieces(text, 4)
                .into_iter()
                .map(|p| json!({"type": "text_delta", "text": p}))
                .collect(),
            "end_turn",
            false,
        );
        frames.truncate(4);
        Reply::Sse {
            frames,
            gap: Duration::ZERO,
            cut: true,
        }
    }

    /// 429 with `Retry-After: <secs>`.
    pub fn rate_limited(retry_after_secs: u64) -> Reply {
        Reply::Http {
            status: 429,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("retry-after".into(), retry_after_secs.to_string()),
            ],
            body: json!({"error": {"type": "rate_limit_exceeded", "code": "rate_limit_exceeded",
                "message": "Rate limit reached"}})
            .to_string(),
        }
    }

    /// 429 with `retry-after-ms: <ms>` (and a coarser `Retry-After`, which the client
    /// must not prefer).
    pub fn rate_limited_ms(retry_after_ms: u64) -> Reply {
        Reply::Http {
            status: 429,
            headers: vec![
                ("content-type".into(), "application/json".into()),
                ("retry-after-ms".into(), retry_after_ms.to_string()),
                ("retry-after".into(), "30".into()),
            ],
            body:
                json!({"error": {"type": "rate_limit_exceeded", "message": "Rate limit reached"}})
                    .to_string(),
        }
    }

    /// 429 that means the account is out of quota: never worth retrying.
    pub fn quota_exhausted() -> Reply {
        Reply::json(
            429,
            &json!({"error": {"type": "insufficient_quota", "code": "insufficient_quota",
                "message": "You exceeded your current quota"}}),
        )
    }

    pub fn server_error() -> Reply {
        Reply::json(
            500,
            &json!({"error": {"type": "server_error", "message": "internal error"}}),
        )
    }

    /// Anthropic's 529 "overloaded".
    pub fn overloaded() -> Reply {
        Reply::json(
            529,
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        )
    }

    pub fn status(status: u16, message: &str) -> Reply {
        Reply::json(
            status,
            &json!({"error": {"type": "invalid_request_error", "message": message}}),
        )
    }

    /// A 200 whose body is not JSON at all.
    pub fn malformed_body() -> Reply {
        Reply::Http {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: "{\"id\": \"chatcmpl-fake\", \"choices\": [".into(),
        }
    }

    pub fn slow(delay: Duration, then: Reply) -> Reply {
        Reply::Delayed(delay, Box::new(then))
    }
}

fn data(value: &Value) -> String {
    format!("data: {value}")
}

fn event(name: &str, value: &Value) -> String {
    format!("event: {name}\ndata: {value}")
}

/// Split on char boundaries into at most `pieces` non-empty parts.
fn split_pieces(text: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    if chars.is_empty() {
        return vec![String::new()];
    }
    let size = chars.len().div_ceil(pieces.max(1));
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

fn openai_text_frames(text: &str, pieces: usize, finish: bool) -> Vec<String> {
    let mut frames = vec![data(&json!({
        "id": "chatcmpl-fake", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": null}]
    }))];
    for piece in split_pieces(text, pieces) {
        frames.push(data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]
        })));
    }
    if finish {
        frames.push(data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]
        })));
        frames.push(data(&json!({
            "id": "chatcmpl-fake", "object": "chat.completion.chunk", "choices": [],
            "usage": {"prompt_tokens": 120, "completion_tokens": 60, "total_tokens": 180}
        })));
        frames.push("data: [DONE]".to_string());
    }
    frames
}

fn anthropic_frames(
    block: Value,
    deltas: Vec<Value>,
    stop_reason: &str,
    finish: bool,
) -> Vec<String> {
    let mut frames = vec![
        event(
            "message_start",
            &json!({"type": "message_start", "message": {
                "id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                "content": [], "stop_reason": null,
                "usage": {"input_tokens": 120, "output_tokens": 1}
            }}),
        ),
        event(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": block}),
        ),
        event("ping", &json!({"type": "ping"})),
    ];
    for delta in deltas {
        frames.push(event(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        ));
    }
    if finish {
        frames.push(event(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ));
        frames.push(event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                "usage": {"output_tokens": 60}}),
        ));
        frames.push(event("message_stop", &json!({"type": "message_stop"})));
    }
    frames
}

/// A request as the server saw it. Header names are lower-case.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    pub headers: BTreeMap<String, String>,
    /// The body parsed as JSON (`Value::Null` when it was not JSON).
    pub body: Value,
    pub raw_body: String,
}

impl RecordedRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .get(&name.to_ascii_lowercase())
            .map(String::as_str)
    }
}

#[derive(Default)]
struct Shared {
    script: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    violations: Vec<String>,
    expected_key: Option<String>,
    /// Served when the script is empty (benchmarks).
    repeat: Option<Reply>,
    /// Keep recording requests (off for benchmarks, to keep memory flat).
    record: bool,
}

#[derive(Clone)]
struct AppState(Arc<Mutex<Shared>>);

impl AppState {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        // A panic while holding the lock only happens in a failing test; keep serving.
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// The running server. Dropping it shuts it down.
pub struct FakeLlmServer {
    addr: SocketAddr,
    state: AppState,
    /// The server; stopped when this is dropped.
    _served: crate::serve::Served,
}

impl FakeLlmServer {
    /// Start on `127.0.0.1:0` with this script.
    pub fn start(script: Vec<Reply>) -> FakeLlmServer {
        FakeLlmServer::spawn(Shared {
            script: script.into(),
            record: true,
            ..Shared::default()
        })
    }

    /// Serve `reply` to every request, without recording them (for benchmarks).
    /// Invariant violations are still collected.
    pub fn start_repeating(reply: Reply) -> FakeLlmServer {
        FakeLlmServer::spawn(Shared {
            repeat: Some(reply),
            record: false,
            ..Shared::default()
        })
    }

    fn spawn(shared: Shared) -> FakeLlmServer {
        let state = AppState(Arc::new(Mutex::new(shared)));
        let served = crate::serve::spawn(
            Router::new().fallback(handle).with_state(state.clone()),
            "fake LLM server",
        );
        FakeLlmServer {
            addr: served.addr,
            state,
            _served: served,
        }
    }

    /// Also check that every request carries this key (`Authorization: Bearer` for
    /// OpenAI paths, `x-api-key` for Anthropic paths).
    pub fn expect_api_key(self, key: &str) -> FakeLlmServer {
        self.state.lock().expected_key = Some(key.to_string());
        self
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL a client should be configured with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Append replies to the script.
    pub fn push(&self, replies: Vec<Reply>) {
        self.state.lock().script.extend(replies);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.state.lock().requests.len()
    }

    /// Replies not consumed yet.
    pub fn remaining(&self) -> usize {
        self.state.lock().script.len()
    }

    /// Broken request invariants, each naming the request number and the problem.
    pub fn violations(&self) -> Vec<String> {
        self.state.lock().violations.clone()
    }

    /// Panics listing the violations, if any.
    pub fn assert_no_violations(&self) {
        let violations = self.violations();
        assert!(
            violations.is_empty(),
            "fake LLM server saw invalid requests:\n{}",
            violations.join("\n")
        );
    }
}

async fn handle(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let raw_body = String::from_utf8_lossy(&body).into_owned();
    let recorded = RecordedRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: serde_json::from_str(&raw_body).unwrap_or(Value::Null),
        raw_body,
    };
    let reply = {
        let mut shared = state.lock();
        let number = shared.requests.len() + 1;
        let problems = check_invariants(&recorded, shared.expected_key.as_deref());
        for problem in problems {
            shared
                .violations
                .push(format!("request {number} {}: {problem}", recorded.path));
        }
        if shared.record {
            shared.requests.push(recorded);
        }
        match shared.script.pop_front().or_else(|| shared.repeat.clone()) {
            Some(reply) => reply,
            None => {
                shared
                    .violations
                    .push(format!("request {number}: script exhausted"));
                Reply::status(500, "fake LLM server: script exhausted")
            }
        }
    };
    respond(reply).await
}

async fn respond(mut reply: Reply) -> Response {
    while let Reply::Delayed(delay, next) = reply {
        tokio::time::sleep(delay).await;
        reply = *next;
    }
    match reply {
        Reply::Http {
            status,
            headers,
            body,
        } => build(status, &headers, Body::from(body)),
        Reply::Sse { frames, gap, cut } => {
            let stream = futures::stream::unfold(
                (frames.into_iter(), gap, cut, false),
                |(mut frames, gap, cut, first_done)| async move {
                    if first_done && !gap.is_zero() {
                        tokio::time::sleep(gap).await;
                    }
                    match frames.next() {
                        Some(frame) => Some((
                            Ok::<Bytes, std::io::Error>(Bytes::from(format!("{frame}\n\n"))),
                            (frames, gap, cut, true),
                        )),
                        None if cut => Some((
                            {
                                // Let the frames reach the client before the reset.
                                tokio::time::sleep(Duration::from_millis(20)).await;
                                Err(std::io::Error::new(
                                    std::io::ErrorKind::ConnectionReset,
                                    "fake LLM server: stream cut",
                                ))
                            },
                            (Vec::new().into_iter(), gap, false, true),
                        )),
                        None => None,
                    }
                },
            );
            sse(Body::from_stream(stream))
        }
        Reply::StalledSse {
            frames,
            stall,
            rest,
        } => {
            let head = futures::stream::iter(
                frames
                    .into_iter()
                    .map(|f| Ok::<Bytes, std::io::Error>(Bytes::from(format!("{f}\n\n")))),
            );
            let tail = futures::stream::once(async move {
                tokio::time::sleep(stall).await;
                let text: String = rest.iter().map(|f| format!("{f}\n\n")).collect();
                Ok::<Bytes, std::io::Error>(Bytes::from(text))
            });
            use futures::StreamExt;
            sse(Body::from_stream(head.chain(tail)))
        }
        Reply::Delayed(..) => build(500, &[], Body::from("unreachable delayed reply")),
    }
}

fn sse(body: Body) -> Response {
    build(
        200,
        &[
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
        ],
        body,
    )
}

fn build(status: u16, headers: &[(String, String)], body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            axum::http::HeaderName::from_bytes(name.as_bytes()),
            axum::http::HeaderValue::from_str(value),
        ) {
            response.headers_mut().insert(name, value);
        }
    }
    response
}

/// What a real provider would reject.
fn check_invariants(request: &RecordedRequest, expected_key: Option<&str>) -> Vec<String> {
    let mut problems = Vec::new();
    if request.method != "POST" {
        problems.push(format!("method {} (expected POST)", request.method));
    }
    let anthropic = request.path.ends_with("/messages");
    if !anthropic && !request.path.ends_with("/chat/completions") {
        problems.push("path is neither */chat/completions nor */messages".to_string());
    }
    let Some(body) = request.body.as_object() else {
        problems.push("body is not a JSON object".to_string());
        return problems;
    };
    match body.get("model").and_then(Value::as_str) {
        Some(m) if !m.trim().is_empty() => {}
        _ => problems.push("`model` missing or empty".to_string()),
    }
    match body.get("messages").and_then(Value::as_array) {
        Some(messages) if !messages.is_empty() => {
            let roles: &[&str] = if anthropic {
                &["user", "assistant"]
            } else {
                &["system", "user", "assistant", "tool", "developer"]
            };
            for (i, message) in messages.iter().enumerate() {
                let role = message.get("role").and_then(Value::as_str).unwrap_or("");
                if !roles.contains(&role) {
                    problems.push(format!("messages[{i}].role {role:?} not allowed"));
                }
                if message.get("content").is_none() && message.get("tool_calls").is_none() {
                    problems.push(format!("messages[{i}] has no content"));
                }
            }
        }
        _ => problems.push("`messages` missing or empty".to_string()),
    }
    if anthropic {
        if !body.get("max_tokens").is_some_and(Value::is_u64) {
            problems.push("`max_tokens` missing (required by Anthropic)".to_string());
        }
        if request.header("anthropic-version").is_none() {
            problems.push("`anthropic-version` header missing".to_string());
        }
        if let Some(key) = request.header("x-api-key") {
            if key.trim().is_empty() || key.contains(char::is_whitespace) {
                problems.push("`x-api-key` header malformed".to_string());
            }
            if expected_key.is_some_and(|k| k != key) {
                problems.push("`x-api-key` is not the expected key".to_string());
            }
        } else if expected_key.is_some() {
            problems.push("`x-api-key` header missing".to_string());
        }
        if request.header("authorization").is_some() {
            problems.push("Anthropic request carries an Authorization header".to_string());
        }
    } else {
        match request.header("authorization") {
            Some(auth) => match auth.strip_prefix("Bearer ") {
                Some(key) if !key.is_empty() && !key.contains(char::is_whitespace) => {
                    if expected_key.is_some_and(|k| k != key) {
                        problems.push("bearer token is not the expected key".to_string());
                    }
                }
                _ => problems.push("`Authorization` is not `Bearer <key>`".to_string()),
            },
            None if expected_key.is_some() => {
                problems.push("`Authorization` header missing".to_string())
            }
            None => {}
        }
    }
    if let Some(tools) = body.get("tools") {
        match tools.as_array() {
            Some(tools) => {
                for (i, tool) in tools.iter().enumerate() {
                    let (name, schema) = if anthropic {
                        (tool.get("name"), tool.get("input_schema"))
                    } else {
                        if tool.get("type").and_then(Value::as_str) != Some("function") {
                            problems.push(format!("tools[{i}].type is not \"function\""));
                        }
                        let f = tool.get("function");
                        (
                            f.and_then(|f| f.get("name")),
                            f.and_then(|f| f.get("parameters")),
                        )
                    };
                    check_tool_name(i, name, &mut problems);
                    check_schema(&format!("tools[{i}] schema"), schema, &mut problems);
                }
            }
            None => problems.push("`tools` is not an array".to_string()),
        }
    }
    if let Some(format) = body.get("response_format") {
        match format.get("type").and_then(Value::as_str) {
            Some("json_schema") => {
                let spec = format.get("json_schema");
                check_tool_name(0, spec.and_then(|s| s.get("name")), &mut problems);
                check_schema(
                    "response_format.json_schema.schema",
                    spec.and_then(|s| s.get("schema")),
                    &mut problems,
                );
            }
            Some("json_object") | Some("text") => {}
            other => problems.push(format!("response_format.type {other:?} unknown")),
        }
    }
    problems
}

fn check_tool_name(i: usize, name: Option<&Value>, problems: &mut Vec<String>) {
    let ok = name.and_then(Value::as_str).is_some_and(|n| {
        !n.is_empty()
            && n.len() <= 64
            && n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    });
    if !ok {
        problems.push(format!(
            "tools[{i}] name {name:?} is not ^[a-zA-Z0-9_-]{{1,64}}$"
        ));
    }
}

fn check_schema(what: &str, schema: Option<&Value>, problems: &mut Vec<String>) {
    match schema {
        Some(s) if s.get("type").and_then(Value::as_str) == Some("object") => {
            if let Some(props) = s.get("properties")
                && !props.is_object()
            {
                problems.push(format!("{what}: `properties` is not an object"));
            }
            if let Some(required) = s.get("required")
                && !required
                    .as_array()
                    .is_some_and(|r| r.iter().all(Value::is_string))
            {
                problems.push(format!("{what}: `required` is not an array of strings"));
            }
        }
        _ => problems.push(format!("{what} is not a JSON schema of type object")),
    }
}
