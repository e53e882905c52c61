//! An OTLP/HTTP trace receiver over real HTTP: `POST /v1/traces` with
//! `application/json` (OTLP/JSON) or `application/x-protobuf` (decoded here with
//! its own protobuf reader, independent of any encoder under test). Each request's
//! headers and decoded spans are kept for assertions.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use serde_json::Value;

/// One decoded span.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceivedSpan {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    pub kind: i64,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Attribute values as JSON (strings, integers, booleans, doubles).
    pub attributes: BTreeMap<String, Value>,
    pub event_names: Vec<String>,
    /// 0 unset, 1 ok, 2 error.
    pub status_code: i64,
    pub status_message: String,
    pub resource: BTreeMap<String, Value>,
}

/// One export request.
#[derive(Debug, Clone)]
pub struct ReceivedExport {
    pub content_type: String,
    pub headers: BTreeMap<String, String>,
    /// The raw body, for "no secret in the payload" checks.
    pub body: Vec<u8>,
    pub spans: Vec<ReceivedSpan>,
}

#[derive(Default)]
struct Shared {
    exports: Vec<ReceivedExport>,
    errors: Vec<String>,
}

/// The receiver; stops on drop.
pub struct OtlpReceiver {
    addr: SocketAddr,
    state: Arc<Mutex<Shared>>,
    /// The server; stopped when this is dropped.
    _served: crate::serve::Served,
}

fn lock(s: &Arc<Mutex<Shared>>) -> std::sync::MutexGuard<'_, Shared> {
    match s.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

async fn receive(
    State(state): State<Arc<Mutex<Shared>>>,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, &'static str) {
    let content_type = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let decoded = if content_type.starts_with("application/json") {
        serde_json::from_slice::<Value>(&body)
            .map_err(|e| format!("json: {e}"))
            .and_then(|v| from_json(&v))
    } else if content_type.starts_with("application/x-protobuf") {
        from_protobuf(&body)
    } else {
        Err(format!("unsupported content-type {content_type:?}"))
    };
    let mut s = lock(&state);
    match decoded {
        Ok(spans) => {
            s.exports.push(ReceivedExport {
                content_type,
                headers: headers
                    .iter()
                    .map(|(k, v)| (k.as_str().to_string(), v.to_str().unwrap_or("").to_string()))
                    .collect(),
                body: body.to_vec(),
                spans,
            });
            (StatusCode::OK, "{}")
        }
        Err(e) => {
            s.errors.push(e);
            (StatusCode::BAD_REQUEST, "{}")
        }
    }
}

impl OtlpReceiver {
    /// Starts on `127.0.0.1:0`.
    pub fn start() -> OtlpReceiver {
        let state = Arc::new(Mutex::new(Shared::default()));
        let app = Router::new()
            .route("/v1/traces", post(receive))
            .with_state(state.clone());
        let served = crate::serve::spawn(app, "OTLP receiver").joined_on_drop();
        OtlpReceiver {
            addr: served.addr,
            state,
            _served: served,
        }
    }

    /// `http://127.0.0.1:PORT` (the `OTEL_EXPORTER_OTLP_ENDPOINT` value).
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn exports(&self) -> Vec<ReceivedExport> {
        lock(&self.state).exports.clone()
    }

    /// Every span received, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.exports().into_iter().flat_map(|e| e.spans).collect()
    }

    /// Requests that could not be decoded.
    pub fn errors(&self) -> Vec<String> {
        lock(&self.state).errors.clone()
    }
}

fn attrs_json(v: Option<&Value>) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    for kv in v.and_then(Value::as_array).into_iter().flatten() {
        let key = kv
            .get("key")
            .and_then(Value::as_str)
            .ok_or("attribute without key")?;
        let value = kv.get("value").ok_or("attribute without value")?;
        let v = if let Some(s) = value.get("stringValue") {
            s.clone()
        } else if let Some(i) = value.get("intValue") {
            // OTLP/JSON: int64 as a decimal string (numbers accepted too).
            let n = match i {
                Value::String(s) => s.parse::<i64>().map_err(|e| format!("intValue: {e}"))?,
                other => other.as_i64().ok_or("intValue not an integer")?,
            };
            Value::from(n)
        } else if let Some(b) = value.get("boolValue") {
            b.clone()
        } else if let Some(d) = value.get("doubleValue") {
            d.clone()
        } else {
            return Err(format!("attribute {key}: unsupported value {value}"));
        };
        out.insert(key.to_string(), v);
    }
    Ok(out)
}

