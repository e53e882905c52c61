//! `stage.json` (seed 004 §6): the runner's progress over the steps of
//! `planning.json`. `steps[i].step_id` equals `planning.steps[i].step_id`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::Extra;
use super::planning::Planning;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Stage {
    pub version: String,
    pub request_id: String,
    pub run_id: String,
    /// Index into `steps` of the next step to run.
    pub current_step_index: usize,
    pub status: RunStatus,
    pub created_at: String,
    pub updated_at: String,
    pub steps: Vec<StageStep>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Planned,
    Running,
    Done,
    Failed,
    NeedsInput,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StageStep {
    pub step_id: String,
    pub status: StepStatus,
    pub attempts: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<String>,
    /// The commit that proves the step done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Reason code when failed / skipped / needs_input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    Pending,
    Running,
    Done,
    Failed,
    Skipped,
    NeedsInput,
}

impl Stage {
    /// A fresh stage for `planning`: every step pending, index 0.
    pub fn for_planning(planning: &Planning, now: &str) -> Self {
        Stage {
            version: planning.version.clone(),
            request_id: planning.request_id.clone(),
            run_id: planning.run_id.clone(),
            current_step_index: 0,
            status: RunStatus::Planned,
            created_at: now.to_string(),
            updated_at: now.to_string(),
            steps: planning
                .steps
                .iter()
                .map(|s| StageStep {
                    step_id: s.step_id.clone(),
                    status: StepStatus::Pending,
                    attempts: 0,
                    started_at: None,
                    finished_at: None,
                    commit: None,
                    reason_code: None,
                    message: None,
                    extra: Extra::new(),
                })
                .collect(),
            extra: Extra::new(),
        }
    }
}
