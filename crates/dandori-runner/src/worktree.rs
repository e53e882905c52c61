//! A worktree of the run's pool and what the runner knows about its state, so that
//! staging a step's change and moving the worktree to the next step's base cost
//! what the step touched, not the size of the repository.
//!
//! The worktree's changes are recorded as they happen ([`crate::git::touched`]).
//! Staging asks `git status` about the touched paths only, stages what it
//! reports (`update-index`), writes the index's tree and diffs it from HEAD's
//! through the run's long-lived `diff-tree`. Moving to the next base removes the
//! untracked and ignored files the step left (a touched path in neither tree)
//! and makes every other touched path, and every path that differs between the
//! two trees, what it is in the base with one `git checkout --no-overlay`; the
//! trees are compared through the run's long-lived `cat-file`. Whenever any of
//! this cannot be vouched for (no change record, no object reader, a git error,
//! an unusual path), the worktree falls back to git's whole-tree operations
//! (`add -A`; `reset --hard` + `clean -ffdx`), which give the same result at
//! O(repository) cost, and starts recording afresh.

use std::path::{Path, PathBuf};

use crate::error::RunnerError;
use crate::git::Git;
use crate::git::touched::{Touched, Tracker};

/// Above this many paths (or this many bytes of them) git is asked about the
/// whole worktree instead of a path list on its command line.
const MAX_PATHSPEC_PATHS: usize = 4096;
const MAX_PATHSPEC_BYTES: usize = 256 * 1024;

/// How a worktree got to its base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    /// `git worktree add` (a new pool worktree).
    Created,
    /// Only the paths the last step touched and the paths that differ between
    /// the two bases were read or written.
    Fast,
    /// `reset --hard` + `clean -ffdx` over the whole worktree (no change record,
    /// or the fast move failed).
    Full,
}

/// How a change was staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Staged {
    /// `git status` and `update-index` of the touched paths only.
    Fast,
    /// `git add -A` over the whole worktree.
    Full,
}

/// One worktree of the pool (see the module documentation).
#[derive(Debug)]
pub struct PoolWorktree {
    path: PathBuf,
    tracker: Option<Tracker>,
    /// A tree-ish whose content the index holds.
    index_at: Option<String>,
    /// Paths touched since HEAD last held what the index holds.
    since_head: Touched,
    /// Paths touched since the worktree was last exactly its base.
    since_clean: Touched,
    /// Paths touched since the last staging.
    unstaged: Touched,
    /// The tree `write-tree` made of the index at the last (fast) staging, while
    /// the index is still that: the step's commit is made of it.
    staged_tree: Option<String>,
    /// Something outside the record changed the worktree (a `reset --hard` that
    /// keeps ignored files): the next move goes over the whole tree.
    full_move: bool,
    /// How the last change was staged and the last move done.
    pub last_stage: Option<Staged>,
    pub last_move: Option<Moved>,
}

