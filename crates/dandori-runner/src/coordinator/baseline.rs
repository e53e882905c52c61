//! The baseline (issue 20): the plan's test commands run once on the base commit,
//! in a pool worktree (never the user's checkout), before the first step. What
//! failed there is pre-existing: no step is blamed for it. Recorded in
//! `stage.json` (`baseline`) with a durable write, so a run killed during the
//! baseline runs it again on resume and one killed later never does.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::error::RunnerError;
use crate::events;
use crate::evidence::Baseline;
use crate::step::{self, TestCommand};
use crate::workspace::StepWorkspace;
use crate::worktree::PoolWorktree;

use super::Coordinator;

impl Coordinator<'_> {
    /// The test commands of the plan, each once, in plan order: every step's
    /// unit and e2e commands, then `context.test_instructions.unit` (the
    /// follow-up steps' command).
    pub(super) fn test_commands(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        let follow_up = self.planning.context.test_instructions.unit.clone();
        let all = self
            .planning
            .steps
            .iter()
            .flat_map(|s| {
                s.commands
                    .unit
                    .iter()
                    .flatten()
                    .chain(s.commands.e2e.iter().flatten())
                    .cloned()
            })
            .chain(follow_up)
            .chain(crate::evidence::command_checks(
                &self.planning.context.acceptance_criteria,
                &self
                    .planning
                    .context
                    .acceptance_criteria
                    .iter()
                    .map(|a| a.id.clone())
                    .collect::<Vec<_>>(),
            ));
        for c in all {
            if !c.trim().is_empty() && !out.contains(&c) {
                out.push(c);
            }
        }
        out
    }

    pub(super) fn run_baseline(
        &mut self,
        env: &BTreeMap<String, String>,
    ) -> Result<(), RunnerError> {
        if self.baseline().is_some_and(|b| b.commit == self.work_start) {
            return Ok(());
        }
        // Commands the step would refuse anyway are not run here either.
        let commands: Vec<String> = self
            .test_commands()
            .into_iter()
            .filter(|c| !step::invokes_gh(c) && self.command_policy.check(c).is_ok())
            .collect();
        if commands.is_empty() || self.sandbox.refusal().is_some() {
            return Ok(());
        }
        let short: String = self.work_start.chars().take(8).collect();
        self.progress(&format!(
            "baseline: running {} test command(s) on the base commit {short}",
            commands.len()
        ));
        // In a copy-on-write workspace when the steps use them (no checkout of
        // the repository), else in a pool worktree the first step then takes.
        let (overlay, wt, dir) = match self.overlay_base.clone() {
            Some(base) => {
                let mut ws = self.overlay_workspace(base)?;
                ws.prepare(&self.main, &self.work_start)?;
                let dir = ws.path().to_path_buf();
                (Some(ws), None, dir)
            }
            None => {
                let path = self.next_pool_path()?;
                let wt = PoolWorktree::create(&self.main, path, &self.work_start)?;
                let dir = wt.path().to_path_buf();
                (None, Some(wt), dir)
            }
        };
        if let Some(links) = &self.node_links {
            links.link_into(&dir)?;
        }
        let log = self.paths.logs.join("baseline.unit.log");
        let timeout = Duration::from_secs(self.planning.limits.timeout_sec.max(1));
        let policy = step::sandbox_policy(&dir, &self.paths.run_dir);
        // Test commands may tell the baseline from a step's run.
        let mut env = env.clone();
        env.insert("DANDORI_BASELINE".to_string(), "1".to_string());
        let env = &env;
        let mut runs = Vec::new();
        for c in &commands {
            let (_, run) = step::run_test_command(&TestCommand {
                sandbox: &self.sandbox,
                policy: &policy,
                dir: &dir,
                run_dir: &self.paths.run_dir,
                command: c,
                env,
                import_roots: &self.import_roots,
                timeout,
                log: &log,
                masker: &self.masker,
            })?;
            runs.push(run);
        }
        let baseline = Baseline {
            commit: self.work_start.clone(),
            runs,
        };
        let failing = baseline.failures();
        self.emit(
            events::BASELINE,
            json!({"commit": baseline.commit, "log": log,
                   "commands": baseline.runs.iter().map(|r| json!({
                       "command": r.command, "exit_code": r.exit_code,
                       "tests": r.tests.len(), "failing": r.failing().len(),
                       "counted": r.counted})).collect::<Vec<_>>(),
                   "failing": failing.iter().map(|(c, t)| json!({"command": c, "test": t})).collect::<Vec<_>>()}),
        );
        let passing: usize = baseline
            .runs
            .iter()
            .map(|r| r.tests.values().filter(|p| **p).count())
            .sum();
        // Tests a runner counted without naming them: never "0 pass, 0 fail".
        let unnamed: Vec<String> = baseline
            .runs
            .iter()
            .filter(|r| r.tests.is_empty())
            .filter_map(|r| {
                r.counted.map(|c| {
                    format!(
                        "`{}` ran {} test(s), {} failing, without naming them (a count without ids: only its exit code is compared)",
                        r.command, c.ran, c.failed
                    )
                })
            })
            .collect();
        // A command that crashed before running a test: said as it is.
        for r in baseline.runs.iter().filter(|r| r.crash.is_some()) {
            self.progress(&format!(
                "baseline: `{}` fails on the base commit without running a test (exit {}): {}; is the environment right for this commit? (log: {})",
                r.command,
                crate::evidence::exit_str(r.exit_code),
                r.crash.as_deref().unwrap_or_default(),
                log.display()
            ));
        }
        self.progress(&format!(
            "baseline: {passing} test(s) pass, {} fail on the base commit{}{}",
            failing.len(),
            if failing.is_empty() {
                String::new()
            } else {
                " (pre-existing: not blamed on any step)".to_string()
            },
            if unnamed.is_empty() {
                String::new()
            } else {
                format!("; {}", unnamed.join("; "))
            }
        ));
        self.stage
            .extra
            .insert("baseline".to_string(), json!(baseline));
        self.save()?;
        // A copy-on-write workspace is unmounted and deleted when dropped.
        drop(overlay);
        match wt {
            // At the base, with what the commands left recorded: the first step
            // moves it like any pool worktree.
            Some(wt) if self.opts.dispatch.is_none() => self.idle.push(wt),
            Some(wt) => self.main.remove_worktree(wt.path())?,
            None => {}
        }
        Ok(())
    }
}
