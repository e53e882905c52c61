//! The two wire formats: request bodies, whole-JSON responses and SSE stream
//! accumulation for OpenAI Chat Completions and Anthropic Messages.

use std::collections::BTreeMap;

use dandori_config::{ProviderConfig, ProviderKind, StructuredOutputMode};
use serde_json::{Map, Value, json};

use crate::sse::SseEvent;
use crate::types::{ChatRequest, Role, ToolCall};

pub const ANTHROPIC_VERSION: &str = "2023-06-01";

/// What a response carried, before usage estimation.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parsed {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Option<(u64, u64)>,
    pub finish_reason: Option<String>,
    pub model: Option<String>,
}

/// A provider error reported inside a 200 response or stream.
#[derive(Debug, Clone, PartialEq)]
pub struct WireError {
    pub kind: String,
    pub message: String,
    pub transient: bool,
}

pub fn endpoint(cfg: &ProviderConfig) -> String {
    let base = cfg.base_url.trim_end_matches('/');
    match cfg.kind {
        ProviderKind::Openai => format!("{base}/chat/completions"),
        ProviderKind::Anthropic => format!("{base}/messages"),
        ProviderKind::AgentCli => crate::agent_cli::endpoint(cfg),
    }
}

/// Name of the forced tool carrying the structured answer on Anthropic.
pub fn forced_tool_name(cfg: &ProviderConfig, req: &ChatRequest) -> Option<String> {
    match (cfg.kind, cfg.structured_output, &req.response_schema) {
        (ProviderKind::Anthropic, StructuredOutputMode::Native, Some(schema)) => {
            Some(schema.name.clone())
        }
        _ => None,
    }
}

pub fn request_body(cfg: &ProviderConfig, req: &ChatRequest, max_tokens: u32) -> Value {
    match cfg.kind {
        ProviderKind::Openai => openai_body(cfg, req, max_tokens),
        ProviderKind::Anthropic => anthropic_body(cfg, req, max_tokens),
        // The agent CLI gets a prompt, not a body (`agent_cli::render_prompt`).
        ProviderKind::AgentCli => Value::Null,
    }
}

fn openai_body(cfg: &ProviderConfig, req: &ChatRequest, max_tokens: u32) -> Value {
    let messages: Vec<Value> = req
        .messages
        .iter()
        .map(|m| {
            let role = match m.role {
                Role::System => "system",
                Role::User => "user",
                Role::Assistant => "assistant",
                Role::Tool => "tool",
            };
            let mut obj = Map::new();
            obj.insert("role".into(), json!(role));
            obj.insert("content".into(), json!(m.content));
            if !m.tool_calls.is_empty() {
                obj.insert(
                    "tool_calls".into(),
                    Value::Array(
                        m.tool_calls
                            .iter()
                            .map(|c| {
                                json!({"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": c.arguments}})
                            })
                            .collect(),
                    ),
                );
            }
            if let Some(id) = &m.tool_call_id {
                obj.insert("tool_call_id".into(), json!(id));
            }
            Value::Object(obj)
        })
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(cfg.model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if !req.tools.is_empty() {
        body.insert(
            "tools".into(),
            Value::Array(
                req.tools
                    .iter()
                    .map(|t| {
                        json!({"type": "function", "function": {
                            "name": t.name, "description": t.description, "parameters": t.input_schema}})
                    })
                    .collect(),
            ),
        );
    }
    if let (Some(schema), StructuredOutputMode::Native) =
        (&req.response_schema, cfg.structured_output)
    {
        body.insert(
            "response_format".into(),
            json!({"type": "json_schema", "json_schema": {
                "name": schema.name, "schema": schema.schema, "strict": false}}),
        );
    }
    if cfg.stream {
        body.insert("stream".into(), json!(true));
        body.insert("stream_options".into(), json!({"include_usage": true}));
    }
    Value::Object(body)
}

fn anthropic_body(cfg: &ProviderConfig, req: &ChatRequest, max_tokens: u32) -> Value {
    let mut system = Vec::new();
    // Anthropic wants alternating user/assistant turns: merge neighbours of one role.
    let mut turns: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for m in &req.messages {
        let (role, blocks) = match m.role {
            Role::System => {
                system.push(m.content.clone());
                continue;
            }
            Role::User => ("user", vec![json!({"type": "text", "text": m.content})]),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input: Value =
                        serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
            Role::Tool => (
                "user",
                vec![json!({"type": "tool_result",
                    "tool_use_id": m.tool_call_id.clone().unwrap_or_default(),
                    "content": m.content})],
            ),
        };
        match turns.last_mut() {
            Some((last, existing)) if *last == role => existing.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    let messages: Vec<Value> = turns
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let mut body = Map::new();
    body.insert("model".into(), json!(cfg.model));
    body.insert("max_tokens".into(), json!(max_tokens));
    if !system.is_empty() {
        body.insert("system".into(), json!(system.join("\n\n")));
    }
    body.insert("messages".into(), Value::Array(messages));
    if let Some(t) = req.temperature {
        body.insert("temperature".into(), json!(t));
    }
    let mut tools: Vec<Value> = req
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    if let Some(name) = forced_tool_name(cfg, req)
        && let Some(schema) = &req.response_schema
    {
        tools.push(json!({"name": name,
            "description": "Return the answer as this tool's input.",
            "input_schema": schema.schema}));
        body.insert("tool_choice".into(), json!({"type": "tool", "name": name}));
    }
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
    }
    if cfg.stream {
        body.insert("stream".into(), json!(true));
    }
    Value::Object(body)
}

fn error_of(value: &Value) -> Option<WireError> {
    let err = value.get("error")?;
    if err.is_null() {
        return None;
    }
    let kind = err
        .get("type")
        .or_else(|| err.get("code"))
        .and_then(Value::as_str)
        .unwrap_or("error")
        .to_string();
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| err.to_string());
    let transient = matches!(
        kind.as_str(),
        "overloaded_error"
            | "rate_limit_error"
            | "api_error"
            | "server_error"
            | "rate_limit_exceeded"
    );
    Some(WireError {
        kind,
        message,
        transient,
    })
}

