//! `apply_patch`: search/replace edit blocks on one file.
//!
//! Each edit names an `old` text that must occur exactly once in the file (after the
//! previous edits) and the `new` text replacing it. If the exact text is not found,
//! one retry compares whole lines ignoring trailing whitespace (models often get
//! that wrong); it too must match exactly once. All edits apply or none does.

use serde::Deserialize;
use serde_json::{Value, json};

use super::files::{text_of, write_text};
use super::{Context, io_error, parse_args};
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Access;

pub fn apply_patch_spec() -> ToolSpec {
    ToolSpec {
        name: "apply_patch".to_string(),
        description: "Edit an existing file with search/replace blocks. Each edit's `old` must occur exactly once in the file (include enough surrounding lines to make it unique); it is replaced by `new`. Edits apply in order, all or none. Use write_file to create a file.".to_string(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File relative to the worktree root."},
                "edits": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "old": {"type": "string", "description": "Exact existing text to replace."},
                            "new": {"type": "string", "description": "Replacement text."}
                        },
                        "required": ["old", "new"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["path", "edits"],
            "additionalProperties": false
        }),
    }
}

#[derive(Deserialize)]
struct PatchArgs {
    path: String,
    edits: Vec<Edit>,
}

#[derive(Deserialize)]
struct Edit {
    old: String,
    new: String,
}

pub(crate) fn apply_patch(ctx: &Context, args: &Value) -> Result<String, ToolError> {
    let args: PatchArgs = parse_args(args)?;
    if args.edits.is_empty() {
        return Err(ToolError::new(
            ReasonCode::InvalidArguments,
            "`edits` is empty",
        ));
    }
    let resolved = ctx.worktree.resolve(&args.path, Access::Write)?;
    let meta = std::fs::metadata(&resolved.absolute).map_err(|e| io_error(&args.path, e))?;
    if meta.len() > super::files::READ_MAX_FILE_BYTES {
        return Err(ToolError::new(
            ReasonCode::FileTooLarge,
            format!(
                "`{}` has {} bytes; too large to patch",
                resolved.relative,
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(&resolved.absolute).map_err(|e| io_error(&args.path, e))?;
    let mut text = text_of(&resolved.relative, bytes)?;
    let mut fuzzy = 0;
    for (i, edit) in args.edits.iter().enumerate() {
        let (next, was_fuzzy) = apply_edit(&text, edit).map_err(|mut e| {
            e.message = format!("`{}` edits[{i}]: {}", resolved.relative, e.message);
            e
        })?;
        text = next;
        if was_fuzzy {
            fuzzy += 1;
        }
    }
    write_text(&resolved.absolute, &resolved.relative, &text)?;
    let mut msg = format!(
        "applied {} edit(s) to `{}`",
        args.edits.len(),
        resolved.relative
    );
    if fuzzy > 0 {
        msg.push_str(&format!(" ({fuzzy} matched ignoring trailing whitespace)"));
    }
    Ok(msg)
}

fn apply_edit(text: &str, edit: &Edit) -> Result<(String, bool), ToolError> {
    if edit.old.is_empty() {
        return Err(ToolError::new(
            ReasonCode::InvalidArguments,
            "`old` is empty; use write_file to create or replace a whole file",
        ));
    }
    let exact: Vec<usize> = text.match_indices(&edit.old).map(|(i, _)| i).collect();
    match exact.as_slice() {
        [at] => {
            let mut out = String::with_capacity(text.len() + edit.new.len());
            out.push_str(&text[..*at]);
            out.push_str(&edit.new);
            out.push_str(&text[at + edit.old.len()..]);
            return Ok((out, false));
        }
        [] => {}
        many => {
            return Err(ToolError::new(
                ReasonCode::PatchAmbiguous,
                format!(
                    "`old` occurs {} times (at lines {}); include more surrounding lines",
                    many.len(),
                    many.iter()
                        .map(|i| (text[..*i].matches('\n').count() + 1).to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
    }
    // Line-wise retry ignoring trailing whitespace.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let old_lines: Vec<&str> = edit
        .old
        .trim_matches('\n')
        .split('\n')
        .map(str::trim_end)
        .collect();
    let n = old_lines.len();
    let starts: Vec<usize> = (0..lines.len().saturating_sub(n - 1))
        .filter(|s| {
            lines[*s..s + n]
                .iter()
                .zip(&old_lines)
                .all(|(have, want)| have.trim_end() == *want)
        })
        .collect();
    match starts.as_slice() {
        [s] => {
            let mut out: String = lines[..*s].concat();
            out.push_str(&edit.new);
            let replaced_ends_newline = lines[s + n - 1].ends_with('\n');
            if replaced_ends_newline && !edit.new.is_empty() && !edit.new.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&lines[s + n..].concat());
            Ok((out, true))
        }
        [] => Err(ToolError::new(
            ReasonCode::PatchNoMatch,
            format!(
                "`old` was not found (first line: `{}`); read the file again and copy the text exactly",
                old_lines.first().copied().unwrap_or("")
            ),
        )),
        many => Err(ToolError::new(
            ReasonCode::PatchAmbiguous,
            format!(
                "`old` matches {} places ignoring trailing whitespace (lines {}); include more surrounding lines",
                many.len(),
                many.iter()
                    .map(|s| (s + 1).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> Edit {
        Edit {
            old: old.to_string(),
            new: new.to_string(),
        }
    }

    #[test]
    fn exact_fuzzy_missing_ambiguous() {
        let text = "fn a() {\n    1  \n}\nfn b() {}\n";
        assert_eq!(
            apply_edit(text, &edit("fn b() {}", "fn b() { 2 }")).unwrap(),
            ("fn a() {\n    1  \n}\nfn b() { 2 }\n".to_string(), false)
        );
        assert_eq!(
            apply_edit(text, &edit("fn a() {\n    1\n}", "fn a() {\n    3\n}")).unwrap(),
            ("fn a() {\n    3\n}\nfn b() {}\n".to_string(), true)
        );
        assert_eq!(
            apply_edit(text, &edit("nope", "x")).unwrap_err().code,
            ReasonCode::PatchNoMatch
        );
        assert_eq!(
            apply_edit(text, &edit("fn ", "x")).unwrap_err().code,
            ReasonCode::PatchAmbiguous
        );
    }
}
