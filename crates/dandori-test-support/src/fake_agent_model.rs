//! `FakeAgentModel`: a scripted model server for the real agent CLIs (Claude Code,
//! Codex), over real HTTP on 127.0.0.1.
//!
//! It speaks what those programs actually send, captured from them: Claude Code
//! 2.1 streams `POST /v1/messages?beta=true` (Anthropic Messages, `stream: true`,
//! extended thinking on, ~25 tools) after a `HEAD /` connectivity probe; Codex 0.171
//! streams `POST /v1/responses` (OpenAI Responses, `stream: true`, tools
//! `exec_command`, `write_stdin`, …). Each main request (one that offers tools) takes
//! the next [`Turn`] of the script; the answer is streamed as the real API streams
//! it (Anthropic `message_start` … `message_stop` with a signed thinking block;
//! Responses `response.created` … `response.completed`), with usage.
//!
//! Every request is checked as strictly as the real API checks it, and a broken
//! rule is recorded as a violation: the key, the headers, `model`, `max_tokens`,
//! `stream`, roles alternating, every `tool_result` / `function_call_output`
//! answering a call of the previous turn (and every call answered), the thinking
//! block echoed back unchanged before a `tool_use` while thinking is on, the tool
//! the script calls being one the client offered, tool schemas of type object.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, Uri};
use axum::response::Response;
use serde_json::{Value, json};

pub use crate::fake_llm::RecordedRequest;

/// One scripted model turn.
#[derive(Debug, Clone)]
pub enum Turn {
    /// Call one tool with this input (Anthropic `tool_use`; Responses
    /// `function_call` with the input as its JSON `arguments`).
    Tool { name: String, input: Value },
    /// Answer with text and end the turn.
    Text(String),
}

impl Turn {
    pub fn tool(name: &str, input: Value) -> Turn {
        Turn::Tool {
            name: name.to_string(),
            input,
        }
    }

    pub fn text(text: &str) -> Turn {
        Turn::Text(text.to_string())
    }
}

/// The API the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// Anthropic Messages (`/v1/messages`), as Claude Code calls it.
    Anthropic,
    /// OpenAI Responses (`/v1/responses`), as Codex calls it.
    Responses,
    /// Gemini API (`/v1beta/models/MODEL:streamGenerateContent?alt=sse`), as
    /// Gemini CLI calls it.
    Gemini,
}

/// Tokens each streamed answer reports (uncached input, output).
pub const TURN_USAGE: (u64, u64) = (1200, 80);
/// Input tokens each streamed answer reports read from the prompt cache, as the
/// real services report for an agent CLI's turn (Claude Code resends its system
/// prompt and tools, about 24 000 tokens, every turn): Anthropic's
/// `cache_read_input_tokens`, OpenAI's `input_tokens_details.cached_tokens`
/// (inside `input_tokens`), Gemini's `cachedContentTokenCount` (inside
/// `promptTokenCount`).
pub const TURN_CACHE_READ: u64 = 24_000;

/// The signature of the thinking blocks this server sends; Claude Code must send
/// them back unchanged.
const SIGNATURE: &str = "ZmFrZS10aGlua2luZy1zaWduYXR1cmU=";

#[derive(Default)]
struct Shared {
    script: VecDeque<Turn>,
    requests: Vec<RecordedRequest>,
    violations: Vec<String>,
    expected_key: Option<String>,
    /// Calls issued, by id (a tool result must answer one of these).
    issued: BTreeSet<String>,
    next_id: u32,
}

#[derive(Clone)]
struct AppState(Arc<Mutex<Shared>>, Wire);

impl AppState {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        match self.0.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}

/// The running server; dropping it stops it.
pub struct FakeAgentModel {
    addr: std::net::SocketAddr,
    state: AppState,
    _served: crate::serve::Served,
}

impl FakeAgentModel {
    pub fn start(wire: Wire, script: Vec<Turn>) -> FakeAgentModel {
        let state = AppState(
            Arc::new(Mutex::new(Shared {
                script: script.into(),
                ..Shared::default()
            })),
            wire,
        );
        let served = crate::serve::spawn(
            Router::new().fallback(handle).with_state(state.clone()),
            "fake agent model",
        );
        FakeAgentModel {
            addr: served.addr,
            state,
            _served: served,
        }
    }

    /// Every request must carry this key (`x-api-key` / `Authorization: Bearer`).
    pub fn expect_api_key(self, key: &str) -> FakeAgentModel {
        self.state.lock().expected_key = Some(key.to_string());
        self
    }

