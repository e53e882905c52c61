//! The hand-off executor: the MCP client is the executor of a dandori run. The
//! runner runs exactly as with `--executor command` (gates, environment, one git
//! worktree per step, diff size, unit commands, autofix, commits with trailers,
//! stage.json); where the command executor would start an agent process, this one
//! posts the step on a [`Board`] and waits until the client answers `done` or
//! `failed` through the `step_update` tool.
//!
//! The step's `limits.timeout_sec` is the time the client has to answer once it
//! has taken the step (read it with the `step` tool or claimed it with
//! `step_update started`). A step not taken yet waits while the client works on
//! others: it times out only when the client has made no call on the run for
//! `timeout_sec` (a client that went away), never because it queued behind
//! other steps — `next` hands out several at once, and a step it offered must
//! still be there when the client reads it.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dandori_runner::RunnerError;
use dandori_runner::executor::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use dandori_runner::reason as run_reason;
use serde_json::Value;

/// The client's answer for a handed-off step.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Done { summary: String },
    Failed { message: String },
}

/// A step (or a fix attempt of it) waiting for the client.
#[derive(Debug)]
pub struct Handoff {
    pub step_id: String,
    /// 1 for the first hand-off of the step in this run, +1 per fix attempt.
    pub attempt: u32,
    pub prompt: String,
    pub workdir: PathBuf,
    pub prompt_file: PathBuf,
    /// `step_update started` was called.
    pub started: bool,
    /// When the executor posted it.
    posted: Instant,
    /// When the client took it (`step`, `step_update started`): its timeout runs
    /// from here.
    taken: Option<Instant>,
    answer: mpsc::Sender<Answer>,
}

/// How a run driven through the board ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// The completion record (`dandori run --json`).
    Completed(Value),
    /// The run stopped before or between steps.
    Error { code: String, message: String },
}

#[derive(Debug, Default)]
struct State {
    pending: BTreeMap<String, Handoff>,
    attempts: BTreeMap<String, u32>,
    ended: Option<Ended>,
    /// Tool calls on the run in progress.
    calls: usize,
    /// When the last tool call on the run ended.
    last_contact: Option<Instant>,
}

/// How often a step nobody took is looked at while the client is calling.
const RECHECK: Duration = Duration::from_secs(1);

impl State {
    /// [`Board::deadline`] under the lock.
    fn deadline(&self, step_id: &str, attempt: u32, timeout: Duration) -> Option<Instant> {
        let h = self.pending.get(step_id).filter(|h| h.attempt == attempt)?;
        let since = match h.taken {
            Some(t) => t,
            // The client is calling: looked at again shortly, and the silence
            // counts from the end of its last call.
            None if self.calls > 0 => return Some(Instant::now() + timeout.min(RECHECK)),
            None => self.last_contact.map_or(h.posted, |c| c.max(h.posted)),
        };
        Some(since + timeout)
    }
}

/// Steps waiting for the client, shared by the executor (runner thread) and the
/// tools (server tasks).
#[derive(Debug, Default)]
pub struct Board {
    state: Mutex<State>,
    changed: Condvar,
}

impl Board {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A poisoned lock only means a thread panicked while holding it; the map
        // itself stays consistent (every update is a single insert or remove).
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Waits until `ready` holds (checked under the lock) or `timeout` passes.
    fn wait_until(&self, timeout: Duration, mut ready: impl FnMut(&State) -> bool) {
        let deadline = Instant::now() + timeout;
        let mut g = self.lock();
        while !ready(&g) {
            let now = Instant::now();
            if now >= deadline {
                return;
            }
            g = match self.changed.wait_timeout(g, deadline - now) {
                Ok((g, _)) => g,
                Err(p) => p.into_inner().0,
            };
        }
    }

    fn notify(&self) {
        self.changed.notify_all();
    }

    /// Records how the run ended and wakes every waiter.
    pub fn end(&self, ended: Ended) {
        self.lock().ended = Some(ended);
        self.notify();
    }

