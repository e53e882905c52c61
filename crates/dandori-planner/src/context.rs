//! [`PlanningContext`]: everything a [`crate::DraftPlanner`] may look at. Built once
//! by [`crate::plan`] from pre-planning information gathering (seed 002 §3,
//! seed 000 §2.1).

use std::path::PathBuf;

use dandori_config::{Config, DecompositionLevel, TaskPlanningConfig};
use dandori_plan::{PlanMode, SelectedEnvironment};

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

    /// Seed 000 §11.1.2 / seed 001 §10.3: the request's size in tokens
    /// (≈ characters / 4, the estimate dandori uses for budgets) against
    /// `planning.complexity_threshold`: at most `simple` → `simple`, at most
    /// `moderate` → `standard`, above → `complex`.
    pub fn request_mode(&self) -> PlanMode {
        let t = &self.config.planning.complexity_threshold;
        let tokens = self.request.raw.chars().count().div_ceil(4) as u64;
        if tokens <= u64::from(t.simple) {
            PlanMode::Simple
        } else if tokens <= u64::from(t.moderate) {
            PlanMode::Standard
        } else {
            PlanMode::Complex
        }
    }

    /// The decomposition level the model is asked for: with
    /// `planning.auto_adjust_level` a `simple` request gets `minimal` and a
    /// `complex` one `detailed` (seed 000 §11.1.2: simple tasks get simple
    /// planning, only complex ones detailed planning); a `standard` request,
    /// or any request without the key, gets `planning.decomposition_level`.
    pub fn decomposition_level(&self) -> DecompositionLevel {
        let configured = self.config.planning.decomposition_level;
        if !self.config.planning.auto_adjust_level {
            return configured;
        }
        match self.request_mode() {
            PlanMode::Simple => DecompositionLevel::Minimal,
            PlanMode::Standard => configured,
            PlanMode::Complex => DecompositionLevel::Detailed,
        }
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
        // The configured level: an enumeration the user wrote keeps its items
        // whatever the request's length.
        match self.config.planning.decomposition_level {
            DecompositionLevel::Minimal => cap.min(3),
            DecompositionLevel::Moderate | DecompositionLevel::Detailed => cap,
        }
    }
}
