//! `dandori mcp --http`: the official Python SDK client drives the whole loop over
//! streamable HTTP; raw HTTP requests check the exposure rules (token, Host and
//! Origin, path, bind policy) and that none of them ends the server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::mcp::{agent, fixture, git, inspector_call, new_repo, planned_repo, probe_error_codes};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const TOKEN: &str = "s3cr3t-bearer-token-0123456789";

/// A `dandori mcp --http` process, killed on drop.
struct Server {
    child: Child,
    url: String,
    addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(cwd: &Path, args: &[&str], token: Option<&str>) -> Server {
    let mut cmd = Command::new(BIN);
    cmd.arg("mcp")
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("DANDORI_MCP_TOKEN");
    if let Some(t) = token {
        cmd.env("DANDORI_MCP_TOKEN", t);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("dandori mcp: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = stderr.read_to_string(&mut sink);
    });
    Server { child, url, addr }
}

/// One raw HTTP/1.1 request; returns the status code and the body.
fn raw(addr: &str, head: &str, body: &str) -> (u16, String) {
    send(
        addr,
        &format!(
            "{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

/// Writes `request` as it is and reads the answer until the server closes.
fn send(addr: &str, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    // The server may answer (and close) before reading all of a refused body.
    let _ = s.write_all(request.as_bytes());
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = out.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;

fn post(addr: &str, extra_headers: &[&str], body: &str) -> (u16, String) {
    let mut head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
    );
    for h in extra_headers {
        head.push_str("\r\n");
        head.push_str(h);
    }
    raw(addr, &head, body)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn python_sdk_client_executes_a_plan_over_streamable_http() {
    let dir = tempfile::tempdir().unwrap();
    let repo = new_repo(&dir.path().canonicalize().unwrap(), "repo");
    let server = serve(&repo, &["--tools", "standard", "--http", "0"], Some(TOKEN));
    assert!(
        server.url.starts_with("http://127.0.0.1:"),
        "{}",
        server.url
    );

    // Without the token, with a wrong one, or from a non-loopback Host/Origin: refused
    // before MCP sees the request; a wrong path is 404; garbage closes one connection.
    let (status, body) = post(&server.addr, &[], INIT);
    assert_eq!(status, 401, "{body}");
    assert!(body.starts_with("AUTH_REQUIRED"), "{body}");
    assert!(!body.contains(TOKEN));
    let wrong = "Authorization: Bearer s3cr3t-bearer-token-0123456780";
    assert_eq!(post(&server.addr, &[wrong], INIT).0, 401);
    let auth = format!("Authorization: Bearer {TOKEN}");
    let (status, body) = post(&server.addr, &[&auth, "Origin: http://evil.example"], INIT);
    assert_eq!(status, 403, "{body}");
    assert!(body.starts_with("ORIGIN_REFUSED"), "{body}");
    let (status, body) = raw(
        &server.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: rebound.example:80\r\n{auth}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
        ),
        INIT,
    );
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        raw(
            &server.addr,
            &format!("GET /other HTTP/1.1\r\nHost: {}\r\n{auth}", server.addr),
            ""
        )
        .0,
        404
    );
    let (status, _) = raw(&server.addr, "NOT HTTP AT ALL", "");
    assert_ne!(status, 200);
    // Oversized bodies: refused by their declared length, or cut while chunked.
    let (status, body) = send(
        &server.addr,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\n{auth}\r\nContent-Length: 9000000\r\nConnection: close\r\n\r\n",
            server.addr
        ),
    );
    assert_eq!(status, 413, "{body}");
    assert!(body.starts_with("REQUEST_TOO_LARGE"), "{body}");
    let chunk = "x".repeat(1 << 20);
    let mut chunked = format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\n{auth}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        server.addr
    );
    for _ in 0..9 {
        chunked.push_str(&format!("{:x}\r\n{chunk}\r\n", chunk.len()));
    }
    chunked.push_str("0\r\n\r\n");
    // The server answers 413 as soon as the limit is passed and closes; the kernel
    // may reset the connection under the rest of the body before the answer is
    // read (status 0 here). Either way, nothing was served.
    let (status, body) = send(&server.addr, &chunked);
    assert!(
        status == 413 && body.starts_with("REQUEST_TOO_LARGE") || status == 0,
        "{status} {body}"
    );
    // A local browser page is allowed, and the token opens the door.
    let (status, body) = post(
        &server.addr,
        &[&auth, "Origin: http://localhost:6274"],
        INIT,
    );
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"serverInfo\""), "{body}");

    let out = agent(json!({
        "url": server.url, "token": TOKEN, "edit": fixture("edit.py"),
        "plan": {"text": "Add a subtract function to notes/calc.py and document it in README.md", "repo": repo},
        "probe_errors": true,
    }));
    // The standard set: core + six inspection tools.
    let tools = out["tools"].as_array().unwrap();
    assert_eq!(
        (tools.len(), &tools[0], &tools[10]),
        (11, &json!("plan"), &json!("locate"))
    );
    assert_eq!(out["errors"], probe_error_codes());
    assert_eq!(out["completion"]["status"], json!("completed"));
    assert_eq!(out["report"]["status"], json!("done"));
    let steps = out["plan"]["steps"].as_array().unwrap().len();
    assert_eq!(out["report"]["done"], json!(steps));
    assert!(out["report_md_chars"].as_u64().unwrap() > 200);
    for v in out["verdicts"].as_array().unwrap() {
        assert!(
            ["done", "committed"].contains(&v["status"].as_str().unwrap()),
            "{v}"
        );
    }
    let run_dir = PathBuf::from(out["plan"]["run_dir"].as_str().unwrap());
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let branch = planning["work_branch"].as_str().unwrap();
    let log = git(&repo, &["log", "--format=%B", &format!("main..{branch}")]);
    assert_eq!(log.matches("Dandori-Step: ").count(), steps, "{log}");

    // A second session on the same server sees the run the first one drove.
    let again = agent(json!({
        "url": server.url, "token": TOKEN, "edit": fixture("edit.py"),
        "run_dir": run_dir,
    }));
    assert_eq!(again["completion"]["status"], json!("completed"));

    // The token never reaches the run's files or the work branch.
    for f in files_under(&run_dir) {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(TOKEN),
            "{} holds the token",
            f.display()
        );
    }
    assert!(!git(&repo, &["log", "-p", branch]).contains(TOKEN));
}

