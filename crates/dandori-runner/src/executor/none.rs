//! The `none` executor: no model and no agent configured. The run still prepares the
//! environment and runs the gates; every step is reported as waiting for a model.

use super::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use crate::error::RunnerError;
use crate::reason;

#[derive(Debug, Clone, Copy, Default)]
pub struct NoneExecutor;

impl Executor for NoneExecutor {
    fn name(&self) -> &'static str {
        "none"
    }

    fn can_execute(&self) -> bool {
        false
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        Ok(StepExecution {
            outcome: ExecOutcome::NeedsInput {
                reason_code: reason::MODEL_NOT_CONFIGURED,
                message: format!(
                    "step {} waits for a model: configure llm.default_provider or pass --executor command --agent-cmd",
                    req.step_id
                ),
            },
            tokens: TokenUsage::default(),
            actions: 0,
            reflections: Vec::new(),
            summary: "no executor configured".to_string(),
            tooling: None,
            calls: Vec::new(),
        })
    }
}
