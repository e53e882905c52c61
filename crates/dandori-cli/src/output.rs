//! The one output layer: everything the CLI prints goes through here, so `--json`
//! and quiet modes stay easy.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;

/// A line on stdout.
pub fn line(s: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{s}");
}

/// Bytes on stdout as they are (generated completion scripts, man pages).
pub fn raw(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(bytes);
}

/// Pretty JSON on stdout.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) {
    match serde_json::to_string_pretty(value) {
        Ok(s) => line(&s),
        Err(e) => error(&format!("could not serialise output: {e}")),
    }
}

/// A progress or warning line on stderr.
pub fn progress(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{s}");
}

/// An error on stderr.
pub fn error(s: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "error: {s}");
}
