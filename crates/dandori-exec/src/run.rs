//! Hardened child processes (STYLE.md "child processes"): null stdin, an explicit
//! environment (the parent's is never inherited implicitly), the child leads its
//! own process group, the whole group is killed on timeout, after the command ends
//! (stragglers) and when the caller unwinds; stdout/stderr are streamed to log files
//! as they arrive (masked line by line when a masker is given) and their tails are
//! kept in memory.
//!
//! Resource limits (seed 002 §11.2) are applied with the shell's `ulimit` in a tiny
//! `/bin/sh` prelude that then `exec`s the command, so they are in force before the
//! command's first instruction, without unsafe code in this crate.

use std::collections::{BTreeMap, VecDeque};
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use dandori_trace::Masker;
use nix::sys::resource::{Resource, getrlimit};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use serde::Serialize;

use crate::ExecError;
use crate::policy::ParsedCommand;
use crate::sandbox::{Origin, Sandbox, SandboxPolicy};

/// Default number of bytes of each stream kept in memory.
pub const DEFAULT_TAIL_BYTES: usize = 16 * 1024;
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Spawned directly, no shell involved.
    Program { program: String, args: Vec<String> },
    /// A line that passed [`crate::CommandPolicy::check`]; run with `sh -c` when it
    /// needs a shell, directly otherwise.
    Shell(ParsedCommand),
}

/// Resource limits of seed 002 §11.2 that `setrlimit` can express.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResourceLimits {
    /// `RLIMIT_DATA` (heap and private writable mappings), bytes: `memory_limit`.
    pub memory_bytes: Option<u64>,
    /// `RLIMIT_CPU`, seconds of CPU time: `cpu_limit` × `timeout_seconds`.
    pub cpu_seconds: Option<u64>,
    /// `RLIMIT_FSIZE`, bytes: the largest file a command may write (`disk_limit`
    /// bounds each file; a total disk quota needs a filesystem quota).
    pub file_size_bytes: Option<u64>,
    /// `RLIMIT_NOFILE`.
    pub open_files: Option<u64>,
}

impl ResourceLimits {
    /// Seed 002 §11.2 defaults: 2 CPUs, 4 GiB memory, 10 GiB files, for a command
    /// that may run `timeout`.
    pub fn seed_defaults(timeout: Duration) -> Self {
        ResourceLimits {
            memory_bytes: Some(4 << 30),
            cpu_seconds: Some(2 * timeout.as_secs().max(1)),
            file_size_bytes: Some(10 << 30),
            open_files: None,
        }
    }

    /// The limits `planning.environment_setup.resources` configures for a
    /// command that may run `timeout` (seed 002 §11.2).
    pub fn configured(r: &dandori_config::ResourcesConfig, timeout: Duration) -> Self {
        ResourceLimits {
            memory_bytes: Some(r.memory_limit.0),
            cpu_seconds: Some(
                u64::from(r.cpu_limit.get()).saturating_mul(timeout.as_secs().max(1)),
            ),
            file_size_bytes: Some(r.disk_limit.0),
            open_files: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.memory_bytes.is_none()
            && self.cpu_seconds.is_none()
            && self.file_size_bytes.is_none()
            && self.open_files.is_none()
    }

    /// `ulimit` statements, clamped to the current hard limits so they cannot fail.
    fn prelude(&self) -> (String, Vec<String>) {
        let mut script = String::new();
        let mut applied = Vec::new();
        let mut add = |flag: &str, res: Resource, value: Option<u64>, unit: u64, name: &str| {
            let Some(v) = value else { return };
            let hard = getrlimit(res).map(|(_, h)| h).unwrap_or(u64::MAX);
            let v = v.min(hard);
            let n = (v / unit).max(1);
            script.push_str(&format!("ulimit -S -{flag} {n} 2>/dev/null; "));
            applied.push(format!("{name}={v}"));
        };
        add(
            "d",
            Resource::RLIMIT_DATA,
            self.memory_bytes,
            1024,
            "RLIMIT_DATA",
        );
        add("t", Resource::RLIMIT_CPU, self.cpu_seconds, 1, "RLIMIT_CPU");
        // POSIX `ulimit -f` counts 512-byte blocks (dash, bash in posix mode).
        add(
            "f",
            Resource::RLIMIT_FSIZE,
            self.file_size_bytes,
            512,
            "RLIMIT_FSIZE",
        );
        add(
            "n",
            Resource::RLIMIT_NOFILE,
            self.open_files,
            1,
            "RLIMIT_NOFILE",
        );
        (script, applied)
    }
}

/// A command to run and how.
#[derive(Debug, Clone)]
pub struct CommandSpec {
    pub command: CommandLine,
    pub cwd: PathBuf,
    /// The child's whole environment.
    pub env: BTreeMap<String, String>,
    pub timeout: Option<Duration>,
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
    pub tail_bytes: usize,
    pub limits: ResourceLimits,
    /// Masks secrets in logs and tails.
    pub masker: Option<Masker>,
    /// Interactive mode (`env exec`): the child inherits stdin, stdout and stderr
    /// and stays in our process group (so the terminal's Ctrl-C reaches it).
    pub inherit_output: bool,
    /// Run inside this sandbox under this policy.
    pub sandbox: Option<(Sandbox, SandboxPolicy, Origin)>,
    /// Bytes written to the child's stdin, which is then closed (a protocol
    /// request); `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
}

impl CommandSpec {
    fn with_line(command: CommandLine, cwd: impl Into<PathBuf>) -> Self {
        CommandSpec {
            command,
            cwd: cwd.into(),
            env: base_env(),
            timeout: None,
            stdout_log: None,
            stderr_log: None,
            tail_bytes: DEFAULT_TAIL_BYTES,
            limits: ResourceLimits::default(),
            masker: None,
            inherit_output: false,
            sandbox: None,
            stdin: None,
        }
    }

