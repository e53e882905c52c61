//! Repository scan and lexical retrieval, following the `dandori-repo` contract
//! (`scan(root, &ScanOptions) -> RepoScan`, `Index::build(&RepoScan)`,
//! `index.search(query, k) -> Vec<Hit>`).
//!
//! The walk respects `.gitignore` (also outside a git repository), skips `.git` and
//! dandori's own `.dandori/`, and indexes text files up to `max_file_size` bytes.
//! Retrieval is BM25 over path tokens (counted three times) and content tokens;
//! Japanese is tokenised as character bigrams ([`crate::text::tokens`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::PlannerError;
use crate::text;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoFile {
    /// Relative, `/`-separated.
    pub path: String,
    pub size: u64,
    pub is_test: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RepoScan {
    pub root: PathBuf,
    /// Sorted by path.
    pub files: Vec<RepoFile>,
    /// The README at the root, if any (relative path).
    pub readme: Option<String>,
    /// Test file → the source files it tests (matched by name).
    pub test_map: BTreeMap<String, Vec<String>>,
    /// Top-level directories and their file counts, one per line.
    pub tree_summary: String,
    /// Files too large to index.
    pub skipped_large: usize,
}

impl RepoScan {
    pub fn contains(&self, path: &str) -> bool {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .is_ok()
    }

    /// True when some file lives under `dir` (relative, no trailing slash needed).
    pub fn has_dir(&self, dir: &str) -> bool {
        let d = dir.trim_end_matches('/');
        if d.is_empty() {
            return true;
        }
        let prefix = format!("{d}/");
        let i = self
            .files
            .partition_point(|f| f.path.as_str() < prefix.as_str());
        self.files
            .get(i)
            .is_some_and(|f| f.path.starts_with(&prefix))
    }

    /// Tests whose mapped sources include `source`.
    pub fn tests_for(&self, source: &str) -> Vec<String> {
        self.test_map
            .iter()
            .filter(|(_, srcs)| srcs.iter().any(|s| s == source))
            .map(|(t, _)| t.clone())
            .collect()
    }
}

pub struct ScanOptions<'a> {
    /// Bytes; larger files are listed but not indexed.
    pub max_file_size: u64,
    /// Directories (relative) never walked, besides `.git`.
    pub exclude: Vec<String>,
    pub progress: Option<&'a dyn Fn(usize)>,
}

impl Default for ScanOptions<'_> {
    fn default() -> Self {
        ScanOptions {
            max_file_size: 102_400,
            exclude: vec![".dandori".to_string()],
            progress: None,
        }
    }
}

/// True for paths that are tests by common conventions of Python, JS/TS, Go, Rust,
/// Java and Ruby.
pub fn is_test_path(path: &str) -> bool {
    let lower = path.to_lowercase();
    let name = lower.rsplit('/').next().unwrap_or(&lower);
    lower.starts_with("tests/")
        || lower.starts_with("test/")
        || lower.contains("/tests/")
        || lower.contains("/test/")
        || lower.contains("__tests__/")
        || lower.starts_with("spec/")
        || name.starts_with("test_")
        || name.contains("_test.")
        || name.contains(".test.")
        || name.contains(".spec.")
        || name.contains("_spec.")
        || (name.ends_with("test.java") && name.len() > "test.java".len())
}

/// The name a test file tests: `test_store.py` → `store`, `store.test.ts` → `store`.
fn tested_stem(test_path: &str) -> Option<String> {
    let name = test_path.rsplit('/').next()?;
    let stem = name.split('.').next()?;
    let stem = stem
        .strip_prefix("test_")
        .or_else(|| stem.strip_suffix("_test"))
        .or_else(|| stem.strip_suffix("_spec"))
        .or_else(|| stem.strip_suffix("Test").filter(|s| !s.is_empty()))
        .unwrap_or(stem);
    (!stem.is_empty() && stem != "test" && stem != "tests").then(|| stem.to_string())
}

fn stem_of(path: &str) -> &str {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.split('.').next().unwrap_or(name)
}

