//! Progress of the model calls in flight: a line as a call starts, then the
//! elapsed time and the tokens streamed at a steady interval, then how it ended.
//! Every [`crate::Client`] of the process reports to one observer, installed by
//! the binary ([`set_observer`]): planning, size estimation, reflection and the
//! executor's tool loop all wait on the same client code, so none of them can be
//! silent for minutes.

use std::sync::{Arc, OnceLock, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::types::{CallOutcome, Phase};

/// What a call is doing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum CallState {
    /// Sent (attempt 1) or sent again after a retry.
    Started { attempt: u32 },
    /// Still waiting; `first_token` says whether the model has begun to answer
    /// (before it, the server is reading the prompt).
    Waiting { first_token: bool },
    Finished {
        outcome: CallOutcome,
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// One progress report of one call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallProgress {
    /// Numbers the calls of this process, so interleaved reports can be told apart.
    pub call: u64,
    pub provider: String,
    pub model: String,
    pub phase: Phase,
    pub purpose: &'static str,
    pub elapsed_ms: u64,
    /// Tokens of the answer so far: the server's count once reported, else
    /// estimated from the streamed text.
    pub tokens_streamed: u64,
    #[serde(flatten)]
    pub state: CallState,
}

type Observer = Arc<dyn Fn(&CallProgress) + Send + Sync>;

struct Installed {
    observer: Observer,
    interval: Duration,
}

fn slot() -> &'static RwLock<Option<Installed>> {
    static SLOT: OnceLock<RwLock<Option<Installed>>> = OnceLock::new();
    SLOT.get_or_init(|| RwLock::new(None))
}

/// The interval of `Waiting` reports when none is given.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// Install the process-wide observer of call progress (replacing any other);
/// `Waiting` reports come every `interval`.
pub fn set_observer(interval: Duration, observer: impl Fn(&CallProgress) + Send + Sync + 'static) {
    let installed = Installed {
        observer: Arc::new(observer),
        interval: interval.max(Duration::from_millis(10)),
    };
    match slot().write() {
        Ok(mut guard) => *guard = Some(installed),
        Err(poisoned) => *poisoned.into_inner() = Some(installed),
    }
}

/// The observer and its interval, when one is installed.
pub(crate) fn observer() -> Option<(Observer, Duration)> {
    let guard = match slot().read() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard.as_ref().map(|i| (i.observer.clone(), i.interval))
}

fn latest_slot() -> &'static std::sync::Mutex<Option<CallProgress>> {
    static LATEST: OnceLock<std::sync::Mutex<Option<CallProgress>>> = OnceLock::new();
    LATEST.get_or_init(|| std::sync::Mutex::new(None))
}

/// Send a report to the observer, and keep it as the latest.
pub(crate) fn publish(report: &CallProgress) {
    match latest_slot().lock() {
        Ok(mut g) => *g = Some(report.clone()),
        Err(poisoned) => *poisoned.into_inner() = Some(report.clone()),
    }
    if let Some((observer, _)) = observer() {
        observer(report);
    }
}

/// The latest report of a call still in flight, for a caller that has its own
/// channel (the MCP server's `notifications/progress`).
pub fn latest() -> Option<CallProgress> {
    let guard = match latest_slot().lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    guard
        .as_ref()
        .filter(|p| !matches!(p.state, CallState::Finished { .. }))
        .cloned()
}

pub(crate) fn next_call_number() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// A report as one line for a terminal: `model: planning (llm:local/m) 12s, 40
/// tokens streamed`.
pub fn render_line(p: &CallProgress) -> String {
    let secs = p.elapsed_ms as f64 / 1000.0;
    let who = format!("{}/{}", p.provider, p.model);
    match &p.state {
        CallState::Started { attempt: 1 } => {
            format!(
                "model: {} call to {who} sent, waiting for the answer",
                p.purpose
            )
        }
        CallState::Started { attempt } => {
            format!(
                "model: {} call to {who} sent again (attempt {attempt}) after {secs:.0}s",
                p.purpose
            )
        }
        CallState::Waiting { first_token: false } => format!(
            "model: {} on {who}: {secs:.0}s, reading the prompt (no token yet)",
            p.purpose
        ),
        CallState::Waiting { first_token: true } => format!(
            "model: {} on {who}: {secs:.0}s, {} tokens streamed",
            p.purpose, p.tokens_streamed
        ),
        CallState::Finished {
            outcome: CallOutcome::Ok,
            ..
        } => format!(
            "model: {} on {who} answered in {secs:.1}s ({} tokens)",
            p.purpose, p.tokens_streamed
        ),
        CallState::Finished { outcome, error } => format!(
            "model: {} on {who} {} after {secs:.1}s: {}",
            p.purpose,
            outcome.as_str(),
            error.as_deref().unwrap_or("no answer")
        ),
    }
}
