//! Copy-on-write directories: an overlayfs mount (a read-only lower directory
//! shared by many, a private upper directory that receives every change) made in
//! a mount namespace of its own, which a small holder process keeps alive.
//!
//! The mount is seen by the processes of that namespace only. The runner reaches
//! it through the holder's root, `/proc/<holder>/root/<target>` (its
//! [`Overlay::view`]): its own reads and writes go through that path, and every
//! command it starts with a working directory under a registered view enters the
//! holder's namespaces before it runs ([`enter`]), with the working directory and
//! the sandbox's paths ([`inner`]) given as the namespace sees them — so `git`,
//! the agent CLIs and `getcwd` see an ordinary directory at `<target>`.
//!
//! Unprivileged, the holder makes a user namespace (the caller's uid and gid
//! mapped to themselves) and a mount namespace in it; as root, a mount namespace
//! only. The mount uses `userxattr`, so whiteouts are `0:0` character devices and
//! opaque directories carry `user.overlay.opaque` in the upper directory, which
//! anyone can read. When the holder ends (the runner ended or dropped it), so does
//! the mount; the upper directory stays on disk.
//!
//! The one module of the workspace with `unsafe`: making and entering a namespace
//! happens between `fork` and `exec` (`CommandExt::pre_exec`), which has no safe
//! interface; the closures make only async-signal-safe system calls on memory
//! prepared before the fork.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};

use crate::ExecError;

/// Views of the live overlays: `(prefix, holder pid, in a user namespace)`, the
/// prefix being `/proc/<pid>/root`.
static VIEWS: Mutex<Vec<(PathBuf, u32, bool)>> = Mutex::new(Vec::new());

fn views() -> std::sync::MutexGuard<'static, Vec<(PathBuf, u32, bool)>> {
    VIEWS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A live overlay mount and the process holding its namespace.
#[derive(Debug)]
pub struct Overlay {
    holder: Child,
    prefix: PathBuf,
    target: PathBuf,
}

impl Overlay {
    /// Mounts `lower` (read-only) under `upper` (changes; `work` is overlayfs's
    /// scratch directory on the same file system) at `target`, in a new mount
    /// namespace. Every path must be absolute and free of `,` `:` and `\`
    /// (overlayfs's option syntax).
    pub fn mount(
        lower: &Path,
        upper: &Path,
        work: &Path,
        target: &Path,
    ) -> Result<Overlay, ExecError> {
        for p in [lower, upper, work, target] {
            let s = p.as_os_str().as_bytes();
            if !p.is_absolute() || s.iter().any(|b| matches!(b, b',' | b':' | b'\\' | 0)) {
                return Err(spawn_error(
                    target,
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("{} cannot be named in overlayfs options", p.display()),
                    ),
                ));
            }
        }
        let options = format!(
            "lowerdir={},upperdir={},workdir={},userxattr",
            lower.display(),
            upper.display(),
            work.display()
        );
        let c = |s: &[u8]| CString::new(s).map_err(|e| spawn_error(target, e.into()));
        let options = c(options.as_bytes())?;
        let target_c = c(target.as_os_str().as_bytes())?;
        let userns = !crate::sandbox::running_as_root();
        // SAFETY: getuid/getgid cannot fail.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let uid_map = c(format!("{uid} {uid} 1\n").as_bytes())?;
        let gid_map = c(format!("{gid} {gid} 1\n").as_bytes())?;
        let mut cmd = Command::new("/bin/cat");
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .current_dir("/")
            .process_group(0);
        // SAFETY: only async-signal-safe system calls on memory prepared before
        // the fork.
        unsafe {
            cmd.pre_exec(move || {
                let flags = if userns {
                    libc::CLONE_NEWUSER | libc::CLONE_NEWNS
                } else {
                    libc::CLONE_NEWNS
                };
                check(libc::unshare(flags))?;
                if userns {
                    write_proc(c"/proc/self/setgroups", c"deny")?;
                    write_proc(c"/proc/self/uid_map", &uid_map)?;
                    write_proc(c"/proc/self/gid_map", &gid_map)?;
                }
                // Nothing mounted here propagates back to the host.
                check(libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ))?;
                check(libc::mount(
                    c"overlay".as_ptr(),
                    target_c.as_ptr(),
                    c"overlay".as_ptr(),
                    0,
                    options.as_ptr().cast(),
                ))?;
                Ok(())
            });
        }
        let holder = cmd.spawn().map_err(|e| spawn_error(target, e))?;
        let prefix = PathBuf::from(format!("/proc/{}/root", holder.id()));
        views().push((prefix.clone(), holder.id(), userns));
        Ok(Overlay {
            holder,
            prefix,
            target: target.to_path_buf(),
        })
    }

    /// Where the runner reads and writes the merged directory: `target` through
    /// the holder's root.
    pub fn view(&self) -> PathBuf {
        join_inner(&self.prefix, &self.target)
    }

    pub fn target(&self) -> &Path {
        &self.target
    }

    pub fn holder_pid(&self) -> u32 {
        self.holder.id()
    }
}

