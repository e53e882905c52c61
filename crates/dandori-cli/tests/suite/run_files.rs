//! Reading what a command left, shared by the suites that check runs and
//! forges: a command's output, JSON files, a run's trace, every file's text.

use std::path::Path;
use std::process::Output;

use serde_json::Value;

/// stdout and stderr of a command, for assertion messages.
pub(super) fn text(o: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The JSON a successful command printed.
pub(super) fn ok_json(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}\n{}",
        o.status.code(),
        text(o)
    );
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

pub(super) fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// Every event of the run's trace.jsonl.
pub(super) fn trace(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The trace's events named `name`.
pub(super) fn trace_events(run_dir: &Path, name: &str) -> Vec<Value> {
    trace(run_dir)
        .into_iter()
        .filter(|e| e["event"] == name)
        .collect()
}

/// Every file under `dir`, read as text where possible (to look for secrets).
pub(super) fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.push_str(&all_text(&p));
            } else {
                out.push_str(&String::from_utf8_lossy(
                    &std::fs::read(&p).unwrap_or_default(),
                ));
            }
        }
    }
    out
}