impl PoolWorktree {
    /// A pool worktree at `path` (created by the first [`PoolWorktree::prepare`]).
    pub fn new(path: impl Into<PathBuf>) -> PoolWorktree {
        PoolWorktree {
            path: path.into(),
            tracker: None,
            index_at: None,
            since_head: Touched::new(),
            since_clean: Touched::new(),
            unstaged: Touched::new(),
            staged_tree: None,
            full_move: false,
            last_stage: None,
            last_move: None,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A new worktree of `main`'s repository at `path`, checked out at `rev` (a
    /// full commit id): ready for [`PoolWorktree::prepare`] to move it to a
    /// step's base. The checkout of every file (the one cost of the pool that
    /// grows with the repository) runs concurrently with other worktrees'
    /// checkouts and with running steps; only the registration takes turns.
    pub fn create(
        main: &Git,
        path: impl Into<PathBuf>,
        rev: &str,
    ) -> Result<PoolWorktree, RunnerError> {
        let mut wt = PoolWorktree::new(path);
        main.add_worktree_unlocked_checkout(&wt.path, rev, true)?;
        wt.tracker = Tracker::start(&wt.path);
        wt.clean_at(rev);
        wt.last_move = Some(Moved::Created);
        Ok(wt)
    }

    /// Puts the worktree at `rev` (a full commit id) with nothing else in it:
    /// creates it (`main`'s `git worktree add`) or moves it.
    pub fn prepare(&mut self, main: &Git, rev: &str) -> Result<Moved, RunnerError> {
        let moved = if !self.path.join(".git").exists() {
            main.add_worktree_unlocked_checkout(&self.path, rev, true)?;
            self.tracker = Tracker::start(&self.path);
            Moved::Created
        } else {
            let git = Git::new(&self.path).pool_worktree().sharing_objects(main);
            match self.fast_move(&git, rev) {
                Ok(true) => Moved::Fast,
                Ok(false) | Err(_) => {
                    git.move_worktree(rev)?;
                    self.restart_tracker();
                    Moved::Full
                }
            }
        };
        self.clean_at(rev);
        self.last_move = Some(moved);
        Ok(moved)
    }

    /// The worktree was reset to `rev` by git (`reset --hard` and `clean`, which
    /// keeps ignored files): what was recorded until now is void, and the next
    /// move goes over the whole tree.
    pub fn was_reset(&mut self, rev: &str) {
        self.restart_tracker();
        self.clean_at(rev);
        self.full_move = true;
    }

    /// The tree of the index as the last staging wrote it, when the index has
    /// not changed since (the step's commit is made of it without another
    /// `write-tree`).
    pub fn staged_tree(&self) -> Option<&str> {
        self.staged_tree.as_deref()
    }

    /// The index was committed as `commit`; `head_moved`: HEAD now points at it.
    pub fn committed(&mut self, commit: &str, head_moved: bool) {
        self.staged_tree = None;
        self.index_at = Some(commit.to_string());
        if head_moved {
            self.since_head.clear();
        }
    }

    /// Stages every change of the worktree (respecting `.gitignore`) and returns
    /// `(lines, files)` changed against HEAD, the changed paths, and the binary
    /// patch, like [`Git::staged_numstat`], which it falls back to.
    pub fn stage(&mut self, git: &Git) -> Result<(u64, Vec<String>, String), RunnerError> {
        if let Some(out) = self.fast_stage(git).ok().flatten() {
            self.last_stage = Some(Staged::Fast);
            return Ok(out);
        }
        // Without a record the next move goes over the whole tree too.
        self.tracker = None;
        self.staged_tree = None;
        self.last_stage = Some(Staged::Full);
        git.staged_numstat()
    }

    fn restart_tracker(&mut self) {
        // Events of the reset itself are dropped with the old tracker.
        self.tracker = None;
        self.tracker = Tracker::start(&self.path);
    }

    fn clean_at(&mut self, rev: &str) {
        self.staged_tree = None;
        self.index_at = Some(rev.to_string());
        self.since_head.clear();
        self.since_clean.clear();
        self.unstaged.clear();
        self.full_move = false;
    }

    /// The paths touched since the last call, added to every pending set; `None`
    /// when they are not known.
    fn take(&mut self) -> Option<()> {
        let new = self.tracker.as_mut()?.take()?;
        for p in &new {
            // Only paths git can be told about on its command line.
            p.to_str()?;
        }
        self.since_head.extend(new.iter().cloned());
        self.since_clean.extend(new.iter().cloned());
        self.unstaged.extend(new);
        Some(())
    }

    /// `None`: fall back to the whole-tree staging.
    fn fast_stage(&mut self, git: &Git) -> Result<Option<(u64, Vec<String>, String)>, RunnerError> {
        if self.take().is_none() {
            return Ok(None);
        }
        let unstaged = std::mem::take(&mut self.unstaged);
        if !unstaged.is_empty() {
            let entries = git.status_of(pathspec(&unstaged).as_deref())?;
            if entries.iter().any(|e| unusual(&e.path)) {
                return Ok(None);
            }
            let mut stage = Vec::new();
            for e in &entries {
                match e.worktree {
                    // Bytecode and tool caches stay out of the commit.
                    b'?' if crate::git::never_committed::is_never_committed(&e.path) => {}
                    b'M' | b'D' | b'T' | b'?' => stage.push(e.path.as_str()),
                    _ => {}
                }
            }
            git.update_index(&stage)?;
        }
        if self.since_head.is_empty() {
            return Ok(Some((0, Vec::new(), String::new())));
        }
        // The index as a tree (it costs what changed: the index keeps the trees
        // of untouched directories), then its diff from HEAD's tree through the
        // run's long-lived `diff-tree`; the commit reuses the tree. A changed
        // `.gitattributes` may change how a file diffs: git's own `diff
        // --cached` in this worktree reads it.
        self.staged_tree = None;
        let attributes = self
            .since_head
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == ".gitattributes"));
        if !attributes
            && let Some(head) = git.detached_head()
            && let Some(head_tree) = git.tree_of(&head)
        {
            let tree = git.run(&["write-tree"])?.trim().to_string();
            if let Some(out) = git.tree_numstat(&head_tree, &tree) {
                self.staged_tree = Some(tree);
                return Ok(Some(out));
            }
        }
        git.cached_numstat("HEAD", pathspec(&self.since_head).as_deref())
            .map(Some)
    }