impl Drop for Overlay {
    fn drop(&mut self) {
        let pid = self.holder.id();
        views().retain(|(_, p, _)| *p != pid);
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// `prefix` + the absolute `inner` path.
fn join_inner(prefix: &Path, inner: &Path) -> PathBuf {
    prefix.join(inner.strip_prefix("/").unwrap_or(inner))
}

fn spawn_error(target: &Path, source: std::io::Error) -> ExecError {
    ExecError::Spawn {
        command: "mounting a copy-on-write step workspace (overlayfs)".to_string(),
        cwd: target.to_path_buf(),
        source,
    }
}

fn check(r: libc::c_int) -> std::io::Result<()> {
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes `data` to `path` with raw system calls (after a fork).
fn write_proc(path: &std::ffi::CStr, data: &std::ffi::CStr) -> std::io::Result<()> {
    // SAFETY: valid C strings; the descriptor is closed on every path.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let bytes = data.to_bytes();
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        let err = std::io::Error::last_os_error();
        libc::close(fd);
        if n != bytes.len() as isize {
            return Err(err);
        }
    }
    Ok(())
}

/// `path` as the namespace of the overlay it lies in sees it (the view's
/// prefix removed); `path` itself when it is in no overlay's view.
pub fn inner(path: &Path) -> PathBuf {
    if !path.starts_with("/proc") {
        return path.to_path_buf();
    }
    for (prefix, _, _) in views().iter() {
        if let Ok(rest) = path.strip_prefix(prefix) {
            return Path::new("/").join(rest);
        }
    }
    path.to_path_buf()
}

/// Makes `cmd`, about to run in `cwd`, run in the namespaces of the overlay
/// whose view holds `cwd` (working directory as the namespace sees it); nothing
/// when `cwd` is in no overlay's view.
pub fn enter(cmd: &mut Command, cwd: &Path) {
    if !cwd.starts_with("/proc") {
        return;
    }
    let found = views().iter().find_map(|(prefix, pid, userns)| {
        let rest = cwd.strip_prefix(prefix).ok()?;
        Some((*pid, *userns, Path::new("/").join(rest)))
    });
    let Some((pid, userns, dir)) = found else {
        return;
    };
    let open = |ns: &str| File::open(format!("/proc/{pid}/ns/{ns}")).ok();
    let user = if userns { open("user") } else { None };
    let (Some(mnt), Ok(dir)) = (open("mnt"), CString::new(dir.as_os_str().as_bytes())) else {
        return;
    };
    if userns && user.is_none() {
        return;
    }
    let held = Arc::new((user, mnt, dir));
    // SAFETY: setns and chdir only, on descriptors and a string made before the fork.
    unsafe {
        cmd.pre_exec(move || {
            use std::os::fd::AsRawFd;
            let (user, mnt, dir) = &*held;
            if let Some(u) = user {
                check(libc::setns(u.as_raw_fd(), libc::CLONE_NEWUSER))?;
            }
            check(libc::setns(mnt.as_raw_fd(), libc::CLONE_NEWNS))?;
            // Entering a mount namespace moves the working directory to its root.
            check(libc::chdir(dir.as_ptr()))?;
            Ok(())
        });
    }
}

/// Whether `dir`, a directory of an upper layer, is opaque (its lower
/// content hidden: `user.overlay.opaque` is `y`).
pub fn is_opaque(dir: &Path) -> bool {
    let Ok(path) = CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    let mut buf = [0u8; 4];
    // SAFETY: valid C strings and a buffer of the size given.
    let n = unsafe {
        libc::lgetxattr(
            path.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    n == 1 && buf[0] == b'y'
}

/// Makes `dir`, a directory of an upper layer, opaque: the lower directory's
/// content is not shown under it.
pub fn make_opaque(dir: &Path) -> std::io::Result<()> {
    let path = CString::new(dir.as_os_str().as_bytes())?;
    // SAFETY: valid C strings and a value of the length given.
    let r = unsafe {
        libc::lsetxattr(
            path.as_ptr(),
            c"user.overlay.opaque".as_ptr(),
            b"y".as_ptr().cast(),
            1,
            0,
        )
    };
    check(r)
}

/// Removes a workspace directory left by overlayfs (its `work/work` scratch
/// directory has mode 0, which a non-root owner must open up first).
pub fn remove_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let scratch = dir.join("work/work");
    if scratch.exists() {
        let _ = std::fs::set_permissions(&scratch, std::fs::Permissions::from_mode(0o700));
    }
    match std::fs::remove_dir_all(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether an overlay can be mounted here (tried once per process, with
/// directories under `scratch`).
pub fn available(scratch: &Path) -> Result<(), String> {
    static ANSWER: OnceLock<Result<(), String>> = OnceLock::new();
    ANSWER
        .get_or_init(|| {
            let dir = scratch.join(format!(".overlay-probe-{}", std::process::id()));
            let names = ["lower", "upper", "work", "merged"];
            for n in names {
                std::fs::create_dir_all(dir.join(n)).map_err(|e| e.to_string())?;
            }
            let probe = (|| {
                std::fs::write(dir.join("lower/f"), b"x").map_err(|e| e.to_string())?;
                let o = Overlay::mount(
                    &dir.join("lower"),
                    &dir.join("upper"),
                    &dir.join("work"),
                    &dir.join("merged"),
                )
                .map_err(|e| e.to_string())?;
                // The mount is made between the fork and the exec: once the
                // holder's namespace shows the lower file, it is there.
                let seen = (0..200).any(|_| {
                    if o.view().join("f").exists() {
                        return true;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    false
                });
                if seen {
                    Ok(())
                } else {
                    Err("the overlay mount did not appear".to_string())
                }
            })();
            let _ = remove_dir(&dir);
            probe
        })
        .clone()
}
