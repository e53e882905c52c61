//! The git operations of the runner. Every call names its arguments and directory
//! in its error.

use std::path::{Path, PathBuf};

use crate::error::RunnerError;

mod driver_overrides;
pub mod index_file;
mod merge;
pub mod never_committed;
mod objects;
pub mod split_index;
pub mod touched;
pub(crate) mod upper;

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

pub(crate) fn worktree_lock() -> std::sync::MutexGuard<'static, ()> {
    // Poisoning only means another thread panicked while holding it; git's own state
    // is what matters and every caller checks it.
    match WORKTREE_LOCK.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Worktree file deletions running in the background
/// ([`Git::remove_worktree_in_background`]).
static REMOVALS: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(Vec::new());

/// Waits until the files of every worktree removed in the background are
/// deleted: a program about to exit calls it (after printing its result), or
/// the deletion stops halfway (what is left is removed on the run's next start).
pub fn wait_for_removals() {
    let handles = match REMOVALS.lock() {
        Ok(mut g) => std::mem::take(&mut *g),
        Err(p) => std::mem::take(&mut *p.into_inner()),
    };
    for h in handles {
        let _ = h.join();
    }
}

/// Deletes `dir` (a directory the run no longer needs) in the background
/// ([`wait_for_removals`] waits for it).
pub(crate) fn remove_in_background(dir: PathBuf) {
    let handle = std::thread::spawn(move || {
        let _ = dandori_exec::overlay::remove_dir(&dir);
    });
    match REMOVALS.lock() {
        Ok(mut g) => g.push(handle),
        Err(p) => p.into_inner().push(handle),
    }
}

/// The name of the commit the work branch started at in [`Git::merge_all`] lists.
pub const WORK_START: &str = "work";

/// Which step commits contain which, known from the plan: a step's commit is built
/// on the merge of its predecessors' commits, so it contains the commit of every
/// step it depends on (transitively) and of no other step, and every step commit
/// contains the commit the work branch started at ([`WORK_START`]). Names it does
/// not know (follow-up steps, another starting point) are left to git.
#[derive(Debug, Clone, Default)]
pub struct Ancestry {
    /// Each step's transitive predecessors.
    below: std::collections::HashMap<String, std::collections::HashSet<String>>,
    /// Whether [`WORK_START`] is known to be below every step commit.
    work: bool,
}

impl Ancestry {
    /// From the steps' ids and direct predecessors (indices, every edge pointing
    /// forward in plan order). `work_start_below_steps`: the run's starting commit
    /// was recorded before any step committed (false for a run directory of an
    /// older version, whose starting point may already hold done steps).
    pub fn from_predecessors(
        ids: &[&str],
        preds: &[std::collections::BTreeSet<usize>],
        work_start_below_steps: bool,
    ) -> Ancestry {
        let mut all: Vec<std::collections::HashSet<String>> = Vec::with_capacity(ids.len());
        for i in 0..ids.len() {
            let mut set = std::collections::HashSet::new();
            for p in preds.get(i).into_iter().flatten() {
                if *p < i {
                    set.insert(ids[*p].to_string());
                    set.extend(all[*p].iter().cloned());
                }
            }
            all.push(set);
        }
        Ancestry {
            below: ids.iter().map(|s| s.to_string()).zip(all).collect(),
            work: work_start_below_steps,
        }
    }

