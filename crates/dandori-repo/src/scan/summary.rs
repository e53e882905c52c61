//! Counts by extension, language and directory, and the compact tree text.

use std::collections::BTreeMap;
use std::fmt::Write;

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::FileEntry;
use super::language::extension;

/// A name with a count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountEntry {
    pub name: String,
    pub files: usize,
}

/// A directory with the files below it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirStat {
    pub path: String,
    pub files: usize,
    pub bytes: u64,
}

/// Counts over the listed files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoSummary {
    pub total_files: usize,
    pub total_bytes: u64,
    pub text_files: usize,
    pub test_files: usize,
    /// Most frequent first.
    pub by_extension: Vec<CountEntry>,
    /// Most frequent first.
    pub by_language: Vec<CountEntry>,
    /// The largest directories of the first two levels, most files first.
    pub top_directories: Vec<DirStat>,
    /// The most frequent code language, if any.
    pub primary_language: Option<String>,
    /// Deepest file depth seen.
    pub max_depth: usize,
}

const TOP_DIRS: usize = 15;

fn sorted_counts(map: FxHashMap<String, usize>) -> Vec<CountEntry> {
    let mut v: Vec<CountEntry> = map
        .into_iter()
        .map(|(name, files)| CountEntry { name, files })
        .collect();
    v.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.name.cmp(&b.name)));
    v
}

pub(super) fn summarise(files: &[FileEntry]) -> RepoSummary {
    let mut by_ext: FxHashMap<String, usize> = FxHashMap::default();
    let mut by_lang: FxHashMap<String, usize> = FxHashMap::default();
    let mut dirs: FxHashMap<&str, (usize, u64)> = FxHashMap::default();
    let mut total_bytes = 0;
    let mut text_files = 0;
    let mut test_files = 0;
    let mut max_depth = 0;
    for f in files {
        total_bytes += f.size;
        max_depth = max_depth.max(f.depth);
        if !f.is_binary {
            text_files += 1;
        }
        if f.is_test {
            test_files += 1;
        }
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let ext = extension(name).map_or_else(|| "(none)".to_string(), |e| e.to_ascii_lowercase());
        *by_ext.entry(ext).or_default() += 1;
        if let Some(l) = &f.language {
            *by_lang.entry(l.clone()).or_default() += 1;
        }
        // First- and second-level directories.
        let mut end = 0;
        for _ in 0..2 {
            match f.path[end..].find('/') {
                Some(i) => {
                    end += i;
                    let e = dirs.entry(&f.path[..end]).or_default();
                    e.0 += 1;
                    e.1 += f.size;
                    end += 1;
                }
                None => break,
            }
        }
    }
    let by_language = sorted_counts(by_lang);
    let primary_language = by_language
        .iter()
        .find(|c| super::language::is_code_language(&c.name))
        .map(|c| c.name.clone());
    let mut top: Vec<DirStat> = dirs
        .into_iter()
        .map(|(p, (n, b))| DirStat {
            path: p.to_string(),
            files: n,
            bytes: b,
        })
        .collect();
    top.sort_by(|a, b| b.files.cmp(&a.files).then_with(|| a.path.cmp(&b.path)));
    top.truncate(TOP_DIRS);
    RepoSummary {
        total_files: files.len(),
        total_bytes,
        text_files,
        test_files,
        by_extension: sorted_counts(by_ext),
        by_language,
        top_directories: top,
        primary_language,
        max_depth,
    }
}

#[derive(Default)]
struct DirNode {
    files: usize,
    /// Direct files (names), kept only for small directories.
    direct: Vec<String>,
    children: BTreeMap<String, DirNode>,
}

/// Direct file names listed under a directory in the tree text.
const LIST_FILES_UP_TO: usize = 8;
/// Child directories shown per directory before "… N more".
const MAX_CHILD_DIRS: usize = 12;

/// A compact tree: directories with file counts, the deepest level that fits in
/// `max_chars`; small directories list their files.
pub(super) fn tree_text(files: &[FileEntry], max_chars: usize) -> String {
    let mut root = DirNode::default();
    for f in files {
        let mut node = &mut root;
        node.files += 1;
        let mut parts = f.path.split('/').peekable();
        while let Some(part) = parts.next() {
            if parts.peek().is_none() {
                node.direct.push(part.to_string());
            } else {
                node = node.children.entry(part.to_string()).or_default();
                node.files += 1;
            }
        }
    }
    let mut best = format!("./ ({} files)\n", root.files);
    if best.len() > max_chars {
        return super::truncate_chars(&best, max_chars).0;
    }
    for depth in 1..=12 {
        let mut out = format!("./ ({} files)\n", root.files);
        render(&root, 0, depth, &mut out);
        if out.len() > max_chars {
            break;
        }
        let grew = out.len() > best.len();
        best = out;
        if !grew {
            break;
        }
    }
    best
}

fn render(node: &DirNode, indent: usize, depth_left: usize, out: &mut String) {
    if depth_left == 0 {
        return;
    }
    let pad = "  ".repeat(indent + 1);
    let mut children: Vec<(&String, &DirNode)> = node.children.iter().collect();
    children.sort_by(|a, b| b.1.files.cmp(&a.1.files).then_with(|| a.0.cmp(b.0)));
    let hidden = children.len().saturating_sub(MAX_CHILD_DIRS);
    let mut shown: Vec<(&String, &DirNode)> = children.into_iter().take(MAX_CHILD_DIRS).collect();
    shown.sort_by(|a, b| a.0.cmp(b.0));
    for (name, child) in shown {
        let _ = writeln!(out, "{pad}{name}/ ({} files)", child.files);
        render(child, indent + 1, depth_left - 1, out);
    }
    if hidden > 0 {
        let _ = writeln!(out, "{pad}… {hidden} more directories");
    }
    if node.direct.len() <= LIST_FILES_UP_TO {
        let mut direct = node.direct.clone();
        direct.sort();
        for f in direct {
            let _ = writeln!(out, "{pad}{f}");
        }
    } else {
        let _ = writeln!(out, "{pad}… {} files", node.direct.len());
    }
}
