//! `read_file`, `list_dir`, `write_file`.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Context, io_error, parse_args};
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Access;

/// Most lines `read_file` returns in one call.
pub const READ_MAX_LINES: usize = 2000;
/// Most bytes `read_file` returns in one call.
pub const READ_MAX_BYTES: usize = 256 * 1024;
/// Larger files are refused (FILE_TOO_LARGE) rather than loaded.
pub const READ_MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most entries `list_dir` returns.
pub const LIST_MAX_ENTRIES: usize = 1000;

pub fn read_file_spec() -> ToolSpec {
    ToolSpec {
        name: "read_file".to_string(),
        description: format!(
            "Read a UTF-8 text file of the worktree. Optional 1-based inclusive line range. At most {READ_MAX_LINES} lines / {} KiB per call; a note at the end says when the output was cut.",
            READ_MAX_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the worktree root."},
                "start_line": {"type": "integer", "minimum": 1, "description": "First line to return (1-based)."},
                "end_line": {"type": "integer", "minimum": 1, "description": "Last line to return (inclusive)."}
            },
            "required": ["path"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct ReadArgs {
    path: String,
    start_line: Option<usize>,
    end_line: Option<usize>,
}

pub(crate) fn read_file(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: ReadArgs = parse_args(args)?;
    let resolved = ctx.worktree.resolve(&args.path, Access::Read)?;
    let meta = std::fs::metadata(&resolved.absolute).map_err(|e| io_error(&args.path, e))?;
    if !meta.is_file() {
        return Err(ToolError::new(
            ReasonCode::NotAFile,
            format!("`{}` is not a regular file", resolved.relative),
        ));
    }
    if meta.len() > READ_MAX_FILE_BYTES {
        return Err(ToolError::new(
            ReasonCode::FileTooLarge,
            format!(
                "`{}` has {} bytes; read_file handles files up to {} MiB (use search to find the part you need)",
                resolved.relative,
                meta.len(),
                READ_MAX_FILE_BYTES / (1024 * 1024)
            ),
        ));
    }
    let bytes = std::fs::read(&resolved.absolute).map_err(|e| io_error(&args.path, e))?;
    let text = text_of(&resolved.relative, bytes)?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total = lines.len();
    let start = args.start_line.unwrap_or(1).max(1);
    let end = args.end_line.unwrap_or(total).min(total);
    if start > end && total > 0 {
        return Err(ToolError::new(
            ReasonCode::InvalidArguments,
            format!(
                "line range {start}-{} is empty; `{}` has {total} lines",
                args.end_line.unwrap_or(total),
                resolved.relative
            ),
        ));
    }
    let mut out = String::new();
    let mut last = start.saturating_sub(1);
    for (i, line) in lines.iter().enumerate().take(end).skip(start - 1) {
        if i + 1 - start >= READ_MAX_LINES || out.len() + line.len() > READ_MAX_BYTES {
            break;
        }
        out.push_str(line);
        last = i + 1;
    }
    if last < end {
        if !out.ends_with('\n') && !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&format!(
            "[output cut: lines {start}-{last} of {total} shown; read on with start_line={}]",
            last + 1
        ));
    }
    Ok(out)
}

/// Text content, or BINARY_FILE.
pub(super) fn text_of(relative: &str, bytes: Vec<u8>) -> Result<String, ToolError> {
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return Err(ToolError::new(
            ReasonCode::BinaryFile,
            format!("`{relative}` is a binary file"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| {
        ToolError::new(
            ReasonCode::BinaryFile,
            format!("`{relative}` is not valid UTF-8"),
        )
    })
}

pub fn list_dir_spec() -> ToolSpec {
    ToolSpec {
        name: "list_dir".to_string(),
        description: format!(
            "List a directory of the worktree (default: the root). Directories end with `/`, symlinks show `-> target`. Entries ignored by .gitignore and the .git directory are not shown. `recursive` lists the whole subtree; at most {LIST_MAX_ENTRIES} entries."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Directory relative to the worktree root; empty or `.` for the root."},
                "recursive": {"type": "boolean", "default": false}
            },
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct ListArgs {
    #[serde(default)]
    path: String,
    #[serde(default)]
    recursive: bool,
}

pub(crate) fn list_dir(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: ListArgs = parse_args(args)?;
    let resolved = ctx.worktree.resolve(&args.path, Access::Read)?;
    let meta = std::fs::metadata(&resolved.absolute).map_err(|e| io_error(&args.path, e))?;
    if !meta.is_dir() {
        return Err(ToolError::new(
            ReasonCode::NotADirectory,
            format!("`{}` is not a directory", resolved.relative),
        ));
    }
    let mut walker = ctx.worktree.walker(&resolved.absolute);
    if !args.recursive {
        walker.max_depth(Some(1));
    }
    let mut entries = Vec::new();
    let mut cut = false;
    for entry in walker.build() {
        let entry = entry.map_err(|e| {
            ToolError::new(
                ReasonCode::IoError,
                format!("listing `{}`: {e}", resolved.relative),
            )
        })?;
        if entry.depth() == 0 {
            continue;
        }
        if entries.len() >= LIST_MAX_ENTRIES {
            cut = true;
            break;
        }
        let rel = entry
            .path()
            .strip_prefix(&resolved.absolute)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        let ft = entry.file_type();
        let line = match ft {
            Some(ft) if ft.is_symlink() => {
                let target = std::fs::read_link(entry.path())
                    .map(|t| t.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| "?".to_string());
                format!("{rel} -> {target}")
            }
            Some(ft) if ft.is_dir() => format!("{rel}/"),
            Some(_) | None => rel,
        };
        entries.push(line);
    }
    entries.sort();
    let mut out = entries.join("\n");
    if cut {
        out.push_str(&format!(
            "\n[output cut at {LIST_MAX_ENTRIES} entries; list a subdirectory]"
        ));
    }
    if out.is_empty() {
        out = "(empty directory)".to_string();
    }
    Ok(out)
}

pub fn write_file_spec() -> ToolSpec {
    ToolSpec {
        name: "write_file".to_string(),
        description: "Create or replace a file of the worktree with the given content (parent directories are created). The file is replaced atomically; symlinks are never written through.".to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path relative to the worktree root."},
                "content": {"type": "string", "description": "The complete new content."}
            },
            "required": ["path", "content"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    content: String,
}

pub(crate) fn write_file(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: WriteArgs = parse_args(args)?;
    let resolved = ctx.worktree.resolve(&args.path, Access::Write)?;
    let existed = write_text(&resolved.absolute, &resolved.relative, &args.content)?;
    Ok(format!(
        "{} `{}` ({} bytes, {} lines)",
        if existed { "replaced" } else { "created" },
        resolved.relative,
        args.content.len(),
        args.content.lines().count()
    ))
}

/// Writes atomically, keeping the permissions of a file it replaces. Returns whether
/// the file existed.
pub(super) fn write_text(
    absolute: &std::path::Path,
    relative: &str,
    content: &str,
) -> Result<bool, ToolError> {
    let previous = match std::fs::symlink_metadata(absolute) {
        Ok(meta) if meta.is_dir() => {
            return Err(ToolError::new(
                ReasonCode::NotAFile,
                format!("`{relative}` is a directory"),
            ));
        }
        Ok(meta) => Some(meta.permissions()),
        Err(_) => None,
    };
    dandori_fs::write_atomic(absolute, content)
        .map_err(|e| ToolError::new(ReasonCode::IoError, format!("writing `{relative}`: {e}")))?;
    match &previous {
        Some(p) => std::fs::set_permissions(absolute, p.clone()),
        None => set_new_file_mode(absolute),
    }
    .map_err(|e| ToolError::new(ReasonCode::IoError, format!("chmod `{relative}`: {e}")))?;
    Ok(previous.is_some())
}

/// The temporary file behind `write_atomic` is private (0600); a new source file gets
/// the usual 0644.
#[cfg(unix)]
fn set_new_file_mode(path: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644))
}

#[cfg(not(unix))]
fn set_new_file_mode(_path: &std::path::Path) -> std::io::Result<()> {
    Ok(())
}
