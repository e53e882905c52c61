//! The seam to the environment sub-phase (seed 002 §5), which runs before the first
//! step. The CLI plugs in `dandori-env`; the runner only decides what its status
//! means for the run (`environment_setup.verification.on_failure`: a failed
//! environment stops the run with `ENVIRONMENT_FAILED` unless `warn` or `ignore`
//! is set explicitly) and hands the summary to every executor prompt.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentStatus {
    Success,
    PartialSuccess,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvironmentReport {
    pub status: EnvironmentStatus,
    /// Variables that activate the prepared environment (PATH with the venv or
    /// node_modules/.bin first, …), applied to every agent and unit command.
    pub activation_env: BTreeMap<String, String>,
    pub message: String,
    /// The setup record (`<run>/environment/setup.json`), when something was set up.
    pub setup_record: Option<PathBuf>,
    /// Seed 002 §7.2: the environment as the executing agent is told about it
    /// (the body of the prompt's `## Execution environment` section).
    pub summary: String,
    /// Extra fields of the `ENVIRONMENT_SETUP` trace event (regenerations, …).
    pub details: serde_json::Value,
}

pub trait EnvironmentPhase: Send + Sync {
    /// Sets up and verifies the environment of `repo`, writing its records under
    /// `run_dir/environment/`.
    fn prepare(&self, repo: &Path, run_dir: &Path) -> Result<EnvironmentReport, String>;
}

/// `<run>/environment/summary.md`: the seed 002 §7.2 summary the prompts carry.
pub fn summary_path(run_dir: &Path) -> PathBuf {
    run_dir.join("environment").join("summary.md")
}

/// The summary of a run's prepared environment, if the sub-phase ran.
pub fn read_summary(run_dir: &Path) -> Option<String> {
    dandori_fs::read_to_string(summary_path(run_dir)).ok()
}

/// Agents and unit commands find the summary file here.
pub const SUMMARY_FILE_VAR: &str = "DANDORI_ENVIRONMENT_FILE";
/// …and the environment's status (`success`, `partial_success`, `failed`).
pub const STATUS_VAR: &str = "DANDORI_ENVIRONMENT_STATUS";