    /// Whether the commit named `a` contains the commit named `b` (or is it);
    /// `None` when unknown.
    pub fn contains(&self, a: &str, b: &str) -> Option<bool> {
        if a == b {
            return Some(true);
        }
        let step = |n: &str| self.below.contains_key(n);
        match (a == WORK_START, b == WORK_START) {
            (false, true) => (self.work && step(a)).then_some(true),
            (true, false) => (self.work && step(b)).then_some(false),
            _ => Some(self.below.get(a)?.contains(b)).filter(|_| step(b)),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Git {
    dir: PathBuf,
    /// Author and committer date of every commit this handle creates, so the same
    /// plan and the same changes give the same commit hashes whatever the timing.
    fixed_date: Option<String>,
    /// A worktree of the run's pool: its index is tuned for large repositories.
    pool: bool,
    /// The run's commit writer, shared by the repository's and the worktrees'
    /// handles; `None`: every commit object comes from `git commit-tree`.
    objects: Option<std::sync::Arc<objects::ObjectWriter>>,
    /// The run's branch updater, shared like `objects`.
    refs: Option<std::sync::Arc<objects::RefWriter>>,
    /// The run's object reader, shared like `objects`.
    reader: Option<std::sync::Arc<objects::ObjectReader>>,
}

/// Index settings of the pool's worktrees (`feature.manyFiles`: index version 4,
/// no checksum over the whole index on every write, the untracked cache), so
/// that what git writes and walks per step grows as little as it can with the
/// repository. Never applied to the user's own worktree.
const POOL_CONFIG: &[&str] = &["-c", "feature.manyFiles=true"];

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
            pool: false,
            objects: None,
            refs: None,
            reader: None,
        }
    }

    /// This handle with its own commit and branch writers (see `git/objects.rs`),
    /// shared by its clones and by the handles made with [`Git::sharing_objects`].
    pub fn with_object_writer(mut self) -> Self {
        self.objects = Some(std::sync::Arc::new(objects::ObjectWriter::default()));
        self.refs = Some(std::sync::Arc::new(objects::RefWriter::default()));
        self.reader = Some(std::sync::Arc::new(objects::ObjectReader::new(&self.dir)));
        self
    }

    /// This handle writing commits through `other`'s writer (a worktree of
    /// `other`'s repository).
    pub fn sharing_objects(mut self, other: &Git) -> Self {
        self.objects = other.objects.clone();
        self.refs = other.refs.clone();
        self.reader = other.reader.clone();
        self
    }

    /// The paths that differ between the trees of `a` and `b` (commits or
    /// trees; see [`objects::changed_paths`]), from the run's object reader;
    /// `None` when there is none or it cannot tell.
    pub fn changed_paths(&self, a: &str, b: &str) -> Option<Vec<String>> {
        objects::changed_paths(self.reader.as_ref()?, &self.tree_of(a)?, &self.tree_of(b)?)
    }

    /// The tree of the commit (or tree) `rev`, from the run's object reader.
    pub fn tree_of(&self, rev: &str) -> Option<String> {
        self.reader.as_ref()?.tree_of(rev)
    }

    /// `(lines, files, patch)` of the change from the tree `a` to the tree `b`
    /// (like [`Git::cached_numstat`]), from the run's long-lived `diff-tree`;
    /// `None` when there is none or it failed.
    pub fn tree_numstat(&self, a: &str, b: &str) -> Option<(u64, Vec<String>, String)> {
        let out = self.reader.as_ref()?.diff(a, b)?;
        Some(parse_numstat_patch(&out))
    }

    /// A commit of `tree` (written from the index earlier) as a child of
    /// `parent`, with `message` cleaned up like [`Git::commit_index`] does.
    pub fn commit_written_tree(
        &self,
        tree: &str,
        parent: &str,
        message: &str,
    ) -> Result<String, RunnerError> {
        self.commit_tree(tree, &[parent], &cleanup_message(message))
    }

    /// Whether `path` is in the tree of `rev` (as anything: file, link,
    /// directory, submodule); `None` when the run's object reader cannot tell.
    pub fn in_tree(&self, rev: &str, path: &str) -> Option<bool> {
        if path.is_empty()
            || path
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
        {
            return None;
        }
        let r = self.reader.as_ref()?;
        r.contains(&r.tree_of(rev)?, path)
    }

    /// Makes `paths` (files or directories) in the worktree and the index what
    /// they are in `rev`, removing those `rev` does not have (`git checkout
    /// --no-overlay <rev> -- <paths>`; HEAD is left alone). Every path must be in
    /// `rev` or in the index.
    pub fn checkout_paths(&self, rev: &str, paths: &[&str]) -> Result<(), RunnerError> {
        self.run_paths(
            &[
                "--literal-pathspecs",
                "checkout",
                "--no-overlay",
                "--quiet",
                rev,
                "--pathspec-from-file=-",
                "--pathspec-file-nul",
            ],
            paths,
        )
    }

