//! OpenTelemetry spans (seed 000 §16.4.2) built from the masked trace events of one
//! command, exported over OTLP/HTTP (JSON or protobuf encoding, both part of the
//! OTLP specification) with the HTTP client already in the tree — no SDK.
//!
//! Span tree (one trace per run: the trace id is derived from request id and run
//! id, so `dandori plan` and `dandori run` of one run land in the same trace):
//!
//! ```text
//! dandori.plan
//!   planning.understand_goal | planning.decompose_task | planning.generate_action_plan
//!   chat <model>                       (GenAI semantic conventions)
//! dandori.run
//!   environment.setup
//!   execution.execute_action           (one per step attempt)
//!     chat <model>
//!     execute_tool <tool>
//!     reflection.evaluate_action
//!       chat <model>
//!     unit_test
//! ```

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use dandori_config::TelemetryConfig;
use dandori_trace::TraceEvent;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{ObsError, reason};

/// Wire encoding of the export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    HttpJson,
    HttpProtobuf,
}

/// Where and how spans go. `Debug` never shows header values.
#[derive(Clone, PartialEq)]
pub struct OtlpConfig {
    /// Full URL of the traces endpoint (`…/v1/traces`).
    pub url: String,
    pub protocol: Protocol,
    pub headers: Vec<(String, String)>,
    pub service_name: String,
    pub timeout: Duration,
}

impl std::fmt::Debug for OtlpConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpConfig")
            .field("url", &self.url)
            .field("protocol", &self.protocol)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(k, _)| format!("{k}=***"))
                    .collect::<Vec<_>>(),
            )
            .field("service_name", &self.service_name)
            .finish()
    }
}

fn var<'a>(env: &'a BTreeMap<String, String>, k: &str) -> Option<&'a str> {
    env.get(k).map(|v| v.trim()).filter(|v| !v.is_empty())
}

fn percent_decode(s: &str) -> String {
    let hexval = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hexval),
                b.get(i + 2).copied().and_then(hexval),
            )
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `k1=v1,k2=v2` (values URL-encoded), as `OTEL_EXPORTER_OTLP_HEADERS`.
fn parse_headers(text: &str, var_name: &str) -> Result<Vec<(String, String)>, ObsError> {
    let mut out = Vec::new();
    for (i, part) in text.split(',').enumerate() {
        if part.trim().is_empty() {
            continue;
        }
        let Some((k, v)) = part.split_once('=') else {
            // The value is never echoed: it may be a credential.
            return Err(ObsError::Invalid {
                code: reason::OTLP_CONFIG_INVALID,
                message: format!("{var_name}: entry {} is not KEY=VALUE", i + 1),
            });
        };
        let k = percent_decode(k.trim());
        if k.is_empty() || !k.bytes().all(|c| c.is_ascii_graphic()) {
            return Err(ObsError::Invalid {
                code: reason::OTLP_CONFIG_INVALID,
                message: format!("{var_name}: entry {} has an invalid header name", i + 1),
            });
        }
        out.push((k, percent_decode(v.trim())));
    }
    Ok(out)
}

