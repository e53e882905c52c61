//! The seam to the environment sub-phase (seed 002 §5), which runs before the first
//! step. The CLI plugs in `dandori-env`; the runner only decides what its status
//! means for the run (`environment_setup.verification.on_failure`).

use std::collections::BTreeMap;
use std::path::Path;

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
}

pub trait EnvironmentPhase: Send + Sync {
    /// Sets up and verifies the environment of `repo`, writing its records under
    /// `run_dir/environment/`.
    fn prepare(&self, repo: &Path, run_dir: &Path) -> Result<EnvironmentReport, String>;
}
