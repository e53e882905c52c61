//! Where a step runs, behind one interface: a worktree of the run's pool
//! ([`crate::worktree::PoolWorktree`], a checkout of every file moved from step
//! to step) or a copy-on-write overlay over one shared checkout of the run's
//! start ([`overlay::OverlayWorkspace`], `runner.step_workspace: overlay`). The
//! step pipeline (`step.rs`) sees only [`StepWorkspace`].

pub mod overlay;

use std::path::Path;

use crate::error::RunnerError;
use crate::git::Git;
use crate::worktree::PoolWorktree;

/// The mechanism behind a step's workspace, as the `STEP_WORKSPACE` event and
/// the report name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mechanism {
    Pool,
    Overlay,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Pool => "pool",
            Mechanism::Overlay => "overlay",
        }
    }
}

/// A step's working directory and what the runner knows of its state.
pub trait StepWorkspace: Send + std::fmt::Debug {
    /// Where the step's commands run and the runner reads and writes its files.
    fn path(&self) -> &Path;

    fn mechanism(&self) -> Mechanism;

    /// Puts the workspace at `rev` (a full commit id of `main`'s repository) with
    /// nothing else in it.
    fn prepare(&mut self, main: &Git, rev: &str) -> Result<(), RunnerError>;

    /// Stages every change (respecting `.gitignore`) and returns `(lines, files)`
    /// changed against HEAD, the changed paths, and the binary patch.
    fn stage(&mut self, git: &Git) -> Result<(u64, Vec<String>, String), RunnerError>;

    /// The tree the last staging made, while it still is what would be committed.
    fn staged_tree(&self) -> Option<&str>;

    /// The staged change was committed as `commit`; `head_moved`: HEAD now
    /// points at it.
    fn committed(&mut self, commit: &str, head_moved: bool);

    /// `git reset --hard <rev>` and `git clean` ran in the workspace.
    fn was_reset(&mut self, rev: &str);

    /// The objects staging wrote for `files` (their blobs) and the trees above
    /// them: what is deleted again when the change must not stay (a secret).
    fn staged_objects(&self, git: &Git, files: &[&str]) -> Result<Vec<String>, RunnerError>;
}

impl StepWorkspace for PoolWorktree {
    fn path(&self) -> &Path {
        PoolWorktree::path(self)
    }

    fn mechanism(&self) -> Mechanism {
        Mechanism::Pool
    }

    fn prepare(&mut self, main: &Git, rev: &str) -> Result<(), RunnerError> {
        PoolWorktree::prepare(self, main, rev).map(|_| ())
    }

    fn stage(&mut self, git: &Git) -> Result<(u64, Vec<String>, String), RunnerError> {
        PoolWorktree::stage(self, git)
    }

    fn staged_tree(&self) -> Option<&str> {
        PoolWorktree::staged_tree(self)
    }

    fn committed(&mut self, commit: &str, head_moved: bool) {
        PoolWorktree::committed(self, commit, head_moved);
    }

    fn was_reset(&mut self, rev: &str) {
        PoolWorktree::was_reset(self, rev);
    }

    fn staged_objects(&self, git: &Git, files: &[&str]) -> Result<Vec<String>, RunnerError> {
        git.staged_objects(files)
    }
}
