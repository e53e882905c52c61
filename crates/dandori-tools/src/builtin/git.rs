//! `git_status`, `git_diff`: read-only views of the worktree's git state.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Context, parse_args};
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Access;

/// Most bytes of `git diff` output returned.
pub const GIT_DIFF_MAX_BYTES: usize = 64 * 1024;

pub fn git_status_spec() -> ToolSpec {
    ToolSpec {
        name: "git_status".to_string(),
        description: "Show the worktree's branch and changed / untracked files (`git status --porcelain=v1 --branch`).".to_string(),
        input_schema: json!({"type": "object", "properties": {}, "additionalProperties": false}),
    }
}

pub(crate) fn git_status(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let _: Empty = parse_args(args)?;
    let out = git(
        ctx,
        &[
            "status",
            "--porcelain=v1",
            "--branch",
            "--untracked-files=all",
        ],
    )?;
    Ok(out)
}

#[derive(Deserialize)]
struct Empty {}

pub fn git_diff_spec() -> ToolSpec {
    ToolSpec {
        name: "git_diff".to_string(),
        description: format!(
            "Show the worktree's uncommitted changes as a unified diff (`git diff`; `staged: true` for the index). Optional `path` limits it to a file or directory. At most {} KiB.",
            GIT_DIFF_MAX_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "staged": {"type": "boolean", "default": false},
                "path": {"type": "string", "description": "File or directory relative to the worktree root."}
            },
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct DiffArgs {
    #[serde(default)]
    staged: bool,
    path: Option<String>,
}

pub(crate) fn git_diff(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: DiffArgs = parse_args(args)?;
    let mut argv = vec!["diff", "--no-color", "--no-ext-diff"];
    if args.staged {
        argv.push("--cached");
    }
    let rel;
    if let Some(path) = &args.path {
        rel = ctx.worktree.resolve(path, Access::Read)?.relative;
        argv.push("--");
        argv.push(if rel.is_empty() { "." } else { &rel });
    }
    let mut out = git(ctx, &argv)?;
    if out.is_empty() {
        return Ok("(no changes)".to_string());
    }
    if out.len() > GIT_DIFF_MAX_BYTES {
        let cut = (0..=GIT_DIFF_MAX_BYTES)
            .rev()
            .find(|i| out.is_char_boundary(*i))
            .unwrap_or(0);
        out.truncate(cut);
        out.push_str(&format!(
            "\n[diff cut at {} KiB; ask for one path at a time]",
            GIT_DIFF_MAX_BYTES / 1024
        ));
    }
    Ok(out)
}

/// Runs git in the worktree with the tool environment, hardened
/// (`dandori_exec::git`): no hook, filter, pager or fsmonitor runs; these tools only look.
fn git(ctx: &Context, args: &[&str]) -> Result<String, ToolError> {
    let mut cmd = dandori_exec::git::git_command_with_env(
        ctx.worktree.root(),
        dandori_exec::git::GlobalConfig::Ignore,
        &ctx.env,
    );
    cmd.args(args);
    let out = cmd.output().map_err(|e| {
        ToolError::new(
            ReasonCode::GitFailed,
            format!("running `git {}`: {e}", args.join(" ")),
        )
    })?;
    if !out.status.success() {
        return Err(ToolError::new(
            ReasonCode::GitFailed,
            format!("`git {}` failed ({})", args.join(" "), out.status),
        )
        .with_output(String::from_utf8_lossy(&out.stderr).trim().to_string()));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
