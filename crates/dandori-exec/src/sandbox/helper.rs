//! The built-in sandbox: `dandori __sandbox-exec [OPTIONS] -- COMMAND…`.
//!
//! The process restricts itself, then `exec`s the command (which inherits every
//! restriction, and cannot lift any):
//!
//! 1. new mount and network namespaces (a user namespace first when not root);
//!    the mount namespace remounts the `--read-only` paths read-only, the network
//!    namespace has no interface but a down loopback. Where the kernel refuses
//!    namespaces, Landlock alone carries the policy.
//! 2. a Landlock ruleset: read and execute everywhere except the `--hide` paths,
//!    write only beneath `--write` directories and `--tmp`, no TCP bind/connect
//!    without `--net`, no signals or abstract sockets outside the sandbox.
//!    Landlock grants rights on whole subtrees, so a hidden path is carved out by
//!    granting its siblings instead of its parent (the parent stays listable).
//!
//! The options are an internal contract between [`super::Sandbox::wrap`] and this
//! module; the user never types them.

use std::convert::Infallible;
use std::path::{Path, PathBuf};

/// What to apply before running `argv`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Request {
    pub writable: Vec<PathBuf>,
    pub read_only: Vec<PathBuf>,
    pub hidden: Vec<PathBuf>,
    pub network: bool,
    pub tmp: Option<PathBuf>,
    /// `NAME=VALUE`: set for the command unless its environment already names
    /// `NAME` (in any case): the credential-free copies of hidden user
    /// configurations (`npm_config_userconfig`).
    pub env_defaults: Vec<String>,
    pub cwd: PathBuf,
    pub argv: Vec<String>,
}

impl Request {
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        let s = |p: &Path| p.to_string_lossy().into_owned();
        for p in &self.writable {
            out.extend(["--write".to_string(), s(p)]);
        }
        for p in &self.read_only {
            out.extend(["--read-only".to_string(), s(p)]);
        }
        for p in &self.hidden {
            out.extend(["--hide".to_string(), s(p)]);
        }
        if let Some(t) = &self.tmp {
            out.extend(["--tmp".to_string(), s(t)]);
        }
        for kv in &self.env_defaults {
            out.extend(["--env-default".to_string(), kv.clone()]);
        }
        if self.network {
            out.push("--net".to_string());
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
                "--write" => req.writable.push(value(a)?),
                "--read-only" => req.read_only.push(value(a)?),
                "--hide" => req.hidden.push(value(a)?),
                "--tmp" => req.tmp = Some(value(a)?),
                "--cwd" => req.cwd = value(a)?,
                "--env-default" => {
                    let kv = it.next().ok_or("--env-default needs a value")?;
                    if !kv.contains('=') {
                        return Err(format!("--env-default `{kv}`: expected NAME=VALUE"));
                    }
                    req.env_defaults.push(kv.clone());
                }
                "--net" => req.network = true,
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

/// The body of `dandori __sandbox-exec`: returns only on failure (the command
/// replaced this process otherwise).
pub fn main(args: &[String]) -> String {
    let req = match Request::from_args(args) {
        Ok(r) => r,
        Err(e) => return format!("dandori sandbox: {e}"),
    };
    match run(&req) {
        Ok(never) => match never {},
        Err(e) => format!("dandori sandbox: {e}"),
    }
}

#[cfg(not(target_os = "linux"))]
fn run(_req: &Request) -> Result<Infallible, String> {
    Err("the built-in sandbox needs Linux".to_string())
}

#[cfg(target_os = "linux")]
fn run(req: &Request) -> Result<Infallible, String> {
    use std::os::unix::process::CommandExt;

    let canon = |ps: &[PathBuf]| -> Vec<PathBuf> {
        ps.iter()
            .filter_map(|p| std::fs::canonicalize(p).ok())
            .collect()
    };
    let read_only = canon(&req.read_only);
    let hidden = canon(&req.hidden);
    let mut writable = canon(&req.writable);
    if let Some(t) = &req.tmp {
        writable.extend(canon(std::slice::from_ref(t)));
    }
    let ns = linux::enter_namespaces(!req.network);
    // Read-only carve-outs: a read-only bind mount when we own a mount namespace,
    // else the Landlock carve-out (the writable parent loses the right to create
    // entries at its top level).
    let mut unmounted_ro = Vec::new();
    for p in &read_only {
        if !(ns.mount && linux::remount_read_only(p)) {
            unmounted_ro.push(p.clone());
        }
    }
    let mut no_write = unmounted_ro;
    no_write.extend(hidden.iter().cloned());
    linux::landlock(&writable, &no_write, &hidden, !req.network && !ns.net)?;

    let Some((program, args)) = req.argv.split_first() else {
        return Err("no command".to_string());
    };
    let mut cmd = std::process::Command::new(program);
    cmd.args(args).current_dir(&req.cwd);
    if let Some(t) = &req.tmp {
        for var in ["TMPDIR", "TMP", "TEMP"] {
            cmd.env(var, t);
        }
    }
    for kv in &req.env_defaults {
        if let Some((name, value)) = kv.split_once('=')
            && !std::env::vars_os().any(|(k, _)| k.eq_ignore_ascii_case(name))
        {
            cmd.env(name, value);
        }
    }
    let err = cmd.exec();
    Err(format!("running `{program}`: {err}"))
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
    use std::path::{Path, PathBuf};

    use landlock::{
        ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
        RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
    };
    use nix::mount::{MsFlags, mount};
    use nix::sched::{CloneFlags, unshare};
    use nix::unistd::{getgid, getuid};

    use super::carve;

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

    pub struct Namespaces {
        pub mount: bool,
        pub net: bool,
    }

    /// New mount (+ network) namespaces; a user namespace first when not root.
    pub fn enter_namespaces(no_network: bool) -> Namespaces {
        let mut flags = CloneFlags::CLONE_NEWNS;
        if no_network {
            flags |= CloneFlags::CLONE_NEWNET;
        }
        let (uid, gid) = (getuid(), getgid());
        let entered = if uid.is_root() {
            unshare(flags).is_ok()
        } else {
            unshare(flags | CloneFlags::CLONE_NEWUSER).is_ok()
                && std::fs::write("/proc/self/setgroups", "deny").is_ok()
                && std::fs::write("/proc/self/uid_map", format!("{uid} {uid} 1")).is_ok()
                && std::fs::write("/proc/self/gid_map", format!("{gid} {gid} 1")).is_ok()
        };
        if !entered {
            // Try the network namespace alone (it needs no mount privileges).
            let net = no_network && uid.is_root() && unshare(CloneFlags::CLONE_NEWNET).is_ok();
            return Namespaces { mount: false, net };
        }
        // Mounts made here must not propagate back to the host.
        let private = mount(
            None::<&str>,
            "/",
            None::<&str>,
            MsFlags::MS_REC | MsFlags::MS_PRIVATE,
            None::<&str>,
        )
        .is_ok();
        Namespaces {
            mount: private,
            net: no_network,
        }
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

    pub fn landlock(
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
        let (readable, split) = carve(&[PathBuf::from("/")], hidden);
        for p in &readable {
            created = add(created, p, read)?;
        }
        // Split ancestors stay listable (names only; the hidden files stay unreadable).
        for p in &split {
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
