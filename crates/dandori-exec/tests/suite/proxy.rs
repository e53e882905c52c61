//! The setup proxy of `network.allowed_domains` (seed 002 §11.3): real HTTP
//! through it, to an origin server on 127.0.0.1.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};

use dandori_exec::proxy::{DomainProxy, ENV_NETWORK_DOMAIN_REFUSED, Refusal, host_allowed};

/// An origin that answers every request `200 hello` and says which request
/// line it got.
fn origin() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let mut s = s.unwrap();
            let mut buf = [0u8; 4096];
            let n = s.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let first = head.lines().next().unwrap_or("").to_string();
            let body = format!("hello {first}");
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    port
}

fn send(proxy: &DomainProxy, request: &str) -> String {
    let addr = proxy.url().trim_start_matches("http://").to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn allowed_hosts_are_forwarded_and_tunnelled_the_rest_refused_by_name() {
    let port = origin();
    let proxy = DomainProxy::start(vec!["localhost".into()]).unwrap();

    // Plain HTTP, absolute form: forwarded in origin form.
    let ok = send(
        &proxy,
        &format!("GET http://localhost:{port}/simple/x/ HTTP/1.1\r\nHost: localhost\r\n\r\n"),
    );
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    assert!(ok.contains("hello GET /simple/x/ HTTP/1.1"), "{ok}");

    // CONNECT: a tunnel, then the bytes go through as they are.
    let tunnel = send(
        &proxy,
        &format!(
            "CONNECT localhost:{port} HTTP/1.1\r\nHost: localhost:{port}\r\n\r\nGET /t HTTP/1.1\r\nHost: x\r\n\r\n"
        ),
    );
    assert!(
        tunnel.starts_with("HTTP/1.1 200 Connection Established\r\n\r\nHTTP/1.1 200 OK"),
        "{tunnel}"
    );
    assert!(tunnel.contains("hello GET /t HTTP/1.1"), "{tunnel}");

    // Anything else: 403 with the reason code and the host.
    let refused = send(
        &proxy,
        "CONNECT pypi.evil.example:443 HTTP/1.1\r\nHost: pypi.evil.example:443\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 403 Forbidden"), "{refused}");
    assert!(
        refused.contains(ENV_NETWORK_DOMAIN_REFUSED) && refused.contains("`pypi.evil.example`"),
        "{refused}"
    );
    let plain = send(
        &proxy,
        "GET http://other.example/x HTTP/1.1\r\nHost: other.example\r\n\r\n",
    );
    assert!(plain.starts_with("HTTP/1.1 403"), "{plain}");
    assert_eq!(
        proxy.refusals(),
        vec![
            Refusal {
                host: "pypi.evil.example".into(),
                port: 443,
                method: "CONNECT".into()
            },
            Refusal {
                host: "other.example".into(),
                port: 80,
                method: "GET".into()
            }
        ]
    );
}

#[test]
fn a_domain_allows_itself_and_its_subdomains_only() {
    let allowed = vec!["pythonhosted.org".to_string(), "*.npmjs.org".to_string()];
    assert!(host_allowed(&allowed, "files.pythonhosted.org"));
    assert!(host_allowed(&allowed, "PythonHosted.org."));
    assert!(host_allowed(&allowed, "registry.npmjs.org"));
    assert!(host_allowed(&allowed, "npmjs.org"));
    assert!(!host_allowed(&allowed, "evilpythonhosted.org"));
    assert!(!host_allowed(&allowed, "pythonhosted.org.evil.example"));
    assert!(!host_allowed(&[], "pypi.org"));
}

#[test]
fn a_malformed_request_is_a_bad_request() {
    let proxy = DomainProxy::start(vec!["localhost".into()]).unwrap();
    let out = send(&proxy, "GET /relative HTTP/1.1\r\n\r\n");
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    assert!(proxy.refusals().is_empty());
}