#[test]
fn http_binds_are_loopback_unless_asked_with_a_token() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str], token: Option<&str>| {
        let mut cmd = Command::new(BIN);
        cmd.arg("mcp")
            .args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .env_remove("DANDORI_MCP_TOKEN");
        if let Some(t) = token {
            cmd.env("DANDORI_MCP_TOKEN", t);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--http", "0.0.0.0:0"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("BIND_REFUSED") && err.contains("--allow-remote"),
        "{err}"
    );
    let (code, err) = run(&["--http", "0.0.0.0:0", "--allow-remote"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("BIND_REFUSED") && err.contains("DANDORI_MCP_TOKEN"),
        "{err}"
    );
    let (code, err) = run(&["--http", "0.0.0.0:0", "--allow-remote"], Some("tiny-tok"));
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("BIND_REFUSED"), "{err}");
    assert!(!err.contains("tiny-tok"), "the token is echoed: {err}");
    let (code, err) = run(&["--http", "example.com:80"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("ARGUMENT_INVALID"), "{err}");
    let (code, err) = run(&["--allow-remote"], None);
    assert_eq!(code, Some(2), "--allow-remote needs --http: {err}");

    // Asked explicitly, with a token: served on every interface, token required,
    // Host not restricted (the token is the protection).
    let server = serve(
        dir.path(),
        &["--http", "0.0.0.0:0", "--allow-remote"],
        Some(TOKEN),
    );
    let port = server.addr.rsplit(':').next().unwrap().to_string();
    let local = format!("127.0.0.1:{port}");
    assert_eq!(post(&local, &[], INIT).0, 401);
    let (status, body) = raw(
        &local,
        &format!(
            "POST /mcp HTTP/1.1\r\nHost: dandori.internal:{port}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream"
        ),
        INIT,
    );
    assert_eq!(status, 200, "{body}");
}

/// One MCP Inspector CLI call over streamable HTTP (a new session each time).
fn inspect_http(url: &str, args: &[&str]) -> Value {
    inspector_call(Path::new("."), &[url, "--transport", "http"], args)
}

fn call(url: &str, tool: &str, args: &[(&str, &str)]) -> Value {
    let mut argv = vec!["tools/call".to_string(), "--tool-name".into(), tool.into()];
    for (k, v) in args {
        argv.push("--tool-arg".into());
        argv.push(format!("{k}={v}"));
    }
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    inspect_http(url, &argv)
}

/// The Inspector CLI starts no server over HTTP: every call is a new session on
/// one `dandori mcp --http` process, so it can drive the whole executor loop
/// (the stdio test can only list and call read-only tools).
#[test]
fn mcp_inspector_cli_drives_the_loop_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run_dir) = planned_repo(&dir.path().canonicalize().unwrap(), "repo");
    let server = serve(&repo, &["--tools", "all", "--http", "127.0.0.1:0"], None);
    let listed = inspect_http(&server.url, &["tools/list"]);
    assert_eq!(listed["tools"].as_array().unwrap().len(), 14);
    let run = run_dir.to_str().unwrap();
    let mut handed = Vec::new();
    let mut verdicts = Vec::new();
    let completion = loop {
        let next = call(&server.url, "next", &[("run_dir", run)]);
        let next = &next["structuredContent"];
        if next["status"] == json!("finished") {
            break next["completion"].clone();
        }
        for ready in next["ready"].as_array().unwrap() {
            let sid = ready["step_id"].as_str().unwrap();
            let step = call(&server.url, "step", &[("run_dir", run), ("step_id", sid)]);
            let step = &step["structuredContent"];
            let prompt = dir.path().join(format!("{sid}.prompt.md"));
            std::fs::write(&prompt, step["prompt"].as_str().unwrap()).unwrap();
            let edit = Command::new("python3")
                .arg(fixture("edit.py"))
                .args([sid, step["workdir"].as_str().unwrap()])
                .arg(&prompt)
                .status()
                .unwrap();
            assert!(edit.success());
            let v = call(
                &server.url,
                "step_update",
                &[
                    ("run_dir", run),
                    ("step_id", sid),
                    ("status", "done"),
                    ("summary", "edited"),
                ],
            );
            assert_eq!(v["isError"], json!(false), "{v}");
            handed.push(sid.to_string());
            verdicts.push(v["structuredContent"]["status"].clone());
        }
        assert!(handed.len() < 10, "no progress: {handed:?} {verdicts:?}");
    };
    assert_eq!(completion["status"], json!("completed"), "{completion}");
    // S02's unit command fails on its first attempt: handed out again with feedback.
    assert_eq!(
        handed.iter().filter(|s| *s == "S02").count(),
        2,
        "{handed:?}"
    );
    assert!(verdicts.contains(&json!("retry")), "{verdicts:?}");
    let report = call(&server.url, "report", &[("run_dir", run)]);
    assert_eq!(report["structuredContent"]["status"], json!("done"));
    assert_eq!(report["structuredContent"]["done"], json!(3));
    let log = git(&repo, &["log", "--format=%B", "main..dandori/RQ-7/run-7"]);
    for id in ["S01", "S02", "S03"] {
        assert!(log.contains(&format!("Dandori-Step: {id}")), "{log}");
    }
}