    /// `program args…` in `cwd`, with [`base_env`].
    pub fn program(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self::with_line(
            CommandLine::Program {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
            },
            cwd,
        )
    }

    /// A policy-checked line in `cwd`, with [`base_env`].
    pub fn shell(parsed: ParsedCommand, cwd: impl Into<PathBuf>) -> Self {
        Self::with_line(CommandLine::Shell(parsed), cwd)
    }

    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = env;
        self
    }

    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Streams stdout to `<dir>/<stem>.stdout.log` and stderr to `<dir>/<stem>.stderr.log`.
    pub fn logs(mut self, dir: &Path, stem: &str) -> Self {
        self.stdout_log = Some(dir.join(format!("{stem}.stdout.log")));
        self.stderr_log = Some(dir.join(format!("{stem}.stderr.log")));
        self
    }

    pub fn limits(mut self, limits: ResourceLimits) -> Self {
        self.limits = limits;
        self
    }

    pub fn masker(mut self, masker: Masker) -> Self {
        self.masker = Some(masker);
        self
    }

    /// Confines the command (see [`crate::sandbox`]); an [`Origin::Issued`] command
    /// is refused when no sandbox mechanism works.
    pub fn sandbox(mut self, sandbox: Sandbox, policy: SandboxPolicy, origin: Origin) -> Self {
        self.sandbox = Some((sandbox, policy, origin));
        self
    }

    /// Feeds `bytes` to the child's stdin (then closes it).
    pub fn stdin(mut self, bytes: Vec<u8>) -> Self {
        self.stdin = Some(bytes);
        self
    }

    /// Keeps up to `bytes` of each stream in memory (a protocol answer read whole).
    pub fn tail_bytes(mut self, bytes: usize) -> Self {
        self.tail_bytes = bytes;
        self
    }

    pub fn inherit_output(mut self) -> Self {
        self.inherit_output = true;
        self
    }

    /// The command as a user would type it.
    pub fn display(&self) -> String {
        match &self.command {
            CommandLine::Program { program, args } => {
                let mut words = vec![program.clone()];
                words.extend(args.iter().cloned());
                shell_words::join(words)
            }
            CommandLine::Shell(p) => p.line.clone(),
        }
    }
}

/// How a command ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandOutcome {
    pub command: String,
    /// `None` when killed by a signal.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last `tail_bytes` of stdout (masked), `…` first when cut.
    pub stdout_tail: String,
    pub stderr_tail: String,
    pub stdout_log: Option<PathBuf>,
    pub stderr_log: Option<PathBuf>,
    /// The resource limits in force, e.g. `RLIMIT_DATA=4294967296`.
    pub limits_applied: Vec<String>,
}

impl CommandOutcome {
    pub fn success(&self) -> bool {
        self.exit_code == Some(0) && !self.timed_out
    }
}

/// This process's environment minus secrets (the default
/// `shell_environment_policy`, see [`crate::child_env`]), `PATH` always present.
pub fn base_env() -> BTreeMap<String, String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    crate::child_env::filter(
        &env,
        &dandori_config::ShellEnvironmentPolicy::default(),
        &[],
    )
    .env
}

