//! The agent CLI invocation a kill cut short. When dandori itself is killed
//! (SIGKILL, a lost machine) while an agent CLI runs, nothing records the call:
//! its turns, tool calls and tokens would be missing from `trace.jsonl` and
//! `dandori metrics`. So before the CLI starts, a marker
//! (`logs/step.Sxx.agent-invocation.json`) names where its output begins in the
//! step's agent log; the invocation removes it when it ends, however it ends. The
//! next execution of the step (`dandori resume`) finds a marker left behind, reads
//! what the killed CLI streamed into the log, masks the log (the kill came before
//! its masking), and records the call as interrupted — as far as the stream
//! recorded it ([`Transcript::settle_unfinished`]) — before it invokes the CLI
//! again.

use std::path::{Path, PathBuf};

use dandori_config::AgentPreset;
use serde::{Deserialize, Serialize};

use super::agent_preset::Transcript;

/// Where an invocation's output begins, written before the CLI starts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    /// The agent log's length when the CLI started.
    offset: u64,
    started_at: String,
    /// The CLI resumed the step's session.
    resumed: bool,
}

/// The marker of a running invocation; [`Marker::end`] removes it.
pub struct Marker {
    path: PathBuf,
}

impl Marker {
    /// Written (durably: it must survive the kill it is for) before the CLI starts.
    pub fn begin(
        path: &Path,
        offset: u64,
        started_at: &str,
        resumed: bool,
    ) -> Result<Marker, dandori_fs::FsError> {
        let record = Record {
            offset,
            started_at: started_at.to_string(),
            resumed,
        };
        let text = serde_json::to_string(&record).unwrap_or_default() + "\n";
        dandori_fs::write_atomic(path, text)?;
        Ok(Marker {
            path: path.to_path_buf(),
        })
    }

    /// The invocation ended: its own record follows.
    pub fn end(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The call a killed invocation made, read back.
#[derive(Debug)]
pub struct Interrupted {
    pub transcript: Transcript,
    pub started_at: String,
    pub resumed: bool,
    /// From its start to the log's last write.
    pub duration_ms: u64,
}

/// The invocation the marker at `path` names, read from `log` (what it streamed
/// there from its offset on); the marker is removed and the log masked. `None`
/// without a marker, or when the CLI streamed nothing.
pub fn recover(
    path: &Path,
    log: &Path,
    preset: AgentPreset,
    workdir: &Path,
    masker: &dandori_trace::Masker,
) -> Option<Interrupted> {
    let text = std::fs::read_to_string(path).ok()?;
    let _ = std::fs::remove_file(path);
    let record: Record = serde_json::from_str(&text).ok()?;
    let bytes = std::fs::read(log).ok()?;
    let modified = std::fs::metadata(log).and_then(|m| m.modified()).ok();
    let output = String::from_utf8_lossy(bytes.get(record.offset as usize..)?).into_owned();
    let mut t = Transcript::default();
    for line in output.lines() {
        t.feed(preset, line, workdir);
    }
    t.settle_unfinished();
    // The kill came before the log was masked.
    let all = String::from_utf8_lossy(&bytes);
    let masked = masker.mask_str(&all);
    if masked != all {
        let _ = dandori_fs::write_atomic(log, masked);
    }
    if t.session_id.is_none() && t.num_turns.is_none() && t.tool_calls.is_empty() {
        return None;
    }
    let duration_ms = match (
        chrono::DateTime::parse_from_rfc3339(&record.started_at),
        modified,
    ) {
        (Ok(start), Some(end)) => {
            let end: chrono::DateTime<chrono::Utc> = end.into();
            (end - start.with_timezone(&chrono::Utc))
                .num_milliseconds()
                .max(0) as u64
        }
        _ => 0,
    };
    Some(Interrupted {
        transcript: t,
        started_at: record.started_at,
        resumed: record.resumed,
        duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_claude_invocation_is_read_back_from_its_stream() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("step.S01.agent.log");
        let marker = d.path().join("step.S01.agent-invocation.json");
        std::fs::write(&log, "earlier invocation\n").unwrap();
        let offset = std::fs::metadata(&log).unwrap().len();
        let m = Marker::begin(&marker, offset, "2026-01-01T00:00:00+00:00", true).unwrap();
        // What Claude Code streamed before the kill: two responses (the second
        // in two events), the last one's tool still running; no result event.
        let usage = |i: u64, o: u64| {
            format!(
                r#"{{"input_tokens":{i},"cache_creation_input_tokens":0,"cache_read_input_tokens":24000,"output_tokens":{o}}}"#
            )
        };
        let lines = [
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5"}"#
                .to_string(),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m1","usage":{},"content":[{{"type":"tool_use","name":"Read","input":{{"file_path":"a.py"}}}}]}}}}"#,
                usage(1200, 80)
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m2","usage":{},"content":[{{"type":"text","text":"next"}}]}}}}"#,
                usage(1300, 1)
            ),
            format!(
                r#"{{"type":"assistant","message":{{"id":"m2","usage":{},"content":[{{"type":"tool_use","name":"Bash","input":{{"command":"sleep 60"}}}}]}}}}"#,
                usage(1300, 90)
            ),
        ];
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        use std::io::Write as _;
        writeln!(f, "{}", lines.join("\n")).unwrap();
        drop(m); // killed: never ended
        let masker = dandori_trace::Masker::default();
        let r = recover(&marker, &log, AgentPreset::Claude, d.path(), &masker).unwrap();
        assert!(!marker.exists());
        assert!(r.resumed);
        let t = &r.transcript;
        assert_eq!(t.session_id.as_deref(), Some("s-1"));
        assert_eq!(t.num_turns, Some(2));
        assert_eq!(t.input_tokens, 1200 + 1300 + 2 * 24_000);
        assert_eq!(t.cache_read_tokens, 2 * 24_000);
        assert_eq!(t.output_tokens, 80 + 90);
        assert_eq!(t.tool_calls, ["Read a.py", "Bash sleep 60"]);
        assert!(!t.finished && t.cost_usd.is_none());
        // No marker: nothing to recover.
        assert!(recover(&marker, &log, AgentPreset::Claude, d.path(), &masker).is_none());
    }

    #[test]
    fn an_ended_invocation_leaves_nothing_to_recover() {
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("agent.log");
        let marker = d.path().join("marker.json");
        std::fs::write(&log, "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n").unwrap();
        Marker::begin(&marker, 0, "2026-01-01T00:00:00Z", false)
            .unwrap()
            .end();
        let masker = dandori_trace::Masker::default();
        assert!(recover(&marker, &log, AgentPreset::Codex, d.path(), &masker).is_none());
        // A Codex turn cut short: the turn it started, no tokens.
        Marker::begin(&marker, 0, "2026-01-01T00:00:00Z", false).unwrap();
        std::fs::write(
            &log,
            "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"turn.started\"}\n",
        )
        .unwrap();
        let r = recover(&marker, &log, AgentPreset::Codex, d.path(), &masker).unwrap();
        assert_eq!(r.transcript.num_turns, Some(1));
        assert_eq!(r.transcript.input_tokens, 0);
    }
}
