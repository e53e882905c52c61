//! `run_command`: a shell command line, checked by `forbid_gh` and the command policy,
//! run in the worktree inside the sandbox with a timeout; the tails of its output go
//! back to the model.

use std::sync::atomic::Ordering;
use std::time::Duration;

use dandori_exec::sandbox::{Origin, SandboxPolicy};
use dandori_exec::{CommandPolicy, CommandSpec, run_command as run};

use regex::Regex;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{CommandCheck, CommandRefusal, Context, parse_args};
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
    ctx.command_policy.check(line).map_err(|v| {
        ToolError::new(
            ReasonCode::CommandForbidden,
            format!(
                "`{line}` refused by the command policy [{}]: {}",
                v.code, v.message
            ),
        )
    })?;
    let cwd = ctx.worktree.resolve(&args.cwd, Access::Read)?;
    let timeout = match args.timeout_secs {
        Some(s) => Duration::from_secs(s).min(ctx.command_timeout),
        None => ctx.command_timeout,
    };
    let policy = SandboxPolicy::worktree(ctx.worktree.root(), &ctx.extra_writable);
    let argv = ctx
        .sandbox
        .wrap(
            vec!["sh".to_string(), "-c".to_string(), line.to_string()],
            &policy,
            &cwd.absolute,
            Origin::Issued,
        )
        .map_err(|e| ToolError::new(ReasonCode::SandboxUnavailable, e.to_string()))?;
    let outcome = run(&exec_spec(ctx, argv, &cwd.absolute, timeout)).map_err(|e| {
        ToolError::new(
            ReasonCode::CommandFailed,
            format!("`{line}` could not be run: {e}"),
        )
    })?;
    let body = format!(
        "exit code: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        outcome
            .exit_code
            .map(|c| c.to_string())
            .unwrap_or_else(|| "none (killed)".to_string()),
        outcome.stdout_tail,
        outcome.stderr_tail
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
    if outcome.exit_code != Some(0) {
        return Err(ToolError::new(
            ReasonCode::CommandFailed,
            format!(
                "`{line}` exited with {}",
                outcome
                    .exit_code
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

fn exec_spec(
    ctx: &Context,
    argv: Vec<String>,
    cwd: &std::path::Path,
    timeout: Duration,
) -> CommandSpec {
    let mut argv = argv.into_iter();
    let program = argv.next().unwrap_or_default();
    let mut spec = CommandSpec::program(program, argv, cwd)
        .env(ctx.env.clone())
        .timeout(timeout)
        .limits(ctx.command_limits.clone());
    spec.tail_bytes = OUTPUT_TAIL_BYTES;
    if let Some(masker) = &ctx.masker {
        spec = spec.masker(masker.clone());
    }
    if let Some((dir, prefix)) = &ctx.command_logs {
        let n = ctx.command_counter.fetch_add(1, Ordering::Relaxed) + 1;
        spec = spec.logs(dir, &format!("{prefix}.cmd{n:03}"));
    }
    spec
}

/// Shells the tool loop may start on top of the configured allowlist, so the model can
/// run scripts it wrote (`sh check.sh`). `sh -c LINE` is checked recursively by the
/// policy, and a script file is no more powerful than `python x.py`, which the
/// built-in allowlist already permits; the sandbox confines both.
pub const TOOL_EXTRA_ALLOWED_COMMANDS: &[&str] = &["sh", "bash", "exit"];

/// The command policy of `run_command`: dandori-exec's built-in policy extended by
/// `config` (`planning.environment_setup.security`) and [`TOOL_EXTRA_ALLOWED_COMMANDS`].
pub fn tool_command_policy(
    config: &dandori_config::CommandPolicyConfig,
) -> Result<CommandPolicy, dandori_exec::ExecError> {
    let mut config = config.clone();
    config
        .allowed_commands
        .extend(TOOL_EXTRA_ALLOWED_COMMANDS.iter().map(|s| s.to_string()));
    CommandPolicy::new(&config)
}

/// The command policy of seed 002 §11 (dandori-exec) as the check of `run_command`.
impl CommandCheck for CommandPolicy {
    fn check(&self, line: &str) -> Result<(), CommandRefusal> {
        CommandPolicy::check(self, line)
            .map(|_| ())
            .map_err(|v| CommandRefusal {
                code: v.code.to_string(),
                message: v.message,
            })
    }
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
