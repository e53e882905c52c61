//! A copy-on-write step workspace: overlayfs over ONE checkout of the run's
//! start ([`SharedBase`], a worktree of the repository made once per run and
//! never written), an upper directory of the step's own that receives every
//! change, mounted in a mount namespace of its own (`dandori_exec::overlay`) at
//! the worker's fixed directory ([`MountPoints`]: the same path from step to
//! step, as a pool worktree's).
//!
//! What a step costs no longer depends on the repository's size:
//! * **making it**: a few directories, the step's git administrative directory
//!   (`.git/worktrees/<name>`: `HEAD`, `commondir`, `gitdir`, and the shared
//!   checkout's index as a hard link — git replaces an index by renaming a new
//!   file over it, so the shared one is never written), the `.git` file in the
//!   upper directory that names it, the mount; a step built on another commit
//!   than the run's start gets the paths that differ written by one `git
//!   checkout --no-overlay` (its index as the base's, for the agent's `git diff`);
//! * **staging**: the upper directory *is* the change (`git/upper.rs`): its files
//!   are written as blobs through the run's long-lived `hash-object`, new ones
//!   checked against `.gitignore` (`check-ignore` of those paths only), the tree
//!   built from the shared checkout's tree, diffed from HEAD through the run's
//!   long-lived `diff-tree` (the secret scan reads that diff: the same blobs);
//! * **removing it**: the mount ends with its holder; the directories go in the
//!   background.
//!
//! Git inside the workspace is an ordinary linked worktree: `git status`, `git
//! diff`, `git add`, `git commit`, `git stash` work as in a pool worktree, on
//! the step's own index and HEAD.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dandori_exec::overlay::Overlay;

use super::{Mechanism, StepWorkspace};
use crate::error::RunnerError;
use crate::git::Git;
use crate::git::index_file as upper_index;
use crate::git::upper;

/// The one checkout every overlay workspace shows: the user's own checkout
/// when it is clean (its ignored files — a prepared `.venv`, `node_modules` —
/// are then seen by every step without a copy), else a checkout the run makes.
#[derive(Debug)]
pub struct SharedBase {
    path: PathBuf,
    commit: String,
    tree: String,
    /// The index of that checkout (hard-linked into each step's administrative
    /// directory).
    index: PathBuf,
    /// A copy of that index made at the run's start (the run's own file: git
    /// touches a shared index it reads; removed with this) and its entries
    /// read once, for steps' split indexes; `None` where git cannot share it
    /// (`git::split_index`).
    split: Option<crate::git::split_index::BaseIndex>,
    /// The repository's `worktrees` administrative directory.
    worktrees: PathBuf,
    /// Made by the run (removed at its end), not the user's.
    owned: bool,
    /// Directories of the checkout that steps do not see (the run directories
    /// inside the user's checkout): empty, and never staged.
    hidden: Vec<String>,
}

impl SharedBase {
    /// The user's checkout of `main` at its HEAD: nothing is written. `hidden`:
    /// directories steps must not see (relative, `/`-separated).
    /// `scratch`: the run's directory for its copy of the checkout's index.
    pub fn user_checkout(
        main: &Git,
        hidden: Vec<String>,
        scratch: &Path,
    ) -> Result<SharedBase, RunnerError> {
        let mut base = Self::describe(main.dir().to_path_buf(), "HEAD", false, scratch)?;
        base.hidden = hidden;
        Ok(base)
    }

    /// Checks out `commit` of `main`'s repository at `path` (a linked worktree).
    pub fn create(
        main: &Git,
        path: PathBuf,
        commit: &str,
        scratch: &Path,
    ) -> Result<SharedBase, RunnerError> {
        main.add_worktree_unlocked_checkout(&path, commit, true)?;
        Self::describe(path, commit, true, scratch)
    }

