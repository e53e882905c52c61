//! Resume: `stage.json` reconciled with the commits on the work branch.

use std::collections::BTreeMap;

use dandori_plan::StepStatus;
use dandori_trace::now_rfc3339;
use serde_json::json;

use crate::error::RunnerError;
use crate::events;

use super::Coordinator;

impl Coordinator<'_> {
    /// stage.json against the work branch: a step whose commit is on the branch is
    /// done; anything else that was running (or failed, or waiting) runs again from a
    /// clean worktree. Parts of a split step whose last part never landed are
    /// removed from the branch tip first.
    pub(super) fn reconcile(&mut self) -> Result<(), RunnerError> {
        let run_id = self.planning.run_id.clone();
        let work = self.planning.work_branch.clone();
        if self.reattach_work_branch {
            // Steps move the work branch without touching the files of the
            // repository's worktree; one that has the branch checked out is
            // detached meanwhile (so it never looks dirty after a kill) and checks
            // the branch out again when the run ends.
            self.main.run(&["checkout", "--quiet", "--detach"])?;
        }
        loop {
            let head = self.main.step_commits(&format!("refs/heads/{work}^!"))?;
            let partial = head
                .first()
                .is_some_and(|c| c.run_id == run_id && !c.completes_step());
            if !partial {
                break;
            }
            let parent = self.main.rev_parse(&format!("refs/heads/{work}^"))?;
            self.main.set_branch(&work, &parent)?;
        }
        let range = format!("{}..{work}", self.base_commit);
        let mut finals: BTreeMap<String, String> = BTreeMap::new();
        for c in self.main.step_commits(&range)? {
            if c.run_id == run_id && c.completes_step() {
                // newest first: keep the newest proof
                finals.entry(c.step_id.clone()).or_insert(c.hash.clone());
            }
        }
        let now = now_rfc3339();
        let mut changes = Vec::new();
        // A step killed mid-way keeps what its worktree held (`crate::interrupted`).
        let (mut kept, mut lost) = (Vec::new(), Vec::new());
        for s in &mut self.stage.steps {
            let worktree = s.extra.remove("worktree");
            let layers = s.extra.remove("overlay");
            let Some(path) = worktree
                .as_ref()
                .and_then(|w| w.as_str())
                .map(std::path::PathBuf::from)
                .filter(|p| {
                    s.status == StepStatus::Running
                        && !finals.contains_key(&s.step_id)
                        && p.starts_with(&self.paths.worktrees)
                        && p.is_dir()
                })
            else {
                continue;
            };
            let snapshot = match layers {
                Some(l) => snapshot_overlay(&l, &path, &run_id, &s.step_id),
                None => crate::interrupted::snapshot(&path, &run_id, &s.step_id),
            };
            match snapshot {
                Ok(Some((commit, files))) => {
                    kept.push(json!({"step_id": s.step_id, "commit": commit, "files": files}));
                }
                Ok(None) => {}
                Err(e) => lost.push(format!(
                    "{}: the uncommitted work of the interrupted step could not be kept ({e}); it starts afresh",
                    s.step_id
                )),
            }
        }
        for line in &lost {
            self.progress(line);
        }
        for s in &mut self.stage.steps {
            match finals.get(&s.step_id) {
                Some(hash) => {
                    if s.status != StepStatus::Done || s.commit.as_deref() != Some(hash) {
                        changes.push(json!({"step_id": s.step_id, "from": s.status, "to": "done"}));
                        s.status = StepStatus::Done;
                        s.commit = Some(hash.clone());
                        s.reason_code = None;
                        s.message = None;
                        s.finished_at.get_or_insert_with(|| now.clone());
                    }
                }
                None => match s.status {
                    StepStatus::Pending => {}
                    StepStatus::Done
                    | StepStatus::Running
                    | StepStatus::Failed
                    | StepStatus::Skipped
                    | StepStatus::NeedsInput => {
                        changes
                            .push(json!({"step_id": s.step_id, "from": s.status, "to": "pending"}));
                        s.status = StepStatus::Pending;
                        s.commit = None;
                        s.reason_code = None;
                        s.message = None;
                        s.finished_at = None;
                    }
                },
            }
        }
        let mut follow_ups = self.follow_ups();
        for f in &mut follow_ups {
            if let Some(hash) = finals.get(&f.step_id) {
                f.status = StepStatus::Done;
                f.commit = Some(hash.clone());
                f.reason_code = None;
            } else {
                f.status = StepStatus::Pending;
                f.commit = None;
            }
        }
        if !follow_ups.is_empty() {
            self.stage
                .extra
                .insert("follow_ups".to_string(), json!(follow_ups));
        }
        if self.paths.worktrees.exists() {
            // `overlay::remove_dir`: copy-on-write workspaces leave a mode-0 scratch directory.
            dandori_exec::overlay::remove_dir(&self.paths.worktrees).map_err(|e| {
                dandori_fs::FsError::new("removing stale worktrees", &self.paths.worktrees, e)
            })?;
        }
        self.main.run(&["worktree", "prune"])?;
        if !changes.is_empty() || !kept.is_empty() {
            self.emit(
                events::EXECUTION_RESUME,
                json!({"reconciled": changes, "kept_uncommitted": kept}),
            );
        }
        self.update_index();
        self.tip = self.main.rev_parse(&format!("refs/heads/{work}"))?;
        let start = self
            .stage
            .extra
            .entry("work_start".to_string())
            .or_insert_with(|| json!(self.tip));
        self.work_start = start.as_str().unwrap_or(&self.tip).to_string();
        // Every step commit is built on the run's start; checked once for the done
        // ones (a run directory of an older version recorded it late).
        let mut below = true;
        for s in &self.stage.steps {
            if let Some(c) = s.commit.as_deref().filter(|_| s.status == StepStatus::Done)
                && !self.main.is_ancestor(&self.work_start, c)?
            {
                below = false;
                break;
            }
        }
        self.work_start_below = below;
        Ok(())
    }
}

/// [`crate::interrupted::snapshot`] of a copy-on-write workspace whose mount
/// ended with its killed process: its layers (`layers`: `{"layers": <dir with
/// upper/>, "lower": <shared checkout>}`, kept in `stage.json`) mounted again at
/// `at`, its mount point (a fresh overlayfs work directory beside the old one),
/// and the work read through that view.
fn snapshot_overlay(
    layers: &serde_json::Value,
    at: &std::path::Path,
    run_id: &str,
    step_id: &str,
) -> Result<Option<(String, Vec<String>)>, RunnerError> {
    let dir = |k: &str| {
        layers
            .get(k)
            .and_then(serde_json::Value::as_str)
            .map(std::path::PathBuf::from)
    };
    let (Some(root), Some(lower)) = (dir("layers"), dir("lower")) else {
        return Ok(None);
    };
    let upper = root.join("upper");
    if !upper.is_dir() || !lower.is_dir() {
        return Ok(None);
    }
    // overlayfs's scratch directory is `<resume>/work/work` (mode 0 once used).
    let resume = root.join("resume");
    let _ = dandori_exec::overlay::remove_dir(&resume);
    let work = resume.join("work");
    dandori_fs::create_dir_all(&work)?;
    let mount = dandori_exec::overlay::Overlay::mount(&lower, &upper, &work, at).map_err(|e| {
        RunnerError::Process {
            command: "mounting the interrupted step's copy-on-write workspace".to_string(),
            message: e.to_string(),
        }
    })?;
    let kept = crate::interrupted::snapshot(&mount.view(), run_id, step_id);
    drop(mount);
    let _ = dandori_exec::overlay::remove_dir(&resume);
    kept
}
