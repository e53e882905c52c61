//! `dandori mcp --http ADDR`: the same server over MCP's streamable HTTP transport
//! (rmcp's session-keeping tower service on a plain hyper HTTP/1 listener).
//!
//! Every HTTP session is served by a clone of one [`DandoriServer`], so the tools,
//! policies, masking and the runs the server drives are shared by all clients, as
//! one stdio server shares them with its one client.
//!
//! Exposure rules, checked before the MCP layer sees a request:
//! - the listener binds to a loopback address unless remote access is asked for
//!   explicitly ([`check_bind`]), and then only with a bearer token;
//! - with a token, every request needs `Authorization: Bearer <token>` (401);
//! - on a loopback bind, the `Host` and any `Origin` header must name a loopback
//!   host (403), so a web page cannot reach the server by DNS rebinding;
//! - the endpoint is `/mcp`; any other path is 404;
//! - a body over [`MAX_BODY_BYTES`] is refused (413), declared or chunked, so no
//!   request can make the server buffer without bound.

use std::convert::Infallible;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::error::{McpError, reason};
use crate::server::DandoriServer;

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";
/// The environment variable holding the bearer token clients must send.
pub const TOKEN_ENV: &str = "DANDORI_MCP_TOKEN";
/// Shortest accepted token (a guessable token is no protection).
pub const MIN_TOKEN_LEN: usize = 16;
/// Largest request body read (a plan request inlined as `text` fits many times).
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// How the HTTP server is exposed.
#[derive(Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    /// Required in `Authorization: Bearer …` when set.
    pub token: Option<String>,
    /// Whether a non-loopback address was asked for explicitly.
    pub allow_remote: bool,
}

impl std::fmt::Debug for HttpOptions {
    // The token never reaches a log, even through Debug.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .field("allow_remote", &self.allow_remote)
            .finish()
    }
}

/// `PORT`, `HOST:PORT` (an IP address or `localhost`), `[IPv6]:PORT`. A host name
/// other than `localhost` is refused: the server binds what it is given, with no
/// name lookup in between.
pub fn parse_addr(s: &str) -> Result<SocketAddr, McpError> {
    let s = s.trim();
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if let Some(port) = s.strip_prefix("localhost:")
        && let Ok(port) = port.parse::<u16>()
    {
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    s.parse::<SocketAddr>().map_err(|_| {
        McpError::invalid(
            reason::ARGUMENT_INVALID,
            format!(
                "--http {s:?}: expected PORT, HOST:PORT with an IP address or `localhost`, or [IPv6]:PORT"
            ),
        )
    })
}

/// The exposure policy: a loopback address is always allowed; any other needs
/// `allow_remote` and a token of at least [`MIN_TOKEN_LEN`] characters. A token
/// that is set must be long enough even on loopback.
pub fn check_bind(
    addr: SocketAddr,
    allow_remote: bool,
    token: Option<&str>,
) -> Result<(), McpError> {
    if let Some(t) = token
        && t.chars().count() < MIN_TOKEN_LEN
    {
        return Err(McpError::invalid(
            reason::BIND_REFUSED,
            format!("{TOKEN_ENV} is shorter than {MIN_TOKEN_LEN} characters"),
        ));
    }
    if addr.ip().is_loopback() {
        return Ok(());
    }
    if !allow_remote {
        return Err(McpError::invalid(
            reason::BIND_REFUSED,
            format!(
                "{addr} is not a loopback address: the server would be reachable from other machines; pass --allow-remote (with a bearer token in {TOKEN_ENV}) to expose it"
            ),
        ));
    }
    if token.is_none() {
        return Err(McpError::invalid(
            reason::BIND_REFUSED,
            format!(
                "--allow-remote needs a bearer token in {TOKEN_ENV} (at least {MIN_TOKEN_LEN} characters)"
            ),
        ));
    }
    Ok(())
}

type Body = BoxBody<Bytes, Infallible>;

struct Gate {
    mcp: StreamableHttpService<DandoriServer, LocalSessionManager>,
    token: Option<String>,
    loopback_only: bool,
}

fn refusal(status: StatusCode, code: &str, message: &str) -> Response<Body> {
    let mut r = Response::new(Full::new(Bytes::from(format!("{code}: {message}\n"))).boxed());
    *r.status_mut() = status;
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            hyper::header::WWW_AUTHENTICATE,
            hyper::header::HeaderValue::from_static("Bearer"),
        );
    }
    r
}

/// Equal length and equal bytes, without stopping at the first difference.
fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    given.len() == expected.len()
        && given
            .iter()
            .zip(expected)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The host part of a `Host` value or an `Origin` URL names a loopback host.