impl OtlpConfig {
    /// The export settings from the `OTEL_*` variables, then `telemetry:` in the
    /// config. `Ok(None)` when no endpoint is set (export off), or when
    /// `OTEL_SDK_DISABLED=true` / `OTEL_TRACES_EXPORTER=none`.
    pub fn resolve(
        env: &BTreeMap<String, String>,
        config: &TelemetryConfig,
    ) -> Result<Option<Self>, ObsError> {
        if var(env, "OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
            || var(env, "OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"))
        {
            return Ok(None);
        }
        let base = |b: &str| format!("{}/v1/traces", b.trim_end_matches('/'));
        let url = if let Some(u) = var(env, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            u.to_string()
        } else if let Some(b) = var(env, "OTEL_EXPORTER_OTLP_ENDPOINT") {
            base(b)
        } else if let Some(b) = config
            .otlp_endpoint
            .as_deref()
            .filter(|b| !b.trim().is_empty())
        {
            base(b.trim())
        } else {
            return Ok(None);
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(ObsError::Invalid {
                code: reason::OTLP_CONFIG_INVALID,
                message: format!("OTLP endpoint {url:?}: only http:// and https:// URLs"),
            });
        }
        let protocol = var(env, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
            .or_else(|| var(env, "OTEL_EXPORTER_OTLP_PROTOCOL"))
            .or(config.otlp_protocol.as_deref())
            .unwrap_or("http/json");
        let protocol = match protocol {
            "http/json" => Protocol::HttpJson,
            "http/protobuf" => Protocol::HttpProtobuf,
            other => {
                return Err(ObsError::Invalid {
                    code: reason::OTLP_CONFIG_INVALID,
                    message: format!(
                        "OTLP protocol {other:?} is not supported: use http/json or http/protobuf"
                    ),
                });
            }
        };
        let mut headers = Vec::new();
        for name in [
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        ] {
            if let Some(h) = var(env, name) {
                for (k, v) in parse_headers(h, name)? {
                    headers.retain(|(x, _): &(String, String)| !x.eq_ignore_ascii_case(&k));
                    headers.push((k, v));
                }
            }
        }
        let from_resource = var(env, "OTEL_RESOURCE_ATTRIBUTES").and_then(|attrs| {
            attrs.split(',').find_map(|kv| {
                kv.split_once('=')
                    .filter(|(k, _)| k.trim() == "service.name")
                    .map(|(_, v)| percent_decode(v.trim()))
            })
        });
        let service_name = var(env, "OTEL_SERVICE_NAME")
            .map(str::to_string)
            .or(from_resource)
            .or_else(|| config.service_name.clone())
            .unwrap_or_else(|| "dandori".to_string());
        let timeout = var(env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
            .or_else(|| var(env, "OTEL_EXPORTER_OTLP_TIMEOUT"))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(Duration::from_secs(10), Duration::from_millis);
        Ok(Some(OtlpConfig {
            url,
            protocol,
            headers,
            service_name,
            timeout,
        }))
    }
}

/// An attribute value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Bool(bool),
    Double(f64),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SpanEvent {
    pub name: String,
    pub time_ns: u64,
    pub attributes: Vec<(String, Attr)>,
}

/// One span, ready to encode.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: [u8; 16],
    pub span_id: [u8; 8],
    pub parent: Option<[u8; 8]>,
    pub name: String,
    /// 1 internal, 3 client.
    pub kind: i32,
    pub start_ns: u64,
    pub end_ns: u64,
    pub attributes: Vec<(String, Attr)>,
    pub events: Vec<SpanEvent>,
    /// Some(message) = status ERROR.
    pub error: Option<String>,
}

fn ns(ts: &str) -> Option<u64> {
    DateTime::parse_from_rfc3339(ts)
        .ok()
        .and_then(|t| t.with_timezone(&Utc).timestamp_nanos_opt())
        .and_then(|n| u64::try_from(n).ok())
}

fn digest(parts: &[&str]) -> [u8; 32] {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    h.finalize().into()
}

/// The trace id of a run: the same for its plan and its run commands.
pub fn trace_id(request_id: &str, run_id: &str) -> [u8; 16] {
    let d = digest(&["dandori-trace", request_id, run_id]);
    let mut out = [0u8; 16];
    out.copy_from_slice(&d[..16]);
    out
}

fn span_id(trace: &[u8; 16], key: &str) -> [u8; 8] {
    let d = digest(&["dandori-span", &hex(trace), key]);
    let mut out = [0u8; 8];
    out.copy_from_slice(&d[..8]);
    out
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn str_attr(k: &str, v: impl Into<String>) -> (String, Attr) {
    (k.to_string(), Attr::Str(v.into()))
}

fn int_attr(k: &str, v: u64) -> (String, Attr) {
    (
        k.to_string(),
        Attr::Int(i64::try_from(v).unwrap_or(i64::MAX)),
    )
}

fn ds<'a>(d: &'a Value, k: &str) -> Option<&'a str> {
    d.get(k).and_then(Value::as_str)
}

fn du(d: &Value, k: &str) -> Option<u64> {
    d.get(k).and_then(Value::as_u64)
}

