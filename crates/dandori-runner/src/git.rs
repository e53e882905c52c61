//! The git operations of the runner. Every call names its arguments and directory
//! in its error.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::RunnerError;

/// Commit trailers that make a commit the proof of a step.
pub const TRAILER_RUN: &str = "Dandori-Run";
pub const TRAILER_STEP: &str = "Dandori-Step";
pub const TRAILER_PART: &str = "Dandori-Part";
pub const TRAILER_AC: &str = "Dandori-AC";
/// One verification that ran after the step's change: `<kind> exit=<code> <command>`.
pub const TRAILER_CHECK: &str = "Dandori-Check";

/// `git worktree add` reads every other worktree's admin directory and fails when
/// one is being created or removed at the same moment, so worktree changes (and the
/// merges that update the shared branch) take turns within the process.
static WORKTREE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn worktree_lock() -> std::sync::MutexGuard<'static, ()> {
    // Poisoning only means another thread panicked while holding it; git's own state
    // is what matters and every caller checks it.
    match WORKTREE_LOCK.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    /// Author and committer date of every commit this handle creates, so the same
    /// plan and the same changes give the same commit hashes whatever the timing.
    fixed_date: Option<String>,
}

/// A commit on the work branch carrying dandori trailers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepCommit {
    pub hash: String,
    pub run_id: String,
    pub step_id: String,
    /// `(i, k)` for part i of k of a split step.
    pub part: Option<(u32, u32)>,
    /// The `Dandori-Check` trailers: what verified the step, and how it ended.
    pub checks: Vec<String>,
}