    /// Moves the worktree to `rev` touching only what the last step touched and
    /// what differs; false (or an error) when the caller must do the full move.
    ///
    /// The index holds `index_at` exactly (the step's commit, or the base the
    /// worktree was put at), so every path is known without asking git about
    /// the worktree: a touched path in neither tree is untracked (or ignored)
    /// and removed; every other touched path and every path that differs
    /// between the two trees (the run's object reader compares them, reading
    /// only the subtrees whose ids differ) is made what it is in `rev` by one
    /// `git checkout --no-overlay <rev> -- <paths>`, which reads and writes only
    /// those index entries and files (a two-tree `read-tree -m -u` walks and
    /// rewrites the whole index).
    fn fast_move(&mut self, git: &Git, rev: &str) -> Result<bool, RunnerError> {
        let Some(from) = self.index_at.clone().filter(|_| !self.full_move) else {
            return Ok(false);
        };
        if self.take().is_none() {
            return Ok(false);
        }
        let Some(mut spec) = git.changed_paths(&from, rev) else {
            return Ok(false);
        };
        // An untracked directory removed whole: what lies under it (listed right
        // after it, paths sorting by component) is gone with it.
        let mut removed: Option<&Path> = None;
        for p in &self.since_clean {
            if removed.is_some_and(|d| p.starts_with(d)) {
                continue;
            }
            let Some(rel) = p.to_str() else {
                return Ok(false);
            };
            let (Some(in_from), Some(in_rev)) = (git.in_tree(&from, rel), git.in_tree(rev, rel))
            else {
                return Ok(false);
            };
            if in_from || in_rev {
                spec.push(rel.to_string());
            } else {
                remove_untracked(&self.path, rel)?;
                removed = Some(p);
            }
            if spec.len() > MAX_PATHSPEC_PATHS {
                return Ok(false);
            }
        }
        // Directories the step created are empty now (git does not track them).
        self.remove_empty_dirs();
        spec.sort();
        spec.dedup();
        let spec: Vec<&str> = spec.iter().map(String::as_str).collect();
        git.checkout_paths(rev, &spec)?;
        git.set_head(rev)?;
        // The events of the move itself: drop them (new directories are watched).
        if self.take().is_none() {
            self.restart_tracker();
        }
        Ok(true)
    }

    /// Removes the directories among the touched paths that are empty, deepest
    /// first, and their parents up to the root while they are empty.
    fn remove_empty_dirs(&self) {
        for rel in self.since_clean.iter().rev() {
            let mut dir = rel.as_path();
            loop {
                if dir.as_os_str().is_empty() {
                    break;
                }
                let abs = self.path.join(dir);
                let is_dir = std::fs::symlink_metadata(&abs).is_ok_and(|m| m.is_dir());
                if !is_dir || std::fs::remove_dir(&abs).is_err() {
                    break;
                }
                match dir.parent() {
                    Some(p) => dir = p,
                    None => break,
                }
            }
        }
    }
}

/// The paths as a git pathspec list, or `None` (the whole worktree) when there are
/// too many for a command line.
fn pathspec(paths: &Touched) -> Option<Vec<&str>> {
    if paths.len() > MAX_PATHSPEC_PATHS {
        return None;
    }
    let list: Vec<&str> = paths.iter().filter_map(|p| p.to_str()).collect();
    let bytes: usize = list.iter().map(|p| p.len() + 1).sum();
    (list.len() == paths.len() && bytes <= MAX_PATHSPEC_BYTES).then_some(list)
}

/// A path git printed that may not name the file exactly (not valid UTF-8).
fn unusual(path: &str) -> bool {
    path.contains('\u{FFFD}')
}

/// Removes an untracked file, symbolic link or directory (`git status` names an
/// ignored directory with a trailing `/`) of the worktree, never following a link.
fn remove_untracked(root: &Path, rel: &str) -> Result<(), RunnerError> {
    let rel = rel.trim_end_matches('/');
    if rel.is_empty() || rel.split('/').any(|c| c == ".." || c == ".git") {
        return Ok(());
    }
    let abs = root.join(rel);
    let Ok(meta) = std::fs::symlink_metadata(&abs) else {
        return Ok(());
    };
    let removed = if meta.is_dir() {
        std::fs::remove_dir_all(&abs)
    } else {
        std::fs::remove_file(&abs)
    };
    match removed {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(dandori_fs::FsError::new("removing an untracked file", &abs, e).into()),
    }
}