fn loopback_host(value: &str) -> bool {
    let rest = value
        .split_once("://")
        .map(|(_, r)| r)
        .unwrap_or(value)
        .split('/')
        .next()
        .unwrap_or("");
    let host = if let Some(v6) = rest.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        rest.rsplit_once(':').map(|(h, _)| h).unwrap_or(rest)
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
}

impl Gate {
    async fn handle(&self, req: Request<Incoming>) -> Response<Body> {
        let path = req.uri().path();
        if path != ENDPOINT && path != "/mcp/" {
            return refusal(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                &format!("the MCP endpoint is {ENDPOINT}"),
            );
        }
        if let Some(token) = &self.token {
            let given = req
                .headers()
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| same_secret(g.as_bytes(), token.as_bytes())) {
                return refusal(
                    StatusCode::UNAUTHORIZED,
                    reason::AUTH_REQUIRED,
                    "send `Authorization: Bearer <token>` with the token the server was started with",
                );
            }
        }
        if self.loopback_only {
            let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
            // Host is required by HTTP/1.1; Origin comes only from browsers.
            let refused = match (header(hyper::header::HOST), header(hyper::header::ORIGIN)) {
                (host, _) if !host.is_some_and(loopback_host) => {
                    Some(format!("Host {:?}", host.unwrap_or("")))
                }
                (_, Some(origin)) if !loopback_host(origin) => Some(format!("Origin {origin:?}")),
                _ => None,
            };
            if let Some(what) = refused {
                return refusal(
                    StatusCode::FORBIDDEN,
                    reason::ORIGIN_REFUSED,
                    &format!("{what} is not a loopback host (the server listens on loopback only)"),
                );
            }
        }
        // The body is read here, up to the limit (a declared length over it is
        // refused before reading), so neither a length nor a chunked stream can
        // make the server buffer without bound.
        let (parts, body) = req.into_parts();
        let too_large = || {
            refusal(
                StatusCode::PAYLOAD_TOO_LARGE,
                reason::REQUEST_TOO_LARGE,
                &format!("the body is larger than {MAX_BODY_BYTES} bytes"),
            )
        };
        if hyper::body::Body::size_hint(&body).lower() > MAX_BODY_BYTES as u64 {
            return too_large();
        }
        let read = http_body_util::Limited::new(body, MAX_BODY_BYTES)
            .collect()
            .await;
        let body = match read {
            Ok(collected) => collected.to_bytes(),
            Err(e) if e.is::<http_body_util::LengthLimitError>() => return too_large(),
            Err(e) => {
                return refusal(
                    StatusCode::BAD_REQUEST,
                    reason::ARGUMENT_INVALID,
                    &format!("the body could not be read: {e}"),
                );
            }
        };
        self.mcp
            .handle(Request::from_parts(parts, Full::new(body)))
            .await
    }
}

impl DandoriServer {
    /// Serves MCP over streamable HTTP on `opts.addr` (after [`check_bind`]) until
    /// interrupted. `on_ready` gets the bound address (port 0 picks a free one).
    pub async fn serve_http(
        self,
        opts: HttpOptions,
        on_ready: impl FnOnce(SocketAddr),
    ) -> Result<(), McpError> {
        check_bind(opts.addr, opts.allow_remote, opts.token.as_deref())?;
        let listener = tokio::net::TcpListener::bind(opts.addr)
            .await
            .map_err(|e| {
                McpError::invalid(
                    reason::BIND_REFUSED,
                    format!("cannot listen on {}: {e}", opts.addr),
                )
            })?;
        let bound = listener
            .local_addr()
            .map_err(|e| McpError::invalid(reason::IO_ERROR, format!("listener address: {e}")))?;
        let server = self;
        let gate = Arc::new(Gate {
            mcp: StreamableHttpService::new(
                move || Ok(server.clone()),
                Arc::new(LocalSessionManager::default()),
                StreamableHttpServerConfig {
                    sse_keep_alive: Some(Duration::from_secs(15)),
                    stateful_mode: true,
                },
            ),
            token: opts.token,
            loopback_only: bound.ip().is_loopback(),
        });
        on_ready(bound);
        let interrupted = tokio::signal::ctrl_c();
        tokio::pin!(interrupted);
        loop {
            let stream = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // A refused or reset connection (or no file descriptors left)
                    // ends that connection, never the server.
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                },
                _ = &mut interrupted => return Ok(()),
            };
            let gate = gate.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let gate = gate.clone();
                    async move { Ok::<_, Infallible>(gate.handle(req).await) }
                });
                // A malformed request closes its connection only.
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    }
}