impl StepCommit {
    /// Whether this commit completes its step (an unsplit step or its last part).
    pub fn completes_step(&self) -> bool {
        match self.part {
            None => true,
            Some((i, k)) => i == k,
        }
    }
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Git {
            dir: dir.into(),
            fixed_date: None,
        }
    }

    /// This handle with every commit it creates dated `date` (RFC 3339).
    pub fn with_fixed_date(mut self, date: &str) -> Self {
        self.fixed_date = Some(date.to_string());
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Runs git and returns stdout; a non-zero exit is an error carrying stderr.
    pub fn run(&self, args: &[&str]) -> Result<String, RunnerError> {
        let out = self.output(args)?;
        if out.0 {
            Ok(out.1)
        } else {
            Err(self.err(args, out.2))
        }
    }

    /// Runs git and returns (success, stdout, stderr).
    pub fn output(&self, args: &[&str]) -> Result<(bool, String, String), RunnerError> {
        let mut cmd = Command::new("git");
        cmd.args(args)
            .current_dir(&self.dir)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        if let Some(date) = &self.fixed_date {
            cmd.env("GIT_AUTHOR_DATE", date)
                .env("GIT_COMMITTER_DATE", date);
        }
        let out = cmd
            .output()
            .map_err(|e| self.err(args, format!("could not start git: {e}")))?;
        Ok((
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }

    fn err(&self, args: &[&str], message: String) -> RunnerError {
        RunnerError::Git {
            args: args.join(" "),
            cwd: self.dir.clone(),
            message,
        }
    }

    pub fn rev_parse(&self, rev: &str) -> Result<String, RunnerError> {
        Ok(self
            .run(&[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("{rev}^{{commit}}"),
            ])?
            .trim()
            .to_string())
    }

    pub fn branch_exists(&self, branch: &str) -> Result<bool, RunnerError> {
        let (ok, _, _) = self.output(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("refs/heads/{branch}"),
        ])?;
        Ok(ok)
    }

    pub fn current_branch(&self) -> Result<Option<String>, RunnerError> {
        let (ok, out, _) = self.output(&["symbolic-ref", "--quiet", "--short", "HEAD"])?;
        Ok(ok.then(|| out.trim().to_string()))
    }

    pub fn is_ancestor(&self, ancestor: &str, of: &str) -> Result<bool, RunnerError> {
        let (ok, _, _) = self.output(&["merge-base", "--is-ancestor", ancestor, of])?;
        Ok(ok)
    }

    /// `git status --porcelain` lines, ignoring `exclude` (a repository-relative path).
    pub fn dirty_paths(&self, exclude: Option<&str>) -> Result<Vec<String>, RunnerError> {
        let mut args = vec!["status", "--porcelain", "--untracked-files=all", "--", "."];
        let spec;
        if let Some(ex) = exclude {
            spec = format!(":(exclude){ex}");
            args.push(&spec);
        }
        Ok(self
            .run(&args)?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.to_string())
            .collect())
    }

    /// Whether a cherry-pick is in progress in this worktree.
    pub fn cherry_pick_in_progress(&self) -> Result<bool, RunnerError> {
        let (ok, _, _) = self.output(&["rev-parse", "--verify", "--quiet", "CHERRY_PICK_HEAD"])?;
        Ok(ok)
    }

    /// Stages everything (respecting .gitignore) and returns `(lines, files)` changed
    /// against HEAD, with the changed paths, and the binary patch of the staged
    /// change against HEAD (one `git diff` prints both). Binary files count one line.
    pub fn staged_numstat(&self) -> Result<(u64, Vec<String>, String), RunnerError> {
        self.run(&["add", "-A", "--", "."])?;
        let out = self.run(&[
            "diff",
            "--cached",
            "--numstat",
            "--no-renames",
            "--binary",
            "--patch",
            "HEAD",
        ])?;
        // numstat lines (paths with newlines are quoted), a blank line, the patch.
        let (numstat, patch) = match out.split_once("\n\n") {
            Some((n, p)) => (n, p.to_string()),
            None => (out.as_str(), String::new()),
        };
        let mut lines = 0u64;
        let mut files = Vec::new();
        for l in numstat.lines() {
            let mut it = l.splitn(3, '\t');
            let (a, d, p) = (it.next(), it.next(), it.next());
            let n = |s: Option<&str>| s.and_then(|s| s.parse::<u64>().ok());
            lines += match (n(a), n(d)) {
                (Some(a), Some(d)) => a + d,
                _ => 1,
            };
            if let Some(p) = p {
                files.push(p.to_string());
            }
        }
        Ok((lines, files, patch))
    }

    /// Commits the index (possibly unchanged) with `message`; returns the hash.
    /// Only what [`Git::staged_numstat`] staged and measured is committed: files a
    /// unit command leaves behind afterwards are not. The hash comes from git's own
    /// summary line (printed unabbreviated), so no second git process is needed; if
    /// that line is not what we expect, HEAD is asked for instead.
    pub fn commit(&self, message: &str) -> Result<String, RunnerError> {
        let out = self.run(&[
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.abbrev=no",
            "commit",
            "--allow-empty",
            "--no-verify",
            "-m",
            message,
        ])?;
        match summary_hash(&out) {
            Some(h) => Ok(h),
            None => self.rev_parse("HEAD"),
        }
    }

    /// Discards every change since HEAD, untracked files included.
    pub fn reset_hard(&self, rev: &str) -> Result<(), RunnerError> {
        self.run(&["reset", "--quiet", "--hard", rev])?;
        self.run(&["clean", "-fdq"])?;
        Ok(())
    }

    /// The commits of `range` (newest first) that carry dandori trailers.
    pub fn step_commits(&self, range: &str) -> Result<Vec<StepCommit>, RunnerError> {
        let out = self.run(&["log", "--format=%H%x1f%B%x1e", range])?;
        let mut commits = Vec::new();
        for rec in out.split('\x1e') {
            let rec = rec.trim_start_matches('\n');
            let Some((hash, body)) = rec.split_once('\x1f') else {
                continue;
            };
            let mut run_id = None;
            let mut step_id = None;
            let mut part = None;
            let mut checks = Vec::new();
            for line in body.lines() {
                if let Some((k, v)) = line.split_once(": ") {
                    let v = v.trim().to_string();
                    match k {
                        TRAILER_RUN => run_id = Some(v),
                        TRAILER_STEP => step_id = Some(v),
                        TRAILER_PART => {
                            part = v.split_once('/').and_then(|(i, k)| {
                                Some((i.trim().parse().ok()?, k.trim().parse().ok()?))
                            })
                        }
                        TRAILER_CHECK => checks.push(v),
                        _ => {}
                    }
                }
            }
            if let (Some(run_id), Some(step_id)) = (run_id, step_id) {
                commits.push(StepCommit {
                    hash: hash.trim().to_string(),
                    run_id,
                    step_id,
                    part,
                    checks,
                });
            }
        }
        Ok(commits)
    }

    pub fn add_worktree(&self, path: &Path, rev: &str) -> Result<(), RunnerError> {
        let p = path.to_string_lossy();
        let _turn = worktree_lock();
        self.run(&["worktree", "add", "--quiet", "--detach", &p, rev])?;
        Ok(())
    }

    /// Moves a worktree to `rev`, whatever state a previous step left it in: files
    /// that differ between its HEAD and `rev` are rewritten (git compares stat data,
    /// it does not rewrite the others), changes and every untracked or ignored file
    /// are removed, so the worktree is what a fresh `git worktree add` would give.
    pub fn move_worktree(&self, rev: &str) -> Result<(), RunnerError> {
        self.run(&["reset", "--quiet", "--hard", rev])?;
        self.run(&["clean", "-ffdxq"])?;
        Ok(())
    }

    /// The commit holding both `a` and `b`: one of them when it contains the other,
    /// otherwise a merge commit (parents `a`, `b`, dated by this handle) of the tree
    /// `git merge-tree` writes. `None` when they conflict.
    pub fn merge_commits(
        &self,
        a: &str,
        b: &str,
        message: &str,
    ) -> Result<Option<String>, RunnerError> {
        let base = self.run(&["merge-base", a, b])?;
        let base = base.trim();
        if base == b {
            return Ok(Some(a.to_string()));
        }
        if base == a {
            return Ok(Some(b.to_string()));
        }
        let (ok, out, _) = self.output(&["merge-tree", "--write-tree", "--no-messages", a, b])?;
        if !ok {
            return Ok(None);
        }
        let tree = out.lines().next().unwrap_or_default().trim().to_string();
        let commit = self.run(&["commit-tree", &tree, "-p", a, "-p", b, "-m", message])?;
        Ok(Some(commit.trim().to_string()))
    }

    /// Folds `commits` (each named by its step, in the order given) into one commit
    /// with [`Git::merge_commits`]; merge messages say `what` and which steps they
    /// hold. `None` when two of them conflict.
    pub fn merge_all(
        &self,
        commits: &[(String, String)],
        what: &str,
    ) -> Result<Option<String>, RunnerError> {
        let mut iter = commits.iter();
        let Some((first_id, first)) = iter.next() else {
            return Ok(None);
        };
        let mut acc = first.clone();
        let mut merged = vec![first_id.as_str()];
        for (id, commit) in iter {
            merged.push(id);
            let message = format!("dandori: {what}: merge {}", merged.join(", "));
            match self.merge_commits(&acc, commit, &message)? {
                Some(c) => acc = c,
                None => return Ok(None),
            }
        }
        Ok(Some(acc))
    }

    /// Points `refs/heads/<branch>` at `commit` without touching any worktree.
    pub fn set_branch(&self, branch: &str, commit: &str) -> Result<(), RunnerError> {
        self.run(&["update-ref", &format!("refs/heads/{branch}"), commit])?;
        Ok(())
    }

    /// Removes a worktree of this repository: its directory and its administrative
    /// directory (`.git/worktrees/<name>`), without a git process when the worktree's
    /// `.git` file and the administrative `gitdir` file point at each other (which is
    /// exactly what `git worktree remove --force` checks before deleting the same two
    /// directories); otherwise through git.
    pub fn remove_worktree(&self, path: &Path) -> Result<(), RunnerError> {
        let _turn = worktree_lock();
        if let Some(admin) = linked_admin_dir(path) {
            std::fs::remove_dir_all(path)
                .map_err(|e| dandori_fs::FsError::new("removing worktree", path, e))?;
            std::fs::remove_dir_all(&admin).map_err(|e| {
                dandori_fs::FsError::new("removing worktree administrative files", &admin, e)
            })?;
            return Ok(());
        }
        let p = path.to_string_lossy();
        let (ok, _, _) = self.output(&["worktree", "remove", "--force", &p])?;
        if !ok {
            if path.exists() {
                std::fs::remove_dir_all(path)
                    .map_err(|e| dandori_fs::FsError::new("removing worktree", path, e))?;
            }
            self.run(&["worktree", "prune"])?;
        }
        Ok(())
    }

    /// Cherry-picks `commit` onto HEAD, keeping its message; returns the new HEAD.
    /// On conflict the cherry-pick is aborted and `None` returned. With `ff` (the
    /// caller believes HEAD is `commit`'s parent) git fast-forwards to `commit` itself
    /// when HEAD really is its parent, and picks it as usual otherwise.
    pub fn cherry_pick(&self, commit: &str, ff: bool) -> Result<Option<String>, RunnerError> {
        let _turn = worktree_lock();
        let mut args = vec![
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.abbrev=no",
            "cherry-pick",
            "--allow-empty",
            "--keep-redundant-commits",
        ];
        if ff {
            args.push("--ff");
        }
        args.push(commit);
        let (ok, out, _) = self.output(&args)?;
        if !ok {
            let _ = self.output(&["cherry-pick", "--abort"]);
            return Ok(None);
        }
        match summary_hash(&out) {
            Some(h) => Ok(Some(h)),
            // A fast-forward creates no commit and prints no summary.
            None if ff && is_full_hash(commit) => Ok(Some(commit.to_string())),
            None => self.rev_parse("HEAD").map(Some),
        }
    }

    /// The commit a linked worktree's detached HEAD points at, read from its
    /// administrative `HEAD` file; `None` when it is not that simple.
    pub fn detached_head(&self) -> Option<String> {
        let text = std::fs::read_to_string(self.dir.join(".git")).ok()?;
        let admin = PathBuf::from(text.strip_prefix("gitdir: ")?.trim_end());
        let head = std::fs::read_to_string(admin.join("HEAD")).ok()?;
        let head = head.trim_end();
        is_full_hash(head).then(|| head.to_string())
    }
}