struct Builder {
    trace: [u8; 16],
    spans: Vec<Span>,
}

impl Builder {
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        key: &str,
        parent: Option<[u8; 8]>,
        name: String,
        kind: i32,
        start_ns: u64,
        end_ns: u64,
        attributes: Vec<(String, Attr)>,
        error: Option<String>,
    ) -> [u8; 8] {
        let id = span_id(&self.trace, key);
        self.spans.push(Span {
            trace_id: self.trace,
            span_id: id,
            parent,
            name,
            kind,
            start_ns,
            end_ns: end_ns.max(start_ns),
            attributes,
            events: Vec::new(),
            error,
        });
        id
    }

    fn span_mut(&mut self, id: [u8; 8]) -> Option<&mut Span> {
        self.spans.iter_mut().find(|s| s.span_id == id)
    }
}

/// GenAI attributes of one `LLM_CALL` (semantic conventions for generative AI).
fn model_call_attrs(d: &Value) -> Vec<(String, Attr)> {
    let system = ds(d, "provider_kind").unwrap_or("openai");
    let mut a = vec![
        str_attr("gen_ai.operation.name", "chat"),
        str_attr("gen_ai.system", system),
        str_attr("gen_ai.provider.name", system),
        str_attr(
            "gen_ai.request.model",
            ds(d, "request_model").or(ds(d, "model")).unwrap_or(""),
        ),
    ];
    if let Some(m) = ds(d, "model") {
        a.push(str_attr("gen_ai.response.model", m));
    }
    if let Some(u) = d.get("usage") {
        if let Some(i) = du(u, "prompt_tokens") {
            a.push(int_attr("gen_ai.usage.input_tokens", i));
        }
        if let Some(o) = du(u, "completion_tokens") {
            a.push(int_attr("gen_ai.usage.output_tokens", o));
        }
    }
    if let Some(p) = ds(d, "provider") {
        a.push(str_attr("dandori.llm.provider", p));
    }
    if let Some(p) = ds(d, "purpose") {
        a.push(str_attr("dandori.llm.purpose", p));
    }
    if let Some(n) = du(d, "attempts") {
        a.push(int_attr("dandori.llm.attempts", n));
    }
    // An agent CLI's invocation (a preset): the agent, its session, its own
    // count of turns and its cost.
    if let Some(agent) = ds(d, "agent") {
        a[0] = str_attr("gen_ai.operation.name", "invoke_agent");
        a.push(str_attr("gen_ai.agent.name", agent));
        if let Some(s) = ds(d, "session_id") {
            a.push(str_attr("gen_ai.conversation.id", s));
        }
        if let Some(v) = ds(d, "agent_version") {
            a.push(str_attr("dandori.agent.version", v));
        }
        if let Some(n) = du(d, "num_turns") {
            a.push(int_attr("dandori.agent.turns", n));
        }
        if let Some(n) = du(d, "tool_calls") {
            a.push(int_attr("dandori.agent.tool_calls", n));
        }
        if let Some(c) = d.get("cost_usd").and_then(Value::as_f64) {
            a.push(("dandori.agent.cost_usd".to_string(), Attr::Double(c)));
        }
        if let Some(r) = d.get("resumed").and_then(Value::as_bool) {
            a.push(("dandori.agent.resumed".to_string(), Attr::Bool(r)));
        }
    }
    a
}

fn call_window(d: &Value, fallback_end: u64) -> (u64, u64) {
    let dur = du(d, "duration_ms").unwrap_or(0) * 1_000_000;
    match ds(d, "started_at").and_then(ns) {
        Some(s) => (s, s + dur),
        None => (fallback_end.saturating_sub(dur), fallback_end),
    }
}

