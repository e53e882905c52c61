//! The stdio guard: every line a client sends is checked before rmcp sees it.
//!
//! rmcp's stdio transport ends the session on a line it cannot decode (`{`,
//! `null`, a batch, `"jsonrpc": "1.0"`, a request without its params, an id that
//! is an object): one malformed line from a client would stop the server. The
//! guard reads stdin itself, answers such lines with the JSON-RPC error they call
//! for (-32700 parse error, -32600 invalid request, -32601 method not found,
//! -32602 invalid params; nothing for a malformed notification) and hands rmcp
//! only messages it decodes. rmcp's own output and the guard's answers reach
//! stdout through one writer, a line at a time.

use rmcp::model::ClientJsonRpcMessage;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest line accepted from a client (a bigger one is answered with -32600 and
/// skipped without being held in memory).
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Methods a client may send as requests (MCP 2025-06-18).
const CLIENT_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "completion/complete",
    "logging/setLevel",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "tools/call",
    "tools/list",
];

/// What to do with one line from the client.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Hand the line to the protocol.
    Forward,
    /// Answer with this JSON-RPC error response and drop the line.
    Answer(Value),
    /// Drop the line silently (blank, or a notification that cannot be decoded).
    Drop,
}

/// Checks one line the way rmcp will decode it.
pub fn check_line(line: &str) -> Verdict {
    let text = line.trim();
    if text.is_empty() {
        return Verdict::Drop;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => return Verdict::Answer(error(Value::Null, -32700, &format!("parse error: {e}"))),
    };
    let Some(object) = value.as_object() else {
        let what = if value.is_array() {
            "batches are not supported"
        } else {
            "a message must be a JSON object"
        };
        return Verdict::Answer(error(
            Value::Null,
            -32600,
            &format!("invalid request: {what}"),
        ));
    };
    let id = object.get("id").cloned();
    let usable_id = id
        .as_ref()
        .filter(|i| i.is_string() || i.is_i64() || i.is_u64())
        .cloned();
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        // A notification gets no answer, whatever is wrong with it.
        if id.is_none() {
            return Verdict::Drop;
        }
        return Verdict::Answer(error(
            usable_id.unwrap_or(Value::Null),
            -32600,
            "invalid request: `jsonrpc` must be \"2.0\"",
        ));
    }
    if id.is_some() && usable_id.is_none() {
        return Verdict::Answer(error(
            Value::Null,
            -32600,
            "invalid request: `id` must be a string or an integer",
        ));
    }
    if serde_json::from_value::<ClientJsonRpcMessage>(value.clone()).is_ok() {
        return Verdict::Forward;
    }
    let method = object.get("method").and_then(Value::as_str);
    match (method, usable_id) {
        // A notification or a response the protocol cannot decode: no answer.
        (_, None) => Verdict::Drop,
        (None, Some(_)) if object.contains_key("result") || object.contains_key("error") => {
            Verdict::Drop
        }
        (None, Some(id)) => Verdict::Answer(error(id, -32600, "invalid request: no `method`")),
        (Some(m), Some(id)) if !CLIENT_METHODS.contains(&m) => {
            Verdict::Answer(error(id, -32601, &format!("method not found: {m}")))
        }
        (Some(m), Some(id)) => Verdict::Answer(error(
            id,
            -32602,
            &format!("invalid params for {m}: they do not match the method's schema"),
        )),
    }
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// Reads `input` line by line, forwards the lines [`check_line`] accepts to
/// `to_server`, and sends its answers to `answers`. Ends at the end of `input`
/// (dropping `to_server`, which ends the session).
pub async fn filter_input<R, W>(input: R, mut to_server: W, answers: mpsc::Sender<String>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut reader = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = match read_bounded_line(&mut reader, &mut buf).await {
            Ok(n) => n,
            Err(_) => break,
        };
        if n == 0 {
            break;
        }
        if buf.len() > MAX_LINE_BYTES {
            let e = error(
                Value::Null,
                -32600,
                &format!("invalid request: a line longer than {MAX_LINE_BYTES} bytes"),
            );
            if answers.send(e.to_string()).await.is_err() {
                break;
            }
            continue;
        }
        let line = String::from_utf8_lossy(&buf);
        match check_line(&line) {
            Verdict::Forward => {
                let mut out = line.trim().as_bytes().to_vec();
                out.push(b'\n');
                if to_server.write_all(&out).await.is_err() || to_server.flush().await.is_err() {
                    break;
                }
            }
            Verdict::Answer(v) => {
                if answers.send(v.to_string()).await.is_err() {
                    break;
                }
            }
            Verdict::Drop => {}
        }
    }
    let _ = to_server.shutdown().await;
}

/// One line into `buf` (without holding more than [`MAX_LINE_BYTES`] + 1 of it):
/// the number of bytes read, 0 at the end of input.
async fn read_bounded_line<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let chunk = reader.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let (used, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let room = (MAX_LINE_BYTES + 1).saturating_sub(buf.len());
        buf.extend_from_slice(&chunk[..used.min(room)]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

/// Writes the server's output lines and the guard's answers to `output`, one
/// whole line at a time, until both have ended.
pub async fn merge_output<R, W>(from_server: R, mut answers: mpsc::Receiver<String>, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut lines = BufReader::new(from_server).lines();
    let mut server_open = true;
    let mut answers_open = true;
    while server_open || answers_open {
        let line = tokio::select! {
            l = lines.next_line(), if server_open => match l {
                Ok(Some(l)) => l,
                _ => { server_open = false; continue; }
            },
            a = answers.recv(), if answers_open => match a {
                Some(a) => a,
                None => { answers_open = false; continue; }
            },
        };
        let mut bytes = line.into_bytes();
        bytes.push(b'\n');
        if output.write_all(&bytes).await.is_err() || output.flush().await.is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_lines_get_the_error_they_call_for() {
        let code = |l: &str| match check_line(l) {
            Verdict::Answer(v) => v["error"]["code"].as_i64(),
            _ => None,
        };
        assert_eq!(code("{"), Some(-32700));
        assert_eq!(code(&"x".repeat(1000)), Some(-32700));
        assert_eq!(code("null"), Some(-32600));
        assert_eq!(code("[1,2]"), Some(-32600));
        assert_eq!(
            code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#),
            Some(-32600)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#),
            Some(-32600)
        );
        assert_eq!(code(r#"{"jsonrpc":"2.0","id":3}"#), Some(-32600));
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call"}"#),
            Some(-32602)
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":5,"method":"no/such"}"#),
            Some(-32601)
        );
        assert_eq!(check_line("   "), Verdict::Drop);
        assert_eq!(
            check_line(r#"{"jsonrpc":"2.0","method":"no/such"}"#),
            Verdict::Drop
        );
        assert_eq!(
            check_line(r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#),
            Verdict::Forward
        );
        assert_eq!(
            check_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Verdict::Forward
        );
    }
}
