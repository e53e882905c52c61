//! Repository scan (tree, environment files, README, test layout) and retrieval.
//!
//! The pre-planning information gathering of seed 002 §3 and seed 000 §2.1:
//! [`scan`] walks a repository once (respecting `.gitignore`, with depth and size
//! limits) and [`retrieval::Index`] ranks its files against a request or an issue,
//! returning the best-matching snippets. [`eval`] measures file-level localisation
//! on SWE-bench-format instances.

pub mod eval;
pub mod retrieval;
pub mod scan;

pub use retrieval::{Hit, Index, Snippet, target_paths_for};
pub use scan::{
    EnvironmentFile, FileEntry, Readme, RepoScan, RepoSummary, ScanOptions, TestMapping, scan,
};

use std::path::PathBuf;

/// Errors of repository scanning, retrieval and the localisation evaluation.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// `REPO_NOT_FOUND`: the repository root does not exist or is not a directory.
    #[error("REPO_NOT_FOUND: repository {} does not exist or is not a directory", path.display())]
    RepoNotFound { path: PathBuf },
    /// `REPO_WALK_FAILED`: walking the tree failed in a way that is not per-file.
    #[error("REPO_WALK_FAILED: walking {}: {message}", path.display())]
    Walk { path: PathBuf, message: String },
    /// An io error that names its path.
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    /// `DATASET_INVALID`: the evaluation dataset cannot be parsed.
    #[error("DATASET_INVALID: {} at {location}: {message}", path.display())]
    Dataset {
        path: PathBuf,
        location: String,
        message: String,
    },
    /// `CHECKOUT_FAILED`: a repository could not be checked out at the base commit.
    #[error("CHECKOUT_FAILED: {instance_id}: {message}")]
    Checkout {
        instance_id: String,
        message: String,
    },
}