/// Spans of the events one command wrote to one run's trace.
pub fn spans(events: &[TraceEvent]) -> Vec<Span> {
    let Some(first) = events.first() else {
        return Vec::new();
    };
    let run_id = first.session_id.clone();
    let request_id = first.task_id.clone();
    let mut b = Builder {
        trace: trace_id(&request_id, &run_id),
        spans: Vec::new(),
    };
    let start = ns(&first.timestamp).unwrap_or(0);
    let end = events
        .iter()
        .filter_map(|e| ns(&e.timestamp))
        .max()
        .unwrap_or(start);
    let is_plan = events.iter().any(|e| e.event == "PLANNING_START");
    let base_attrs = vec![
        str_attr("dandori.request_id", request_id.clone()),
        str_attr("dandori.run_id", run_id.clone()),
    ];
    let root_key = format!(
        "{}:{}",
        if is_plan { "plan" } else { "run" },
        first.timestamp
    );
    let mut root_attrs = base_attrs.clone();
    let mut root_error = None;
    for e in events {
        match e.event.as_str() {
            "PLANNING_START" => {
                if let Some(p) = ds(&e.data, "planner") {
                    root_attrs.push(str_attr("dandori.planner", p));
                }
            }
            "PLANNING_END" => {
                if let Some(s) = ds(&e.data, "status") {
                    root_attrs.push(str_attr("dandori.status", s));
                }
            }
            "PLANNING_SKIPPED" | "LLM_PLANNING_FAILED" => {
                root_attrs.push(str_attr("dandori.planning.fallback", e.event.clone()));
            }
            "EXECUTION_END" => {
                let status = ds(&e.data, "status").unwrap_or("");
                root_attrs.push(str_attr("dandori.status", status));
                if status != "completed" {
                    root_error = Some(format!("run {status}"));
                }
            }
            _ => {}
        }
    }
    let root = b.push(
        &root_key,
        None,
        if is_plan {
            "dandori.plan"
        } else {
            "dandori.run"
        }
        .to_string(),
        1,
        start,
        end,
        root_attrs,
        root_error,
    );

    if is_plan {
        // The three phases of seed 000 §2, bounded by the planning events.
        let at = |name: &str| {
            events
                .iter()
                .find(|e| e.event == name)
                .and_then(|e| ns(&e.timestamp))
        };
        let marks = [
            (
                "planning.understand_goal",
                at("PLANNING_START"),
                at("SIZE_ESTIMATION"),
            ),
            (
                "planning.decompose_task",
                at("SIZE_ESTIMATION"),
                at("DEPENDENCY_ANALYSIS"),
            ),
            (
                "planning.generate_action_plan",
                at("DEPENDENCY_ANALYSIS"),
                at("PLANNING_END"),
            ),
        ];
        for (name, s, e) in marks {
            if let (Some(s), Some(e)) = (s, e) {
                b.push(
                    &format!("{root_key}:{name}"),
                    Some(root),
                    name.to_string(),
                    1,
                    s,
                    e,
                    base_attrs.clone(),
                    None,
                );
            }
        }
    }

    // Steps: STEP_START … STEP_END, keyed by step id (the open attempt).
    let mut open_steps: BTreeMap<String, [u8; 8]> = BTreeMap::new();
    let mut prev_ns = start;
    for (i, e) in events.iter().enumerate() {
        let t = ns(&e.timestamp).unwrap_or(prev_ns);
        let d = &e.data;
        let step = ds(d, "step_id").map(str::to_string);
        let parent_of_step = |open: &BTreeMap<String, [u8; 8]>| {
            step.as_ref()
                .and_then(|s| open.get(s).copied())
                .unwrap_or(root)
        };
        match e.event.as_str() {
            "ENVIRONMENT_SETUP" => {
                let status = ds(d, "status").unwrap_or("").to_string();
                let failed = !matches!(status.as_str(), "success" | "skipped" | "reused" | "");
                b.push(
                    &format!("{root_key}:env:{i}"),
                    Some(root),
                    "environment.setup".to_string(),
                    1,
                    prev_ns,
                    t,
                    vec![str_attr("dandori.environment.status", status.clone())],
                    failed.then(|| format!("environment setup {status}")),
                );
            }
            "STEP_START" => {
                if let Some(s) = &step {
                    let attempt = du(d, "attempt").unwrap_or(1);
                    let id = b.push(
                        &format!("{root_key}:step:{s}:{attempt}:{i}"),
                        Some(root),
                        "execution.execute_action".to_string(),
                        1,
                        t,
                        t,
                        vec![
                            str_attr("dandori.step.id", s.clone()),
                            int_attr("dandori.step.attempt", attempt),
                        ],
                        None,
                    );
                    open_steps.insert(s.clone(), id);
                }
            }
            "STEP_END" | "STEP_SKIPPED" => {
                if let Some(s) = &step
                    && let Some(id) = open_steps.remove(s)
                    && let Some(span) = b.span_mut(id)
                {
                    span.end_ns = t.max(span.start_ns);
                    let status = ds(d, "status").unwrap_or("skipped").to_string();
                    span.attributes
                        .push(str_attr("dandori.step.status", status.clone()));
                    if let Some(c) = ds(d, "commit") {
                        span.attributes.push(str_attr("dandori.step.commit", c));
                    }
                    if let Some(n) = du(d, "diff_lines") {
                        span.attributes.push(int_attr("dandori.step.diff_lines", n));
                    }
                    if status != "done" {
                        span.error = Some(
                            ds(d, "reason_code")
                                .map(str::to_string)
                                .unwrap_or_else(|| format!("step {status}")),
                        );
                    }
                }
            }
            "LLM_CALL" => {
                let (s, en) = call_window(d, t);
                let parent = parent_of_step(&open_steps);
                let model = ds(d, "request_model").or(ds(d, "model")).unwrap_or("model");
                let failed = d.get("ok") == Some(&Value::Bool(false));
                let error =
                    failed.then(|| ds(d, "error").unwrap_or("model call failed").to_string());
                let parent = if ds(d, "purpose") == Some("reflection") {
                    b.push(
                        &format!("{root_key}:reflection:{i}"),
                        Some(parent),
                        "reflection.evaluate_action".to_string(),
                        1,
                        s,
                        en,
                        step.iter()
                            .map(|x| str_attr("dandori.step.id", x.clone()))
                            .collect(),
                        None,
                    )
                } else {
                    parent
                };
                b.push(
                    &format!("{root_key}:llm:{i}"),
                    Some(parent),
                    match ds(d, "agent") {
                        Some(agent) => format!("invoke_agent {agent}"),
                        None => format!("chat {model}"),
                    },
                    3,
                    s,
                    en,
                    model_call_attrs(d),
                    error,
                );
            }
            "TOOL_CALL" => {
                let (s, en) = call_window(d, t);
                let tool = ds(d, "tool").unwrap_or("tool");
                let failed = d.get("ok") == Some(&Value::Bool(false));
                let mut attrs = vec![
                    str_attr("gen_ai.operation.name", "execute_tool"),
                    str_attr("gen_ai.tool.name", tool),
                ];
                if let Some(r) = ds(d, "reason_code") {
                    attrs.push(str_attr("dandori.tool.reason_code", r));
                }
                b.push(
                    &format!("{root_key}:tool:{i}"),
                    Some(parent_of_step(&open_steps)),
                    format!("execute_tool {tool}"),
                    1,
                    s,
                    en,
                    attrs,
                    failed.then(|| ds(d, "reason_code").unwrap_or("tool failed").to_string()),
                );
            }
            "UNIT_TEST" => {
                let dur = du(d, "duration_ms").unwrap_or(0) * 1_000_000;
                let code = d.get("exit_code").and_then(Value::as_i64);
                b.push(
                    &format!("{root_key}:unit:{i}"),
                    Some(parent_of_step(&open_steps)),
                    "unit_test".to_string(),
                    1,
                    t.saturating_sub(dur),
                    t,
                    vec![(
                        "process.exit.code".to_string(),
                        Attr::Int(code.unwrap_or(-1)),
                    )],
                    (code != Some(0)).then(|| "unit test failed".to_string()),
                );
            }
            "REFLECTION" => {
                let r = d.get("reflection").unwrap_or(d);
                let revise = r.get("plan_revision_needed") == Some(&Value::Bool(true));
                let owner = ds(d, "step_id")
                    .or_else(|| ds(r, "action_id"))
                    .and_then(|s| open_steps.get(s).copied())
                    .unwrap_or(root);
                let mut attrs = vec![(
                    "dandori.reflection.plan_revision_needed".to_string(),
                    Attr::Bool(revise),
                )];
                if let Some(st) = ds(r, "status") {
                    attrs.push(str_attr("dandori.reflection.status", st));
                }
                if let Some(span) = b.span_mut(owner) {
                    span.events.push(SpanEvent {
                        name: "reflection".to_string(),
                        time_ns: t,
                        attributes: attrs,
                    });
                }
                if revise {
                    b.push(
                        &format!("{root_key}:revise:{i}"),
                        Some(owner),
                        "reflection.revise_plan".to_string(),
                        1,
                        t,
                        t,
                        Vec::new(),
                        None,
                    );
                }
            }
            _ => {}
        }
        prev_ns = t;
    }
    // Steps still open (a killed run) end with the command.
    for id in open_steps.into_values() {
        if let Some(span) = b.span_mut(id) {
            span.end_ns = end.max(span.start_ns);
            span.error = Some("step did not finish in this command".to_string());
        }
    }
    b.spans
}

