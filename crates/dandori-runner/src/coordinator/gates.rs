//! Seed 004 §3.5 gates before any step, the environment sub-phase and the
//! environment every child process of the run gets.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::OnFailure;
use serde_json::{Value, json};

use crate::environment::{self, EnvironmentReport, EnvironmentStatus};
use crate::error::RunnerError;
use crate::executor::Executor;
use crate::{events, reason};

use super::Coordinator;

impl Coordinator<'_> {
    /// The runs directory relative to the repository, excluded from the clean check.
    pub(super) fn runs_exclude(&self) -> Option<String> {
        let root = dandori_fs::canonicalize(self.main.dir()).ok()?;
        let runs_root = self.paths.run_dir.parent()?.parent()?;
        let rel = runs_root.strip_prefix(&root).ok()?;
        if rel.as_os_str().is_empty() {
            return None;
        }
        Some(rel.to_string_lossy().replace('\\', "/"))
    }

    /// Seed 004 §3.5 gates that apply before any step.
    pub(super) fn gates(&mut self, resuming: bool) -> Result<(), RunnerError> {
        let g = self.planning.gates.clone();
        let base = self.planning.base_branch.clone();
        let work = self.planning.work_branch.clone();
        if resuming && self.main.cherry_pick_in_progress()? {
            // Our own merge (older runs merged by cherry-pick) was interrupted by
            // a kill: its step is rerun. Someone else's cherry-pick is theirs.
            let (_, message, _) =
                self.main
                    .output(&["log", "-1", "--format=%B", "CHERRY_PICK_HEAD"])?;
            let ours = format!("{}: {}", crate::git::TRAILER_RUN, self.planning.run_id);
            if message.lines().any(|l| l.trim() == ours) {
                self.main.run(&["cherry-pick", "--abort"])?;
            }
        }
        let exclude = self.runs_exclude();
        let dirty = self.main.dirty_paths(exclude.as_deref())?;
        let clean = dirty.is_empty();
        self.user_checkout_clean = clean;
        // A half-made .venv is thousands of files: the event keeps the first
        // ones and the count, the message a summary by directory.
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "require_clean_worktree", "required": g.require_clean_worktree,
                   "passed": clean, "dirty": dirty.iter().take(MAX_DIRTY_LISTED).collect::<Vec<_>>(),
                   "dirty_count": dirty.len()}),
        );
        if g.require_clean_worktree && !clean {
            return Err(RunnerError::Gate {
                gate: "require_clean_worktree",
                reason_code: reason::WORKTREE_DIRTY,
                message: format!(
                    "{} has uncommitted changes: {}",
                    self.main.dir().display(),
                    summarize_dirty(&dirty)
                ),
            });
        }
        if !self.main.base_exists(&base)? {
            return Err(RunnerError::Gate {
                gate: "base_branch",
                reason_code: reason::BASE_BRANCH_MISSING,
                message: format!("base_branch {base:?} does not exist"),
            });
        }
        if g.require_work_branch && (work == base || work.trim().is_empty()) {
            return Err(RunnerError::Gate {
                gate: "require_work_branch",
                reason_code: reason::WORK_BRANCH_REQUIRED,
                message: format!("work_branch {work:?} must differ from base_branch {base:?}"),
            });
        }
        if self.main.branch_exists(&work)? {
            if !self.main.is_ancestor(&base, &work)? {
                return Err(RunnerError::Gate {
                    gate: "require_work_branch",
                    reason_code: reason::WORK_BRANCH_NOT_FROM_BASE,
                    message: format!("work branch {work:?} does not contain base {base:?}"),
                });
            }
        } else {
            self.progress(&format!(
                "git: creating branch {work} from {base} in {} (not checked out)",
                self.main.dir().display()
            ));
            self.main.run(&["branch", &work, &base])?;
        }
        // The user's checkout stays as it is: steps run in worktrees of their own
        // and move the work branch by reference (no `git checkout` here).
        self.reattach_work_branch = self.main.current_branch()?.as_deref() == Some(work.as_str());
        self.base_commit = self.main.rev_parse(&base)?;
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "require_work_branch", "required": g.require_work_branch,
                   "passed": true, "work_branch": work, "base_branch": base}),
        );
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "forbid_gh", "required": true, "passed": g.forbid_gh,
                   "enforced_by": ["gh shim first on PATH of agents and unit commands",
                                   "unit commands calling gh refused",
                                   "tool policy of the llm executor"]}),
        );
        Ok(())
    }

    /// Before the environment setup (tens of seconds) and any step: what would
    /// make the steps fail late. The agent program must be there, and git must
    /// have an identity to commit with when steps will run.
    pub(super) fn preflight(&mut self, executor: &dyn Executor) -> Result<(), RunnerError> {
        let mut problems = Vec::new();
        if let Some(p) = executor.preflight() {
            problems.push(p);
        }
        let agent = executor.agent();
        if let Some((name, Some(version))) = &agent {
            self.progress(&format!("agent: {name} {version}"));
        }
        if executor.can_execute() {
            let (ok, _, err) = self.main.output(&["var", "GIT_COMMITTER_IDENT"])?;
            if !ok {
                problems.push(format!(
                    "git has no identity to commit the steps with ({}); set user.name and user.email (git config, or GIT_AUTHOR_NAME / GIT_AUTHOR_EMAIL / GIT_COMMITTER_NAME / GIT_COMMITTER_EMAIL)",
                    err.lines().find(|l| !l.trim().is_empty()).unwrap_or("git var GIT_COMMITTER_IDENT failed").trim()
                ));
            }
        }
        self.emit(
            events::GATE_CHECK,
            json!({"gate": "preflight", "required": true, "passed": problems.is_empty(),
                   "problems": problems,
                   "agent": agent.map(|(name, version)| json!({"name": name, "version": version}))}),
        );
        if problems.is_empty() {
            return Ok(());
        }
        Err(RunnerError::Gate {
            gate: "preflight",
            reason_code: reason::PREFLIGHT_FAILED,
            message: problems.join("; "),
        })
    }

    pub(super) fn environment_phase(&mut self) -> Result<BTreeMap<String, String>, RunnerError> {
        let cfg = &self.opts.config.planning.environment_setup;
        let Some(phase) = self.opts.environment.clone().filter(|_| cfg.enabled) else {
            let message = if cfg.enabled {
                "no environment sub-phase configured for this run"
            } else {
                "planning.environment_setup.enabled is false"
            };
            self.environment = json!({"status": "skipped", "message": message});
            self.emit(events::ENVIRONMENT_SETUP, self.environment.clone());
            self.set_environment_summary(format!(
                "Current environment: not prepared by dandori ({message}); use the tools already installed on this machine.\n"
            ))?;
            return Ok(BTreeMap::new());
        };
        self.progress(&format!(
            "environment: setting up for {} in a checkout of its own (planning.environment_setup.enabled=false skips this)",
            self.main.dir().display()
        ));
        // Unset is not `warn`: only an explicit `warn` / `ignore` lets a run go on
        // with a failed environment.
        let on_failure = cfg.verification.on_failure;
        let result = phase.prepare(self.main.dir(), &self.paths.run_dir);
        let report = match result {
            Ok(r) => r,
            Err(m) => EnvironmentReport {
                status: EnvironmentStatus::Failed,
                activation_env: BTreeMap::new(),
                summary: format!(
                    "Setup status: failed (the environment sub-phase could not run: {m})\n"
                ),
                message: m,
                setup_record: None,
                details: Value::Null,
                prepared_in: None,
            },
        };
        let mut event = json!({"status": report.status, "message": report.message,
            "on_failure": on_failure, "setup_record": report.setup_record});
        if let (Some(e), Value::Object(extra)) = (event.as_object_mut(), &report.details) {
            for (k, v) in extra {
                e.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        self.environment = event;
        if let (Some(tree), Value::Object(e)) = (&report.prepared_in, &mut self.environment) {
            e.insert("prepared_in".to_string(), json!(tree));
        }
        self.environment_tree = report.prepared_in.clone();
        self.emit(events::ENVIRONMENT_SETUP, self.environment.clone());
        self.set_environment_summary(report.summary.clone())?;
        let message = match &report.setup_record {
            Some(r) if !report.message.contains(&*r.to_string_lossy()) => {
                format!("{}; setup record: {}", report.message, r.display())
            }
            _ => report.message.clone(),
        };
        match (report.status, on_failure) {
            (EnvironmentStatus::Failed, None | Some(OnFailure::Fail)) => Err(RunnerError::Gate {
                gate: "environment_setup",
                reason_code: reason::ENVIRONMENT_FAILED,
                message: format!(
                    "{message} (set planning.environment_setup.verification.on_failure: warn to run the steps anyway)"
                ),
            }),
            (EnvironmentStatus::Failed, Some(OnFailure::Warn)) => {
                self.progress(&format!(
                    "environment: warning: continuing with a failed environment (on_failure: warn): {message}"
                ));
                self.lessons.push(format!(
                    "environment setup failed, continued (on_failure: warn): {message}"
                ));
                self.environment_failure = Some(message);
                Ok(report.activation_env)
            }
            (EnvironmentStatus::Failed, Some(OnFailure::Ignore))
            | (EnvironmentStatus::Success, _)
            | (EnvironmentStatus::PartialSuccess, _) => Ok(report.activation_env),
        }
    }

    /// Seed 002 §7.2: the text every step prompt gets, also written to
    /// `<run>/environment/summary.md` for agent commands.
    fn set_environment_summary(&mut self, text: String) -> Result<(), RunnerError> {
        let text = self.masker.mask_str(&text);
        dandori_fs::write_atomic(environment::summary_path(&self.paths.run_dir), &text)?;
        self.environment_summary = Some(text);
        Ok(())
    }

    /// The environment of agents and unit commands: the caller's, the prepared
    /// environment's activation, the run's ids, and a `gh` that refuses to run.
    /// What every agent and unit command of the run gets: the user's environment
    /// with the environment phase's activation, minus secrets and the provider keys,
    /// plus the run's `bin/gh` and variables ([`Coordinator::child_env`]).
    pub(super) fn step_env(
        &self,
        activation: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, RunnerError> {
        let mut env = self.opts.base_env.clone();
        env.extend(activation);
        let provider_keys = super::provider_keys(&self.opts.config);
        let env = dandori_exec::child_env::filter(
            &env,
            &self.opts.config.shell_environment_policy,
            &provider_keys,
        )
        .env;
        self.child_env(env)
    }

    pub(super) fn child_env(
        &self,
        mut env: BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, RunnerError> {
        let bin = self.paths.run_dir.join("bin");
        let gh = bin.join("gh");
        dandori_fs::write_atomic(
            &gh,
            "#!/bin/sh\necho 'dandori: gh is forbidden in this run (gates.forbid_gh)' >&2\nexit 97\n",
        )?;
        set_executable(&gh)?;
        let path = env.get("PATH").cloned().unwrap_or_default();
        env.insert(
            "PATH".to_string(),
            if path.is_empty() {
                bin.to_string_lossy().into_owned()
            } else {
                format!("{}:{path}", bin.to_string_lossy())
            },
        );
        env.insert("DANDORI_RUN_ID".to_string(), self.planning.run_id.clone());
        if self.environment_summary.is_some() {
            // Seed 002 §7.2 for agent commands: the same text as the prompt's
            // `## Execution environment` section, and the status alone.
            env.insert(
                environment::SUMMARY_FILE_VAR.to_string(),
                environment::summary_path(&self.paths.run_dir)
                    .to_string_lossy()
                    .into_owned(),
            );
            if let Some(status) = self.environment.get("status").and_then(Value::as_str) {
                env.insert(environment::STATUS_VAR.to_string(), status.to_string());
            }
        }
        env.insert(
            "DANDORI_RUN_DIR".to_string(),
            self.paths.run_dir.to_string_lossy().into_owned(),
        );
        Ok(env)
    }
}

fn set_executable(path: &Path) -> Result<(), RunnerError> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| dandori_fs::FsError::new("making executable", path, e))?;
    Ok(())
}

/// Dirty paths listed one by one up to this many; beyond, summarised.
const MAX_DIRTY_LISTED: usize = 20;

/// `git status --porcelain` lines for a message: as they are when few, else
/// counted by top-level directory and kind ("2913 untracked files under .venv/").
pub(crate) fn summarize_dirty(lines: &[String]) -> String {
    if lines.len() <= MAX_DIRTY_LISTED {
        return lines.join(", ");
    }
    let mut groups: std::collections::BTreeMap<(String, &str), usize> = Default::default();
    for l in lines {
        let (code, path) = (l.get(..2).unwrap_or(""), l.get(3..).unwrap_or(l));
        let kind = match code.trim() {
            "??" => "untracked",
            "D" => "deleted",
            "A" => "added",
            _ => "modified",
        };
        let top = match path.trim_matches('"').split_once('/') {
            Some((dir, _)) => format!("{dir}/"),
            None => path.to_string(),
        };
        *groups.entry((top, kind)).or_default() += 1;
    }
    let mut v: Vec<((String, &str), usize)> = groups.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let shown: Vec<String> = v
        .iter()
        .take(8)
        .map(|((top, kind), n)| {
            if top.ends_with('/') {
                format!("{n} {kind} file(s) under {top}")
            } else {
                format!("{kind} {top}")
            }
        })
        .collect();
    let rest = v.len().saturating_sub(8);
    format!(
        "{} changed path(s): {}{} (`git status` lists them)",
        lines.len(),
        shown.join(", "),
        if rest > 0 {
            format!(", and {rest} more group(s)")
        } else {
            String::new()
        }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_big_dirty_tree_is_summarised_by_directory() {
        let mut lines: Vec<String> = (0..2913).map(|i| format!("?? .venv/lib/f{i}.py")).collect();
        lines.push(" M README.md".to_string());
        let s = summarize_dirty(&lines);
        assert_eq!(
            s,
            "2914 changed path(s): 2913 untracked file(s) under .venv/, modified README.md (`git status` lists them)"
        );
        assert!(s.len() < 200);
        let few = vec!["?? a".to_string(), " M b".to_string()];
        assert_eq!(summarize_dirty(&few), "?? a,  M b");
    }
}
