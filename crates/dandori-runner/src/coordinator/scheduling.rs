//! Scheduling: which steps start when, on which worker, and the run-level stops.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::Duration;

use dandori_plan::StepStatus;
use dandori_trace::now_rfc3339;
use serde_json::{Value, json};

use crate::completion::StepTiming;
use crate::dispatch::StepCall;
use crate::error::RunnerError;
use crate::executor::Executor;
use crate::git::{Ancestry, WORK_START};
use crate::step::{self, StepReport};
use crate::workspace::Mechanism;
use crate::workspace::overlay::{AttributeScan, OverlayWorkspace, SharedBase};
use crate::worktree::PoolWorktree;
use crate::{events, reason};
use dandori_config::StepWorkspaceKind;

use super::Coordinator;

/// How many pool worktrees are checked out at the same time once the first
/// exists: the checkout of a whole repository is mostly file creation, which
/// two at once do in about the time of one on two cores.
const MAX_CREATING: usize = 2;

/// What the scheduling loop waits for: a step's end, or a new pool worktree.
enum Finished {
    Step(Box<(StepReport, Option<PoolWorktree>)>),
    Created(Box<Result<PoolWorktree, RunnerError>>),
}

impl Coordinator<'_> {
    pub(super) fn mark_waiting_for_model(&mut self) {
        let ids: Vec<String> = self
            .stage
            .steps
            .iter()
            .filter(|s| s.status == StepStatus::Pending)
            .map(|s| s.step_id.clone())
            .collect();
        for s in &mut self.stage.steps {
            if s.status == StepStatus::Pending {
                s.status = StepStatus::NeedsInput;
                s.reason_code = Some(reason::MODEL_NOT_CONFIGURED.to_string());
                s.message = Some(
                    "waits for a model: configure llm.default_provider or use --executor command --agent-cmd"
                        .to_string(),
                );
            }
        }
        self.emit(
            events::STEP_SKIPPED,
            json!({"reason_code": reason::MODEL_NOT_CONFIGURED, "steps": ids}),
        );
    }

    pub(super) fn execute_steps(
        &mut self,
        executor: &dyn Executor,
        env: &BTreeMap<String, String>,
    ) -> Result<(), RunnerError> {
        let workers = self.workers();
        let total_timeout = Duration::from_secs(self.opts.config.planning.execution.total_timeout);
        let max_steps = self.planning.limits.max_steps_per_run.max(1);
        let revisions = self
            .stage
            .extra
            .get("revisions")
            .and_then(Value::as_u64)
            .unwrap_or(0) as u32;
        if let Some(d) = &self.opts.dispatch {
            d.prepare(&self.planning, &self.main, &self.work_start)?;
            self.stage.extra.insert("engine".to_string(), d.record());
            self.progress(&format!("steps run on the {} engine", d.name()));
        }
        let shared = self.step_shared(revisions, self.opts.config.planning.revision.max_revisions);
        let cx = shared.context(executor, env);
        let planning = &shared.planning;
        let revisions = &shared.revisions;
        let known = self.ancestry();
        let (tx, rx) = mpsc::channel::<Finished>();
        let n = planning.steps.len();
        let mut running = 0usize;
        let mut started_here: u64 = 0;
        // Pool worktrees being created in the background.
        let mut creating = 0usize;
        let result = std::thread::scope(|scope| -> Result<(), RunnerError> {
            loop {
                // 1. Dependents of failed or waiting steps never run.
                self.block_dependents();
                // 2. Run-level stops.
                if self.stop_reason.is_none() && self.started.elapsed() >= total_timeout {
                    self.stop(
                        reason::TOTAL_TIMEOUT,
                        format!(
                            "planning.execution.total_timeout of {} s reached",
                            total_timeout.as_secs()
                        ),
                    );
                }
                // 3. Start ready steps (every predecessor merged) in plan order, each on
                //    the merge of its predecessors' commits, in a pool worktree.
                for i in 0..n {
                    if running >= workers || self.stop_reason.is_some() || started_here >= max_steps
                    {
                        break;
                    }
                    if self.stage.steps[i].status != StepStatus::Pending
                        || !self.preds[i]
                            .iter()
                            .all(|p| self.stage.steps[*p].status == StepStatus::Done)
                    {
                        continue;
                    }
                    let dispatch = self.opts.dispatch.clone();
                    let overlay = self.overlay_base.clone().filter(|_| dispatch.is_none());
                    if dispatch.is_none()
                        && overlay.is_none()
                        && self.idle.is_empty()
                        && !self.create_inline
                    {
                        // No free worktree: one is made in the background (at most
                        // MAX_CREATING at once, never more than the workers need);
                        // the step takes the first to be free, made or released.
                        // The first worktree is made alone: nothing can run before
                        // it, and a second checkout would only slow it down.
                        let made = (self.pool_created as usize).saturating_sub(creating);
                        let at_once = if made == 0 { 1 } else { MAX_CREATING };
                        if running + creating < workers && creating < at_once {
                            creating += 1;
                            let path = self.next_pool_path()?;
                            let main = self.main.clone();
                            let at = self.tip.clone();
                            let tx = tx.clone();
                            scope.spawn(move || {
                                let _ = tx.send(Finished::Created(Box::new(PoolWorktree::create(
                                    &main, path, &at,
                                ))));
                            });
                        }
                        continue;
                    }
                    let commits = self.base_commits(i);
                    let overlay = match overlay {
                        Some(base) => Some(self.overlay_workspace(base)?),
                        None => None,
                    };
                    let wt = self.start_step(
                        i,
                        dispatch.is_none() && overlay.is_none(),
                        overlay.as_ref(),
                    )?;
                    let attempt = self.stage.steps[i].attempts;
                    running += 1;
                    started_here += 1;
                    let tx = tx.clone();
                    let cx = &cx;
                    let main = self.main.clone();
                    let known = &known;
                    scope.spawn(move || {
                        let r = match (dispatch, wt) {
                            (None, _) if let Some(mut ws) = overlay => {
                                let base = step::StepBase {
                                    commits: &commits,
                                    main: &main,
                                    known,
                                };
                                let step = &cx.planning.steps[i];
                                // Unmounted and deleted when `ws` is dropped.
                                (step::run_step_in_pool(cx, i, step, &base, &mut ws), None)
                            }
                            (Some(d), _) => (
                                d.run_step(&StepCall {
                                    planning: cx.planning,
                                    planning_path: &cx.paths.planning,
                                    index: i,
                                    attempt,
                                    commits: &commits,
                                    repo: &main,
                                }),
                                None,
                            ),
                            (None, wt) => {
                                let base = step::StepBase {
                                    commits: &commits,
                                    main: &main,
                                    known,
                                };
                                let mut wt = wt.unwrap_or_else(|| PoolWorktree::new(""));
                                let step = &cx.planning.steps[i];
                                let r = step::run_step_in_pool(cx, i, step, &base, &mut wt);
                                (r, Some(wt))
                            }
                        };
                        let _ = tx.send(Finished::Step(Box::new(r)));
                    });
                }
                self.stage.extra.insert(
                    "revisions".to_string(),
                    json!(revisions.load(Ordering::SeqCst)),
                );
                self.update_index();
                self.save_round()?;
                if running == 0 && creating == 0 {
                    if self.stage.steps.iter().any(|s| {
                        s.status == StepStatus::Pending
                            && self.preds_done(s.step_id.as_str())
                            && self.stop_reason.is_none()
                            && started_here < max_steps
                    }) {
                        continue;
                    }
                    break;
                }
                let Ok(first) = rx.recv() else { break };
                // Every step that finished meanwhile is taken in this round too:
                // one `stage.json` write for all of them (run-state writes
                // batched: a file created per save).
                let mut next = Some(first);
                while let Some(finished) = next {
                    match finished {
                        Finished::Step(done) => {
                            let (r, wt) = *done;
                            running -= 1;
                            // Merged at once: its dependents can start in this round.
                            self.receive(r, wt)?;
                        }
                        Finished::Created(made) => {
                            creating -= 1;
                            match *made {
                                Ok(wt) => self.idle.push(wt),
                                // Steps make their own worktree from now on, and a
                                // failure is theirs (`dandori resume` retries).
                                Err(_) => self.create_inline = true,
                            }
                        }
                    }
                    next = rx.try_recv().ok();
                }
            }
            Ok(())
        });
        // Worktrees whose creation ended after the last step: removed below.
        while let Ok(f) = rx.try_recv() {
            if let Finished::Created(made) = f
                && let Ok(wt) = *made
            {
                self.idle.push(wt);
            }
        }
        self.stage.extra.insert(
            "revisions".to_string(),
            json!(revisions.load(Ordering::SeqCst)),
        );
        for wt in std::mem::take(&mut self.idle) {
            self.main.remove_worktree_in_background(wt.path())?;
        }
        if let Some(base) = self.overlay_base.take() {
            base.remove(&self.main)?;
        }
        self.overlay_mounts.remove_free();
        if started_here >= max_steps
            && self
                .stage
                .steps
                .iter()
                .any(|s| s.status == StepStatus::Pending)
            && self.stop_reason.is_none()
        {
            self.lessons.push(format!(
                "limits.max_steps_per_run ({max_steps}) reached; `dandori resume` continues"
            ));
        }
        self.update_index();
        self.save()?;
        result
    }

    /// How many steps run at once ([`crate::plan::max_parallel`]).
    fn workers(&self) -> usize {
        crate::plan::max_parallel(&self.planning, self.opts.config.runner.max_parallel_workers)
    }

    /// What step `i` builds on: its predecessors' proof commits in plan order, or
    /// the work branch start when it has none.
    fn base_commits(&self, i: usize) -> Vec<(String, String)> {
        let commits: Vec<(String, String)> = self.preds[i]
            .iter()
            .filter_map(|p| {
                let s = &self.stage.steps[*p];
                Some((s.step_id.clone(), s.commit.clone()?))
            })
            .collect();
        if commits.is_empty() {
            vec![(WORK_START.to_string(), self.work_start.clone())]
        } else {
            commits
        }
    }

    /// What the plan tells about which step commits contain which.
    pub(super) fn ancestry(&self) -> Ancestry {
        let ids: Vec<&str> = self
            .stage
            .steps
            .iter()
            .map(|s| s.step_id.as_str())
            .collect();
        Ancestry::from_predecessors(&ids, &self.preds, self.work_start_below)
    }

    pub(super) fn preds_done(&self, step_id: &str) -> bool {
        let Some(i) = self.stage.steps.iter().position(|s| s.step_id == step_id) else {
            return false;
        };
        self.preds[i]
            .iter()
            .all(|p| self.stage.steps[*p].status == StepStatus::Done)
    }

    /// Marks step `i` running; `pooled` gives it a pool worktree (a dispatched step
    /// gets none: it runs elsewhere).
    pub(super) fn start_step(
        &mut self,
        i: usize,
        pooled: bool,
        overlay: Option<&OverlayWorkspace>,
    ) -> Result<Option<PoolWorktree>, RunnerError> {
        let now = now_rfc3339();
        let s = &mut self.stage.steps[i];
        s.status = StepStatus::Running;
        s.attempts += 1;
        s.started_at = Some(now.clone());
        s.finished_at = None;
        s.reason_code = None;
        s.message = None;
        let step_id = s.step_id.clone();
        let attempt = s.attempts;
        let wt = if !pooled {
            None
        } else if let Some(wt) = self.idle.pop() {
            Some(wt)
        } else {
            Some(PoolWorktree::new(self.next_pool_path()?))
        };
        let path = wt
            .as_ref()
            .map(|w| w.path())
            .or(overlay.map(OverlayWorkspace::mount_point))
            .map(|p| p.to_path_buf());
        if let Some(p) = &path {
            self.in_use.insert(i, p.clone());
        }
        if let Some(wt) = &wt {
            // Where its uncommitted work is, should this process be killed
            // (`crate::interrupted`): saved with the round, before the agent runs.
            self.stage.steps[i]
                .extra
                .insert("worktree".to_string(), json!(wt.path()));
        }
        if let Some(o) = overlay {
            // The same for a copy-on-write workspace: its mount point, and the
            // layers `resume` mounts there again to read the work.
            let extra = &mut self.stage.steps[i].extra;
            extra.insert("worktree".to_string(), json!(o.mount_point()));
            extra.insert(
                "overlay".to_string(),
                json!({"layers": o.root(), "lower": o.lower()}),
            );
        }
        self.timings.insert(
            step_id.clone(),
            StepTiming {
                started_at: now,
                finished_at: None,
                started_ms: self.run_ms(),
                finished_ms: None,
            },
        );
        self.emit(
            events::STEP_START,
            json!({"step_id": step_id, "attempt": attempt, "worktree": path}),
        );
        self.progress(&format!("{step_id}: started (attempt {attempt})"));
        Ok(wt)
    }

    /// `runner.step_workspace`: with `auto` or `overlay`, makes the shared
    /// checkout of the run's tip when overlayfs can be mounted here, and says
    /// which mechanism the steps use (`STEP_WORKSPACE`, `stage.json`'s
    /// `step_workspace`; a fallback from overlayfs also in the report's lessons).
    pub(super) fn choose_workspace(&mut self, executor: &dyn Executor) -> Result<(), RunnerError> {
        let requested = self.opts.config.runner.step_workspace;
        let wants_overlay = match requested {
            StepWorkspaceKind::Auto | StepWorkspaceKind::Overlay => true,
            StepWorkspaceKind::Pool => false,
        };
        let mut fallback: Option<String> = None;
        // A fallback a user should read about: overlayfs itself failed, or an
        // explicit `overlay` could not be honoured. `auto` with an executor that
        // edits from the runner's process is the pool by design, not a lesson.
        let mut lesson = false;
        if wants_overlay && !executor.works_in_overlay() {
            fallback = Some(format!(
                "the {} executor edits files from the runner's own process",
                executor.name()
            ));
            lesson = requested == StepWorkspaceKind::Overlay;
        } else if requested == StepWorkspaceKind::Auto
            && self.overlay_base.is_none()
            && let Some(why) = self.attributes()?.converting(&self.main, &self.tip)?
        {
            // The in-process staging writes blobs unfiltered: `auto` keeps such
            // a repository in the pool (an explicit `overlay` is the user's call).
            fallback = Some(why);
            lesson = true;
        } else if wants_overlay && self.overlay_base.is_none() {
            dandori_fs::create_dir_all(&self.paths.worktrees)?;
            match dandori_exec::overlay::available(&self.paths.worktrees) {
                Ok(()) => {
                    // The user's checkout when the gate found it clean (the run's
                    // directory and ignored files aside); otherwise one of the tip.
                    let base = match self.user_checkout_clean {
                        true => SharedBase::user_checkout(
                            &self.main,
                            self.runs_exclude().into_iter().collect(),
                            &self.paths.worktrees,
                        )?,
                        false => {
                            let path = self
                                .paths
                                .worktrees
                                .join(format!("base-{}", std::process::id()));
                            SharedBase::create(&self.main, path, &self.tip, &self.paths.worktrees)?
                        }
                    };
                    self.overlay_base = Some(std::sync::Arc::new(base));
                }
                Err(why) => {
                    fallback = Some(why);
                    lesson = true;
                }
            }
        }
        let mechanism = if self.overlay_base.is_some() {
            Mechanism::Overlay
        } else {
            Mechanism::Pool
        };
        let requested_name = match requested {
            StepWorkspaceKind::Auto => "auto",
            StepWorkspaceKind::Pool => "pool",
            StepWorkspaceKind::Overlay => "overlay",
        };
        self.emit(
            events::STEP_WORKSPACE,
            json!({"mechanism": mechanism.name(), "requested": requested_name,
                   "fallback_reason": fallback}),
        );
        self.stage.extra.insert(
            "step_workspace".to_string(),
            json!({"mechanism": mechanism.name(), "requested": requested_name,
                   "fallback_reason": fallback}),
        );
        match fallback {
            Some(why) if lesson => {
                let line = format!(
                    "runner.step_workspace: {requested_name}: copy-on-write workspaces not used ({why}); steps ran in pool worktrees"
                );
                self.progress(&line);
                self.lessons.push(line);
            }
            _ if mechanism == Mechanism::Overlay => {
                self.progress("steps run in copy-on-write workspaces (overlayfs)");
            }
            _ => {}
        }
        Ok(())
    }

    /// The repository's attributes, as the look-ahead started with the run
    /// found them (or now, when it was not started).
    fn attributes(&mut self) -> Result<AttributeScan, RunnerError> {
        match self.look_ahead.take().map(std::thread::JoinHandle::join) {
            Some(Ok(scan)) => scan,
            _ => AttributeScan::new(&self.main),
        }
    }

    /// The next copy-on-write workspace of this process over `base`: its
    /// layers in a directory of its own, mounted at the first free worker's
    /// directory.
    pub(super) fn overlay_workspace(
        &mut self,
        base: std::sync::Arc<SharedBase>,
    ) -> Result<OverlayWorkspace, RunnerError> {
        self.pool_created += 1;
        let root =
            self.paths
                .worktrees
                .join(format!("ovl-{}-{}", std::process::id(), self.pool_created));
        Ok(OverlayWorkspace::new(
            base,
            root,
            self.overlay_mounts.take()?,
        ))
    }

    /// The path of the next pool worktree of this process.
    pub(super) fn next_pool_path(&mut self) -> Result<std::path::PathBuf, RunnerError> {
        self.pool_created += 1;
        dandori_fs::create_dir_all(&self.paths.worktrees)?;
        Ok(self
            .paths
            .worktrees
            .join(format!("pool-{}-{}", std::process::id(), self.pool_created)))
    }

    pub(super) fn block_dependents(&mut self) {
        let n = self.stage.steps.len();
        for i in 0..n {
            if self.stage.steps[i].status != StepStatus::Pending {
                continue;
            }
            let blocker = self.preds[i].iter().find_map(|p| {
                let s = &self.stage.steps[*p];
                match s.status {
                    StepStatus::Failed | StepStatus::Skipped => Some((
                        StepStatus::Skipped,
                        reason::DEPENDENCY_FAILED,
                        s.step_id.clone(),
                    )),
                    StepStatus::NeedsInput => Some((
                        StepStatus::NeedsInput,
                        reason::DEPENDENCY_FAILED,
                        s.step_id.clone(),
                    )),
                    StepStatus::Pending | StepStatus::Running | StepStatus::Done => None,
                }
            });
            if let Some((status, code, dep)) = blocker {
                let s = &mut self.stage.steps[i];
                s.status = status;
                s.reason_code = Some(code.to_string());
                s.message = Some(format!("depends on {dep}, which did not complete"));
                let step_id = s.step_id.clone();
                self.emit(
                    events::STEP_SKIPPED,
                    json!({"step_id": step_id, "status": status, "reason_code": code, "depends_on": dep}),
                );
            }
        }
    }
}
