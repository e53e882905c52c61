//! `search`: substring or regex over the worktree's text files, respecting
//! `.gitignore`, with bounded output.

use serde::Deserialize;
use serde_json::{Value, json};

use super::{Context, parse_args};
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Access;

pub const SEARCH_DEFAULT_MAX_RESULTS: usize = 100;
pub const SEARCH_MAX_RESULTS: usize = 1000;
/// Files larger than this are skipped.
pub const SEARCH_MAX_FILE_BYTES: u64 = 1024 * 1024;
/// Matched lines are cut to this many characters.
pub const SEARCH_MAX_LINE_CHARS: usize = 240;

pub fn search_spec() -> ToolSpec {
    ToolSpec {
        name: "search".to_string(),
        description: format!(
            "Search the worktree's text files for a substring (default) or a regular expression (`regex: true`). Files ignored by .gitignore, binary files and files over {} KiB are skipped. Output: `path:line: text`, at most `max_results` matches (default {SEARCH_DEFAULT_MAX_RESULTS}, max {SEARCH_MAX_RESULTS}).",
            SEARCH_MAX_FILE_BYTES / 1024
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "pattern": {"type": "string", "description": "Substring, or regex when `regex` is true."},
                "regex": {"type": "boolean", "default": false},
                "case_insensitive": {"type": "boolean", "default": false},
                "path": {"type": "string", "description": "Directory or file to search, relative to the worktree root (default: the root)."},
                "max_results": {"type": "integer", "minimum": 1, "maximum": SEARCH_MAX_RESULTS}
            },
            "required": ["pattern"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct SearchArgs {
    pattern: String,
    #[serde(default)]
    regex: bool,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    path: String,
    max_results: Option<usize>,
}

pub(crate) fn search(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: SearchArgs = parse_args(args)?;
    if args.pattern.is_empty() {
        return Err(ToolError::new(
            ReasonCode::InvalidArguments,
            "`pattern` is empty",
        ));
    }
    let source = if args.regex {
        args.pattern.clone()
    } else {
        regex::escape(&args.pattern)
    };
    let matcher = regex::RegexBuilder::new(&source)
        .case_insensitive(args.case_insensitive)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| {
            ToolError::new(
                ReasonCode::InvalidRegex,
                format!("`{}` is not a valid regex: {e}", args.pattern),
            )
        })?;
    let max = args
        .max_results
        .unwrap_or(SEARCH_DEFAULT_MAX_RESULTS)
        .clamp(1, SEARCH_MAX_RESULTS);
    let resolved = ctx.worktree.resolve(&args.path, Access::Read)?;
    let root = ctx.worktree.root();
    let mut walker = ctx.worktree.walker(&resolved.absolute);
    walker.sort_by_file_path(|a, b| a.cmp(b));
    let mut out = Vec::new();
    let mut files_with_matches = 0usize;
    let mut cut = false;
    'files: for entry in walker.build() {
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if entry
            .metadata()
            // A hard-linked file may be a file outside the worktree: skipped.
            .map(|m| {
                use std::os::unix::fs::MetadataExt;
                m.len() > SEARCH_MAX_FILE_BYTES || m.nlink() > 1
            })
            .unwrap_or(true)
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(entry.path()) else {
            continue;
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            continue;
        }
        let Ok(text) = String::from_utf8(bytes) else {
            continue;
        };
        let rel = entry
            .path()
            .strip_prefix(root)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .replace('\\', "/");
        let mut matched = false;
        for (n, line) in text.lines().enumerate() {
            if !matcher.is_match(line) {
                continue;
            }
            if out.len() >= max {
                cut = true;
                break 'files;
            }
            matched = true;
            out.push(format!("{rel}:{}: {}", n + 1, clip(line.trim_end())));
        }
        if matched {
            files_with_matches += 1;
        }
    }
    if out.is_empty() {
        return Ok(format!("no matches for `{}`", args.pattern));
    }
    let mut text = out.join("\n");
    if cut {
        text.push_str(&format!(
            "\n[output cut at {max} matches; narrow the pattern or the path]"
        ));
    } else {
        text.push_str(&format!(
            "\n[{} matches in {files_with_matches} files]",
            out.len()
        ));
    }
    Ok(text)
}

fn clip(line: &str) -> String {
    if line.chars().count() <= SEARCH_MAX_LINE_CHARS {
        return line.to_string();
    }
    let mut s: String = line.chars().take(SEARCH_MAX_LINE_CHARS).collect();
    s.push('…');
    s
}
