//! The sandbox of commands run by tools: bubblewrap (`bwrap`) where it works.
//!
//! Inside, the whole filesystem is read-only except the worktree, a private `/tmp`
//! and `/var/tmp`, and any extra writable directory the caller names; the worktree's
//! `.git` stays read-only (so no hook can be planted for the runner's commits); the
//! command gets its own PID namespace and dies with its parent. Where bwrap is missing
//! or cannot create namespaces (e.g. unprivileged user namespaces disabled), commands
//! run unsandboxed and [`SandboxStatus::fallback_reason`] says why, for the trace.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    Bubblewrap,
    None,
}

/// What the runner records in the trace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    pub kind: SandboxKind,
    /// Why commands are not sandboxed (`kind == None`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Use bubblewrap if it works here, else run unsandboxed and say why.
    #[default]
    Auto,
    /// Never sandbox (the caller decided; recorded as the fallback reason).
    Off,
}

#[derive(Debug, Clone)]
pub struct Sandbox {
    status: SandboxStatus,
    bwrap: Option<PathBuf>,
    /// Directories of `PATH` that the private `/tmp` would hide (tools installed
    /// under `/tmp` or `/var/tmp`): re-exposed read-only inside the sandbox.
    shown_tmp_dirs: Vec<PathBuf>,
}

const FALLBACK_NOTE: &str =
    "commands run unsandboxed (file tools stay confined to the worktree; Landlock is not used)";

impl Sandbox {
    /// Probes bubblewrap by running `true` inside it with the flags real commands get.
    /// `path_var` is the `PATH` to search (the command environment's), else the
    /// process's own.
    pub fn detect(mode: SandboxMode, path_var: Option<&str>) -> Sandbox {
        match mode {
            SandboxMode::Off => return Sandbox::unsandboxed("sandbox disabled by the caller"),
            SandboxMode::Auto => {}
        }
        if !cfg!(target_os = "linux") {
            return Sandbox::unsandboxed("bubblewrap sandboxing is available on Linux only");
        }
        let Some(bwrap) = find_on_path("bwrap", path_var) else {
            return Sandbox::unsandboxed(
                "bwrap (bubblewrap) not found on PATH; install it (apt-get install bubblewrap)",
            );
        };
        let probe_dir = std::env::temp_dir();
        let mut args = base_args(&probe_dir, &[]);
        args.push("--".to_string());
        args.push("true".to_string());
        let probe = Command::new(&bwrap)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output();
        let path = path_var
            .map(str::to_string)
            .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default());
        let path_dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
        match probe {
            Ok(out) if out.status.success() => Sandbox {
                status: SandboxStatus {
                    kind: SandboxKind::Bubblewrap,
                    fallback_reason: None,
                },
                bwrap: Some(bwrap),
                shown_tmp_dirs: tmp_roots(path_dirs.iter().map(PathBuf::as_path)),
            },
            Ok(out) => Sandbox::unsandboxed(&format!(
                "bwrap cannot create a sandbox here ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Sandbox::unsandboxed(&format!("running {}: {e}", bwrap.display())),
        }
    }

    fn unsandboxed(reason: &str) -> Sandbox {
        Sandbox {
            status: SandboxStatus {
                kind: SandboxKind::None,
                fallback_reason: Some(format!("{reason}; {FALLBACK_NOTE}")),
            },
            bwrap: None,
            shown_tmp_dirs: Vec::new(),
        }
    }

    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// The argv that runs `argv` in `cwd` inside the sandbox, with `worktree` and
    /// `extra_writable` writable. Unchanged when unsandboxed.
    pub fn wrap(
        &self,
        argv: Vec<String>,
        worktree: &Path,
        cwd: &Path,
        extra_writable: &[PathBuf],
    ) -> Vec<String> {
        let Some(bwrap) = &self.bwrap else {
            return argv;
        };
        let mut out = vec![bwrap.to_string_lossy().into_owned()];
        // The private /tmp hides whatever lives under the host's /tmp; keep the
        // program and the PATH tools visible (read-only) when they live there.
        let program = argv.first().map(Path::new).filter(|p| p.is_absolute());
        let mut shown = self.shown_tmp_dirs.clone();
        shown.extend(tmp_roots(program.into_iter()));
        shown.sort();
        shown.dedup();
        out.extend(base_args_showing(worktree, extra_writable, &shown));
        let git = worktree.join(".git");
        if git.exists() {
            let git = git.to_string_lossy().into_owned();
            out.extend(["--ro-bind".to_string(), git.clone(), git]);
        }
        out.extend([
            "--chdir".to_string(),
            cwd.to_string_lossy().into_owned(),
            "--setenv".to_string(),
            "TMPDIR".to_string(),
            "/tmp".to_string(),
            "--".to_string(),
        ]);
        out.extend(argv);
        out
    }
}

/// The top-level directories under `/tmp` or `/var/tmp` that hold these paths
/// (`/tmp/ci/tools/bin` → `/tmp/ci`), which exist on the host.
fn tmp_roots<'a>(paths: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for p in paths {
        for tmp in ["/tmp", "/var/tmp"] {
            if let Some(first) = p
                .strip_prefix(tmp)
                .ok()
                .and_then(|rest| rest.components().next())
            {
                let root = Path::new(tmp).join(first);
                if root.is_dir() && !roots.contains(&root) {
                    roots.push(root);
                }
            }
        }
    }
    roots
}

fn base_args(writable: &Path, extra_writable: &[PathBuf]) -> Vec<String> {
    base_args_showing(writable, extra_writable, &[])
}

fn base_args_showing(
    writable: &Path,
    extra_writable: &[PathBuf],
    shown_tmp_dirs: &[PathBuf],
) -> Vec<String> {
    let mut args: Vec<String> = [
        "--die-with-parent",
        "--new-session",
        "--unshare-pid",
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--tmpfs",
        "/tmp",
        "--tmpfs",
        "/var/tmp",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // After the private /tmp, before the writable binds (which may sit inside them).
    for dir in shown_tmp_dirs {
        let d = dir.to_string_lossy().into_owned();
        args.extend(["--ro-bind".to_string(), d.clone(), d]);
    }
    for dir in std::iter::once(writable).chain(extra_writable.iter().map(PathBuf::as_path)) {
        let d = dir.to_string_lossy().into_owned();
        args.extend(["--bind".to_string(), d.clone(), d]);
    }
    args
}

fn find_on_path(program: &str, path_var: Option<&str>) -> Option<PathBuf> {
    let path = match path_var {
        Some(p) => p.to_string(),
        None => std::env::var("PATH").ok()?,
    };
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
