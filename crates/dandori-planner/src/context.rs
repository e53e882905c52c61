//! [`PlanningContext`]: everything a [`crate::DraftPlanner`] may look at. Built once
//! by [`crate::plan`] from pre-planning information gathering (seed 002 §3,
//! seed 000 §2.1).

use std::path::PathBuf;

use dandori_config::{Config, TaskPlanningConfig};
use dandori_plan::SelectedEnvironment;

use crate::gathering::{EnvironmentAnalysis, Hit, Index, RepoScan};
use crate::request::Request;

pub struct PlanningContext {
    pub request: Request,
    /// The repository root (absolute).
    pub repo_root: PathBuf,
    /// The repository path of the request file as `inputs.request_path` records it.
    pub request_path: String,
    pub scan: RepoScan,
    /// Retrieval over the scan; per-subtask queries go through [`Self::search`].
    pub index: Index,
    /// The best files for the request as a whole.
    pub hits: Vec<Hit>,
    pub environment: EnvironmentAnalysis,
    pub selected_environment: SelectedEnvironment,
    /// Unit test commands of the selected environment (`commands.unit`).
    pub unit_commands: Vec<String>,
    pub config: Config,
    pub task_planning: TaskPlanningConfig,
}

impl PlanningContext {
    /// The `k` files most relevant to `query`.
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        self.index.search(query, k)
    }

    /// The subtask cap: the smaller of `planning.max_subtasks` and
    /// `chunking.max_subtasks`, at least 1; `decomposition_level: minimal` caps at 3.
    pub fn max_subtasks(&self) -> usize {
        let cap = self
            .config
            .planning
            .max_subtasks
            .min(self.task_planning.chunking.max_subtasks)
            .max(1) as usize;
        match self.config.planning.decomposition_level {
            dandori_config::DecompositionLevel::Minimal => cap.min(3),
            dandori_config::DecompositionLevel::Moderate
            | dandori_config::DecompositionLevel::Detailed => cap,
        }
    }
}