fn nanos(v: Option<&Value>) -> Result<u64, String> {
    match v {
        Some(Value::String(s)) => s.parse().map_err(|e| format!("time: {e}")),
        Some(other) => other
            .as_u64()
            .ok_or_else(|| "time not a number".to_string()),
        None => Err("missing time".to_string()),
    }
}

fn hex_id(v: Option<&Value>, len: usize) -> Result<Option<String>, String> {
    match v.and_then(Value::as_str) {
        None | Some("") => Ok(None),
        Some(s) if s.len() == len * 2 && s.bytes().all(|c| c.is_ascii_hexdigit()) => {
            Ok(Some(s.to_ascii_lowercase()))
        }
        Some(s) => Err(format!("bad id {s:?} (want {len} bytes in hex)")),
    }
}

/// Decodes an OTLP/JSON `ExportTraceServiceRequest`.
pub fn from_json(v: &Value) -> Result<Vec<ReceivedSpan>, String> {
    let mut out = Vec::new();
    for rs in v
        .get("resourceSpans")
        .and_then(Value::as_array)
        .ok_or("no resourceSpans")?
    {
        let resource = attrs_json(rs.pointer("/resource/attributes"))?;
        for ss in rs
            .get("scopeSpans")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for sp in ss
                .get("spans")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                out.push(ReceivedSpan {
                    trace_id: hex_id(sp.get("traceId"), 16)?.ok_or("span without traceId")?,
                    span_id: hex_id(sp.get("spanId"), 8)?.ok_or("span without spanId")?,
                    parent_span_id: hex_id(sp.get("parentSpanId"), 8)?,
                    name: sp
                        .get("name")
                        .and_then(Value::as_str)
                        .ok_or("span without name")?
                        .to_string(),
                    kind: sp.get("kind").and_then(Value::as_i64).unwrap_or(0),
                    start_ns: nanos(sp.get("startTimeUnixNano"))?,
                    end_ns: nanos(sp.get("endTimeUnixNano"))?,
                    attributes: attrs_json(sp.get("attributes"))?,
                    event_names: sp
                        .get("events")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|e| e.get("name").and_then(Value::as_str).map(str::to_string))
                        .collect(),
                    status_code: sp
                        .pointer("/status/code")
                        .and_then(Value::as_i64)
                        .unwrap_or(0),
                    status_message: sp
                        .pointer("/status/message")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    resource: resource.clone(),
                });
            }
        }
    }
    Ok(out)
}

/// A protobuf field: number and value.
#[derive(Debug, Clone)]
enum Field {
    Varint(u64),
    Fixed64(u64),
    Bytes(Vec<u8>),
    /// Skipped (no OTLP trace field uses it).
    Fixed32,
}

fn read_varint(b: &[u8], i: &mut usize) -> Result<u64, String> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*i).ok_or("truncated varint")?;
        *i += 1;
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(v);
        }
    }
    Err("varint too long".to_string())
}

fn fields(b: &[u8]) -> Result<Vec<(u64, Field)>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let key = read_varint(b, &mut i)?;
        let (num, wire) = (key >> 3, key & 7);
        let f = match wire {
            0 => Field::Varint(read_varint(b, &mut i)?),
            1 => {
                let s = b.get(i..i + 8).ok_or("truncated fixed64")?;
                i += 8;
                let mut a = [0u8; 8];
                a.copy_from_slice(s);
                Field::Fixed64(u64::from_le_bytes(a))
            }
            2 => {
                let len = usize::try_from(read_varint(b, &mut i)?).map_err(|e| e.to_string())?;
                let s = b.get(i..i + len).ok_or("truncated bytes")?;
                i += len;
                Field::Bytes(s.to_vec())
            }
            5 => {
                b.get(i..i + 4).ok_or("truncated fixed32")?;
                i += 4;
                Field::Fixed32
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        out.push((num, f));
    }
    Ok(out)
}

