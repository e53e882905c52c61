//! `run_command`: a shell command line, checked by `forbid_gh` and the command policy,
//! run in the worktree inside the sandbox with a timeout; the tails of its output go
//! back to the model.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{Context, parse_args};
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Access;

/// Bytes of stdout and of stderr kept (the end of each).
pub const OUTPUT_TAIL_BYTES: usize = 16 * 1024;

pub fn run_command_spec(default_timeout: Duration) -> ToolSpec {
    ToolSpec {
        name: "run_command".to_string(),
        description: format!(
            "Run a shell command line in the worktree (e.g. the tests). The command policy applies (no sudo, no system paths, no piping downloads into a shell, no `gh`, ...). It runs sandboxed where the platform allows: only the worktree and /tmp are writable, .git is read-only. Default timeout {}s. Returns the exit code and the last {} KiB of stdout and stderr; a non-zero exit is reported as an error.",
            default_timeout.as_secs(),
            OUTPUT_TAIL_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, run by `sh -c`."},
                "cwd": {"type": "string", "description": "Directory relative to the worktree root (default: the root)."},
                "timeout_secs": {"type": "integer", "minimum": 1, "description": "Timeout in seconds (at most the configured action timeout)."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct CommandArgs {
    command: String,
    #[serde(default)]
    cwd: String,
    timeout_secs: Option<u64>,
}

pub(crate) fn run_command(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: CommandArgs = parse_args(args)?;
    let line = args.command.trim();
    if ctx.forbid_gh && invokes_gh(line) {
        return Err(ToolError::new(
            ReasonCode::GhForbidden,
            format!("`{line}` invokes `gh`; the plan's gates forbid the GitHub CLI (forbid_gh)"),
        ));
    }
    if let Some(policy) = &ctx.command_policy {
        policy.check(line).map_err(|v| {
            ToolError::new(
                ReasonCode::CommandForbidden,
                format!(
                    "`{line}` refused by the command policy [{}]: {}",
                    v.code, v.message
                ),
            )
        })?;
    }
    let cwd = ctx.worktree.resolve(&args.cwd, Access::Read)?;
    let timeout = match args.timeout_secs {
        Some(s) => Duration::from_secs(s).min(ctx.command_timeout),
        None => ctx.command_timeout,
    };
    let argv = ctx.sandbox.wrap(
        vec!["sh".to_string(), "-c".to_string(), line.to_string()],
        ctx.worktree.root(),
        &cwd.absolute,
        &ctx.extra_writable,
    );
    let outcome = run_child(&argv, &cwd.absolute, ctx, timeout)?;
    let body = format!(
        "exit code: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        outcome
            .code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none (killed)".to_string()),
        outcome.stdout,
        outcome.stderr
    );
    if outcome.timed_out {
        return Err(ToolError::new(
            ReasonCode::CommandTimeout,
            format!(
                "`{line}` did not finish within {}s and was killed",
                timeout.as_secs()
            ),
        )
        .with_output(body));
    }
    if outcome.code != Some(0) {
        return Err(ToolError::new(
            ReasonCode::CommandFailed,
            format!(
                "`{line}` exited with {}",
                outcome
                    .code
                    .map(|c| c.to_string())
                    .unwrap_or_else(|| "a signal".to_string())
            ),
        )
        .with_output(body));
    }
    Ok(body)
}

/// True when `gh` appears as a word of the command line (as a program, an argument
/// of `env`/`xargs`/`sh -c`, or a path ending in `/gh`). Deliberately strict.
pub fn invokes_gh(line: &str) -> bool {
    static GH: std::sync::OnceLock<Option<Regex>> = std::sync::OnceLock::new();
    GH.get_or_init(|| Regex::new(r#"(^|[\s;&|()`'"/=$])gh($|[\s;&|()`'"])"#).ok())
        .as_ref()
        .is_none_or(|re| re.is_match(line))
}

struct Outcome {
    code: Option<i32>,
    timed_out: bool,
    stdout: String,
    stderr: String,
}

fn run_child(
    argv: &[String],
    cwd: &std::path::Path,
    ctx: &Context,
    timeout: Duration,
) -> Result<Outcome, ToolError> {
    let Some((program, rest)) = argv.split_first() else {
        return Err(ToolError::new(ReasonCode::InternalError, "empty argv"));
    };
    let mut cmd = Command::new(program);
    cmd.args(rest)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env_clear()
        .envs(&ctx.env);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(|e| {
        ToolError::new(
            ReasonCode::CommandFailed,
            format!("starting `{program}`: {e}"),
        )
    })?;
    let stdout = child.stdout.take().map(tail_reader);
    let stderr = child.stderr.take().map(tail_reader);
    let started = Instant::now();
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() >= timeout => {
                timed_out = true;
                kill_group(&mut child);
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                kill_group(&mut child);
                return Err(ToolError::new(
                    ReasonCode::CommandFailed,
                    format!("waiting for `{program}`: {e}"),
                ));
            }
        }
    };
    let join = |h: Option<std::thread::JoinHandle<String>>| {
        h.and_then(|h| h.join().ok()).unwrap_or_default()
    };
    Ok(Outcome {
        code: status.and_then(|s| s.code()),
        timed_out,
        stdout: join(stdout),
        stderr: join(stderr),
    })
}

/// Kills the child's whole process group (it leads its own group).
fn kill_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", child.id())])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    let _ = child.kill();
}

/// Reads a stream to its end on a thread, keeping only the last bytes.
fn tail_reader<R: Read + Send + 'static>(mut stream: R) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept: Vec<u8> = Vec::new();
        let mut buf = [0u8; 8192];
        let mut dropped = false;
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    kept.extend_from_slice(&buf[..n]);
                    if kept.len() > 2 * OUTPUT_TAIL_BYTES {
                        kept.drain(..kept.len() - OUTPUT_TAIL_BYTES);
                        dropped = true;
                    }
                }
            }
        }
        if kept.len() > OUTPUT_TAIL_BYTES {
            kept.drain(..kept.len() - OUTPUT_TAIL_BYTES);
            dropped = true;
        }
        let text = String::from_utf8_lossy(&kept).into_owned();
        if dropped {
            format!("[… earlier output cut]\n{text}")
        } else {
            text
        }
    })
}

#[cfg(test)]
mod tests {
    use super::invokes_gh;

    #[test]
    fn gh_detection() {
        for yes in [
            "gh pr create",
            "cargo test && gh issue list",
            "/usr/bin/gh api",
            "env gh auth status",
            "sh -c 'gh pr view'",
            "echo x|gh",
            "$(gh x)",
        ] {
            assert!(invokes_gh(yes), "{yes}");
        }
        for no in [
            "git status",
            "ghc --version",
            "cargo test -p ghost",
            "echo high",
        ] {
            assert!(!invokes_gh(no), "{no}");
        }
    }
}