    /// The checkout at `path` of `rev`: its directories, commit and tree, asked
    /// of one git process.
    fn describe(
        path: PathBuf,
        rev: &str,
        owned: bool,
        scratch: &Path,
    ) -> Result<SharedBase, RunnerError> {
        let at = Git::new(&path);
        let tree = format!("{rev}^{{tree}}");
        let args = [
            "rev-parse",
            "--absolute-git-dir",
            "--git-common-dir",
            rev,
            tree.as_str(),
        ];
        let answer = at.run(&args)?;
        let mut lines = answer.lines();
        let (Some(git_dir), Some(common), Some(commit), Some(tree)) =
            (lines.next(), lines.next(), lines.next(), lines.next())
        else {
            return Err(RunnerError::Git {
                args: args.join(" "),
                cwd: path.clone(),
                message: format!("unexpected answer {answer:?}"),
            });
        };
        let common = path.join(common);
        let index = PathBuf::from(git_dir).join("index");
        let copy = scratch.join(format!("sharedindex-{}", std::process::id()));
        let split = std::fs::copy(&index, &copy)
            .ok()
            .and_then(|_| crate::git::split_index::BaseIndex::read(&copy));
        if split.is_none() {
            let _ = std::fs::remove_file(&copy);
        }
        Ok(SharedBase {
            split,
            index,
            worktrees: common.join("worktrees"),
            commit: commit.to_string(),
            tree: tree.to_string(),
            path,
            owned,
            hidden: Vec::new(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes what the run made: its checkout (in the background).
    pub fn remove(&self, main: &Git) -> Result<(), RunnerError> {
        if self.owned {
            main.remove_worktree_in_background(&self.path)?;
        }
        Ok(())
    }
}

impl Drop for SharedBase {
    /// The run's copy of the checkout's index goes with the last step that
    /// could link it (each step's administrative directory holds its own link),
    /// however the run ends.
    fn drop(&mut self) {
        if let Some(b) = &self.split {
            let _ = std::fs::remove_file(b.file());
        }
    }
}

/// Where a repository's attributes may convert files on their way into it —
/// `filter=`, `text`/`eol`, `ident`, an encoding, `core.autocrlf` — which the
/// in-process staging does not apply (it writes blobs unfiltered). Found by
/// [`AttributeScan::new`] (while the run's gates run: three git processes) and
/// judged for the commit steps start from by [`AttributeScan::converting`].
/// Conservative: any such attribute set anywhere counts.
#[derive(Debug, Clone)]
pub struct AttributeScan {
    /// Converting configuration or `info/attributes`, when there is.
    found: Option<String>,
    /// The index's `.gitattributes` files.
    files: Vec<String>,
}

impl AttributeScan {
    pub fn new(main: &Git) -> Result<AttributeScan, RunnerError> {
        let (_, autocrlf, _) = main.output(&["config", "--get", "core.autocrlf"])?;
        let mut found = matches!(autocrlf.trim(), "true" | "input")
            .then(|| format!("core.autocrlf is {}", autocrlf.trim()));
        let common = main.run(&["rev-parse", "--git-common-dir"])?;
        let info = main.dir().join(common.trim()).join("info/attributes");
        if found.is_none()
            && let Ok(text) = std::fs::read_to_string(&info)
            && converts(&text)
        {
            found = Some(format!("{} converts files", info.display()));
        }
        // The index's list (no walk of the trees): `*` matches across directories.
        let listed = main.run(&["ls-files", "-z", "--", "*.gitattributes"])?;
        let files = listed
            .split('\0')
            .filter(|p| *p == ".gitattributes" || p.ends_with("/.gitattributes"))
            .map(str::to_string)
            .collect();
        Ok(AttributeScan { found, files })
    }

    /// Why `commit` should not run in copy-on-write workspaces; `None` when
    /// nothing converts.
    pub fn converting(&self, main: &Git, commit: &str) -> Result<Option<String>, RunnerError> {
        if let Some(f) = &self.found {
            return Ok(Some(f.clone()));
        }
        for path in &self.files {
            let (found, text, _) =
                main.output(&["cat-file", "blob", &format!("{commit}:{path}")])?;
            if found && converts(&text) {
                return Ok(Some(format!(
                    "{path} converts files on their way into the repository"
                )));
            }
        }
        Ok(None)
    }
}

/// Whether attribute lines set an attribute that converts files (not `-attr`
/// or `!attr`).
fn converts(text: &str) -> bool {
    const CONVERTING: [&str; 6] = [
        "filter",
        "text",
        "eol",
        "crlf",
        "ident",
        "working-tree-encoding",
    ];
    text.lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#'))
        .flat_map(|l| l.split_whitespace().skip(1))
        .filter(|a| !a.starts_with('-') && !a.starts_with('!'))
        .any(|a| CONVERTING.contains(&a.split('=').next().unwrap_or(a)))
}

/// Found while the run's gates run, for `runner.step_workspace` `auto` or
/// `overlay`: whether overlayfs mounts here (the process-wide probe of
/// `dandori_exec::overlay::available`, so the later call answers at once) and
/// the repository's [`AttributeScan`].
pub fn look_ahead(
    main: Git,
    scratch: PathBuf,
) -> std::thread::JoinHandle<Result<AttributeScan, RunnerError>> {
    std::thread::spawn(move || {
        if dandori_fs::create_dir_all(&scratch).is_ok() {
            let _ = dandori_exec::overlay::available(&scratch);
        }
        AttributeScan::new(&main)
    })
}

/// The fixed directories steps' overlays are mounted at: one per worker, as a
/// pool worktree is one per worker. A step takes the first free one and gives
/// it back when its workspace is dropped, so the path a step (and its agent)
/// works in is the same from step to step of a worker: the agent CLIs' state
/// kept per working directory (Claude Code's project and sessions), the
/// progress lines' paths and the trace's `worktree` are those of the pool's.
/// Each mount lives in a mount namespace of its own, so the directory on the
/// host stays empty.
#[derive(Debug, Clone)]
pub struct MountPoints {
    dir: PathBuf,
    taken: Arc<Mutex<Vec<bool>>>,
}

impl MountPoints {
    /// Mount points `<dir>/ovl-<pid>-w<n>`, made as they are first taken.
    pub fn new(dir: PathBuf) -> MountPoints {
        MountPoints {
            dir,
            taken: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The first free mount point, made when new.
    pub fn take(&self) -> Result<MountPoint, RunnerError> {
        let n = {
            let mut taken = self
                .taken
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = match taken.iter().position(|t| !t) {
                Some(n) => n,
                None => {
                    taken.push(false);
                    taken.len() - 1
                }
            };
            taken[n] = true;
            n
        };
        let point = MountPoint {
            path: self.path(n),
            n,
            taken: self.taken.clone(),
        };
        dandori_fs::create_dir_all(&point.path)?;
        Ok(point)
    }

    /// Removes the mount points no step holds (empty directories on the
    /// host): at the end of the steps' phase.
    pub fn remove_free(&self) {
        let taken = self
            .taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (n, t) in taken.iter().enumerate() {
            if !t {
                let _ = std::fs::remove_dir(self.path(n));
            }
        }
    }

    fn path(&self, n: usize) -> PathBuf {
        self.dir
            .join(format!("ovl-{}-w{}", std::process::id(), n + 1))
    }
}

/// A mount point taken from [`MountPoints`]: free again when dropped.
#[derive(Debug)]
pub struct MountPoint {
    path: PathBuf,
    n: usize,
    taken: Arc<Mutex<Vec<bool>>>,
}

impl MountPoint {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for MountPoint {
    fn drop(&mut self) {
        let mut taken = self
            .taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(t) = taken.get_mut(self.n) {
            *t = false;
        }
    }
}

/// One step's copy-on-write workspace (see the module documentation).
#[derive(Debug)]
pub struct OverlayWorkspace {
    base: Arc<SharedBase>,
    /// `<root>/{upper,work}`: the step's own layers.
    root: PathBuf,
    /// The worker's fixed directory the overlay is mounted at (the path the
    /// step's commands see). Given back after the mount ends (field order:
    /// dropped after [`Drop::drop`] of the workspace unmounted).
    at: MountPoint,
    /// Where the runner sees the merged directory.
    view: PathBuf,
    mount: Option<Overlay>,
    /// The step's `.git/worktrees/<name>`.
    admin: Option<PathBuf>,
    /// HEAD: the base the workspace was put at, or the last part committed.
    head: Option<String>,
    staged: Option<upper::Staged>,
    /// The last staging went through `git add -A` (an upper layer the runner
    /// could not read, an object it could not write).
    pub staged_by_git: bool,
    /// The last move to another commit went through `git checkout` (an index
    /// `git::index_file` does not carry, a git before 2.40, a submodule).
    pub moved_by_git: bool,
}

impl OverlayWorkspace {
    /// A workspace whose layers are at `root` (made by
    /// [`StepWorkspace::prepare`]) over `base`, mounted at `at`.
    pub fn new(base: Arc<SharedBase>, root: PathBuf, at: MountPoint) -> OverlayWorkspace {
        OverlayWorkspace {
            view: at.path().to_path_buf(),
            base,
            root,
            at,
            mount: None,
            admin: None,
            head: None,
            staged: None,
            staged_by_git: false,
            moved_by_git: false,
        }
    }

    /// The workspace's own directory (`upper`, `work` under it).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The worker's directory the overlay is mounted at: the path the step's
    /// commands see (the runner reaches it through [`StepWorkspace::path`]).
    pub fn mount_point(&self) -> &Path {
        self.at.path()
    }

    /// The shared checkout the overlay shows (its lower layer).
    pub fn lower(&self) -> &Path {
        &self.base.path
    }

    /// The step's upper directory: every file it wrote, whiteouts for removals.
    pub fn upper(&self) -> PathBuf {
        self.root.join("upper")
    }

    fn mount(&mut self) -> Result<(), RunnerError> {
        let mnt = self.at.path().to_path_buf();
        for d in ["upper", "work"] {
            dandori_fs::create_dir_all(self.root.join(d))?;
        }
        let name = self
            .root
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("overlay")
            .to_string();
        let admin = self.base.worktrees.join(&name);
        {
            let _turn = crate::git::worktree_lock();
            dandori_fs::create_dir_all(&admin)?;
            self.admin = Some(admin.clone());
            let write = |file: &str, text: String| -> Result<(), RunnerError> {
                let p = admin.join(file);
                std::fs::write(&p, text)
                    .map_err(|e| dandori_fs::FsError::new("writing", &p, e).into())
            };
            write("HEAD", format!("{}\n", self.base.commit))?;
            write("commondir", "../..\n".to_string())?;
            write("gitdir", format!("{}\n", mnt.join(".git").display()))?;
            let index = admin.join("index");
            if std::fs::hard_link(&self.base.index, &index).is_err() {
                std::fs::copy(&self.base.index, &index)
                    .map_err(|e| dandori_fs::FsError::new("copying the index", &index, e))?;
            }
        }
        for h in &self.base.hidden {
            let dir = self.root.join("upper").join(h);
            dandori_fs::create_dir_all(&dir)?;
            dandori_exec::overlay::make_opaque(&dir)
                .map_err(|e| dandori_fs::FsError::new("hiding the run directory", &dir, e))?;
        }
        let dotgit = self.root.join("upper/.git");
        std::fs::write(&dotgit, format!("gitdir: {}\n", admin.display()))
            .map_err(|e| dandori_fs::FsError::new("writing", &dotgit, e))?;
        let mount = Overlay::mount(
            &self.base.path,
            &self.root.join("upper"),
            &self.root.join("work"),
            &mnt,
        )
        .map_err(|e| RunnerError::Process {
            command: "mounting the step's copy-on-write workspace".to_string(),
            message: e.to_string(),
        })?;
        self.view = mount.view();
        self.mount = Some(mount);
        Ok(())
    }

    /// The handle of git in the workspace.
    fn git(&self, main: &Git) -> Git {
        Git::new(&self.view).pool_worktree().sharing_objects(main)
    }
}

impl StepWorkspace for OverlayWorkspace {
    fn path(&self) -> &Path {
        &self.view
    }

    fn mechanism(&self) -> Mechanism {
        Mechanism::Overlay
    }

    fn prepare(&mut self, main: &Git, rev: &str) -> Result<(), RunnerError> {
        if self.mount.is_none() {
            self.mount()?;
            self.head = Some(self.base.commit.clone());
        }
        if self.head.as_deref() == Some(rev) {
            return Ok(());
        }
        let git = self.git(main);
        let from = self
            .head
            .clone()
            .unwrap_or_else(|| self.base.commit.clone());
        match main.changed_paths(&from, rev) {
            Some(paths) => {
                // The first move from the shared checkout's commit writes a
                // split index: only what changed.
                let from_base = from == self.base.commit;
                let in_process = paths.is_empty()
                    || self.admin.as_ref().is_some_and(|admin| {
                        let split = self
                            .base
                            .split
                            .as_ref()
                            .filter(|_| from_base)
                            .map(|base| upper_index::SplitOver { base, admin });
                        upper_index::move_paths(
                            &git,
                            &self.view,
                            &admin.join("index"),
                            rev,
                            &paths,
                            split,
                        )
                        .is_some()
                    });
                self.moved_by_git = !in_process;
                if !in_process {
                    let spec: Vec<&str> = paths.iter().map(String::as_str).collect();
                    git.checkout_paths(rev, &spec)?;
                }
                git.set_head(rev)?;
            }
            None => git.move_worktree(rev)?,
        }
        self.head = Some(rev.to_string());
        self.staged = None;
        Ok(())
    }

    fn stage(&mut self, git: &Git) -> Result<(u64, Vec<String>, String), RunnerError> {
        self.staged = None;
        self.staged_by_git = false;
        // HEAD as git has it: the agent may have committed in the workspace.
        let head = match git.detached_head().or_else(|| self.head.clone()) {
            Some(h) => h,
            None => git.rev_parse("HEAD")?,
        };
        if let Some(head_tree) = git.tree_of(&head)
            && let Some(staged) = upper::stage(
                git,
                &self.upper(),
                &self.base.tree,
                &head_tree,
                &self.base.hidden,
            )
            && let Some(out) = git.tree_numstat(&head_tree, &staged.tree)
            && !out
                .1
                .iter()
                .any(|p| p.rsplit('/').next() == Some(".gitattributes"))
        {
            self.staged = Some(staged);
            return Ok(out);
        }
        // A changed `.gitattributes` may change how a file diffs: git's own
        // staging and diff in the workspace read it.
        self.staged_by_git = true;
        git.staged_numstat()
    }

    fn staged_tree(&self) -> Option<&str> {
        self.staged.as_ref().map(|s| s.tree.as_str())
    }

    fn committed(&mut self, commit: &str, head_moved: bool) {
        self.staged = None;
        if head_moved {
            self.head = Some(commit.to_string());
        }
    }

    fn was_reset(&mut self, rev: &str) {
        // The upper layer shows what the reset left; nothing else to forget.
        self.staged = None;
        self.head = Some(rev.to_string());
    }

    fn staged_objects(&self, git: &Git, files: &[&str]) -> Result<Vec<String>, RunnerError> {
        match &self.staged {
            Some(s) => {
                let mut oids: Vec<String> = files
                    .iter()
                    .filter_map(|f| s.blobs.get(*f).cloned())
                    .collect();
                oids.push(s.tree.clone());
                Ok(oids)
            }
            None => git.staged_objects(files),
        }
    }
}

impl Drop for OverlayWorkspace {
    fn drop(&mut self) {
        // The mount ends with its holder; then nothing names the step's files.
        self.mount = None;
        if let Some(admin) = self.admin.take() {
            let _turn = crate::git::worktree_lock();
            let _ = std::fs::remove_dir_all(admin);
        }
        crate::git::remove_in_background(self.root.clone());
    }
}