fn attr_json((k, v): &(String, Attr)) -> Value {
    let value = match v {
        Attr::Str(s) => json!({"stringValue": s}),
        Attr::Int(i) => json!({"intValue": i.to_string()}),
        Attr::Bool(b) => json!({"boolValue": b}),
        Attr::Double(d) => json!({"doubleValue": d}),
    };
    json!({"key": k, "value": value})
}

fn resource_attrs(service_name: &str) -> Vec<(String, Attr)> {
    vec![
        str_attr("service.name", service_name),
        str_attr("service.version", env!("CARGO_PKG_VERSION")),
        str_attr("telemetry.sdk.name", "dandori"),
        str_attr("telemetry.sdk.language", "rust"),
    ]
}

/// The OTLP/JSON `ExportTraceServiceRequest`.
pub fn encode_json(spans: &[Span], service_name: &str) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut v = json!({
                "traceId": hex(&s.trace_id),
                "spanId": hex(&s.span_id),
                "name": s.name,
                "kind": s.kind,
                "startTimeUnixNano": s.start_ns.to_string(),
                "endTimeUnixNano": s.end_ns.to_string(),
                "attributes": s.attributes.iter().map(attr_json).collect::<Vec<_>>(),
                "events": s.events.iter().map(|e| json!({
                    "timeUnixNano": e.time_ns.to_string(),
                    "name": e.name,
                    "attributes": e.attributes.iter().map(attr_json).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "status": match &s.error {
                    Some(m) => json!({"code": 2, "message": m}),
                    None => json!({"code": 0}),
                },
            });
            if let Some(p) = s.parent {
                v["parentSpanId"] = json!(hex(&p));
            }
            v
        })
        .collect();
    json!({"resourceSpans": [{
        "resource": {"attributes": resource_attrs(service_name).iter().map(attr_json).collect::<Vec<_>>()},
        "scopeSpans": [{"scope": {"name": "dandori", "version": env!("CARGO_PKG_VERSION")},
            "spans": spans}],
    }]})
}

