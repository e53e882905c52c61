//! The demo agent: a deterministic, scripted stand-in for a coding agent, shipped
//! only so `dandori demo` can show the whole loop without a model. It writes the
//! next scripted version of each of a step's target files (see
//! [`crate::example::SCRIPT`]); the runner around it is the real one (worktrees,
//! diff-size check, unit commands, commits with trailers, report).

use std::collections::BTreeMap;
use std::sync::Mutex;

use dandori_runner::RunnerError;
use dandori_runner::executor::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};

use crate::example::{SCRIPT, original};

pub struct DemoAgent {
    /// Step id → the step's `scope.target_paths`.
    targets: BTreeMap<String, Vec<String>>,
    /// Step id → the (file, version) it writes, fixed at its first call so a fix
    /// attempt or a resumed step writes the same thing again.
    chosen: Mutex<BTreeMap<String, Vec<(String, usize)>>>,
}

impl DemoAgent {
    pub fn new(targets: BTreeMap<String, Vec<String>>) -> Self {
        DemoAgent {
            targets,
            chosen: Mutex::new(BTreeMap::new()),
        }
    }

    /// For each target file with a script: the version after the one the worktree
    /// holds. A file changed by hand (matching no version) is left alone.
    fn decide(&self, step_id: &str, workdir: &std::path::Path) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        for target in self.targets.get(step_id).into_iter().flatten() {
            let Some((_, versions)) = SCRIPT.iter().find(|(p, _)| p == target) else {
                continue;
            };
            let current = dandori_fs::read_to_string(workdir.join(target)).unwrap_or_default();
            let at = std::iter::once(original(target).unwrap_or_default())
                .chain(versions.iter().copied())
                .position(|v| v == current);
            if let Some(k) = at
                && k < versions.len()
            {
                out.push((target.clone(), k + 1));
            }
        }
        out
    }
}

impl Executor for DemoAgent {
    fn name(&self) -> &'static str {
        "demo"
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        let plan = {
            let mut chosen = self
                .chosen
                .lock()
                .map_err(|_| RunnerError::Executor("demo agent state poisoned".to_string()))?;
            chosen
                .entry(req.step_id.to_string())
                .or_insert_with(|| self.decide(req.step_id, req.workdir))
                .clone()
        };
        let mut log = dandori_fs::read_to_string(req.log).unwrap_or_default();
        log.push_str(&format!(
            "[demo agent] {}: scripted edits (no model is involved)\n",
            req.step_id
        ));
        for (file, version) in &plan {
            let Some(text) = SCRIPT
                .iter()
                .find(|(p, _)| p == file)
                .and_then(|(_, v)| v.get(version - 1))
            else {
                continue;
            };
            dandori_fs::write_atomic(req.workdir.join(file), text)?;
            log.push_str(&format!(
                "[demo agent] wrote {file} (scripted version {version})\n"
            ));
        }
        if plan.is_empty() {
            log.push_str("[demo agent] nothing scripted for this step's target paths\n");
        }
        dandori_fs::write_atomic(req.log, log)?;
        let summary = if plan.is_empty() {
            "demo agent: nothing scripted for this step".to_string()
        } else {
            format!(
                "demo agent: wrote {}",
                plan.iter()
                    .map(|(f, _)| f.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Ok(StepExecution {
            outcome: ExecOutcome::Completed,
            tokens: TokenUsage::default(),
            actions: plan.len() as u32,
            reflections: Vec::new(),
            summary,
            tooling: None,
            calls: Vec::new(),
        })
    }
}
