//! Child processes of the runner (agent commands, unit commands): null stdin,
//! explicit environment, own process group, stdout and stderr appended to one log
//! file, the whole group killed on timeout.

use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::error::RunnerError;

/// How much of the end of a log is kept for feedback and reports.
const TAIL_BYTES: u64 = 4000;

#[derive(Clone)]
pub struct ProcSpec<'a> {
    /// argv[0] and its arguments (no shell unless argv is `sh -c …`).
    pub argv: &'a [String],
    pub cwd: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    pub timeout: Duration,
    pub log: &'a Path,
    /// Secrets are masked in the log (and the tail) once the process ends.
    pub masker: Option<&'a dandori_trace::Masker>,
    /// Called every [`HEARTBEAT`] while the process runs, with the time since it
    /// started and the last line of its output so far (masked).
    pub heartbeat: Option<&'a Heartbeat<'a>>,
}

/// A progress callback: elapsed time, last output line.
pub type Heartbeat<'a> = dyn Fn(Duration, &str) + Sync + 'a;

/// How often a running child's [`ProcSpec::heartbeat`] is called.
pub const HEARTBEAT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, PartialEq)]
pub struct ProcOutcome {
    /// None when killed by a signal (including our timeout kill).
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub duration: Duration,
    /// The last few kB of the combined stdout + stderr.
    pub tail: String,
    pub log: PathBuf,
}

impl ProcOutcome {
    pub fn success(&self) -> bool {
        !self.timed_out && self.exit_code == Some(0)
    }
}

pub fn run(spec: &ProcSpec<'_>) -> Result<ProcOutcome, RunnerError> {
    run_hooked(spec, None)
}

/// [`run`], calling `on_exit` once the process ended and before the log is
/// masked (a reader of the log's structured output finishes reading it: masking
/// may rewrite what it parses).
pub fn run_hooked(
    spec: &ProcSpec<'_>,
    on_exit: Option<&dyn Fn()>,
) -> Result<ProcOutcome, RunnerError> {
    let display = shell_words::join(spec.argv);
    let Some((program, args)) = spec.argv.split_first() else {
        return Err(RunnerError::Process {
            command: display,
            message: "empty command".to_string(),
        });
    };
    if let Some(dir) = spec.log.parent() {
        dandori_fs::create_dir_all(dir)?;
    }
    let log = OpenOptions::new()
        .create(true)
        .append(true)
        .open(spec.log)
        .map_err(|e| dandori_fs::FsError::new("opening log", spec.log, e))?;
    let start_len = log.metadata().map(|m| m.len()).unwrap_or(0);
    let log_err = log
        .try_clone()
        .map_err(|e| dandori_fs::FsError::new("opening log", spec.log, e))?;
    let started = Instant::now();
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(spec.cwd)
        .env_clear()
        .envs(spec.env)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(log_err)
        .process_group(0);
    dandori_exec::overlay::enter(&mut cmd, spec.cwd);
    let mut child = cmd.spawn().map_err(|e| RunnerError::Process {
        command: display.clone(),
        message: format!("could not start in {}: {e}", spec.cwd.display()),
    })?;
    let pid = child.id();
    let mut timed_out = false;
    // A blocking wait on a helper thread: the status arrives the moment the child
    // exits (no polling delay), and the timeout is a bounded wait for it.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait());
    });
    let deadline = started + spec.timeout;
    let waited = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let slice = match spec.heartbeat {
            Some(_) => left.min(HEARTBEAT),
            None => left,
        };
        match rx.recv_timeout(slice) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if Instant::now() < deadline => {
                if let Some(h) = spec.heartbeat {
                    let tail = read_tail(spec.log, start_len);
                    let last = tail
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("");
                    let last = match spec.masker {
                        Some(m) => m.mask_str(last),
                        None => last.to_string(),
                    };
                    let last: String = last.chars().take(200).collect();
                    h(started.elapsed(), &last);
                }
            }
            other => break other,
        }
    };
    let status = match waited {
        Ok(Ok(status)) => Some(status),
        Ok(Err(e)) => {
            return Err(RunnerError::Process {
                command: display,
                message: format!("waiting: {e}"),
            });
        }
        Err(_) => {
            timed_out = true;
            kill_group(pid);
            // The leader too, should it have left its group (it is not reaped yet,
            // so the pid is still its own).
            if let Ok(p) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            rx.recv().ok().and_then(Result::ok)
        }
    };
    // Children left behind in the group (a backgrounded helper) go with the leader.
    kill_group(pid);
    if let Some(f) = on_exit {
        f();
    }
    if let Some(m) = spec.masker {
        mask_log(spec.log, m)?;
    }
    Ok(ProcOutcome {
        exit_code: status.and_then(|s| s.code()),
        timed_out,
        duration: started.elapsed(),
        tail: read_tail(spec.log, start_len),
        log: spec.log.to_path_buf(),
    })
}

/// Rewrites the log at `path` masked, when masking changes it; a log that
/// cannot be read is left as it is.
pub fn mask_log(path: &Path, masker: &dandori_trace::Masker) -> Result<(), RunnerError> {
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(&bytes);
    let masked = masker.mask_str(&text);
    if masked != text {
        dandori_fs::write_atomic(path, masked)?;
    }
    Ok(())
}

/// SIGKILL to the process group `pgid` (an already empty group is fine).
fn kill_group(pgid: u32) {
    if let Ok(pgid) = i32::try_from(pgid) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(pgid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

fn read_tail(path: &Path, from: u64) -> String {
    let Ok(mut f) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = from.max(len.saturating_sub(TAIL_BYTES));
    if f.seek(SeekFrom::Start(start)).is_err() {
        return String::new();
    }
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}