    /// A commit of `tree` with `parents` and `message`, dated by this handle.
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, RunnerError> {
        let written = self
            .objects
            .as_ref()
            .and_then(|w| w.commit(self, tree, parents, message));
        let id = match written {
            Some(id) => id,
            None => {
                let mut args = vec!["commit-tree", tree];
                for p in parents {
                    args.push("-p");
                    args.push(p);
                }
                args.push("-m");
                args.push(message);
                self.run(&args)?.trim().to_string()
            }
        };
        if let Some(r) = &self.reader
            && is_full_hash(&id)
        {
            r.note_commit(&id, tree);
            r.note_parents(&id, parents);
        }
        Ok(id)
    }

    /// This handle for a worktree of the run's pool ([`POOL_CONFIG`]).
    pub fn pool_worktree(mut self) -> Self {
        self.pool = true;
        self
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

    /// The hardened git command (`dandori_exec::git`) for `args` in this handle's
    /// directory, with its dates and index settings. Stdin is null.
    fn command(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = std::process::Command::new("git");
        cmd.current_dir(&self.dir)
            .stdin(std::process::Stdio::null());
        dandori_exec::overlay::enter(&mut cmd, &self.dir);
        dandori_exec::git::harden_env(&mut cmd, dandori_exec::git::GlobalConfig::Keep);
        cmd.args(dandori_exec::git::HARDENING_ARGS)
            .args(driver_overrides::for_dir(&self.dir).iter())
            .args(if self.pool { POOL_CONFIG } else { &[] })
            .args(args)
            .env("LC_ALL", "C");
        if let Some(date) = &self.fixed_date {
            cmd.env("GIT_AUTHOR_DATE", date)
                .env("GIT_COMMITTER_DATE", date);
        }
        cmd
    }

    /// Runs git and returns (success, stdout, stderr).
    pub fn output(&self, args: &[&str]) -> Result<(bool, String, String), RunnerError> {
        let mut cmd = self.command(args);
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

    /// The plan's base: a branch, or the commit a detached HEAD was at when
    /// the plan was made (a CI checkout, a bisect): a full commit id that exists.
    pub fn base_exists(&self, base: &str) -> Result<bool, RunnerError> {
        if self.branch_exists(base)? {
            return Ok(true);
        }
        let commit_id =
            matches!(base.len(), 40 | 64) && base.chars().all(|c| c.is_ascii_hexdigit());
        if !commit_id {
            return Ok(false);
        }
        let (ok, _, _) = self.output(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{base}^{{commit}}"),
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

    /// Stages everything (respecting .gitignore, leaving out bytecode and tool
    /// caches: [`never_committed`]) and returns `(lines, files)` changed
    /// against HEAD, with the changed paths, and the binary patch of the staged
    /// change against HEAD (one `git diff` prints both). Binary files count one line.
    pub fn staged_numstat(&self) -> Result<(u64, Vec<String>, String), RunnerError> {
        let excludes = never_committed::exclude_pathspecs();
        let mut args = vec!["add", "-A", "--", "."];
        args.extend(excludes.iter().map(String::as_str));
        self.run(&args)?;
        self.cached_numstat("HEAD", None)
    }

    /// Runs git with `input` on its stdin and returns stdout; a non-zero exit is an
    /// error carrying stderr.
    pub fn run_input(&self, args: &[&str], input: &[u8]) -> Result<String, RunnerError> {
        self.run_input_allowing(args, input, &[0])
    }

    /// [`Git::run_input`] where every exit code of `ok` is a success.
    pub(crate) fn run_input_allowing(
        &self,
        args: &[&str],
        input: &[u8],
        ok: &[i32],
    ) -> Result<String, RunnerError> {
        use std::io::Write;
        let mut cmd = self.command(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd
            .spawn()
            .map_err(|e| self.err(args, format!("could not start git: {e}")))?;
        // Written from a thread: git may answer before it has read everything.
        let writer = child.stdin.take().map(|mut stdin| {
            let input = input.to_vec();
            std::thread::spawn(move || stdin.write_all(&input))
        });
        let out = child
            .wait_with_output()
            .map_err(|e| self.err(args, format!("git did not finish: {e}")))?;
        let written = writer.map(|w| w.join());
        if !out.status.code().is_some_and(|c| ok.contains(&c)) {
            return Err(self.err(
                args,
                String::from_utf8_lossy(&out.stderr).trim().to_string(),
            ));
        }
        if let Some(Ok(Err(e))) = written {
            return Err(self.err(args, format!("could not write to git: {e}")));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// `git status` of `paths` only (all of the worktree when `None`): each entry's
    /// index and worktree states (`XY` of `--porcelain`, `?` untracked, `!`
    /// ignored) and its path. Untracked directories are listed file by file; an
    /// ignored directory as itself (ending in `/`).
    pub fn status_of(&self, paths: Option<&[&str]>) -> Result<Vec<StatusEntry>, RunnerError> {
        let mut args = vec![
            "--literal-pathspecs",
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--no-renames",
            "--",
        ];
        args.extend(paths.unwrap_or(&["."]));
        let out = self.run(&args)?;
        Ok(out
            .split('\0')
            .filter_map(|e| {
                let b = e.as_bytes();
                (b.len() > 3).then(|| StatusEntry {
                    index: b[0],
                    worktree: b[1],
                    path: e[3..].to_string(),
                })
            })
            .collect())
    }

    /// Stages exactly `paths` (files or symbolic links; a missing one leaves the
    /// index): `git update-index --add --remove`.
    pub fn update_index(&self, paths: &[&str]) -> Result<(), RunnerError> {
        self.run_paths(
            &["update-index", "--add", "--remove", "-z", "--stdin"],
            paths,
        )
    }

    /// Runs `args` (a command reading NUL-separated paths on stdin) on `paths`;
    /// nothing when there are none.
    fn run_paths(&self, args: &[&str], paths: &[&str]) -> Result<(), RunnerError> {
        if paths.is_empty() {
            return Ok(());
        }
        let mut input = Vec::new();
        for p in paths {
            input.extend_from_slice(p.as_bytes());
            input.push(0);
        }
        self.run_input(args, &input)?;
        Ok(())
    }

    /// `(lines, files)` changed between `rev` and the index, only among `paths`
    /// (all paths when `None`), with the changed paths and the binary patch
    /// (see [`Git::staged_numstat`]).
    pub fn cached_numstat(
        &self,
        rev: &str,
        paths: Option<&[&str]>,
    ) -> Result<(u64, Vec<String>, String), RunnerError> {
        let mut args = vec![
            "--literal-pathspecs",
            "diff",
            "--cached",
            "--numstat",
            "--no-renames",
            "--binary",
            "--patch",
            rev,
            "--",
        ];
        args.extend(paths.unwrap_or(&["."]));
        let out = self.run(&args)?;
        Ok(parse_numstat_patch(&out))
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

    /// Commits the index as a child of `parent` and returns the new commit, without
    /// moving HEAD: `write-tree` (which reuses the index's cached trees, so it
    /// costs what changed) and `commit-tree`. `git commit` would first refresh the
    /// index and compare it with HEAD, reading every tracked file's metadata: a
    /// cost that grows with the repository. The message is cleaned up the way
    /// `git commit -m` does it (trailing whitespace, repeated and surrounding blank
    /// lines).
    pub fn commit_index(&self, parent: &str, message: &str) -> Result<String, RunnerError> {
        let tree = self.run(&["write-tree"])?;
        self.commit_tree(tree.trim(), &[parent], &cleanup_message(message))
    }

    /// Points this worktree's detached HEAD at `commit` (its files and index are
    /// left as they are).
    pub fn set_head(&self, commit: &str) -> Result<(), RunnerError> {
        // A linked worktree's detached HEAD is the ref `worktrees/<id>/HEAD` of the
        // repository: the run's branch writer moves it without a process.
        if let Some(w) = &self.refs
            && self.detached_head().is_some()
            && let Some(id) = self
                .admin_dir()
                .and_then(|a| a.file_name().and_then(|n| n.to_str()).map(str::to_string))
            && w.update(self, &format!("worktrees/{id}/HEAD"), commit)
        {
            return Ok(());
        }
        self.run(&["update-ref", "--no-deref", "HEAD", commit])?;
        Ok(())
    }

    /// Discards every change since HEAD, untracked files included.
    pub fn reset_hard(&self, rev: &str) -> Result<(), RunnerError> {
        self.run(&["reset", "--quiet", "--hard", rev])?;
        self.run(&["clean", "-fdq"])?;
        Ok(())
    }

    /// The objects the index holds for `files` (their blobs) and the trees above
    /// them, as staging wrote them: what [`Git::forget_objects`] removes when the
    /// change must not stay (a secret).
    pub fn staged_objects(&self, files: &[&str]) -> Result<Vec<String>, RunnerError> {
        if files.is_empty() {
            return Ok(Vec::new());
        }
        let mut args = vec!["ls-files", "-s", "--"];
        args.extend(files.iter().copied());
        let mut oids: Vec<String> = self
            .run(&args)?
            .lines()
            .filter_map(|l| l.split_whitespace().nth(1).map(str::to_string))
            .collect();
        let tree = self.run(&["write-tree"])?.trim().to_string();
        let mut dirs: Vec<String> = Vec::new();
        for f in files {
            let mut cur = *f;
            while let Some((parent, _)) = cur.rsplit_once('/') {
                dirs.push(parent.to_string());
                cur = parent;
            }
        }
        dirs.sort();
        dirs.dedup();
        for d in &dirs {
            if let Ok(id) = self.run(&["rev-parse", "--verify", "--quiet", &format!("{tree}:{d}")])
            {
                oids.push(id.trim().to_string());
            }
        }
        oids.push(tree);
        oids.sort();
        oids.dedup();
        Ok(oids)
    }

    /// Deletes the loose objects of `oids` that nothing reaches (no ref, no
    /// worktree's HEAD or index, no reflog): a refused change's blobs and trees,
    /// so the secret they hold is not left in the object store for `git fsck
    /// --lost-found` or a push of everything. Packed or reachable objects are left
    /// alone (they were there before). Returns the ids deleted.
    pub fn forget_objects(&self, oids: &[String]) -> Result<Vec<String>, RunnerError> {
        let reachable = self.run(&[
            "rev-list",
            "--objects",
            "--no-object-names",
            "--all",
            "--reflog",
            "--indexed-objects",
        ])?;
        let reachable: std::collections::HashSet<&str> = reachable.lines().collect();
        let mut removed = Vec::new();
        for oid in oids {
            let hex = oid.len() >= 40 && oid.bytes().all(|b| b.is_ascii_hexdigit());
            if !hex || reachable.contains(oid.as_str()) {
                continue;
            }
            let rel = format!("objects/{}/{}", &oid[..2], &oid[2..]);
            let path = self
                .dir
                .join(self.run(&["rev-parse", "--git-path", &rel])?.trim());
            if path.is_file() {
                dandori_fs::remove_file(&path)?;
                removed.push(oid.clone());
            }
        }
        Ok(removed)
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

    /// Adds a worktree at `rev` like [`Git::add_worktree`], but only its
    /// registration takes turns with the other worktree changes of the process
    /// (`worktree add --no-checkout`, which writes a few files); the checkout of
    /// every file — what `worktree add` itself does next, `reset --hard` in the
    /// new worktree — runs outside the turn, so several worktrees are filled at
    /// once. `pool`: the checkout writes the pool's index ([`POOL_CONFIG`]).
    pub fn add_worktree_unlocked_checkout(
        &self,
        path: &Path,
        rev: &str,
        pool: bool,
    ) -> Result<(), RunnerError> {
        let p = path.to_string_lossy();
        {
            let _turn = worktree_lock();
            self.run(&[
                "worktree",
                "add",
                "--quiet",
                "--no-checkout",
                "--detach",
                &p,
                rev,
            ])?;
        }
        let mut wt = Git::new(path);
        wt.pool = pool;
        wt.run(&["reset", "--quiet", "--hard", "--no-recurse-submodules"])?;
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
        self.merge_commit(a, b, message)
    }

    /// A merge commit of `a` and `b` (parents `a`, `b`, dated by this handle), of
    /// the tree `git merge-tree` writes, whether or not one contains the other;
    /// `None` when they conflict. Two git processes, no worktree.
    pub fn merge_commit(
        &self,
        a: &str,
        b: &str,
        message: &str,
    ) -> Result<Option<String>, RunnerError> {
        if let Some(tree) = self.merge_in_process(a, b) {
            return Ok(Some(self.commit_tree(&tree, &[a, b], message)?));
        }
        let (ok, out, _) = self.output(&["merge-tree", "--write-tree", "--no-messages", a, b])?;
        if !ok {
            return Ok(None);
        }
        let tree = out.lines().next().unwrap_or_default().trim().to_string();
        Ok(Some(self.commit_tree(&tree, &[a, b], message)?))
    }

    /// The tree of the merge of the commits `a` and `b` when the run can tell it
    /// without git (`git/merge.rs`: both were written by this run or stand on its
    /// starting commit, and no path changed on both sides): the tree `git
    /// merge-tree --write-tree` writes for them. `None`: ask git.
    pub fn merge_in_process(&self, a: &str, b: &str) -> Option<String> {
        let reader = self.reader.as_ref()?;
        let base = merge::base_tree(reader, a, b)?;
        merge::merge_trees(reader, &base, &reader.tree_of(a)?, &reader.tree_of(b)?)
    }

    /// Folds `commits` (each named by its step, in the order given) into one commit
    /// with [`Git::merge_commits`]; merge messages say `what` and which steps they
    /// hold. `None` when two of them conflict.
    pub fn merge_all(
        &self,
        commits: &[(String, String)],
        what: &str,
    ) -> Result<Option<String>, RunnerError> {
        self.merge_all_known(commits, what, &Ancestry::default())
    }

    /// [`Git::merge_all`] that asks git whether one commit contains another only
    /// when `known` cannot tell from the names: the same result, fewer processes.
    pub fn merge_all_known(
        &self,
        commits: &[(String, String)],
        what: &str,
        known: &Ancestry,
    ) -> Result<Option<String>, RunnerError> {
        let mut iter = commits.iter();
        let Some((first_id, first)) = iter.next() else {
            return Ok(None);
        };
        let mut acc = first.clone();
        // The name of `acc` while it is one of the given commits (not a merge).
        let mut acc_id = Some(first_id.as_str());
        let mut merged = vec![first_id.as_str()];
        for (id, commit) in iter {
            // `acc` holds `commit` when one of the commits it merged does; `commit`
            // holds `acc` only when `acc` is one of the given commits.
            let acc_holds = merged
                .iter()
                .map(|m| known.contains(m, id))
                .try_fold(false, |any, k| k.map(|k| any || k));
            let holds_acc = match acc_id {
                Some(a) => known.contains(id, a),
                None => Some(false),
            };
            merged.push(id);
            let message = format!("dandori: {what}: merge {}", merged.join(", "));
            let next = match (acc_holds, holds_acc) {
                (Some(true), _) => Some(acc.clone()),
                (_, Some(true)) => Some(commit.clone()),
                (Some(false), Some(false)) => self.merge_commit(&acc, commit, &message)?,
                _ => self.merge_commits(&acc, commit, &message)?,
            };
            let Some(next) = next else {
                return Ok(None);
            };
            if next == *commit {
                acc_id = Some(id);
            } else if next != acc {
                acc_id = None;
            }
            acc = next;
        }
        Ok(Some(acc))
    }

    /// Points `refs/heads/<branch>` at `commit` without touching any worktree.
    pub fn set_branch(&self, branch: &str, commit: &str) -> Result<(), RunnerError> {
        let refname = format!("refs/heads/{branch}");
        if let Some(w) = &self.refs
            && w.update(self, &refname, commit)
        {
            return Ok(());
        }
        self.run(&["update-ref", &refname, commit])?;
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

    /// [`Git::remove_worktree`] whose file deletion runs in the background: the
    /// worktree is unregistered (its administrative directory removed) and its
    /// directory renamed out of the way (`.removed-<name>` beside it) at once;
    /// its files — as many as the repository has — are deleted by a thread
    /// ([`wait_for_removals`] waits for them). Removing every file of a large
    /// checkout takes seconds (on file systems that discard freed blocks, tens
    /// of seconds) that the run's result need not wait for.
    pub fn remove_worktree_in_background(&self, path: &Path) -> Result<(), RunnerError> {
        let trash = {
            let _turn = worktree_lock();
            match (linked_admin_dir(path), path.file_name()) {
                (Some(admin), Some(name)) => {
                    let mut trash_name = std::ffi::OsString::from(".removed-");
                    trash_name.push(name);
                    let trash = path.with_file_name(trash_name);
                    std::fs::rename(path, &trash)
                        .map_err(|e| dandori_fs::FsError::new("moving worktree", path, e))?;
                    std::fs::remove_dir_all(&admin).map_err(|e| {
                        dandori_fs::FsError::new(
                            "removing worktree administrative files",
                            &admin,
                            e,
                        )
                    })?;
                    Some(trash)
                }
                _ => None,
            }
        };
        match trash {
            Some(trash) => {
                let handle = std::thread::spawn(move || {
                    let _ = std::fs::remove_dir_all(&trash);
                });
                match REMOVALS.lock() {
                    Ok(mut g) => g.push(handle),
                    Err(p) => p.into_inner().push(handle),
                }
                Ok(())
            }
            None => self.remove_worktree(path),
        }
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
        let head = std::fs::read_to_string(self.admin_dir()?.join("HEAD")).ok()?;
        let head = head.trim_end();
        is_full_hash(head).then(|| head.to_string())
    }

    /// A linked worktree's administrative directory (`.git/worktrees/<id>`), named
    /// by its `.git` file.
    fn admin_dir(&self) -> Option<PathBuf> {
        let text = std::fs::read_to_string(self.dir.join(".git")).ok()?;
        Some(PathBuf::from(text.strip_prefix("gitdir: ")?.trim_end()))
    }
}

/// One entry of [`Git::status_of`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// `X`: the index against HEAD.
    pub index: u8,
    /// `Y`: the worktree against the index (`?` untracked, `!` ignored).
    pub worktree: u8,
    pub path: String,
}

/// `git diff --numstat --patch` output: `(lines, files, patch)`; binary files
/// count one line.
fn parse_numstat_patch(out: &str) -> (u64, Vec<String>, String) {
    // numstat lines (paths with newlines are quoted), a blank line, the patch.
    let (numstat, patch) = match out.split_once("\n\n") {
        Some((n, p)) => (n, p.to_string()),
        None => (out, String::new()),
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
    (lines, files, patch)
}

/// A commit message as `git commit -m` stores it (cleanup mode `whitespace`): no
/// trailing whitespace on a line, no blank lines at either end, no two blank lines
/// in a row, one final newline.
fn cleanup_message(message: &str) -> String {
    let mut out = String::new();
    let mut blank = false;
    for line in message.lines().map(str::trim_end) {
        if line.is_empty() {
            blank = !out.is_empty();
            continue;
        }
        if blank {
            out.push('\n');
            blank = false;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
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
    use super::{cleanup_message, summary_hash};

    #[test]
    fn messages_are_cleaned_like_git_commit() {
        assert_eq!(
            cleanup_message("\n\nS01: x  \n\n\n\nintent\t\n\nA: b\n\n"),
            "S01: x\n\nintent\n\nA: b\n"
        );
        assert_eq!(cleanup_message(""), "");
    }

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
