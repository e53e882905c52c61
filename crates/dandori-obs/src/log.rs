//! The human log of seed 000 §16.4.1, derived from the (masked) trace events:
//!
//! ```text
//! [2024-01-15 10:30:00] [INFO] [Planning] Task started: issue-123
//! [2024-01-15 10:35:01] [WARN] [Reflection] Action failed: File not found
//! ```
//!
//! Times are UTC. Lines below `planning.logging.level` (DEBUG / INFO / WARNING /
//! ERROR) are dropped. The binary appends them to `dandori.log` next to
//! `trace.jsonl`.

use std::io::Write;
use std::path::Path;

use dandori_config::planning::LogLevel;
use dandori_trace::TraceEvent;
use serde_json::Value;

/// Name of the human log in a run directory.
pub const LOG_FILE: &str = "dandori.log";

fn rank(l: LogLevel) -> u8 {
    match l {
        LogLevel::Debug => 0,
        LogLevel::Info => 1,
        LogLevel::Warning => 2,
        LogLevel::Error => 3,
    }
}

/// The label of a level as the seed prints it.
pub fn label(l: LogLevel) -> &'static str {
    match l {
        LogLevel::Debug => "DEBUG",
        LogLevel::Info => "INFO",
        LogLevel::Warning => "WARN",
        LogLevel::Error => "ERROR",
    }
}

/// One log line before formatting.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub level: LogLevel,
    pub category: &'static str,
    pub message: String,
}

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

