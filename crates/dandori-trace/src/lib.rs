//! The conversation trace (`trace.jsonl`): one JSON event per line, in the shape of
//! seed 003 §7.2 (`event`, `timestamp`, `session_id`, `task_id`, `data`) plus the
//! event's seed 003 §7.1 `visibility` (`summary` | `full`, [`events::visibility_of`]).
//! Every event passes through the secret masker before it reaches the disk.

pub mod contract_codes;
pub mod encodings;
pub mod events;
pub mod mask;
pub mod normalise;
pub mod secret_names;
pub mod secret_scan;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

pub use mask::Masker;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error("trace {path}: line {line}: {source}")]
    Parse {
        path: PathBuf,
        line: usize,
        #[source]
        source: serde_json::Error,
    },
}

/// Sees every event after it is masked and written, with the path of its trace.
/// The binary installs one (the human log and the OpenTelemetry export); without
/// one, emitting costs nothing more than the write.
pub type Observer = Box<dyn Fn(&Path, &TraceEvent) + Send + Sync>;

static OBSERVER: OnceLock<Observer> = OnceLock::new();

/// Installs the process-wide observer. Only the first call counts; returns false
/// when one was already installed.
pub fn set_observer(observer: Observer) -> bool {
    OBSERVER.set(observer).is_ok()
}

/// One line of `trace.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    pub event: String,
    pub timestamp: String,
    pub session_id: String,
    pub task_id: String,
    /// Seed 003 §7.1 `Visibility`. Written on every event; a trace written
    /// before it existed reads back as its event's visibility
    /// ([`TraceEvent::visibility`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub visibility: Option<events::Visibility>,
    #[serde(default)]
    pub data: serde_json::Value,
}

impl TraceEvent {
    /// The event's visibility: as recorded, else by its name.
    pub fn visibility(&self) -> events::Visibility {
        self.visibility
            .unwrap_or_else(|| events::visibility_of(&self.event))
    }
}

/// Appends masked events to a `trace.jsonl`. Cheap to share behind `&`.
#[derive(Debug)]
pub struct TraceWriter {
    path: PathBuf,
    session_id: String,
    task_id: String,
    masker: Masker,
    file: Mutex<File>,
}

impl TraceWriter {
    /// Opens (creating or appending to) the trace at `path`.
    pub fn open(
        path: impl AsRef<Path>,
        session_id: impl Into<String>,
        task_id: impl Into<String>,
        masker: Masker,
    ) -> Result<Self, TraceError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent() {
            dandori_fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| dandori_fs::FsError::new("opening trace", &path, e))?;
        Ok(TraceWriter {
            path,
            session_id: session_id.into(),
            task_id: task_id.into(),
            masker,
            file: Mutex::new(file),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Records `event` with `data`, masked, stamped now.
    pub fn emit(&self, event: &str, data: serde_json::Value) -> Result<(), TraceError> {
        let ev = TraceEvent {
            event: event.to_string(),
            timestamp: now_rfc3339(),
            session_id: self.session_id.clone(),
            task_id: self.task_id.clone(),
            visibility: Some(events::visibility_of(event)),
            data: self.masker.mask_value(data),
        };
        let mut line = serde_json::to_string(&ev).map_err(|e| {
            dandori_fs::FsError::new(
                "serialising event for",
                &self.path,
                std::io::Error::other(e),
            )
        })?;
        line.push('\n');
        // A poisoned lock only means another thread panicked mid-write; the file
        // handle itself is still usable.
        let mut f = match self.file.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f.write_all(line.as_bytes())
            .and_then(|()| f.flush())
            .map_err(|e| dandori_fs::FsError::new("appending to trace", &self.path, e))?;
        drop(f);
        if let Some(observe) = OBSERVER.get() {
            observe(&self.path, &ev);
        }
        Ok(())
    }
}

/// Reads every event of a trace file. A torn last line (a kill mid-write) is ignored.
pub fn read_trace(path: impl AsRef<Path>) -> Result<Vec<TraceEvent>, TraceError> {
    let path = path.as_ref();
    let text = dandori_fs::read_to_string(path)?;
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(ev) => out.push(ev),
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(source) => {
                return Err(TraceError::Parse {
                    path: path.to_path_buf(),
                    line: i + 1,
                    source,
                });
            }
        }
    }
    Ok(out)
}

/// Now, as RFC 3339 UTC with milliseconds (`2026-01-23T10:00:00.000Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
