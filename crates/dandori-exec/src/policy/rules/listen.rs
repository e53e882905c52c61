//! Listening addresses: a step may start a server for its tests, on this machine
//! only. A server bound to every interface (`0.0.0.0`, `::`) serves the worktree
//! and what the step wrote to whoever can reach the machine; Python's
//! `http.server` does that unless told `--bind`.
//!
//! Hostile and legitimate lines: class `listen_address` of
//! `tests/fixtures/policy/hostile.txt` and the `--host 127.0.0.1` lines of
//! `legitimate.txt`.

use super::{PolicyViolation, codes};

/// Options that take the address a server listens on, besides bare arguments.
const ADDRESS_OPTIONS: &[&str] = &[
    "--host",
    "--bind",
    "--listen",
    "--address",
    "--addr",
    "-b",
    "-a",
    "-H",
    "-S",
];

/// Refuses a listening address on every interface, wherever it appears in `args`
/// (`--host 0.0.0.0`, `--host=0.0.0.0`, `-b 0.0.0.0:8000`, `php -S [::]:80`), and
/// `python -m http.server` without a loopback `--bind`.
pub(crate) fn check_listen(stem: &str, args: &[String]) -> Result<(), PolicyViolation> {
    for (i, a) in args.iter().enumerate() {
        let value = match a.split_once('=') {
            Some((opt, v)) if ADDRESS_OPTIONS.contains(&opt) => v,
            _ => a.as_str(),
        };
        if all_interfaces(value) {
            let shown = match i.checked_sub(1).map(|p| args[p].as_str()) {
                Some(opt) if ADDRESS_OPTIONS.contains(&opt) => format!("{opt} {value}"),
                _ => a.clone(),
            };
            return Err(refusal(format!(
                "`{shown}` listens on every interface; bind 127.0.0.1"
            )));
        }
    }
    let http_server = stem.starts_with("python")
        && args
            .windows(2)
            .any(|w| w[0] == "-m" && matches!(w[1].as_str(), "http.server" | "SimpleHTTPServer"));
    if http_server {
        let bound = args.iter().enumerate().any(|(i, a)| {
            let value = match a.split_once('=') {
                Some(("--bind", v)) => Some(v),
                _ if matches!(a.as_str(), "--bind" | "-b") => args.get(i + 1).map(String::as_str),
                _ => None,
            };
            value.is_some_and(loopback_address)
        });
        if !bound {
            return Err(refusal(
                "`python -m http.server` listens on every interface unless given `--bind 127.0.0.1`"
                    .to_string(),
            ));
        }
    }
    Ok(())
}

fn refusal(message: String) -> PolicyViolation {
    PolicyViolation::new(codes::POLICY_LISTEN_ALL_INTERFACES, message)
        .with_rule("listen-all-interfaces")
}

/// `0.0.0.0`, `::`, `[::]`, `*:port`, each with an optional `:port`; a URL is a
/// client's, not a listener's.
fn all_interfaces(value: &str) -> bool {
    if value.contains("://") {
        return false;
    }
    let host = match value.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        // Bare IPv6: `::`, or `:::8080` with a port.
        None if value.starts_with("::") => match value.strip_prefix(":::") {
            Some(port) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => "::",
            _ => value,
        },
        None => value.split(':').next().unwrap_or(value),
    };
    matches!(host, "0.0.0.0" | "::") || (host == "*" && value.starts_with("*:"))
}

fn loopback_address(v: &str) -> bool {
    v == "localhost" || v == "::1" || v.starts_with("127.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses() {
        for v in ["0.0.0.0", "0.0.0.0:8000", "::", "[::]:80", "[::]", "*:8080"] {
            assert!(all_interfaces(v), "{v}");
        }
        for v in [
            "127.0.0.1",
            "127.0.0.1:8000",
            "localhost",
            "::1",
            "[::1]:80",
            "http://0.0.0.0:8000",
            "8000",
            "a:b",
            "*",
        ] {
            assert!(!all_interfaces(v), "{v}");
        }
    }
}
