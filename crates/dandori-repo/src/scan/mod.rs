//! The repository scan: one parallel walk that respects `.gitignore`, then a
//! summary, a compact tree, environment files (seed 002 §3.2), the README and the
//! test layout.

mod environment;
pub(crate) mod language;
mod summary;
mod test_layout;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub use environment::{EnvironmentFile, Priority, environment_file_kind};
pub use language::language_for;
pub use summary::{CountEntry, DirStat, RepoSummary};
pub use test_layout::{TestMapping, belongs_to_tests, is_test_path, test_subject_stem};

use crate::RepoError;

/// Limits and switches of [`scan`]. The environment-file limits are seed 002 §8.1
/// `analysis.max_search_depth` / `analysis.max_file_size`; the general limits are
/// wider because source trees are deeper and bigger than their manifests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ScanOptions {
    /// Deepest directory level walked (root = 0); files below are not listed.
    pub max_depth: usize,
    /// Files larger than this are counted in `skipped.too_large` and not listed.
    pub max_file_size: u64,
    /// Stop listing after this many files (`truncated` is then true).
    pub max_files: usize,
    /// seed 002 §8.1 `analysis.max_search_depth`.
    pub env_max_search_depth: usize,
    /// seed 002 §8.1 `analysis.max_file_size`.
    pub env_max_file_size: u64,
    /// Honour `.gitignore`, `.ignore` and `.git/info/exclude`.
    pub respect_gitignore: bool,
    /// Walk hidden files and directories (`.git` is always skipped).
    pub include_hidden: bool,
    /// Directory names never entered, in addition to `.git`.
    pub skip_dirs: Vec<String>,
    /// README text kept, in characters.
    pub readme_max_chars: usize,
    /// Size budget of [`RepoScan::tree`], in characters.
    pub tree_max_chars: usize,
    /// Walker threads (0 = available parallelism).
    pub threads: usize,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            max_depth: 32,
            max_file_size: 1024 * 1024,
            max_files: 200_000,
            env_max_search_depth: 5,
            env_max_file_size: 102_400,
            respect_gitignore: true,
            include_hidden: false,
            skip_dirs: [
                "node_modules",
                "target",
                "venv",
                ".venv",
                "virtualenv",
                "__pycache__",
                ".tox",
                ".nox",
                ".mypy_cache",
                ".pytest_cache",
                ".ruff_cache",
                ".gradle",
                ".idea",
            ]
            .iter()
            .map(|s| (*s).to_string())
            .collect(),
            readme_max_chars: 6000,
            tree_max_chars: 3000,
            threads: 0,
        }
    }
}

/// One listed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileEntry {
    /// Relative to the root, `/`-separated.
    pub path: String,
    pub size: u64,
    /// Directory depth of the file (a file at the root has depth 1).
    pub depth: usize,
    pub language: Option<String>,
    pub is_test: bool,
    pub is_binary: bool,
}

/// What the walk left out, by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkipStats {
    pub too_large: usize,
    pub unreadable: usize,
    pub symlinks: usize,
}

/// The README found at the root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Readme {
    pub path: String,
    pub text: String,
    pub truncated: bool,
}

/// The result of [`scan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoScan {
    pub root: PathBuf,
    /// Sorted by path.
    pub files: Vec<FileEntry>,
    pub skipped: SkipStats,
    /// `max_files` was reached.
    pub truncated: bool,
    pub summary: RepoSummary,
    /// A compact directory tree for prompts, within `tree_max_chars`.
    pub tree: String,
    pub environment_files: Vec<EnvironmentFile>,
    pub readme: Option<Readme>,
    /// Test file → the source files it tests (naming conventions).
    pub test_map: Vec<TestMapping>,
    pub options: ScanOptions,
}

impl RepoScan {
    /// The entry for a relative path.
    pub fn file(&self, path: &str) -> Option<&FileEntry> {
        self.files
            .binary_search_by(|f| f.path.as_str().cmp(path))
            .ok()
            .and_then(|i| self.files.get(i))
    }