/// The full hash in the summary line git prints after creating a commit
/// (`[<branch> <hash>] subject`, `[detached HEAD <hash>] subject`,
/// `[<branch> (root-commit) <hash>] subject`) when `core.abbrev=no`. Branch names
/// hold no spaces, so the hash is the first token after the first one that ends in `]`.
fn summary_hash(stdout: &str) -> Option<String> {
    let line = stdout.lines().find(|l| l.starts_with('['))?;
    let tok = line
        .split(' ')
        .skip(1)
        .find(|t| t.ends_with(']'))?
        .trim_end_matches(']');
    is_full_hash(tok).then(|| tok.to_string())
}

fn is_full_hash(s: &str) -> bool {
    (s.len() == 40 || s.len() == 64)
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// The administrative directory of the linked worktree at `path`, when its `.git`
/// file names one whose `gitdir` file names `path/.git` back.
fn linked_admin_dir(path: &Path) -> Option<PathBuf> {
    let dotgit = path.join(".git");
    let text = std::fs::read_to_string(&dotgit).ok()?;
    let admin = PathBuf::from(text.strip_prefix("gitdir: ")?.trim_end());
    if !admin.is_absolute() || admin.parent()?.file_name()? != "worktrees" {
        return None;
    }
    let back = std::fs::read_to_string(admin.join("gitdir")).ok()?;
    let back = PathBuf::from(back.trim_end());
    let same = back == dotgit
        || matches!(
            (dandori_fs::canonicalize(&back), dandori_fs::canonicalize(&dotgit)),
            (Ok(a), Ok(b)) if a == b
        );
    same.then_some(admin)
}

#[cfg(test)]
mod tests {
    use super::summary_hash;

    #[test]
    fn summary_lines() {
        let h = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(
            summary_hash(&format!("[detached HEAD {h}] S01: x\n 1 file changed\n")),
            Some(h.to_string())
        );
        assert_eq!(
            summary_hash(&format!("[dandori/RQ-1/run-1 {h}] S01: a] b\n")),
            Some(h.to_string())
        );
        assert_eq!(
            summary_hash(&format!("[main (root-commit) {h}] init\n")),
            Some(h.to_string())
        );
        assert_eq!(summary_hash("[main 0123abc] short\n"), None);
        assert_eq!(summary_hash(""), None);
    }
}