/// The error object of a non-2xx body, if it has one: (type/code, message).
pub fn error_body(text: &str) -> Option<(String, String)> {
    let value: Value = serde_json::from_str(text).ok()?;
    let e = error_of(&value)?;
    let code = value
        .get("error")
        .and_then(|e| e.get("code"))
        .and_then(Value::as_str)
        .map(str::to_string);
    Some((code.unwrap_or(e.kind), e.message))
}

pub fn parse_json(kind: ProviderKind, value: &Value) -> Result<Parsed, WireError> {
    if let Some(err) = error_of(value) {
        return Err(err);
    }
    let malformed = |what: &str| WireError {
        kind: "malformed_response".into(),
        message: format!("missing {what}"),
        transient: false,
    };
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    match kind {
        ProviderKind::AgentCli => Err(malformed("an HTTP provider (agent CLIs answer on stdout)")),
        ProviderKind::Openai => {
            let choice = value
                .get("choices")
                .and_then(|c| c.get(0))
                .ok_or_else(|| malformed("choices[0]"))?;
            let message = choice
                .get("message")
                .ok_or_else(|| malformed("choices[0].message"))?;
            let text = message
                .get("content")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let tool_calls = message
                .get("tool_calls")
                .and_then(Value::as_array)
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| ToolCall {
                            id: str_at(c, &["id"]),
                            name: str_at(c, &["function", "name"]),
                            arguments: str_at(c, &["function", "arguments"]),
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok(Parsed {
                text,
                tool_calls,
                usage: openai_usage(value),
                finish_reason: choice
                    .get("finish_reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                model,
            })
        }
        ProviderKind::Anthropic => {
            let content = value
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| malformed("content"))?;
            let mut parsed = Parsed {
                model,
                finish_reason: value
                    .get("stop_reason")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                usage: value.get("usage").map(|u| {
                    (
                        u.get("input_tokens").and_then(Value::as_u64).unwrap_or(0),
                        u.get("output_tokens").and_then(Value::as_u64).unwrap_or(0),
                    )
                }),
                ..Parsed::default()
            };
            for block in content {
                match block.get("type").and_then(Value::as_str) {
                    Some("text") => parsed.text.push_str(&str_at(block, &["text"])),
                    Some("tool_use") => parsed.tool_calls.push(ToolCall {
                        id: str_at(block, &["id"]),
                        name: str_at(block, &["name"]),
                        arguments: block.get("input").map(Value::to_string).unwrap_or_default(),
                    }),
                    _ => {}
                }
            }
            Ok(parsed)
        }
    }
}

fn str_at(value: &Value, path: &[&str]) -> String {
    let mut v = value;
    for key in path {
        match v.get(key) {
            Some(next) => v = next,
            None => return String::new(),
        }
    }
    v.as_str().unwrap_or("").to_string()
}

fn openai_usage(value: &Value) -> Option<(u64, u64)> {
    let u = value.get("usage")?;
    if u.is_null() {
        return None;
    }
    Some((
        u.get("prompt_tokens").and_then(Value::as_u64).unwrap_or(0),
        u.get("completion_tokens")
            .and_then(Value::as_u64)
            .unwrap_or(0),
    ))
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a stream into a `Parsed`; knows when the final event arrived.
#[derive(Debug)]
pub struct StreamAccumulator {
    kind: ProviderKind,
    parsed: Parsed,
    calls: BTreeMap<u64, PartialCall>,
    done: bool,
}

impl StreamAccumulator {
    pub fn new(kind: ProviderKind) -> StreamAccumulator {
        StreamAccumulator {
            kind,
            parsed: Parsed::default(),
            calls: BTreeMap::new(),
            done: false,
        }
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// Bytes of answer (text and tool-call arguments) received so far.
    pub fn streamed_bytes(&self) -> usize {
        self.parsed.text.len()
            + self
                .calls
                .values()
                .map(|c| c.arguments.len())
                .sum::<usize>()
    }

    /// OpenAI-compatible servers that close after the finish reason without `[DONE]`
    /// (some local servers do) delivered a whole answer.
    pub fn finished_without_terminator(&self) -> bool {
        self.kind == ProviderKind::Openai && self.parsed.finish_reason.is_some()
    }

    pub fn on_event(&mut self, event: &SseEvent) -> Result<(), WireError> {
        if self.done {
            return Ok(());
        }
        match self.kind {
            ProviderKind::Openai => self.on_openai(event),
            ProviderKind::Anthropic => self.on_anthropic(event),
            ProviderKind::AgentCli => Ok(()),
        }
    }

    fn decode(data: &str) -> Result<Value, WireError> {
        serde_json::from_str(data).map_err(|e| WireError {
            kind: "malformed_event".into(),
            message: format!("{e} in stream event `{}`", truncate(data, 200)),
            transient: true,
        })
    }

    fn on_openai(&mut self, event: &SseEvent) -> Result<(), WireError> {
        let data = event.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if data.is_empty() {
            return Ok(());
        }
        let value = Self::decode(data)?;
        if let Some(err) = error_of(&value) {
            return Err(err);
        }
        if self.parsed.model.is_none() {
            self.parsed.model = value
                .get("model")
                .and_then(Value::as_str)
                .map(str::to_string);
        }
        if let Some(usage) = openai_usage(&value) {
            self.parsed.usage = Some(usage);
        }
        let Some(choice) = value.get("choices").and_then(|c| c.get(0)) else {
            return Ok(());
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.parsed.finish_reason = Some(reason.to_string());
        }
        let Some(delta) = choice.get("delta") else {
            return Ok(());
        };
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.parsed.text.push_str(text);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for (position, call) in calls.iter().enumerate() {
                let index = call
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(position as u64);
                let entry = self.calls.entry(index).or_default();
                if let Some(id) = call.get("id").and_then(Value::as_str) {
                    entry.id = id.to_string();
                }
                if let Some(f) = call.get("function") {
                    if let Some(name) = f.get("name").and_then(Value::as_str) {
                        entry.name.push_str(name);
                    }
                    if let Some(args) = f.get("arguments").and_then(Value::as_str) {
                        entry.arguments.push_str(args);
                    }
                }
            }
        }
        Ok(())
    }

    fn on_anthropic(&mut self, event: &SseEvent) -> Result<(), WireError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let value = Self::decode(&event.data)?;
        let kind = value
            .get("type")
            .and_then(Value::as_str)
            .or(event.event.as_deref())
            .unwrap_or("");
        match kind {
            "error" => {
                return Err(error_of(&value).unwrap_or(WireError {
                    kind: "error".into(),
                    message: value.to_string(),
                    transient: true,
                }));
            }
            "message_start" => {
                let message = value.get("message");
                self.parsed.model = message
                    .and_then(|m| m.get("model"))
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let input = message
                    .and_then(|m| m.get("usage"))
                    .and_then(|u| u.get("input_tokens"))
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
                self.parsed.usage = Some((input, 0));
            }
            "content_block_start" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(block) = value.get("content_block") {
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_use") => {
                            let entry = self.calls.entry(index).or_default();
                            entry.id = str_at(block, &["id"]);
                            entry.name = str_at(block, &["name"]);
                        }
                        Some("text") => self.parsed.text.push_str(&str_at(block, &["text"])),
                        _ => {}
                    }
                }
            }
            "content_block_delta" => {
                let index = value.get("index").and_then(Value::as_u64).unwrap_or(0);
                if let Some(delta) = value.get("delta") {
                    match delta.get("type").and_then(Value::as_str) {
                        Some("text_delta") => self.parsed.text.push_str(&str_at(delta, &["text"])),
                        Some("input_json_delta") => self
                            .calls
                            .entry(index)
                            .or_default()
                            .arguments
                            .push_str(&str_at(delta, &["partial_json"])),
                        _ => {}
                    }
                }
            }
            "message_delta" => {
                if let Some(reason) = value
                    .get("delta")
                    .and_then(|d| d.get("stop_reason"))
                    .and_then(Value::as_str)
                {
                    self.parsed.finish_reason = Some(reason.to_string());
                }
                if let Some(out) = value
                    .get("usage")
                    .and_then(|u| u.get("output_tokens"))
                    .and_then(Value::as_u64)
                {
                    let input = self.parsed.usage.map(|u| u.0).unwrap_or(0);
                    self.parsed.usage = Some((input, out));
                }
            }
            "message_stop" => self.done = true,
            _ => {}
        }
        Ok(())
    }

    pub fn finish(mut self) -> Parsed {
        self.parsed.tool_calls = std::mem::take(&mut self.calls)
            .into_values()
            .map(|c| ToolCall {
                id: c.id,
                name: c.name,
                // A tool called without input streams no deltas.
                arguments: if c.arguments.is_empty() {
                    "{}".to_string()
                } else {
                    c.arguments
                },
            })
            .collect();
        self.parsed
    }
}

pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max).collect();
    out.push('…');
    out
}