    /// Test files mapped to `source` by [`RepoScan::test_map`].
    pub fn tests_for(&self, source: &str) -> Vec<&str> {
        self.test_map
            .iter()
            .filter(|m| m.sources.iter().any(|s| s == source))
            .map(|m| m.test.as_str())
            .collect()
    }
}

/// Bytes sniffed for a NUL to call a file binary.
const SNIFF_BYTES: usize = 1024;

/// Walks `root` and builds a [`RepoScan`].
pub fn scan(root: impl AsRef<Path>, options: &ScanOptions) -> Result<RepoScan, RepoError> {
    let root = root.as_ref();
    if !root.is_dir() {
        return Err(RepoError::RepoNotFound {
            path: root.to_path_buf(),
        });
    }
    let collected = walk(root, options)?;
    let Collected {
        mut files,
        skipped,
        truncated,
    } = collected;
    files.sort_by(|a, b| a.path.cmp(&b.path));

    let summary = summary::summarise(&files);
    let tree = summary::tree_text(&files, options.tree_max_chars);
    let environment_files = environment::detect(&files, options);
    let readme = read_readme(root, &files, options.readme_max_chars)?;
    let test_map = test_layout::map_tests(&files);
    Ok(RepoScan {
        root: root.to_path_buf(),
        files,
        skipped,
        truncated,
        summary,
        tree,
        environment_files,
        readme,
        test_map,
        options: options.clone(),
    })
}

struct Collected {
    files: Vec<FileEntry>,
    skipped: SkipStats,
    truncated: bool,
}

fn walk(root: &Path, options: &ScanOptions) -> Result<Collected, RepoError> {
    let mut builder = ignore::WalkBuilder::new(root);
    let skip_dirs = options.skip_dirs.clone();
    builder
        .hidden(!options.include_hidden)
        .git_ignore(options.respect_gitignore)
        .git_exclude(options.respect_gitignore)
        .git_global(false)
        .ignore(options.respect_gitignore)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(Some(options.max_depth.saturating_add(1)))
        .threads(options.threads)
        .filter_entry(move |e| {
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            if !is_dir {
                return true;
            }
            let name = e.file_name().to_string_lossy();
            if name == ".git" || skip_dirs.iter().any(|s| *s == name) {
                return false;
            }
            // A virtualenv under any name.
            e.depth() == 0 || !e.path().join("pyvenv.cfg").is_file()
        });

    let shared = Shared {
        root,
        max_files: options.max_files,
        max_size: options.max_file_size,
        state: Mutex::new(Collected {
            files: Vec::new(),
            skipped: SkipStats::default(),
            truncated: false,
        }),
        root_error: Mutex::new(None),
    };
    builder
        .build_parallel()
        .visit(&mut VisitorBuilder { shared: &shared });
    let Shared {
        state, root_error, ..
    } = shared;
    let collected = state.into_inner().map_err(|_| RepoError::Walk {
        path: root.to_path_buf(),
        message: "a walker thread panicked".into(),
    })?;
    if let Ok(Some(message)) = root_error.into_inner() {
        return Err(RepoError::Walk {
            path: root.to_path_buf(),
            message,
        });
    }
    Ok(collected)
}

struct Shared<'a> {
    root: &'a Path,
    max_files: usize,
    max_size: u64,
    state: Mutex<Collected>,
    root_error: Mutex<Option<String>>,
}

struct VisitorBuilder<'s, 'a> {
    shared: &'s Shared<'a>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for VisitorBuilder<'s, '_> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            shared: self.shared,
            files: Vec::new(),
            skipped: SkipStats::default(),
            buf: vec![0u8; SNIFF_BYTES],
        })
    }
}

/// One walker thread: collects locally, merges into the shared state in batches
/// and when dropped.
struct Visitor<'s, 'a> {
    shared: &'s Shared<'a>,
    files: Vec<FileEntry>,
    skipped: SkipStats,
    buf: Vec<u8>,
}

impl Visitor<'_, '_> {
    /// Merges the local batch; false when `max_files` is reached.
    fn flush(&mut self) -> bool {
        let Ok(mut g) = self.shared.state.lock() else {
            return false;
        };
        g.files.append(&mut self.files);
        g.skipped.too_large += std::mem::take(&mut self.skipped.too_large);
        g.skipped.unreadable += std::mem::take(&mut self.skipped.unreadable);
        g.skipped.symlinks += std::mem::take(&mut self.skipped.symlinks);
        if g.files.len() >= self.shared.max_files {
            g.files.truncate(self.shared.max_files);
            g.truncated = true;
            return false;
        }
        true
    }
}