    pub fn ended(&self) -> Option<Ended> {
        self.lock().ended.clone()
    }

    /// The steps waiting now: (step_id, attempt, workdir, started).
    pub fn pending(&self) -> Vec<(String, u32, PathBuf, bool)> {
        self.lock()
            .pending
            .values()
            .map(|h| (h.step_id.clone(), h.attempt, h.workdir.clone(), h.started))
            .collect()
    }

    /// The prompt and workdir of a waiting step.
    pub fn handoff(&self, step_id: &str) -> Option<(u32, String, PathBuf)> {
        self.lock()
            .pending
            .get(step_id)
            .map(|h| (h.attempt, h.prompt.clone(), h.workdir.clone()))
    }

    /// The prompt and workdir of a waiting step, which the client takes now: its
    /// timeout starts (once per hand-off).
    pub fn take(&self, step_id: &str) -> Option<(u32, String, PathBuf)> {
        let mut s = self.lock();
        let h = s.pending.get_mut(step_id)?;
        h.taken.get_or_insert_with(Instant::now);
        Some((h.attempt, h.prompt.clone(), h.workdir.clone()))
    }

    /// Records a tool call on the run for as long as the guard lives: while the
    /// client calls, the steps it has not taken yet do not time out.
    pub fn contact(&self) -> Contact<'_> {
        self.lock().calls += 1;
        Contact { board: self }
    }

    /// When the hand-off `attempt` of `step_id` times out: `timeout` after the
    /// client took it, else after the client's last call on the run (or the
    /// posting, if later); None when it no longer waits (answered).
    fn deadline(&self, step_id: &str, attempt: u32, timeout: Duration) -> Option<Instant> {
        self.lock().deadline(step_id, attempt, timeout)
    }

    /// Withdraws the hand-off when its deadline has passed; false when it moved
    /// later or the client answered in the meantime.
    fn expire(&self, step_id: &str, attempt: u32, timeout: Duration) -> bool {
        // Checked and removed under one lock, so an answer is never lost: either
        // the client's `answer` finds the step gone, or this finds it answered.
        let mut s = self.lock();
        let due = s
            .deadline(step_id, attempt, timeout)
            .is_some_and(|d| d <= Instant::now());
        if due {
            s.pending.remove(step_id);
            drop(s);
            self.notify();
        }
        due
    }

    /// Waits up to `timeout` for a step that nobody has started, or the end.
    pub fn wait_ready(&self, timeout: Duration) {
        self.wait_until(timeout, |s| {
            s.ended.is_some() || s.pending.values().any(|h| !h.started)
        });
    }

    /// Marks a waiting step as started (and taken). False when it is not waiting.
    pub fn start(&self, step_id: &str) -> bool {
        let found = match self.lock().pending.get_mut(step_id) {
            Some(h) => {
                h.started = true;
                h.taken.get_or_insert_with(Instant::now);
                true
            }
            None => false,
        };
        self.notify();
        found
    }

    /// Answers a waiting step; returns its attempt, or None when it is not waiting.
    pub fn answer(&self, step_id: &str, answer: Answer) -> Option<u32> {
        let h = self.lock().pending.remove(step_id)?;
        // The runner thread may have given up (timeout); then the step is over.
        let _ = h.answer.send(answer);
        self.notify();
        Some(h.attempt)
    }

    /// Waits until `step_id` is handed off again after `attempt` (a fix attempt),
    /// the run ends, or `timeout` passes; `done` is polled too (stage.json).
    pub fn wait_after(
        &self,
        step_id: &str,
        attempt: u32,
        timeout: Duration,
        mut done: impl FnMut() -> bool,
    ) -> Option<u32> {
        let deadline = Instant::now() + timeout;
        loop {
            let slice =
                Duration::from_millis(20).min(deadline.saturating_duration_since(Instant::now()));
            let mut again = None;
            self.wait_until(slice, |s| {
                again = s
                    .pending
                    .get(step_id)
                    .filter(|h| h.attempt > attempt)
                    .map(|h| h.attempt);
                again.is_some() || s.ended.is_some()
            });
            if again.is_some() || self.ended().is_some() || done() || Instant::now() >= deadline {
                return again;
            }
        }
    }
}

