//! The projects' remotes over git's smart HTTP protocol, as the forges serve
//! them: `http://ADDR/git/gh/OWNER/REPO.git` (GitHub) and
//! `http://ADDR/git/gl/GROUP/PROJECT.git` (GitLab), answered by `git
//! http-backend` on the bare repository of [`super::FakeForge::set_remote`].
//!
//! Authentication as on the forges: HTTP basic with a known token as the
//! password (GitHub: user `x-access-token`, any user works; GitLab: any user,
//! e.g. `oauth2`); anything else is 401 with `WWW-Authenticate`, so a push that
//! did not send the token fails as it would on the real forge. Every request is
//! recorded ([`GitRequest`]) with the token's user.

use std::process::Stdio;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Api, AppState};

/// One git request the fake answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRequest {
    pub api: Api,
    pub project: String,
    /// `info/refs?service=git-receive-pack`, `git-receive-pack`, …
    pub service: String,
    /// The token's user, None when the request was refused (401).
    pub user: Option<String>,
}

fn plain(status: u16, text: &str, extra: &[(&str, &str)]) -> Response {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "text/plain");
    for (k, v) in extra {
        b = b.header(*k, *v);
    }
    b.body(Body::from(text.to_string()))
        .unwrap_or_else(|e| panic!("fake forge git response: {e}"))
}

/// The `user:password` of a basic `Authorization` header.
fn basic(headers: &HeaderMap) -> Option<(String, String)> {
    let v = headers.get("authorization")?.to_str().ok()?;
    let (scheme, b64) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = String::from_utf8(base64_decode(b64.trim())?).ok()?;
    let (u, p) = decoded.split_once(':')?;
    Some((u.to_string(), p.to_string()))
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let bytes: Vec<u8> = s.bytes().filter(|b| *b != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= val(*c)? << (18 - 6 * i);
        }
        let take = chunk.len().saturating_sub(1);
        for i in 0..take {
            out.push(((n >> (16 - 8 * i)) & 0xff) as u8);
        }
    }
    Some(out)
}

/// Answers `/git/…` with `git http-backend`.
pub(super) async fn serve(
    state: &AppState,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: Bytes,
) -> Response {
    let Some(rest) = uri.path().strip_prefix("/git/") else {
        return plain(404, "not a git path", &[]);
    };
    let (api, rest) = match rest.split_once('/') {
        Some(("gh", r)) => (Api::GitHub, r),
        Some(("gl", r)) => (Api::GitLab, r),
        _ => return plain(404, "not a git path", &[]),
    };
    let Some((project, service)) = rest.split_once(".git/") else {
        return plain(404, "not a repository path", &[]);
    };
    let query = uri.query().unwrap_or_default().to_string();
    let (bare, user) = {
        let s = state.lock();
        let bare = s.remotes.get(&(api, project.to_string())).cloned();
        let user = basic(headers).and_then(|(_, token)| s.tokens.get(&token).cloned());
        (bare, user)
    };
    let shown = if query.is_empty() {
        service.to_string()
    } else {
        format!("{service}?{query}")
    };
    state.lock().git_requests.push(GitRequest {
        api,
        project: project.to_string(),
        service: shown,
        user: user.clone(),
    });
    let Some(user) = user else {
        return plain(
            401,
            "authentication required",
            &[("www-authenticate", "Basic realm=\"fake forge\"")],
        );
    };
    let Some(bare) = bare else {
        return plain(404, "no remote for this project", &[]);
    };
    let (Some(root), Some(name)) = (bare.parent(), bare.file_name()) else {
        return plain(500, "bad remote path", &[]);
    };
    let header = |k: &str| {
        headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let mut cmd = tokio::process::Command::new("git");
    cmd.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env(
            "PATH_INFO",
            format!("/{}/{service}", name.to_string_lossy()),
        )
        .env("QUERY_STRING", &query)
        .env("REQUEST_METHOD", method.as_str())
        .env("CONTENT_TYPE", header("content-type"))
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_CONTENT_ENCODING", header("content-encoding"))
        .env("GIT_PROTOCOL", header("git-protocol"))
        .env("REMOTE_USER", &user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return plain(500, &format!("git http-backend: {e}"), &[]),
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(&body).await;
    }
    let mut out = Vec::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = stdout.read_to_end(&mut out).await;
    }
    let _ = child.wait().await;
    // CGI: headers, a blank line, the body.
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let Some((end, sep)) = split else {
        return plain(500, "git http-backend gave no headers", &[]);
    };
    let head = String::from_utf8_lossy(&out[..end]).into_owned();
    let mut status = 200u16;
    let mut b = Response::builder();
    for line in head.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("status") {
            status = v
                .split_whitespace()
                .next()
                .and_then(|c| c.parse().ok())
                .unwrap_or(500);
        } else {
            b = b.header(k.trim(), v);
        }
    }
    b.status(StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .body(Body::from(out[end + sep..].to_vec()))
        .unwrap_or_else(|e| panic!("fake forge git response: {e}"))
}
