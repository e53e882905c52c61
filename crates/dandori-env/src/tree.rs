//! The checkout a run's environment is prepared in: a detached git worktree of
//! the run's base commit that dandori owns, at `<git common dir>/dandori/environment/tree`
//! (`.git/dandori/environment/tree` in a plain clone). Nothing of a run's
//! environment — `.venv/`, `.conda-env/`, `node_modules/`, `*.egg-info/`, a
//! rewritten lock file, build directories — lands in the user's working tree,
//! and `.git/info/exclude` is left alone.
//!
//! The tree lives across runs, so the reuse fingerprint and `state.json` (in
//! the tree's own git directory, [`crate::reuse::state_dir`]) stay valid: a
//! run on the same base reuses it as it is; a run on another base moves it
//! there (`checkout --force --detach`, which keeps the untracked environment
//! directories) and setup decides from the fingerprint whether anything is
//! installed again. Inside `.git` no tool of the project walks it (prettier,
//! eslint, pytest, jest, tsc all skip `.git`), and a step's sandbox shows it
//! read-only with the rest of the repository's git directory.
//!
//! A kill at any point leaves something the next run repairs: a half-made
//! worktree (its directory without a valid checkout) is removed and made
//! again, a half-checked-out one is put back by the forced checkout, and a
//! half-made environment has no `state.json` of its fingerprint, so setup runs
//! again over it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

use dandori_exec::git::{GlobalConfig, git_command_with_env};

use crate::EnvError;

/// The tree's place inside the repository's common git directory.
pub const TREE_DIR: &str = "dandori/environment/tree";

/// `dir` is an environment tree (its path ends with [`TREE_DIR`]): setup there
/// writes nothing into the repository's shared `.git/info/exclude`.
pub fn is_managed(dir: &Path) -> bool {
    dir.ends_with(TREE_DIR)
}

/// Where the environment tree of `repo` lives: `<common git dir>/dandori/environment/tree`.
pub fn location(repo: &Path, env: &BTreeMap<String, String>) -> Result<PathBuf, EnvError> {
    let common = git(repo, &["rev-parse", "--git-common-dir"], env)?;
    let common = repo.join(common.trim());
    let common = dandori_fs::canonicalize(&common).unwrap_or(common);
    Ok(common.join(TREE_DIR))
}

/// The commit a run starts from: its `planning.json`'s `base_branch` as the
/// repository has it now (what the runner's gates resolve), else `HEAD`.
pub fn base_commit(
    repo: &Path,
    run_dir: &Path,
    env: &BTreeMap<String, String>,
) -> Result<String, EnvError> {
    let base = dandori_fs::read_to_string(run_dir.join("planning.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v.get("base_branch")?.as_str().map(str::to_string))
        .filter(|b| !b.trim().is_empty())
        .unwrap_or_else(|| "HEAD".to_string());
    let rev = format!("{base}^{{commit}}");
    Ok(git(repo, &["rev-parse", "--verify", "--quiet", &rev], env)?
        .trim()
        .to_string())
}

/// Puts the environment tree of `repo` at `commit` (a full commit id) and
/// returns its path: made when missing or broken, moved when at another
/// commit, put back when a kill or a setup command left tracked files changed.
pub fn prepare(
    repo: &Path,
    commit: &str,
    env: &BTreeMap<String, String>,
) -> Result<PathBuf, EnvError> {
    let tree = location(repo, env)?;
    if !is_checkout(&tree, env) {
        if std::fs::symlink_metadata(&tree).is_ok() {
            // A worktree a kill cut short, or one whose administrative
            // directory was pruned: made again from scratch.
            std::fs::remove_dir_all(&tree)
                .map_err(|e| dandori_fs::FsError::new("removing", &tree, e))?;
        }
        // Forget the administrative directory of a tree that is gone.
        git(repo, &["worktree", "prune"], env)?;
        if let Some(parent) = tree.parent() {
            dandori_fs::create_dir_all(parent)?;
        }
        let path = tree.display().to_string();
        // Twice: also over a worktree a kill left registered and locked
        // (`git worktree add` locks it while it checks out).
        git(
            repo,
            &[
                "worktree", "add", "--detach", "--force", "--force", &path, commit,
            ],
            env,
        )?;
        return Ok(tree);
    }
    let head = git(&tree, &["rev-parse", "HEAD"], env).unwrap_or_default();
    if head.trim() == commit {
        // Tracked files a setup command rewrote (a lock file) or a kill left
        // half-written are put back; untracked ones (the environment) stay.
        // The index is refreshed first, so this reads no unchanged file.
        git(
            &tree,
            &["checkout", "--force", "--quiet", "HEAD", "--", "."],
            env,
        )?;
    } else {
        git(
            &tree,
            &["checkout", "--force", "--quiet", "--detach", commit],
            env,
        )?;
    }
    Ok(tree)
}

/// `tree` is a working checkout of a git worktree (its `.git` file names an
/// administrative directory that exists, and git reads a HEAD there).
fn is_checkout(tree: &Path, env: &BTreeMap<String, String>) -> bool {
    tree.join(".git").is_file()
        && git(tree, &["rev-parse", "--verify", "--quiet", "HEAD"], env).is_ok()
}

/// Runs hardened git in `dir`; its stdout, or an error naming the command.
fn git(dir: &Path, args: &[&str], env: &BTreeMap<String, String>) -> Result<String, EnvError> {
    let out: Output = git_command_with_env(dir, GlobalConfig::Ignore, env)
        .args(args)
        .output()
        .map_err(|e| EnvError::Record {
            path: dir.display().to_string(),
            message: format!("git {}: {e}", args.join(" ")),
        })?;
    if !out.status.success() {
        return Err(EnvError::Record {
            path: dir.display().to_string(),
            message: format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
