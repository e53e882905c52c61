//! The built-in sandbox: `dandori __sandbox-exec [OPTIONS] -- COMMAND…`.
//!
//! Two stages, both this binary:
//!
//! 1. **outside** — new user, mount, PID, IPC, UTS and (without `--net`)
//!    network namespaces; the caller's uid is root of the new user namespace,
//!    so that stage 2 may build the view. Then it starts stage 2
//!    (`--inner`) and exits with its status.
//! 2. **inside** (PID 1 of the new PID namespace) — a fresh `/proc` (only the
//!    sandbox's processes are visible), the fresh home bound over the user's with
//!    the toolchains read-only inside, the `--read-only` paths remounted
//!    read-only, the loopback interface up; then Landlock (read only beneath the
//!    system directories and the shown paths, write only beneath `--write` and
//!    `--tmp`, no TCP without `--net` where no network namespace exists), an
//!    empty capability bounding set and no capabilities, `no_new_privs`, the
//!    system-call filter ([`super::seccomp`]); then it runs the command, reaps
//!    orphans, and exits with the command's status.
//!
//! Where the kernel refuses namespaces, stage 2's restrictions (Landlock,
//! capabilities, `no_new_privs`, seccomp) are applied in place and the command
//! replaces the helper.
//!
//! The options are an internal contract between [`super::Sandbox::wrap`] and this
//! module; the user never types them.

use std::path::{Path, PathBuf};

/// What to apply before running `argv`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub writable: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    /// Shown read-only (toolchains, `PATH` installations, the main repository).
    pub readable: Vec<PathBuf>,
    pub hidden: Vec<PathBuf>,
    pub network: bool,
    /// Keep the override of file modes (root's): the command may write its
    /// worktree whatever the modes of the files in it, like root outside.
    pub dac_override: bool,
    pub tmp: Option<PathBuf>,
    /// (the user's home, the fresh home shown in its place).
    pub home: Option<(PathBuf, PathBuf)>,
    pub cwd: PathBuf,
    pub argv: Vec<String>,
    /// Stage 2 (inside the namespaces).
    pub inner: bool,
}

impl Request {
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        if self.inner {
            out.push("--inner".to_string());
        }
        for p in &self.writable {
            out.extend(["--write".to_string(), s(p)]);
        }
        for p in &self.read_only {
            out.extend(["--read-only".to_string(), s(p)]);
        }
        for p in &self.readable {
            out.extend(["--read".to_string(), s(p)]);
        }
        for p in &self.hidden {
            out.extend(["--hide".to_string(), s(p)]);
        }
        if let Some(t) = &self.tmp {
            out.extend(["--tmp".to_string(), s(t)]);
        }
        if let Some((real, fresh)) = &self.home {
            out.extend(["--home".to_string(), s(real), s(fresh)]);
        }
        if self.network {
            out.push("--net".to_string());
        }
        if self.dac_override {
            out.push("--dac-override".to_string());
        }
        out.extend(["--cwd".to_string(), s(&self.cwd), "--".to_string()]);
        out.extend(self.argv.iter().cloned());
        out
    }

    pub fn from_args(args: &[String]) -> Result<Request, String> {
        let mut req = Request::default();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .map(PathBuf::from)
                    .ok_or_else(|| format!("{name} needs a value"))
            };
            match a.as_str() {
                "--inner" => req.inner = true,
                "--write" => req.writable.push(value(a)?),
                "--read-only" => req.read_only.push(value(a)?),
                "--read" => req.readable.push(value(a)?),
                "--hide" => req.hidden.push(value(a)?),
                "--tmp" => req.tmp = Some(value(a)?),
                "--cwd" => req.cwd = value(a)?,
                "--home" => {
                    let real = value(a)?;
                    let fresh = value(a)?;
                    req.home = Some((real, fresh));
                }
                "--net" => req.network = true,
                "--dac-override" => req.dac_override = true,
                "--" => {
                    req.argv = it.cloned().collect();
                    break;
                }
                other => return Err(format!("unknown option `{other}`")),
            }
        }
        if req.argv.is_empty() {
            return Err("no command after `--`".to_string());
        }
        if req.cwd.as_os_str().is_empty() {
            return Err("--cwd is required".to_string());
        }
        Ok(req)
    }
}

