//! Which paths of a pool worktree changed, as the kernel saw it (Linux inotify), so
//! that a step's staging and the worktree's move to the next base cost what the
//! step touched instead of a walk over the whole repository.
//!
//! A [`Tracker`] watches every directory of the worktree (added once, when the
//! worktree is created) and records each path created, written, deleted, moved or
//! whose attributes changed, whoever did it (the agent, a unit command, git itself;
//! the sandbox binds the same directories, so its writes are seen too). Directories
//! that appear are watched at once and walked, so files created in them before the
//! watch existed are recorded as well. Events are queued by the kernel when the
//! write happens, so after a child process has exited every change it made is in
//! the queue: [`Tracker::take`] reads it to the end.
//!
//! The set is an over-approximation (a path written back to its old content is
//! still listed); git decides what really changed. Whenever the tracker cannot
//! vouch for the set — the kernel's queue overflowed, a directory could not be
//! watched, inotify is unavailable — it says so (`None`) and the caller falls
//! back to git's own scan of the whole worktree. Not seen: writes through a
//! shared memory mapping and through a hard link from outside the worktree.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Paths (relative to the worktree root) changed since the last [`Tracker::take`].
pub type Touched = BTreeSet<PathBuf>;

#[cfg(any(target_os = "linux", target_os = "android"))]
mod imp {
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};

    use nix::errno::Errno;
    use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

    use super::Touched;

    #[derive(Debug)]
    pub struct Tracker {
        fd: Inotify,
        root: PathBuf,
        /// Each watched directory, relative to `root` (`""` is the root).
        dirs: HashMap<WatchDescriptor, PathBuf>,
        touched: Touched,
        /// The set is no longer complete (queue overflow, a failed watch).
        lost: bool,
    }

    fn mask() -> AddWatchFlags {
        AddWatchFlags::IN_CREATE
            | AddWatchFlags::IN_DELETE
            | AddWatchFlags::IN_MODIFY
            | AddWatchFlags::IN_ATTRIB
            | AddWatchFlags::IN_MOVED_FROM
            | AddWatchFlags::IN_MOVED_TO
            | AddWatchFlags::IN_DELETE_SELF
            | AddWatchFlags::IN_MOVE_SELF
            | AddWatchFlags::IN_ONLYDIR
            | AddWatchFlags::IN_DONT_FOLLOW
    }

    impl Tracker {
        pub fn start(root: &Path) -> Option<Tracker> {
            let fd = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).ok()?;
            let mut t = Tracker {
                fd,
                root: root.to_path_buf(),
                dirs: HashMap::new(),
                touched: Touched::new(),
                lost: false,
            };
            t.watch_tree(Path::new(""), false);
            (!t.lost).then_some(t)
        }

        /// Watches `rel` and every directory below it (never through a symbolic
        /// link, never the worktree's `.git`); with `record`, every path found is
        /// recorded as touched (it appeared while nobody watched).
        fn watch_tree(&mut self, rel: &Path, record: bool) {
            let mut stack = vec![rel.to_path_buf()];
            while let Some(dir) = stack.pop() {
                let abs = self.root.join(&dir);
                match self.fd.add_watch(&abs, mask()) {
                    Ok(wd) => {
                        self.dirs.insert(wd, dir.clone());
                    }
                    // Gone again already: its removal is an event of the parent.
                    Err(Errno::ENOENT) | Err(Errno::ENOTDIR) => continue,
                    Err(_) => {
                        self.lost = true;
                        return;
                    }
                }
                let Ok(entries) = std::fs::read_dir(&abs) else {
                    continue;
                };
                for e in entries.flatten() {
                    let name = e.file_name();
                    if dir.as_os_str().is_empty() && name == ".git" {
                        continue;
                    }
                    let path = dir.join(&name);
                    if record {
                        self.touched.insert(path.clone());
                    }
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        stack.push(path);
                    }
                }
            }
        }

        /// Reads every queued event.
        fn poll(&mut self) {
            loop {
                let events = match self.fd.read_events() {
                    Ok(ev) => ev,
                    Err(Errno::EAGAIN) => return,
                    Err(Errno::EINTR) => continue,
                    Err(_) => {
                        self.lost = true;
                        return;
                    }
                };
                if events.is_empty() {
                    return;
                }
                for ev in events {
                    if ev.mask.contains(AddWatchFlags::IN_Q_OVERFLOW) {
                        self.lost = true;
                        continue;
                    }
                    if ev.mask.contains(AddWatchFlags::IN_IGNORED) {
                        self.dirs.remove(&ev.wd);
                        continue;
                    }
                    let Some(dir) = self.dirs.get(&ev.wd).cloned() else {
                        continue;
                    };
                    let Some(name) = ev.name else {
                        // The directory itself was deleted or moved (its parent
                        // reports it by name too); the root going is the end.
                        if ev
                            .mask
                            .intersects(AddWatchFlags::IN_DELETE_SELF | AddWatchFlags::IN_MOVE_SELF)
                        {
                            if dir.as_os_str().is_empty() {
                                self.lost = true;
                            } else {
                                self.touched.insert(dir);
                            }
                        }
                        continue;
                    };
                    if dir.as_os_str().is_empty() && name == ".git" {
                        continue;
                    }
                    let path = dir.join(&name);
                    if ev.mask.contains(AddWatchFlags::IN_ISDIR)
                        && ev
                            .mask
                            .intersects(AddWatchFlags::IN_CREATE | AddWatchFlags::IN_MOVED_TO)
                    {
                        // A directory moved in keeps its watches (same inodes): the
                        // walk gives them their new names.
                        self.watch_tree(&path, true);
                    }
                    self.touched.insert(path);
                }
            }
        }

        pub fn take(&mut self) -> Option<Touched> {
            self.poll();
            if self.lost {
                return None;
            }
            Some(std::mem::take(&mut self.touched))
        }
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
mod imp {
    use std::path::Path;

    use super::Touched;

    /// No change notification on this platform: the caller always scans.
    #[derive(Debug)]
    pub struct Tracker;

    impl Tracker {
        pub fn start(_root: &Path) -> Option<Tracker> {
            None
        }

        pub fn take(&mut self) -> Option<Touched> {
            None
        }
    }
}

/// Records the changes under a worktree (see the module documentation).
#[derive(Debug)]
pub struct Tracker(imp::Tracker);

impl Tracker {
    /// Watches the worktree at `root`; `None` when it cannot (no inotify, too many
    /// watches): the caller then scans with git.
    pub fn start(root: &Path) -> Option<Tracker> {
        imp::Tracker::start(root).map(Tracker)
    }

    /// The paths changed since the last call (or since [`Tracker::start`]), and
    /// from now on the next set; `None` when the set is not known to be complete
    /// (and never again from this tracker).
    pub fn take(&mut self) -> Option<Touched> {
        self.0.take()
    }
}