/// Protobuf wire encoding of the same request (opentelemetry-proto field numbers).
pub mod proto {
    use super::{Attr, Span, resource_attrs};

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
        varint(out, (u64::from(field) << 3) | u64::from(wire));
    }

    fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
        key(out, field, 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }

    fn fixed64(out: &mut Vec<u8>, field: u32, v: u64) {
        key(out, field, 1);
        out.extend_from_slice(&v.to_le_bytes());
    }

    fn uint(out: &mut Vec<u8>, field: u32, v: u64) {
        key(out, field, 0);
        varint(out, v);
    }

    fn key_value(k: &str, v: &Attr) -> Vec<u8> {
        let mut any = Vec::new();
        match v {
            Attr::Str(s) => bytes(&mut any, 1, s.as_bytes()),
            Attr::Bool(b) => uint(&mut any, 2, u64::from(*b)),
            Attr::Int(i) => uint(&mut any, 3, *i as u64),
            Attr::Double(d) => fixed64(&mut any, 4, d.to_bits()),
        }
        let mut kv = Vec::new();
        bytes(&mut kv, 1, k.as_bytes());
        bytes(&mut kv, 2, &any);
        kv
    }

    fn span(s: &Span) -> Vec<u8> {
        let mut o = Vec::new();
        bytes(&mut o, 1, &s.trace_id);
        bytes(&mut o, 2, &s.span_id);
        if let Some(p) = s.parent {
            bytes(&mut o, 4, &p);
        }
        bytes(&mut o, 5, s.name.as_bytes());
        uint(&mut o, 6, s.kind as u64);
        fixed64(&mut o, 7, s.start_ns);
        fixed64(&mut o, 8, s.end_ns);
        for (k, v) in &s.attributes {
            bytes(&mut o, 9, &key_value(k, v));
        }
        for e in &s.events {
            let mut ev = Vec::new();
            fixed64(&mut ev, 1, e.time_ns);
            bytes(&mut ev, 2, e.name.as_bytes());
            for (k, v) in &e.attributes {
                bytes(&mut ev, 3, &key_value(k, v));
            }
            bytes(&mut o, 11, &ev);
        }
        let mut status = Vec::new();
        if let Some(m) = &s.error {
            bytes(&mut status, 2, m.as_bytes());
            uint(&mut status, 3, 2);
        }
        bytes(&mut o, 15, &status);
        o
    }

    /// `ExportTraceServiceRequest` bytes.
    pub fn encode(spans: &[Span], service_name: &str) -> Vec<u8> {
        let mut resource = Vec::new();
        for (k, v) in resource_attrs(service_name) {
            bytes(&mut resource, 1, &key_value(&k, &v));
        }
        let mut scope = Vec::new();
        bytes(&mut scope, 1, b"dandori");
        bytes(&mut scope, 2, env!("CARGO_PKG_VERSION").as_bytes());
        let mut scope_spans = Vec::new();
        bytes(&mut scope_spans, 1, &scope);
        for s in spans {
            bytes(&mut scope_spans, 2, &span(s));
        }
        let mut rs = Vec::new();
        bytes(&mut rs, 1, &resource);
        bytes(&mut rs, 2, &scope_spans);
        let mut req = Vec::new();
        bytes(&mut req, 1, &rs);
        req
    }
}

