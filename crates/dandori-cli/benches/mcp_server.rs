//! `dandori mcp`, measured as a client sees it (issue 14 targets: start ≤ 100 ms,
//! warm calls ≤ 10 ms, on the examples).
//!
//! - `mcp_start/stdio`: spawn `dandori mcp` → `initialize` answered over stdio →
//!   stdin closed → process exited.
//! - `mcp_start/http`: spawn `dandori mcp --http 127.0.0.1:0` → listening line on
//!   stderr → `initialize` POSTed and answered → process killed.
//! - `mcp_warm_stdio/<tool>`: one `tools/call` round trip on a running server (raw
//!   JSON-RPC lines, no SDK) for the read tools on a run planned from
//!   examples/todo-api (offline planner) in a temporary copy.
//! - `mcp_warm_http/graph`: the same `graph` call over streamable HTTP (a new
//!   loopback TCP connection per call, session kept by `Mcp-Session-Id`).
//!
//! `cargo bench -p dandori --bench mcp_server` (release profile). The binary is the
//! one cargo built for the bench profile.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_test_support::git::TempGitRepo;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_name() == ".dandori" {
            continue;
        }
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// examples/todo-api in a new repository, planned offline: (repo, run_dir).
fn planned_example() -> (TempGitRepo, String) {
    let repo = TempGitRepo::new();
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/todo-api"),
        repo.path(),
    );
    repo.commit_all("init");
    let out = Command::new(BIN)
        .args(["plan", "requests/RQ-001.md", "--repo", ".", "--json"])
        .current_dir(repo.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    (repo, plan["run_dir"].as_str().unwrap().to_string())
}

struct StdioServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl StdioServer {
    fn spawn(cwd: &Path) -> Self {
        let mut child = Command::new(BIN)
            .args(["mcp", "--tools", "all"])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut s = StdioServer {
            child,
            stdin,
            stdout,
            next_id: 0,
        };
        s.rpc(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "bench", "version": "0"}}),
        );
        writeln!(
            s.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        )
        .unwrap();
        s
    }

    fn rpc(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        writeln!(
            self.stdin,
            "{}",
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        )
        .unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(
                self.stdout.read_line(&mut line).unwrap() > 0,
                "server closed"
            );
            let msg: Value = serde_json::from_str(&line).unwrap();
            if msg["id"] == json!(id) {
                return msg;
            }
        }
    }

    fn close(self) {
        let StdioServer {
            mut child, stdin, ..
        } = self;
        drop(stdin);
        child.wait().unwrap();
    }
}

/// A `dandori mcp --http` process and its address.
fn spawn_http(cwd: &Path) -> (Child, String) {
    let mut child = Command::new(BIN)
        .args(["mcp", "--tools", "all", "--http", "127.0.0.1:0"])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("DANDORI_MCP_TOKEN")
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .trim_start_matches("dandori mcp: listening on http://")
        .trim_end_matches("/mcp")
        .to_string();
    (child, addr)
}

/// One POST to /mcp; returns (session id, the JSON-RPC message of the answer).
fn post(addr: &str, session: Option<&str>, body: &Value) -> (Option<String>, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    let session = session
        .map(|id| format!("Mcp-Session-Id: {id}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut reader = BufReader::new(s);
    let mut session_id = None;
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    if line.contains(" 202 ") {
        return (None, Value::Null);
    }
    loop {
        line.clear();
        assert!(reader.read_line(&mut line).unwrap() > 0, "no answer");
        let l = line.trim();
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("mcp-session-id")
        {
            session_id = Some(v.trim().to_string());
        }
        if let Some(data) = l.strip_prefix("data:")
            && let Ok(msg) = serde_json::from_str::<Value>(data.trim())
            && msg.get("id").is_some()
        {
            return (session_id, msg);
        }
        if l.starts_with('{') {
            return (session_id, serde_json::from_str(l).unwrap());
        }
    }
}

fn http_initialize(addr: &str) -> String {
    let (session, msg) = post(
        addr,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-03-26", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "0"}}}),
    );
    assert!(msg["result"]["serverInfo"].is_object(), "{msg}");
    session.expect("Mcp-Session-Id")
}

fn bench(c: &mut Criterion) {
    let (example, run_dir) = planned_example();
    let repo = example.path().to_path_buf();

    let mut start = c.benchmark_group("mcp_start");
    start.sample_size(20);
    start.bench_function("stdio", |b| b.iter(|| StdioServer::spawn(&repo).close()));
    start.bench_function("http", |b| {
        b.iter(|| {
            let (mut child, addr) = spawn_http(&repo);
            http_initialize(&addr);
            child.kill().unwrap();
            child.wait().unwrap();
        })
    });
    start.finish();

    let mut server = StdioServer::spawn(&repo);
    let calls = [
        ("graph", json!({"path": run_dir})),
        ("validate", json!({"path": run_dir})),
        ("step", json!({"run_dir": run_dir, "step_id": "S01"})),
        ("status", json!({"run_dir": run_dir})),
        ("report", json!({"run_dir": run_dir})),
    ];
    let mut warm = c.benchmark_group("mcp_warm_stdio");
    for (name, args) in &calls {
        let r = server.rpc("tools/call", json!({"name": name, "arguments": args}));
        assert_eq!(r["result"]["isError"], json!(false), "{name}: {r}");
        warm.bench_function(*name, |b| {
            b.iter(|| server.rpc("tools/call", json!({"name": name, "arguments": args})))
        });
    }
    warm.finish();
    server.close();

    let (mut child, addr) = spawn_http(&repo);
    let session = http_initialize(&addr);
    post(
        &addr,
        Some(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    let graph = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                       "params": {"name": "graph", "arguments": {"path": run_dir}}});
    let (_, r) = post(&addr, Some(&session), &graph);
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
    let mut warm = c.benchmark_group("mcp_warm_http");
    warm.bench_function("graph", |b| b.iter(|| post(&addr, Some(&session), &graph)));
    warm.finish();
    child.kill().unwrap();
    child.wait().unwrap();
}

criterion_group!(benches, bench);
criterion_main!(benches);