/// Finds `program` the way `execvp` would with `path` (a `PATH` value); a program
/// containing `/` is resolved against `cwd`.
pub fn find_program(program: &str, path: &str, cwd: &Path) -> Option<PathBuf> {
    if program.contains('/') {
        let p = cwd.join(program);
        return is_executable(&p).then_some(p);
    }
    path.split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// Kills the child's process group when dropped (normal end, timeout, unwinding).
struct GroupGuard(Pid);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        // ESRCH (group already gone) is the normal case.
        let _ = killpg(self.0, Signal::SIGKILL);
    }
}

struct Tail {
    buf: VecDeque<u8>,
    cap: usize,
    cut: bool,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.buf.extend(bytes);
        if self.buf.len() > self.cap {
            let excess = self.buf.len() - self.cap;
            self.buf.drain(..excess);
            self.cut = true;
        }
    }
    fn into_string(self) -> String {
        let bytes: Vec<u8> = self.buf.into_iter().collect();
        let s = String::from_utf8_lossy(&bytes).into_owned();
        if self.cut { format!("…{s}") } else { s }
    }
}

/// Copies `src` to the log file and the tail as data arrives.
fn pump(
    mut src: impl Read,
    mut log: Option<File>,
    cap: usize,
    masker: Option<Masker>,
) -> (String, Option<std::io::Error>) {
    let mut tail = Tail {
        buf: VecDeque::new(),
        cap,
        cut: false,
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 8192];
    let mut err = None;
    let mut emit = |bytes: &[u8], tail: &mut Tail, err: &mut Option<std::io::Error>| {
        let masked;
        let out: &[u8] = match &masker {
            Some(m) => {
                masked = m.mask_str(&String::from_utf8_lossy(bytes));
                masked.as_bytes()
            }
            None => bytes,
        };
        if let Some(f) = log.as_mut()
            && let Err(e) = f.write_all(out)
        {
            err.get_or_insert(e);
        }
        tail.push(out);
    };
    loop {
        match src.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                if masker.is_none() {
                    emit(&chunk[..n], &mut tail, &mut err);
                    continue;
                }
                // Mask whole lines so a secret is never split across two writes.
                pending.extend_from_slice(&chunk[..n]);
                if let Some(last_nl) = pending.iter().rposition(|b| *b == b'\n') {
                    let rest = pending.split_off(last_nl + 1);
                    let lines = std::mem::replace(&mut pending, rest);
                    emit(&lines, &mut tail, &mut err);
                } else if pending.len() > 64 * 1024 {
                    let lines = std::mem::take(&mut pending);
                    emit(&lines, &mut tail, &mut err);
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                err.get_or_insert(e);
                break;
            }
        }
    }
    if !pending.is_empty() {
        let rest = std::mem::take(&mut pending);
        emit(&rest, &mut tail, &mut err);
    }
    if let Some(f) = log.as_mut()
        && let Err(e) = f.flush()
    {
        err.get_or_insert(e);
    }
    (tail.into_string(), err)
}

fn open_log(path: &Option<PathBuf>) -> Result<Option<File>, ExecError> {
    let Some(p) = path else { return Ok(None) };
    if let Some(dir) = p.parent() {
        dandori_fs::create_dir_all(dir)?;
    }
    File::create(p)
        .map(Some)
        .map_err(|e| dandori_fs::FsError::new("creating log", p, e).into())
}

