//! Pre-planning information gathering (seed 002 §3, seed 000 §2.1): the repository
//! scan and retrieval (`dandori-repo`), and environment analysis.
//!
//! [`environment`] runs `dandori-env`'s analyser over the scan's file list and its
//! seed 002 §4.2 selection.

pub mod environment;

pub use dandori_repo::{FileEntry, Hit, Index, RepoScan, ScanOptions, Snippet};
pub use environment::{
    EnvironmentAnalysis, Toolchain, analyze_environment, localized_reason, select_environment,
    unit_test_commands,
};

/// Progress of long work, reported through [`crate::PlanOptions::progress`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// The scan of the repository started.
    Scanning { root: std::path::PathBuf },
    /// The scan is complete.
    Scanned { files: usize, millis: u64 },
    /// Retrieval index built over this many files.
    Indexed { files: usize, millis: u64 },
    /// The draft planner is running.
    Drafting { planner: String },
    /// The draft is done; ordering, sizing, graph and validation follow.
    Assembling { draft_millis: u64 },
    /// Files are being written to the run directory.
    Writing { run_dir: std::path::PathBuf },
}

/// True when `path` is a listed file.
pub fn has_file(scan: &RepoScan, path: &str) -> bool {
    scan.file(path).is_some()
}

/// True when some listed file lives under `dir` (relative; "" is the root).
pub fn has_dir(scan: &RepoScan, dir: &str) -> bool {
    let d = dir.trim_end_matches('/');
    if d.is_empty() {
        return true;
    }
    let prefix = format!("{d}/");
    let i = scan
        .files
        .partition_point(|f| f.path.as_str() < prefix.as_str());
    scan.files
        .get(i)
        .is_some_and(|f| f.path.starts_with(&prefix))
}

/// The README path, if the scan found one.
pub fn readme_path(scan: &RepoScan) -> Option<String> {
    scan.readme.as_ref().map(|r| r.path.clone())
}

/// The source files a test file tests.
pub fn sources_of<'a>(scan: &'a RepoScan, test: &str) -> impl Iterator<Item = &'a String> {
    scan.test_map
        .iter()
        .filter(move |m| m.test == test)
        .flat_map(|m| m.sources.iter())
}