fn n(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn arr_len(v: &Value, k: &str) -> usize {
    v.get(k).and_then(Value::as_array).map_or(0, Vec::len)
}

fn e(level: LogLevel, category: &'static str, message: String) -> Entry {
    Entry {
        level,
        category,
        message,
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let mut out: String = line.chars().take(200).collect();
    if line.chars().count() > 200 {
        out.push('…');
    }
    out
}

/// What an event says in the human log (none, one or several lines).
pub fn entries(ev: &TraceEvent) -> Vec<Entry> {
    use LogLevel::{Debug, Error, Info, Warning};
    let d = &ev.data;
    match ev.event.as_str() {
        "PLANNING_START" => vec![e(Info, "Planning", format!("Task started: {}", ev.task_id))],
        "SIZE_ESTIMATION" => vec![e(
            Info,
            "Planning",
            format!(
                "Goal understanding completed: size {} (about {} tokens, {} files)",
                s(d, "size_category"),
                n(d, "estimated_tokens"),
                n(d, "estimated_file_count")
            ),
        )],
        "CHUNKING_DECISION" => vec![e(
            Debug,
            "Planning",
            format!(
                "Chunking decision: {} ({} chunk(s))",
                if d.get("should_chunk") == Some(&Value::Bool(true)) {
                    "split"
                } else {
                    "single"
                },
                n(d, "chunk_count")
            ),
        )],
        "DEPENDENCY_ANALYSIS" => vec![e(
            Info,
            "Planning",
            format!("Task decomposition: {} subtasks", arr_len(d, "subtasks")),
        )],
        "EXECUTION_PLAN" => vec![e(
            Info,
            "Planning",
            format!(
                "Action plan generated: {} execution group(s), {} mode",
                arr_len(d, "execution_groups"),
                s(d, "execution_mode")
            ),
        )],
        "PLANNING_END" => vec![e(
            Info,
            "Planning",
            format!(
                "Planning completed: {} step(s), {} acceptance criteria ({} ms)",
                n(d, "step_count"),
                n(d, "acceptance_criteria"),
                n(d, "duration_ms")
            ),
        )],
        "PLANNING_SKIPPED"
        | "LLM_PLANNING_FAILED"
        | "PLANNING_UNCLEAR_GOAL"
        | "DECOMPOSITION_FAILED" => vec![e(
            Warning,
            "Planning",
            format!(
                "{}: {}",
                ev.event.to_ascii_lowercase().replace('_', " "),
                first_line(
                    d.get("reason")
                        .or_else(|| d.get("error"))
                        .or_else(|| d.get("message"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )
            ),
        )],
        "LLM_CALL" => {
            let usage = d.get("usage").cloned().unwrap_or(Value::Null);
            let ok = d.get("ok") != Some(&Value::Bool(false));
            vec![e(
                if ok { Debug } else { Warning },
                "LLM",
                format!(
                    "{} call to {}: {} in / {} out tokens ({} ms){}",
                    s(d, "purpose"),
                    s(d, "model"),
                    n(&usage, "prompt_tokens"),
                    n(&usage, "completion_tokens"),
                    n(d, "duration_ms"),
                    if ok {
                        String::new()
                    } else {
                        format!(": {}", first_line(s(d, "error")))
                    }
                ),
            )]
        }
        "TOOL_CALL" => {
            if d.get("ok") == Some(&Value::Bool(false)) {
                vec![e(
                    Warning,
                    "Execution",
                    format!(
                        "Action failed: {} ({})",
                        s(d, "tool"),
                        d.get("reason_code")
                            .and_then(Value::as_str)
                            .unwrap_or("error")
                    ),
                )]
            } else {
                vec![e(
                    Debug,
                    "Execution",
                    format!("Action: {} ({} ms)", s(d, "tool"), n(d, "duration_ms")),
                )]
            }
        }
        "EXECUTION_START" | "EXECUTION_RESUME" => vec![e(
            Info,
            "Execution",
            format!(
                "Run {}: {} step(s)",
                if ev.event == "EXECUTION_START" {
                    "started"
                } else {
                    "resumed"
                },
                n(d, "steps")
            ),
        )],
        "GATE_CHECK" => {
            let passed = d.get("passed") != Some(&Value::Bool(false));
            vec![e(
                if passed { Debug } else { Error },
                "Execution",
                format!(
                    "Gate {}: {}",
                    s(d, "gate"),
                    if passed { "passed" } else { "failed" }
                ),
            )]
        }
        "ENVIRONMENT_SETUP" => {
            let ok = matches!(s(d, "status"), "success" | "skipped" | "reused" | "");
            vec![e(
                if ok { Info } else { Warning },
                "Environment",
                format!(
                    "Environment setup {}: {}",
                    s(d, "status"),
                    first_line(s(d, "message"))
                ),
            )]
        }
        "STEP_START" => vec![e(
            Info,
            "Execution",
            format!(
                "Step started: {} (attempt {})",
                s(d, "step_id"),
                n(d, "attempt")
            ),
        )],
        "STEP_ACTION" => {
            let ok = d.get("ok") != Some(&Value::Bool(false));
            vec![e(
                if ok { Info } else { Warning },
                "Execution",
                format!(
                    "{} {}: {}",
                    if ok {
                        "Action completed"
                    } else {
                        "Action failed"
                    },
                    s(d, "step_id"),
                    first_line(s(d, "summary"))
                ),
            )]
        }
        "UNIT_TEST" => {
            let ok = d.get("exit_code").and_then(Value::as_i64) == Some(0);
            vec![e(
                if ok { Info } else { Warning },
                "Execution",
                format!(
                    "Unit test {}: {} ({} ms)",
                    if ok { "passed" } else { "failed" },
                    s(d, "command"),
                    n(d, "duration_ms")
                ),
            )]
        }
        "STEP_END" => {
            let status = s(d, "status");
            let level = match status {
                "done" => Info,
                "failed" => Error,
                _ => Warning,
            };
            let tail = if status == "done" {
                d.get("commit")
                    .and_then(Value::as_str)
                    .map(|c| format!(" (commit {})", &c[..c.len().min(10)]))
                    .unwrap_or_default()
            } else {
                format!(
                    " ({}: {})",
                    d.get("reason_code").and_then(Value::as_str).unwrap_or("-"),
                    first_line(s(d, "message"))
                )
            };
            vec![e(
                level,
                "Execution",
                format!("Step {status}: {}{tail}", s(d, "step_id")),
            )]
        }
        "REFLECTION" => {
            let r = d.get("reflection").unwrap_or(d);
            let action = r
                .get("action_evaluated")
                .or_else(|| r.get("action_id"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut out = vec![e(
                Info,
                "Reflection",
                format!("Evaluating action: {action}"),
            )];
            if matches!(s(r, "status"), "failure" | "partial_success") {
                out.push(e(
                    Warning,
                    "Reflection",
                    format!("Action failed: {}", first_line(s(r, "evaluation"))),
                ));
            }
            for issue in r
                .get("issues_identified")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let text = issue
                    .as_str()
                    .map(str::to_string)
                    .or_else(|| {
                        issue
                            .get("description")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    })
                    .unwrap_or_else(|| issue.to_string());
                out.push(e(
                    Info,
                    "Reflection",
                    format!("Issue identified: {}", first_line(&text)),
                ));
            }
            if r.get("plan_revision_needed") == Some(&Value::Bool(true)) {
                out.push(e(Info, "Reflection", "Plan revision suggested".to_string()));
            }
            out
        }
        "COVERAGE_EVALUATION" => vec![e(
            Info,
            "Execution",
            format!(
                "Coverage: {:.0}% of the acceptance criteria",
                d.pointer("/result/overall_coverage")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0)
                    * 100.0
            ),
        )],
        "EXECUTION_END" => {
            let status = s(d, "status");
            vec![e(
                if status == "completed" { Info } else { Error },
                "Execution",
                format!("Run {status}: {}", first_line(s(d, "comment"))),
            )]
        }
        "CONFIG_WARNING"
        | "STEP_WARNING"
        | "SECRET_DETECTED"
        | "STEP_TOO_LARGE"
        | "EARLY_TERMINATION"
        | "GIT_CONFIG_TAMPERED" => vec![e(
            Warning,
            "Execution",
            format!(
                "{}: {}",
                ev.event.to_ascii_lowercase().replace('_', " "),
                first_line(
                    d.get("message")
                        .or_else(|| d.get("reason"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )
            ),
        )],
        other => vec![e(Debug, "Trace", other.to_string())],
    }
}

/// `[YYYY-MM-DD HH:MM:SS] [LEVEL] [Category] message` (the time of the event, UTC).
pub fn format_line(timestamp: &str, entry: &Entry) -> String {
    let when = chrono::DateTime::parse_from_rfc3339(timestamp)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%d %H:%M:%S")
                .to_string()
        })
        .unwrap_or_else(|_| timestamp.to_string());
    // One event, one line: a message never breaks the format.
    let message = entry.message.replace(['\n', '\r'], " ");
    format!(
        "[{when}] [{}] [{}] {message}",
        label(entry.level),
        entry.category
    )
}

/// The lines of `ev` at or above `level`.
pub fn lines(ev: &TraceEvent, level: LogLevel) -> Vec<String> {
    entries(ev)
        .iter()
        .filter(|x| rank(x.level) >= rank(level))
        .map(|x| format_line(&ev.timestamp, x))
        .collect()
}

/// Appends the lines of `ev` to the `dandori.log` beside `trace_path`. Errors are
/// swallowed: the human log never stops a run (the trace is the record).
pub fn append(trace_path: &Path, ev: &TraceEvent, level: LogLevel) {
    let lines = lines(ev, level);
    if lines.is_empty() {
        return;
    }
    let Some(dir) = trace_path.parent() else {
        return;
    };
    let mut text = lines.join("\n");
    text.push('\n');
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(LOG_FILE))
    {
        let _ = f.write_all(text.as_bytes());
    }
}
