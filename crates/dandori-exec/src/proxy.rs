//! The setup proxy of seed 002 §11.3 (`network.allowed_domains`): an HTTP proxy
//! on 127.0.0.1 that setup commands reach through `HTTP_PROXY` / `HTTPS_PROXY`.
//! It tunnels `CONNECT host:port` and forwards plain `http://host/…` requests
//! when `host` is allowed (a listed domain or a subdomain of one), and answers
//! anything else `403` with [`ENV_NETWORK_DOMAIN_REFUSED`] and the host named;
//! each refusal is kept ([`DomainProxy::refusals`]) so the setup record can say
//! which host a failed command tried.
//!
//! Small and synchronous like the rest of this crate: a listener thread and two
//! threads per tunnelled connection, all ending with the process or when the
//! proxy is dropped (the listener stops accepting).

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The reason code of a refused host.
pub const ENV_NETWORK_DOMAIN_REFUSED: &str = "ENV_NETWORK_DOMAIN_REFUSED";

/// The largest request head read before a request is refused as malformed.
const MAX_HEAD: usize = 64 * 1024;

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    /// `CONNECT` or the method of a plain HTTP request.
    pub method: String,
}

/// A running proxy; stops accepting when dropped.
pub struct DomainProxy {
    port: u16,
    allowed: Arc<Vec<String>>,
    refusals: Arc<Mutex<Vec<Refusal>>>,
    stop: Arc<AtomicBool>,
}

/// Whether `host` is `domain` or a subdomain of it (`files.pythonhosted.org`
/// under `pythonhosted.org`); a leading `*.` or `.` on the domain means the same.
pub fn host_allowed(allowed: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    allowed.iter().any(|d| {
        let d = d
            .trim()
            .trim_start_matches("*.")
            .trim_start_matches('.')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        !d.is_empty() && (host == d || host.ends_with(&format!(".{d}")))
    })
}

impl DomainProxy {
    /// Starts a proxy on a free port of 127.0.0.1 that allows `allowed`.
    pub fn start(allowed: Vec<String>) -> std::io::Result<DomainProxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let allowed = Arc::new(allowed);
        let refusals = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (a, r, s) = (allowed.clone(), refusals.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (a, r) = (a.clone(), r.clone());
                std::thread::spawn(move || serve(stream, &a, &r));
            }
        });
        Ok(DomainProxy {
            port,
            allowed,
            refusals,
            stop,
        })
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The hosts allowed.
    pub fn allowed(&self) -> &[String] {
        &self.allowed
    }

    /// Every refusal so far, oldest first.
    pub fn refusals(&self) -> Vec<Refusal> {
        self.refusals.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// The variables that send a child's HTTP(S) traffic through this proxy;
    /// loopback stays direct (a registry on 127.0.0.1).
    pub fn env(&self) -> Vec<(String, String)> {
        let url = self.url();
        let mut vars = Vec::new();
        for k in [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "http_proxy",
            "https_proxy",
            "ALL_PROXY",
            "all_proxy",
            "npm_config_proxy",
            "npm_config_https_proxy",
        ] {
            vars.push((k.to_string(), url.clone()));
        }
        for k in ["NO_PROXY", "no_proxy"] {
            vars.push((k.to_string(), "localhost,127.0.0.1,::1".to_string()));
        }
        vars
    }
}

impl Drop for DomainProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the listener so it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

/// `host:port` → (host, port); `[::1]:443` keeps the brackets off.
fn split_authority(auth: &str, default_port: u16) -> Option<(String, u16)> {
    let auth = auth.rsplit('@').next()?;
    if let Some(rest) = auth.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        let port = tail
            .strip_prefix(':')
            .map(|p| p.parse().ok())
            .unwrap_or(Some(default_port))?;
        return Some((h.to_string(), port));
    }
    match auth.rsplit_once(':') {
        Some((h, p)) => Some((h.to_string(), p.parse().ok()?)),
        None => Some((auth.to_string(), default_port)),
    }
}

fn serve(mut client: TcpStream, allowed: &[String], refusals: &Mutex<Vec<Refusal>>) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(30)));
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    let end = loop {
        if let Some(i) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if head.len() > MAX_HEAD {
            return answer(&mut client, "431 Request Header Fields Too Large", "");
        }
        match client.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let mut words = text.split_whitespace();
    let (Some(method), Some(target)) = (words.next(), words.next()) else {
        return answer(&mut client, "400 Bad Request", "malformed request line");
    };
    let method = method.to_string();
    let (authority, rest_target, default_port) = if method.eq_ignore_ascii_case("CONNECT") {
        (target.to_string(), None, 443)
    } else if let Some(rest) = target.strip_prefix("http://") {
        let (auth, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        (auth.to_string(), Some(path.to_string()), 80)
    } else {
        return answer(
            &mut client,
            "400 Bad Request",
            "dandori's setup proxy takes `CONNECT host:port` or an absolute `http://` URL",
        );
    };
    let Some((host, port)) = split_authority(&authority, default_port) else {
        return answer(&mut client, "400 Bad Request", "malformed host");
    };
    if !host_allowed(allowed, &host) {
        if let Ok(mut r) = refusals.lock() {
            r.push(Refusal {
                host: host.clone(),
                port,
                method: method.clone(),
            });
        }
        let body = format!(
            "dandori: {ENV_NETWORK_DOMAIN_REFUSED}: host `{host}` is not in planning.environment_setup.network.allowed_domains (allowed: {})\n",
            allowed.join(", ")
        );
        return answer(&mut client, "403 Forbidden", &body);
    }
    let Ok(mut upstream) = TcpStream::connect((host.as_str(), port)) else {
        return answer(
            &mut client,
            "502 Bad Gateway",
            &format!("dandori: cannot connect to {host}:{port}\n"),
        );
    };
    let _ = client.set_read_timeout(None);
    match rest_target {
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                .is_err()
            {
                return;
            }
            // Bytes the client sent after the CONNECT head belong to the tunnel.
            if end < head.len() && upstream.write_all(&head[end..]).is_err() {
                return;
            }
        }
        Some(path) => {
            // The request line in origin form; the rest of the head as sent.
            let first_line_end = text.find("\r\n").unwrap_or(text.len());
            let version = text[..first_line_end]
                .rsplit(' ')
                .next()
                .unwrap_or("HTTP/1.1");
            let mut out = format!("{method} {path} {version}").into_bytes();
            out.extend_from_slice(&head[first_line_end..]);
            if upstream.write_all(&out).is_err() {
                return;
            }
        }
    }
    pipe(client, upstream);
}

/// Copies both ways until either side closes.
fn pipe(client: TcpStream, upstream: TcpStream) {
    let (Ok(mut c2), Ok(mut u2)) = (client.try_clone(), upstream.try_clone()) else {
        return;
    };
    let (mut c1, mut u1) = (client, upstream);
    let t = std::thread::spawn(move || {
        let _ = std::io::copy(&mut c2, &mut u2);
        let _ = u2.shutdown(Shutdown::Write);
    });
    let _ = std::io::copy(&mut u1, &mut c1);
    let _ = c1.shutdown(Shutdown::Write);
    let _ = t.join();
}

fn answer(client: &mut TcpStream, status: &str, body: &str) {
    let reason = if status.starts_with("403") {
        format!("X-Dandori-Reason: {ENV_NETWORK_DOMAIN_REFUSED}\r\n")
    } else {
        String::new()
    };
    let _ = write!(
        client,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\n{reason}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