/// What one export did.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportReport {
    pub spans: usize,
    pub url: String,
}

/// Sends `spans` to the receiver. Errors name the URL and the HTTP status, never
/// a header value.
pub fn export(config: &OtlpConfig, spans: &[Span]) -> Result<ExportReport, ObsError> {
    if spans.is_empty() {
        return Ok(ExportReport {
            spans: 0,
            url: config.url.clone(),
        });
    }
    let (body, content_type) = match config.protocol {
        Protocol::HttpJson => (
            encode_json(spans, &config.service_name)
                .to_string()
                .into_bytes(),
            "application/json",
        ),
        Protocol::HttpProtobuf => (
            proto::encode(spans, &config.service_name),
            "application/x-protobuf",
        ),
    };
    let failed = |message: String| ObsError::Invalid {
        code: reason::OTLP_EXPORT_FAILED,
        message,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| failed(format!("cannot start the exporter: {e}")))?;
    let client = reqwest::Client::builder()
        .timeout(config.timeout)
        .build()
        .map_err(|e| failed(format!("cannot build the HTTP client: {e}")))?;
    let mut req = client
        .post(&config.url)
        .header("content-type", content_type)
        .body(body);
    for (k, v) in &config.headers {
        req = req.header(k.as_str(), v.as_str());
    }
    let url = config.url.clone();
    let status = runtime
        .block_on(async move { req.send().await.map(|r| r.status()) })
        .map_err(|e| failed(format!("OTLP export to {url}: {}", e.without_url())))?;
    if !status.is_success() {
        return Err(failed(format!(
            "OTLP export to {}: HTTP {status}",
            config.url
        )));
    }
    Ok(ExportReport {
        spans: spans.len(),
        url: config.url.clone(),
    })
}