    /// `http://127.0.0.1:PORT` (Claude Code's `ANTHROPIC_BASE_URL`).
    pub fn origin(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1` (an OpenAI-style base URL).
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn push(&self, turns: Vec<Turn>) {
        self.state.lock().script.extend(turns);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().requests.clone()
    }

    /// The main (tool-offering) requests, in order.
    pub fn turns_served(&self) -> Vec<RecordedRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == "POST" && r.body.get("tools").is_some())
            .collect()
    }

    pub fn remaining(&self) -> usize {
        self.state.lock().script.len()
    }

    pub fn violations(&self) -> Vec<String> {
        self.state.lock().violations.clone()
    }

    pub fn assert_no_violations(&self) {
        let v = self.violations();
        assert!(
            v.is_empty(),
            "fake agent model saw invalid requests:\n{}",
            v.join("\n")
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
    let request = RecordedRequest {
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
    let wire = state.1;
    let mut shared = state.lock();
    let number = shared.requests.len() + 1;
    shared.requests.push(request.clone());
    // Claude Code's connectivity probe.
    if method == Method::HEAD || method == Method::GET {
        return reply(200, "application/json", String::new());
    }
    let expected_path = match wire {
        Wire::Anthropic => "/v1/messages",
        Wire::Responses => "/v1/responses",
        Wire::Gemini
            if request.path.starts_with("/v1beta/models/")
                && request.path.ends_with(":streamGenerateContent") =>
        {
            request.path.as_str()
        }
        Wire::Gemini => "/v1beta/models/MODEL:streamGenerateContent",
    };
    if request.path == "/v1/messages/count_tokens" && wire == Wire::Anthropic {
        return reply(
            200,
            "application/json",
            json!({"input_tokens": TURN_USAGE.0}).to_string(),
        );
    }
    if request.path != expected_path {
        shared.violations.push(format!(
            "request {number}: unexpected {method} {}",
            request.path
        ));
        return error(wire, 404, "not_found_error", "no such endpoint");
    }
    let mut problems = Vec::new();
    match wire {
        Wire::Anthropic => check_anthropic(&request, &shared, &mut problems),
        Wire::Responses => check_responses(&request, &shared, &mut problems),
        Wire::Gemini => check_gemini(&request, &shared, &mut problems),
    }
    if !problems.is_empty() {
        for p in &problems {
            shared.violations.push(format!("request {number}: {p}"));
        }
        // The real API refuses such a request.
        return error(wire, 400, "invalid_request_error", &problems.join("; "));
    }
    let main = request.body.get("tools").is_some();
    let model = match wire {
        Wire::Gemini => request
            .path
            .trim_start_matches("/v1beta/models/")
            .trim_end_matches(":streamGenerateContent")
            .to_string(),
        _ => request
            .body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
    };
    let turn = if main {
        match shared.script.pop_front() {
            Some(t) => t,
            None => {
                shared
                    .violations
                    .push(format!("request {number}: script exhausted"));
                return error(wire, 500, "api_error", "fake agent model: script exhausted");
            }
        }
    } else {
        Turn::text("ok")
    };
    if let Turn::Tool { name, .. } = &turn
        && !offered(wire, &request.body).contains(name)
    {
        shared.violations.push(format!(
            "request {number}: the script calls {name:?}, which the client did not offer"
        ));
    }
    shared.next_id += 1;
    let id = format!("fake{:04}", shared.next_id);
    if let Turn::Tool { .. } = turn {
        shared.issued.insert(call_id(wire, &id));
    }
    let thinking = request
        .body
        .pointer("/thinking/type")
        .and_then(Value::as_str)
        == Some("enabled");
    // `{cwd}` in a tool input: the working directory the client announced.
    let turn = match turn {
        Turn::Tool { name, input } if input.to_string().contains("{cwd}") => {
            let cwd = cwd_of(&request.raw_body).unwrap_or_default();
            let text = input.to_string().replace("{cwd}", &cwd);
            Turn::Tool {
                name,
                input: serde_json::from_str(&text).unwrap_or(input),
            }
        }
        t => t,
    };
    drop(shared);
    let frames = match wire {
        Wire::Anthropic => anthropic_frames(&turn, &id, &model, thinking),
        Wire::Responses => responses_frames(&turn, &id, &model),
        Wire::Gemini => gemini_frames(&turn, &id, &model),
    };
    reply(200, "text/event-stream", frames.concat())
}

/// The working directory a request announces: Claude Code's `Primary working
/// directory:` line, Codex's `<cwd>…</cwd>`.
fn cwd_of(raw: &str) -> Option<String> {
    let after = raw
        .split_once("Primary working directory: ")
        .or_else(|| raw.split_once("<cwd>"))
        .or_else(|| raw.split_once("**Workspace Directories:**\\n  - "))?
        .1;
    let end = after.find(['\\', '"', '<', ' '])?;
    Some(after[..end].to_string())
}

fn call_id(wire: Wire, id: &str) -> String {
    match wire {
        Wire::Anthropic => format!("toolu_{id}"),
        Wire::Responses => format!("call_{id}"),
        Wire::Gemini => format!("gcall_{id}"),
    }
}

fn reply(status: u16, content_type: &str, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = axum::http::StatusCode::from_u16(status)
        .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
    if let Ok(v) = axum::http::HeaderValue::from_str(content_type) {
        r.headers_mut().insert("content-type", v);
    }
    r
}

fn error(wire: Wire, status: u16, kind: &str, message: &str) -> Response {
    let body = match wire {
        Wire::Anthropic => {
            json!({"type": "error", "error": {"type": kind, "message": message}})
        }
        Wire::Responses => {
            json!({"error": {"type": kind, "message": message, "code": null, "param": null}})
        }
        Wire::Gemini => {
            json!({"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}})
        }
    };
    reply(status, "application/json", body.to_string())
}

/// The tool names a request offers.
fn offered(wire: Wire, body: &Value) -> BTreeSet<String> {
    body.get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|t| match wire {
            Wire::Gemini => t
                .get("functionDeclarations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
            Wire::Anthropic => vec![t.clone()],
            Wire::Responses => {
                if t.get("type").and_then(Value::as_str) == Some("function") {
                    vec![t.clone()]
                } else {
                    Vec::new()
                }
            }
        })
        .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_string))
        .collect()
}

fn sse(event: &str, data: &Value) -> String {
    format!("event: {event}\ndata: {data}\n\n")
}

fn anthropic_frames(turn: &Turn, id: &str, model: &str, thinking: bool) -> Vec<String> {
    let mut frames = vec![sse(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": format!("msg_{id}"), "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": TURN_USAGE.0, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": TURN_CACHE_READ, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    let mut block = |frames: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
        frames.push(sse(
            "content_block_start",
            &json!({"type": "content_block_start", "index": index, "content_block": start}),
        ));
        for d in deltas {
            frames.push(sse(
                "content_block_delta",
                &json!({"type": "content_block_delta", "index": index, "delta": d}),
            ));
        }
        frames.push(sse(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    };
    if thinking {
        block(
            &mut frames,
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            vec![
                json!({"type": "thinking_delta", "thinking": "The script says what to do next."}),
                json!({"type": "signature_delta", "signature": SIGNATURE}),
            ],
        );
    }
    let stop = match turn {
        Turn::Tool { name, input } => {
            let text = input.to_string();
            let (a, b) = text.split_at(text.len() / 2);
            block(
                &mut frames,
                json!({"type": "tool_use", "id": call_id(Wire::Anthropic, id), "name": name, "input": {}}),
                vec![
                    json!({"type": "input_json_delta", "partial_json": a}),
                    json!({"type": "input_json_delta", "partial_json": b}),
                ],
            );
            "tool_use"
        }
        Turn::Text(text) => {
            block(
                &mut frames,
                json!({"type": "text", "text": ""}),
                vec![json!({"type": "text_delta", "text": text})],
            );
            "end_turn"
        }
    };
    frames.push(sse(
        "message_delta",
        &json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null},
                "usage": {"output_tokens": TURN_USAGE.1}}),
    ));
    frames.push(sse("message_stop", &json!({"type": "message_stop"})));
    frames
}

fn responses_frames(turn: &Turn, id: &str, model: &str) -> Vec<String> {
    let response_id = format!("resp_{id}");
    let base = |status: &str, output: Value| {
        json!({"id": response_id, "object": "response", "created_at": 1_700_000_000,
               "status": status, "model": model, "output": output})
    };
    let item = match turn {
        Turn::Tool { name, input } => json!({
            "type": "function_call", "id": format!("fc_{id}"), "status": "completed",
            "call_id": call_id(Wire::Responses, id), "name": name, "arguments": input.to_string()}),
        Turn::Text(text) => json!({
            "type": "message", "id": format!("msg_{id}"), "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}),
    };
    let mut added = item.clone();
    added["status"] = json!("in_progress");
    let mut frames = vec![
        sse(
            "response.created",
            &json!({"type": "response.created", "sequence_number": 0, "response": base("in_progress", json!([]))}),
        ),
        sse(
            "response.output_item.added",
            &json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": added}),
        ),
    ];
    if let Turn::Text(text) = turn {
        frames.push(sse(
            "response.output_text.delta",
            &json!({"type": "response.output_text.delta", "sequence_number": 2, "item_id": format!("msg_{id}"),
                    "output_index": 0, "content_index": 0, "delta": text}),
        ));
    }
    frames.push(sse(
        "response.output_item.done",
        &json!({"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item}),
    ));
    let mut done = base("completed", json!([item]));
    done["usage"] = json!({"input_tokens": TURN_USAGE.0 + TURN_CACHE_READ,
        "input_tokens_details": {"cached_tokens": TURN_CACHE_READ},
        "output_tokens": TURN_USAGE.1, "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": TURN_USAGE.0 + TURN_CACHE_READ + TURN_USAGE.1});
    frames.push(sse(
        "response.completed",
        &json!({"type": "response.completed", "sequence_number": 4, "response": done}),
    ));
    frames
}

fn gemini_frames(turn: &Turn, id: &str, model: &str) -> Vec<String> {
    let part = match turn {
        Turn::Tool { name, input } => {
            json!({"functionCall": {"id": call_id(Wire::Gemini, id), "name": name, "args": input}})
        }
        Turn::Text(text) => json!({"text": text}),
    };
    let chunk = json!({
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": TURN_USAGE.0 + TURN_CACHE_READ,
                          "cachedContentTokenCount": TURN_CACHE_READ,
                          "candidatesTokenCount": TURN_USAGE.1,
                          "totalTokenCount": TURN_USAGE.0 + TURN_CACHE_READ + TURN_USAGE.1},
        "modelVersion": model,
        "responseId": format!("resp_{id}"),
    });
    vec![format!("data: {chunk}\r\n\r\n")]
}

fn check_gemini(r: &RecordedRequest, shared: &Shared, problems: &mut Vec<String>) {
    check_key(
        r.header("x-goog-api-key"),
        shared.expected_key.as_deref(),
        "`x-goog-api-key`",
        problems,
    );
    if !r.body.is_object() {
        problems.push("body is not a JSON object".to_string());
        return;
    }
    for (i, t) in r
        .body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        for (j, f) in t
            .get("functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let schema = f
                .get("parametersJsonSchema")
                .or_else(|| f.get("parameters"));
            if schema.is_some_and(|s| {
                s.get("type")
                    .and_then(Value::as_str)
                    .is_none_or(|t| !t.eq_ignore_ascii_case("object"))
            }) {
                problems.push(format!(
                    "tools[{i}].functionDeclarations[{j}] parameters are not of type object"
                ));
            }
        }
    }
    let Some(contents) = r.body.get("contents").and_then(Value::as_array) else {
        problems.push("`contents` missing".to_string());
        return;
    };
    if contents.is_empty() {
        problems.push("`contents` is empty".to_string());
    }
    let mut open_calls: Vec<String> = Vec::new();
    for (i, c) in contents.iter().enumerate() {
        let role = c.get("role").and_then(Value::as_str).unwrap_or("");
        if !["user", "model"].contains(&role) {
            problems.push(format!(
                "contents[{i}].role {role:?} is neither user nor model"
            ));
        }
        let parts = c.get("parts").and_then(Value::as_array);
        if parts.is_none_or(|p| p.is_empty()) {
            problems.push(format!("contents[{i}] has no parts"));
        }
        let parts = parts.cloned().unwrap_or_default();
        if role == "model" {
            for p in &parts {
                if let Some(call) = p.get("functionCall") {
                    let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                    if !shared.issued.contains(id) {
                        problems.push(format!("contents[{i}]: functionCall {id:?} was never sent"));
                    }
                    open_calls.push(
                        call.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    );
                }
            }
        } else {
            let mut answered: Vec<String> = parts
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .map(|f| {
                    f.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string()
                })
                .collect();
            answered.sort();
            open_calls.sort();
            if answered != open_calls {
                problems.push(format!(
                    "contents[{i}]: the function responses {answered:?} do not answer the calls {open_calls:?} of the previous turn"
                ));
            }
            open_calls.clear();
        }
    }
    if contents
        .last()
        .and_then(|c| c.get("role"))
        .and_then(Value::as_str)
        != Some("user")
    {
        problems.push("the last content is not the user's".to_string());
    }
}

fn check_key(found: Option<&str>, expected: Option<&str>, what: &str, problems: &mut Vec<String>) {
    match (found, expected) {
        (None, _) => problems.push(format!("{what} missing")),
        (Some(k), _) if k.is_empty() || k.contains(char::is_whitespace) => {
            problems.push(format!("{what} malformed"))
        }
        (Some(k), Some(e)) if k != e => problems.push(format!("{what} is not the expected key")),
        _ => {}
    }
}

fn check_common(body: &Value, problems: &mut Vec<String>) {
    match body.get("model").and_then(Value::as_str) {
        Some(m) if !m.trim().is_empty() => {}
        _ => problems.push("`model` missing or empty".to_string()),
    }
    if body.get("stream") != Some(&Value::Bool(true)) {
        problems.push("`stream` is not true (the agent CLIs stream)".to_string());
    }
}

fn check_anthropic(r: &RecordedRequest, shared: &Shared, problems: &mut Vec<String>) {
    if r.header("anthropic-version") != Some("2023-06-01") {
        problems.push("`anthropic-version: 2023-06-01` header missing".to_string());
    }
    check_key(
        r.header("x-api-key"),
        shared.expected_key.as_deref(),
        "`x-api-key`",
        problems,
    );
    if r.header("authorization").is_some() {
        problems.push("an Authorization header beside x-api-key".to_string());
    }
    let body = &r.body;
    if !body.is_object() {
        problems.push("body is not a JSON object".to_string());
        return;
    }
    check_common(body, problems);
    let max = body.get("max_tokens").and_then(Value::as_u64);
    if max.is_none_or(|m| m == 0) {
        problems.push("`max_tokens` missing (required)".to_string());
    }
    let thinking = body.pointer("/thinking/type").and_then(Value::as_str) == Some("enabled");
    if thinking {
        let budget = body
            .pointer("/thinking/budget_tokens")
            .and_then(Value::as_u64);
        if !budget.is_some_and(|b| b >= 1024 && max.is_some_and(|m| b < m)) {
            problems.push("thinking.budget_tokens must be ≥ 1024 and < max_tokens".to_string());
        }
    }
    for (i, t) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if t.get("type").is_none()
            && t.pointer("/input_schema/type").and_then(Value::as_str) != Some("object")
        {
            problems.push(format!("tools[{i}].input_schema is not of type object"));
        }
    }
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        problems.push("`messages` missing".to_string());
        return;
    };
    let mut expected_role = "user";
    let mut open_calls: BTreeSet<String> = BTreeSet::new();
    for (i, m) in messages.iter().enumerate() {
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        // Claude Code 2.1 sends its reminders as system messages between the
        // turns, which the API takes; they do not count in the alternation.
        if role == "system" && m.get("content").is_some() {
            continue;
        }
        if role != expected_role {
            problems.push(format!("messages[{i}].role is {role:?}, expected {expected_role:?} (roles alternate, user first)"));
        }
        let blocks: Vec<Value> = match m.get("content") {
            Some(Value::String(s)) => vec![json!({"type": "text", "text": s})],
            Some(Value::Array(a)) => a.clone(),
            _ => {
                problems.push(format!("messages[{i}].content missing"));
                Vec::new()
            }
        };
        if role == "user" {
            let answered: BTreeSet<String> = blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
                .filter_map(|b| b.get("tool_use_id").and_then(Value::as_str))
                .map(str::to_string)
                .collect();
            for id in &answered {
                if !open_calls.contains(id) {
                    problems.push(format!(
                        "messages[{i}]: tool_result {id} answers no tool_use of the previous assistant message"
                    ));
                }
            }
            for id in open_calls.difference(&answered) {
                problems.push(format!("messages[{i}]: tool_use {id} has no tool_result"));
            }
            open_calls.clear();
        } else {
            for b in &blocks {
                if b.get("type").and_then(Value::as_str) == Some("tool_use")
                    && let Some(id) = b.get("id").and_then(Value::as_str)
                {
                    if !shared.issued.contains(id) {
                        problems.push(format!("messages[{i}]: tool_use {id} was never sent"));
                    }
                    open_calls.insert(id.to_string());
                }
            }
            let first = blocks
                .first()
                .and_then(|b| b.get("type"))
                .and_then(Value::as_str);
            let last_assistant = messages[i + 1..]
                .iter()
                .all(|m| m.get("role").and_then(Value::as_str) != Some("assistant"));
            if thinking && last_assistant && !open_calls.is_empty() {
                if first != Some("thinking") {
                    problems.push(format!("messages[{i}]: with thinking enabled, the assistant message with tool_use must start with its thinking block"));
                } else if blocks[0].get("signature").and_then(Value::as_str) != Some(SIGNATURE) {
                    problems.push(format!(
                        "messages[{i}]: the thinking block's signature was altered"
                    ));
                }
            }
        }
        expected_role = if role == "user" { "assistant" } else { "user" };
    }
    if messages.is_empty() {
        problems.push("`messages` is empty".to_string());
    } else if expected_role != "assistant" {
        problems.push("the last message is not the user's".to_string());
    }
}

fn check_responses(r: &RecordedRequest, shared: &Shared, problems: &mut Vec<String>) {
    let bearer = r
        .header("authorization")
        .map(|a| a.strip_prefix("Bearer ").unwrap_or(""));
    check_key(
        bearer,
        shared.expected_key.as_deref(),
        "`Authorization: Bearer`",
        problems,
    );
    let body = &r.body;
    if !body.is_object() {
        problems.push("body is not a JSON object".to_string());
        return;
    }
    check_common(body, problems);
    for (i, t) in body
        .get("tools")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        if t.get("type").and_then(Value::as_str) == Some("function") {
            if t.get("name")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                problems.push(format!("tools[{i}]: function tool without a name"));
            }
            if t.pointer("/parameters/type").and_then(Value::as_str) != Some("object") {
                problems.push(format!("tools[{i}].parameters is not of type object"));
            }
        }
    }
    let Some(input) = body.get("input").and_then(Value::as_array) else {
        problems.push("`input` is not an array".to_string());
        return;
    };
    if input.is_empty() {
        problems.push("`input` is empty".to_string());
    }
    let mut calls: BTreeMap<String, bool> = BTreeMap::new();
    for (i, item) in input.iter().enumerate() {
        let kind = item
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message");
        match kind {
            "message" => {
                let role = item.get("role").and_then(Value::as_str).unwrap_or("");
                if !["user", "assistant", "system", "developer"].contains(&role) {
                    problems.push(format!("input[{i}].role {role:?} not allowed"));
                }
            }
            "function_call" => {
                let id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                if !shared.issued.contains(id) {
                    problems.push(format!("input[{i}]: function_call {id:?} was never sent"));
                }
                if item.get("arguments").and_then(Value::as_str).is_none() {
                    problems.push(format!(
                        "input[{i}]: function_call arguments is not a string"
                    ));
                }
                calls.insert(id.to_string(), false);
            }
            "function_call_output" => {
                let id = item.get("call_id").and_then(Value::as_str).unwrap_or("");
                match calls.get_mut(id) {
                    Some(answered) => *answered = true,
                    None => problems.push(format!(
                        "input[{i}]: function_call_output {id:?} answers no earlier function_call"
                    )),
                }
                if item.get("output").is_none() {
                    problems.push(format!("input[{i}]: function_call_output without output"));
                }
            }
            _ => {}
        }
    }
    for (id, answered) in calls {
        if !answered {
            problems.push(format!(
                "No tool output found for function call {id} (every call needs its output)"
            ));
        }
    }
}

/// The installed agent CLI `name` (`claude`, `codex`, `gemini`), from
/// `$DANDORI_TEST_TOOLS/agent-clis` where `scripts/test.sh` installs them; None,
/// after a visible message, when it is not installed (its tests skip).
#[allow(clippy::print_stderr)] // the skip must be visible in the test output
pub fn installed_cli(name: &str) -> Option<std::path::PathBuf> {
    let tools = std::env::var_os("DANDORI_TEST_TOOLS")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools")
        });
    let bin = tools.join("agent-clis/node_modules/.bin").join(name);
    if bin.is_file() {
        Some(bin)
    } else {
        eprintln!(
            "SKIPPED: the agent CLI {name} is not installed at {} (scripts/test.sh installs it from npm)",
            bin.display()
        );
        None
    }
}
