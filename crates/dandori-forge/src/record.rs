//! `forge.json` in a run directory: where the task came from and what dandori
//! posted there, so that later commands (`run`, `revise --from-issue`,
//! `approve`) find the issue and edit their own comments instead of adding new
//! ones. Written atomically.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{ForgeError, ForgeRef};

pub const FILE: &str = "forge.json";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForgeRecord {
    pub reference: ForgeRef,
    /// The canonical shorthand (`github:o/r#1`), for people reading the file.
    pub source: String,
    pub web_url: String,
    pub title: String,
    pub issue_author: String,
    pub labels: Vec<String>,
    /// The `planning.task_specific` entry applied (seed 000 §9.3).
    pub task_type: String,
    /// Whether dandori reports back on the issue.
    pub comment: bool,
    /// Comment kind (`plan`, `status`, `completion`, `revision`) → comment id.
    #[serde(default)]
    pub comments: BTreeMap<String, u64>,
    /// Comment id → `updated_at` of the human comments already read (intake or
    /// revisions), so an edited comment counts again and nothing counts twice.
    #[serde(default)]
    pub consumed: BTreeMap<u64, String>,
    /// Whether the help label was added.
    #[serde(default)]
    pub help_label: bool,
    /// The pull / merge request `dandori run --open-pr` opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<PullRequestRecord>,
}

/// The pull / merge request of a run's work (`forge.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequestRecord {
    pub number: u64,
    pub web_url: String,
    /// The branch on the remote (`dandori/pr/REQUEST_ID`).
    pub branch: String,
    /// The commit pushed last.
    pub head_sha: String,
    pub draft: bool,
}

impl ForgeRecord {
    pub fn path(run_dir: &Path) -> PathBuf {
        run_dir.join(FILE)
    }

    /// The record of `run_dir`, or None when the run did not come from a forge.
    pub fn load(run_dir: &Path) -> Result<Option<ForgeRecord>, ForgeError> {
        read_json(&Self::path(run_dir))
    }

    pub fn save(&self, run_dir: &Path) -> Result<(), ForgeError> {
        write_json(&Self::path(run_dir), self)
    }
}

/// A JSON file of the run directory, or None when it does not exist.
pub(crate) fn read_json<T: serde::de::DeserializeOwned>(
    path: &Path,
) -> Result<Option<T>, ForgeError> {
    let bytes = match dandori_fs::read(path) {
        Ok(b) => b,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| ForgeError::Record {
            path: path.to_path_buf(),
            message: format!("line {} column {}: {e}", e.line(), e.column()),
        })
}

/// Writes pretty JSON atomically.
pub(crate) fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), ForgeError> {
    let text = serde_json::to_string_pretty(v).map_err(|e| ForgeError::Internal(e.to_string()))?;
    dandori_fs::write_atomic(path, format!("{text}\n"))?;
    Ok(())
}