/// Runs `spec` to completion (or its timeout) and returns how it ended. A non-zero
/// exit is an `Ok` outcome; `Err` means the command could not be started or waited.
pub fn run_command(spec: &CommandSpec) -> Result<CommandOutcome, ExecError> {
    let display = spec.display();
    if !spec.cwd.is_dir() {
        return Err(ExecError::MissingCwd {
            cwd: spec.cwd.clone(),
        });
    }
    let path = spec
        .env
        .get("PATH")
        .cloned()
        .unwrap_or_else(|| FALLBACK_PATH.to_string());
    // (program, args) to exec, before the limits prelude.
    let (program, args): (String, Vec<String>) = match &spec.command {
        CommandLine::Program { program, args } => (program.clone(), args.clone()),
        CommandLine::Shell(p) if !p.needs_shell && p.commands.len() == 1 => {
            (p.commands[0].program.clone(), p.commands[0].args.clone())
        }
        CommandLine::Shell(p) => (
            "/bin/sh".to_string(),
            vec!["-c".to_string(), p.line.clone()],
        ),
    };
    let resolved =
        find_program(&program, &path, &spec.cwd).ok_or_else(|| ExecError::ProgramNotFound {
            program: program.clone(),
            path: path.clone(),
        })?;
    let (resolved, args) = match &spec.sandbox {
        Some((sandbox, policy, origin)) => {
            let mut argv = vec![resolved.to_string_lossy().into_owned()];
            argv.extend(args);
            let mut wrapped = sandbox.wrap(argv, policy, &spec.cwd, *origin)?.into_iter();
            let program = PathBuf::from(wrapped.next().unwrap_or_default());
            (program, wrapped.collect::<Vec<String>>())
        }
        None => (resolved, args),
    };
    let (prelude, limits_applied) = spec.limits.prelude();
    let mut cmd = if spec.limits.is_empty() {
        let mut c = Command::new(&resolved);
        c.args(&args);
        c
    } else {
        let mut c = Command::new("/bin/sh");
        c.arg("-c")
            .arg(format!("{prelude}exec \"$@\""))
            .arg("dandori-limits")
            .arg(&resolved)
            .args(&args);
        c
    };
    cmd.current_dir(&spec.cwd).env_clear().envs(&spec.env);
    crate::overlay::enter(&mut cmd, &spec.cwd);
    if spec.inherit_output {
        // Interactive use (`dandori env exec`): the child shares the terminal,
        // stays in the foreground process group and reads our stdin.
        cmd.stdin(Stdio::inherit())
            .stdout(Stdio::inherit())
            .stderr(Stdio::inherit());
    } else {
        cmd.stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    }
    let out_log = open_log(&spec.stdout_log)?;
    let err_log = open_log(&spec.stderr_log)?;

    let start = Instant::now();
    let mut child = cmd.spawn().map_err(|source| ExecError::Spawn {
        command: display.clone(),
        cwd: spec.cwd.clone(),
        source,
    })?;
    let guard = GroupGuard(Pid::from_raw(child.id() as i32));
    if let (Some(bytes), Some(mut input)) = (spec.stdin.clone(), child.stdin.take()) {
        // A child that exits without reading gets EPIPE here: not our error.
        std::thread::spawn(move || {
            use std::io::Write;
            let _ = input.write_all(&bytes);
        });
    }

    let (tx, rx) = mpsc::channel::<(bool, String, Option<std::io::Error>)>();
    let mut readers = 0;
    if let Some(out) = child.stdout.take() {
        let (tx, cap, m) = (tx.clone(), spec.tail_bytes, spec.masker.clone());
        std::thread::spawn(move || {
            let (t, e) = pump(out, out_log, cap, m);
            let _ = tx.send((true, t, e));
        });
        readers += 1;
    }
    if let Some(err) = child.stderr.take() {
        let (tx, cap, m) = (tx.clone(), spec.tail_bytes, spec.masker.clone());
        std::thread::spawn(move || {
            let (t, e) = pump(err, err_log, cap, m);
            let _ = tx.send((false, t, e));
        });
        readers += 1;
    }
    drop(tx);

    let mut timed_out = false;
    let mut poll = Duration::from_millis(2);
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(source) => {
                return Err(ExecError::Wait {
                    command: display,
                    source,
                });
            }
        }
        if let Some(t) = spec.timeout
            && start.elapsed() >= t
        {
            timed_out = true;
            let _ = killpg(guard.0, Signal::SIGKILL);
            // Interactive children are not group leaders.
            let _ = child.kill();
            match child.wait() {
                Ok(s) => break s,
                Err(source) => {
                    return Err(ExecError::Wait {
                        command: display,
                        source,
                    });
                }
            }
        }
        std::thread::sleep(poll);
        poll = (poll * 2).min(Duration::from_millis(50));
    };
    // Stragglers (background children) die with the group, closing the pipes.
    drop(guard);
    let mut stdout_tail = String::new();
    let mut stderr_tail = String::new();
    for _ in 0..readers {
        // A process that left the group may still hold a pipe: don't wait forever.
        match rx.recv_timeout(Duration::from_secs(5)) {
            Ok((is_out, tail, e)) => {
                if let Some(e) = e {
                    let log = if is_out {
                        &spec.stdout_log
                    } else {
                        &spec.stderr_log
                    };
                    if let Some(p) = log {
                        return Err(dandori_fs::FsError::new("writing log", p, e).into());
                    }
                }
                if is_out {
                    stdout_tail = tail;
                } else {
                    stderr_tail = tail;
                }
            }
            Err(_) => break,
        }
    }
    Ok(CommandOutcome {
        command: display,
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration_ms: u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX),
        stdout_tail,
        stderr_tail,
        stdout_log: spec.stdout_log.clone(),
        stderr_log: spec.stderr_log.clone(),
        limits_applied,
    })
}