/// Walks `root`.
pub fn scan(root: &Path, opts: &ScanOptions<'_>) -> Result<RepoScan, PlannerError> {
    let mut files = Vec::new();
    let mut skipped_large = 0usize;
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(false)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .parents(false)
        .follow_links(false);
    let excluded: Vec<String> = opts
        .exclude
        .iter()
        .map(|e| e.trim_end_matches('/').to_string())
        .collect();
    let root_buf = root.to_path_buf();
    builder.filter_entry(move |e| {
        let Ok(rel) = e.path().strip_prefix(&root_buf) else {
            return true;
        };
        let rel = rel.to_string_lossy().replace('\\', "/");
        rel != ".git"
            && !excluded
                .iter()
                .any(|x| rel == *x || rel.starts_with(&format!("{x}/")))
    });
    for entry in builder.build() {
        let entry = entry.map_err(|e| PlannerError::Scan {
            root: root.to_path_buf(),
            message: e.to_string(),
        })?;
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        let path = rel.to_string_lossy().replace('\\', "/");
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        if size > opts.max_file_size {
            skipped_large += 1;
        }
        files.push(RepoFile {
            is_test: is_test_path(&path),
            path,
            size,
        });
        if let Some(p) = opts.progress
            && files.len() % 1000 == 0
        {
            p(files.len());
        }
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));

    let readme = files
        .iter()
        .find(|f| !f.path.contains('/') && f.path.to_lowercase().starts_with("readme"))
        .map(|f| f.path.clone());

    // Sources by stem, for the test map.
    let mut by_stem: HashMap<&str, Vec<&str>> = HashMap::new();
    for f in files.iter().filter(|f| !f.is_test) {
        by_stem.entry(stem_of(&f.path)).or_default().push(&f.path);
    }
    let mut test_map = BTreeMap::new();
    for f in files.iter().filter(|f| f.is_test) {
        if let Some(stem) = tested_stem(&f.path)
            && let Some(srcs) = by_stem.get(stem.as_str())
        {
            test_map.insert(f.path.clone(), srcs.iter().map(|s| s.to_string()).collect());
        }
    }

    let mut tops: BTreeMap<String, usize> = BTreeMap::new();
    for f in &files {
        let top = match f.path.split_once('/') {
            Some((d, _)) => format!("{d}/"),
            None => ".".to_string(),
        };
        *tops.entry(top).or_default() += 1;
    }
    let tree_summary = tops
        .iter()
        .map(|(d, n)| format!("{d} ({n} files)"))
        .collect::<Vec<_>>()
        .join("\n");

    Ok(RepoScan {
        root: root.to_path_buf(),
        files,
        readme,
        test_map,
        tree_summary,
        skipped_large,
    })
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Snippet {
    pub start_line: usize,
    pub end_line: usize,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    pub path: String,
    pub score: f64,
    pub snippets: Vec<Snippet>,
}

/// A BM25 index over the scanned files.
pub struct Index {
    root: PathBuf,
    paths: Vec<String>,
    doc_len: Vec<u32>,
    avg_len: f64,
    postings: HashMap<String, Vec<(u32, u32)>>,
}

const PATH_WEIGHT: u32 = 3;
const K1: f64 = 1.2;
const B: f64 = 0.75;

impl Index {
    pub fn build(scan: &RepoScan, max_file_size: u64) -> Index {
        let mut postings: HashMap<String, Vec<(u32, u32)>> = HashMap::new();
        let mut doc_len = Vec::with_capacity(scan.files.len());
        let mut paths = Vec::with_capacity(scan.files.len());
        let mut tf: HashMap<String, u32> = HashMap::new();
        for (i, f) in scan.files.iter().enumerate() {
            tf.clear();
            for t in text::tokens(&f.path) {
                *tf.entry(t).or_default() += PATH_WEIGHT;
            }
            if f.size <= max_file_size
                && let Ok(bytes) = std::fs::read(scan.root.join(&f.path))
                && !bytes.iter().take(1024).any(|&b| b == 0)
            {
                for t in text::tokens(&String::from_utf8_lossy(&bytes)) {
                    *tf.entry(t).or_default() += 1;
                }
            }
            let len: u32 = tf.values().sum();
            doc_len.push(len);
            paths.push(f.path.clone());
            for (t, n) in tf.drain() {
                postings.entry(t).or_default().push((i as u32, n));
            }
        }
        let avg_len = if doc_len.is_empty() {
            1.0
        } else {
            doc_len.iter().map(|&l| f64::from(l)).sum::<f64>() / doc_len.len() as f64
        };
        Index {
            root: scan.root.clone(),
            paths,
            doc_len,
            avg_len: avg_len.max(1.0),
            postings,
        }
    }

    pub fn terms(&self) -> usize {
        self.postings.len()
    }

    /// The `k` best files for `query`, with up to two snippets each. Ties break by path.
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        let terms: Vec<String> = text::topic_tokens(query).into_iter().collect();
        let n = self.paths.len() as f64;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        for t in &terms {
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
            for &(doc, tf) in list {
                let tf = f64::from(tf);
                let len = f64::from(self.doc_len[doc as usize]);
                let s = idf * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * len / self.avg_len));
                *scores.entry(doc).or_default() += s;
            }
        }
        let mut ranked: Vec<(u32, f64)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| self.paths[a.0 as usize].cmp(&self.paths[b.0 as usize]))
        });
        ranked.truncate(k);
        ranked
            .into_iter()
            .map(|(doc, score)| {
                let path = self.paths[doc as usize].clone();
                let snippets = self.snippets(&path, &terms);
                Hit {
                    path,
                    score: (score * 1000.0).round() / 1000.0,
                    snippets,
                }
            })
            .collect()
    }

    fn snippets(&self, path: &str, terms: &[String]) -> Vec<Snippet> {
        let Ok(content) = std::fs::read_to_string(self.root.join(path)) else {
            return Vec::new();
        };
        let mut scored: Vec<(usize, usize)> = content
            .lines()
            .enumerate()
            .map(|(i, l)| {
                let toks = text::topic_tokens(l);
                (i, terms.iter().filter(|t| toks.contains(*t)).count())
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let lines: Vec<&str> = content.lines().collect();
        scored
            .into_iter()
            .take(2)
            .map(|(i, _)| {
                let start = i.saturating_sub(1);
                let end = (i + 1).min(lines.len().saturating_sub(1));
                Snippet {
                    start_line: start + 1,
                    end_line: end + 1,
                    text: lines[start..=end].join("\n"),
                }
            })
            .collect()
    }
}