impl Drop for Visitor<'_, '_> {
    fn drop(&mut self) {
        self.flush();
    }
}

impl ignore::ParallelVisitor for Visitor<'_, '_> {
    fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        use ignore::WalkState;
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                if err.depth() == Some(0) {
                    if let Ok(mut g) = self.shared.root_error.lock() {
                        *g = Some(err.to_string());
                    }
                    return WalkState::Quit;
                }
                self.skipped.unreadable += 1;
                return WalkState::Continue;
            }
        };
        let Some(ft) = entry.file_type() else {
            return WalkState::Continue;
        };
        if ft.is_symlink() {
            self.skipped.symlinks += 1;
            return WalkState::Continue;
        }
        if !ft.is_file() {
            return WalkState::Continue;
        }
        let Ok(rel) = entry.path().strip_prefix(self.shared.root) else {
            return WalkState::Continue;
        };
        let path = rel_path_string(rel);
        let size = match entry.metadata() {
            Ok(m) => m.len(),
            Err(_) => {
                self.skipped.unreadable += 1;
                return WalkState::Continue;
            }
        };
        if size > self.shared.max_size {
            self.skipped.too_large += 1;
            return WalkState::Continue;
        }
        let language = language_for(&path);
        // Known source extensions are not opened here: the index checks for NUL
        // bytes when it reads them anyway.
        let is_binary = if language::binary_extension(&path) {
            true
        } else if size == 0 || language.is_some() {
            false
        } else {
            match sniff_binary(entry.path(), &mut self.buf) {
                Some(b) => b,
                None => {
                    self.skipped.unreadable += 1;
                    return WalkState::Continue;
                }
            }
        };
        let is_test = is_test_path(&path);
        self.files.push(FileEntry {
            depth: entry.depth(),
            language: language.map(str::to_string),
            is_test,
            is_binary,
            size,
            path,
        });
        if self.files.len() >= 512 && !self.flush() {
            return WalkState::Quit;
        }
        WalkState::Continue
    }
}

fn rel_path_string(rel: &Path) -> String {
    let mut out = String::new();
    for (i, c) in rel.components().enumerate() {
        if i > 0 {
            out.push('/');
        }
        out.push_str(&c.as_os_str().to_string_lossy());
    }
    out
}

/// `Some(true)` when the head of the file has a NUL byte; `None` when unreadable.
fn sniff_binary(path: &Path, buf: &mut [u8]) -> Option<bool> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut filled = 0;
    while filled < buf.len() {
        match f.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(memchr::memchr(0, &buf[..filled]).is_some())
}

/// README names looked for at the root, in order of preference.
const README_NAMES: &[&str] = &[
    "README.md",
    "README.rst",
    "README.txt",
    "README",
    "README.markdown",
    "readme.md",
    "Readme.md",
    "README.ja.md",
];

fn read_readme(
    root: &Path,
    files: &[FileEntry],
    max_chars: usize,
) -> Result<Option<Readme>, RepoError> {
    let found = README_NAMES.iter().find_map(|name| {
        files
            .binary_search_by(|f| f.path.as_str().cmp(name))
            .ok()
            .and_then(|i| files.get(i))
    });
    let Some(entry) = found else {
        return Ok(None);
    };
    let bytes = dandori_fs::read(root.join(&entry.path))?;
    let text = String::from_utf8_lossy(&bytes);
    let (text, truncated) = truncate_chars(&text, max_chars);
    Ok(Some(Readme {
        path: entry.path.clone(),
        text,
        truncated,
    }))
}

/// The first `max_chars` characters of `s`, and whether anything was cut.
pub(crate) fn truncate_chars(s: &str, max_chars: usize) -> (String, bool) {
    match s.char_indices().nth(max_chars) {
        Some((i, _)) => (s[..i].to_string(), true),
        None => (s.to_string(), false),
    }
}