/// The body of `dandori __sandbox-exec`: the exit status to end with, or why
/// the sandbox could not be built.
pub fn main(args: &[String]) -> Result<u8, String> {
    let req = Request::from_args(args).map_err(|e| format!("dandori sandbox: {e}"))?;
    run(&req).map_err(|e| format!("dandori sandbox: {e}"))
}

#[cfg(not(target_os = "linux"))]
fn run(_req: &Request) -> Result<u8, String> {
    Err("the built-in sandbox needs Linux".to_string())
}

#[cfg(target_os = "linux")]
fn run(req: &Request) -> Result<u8, String> {
    if req.inner {
        return linux::inside(req);
    }
    match linux::enter_namespaces(!req.network) {
        linux::Entered::All => {
            // Stage 2 runs as PID 1 of the new PID namespace.
            let exe = std::env::current_exe().map_err(|e| format!("finding myself: {e}"))?;
            let mut inner = req.clone();
            inner.inner = true;
            let status = std::process::Command::new(exe)
                .arg(super::HELPER_SUBCOMMAND)
                .args(inner.to_args())
                .status()
                .map_err(|e| format!("starting the sandbox's init: {e}"))?;
            Ok(exit_code(status))
        }
        linux::Entered::NetOnly => {
            linux::restrict(req, false, false, &[], &[])?;
            match linux::exec(req)? {}
        }
        linux::Entered::None => {
            linux::restrict(req, false, !req.network, &[], &[])?;
            match linux::exec(req)? {}
        }
    }
}

#[cfg(target_os = "linux")]
fn exit_code(status: std::process::ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => c.clamp(0, 255) as u8,
        (None, Some(sig)) => (128 + sig).clamp(0, 255) as u8,
        (None, None) => 1,
    }
}

/// The paths to grant so that everything beneath `roots` is covered except the
/// `excluded` subtrees: a root that contains an excluded path is replaced by its
/// children (symbolic links skipped: their targets are covered on their own).
/// Returns (granted subtrees, ancestors that were split).
pub fn carve(roots: &[PathBuf], excluded: &[PathBuf]) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut granted = Vec::new();
    let mut split = Vec::new();
    for r in roots {
        carve_one(r, excluded, &mut granted, &mut split, 0);
    }
    (granted, split)
}

