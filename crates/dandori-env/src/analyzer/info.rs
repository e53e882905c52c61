//! Seed 002 §3.5.1's return format of the environment information gathered
//! before planning: the detected files with their contents (bounded), the
//! environment type, the dependency list and the recommended setup commands;
//! and the per-file summaries §3.5.2 hands to the model.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_plan::SelectedEnvironment;
use serde::{Deserialize, Serialize};

use super::EnvironmentAnalysis;

/// Bytes of each file's contents kept in [`EnvironmentInfo::detected_files`].
pub const INFO_FILE_BYTES: usize = 8 * 1024;

/// §3.5.1: `{detected_files: {path: contents}, environment_type, dependencies, setup_commands}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentInfo {
    /// Path → contents, cut at `max_bytes` (`… [N more bytes]` said at the end).
    pub detected_files: BTreeMap<String, String>,
    /// python | node | java | go | miniforge | rust | … (a plugin's type).
    pub environment_type: String,
    /// `name spec` of each declared dependency of the selected environment.
    pub dependencies: Vec<String>,
    pub setup_commands: Vec<String>,
}

fn bounded(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

/// The first `max + 4` bytes of `p` (lossy UTF-8) and its size.
fn head(p: &Path, max: usize) -> Option<(String, usize)> {
    use std::io::Read;
    let total = std::fs::metadata(p).ok()?.len() as usize;
    let mut buf = Vec::new();
    std::fs::File::open(p)
        .ok()?
        .take((max + 4) as u64)
        .read_to_end(&mut buf)
        .ok()?;
    Some((String::from_utf8_lossy(&buf).into_owned(), total))
}

/// The §3.5.1 record of `selected` (chosen from `analysis` in `repo`); each
/// file's contents are read and cut at `max_bytes`; unreadable files are left out.
pub fn environment_info(
    analysis: &EnvironmentAnalysis,
    selected: &SelectedEnvironment,
    repo: &Path,
    max_bytes: usize,
) -> EnvironmentInfo {
    let mut detected_files = BTreeMap::new();
    for f in &selected.detected_files {
        let p = repo.join(f);
        // Only the kept part is read: lock files can be large.
        let text = head(&p, max_bytes).map(|(head, total)| {
            let kept = bounded(&head, max_bytes);
            let kept_len = kept.find("… [").unwrap_or(kept.len()).min(head.len());
            if total > kept_len {
                format!("{}… [{} more bytes]", &head[..kept_len], total - kept_len)
            } else {
                head
            }
        });
        if let Some(t) = text {
            detected_files.insert(f.clone(), t);
        }
    }
    let root = selected
        .extra
        .get("root")
        .and_then(|v| v.as_str())
        .unwrap_or(".");
    let dependencies = analysis
        .ecosystems
        .iter()
        .find(|e| e.name == selected.name && e.dir == root)
        .or_else(|| analysis.ecosystem(&selected.name))
        .map(|e| {
            e.dependencies
                .iter()
                .map(|d| match &d.version_spec {
                    Some(v) => format!("{} {v}", d.name),
                    None => d.name.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    EnvironmentInfo {
        detected_files,
        environment_type: selected.name.clone(),
        dependencies,
        setup_commands: selected.setup_commands.clone(),
    }
}

/// §3.5.2: one line per detected file, `path: summary`, the summary being its
/// first meaningful lines (comments and blank lines skipped) cut at `width`
/// characters; at most `max_files` files (the rest counted).
pub fn file_summaries(info: &EnvironmentInfo, max_files: usize, width: usize) -> Vec<String> {
    let mut lines: Vec<String> = info
        .detected_files
        .iter()
        .take(max_files)
        .map(|(path, text)| {
            let summary: String = text
                .lines()
                .map(str::trim)
                .filter(|l| {
                    !l.is_empty()
                        && !l.starts_with('#')
                        && !l.starts_with("//")
                        && !matches!(*l, "{" | "}" | "[" | "]" | "<?xml")
                })
                .collect::<Vec<_>>()
                .join("; ");
            let mut s: String = summary.chars().take(width).collect();
            if summary.chars().count() > width {
                s.push('…');
            }
            format!("{path}: {s}")
        })
        .collect();
    let more = info.detected_files.len().saturating_sub(max_files);
    if more > 0 {
        lines.push(format!("… and {more} more files"));
    }
    lines
}
