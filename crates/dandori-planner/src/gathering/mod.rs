//! Pre-planning information gathering (seed 002 §3, seed 000 §2.1): the repository
//! scan, retrieval over it, and environment analysis.
//!
//! The planner depends on three functions here — [`scan`], [`Index::build`] /
//! [`Index::search`] and [`analyze_environment`] / [`select_environment`] — whose
//! signatures follow the team contracts of `dandori-repo` and `dandori-env`. Until
//! those crates land, [`repo`] and [`environment`] hold small real implementations
//! (a `.gitignore`-aware walk with BM25 over path and content tokens; the seed 002
//! §4.2 detection table with default commands). Swapping them for the crates is a
//! change of this module only.

pub mod environment;
pub mod repo;

pub use environment::{
    EnvironmentAnalysis, analyze_environment, select_environment, unit_test_commands,
};
pub use repo::{Hit, Index, RepoFile, RepoScan, ScanOptions, Snippet, scan};

/// Progress of long work, reported through [`crate::PlanOptions::progress`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Progress {
    /// Files seen so far by the scan.
    Scanning { files: usize },
    /// The scan is complete.
    Scanned { files: usize, indexed: usize },
    /// Retrieval index built.
    Indexed { terms: usize },
    /// The draft planner is running.
    Drafting { planner: String },
    /// Files are being written to the run directory.
    Writing { run_dir: std::path::PathBuf },
}