fn by(fs: &[(u64, Field)], n: u64) -> impl Iterator<Item = &Field> {
    fs.iter().filter(move |(k, _)| *k == n).map(|(_, f)| f)
}

fn bytes_of(fs: &[(u64, Field)], n: u64) -> Option<&[u8]> {
    by(fs, n).find_map(|f| match f {
        Field::Bytes(b) => Some(b.as_slice()),
        _ => None,
    })
}

fn string_of(fs: &[(u64, Field)], n: u64) -> Result<String, String> {
    Ok(match bytes_of(fs, n) {
        Some(b) => String::from_utf8(b.to_vec()).map_err(|e| e.to_string())?,
        None => String::new(),
    })
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn attrs_pb(fs: &[(u64, Field)], n: u64) -> Result<BTreeMap<String, Value>, String> {
    let mut out = BTreeMap::new();
    for f in by(fs, n) {
        let Field::Bytes(kv) = f else { continue };
        let kv = fields(kv)?;
        let key = string_of(&kv, 1)?;
        let any = fields(bytes_of(&kv, 2).unwrap_or(&[]))?;
        let v = match any.first() {
            Some((1, Field::Bytes(s))) => {
                Value::from(String::from_utf8(s.clone()).map_err(|e| e.to_string())?)
            }
            Some((2, Field::Varint(b))) => Value::from(*b != 0),
            Some((3, Field::Varint(i))) => Value::from(*i as i64),
            Some((4, Field::Fixed64(d))) => Value::from(f64::from_bits(*d)),
            other => return Err(format!("attribute {key}: unsupported value {other:?}")),
        };
        out.insert(key, v);
    }
    Ok(out)
}

/// Decodes an OTLP protobuf `ExportTraceServiceRequest`.
pub fn from_protobuf(body: &[u8]) -> Result<Vec<ReceivedSpan>, String> {
    let mut out = Vec::new();
    let top = fields(body)?;
    for rs in by(&top, 1) {
        let Field::Bytes(rs) = rs else { continue };
        let rs = fields(rs)?;
        let resource = attrs_pb(&fields(bytes_of(&rs, 1).unwrap_or(&[]))?, 1)?;
        for ss in by(&rs, 2) {
            let Field::Bytes(ss) = ss else { continue };
            let ss = fields(ss)?;
            for sp in by(&ss, 2) {
                let Field::Bytes(sp) = sp else { continue };
                let sp = fields(sp)?;
                let fixed = |n: u64| {
                    by(&sp, n).find_map(|f| match f {
                        Field::Fixed64(v) => Some(*v),
                        _ => None,
                    })
                };
                let status = fields(bytes_of(&sp, 15).unwrap_or(&[]))?;
                let trace_id = bytes_of(&sp, 1).ok_or("span without trace_id")?;
                let span_id = bytes_of(&sp, 2).ok_or("span without span_id")?;
                if trace_id.len() != 16 || span_id.len() != 8 {
                    return Err("bad id length".to_string());
                }
                let mut event_names = Vec::new();
                for ev in by(&sp, 11) {
                    if let Field::Bytes(ev) = ev {
                        event_names.push(string_of(&fields(ev)?, 2)?);
                    }
                }
                out.push(ReceivedSpan {
                    trace_id: hex(trace_id),
                    span_id: hex(span_id),
                    parent_span_id: bytes_of(&sp, 4).filter(|p| !p.is_empty()).map(hex),
                    name: string_of(&sp, 5)?,
                    kind: by(&sp, 6)
                        .find_map(|f| match f {
                            Field::Varint(v) => Some(*v as i64),
                            _ => None,
                        })
                        .unwrap_or(0),
                    start_ns: fixed(7).ok_or("span without start time")?,
                    end_ns: fixed(8).ok_or("span without end time")?,
                    attributes: attrs_pb(&sp, 9)?,
                    event_names,
                    status_code: by(&status, 3)
                        .find_map(|f| match f {
                            Field::Varint(v) => Some(*v as i64),
                            _ => None,
                        })
                        .unwrap_or(0),
                    status_message: string_of(&status, 2)?,
                    resource: resource.clone(),
                });
            }
        }
    }
    Ok(out)
}