fn carve_one(
    dir: &Path,
    excluded: &[PathBuf],
    granted: &mut Vec<PathBuf>,
    split: &mut Vec<PathBuf>,
    depth: usize,
) {
    if excluded.iter().any(|e| e == dir) {
        return;
    }
    let contains_excluded = excluded.iter().any(|e| e.starts_with(dir));
    if !contains_excluded || depth > 64 {
        granted.push(dir.to_path_buf());
        return;
    }
    split.push(dir.to_path_buf());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let is_link = e.file_type().map(|t| t.is_symlink()).unwrap_or(true);
        if !is_link {
            carve_one(&p, excluded, granted, split, depth + 1);
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::convert::Infallible;
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use nix::unistd::{getgid, getuid};

    use super::{Request, carve};
    use crate::sandbox::{seccomp, view};

    /// The ABI whose rights are requested; older kernels get what they support.
    const ABI_WANTED: ABI = ABI::V6;
    /// Devices every program writes to.
    const WRITABLE_DEVICES: &[&str] = &[
        "/dev/null",
        "/dev/zero",
        "/dev/full",
        "/dev/tty",
        "/dev/ptmx",
        "/dev/pts",
        "/dev/shm",
    ];
    /// Read-only beyond the system directories and the shown paths (the
    /// devices of [`view::DEVICES`] aside: no host disk or loop device).
    const READABLE_PSEUDO: &[&str] = &["/proc", "/sys"];

    pub enum Entered {
        /// User (or, for root, none needed), mount, PID, IPC, UTS (+ network).
        All,
        /// Only a network namespace (root without mount namespaces).
        NetOnly,
        None,
    }

    /// New namespaces for stage 2. The caller's uid and gid become root of the
    /// new user namespace (stage 2 needs its capabilities there to build the
    /// view, then drops them before the command starts).
    pub fn enter_namespaces(no_network: bool) -> Entered {
        let mut flags = CloneFlags::CLONE_NEWNS
            | CloneFlags::CLONE_NEWPID
            | CloneFlags::CLONE_NEWIPC
            | CloneFlags::CLONE_NEWUTS;
        if no_network {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        let (uid, gid) = (getuid(), getgid());
        let user = unshare(flags | CloneFlags::CLONE_NEWUSER).is_ok()
            && std::fs::write("/proc/self/setgroups", "deny").is_ok()
            && std::fs::write("/proc/self/uid_map", format!("0 {uid} 1")).is_ok()
            && std::fs::write("/proc/self/gid_map", format!("0 {gid} 1")).is_ok();
        if user || (uid.is_root() && unshare(flags).is_ok()) {
            return Entered::All;
        }
        if no_network && uid.is_root() && unshare(CloneFlags::CLONE_NEWNET).is_ok() {
            return Entered::NetOnly;
        }
        Entered::None
    }

    /// Stage 2: builds the view, restricts itself, runs the command as its child
    /// and reaps every orphan until the command ends.
    pub fn inside(req: &Request) -> Result<u8, String> {
        let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
        mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .map_err(|e| format!("making the mounts private: {e}"))?;
        let pid1 = nix::unistd::getpid().as_raw() == 1;
        if pid1 {
            mount(
                Some("proc"),
                "/proc",
                Some("proc"),
                MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
                None::<&str>,
            )
            .map_err(|e| {
                format!("mounting a fresh /proc: {e} (a container that masks /proc refuses it; install bubblewrap or run with --sandbox off)")
            })?;
        }
        // Read-only paths made so by a mount (the rest are carved out of the
        // writable directories by Landlock).
        let mut remounted = Vec::new();
        let home_mounted = match &req.home {
            Some((real, fresh)) => {
                remounted.extend(mount_home(req, real, fresh)?);
                true
            }
            None => false,
        };
        for p in &req.read_only {
            let inside_home = req
                .home
                .as_ref()
                .is_some_and(|(real, _)| p.starts_with(real));
            if !inside_home
                && let Ok(c) = std::fs::canonicalize(p)
                && remount_read_only(&c)
            {
                remounted.push(c);
            }
        }
        // Hidden paths are mounted over (an empty read-only directory, or
        // /dev/null for a file), so that a hidden path inside a writable one
        // leaves the rest of it writable; Landlock carves out what cannot be.
        let mut covered = Vec::new();
        for p in &req.hidden {
            if let Ok(c) = std::fs::canonicalize(p)
                && cover(&c)
            {
                covered.push(c);
            }
        }
        if !req.network {
            loopback_up().map_err(|e| format!("bringing up the loopback interface: {e}"))?;
        }
        restrict(req, home_mounted, false, &remounted, &covered)?;
        let Some((program, args)) = req.argv.split_first() else {
            return Err("no command".to_string());
        };
        let mut cmd = std::process::Command::new(program);
        cmd.args(args).current_dir(&req.cwd);
        set_tmp(&mut cmd, req);
        let child = cmd
            .spawn()
            .map_err(|e| format!("running `{program}`: {e}"))?;
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        wait_reaping(pid)
    }

    /// The fresh home over the user's: the shown paths under the home are bound
    /// into it first (the toolchains read-only, the agent state writable), then
    /// the whole tree over the home.
    /// Returns the read-only paths it mounted (as seen once the home is mounted).
    fn mount_home(req: &Request, real: &Path, fresh: &Path) -> Result<Vec<PathBuf>, String> {
        let mut remounted = Vec::new();
        let shown = req
            .readable
            .iter()
            .map(|p| (p, false))
            .chain(req.read_only.iter().map(|p| (p, false)))
            .chain(req.writable.iter().map(|p| (p, true)));
        for (p, writable) in shown {
            let Ok(rel) = p.strip_prefix(real) else {
                continue;
            };
            if rel.as_os_str().is_empty() {
                continue;
            }
            let target = fresh.join(rel);
            let Ok(meta) = std::fs::metadata(p) else {
                continue;
            };
            if meta.is_dir() {
                let _ = std::fs::create_dir_all(&target);
            } else {
                if let Some(parent) = target.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                if !target.exists() {
                    let _ = std::fs::write(&target, "");
                }
            }
            mount(
                Some(p.as_path()),
                &target,
                None::<&str>,
                MsFlags::MS_BIND | MsFlags::MS_REC,
                None::<&str>,
            )
            .map_err(|e| format!("showing {} in the fresh home: {e}", p.display()))?;
            if !writable && remount_read_only(&target) {
                remounted.push(p.clone());
            }
        }
        mount(
            Some(fresh),
            real,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        )
        .map_err(|e| format!("mounting the fresh home over {}: {e}", real.display()))?;
        Ok(remounted)
    }

    /// Mounts an empty read-only directory over the directory `p`, or
    /// `/dev/null` over the file `p`; false when the kernel refuses.
    fn cover(p: &Path) -> bool {
        let Ok(meta) = std::fs::symlink_metadata(p) else {
            return false;
        };
        let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        if meta.is_dir() {
            mount(
                Some("tmpfs"),
                p,
                Some("tmpfs"),
                flags | MsFlags::MS_RDONLY,
                Some("size=4k,mode=0555"),
            )
            .is_ok()
        } else {
            mount(
                Some("/dev/null"),
                p,
                None::<&str>,
                MsFlags::MS_BIND,
                None::<&str>,
            )
            .is_ok()
                && mount(
                    None::<&str>,
                    p,
                    None::<&str>,
                    MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | flags,
                    None::<&str>,
                )
                .is_ok()
        }
    }

    /// Landlock, no capabilities (root keeps the override of file modes when
    /// asked), `no_new_privs`, the system-call filter. `covered`: hidden paths
    /// already mounted over.
    pub fn restrict(
        req: &Request,
        home_mounted: bool,
        deny_tcp: bool,
        remounted: &[PathBuf],
        covered: &[PathBuf],
    ) -> Result<(), String> {
        let canon = |ps: &[PathBuf]| -> Vec<PathBuf> {
            ps.iter()
                .filter_map(|p| std::fs::canonicalize(p).ok())
                .collect()
        };
        // The system's secret files are among them (`layout`).
        let hidden: Vec<PathBuf> = canon(&req.hidden)
            .into_iter()
            .filter(|p| !covered.contains(p))
            .collect();
        let mut writable = canon(&req.writable);
        let mut readable: Vec<PathBuf> = view::SYSTEM_DIRS
            .iter()
            .chain(READABLE_PSEUDO)
            .chain(view::DEVICES)
            .map(PathBuf::from)
            .collect();
        if let Ok(t) = std::fs::canonicalize("/etc/resolv.conf") {
            readable.push(t);
        }
        readable.extend(canon(&req.readable));
        readable.extend(canon(&req.read_only));
        if let Some(t) = &req.tmp {
            writable.extend(canon(std::slice::from_ref(t)));
        }
        match &req.home {
            Some((real, _)) if home_mounted => writable.push(real.clone()),
            Some((_, fresh)) => readable.push(fresh.clone()),
            None => {}
        }
        readable.extend(writable.iter().cloned());
        let mut no_write: Vec<PathBuf> = canon(&req.read_only)
            .into_iter()
            .filter(|p| !remounted.contains(p))
            .collect();
        no_write.extend(hidden.iter().cloned());
        landlock(&readable, &writable, &no_write, &hidden, deny_tcp)?;
        drop_privileges(req.dac_override)
    }

    /// Empties every capability set but, with `keep_dac`, `CAP_DAC_OVERRIDE`
    /// (root's override of file modes, which root's own commands rely on).
    fn drop_privileges(keep_dac: bool) -> Result<(), String> {
        use caps::{CapSet, Capability};
        let err = |what: &str, e: caps::errors::CapsError| format!("dropping {what}: {e}");
        let keep = |c: &Capability| keep_dac && *c == Capability::CAP_DAC_OVERRIDE;
        caps::clear(None, CapSet::Ambient).map_err(|e| err("ambient capabilities", e))?;
        // Without CAP_SETPCAP (an unprivileged caller without a user namespace)
        // the bounding set cannot shrink; there is nothing in it to use then.
        if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).unwrap_or(false) {
            for c in caps::all() {
                if !keep(&c) {
                    caps::drop(None, CapSet::Bounding, c)
                        .map_err(|e| err("the bounding set", e))?;
                }
            }
        }
        caps::clear(None, CapSet::Inheritable).map_err(|e| err("inheritable capabilities", e))?;
        nix::sys::prctl::set_no_new_privs().map_err(|e| format!("no_new_privs: {e}"))?;
        seccomp::apply()?;
        for set in [CapSet::Effective, CapSet::Permitted] {
            for c in caps::all() {
                if !keep(&c) {
                    caps::drop(None, set, c).map_err(|e| err("capabilities", e))?;
                }
            }
        }
        Ok(())
    }

    fn set_tmp(cmd: &mut std::process::Command, req: &Request) {
        if let Some(t) = &req.tmp {
            for var in ["TMPDIR", "TMP", "TEMP"] {
                cmd.env(var, t);
            }
        }
    }

    /// Without namespaces: the command replaces the helper. The fresh home is
    /// not mounted; npm and yarn read its credential-free `.npmrc` by variable.
    pub fn exec(req: &Request) -> Result<Infallible, String> {
        use std::os::unix::process::CommandExt;
        let Some((program, args)) = req.argv.split_first() else {
            return Err("no command".to_string());
        };
        let mut cmd = std::process::Command::new(program);
        cmd.args(args).current_dir(&req.cwd);
        set_tmp(&mut cmd, req);
        if let Some((_, fresh)) = &req.home
            && !std::env::vars_os().any(|(k, _)| k.eq_ignore_ascii_case("npm_config_userconfig"))
        {
            cmd.env("npm_config_userconfig", fresh.join(".npmrc"));
        }
        let err = cmd.exec();
        Err(format!("running `{program}`: {err}"))
    }

    /// Waits for `child`, reaping every other process that ends meanwhile (PID 1
    /// inherits orphans); the command's exit status, or 128 + its signal.
    fn wait_reaping(child: nix::unistd::Pid) -> Result<u8, String> {
        use nix::sys::wait::{WaitStatus, waitpid};
        loop {
            match waitpid(None, None) {
                Ok(WaitStatus::Exited(pid, code)) if pid == child => {
                    return Ok(code.clamp(0, 255) as u8);
                }
                Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                    return Ok((128 + sig as i32).clamp(0, 255) as u8);
                }
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => {}
                Err(e) => return Err(format!("waiting for the command: {e}")),
            }
        }
    }

    /// Brings up `lo` in the new network namespace (an `RTM_NEWLINK` request
    /// with `IFF_UP` for interface 1, the loopback of every new namespace), so
    /// that tests may serve and connect on 127.0.0.1.
    fn loopback_up() -> Result<(), String> {
        use nix::sys::socket::{
            AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol, SockType, recv, sendto,
            socket,
        };
        use std::os::fd::AsRawFd;
        const RTM_NEWLINK: u16 = 16;
        const NLM_F_REQUEST: u16 = 1;
        const NLM_F_ACK: u16 = 4;
        const IFF_UP: u32 = 1;
        let fd = socket(
            AddressFamily::Netlink,
            SockType::Raw,
            SockFlag::SOCK_CLOEXEC,
            SockProtocol::NetlinkRoute,
        )
        .map_err(|e| e.to_string())?;
        let mut msg = Vec::with_capacity(32);
        msg.extend_from_slice(&32u32.to_ne_bytes()); // nlmsg_len
        msg.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
        msg.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
        msg.extend_from_slice(&1u32.to_ne_bytes()); // seq
        msg.extend_from_slice(&0u32.to_ne_bytes()); // pid
        msg.push(0); // ifi_family AF_UNSPEC
        msg.push(0);
        msg.extend_from_slice(&0u16.to_ne_bytes()); // ifi_type
        msg.extend_from_slice(&1i32.to_ne_bytes()); // ifi_index
        msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_flags
        msg.extend_from_slice(&IFF_UP.to_ne_bytes()); // ifi_change
        sendto(
            fd.as_raw_fd(),
            &msg,
            &NetlinkAddr::new(0, 0),
            MsgFlags::empty(),
        )
        .map_err(|e| e.to_string())?;
        let mut buf = [0u8; 256];
        let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty()).map_err(|e| e.to_string())?;
        // An NLMSG_ERROR (type 2) whose error field (after the 16-byte header) is 0.
        if n >= 20 && u16::from_ne_bytes([buf[4], buf[5]]) == 2 {
            let errno = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
            if errno != 0 {
                return Err(std::io::Error::from_raw_os_error(-errno).to_string());
            }
        }
        Ok(())
    }

    /// Bind-mounts `p` on itself read-only; false when the kernel refuses.
    pub fn remount_read_only(p: &Path) -> bool {
        let bind = mount(
            Some(p),
            p,
            None::<&str>,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None::<&str>,
        );
        if bind.is_err() {
            return false;
        }
        let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY;
        mount(None::<&str>, p, None::<&str>, flags, None::<&str>).is_ok()
            // In a user namespace the locked flags of the original mount must be kept.
            || mount(
                None::<&str>,
                p,
                None::<&str>,
                flags | MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
                None::<&str>,
            )
            .is_ok()
    }

    /// Read (and execute) only beneath `readable`, write only beneath
    /// `writable` (minus `no_write`), nothing of `hidden`; no TCP when `deny_tcp`
    /// and the kernel supports it (the network namespace already has no route
    /// out; this keeps the rule where no namespace could be made).
    fn landlock(
        readable: &[PathBuf],
        writable: &[PathBuf],
        no_write: &[PathBuf],
        hidden: &[PathBuf],
        deny_tcp: bool,
    ) -> Result<(), String> {
        let err = |e: landlock::RulesetError| format!("Landlock: {e}");
        let mut ruleset = Ruleset::default()
            .set_compatibility(CompatLevel::BestEffort)
            .handle_access(AccessFs::from_all(ABI_WANTED))
            .map_err(err)?
            .scope(Scope::from_all(ABI_WANTED))
            .map_err(err)?;
        if deny_tcp {
            ruleset = ruleset
                .handle_access(AccessNet::from_all(ABI::V4))
                .map_err(err)?;
        }
        let mut created = ruleset.create().map_err(err)?;
        let read = AccessFs::from_read(ABI_WANTED);
        let all = AccessFs::from_all(ABI_WANTED);
        let (granted, split) = carve(readable, hidden);
        for p in &granted {
            created = add(created, p, read)?;
        }
        // Split ancestors stay listable (names only; the hidden files stay
        // unreadable), and so does /dev (its names; only the usual devices open).
        for p in split.iter().chain(std::iter::once(&PathBuf::from("/dev"))) {
            created = add(created, p, AccessFs::ReadDir.into())?;
        }
        let mut roots: Vec<PathBuf> = writable.to_vec();
        roots.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
        let (writable, _) = carve(&roots, no_write);
        for p in &writable {
            created = add(created, p, all)?;
        }
        let status = created.restrict_self().map_err(err)?;
        if status.ruleset == RulesetStatus::NotEnforced {
            return Err(
                "Landlock is not available in this kernel (no filesystem confinement)".to_string(),
            );
        }
        if deny_tcp && ABI::from(status.landlock) < ABI::V4 {
            return Err(
                "no network namespace and Landlock older than ABI 4: the network cannot be denied"
                    .to_string(),
            );
        }
        Ok(())
    }

    fn add(
        created: landlock::RulesetCreated,
        p: &Path,
        access: landlock::BitFlags<AccessFs>,
    ) -> Result<landlock::RulesetCreated, String> {
        let Ok(fd) = PathFd::new(p) else {
            // Vanished or unopenable (e.g. a socket): nothing to grant.
            return Ok(created);
        };
        let access = if p.is_dir() {
            access
        } else {
            access & AccessFs::from_file(ABI_WANTED)
        };
        if access.is_empty() {
            return Ok(created);
        }
        created
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| format!("Landlock rule for {}: {e}", p.display()))
    }
}
