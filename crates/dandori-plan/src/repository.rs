//! `repository.json` in a run directory: which repository the plan belongs to.
//! The planner writes it; `run` and `resume` work only in that repository.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The file name inside the run directory.
pub const FILE_NAME: &str = "repository.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositoryRecord {
    /// Absolute, canonical path of the repository the planner scanned (`--repo`).
    pub repository: PathBuf,
}
