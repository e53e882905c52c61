//! A step killed mid-way keeps its uncommitted work (issue 36).
//!
//! While a step runs, `stage.json` names its worktree (`steps[].worktree`).
//! When `resume` finds a step still `running` there (its dandori was killed),
//! [`snapshot`] writes what that worktree holds beyond its HEAD — every change,
//! new files included, `.gitignore` respected — as a commit whose parent is
//! that HEAD, under `refs/dandori/interrupted/<run>/<step>`, before the stale
//! worktrees are removed. When the step runs again, [`restore`] puts those
//! changes into its new worktree (uncommitted, as the agent left them) when the
//! new worktree starts where the old one did, and removes the ref; the step's
//! prompt then says where the agent now is and which files it had changed
//! ([`prompt_section`]). A step whose base moved meanwhile starts afresh, and
//! the prompt says the tree was reset.

use std::path::Path;

use crate::error::RunnerError;
use crate::git::Git;

/// The heading of the prompt section a resumed step gets.
pub const HEADING: &str = "Resumed after an interruption";

/// The ref holding `step_id`'s interrupted work in run `run_id`.
pub fn ref_name(run_id: &str, step_id: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                    c
                } else {
                    '-'
                }
            })
            .collect()
    };
    format!(
        "refs/dandori/interrupted/{}/{}",
        clean(run_id),
        clean(step_id)
    )
}

/// What a killed step's worktree held beyond its HEAD, kept under
/// [`ref_name`]: the commit and the changed paths; `None` when it held nothing.
/// The worktree's own index is used (it is removed right after).
pub fn snapshot(
    worktree: &Path,
    run_id: &str,
    step_id: &str,
) -> Result<Option<(String, Vec<String>)>, RunnerError> {
    let git = Git::new(worktree);
    let head = git.rev_parse("HEAD")?;
    // A kill can leave git's index lock behind; nothing else uses this worktree.
    let _ = std::fs::remove_file(
        git.run(&["rev-parse", "--git-path", "index.lock"])
            .map(|p| worktree.join(p.trim()))
            .unwrap_or_default(),
    );
    git.run(&["add", "-A"])?;
    let files: Vec<String> = git
        .run(&["diff", "--cached", "--name-only", "--no-renames", "HEAD"])?
        .lines()
        .map(str::to_string)
        .filter(|l| !l.is_empty())
        .collect();
    if files.is_empty() {
        return Ok(None);
    }
    let tree = git.run(&["write-tree"])?;
    let commit = git.commit_tree(
        tree.trim(),
        &[&head],
        &format!("dandori: uncommitted work of {step_id}, interrupted"),
    )?;
    git.run(&["update-ref", &ref_name(run_id, step_id), &commit])?;
    Ok(Some((commit, files)))
}

/// What [`restore`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Restored {
    /// The step was not interrupted with work in its worktree.
    Nothing,
    /// Its work is in the new worktree again: the changed paths.
    Carried(Vec<String>),
    /// It was made on another base: the step starts afresh.
    Reset,
}

/// Puts the interrupted work of `step_id` into the worktree `git` works in,
/// which is checked out at `base`, and removes the ref.
pub fn restore(
    git: &Git,
    run_id: &str,
    step_id: &str,
    base: &str,
) -> Result<Restored, RunnerError> {
    let name = ref_name(run_id, step_id);
    let (found, commit, _) = git.output(&["rev-parse", "--verify", "--quiet", &name])?;
    if !found {
        return Ok(Restored::Nothing);
    }
    let commit = commit.trim().to_string();
    let parent = git.rev_parse(&format!("{commit}^"))?;
    let mut restored = Restored::Reset;
    if parent == base {
        git.run(&[
            "restore",
            &format!("--source={commit}"),
            "--worktree",
            "--",
            ".",
        ])?;
        restored = Restored::Carried(
            git.run(&["diff", "--name-only", "--no-renames", base, &commit])?
                .lines()
                .map(str::to_string)
                .filter(|l| !l.is_empty())
                .collect(),
        );
    }
    git.run(&["update-ref", "-d", &name])?;
    Ok(restored)
}

/// The prompt section telling a resumed agent where it is and what it finds.
/// `None` when there is nothing to say ([`Restored::Nothing`]).
pub fn prompt_section(worktree: &Path, restored: &Restored) -> Option<String> {
    Some(match restored {
        Restored::Nothing => return None,
        Restored::Carried(files) => format!(
            "\n## {HEADING}\ndandori was stopped while this step ran and has restarted it in {}. \
             The changes this step had made before the interruption were kept and are in this \
             worktree again, not committed: {}. Check them and finish the step from there; \
             work only in {}.\n",
            worktree.display(),
            files.join(", "),
            worktree.display()
        ),
        Restored::Reset => format!(
            "\n## {HEADING}\ndandori was stopped while this step ran and has restarted it in {}, \
             reset to the step's starting commit: none of the edits made before exist any \
             more. Work only there and make your changes again.\n",
            worktree.display()
        ),
    })
}

/// Masks every log a killed dandori left behind: a command's output is written
/// to its log as it runs and masked when the command ends, so a kill in between
/// (a test command, a setup command, an agent) leaves its secrets in the log.
/// `resume` calls this first, before anything reads the logs. Files under `dirs`
/// (not recursive) ending in `.log`; unreadable ones are left as they are.
pub fn mask_left_logs(dirs: &[&Path], masker: &dandori_trace::Masker) -> Result<(), RunnerError> {
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let is_log = path.extension().is_some_and(|e| e == "log")
                && entry.file_type().is_ok_and(|t| t.is_file());
            if is_log {
                crate::process::mask_log(&path, masker)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ref_names_are_valid_git_refs() {
        assert_eq!(
            ref_name("20261129-072739-ca4a82", "S01"),
            "refs/dandori/interrupted/20261129-072739-ca4a82/S01"
        );
        assert_eq!(
            ref_name("a b/c", "F01"),
            "refs/dandori/interrupted/a-b-c/F01"
        );
    }
}