/// A tool call in progress on a run ([`Board::contact`]).
pub struct Contact<'a> {
    board: &'a Board,
}

impl Drop for Contact<'_> {
    fn drop(&mut self) {
        let mut s = self.board.lock();
        s.calls = s.calls.saturating_sub(1);
        s.last_contact = Some(Instant::now());
    }
}

/// The executor that hands each step to the MCP client.
#[derive(Debug, Clone)]
pub struct HandoffExecutor {
    pub board: std::sync::Arc<Board>,
}

impl Executor for HandoffExecutor {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        // The prompt file exists as with the command executor (evidence, resume).
        dandori_fs::write_atomic(req.prompt_file, req.prompt)?;
        let (tx, rx) = mpsc::channel();
        let attempt = {
            let mut s = self.board.lock();
            let n = s.attempts.entry(req.step_id.to_string()).or_insert(0);
            *n += 1;
            let attempt = *n;
            s.pending.insert(
                req.step_id.to_string(),
                Handoff {
                    step_id: req.step_id.to_string(),
                    attempt,
                    prompt: req.prompt.to_string(),
                    workdir: req.workdir.to_path_buf(),
                    prompt_file: req.prompt_file.to_path_buf(),
                    started: false,
                    posted: Instant::now(),
                    taken: None,
                    answer: tx,
                },
            );
            attempt
        };
        self.board.notify();
        let answer = loop {
            let Some(deadline) = self.board.deadline(req.step_id, attempt, req.timeout) else {
                // Answered: the answer is on its way.
                break rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected);
            };
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    // The deadline moves later while the client calls or takes
                    // the step; only a deadline that still holds ends the wait.
                    if self.board.expire(req.step_id, attempt, req.timeout) {
                        break Err(mpsc::RecvTimeoutError::Timeout);
                    }
                }
                other => break other,
            }
        };
        // Whatever happened, the step no longer waits for this hand-off.
        {
            let mut s = self.board.lock();
            if s.pending
                .get(req.step_id)
                .is_some_and(|h| h.attempt == attempt)
            {
                s.pending.remove(req.step_id);
            }
        }
        self.board.notify();
        let (outcome, summary) = match answer {
            Ok(Answer::Done { summary }) => (ExecOutcome::Completed, summary),
            Ok(Answer::Failed { message }) => (
                ExecOutcome::Failed {
                    reason_code: run_reason::AGENT_FAILED,
                    message: message.clone(),
                },
                message,
            ),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let message = format!(
                    "the MCP client did not answer within {} s (limits.timeout_sec)",
                    req.timeout.as_secs()
                );
                (
                    ExecOutcome::Failed {
                        reason_code: run_reason::AGENT_TIMEOUT,
                        message: message.clone(),
                    },
                    message,
                )
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                let message = "the MCP client went away".to_string();
                (
                    ExecOutcome::Failed {
                        reason_code: run_reason::AGENT_FAILED,
                        message: message.clone(),
                    },
                    message,
                )
            }
        };
        let summary = req.masker.mask_str(&summary);
        let _ = append_log(req, attempt, &summary);
        Ok(StepExecution {
            outcome,
            tokens: TokenUsage::default(),
            actions: 1,
            reflections: Vec::new(),
            summary,
            tooling: None,
            calls: Vec::new(),
        })
    }
}

/// The client's evidence goes to the step's agent log, like an agent's output.
fn append_log(req: &ExecRequest<'_>, attempt: u32, summary: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(req.log)?;
    writeln!(f, "[mcp attempt {attempt}] {summary}")
}
