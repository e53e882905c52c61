//! What a sandboxed command sees of the file system, the same for both
//! mechanisms: the system directories programs need, read-only (`/etc` without
//! its secret files); the worktree and the policy's paths; the toolchains of the
//! user's home, read-only; the directories of `PATH` and the program being run;
//! and, in place of the user's home, a fresh per-sandbox home (writable, empty
//! but for those toolchains, the agent's own state and a credential-free
//! `.npmrc`). Everything else (other projects, `/root`, `/home`, `/srv`, `/run`,
//! `/var`, the host's `/tmp`) is absent.

use std::path::{Path, PathBuf};

/// System directories, visible read-only where they exist.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Files and directories of `/etc` no command needs and every attacker wants.
const HIDDEN_SYSTEM: &[&str] = &[
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
    "/etc/sudoers",
    "/etc/sudoers.d",
    "/etc/ssl/private",
    "/etc/security/opasswd",
    "/etc/docker",
    "/etc/kubernetes",
    "/etc/rancher",
];

/// Toolchains installed in the home, visible read-only in the fresh home.
pub const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".nvm",
    ".pyenv",
    ".rbenv",
    ".volta",
    ".bun",
    ".deno",
    ".sdkman",
    ".asdf",
    ".local/bin",
    ".local/lib",
    ".local/share/uv",
    ".local/share/pnpm",
    ".local/share/mise",
    ".gem",
    ".dotnet",
    "go",
    "sdk",
    ".cache",
];

/// The secret files of the system directories (existing ones), including the
/// SSH host keys.
pub fn hidden_system() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = HIDDEN_SYSTEM.iter().map(PathBuf::from).collect();
    if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with("ssh_host_") && name.ends_with("_key") {
                out.push(e.path());
            }
        }
    }
    out
}

/// True when `p` lies in a system directory (already visible).
pub fn in_system(p: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| p.starts_with(d))
}

/// Directories too broad to show because a program lives in them.
fn too_broad(p: &Path, home: Option<&Path>) -> bool {
    p.parent().is_none()
        || p.components().count() <= 2
        || Some(p) == home
        || p == Path::new("/root")
        || p == Path::new("/home")
}

/// Where a tool directory's installation lives: a `bin` (or `.bin`) directory
/// shows its parent (a virtual environment, a `node_modules`, a prefix), unless
/// that parent is too broad (`/`, the home, `/root`); other directories show
/// themselves.
fn install_root(dir: &Path, home: Option<&Path>) -> PathBuf {
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if matches!(name.as_deref(), Some("bin" | ".bin"))
        && let Some(parent) = dir.parent()
        && !too_broad(parent, home)
    {
        return parent.to_path_buf();
    }
    dir.to_path_buf()
}

/// The installations of the `PATH` directories outside the system directories.
pub fn path_roots(path_var: Option<&str>, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(path) = path_var else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for dir in std::env::split_paths(path) {
        if !dir.is_absolute() || !dir.is_dir() || in_system(&dir) {
            continue;
        }
        let root = install_root(&dir, home);
        if !too_broad(&root, home) && !out.contains(&root) {
            out.push(root);
        }
    }
    out
}

/// Programs that run the file named by their first operand.
const SCRIPT_RUNNERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "python", "python3", "node", "perl", "ruby", "deno", "bun",
];

/// The directories of the program being run and, for an interpreter, of the
/// script it runs (`sh /opt/agents/run.sh`): what the command itself needs to
/// start. Never the prompt or other arguments.
pub fn program_roots(argv: &[String], home: Option<&Path>) -> Vec<PathBuf> {
    let mut files: Vec<&Path> = Vec::new();
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let program = Path::new(first);
    if program.is_absolute() {
        files.push(program);
    }
    let base = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if (SCRIPT_RUNNERS.contains(&base)
        || SCRIPT_RUNNERS.contains(&program.file_name().and_then(|n| n.to_str()).unwrap_or("")))
        && let Some(script) = argv[1..].iter().find(|a| !a.starts_with('-'))
    {
        let script = Path::new(script);
        if script.is_absolute() && script.is_file() {
            files.push(script);
        }
    }
    // The file a program path resolves to (a pipx or npm link into another
    // installation) and the interpreter its `#!` line names (a virtual
    // environment's python) are needed to start it too.
    let mut extra: Vec<PathBuf> = Vec::new();
    for f in &files {
        if let Ok(real) = std::fs::canonicalize(f) {
            if let Some(interp) = shebang_interpreter(&real) {
                extra.extend(std::fs::canonicalize(&interp).ok());
                extra.push(interp);
            }
            extra.push(real);
        }
    }
    let mut files: Vec<PathBuf> = files.iter().map(|p| p.to_path_buf()).collect();
    files.extend(extra);
    let mut out = Vec::new();
    for f in &files {
        let f = f.as_path();
        let Some(dir) = f.parent() else { continue };
        if in_system(dir) || !dir.is_dir() {
            continue;
        }
        let root = if too_broad(dir, home) {
            f.to_path_buf()
        } else {
            install_root(dir, home)
        };
        if !out.contains(&root) {
            out.push(root);
        }
    }
    out
}

/// The absolute interpreter of a script's `#!` line (`#!/usr/bin/env X` names
/// no file of its own: `None`).
fn shebang_interpreter(file: &Path) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let n = std::fs::File::open(file).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = line.split(|b| *b == b'\n').next()?;
    let text = String::from_utf8_lossy(line);
    let interp = PathBuf::from(text.split_whitespace().next()?);
    (interp.is_absolute() && !interp.ends_with("env")).then_some(interp)
}

/// The fresh home of one sandbox: a directory of dandori's shown in place of the
/// user's home. Holds a credential-free `.npmrc` (empty when the user has none)
/// so that npm and yarn 1 read a readable file.
#[derive(Debug)]
pub struct FreshHome {
    /// The user's home (where the fresh one is shown).
    pub real: PathBuf,
    dir: tempfile::TempDir,
}

impl FreshHome {
    pub fn create(real: &Path) -> Option<FreshHome> {
        if !real.is_absolute() {
            return None;
        }
        let dir = tempfile::Builder::new()
            .prefix("dandori-home-")
            .tempdir()
            .ok()?;
        let npmrc = std::fs::read_to_string(real.join(".npmrc"))
            .map(|t| super::without_credentials(&t))
            .unwrap_or_default();
        std::fs::write(dir.path().join(".npmrc"), npmrc).ok()?;
        Some(FreshHome {
            real: real.to_path_buf(),
            dir,
        })
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The toolchain directories of the real home that exist.
    pub fn toolchains(&self) -> Vec<PathBuf> {
        HOME_TOOLCHAINS
            .iter()
            .map(|rel| self.real.join(rel))
            .filter(|p| p.exists())
            .collect()
    }

    /// A file of the agent's state in the real home (`~/.claude.json`) is copied
    /// into the fresh home once (tools replace such files by renaming, which a
    /// bind mount refuses); the user's file is never written.
    pub fn adopt_file(&self, real_file: &Path) {
        let Ok(rel) = real_file.strip_prefix(&self.real) else {
            return;
        };
        let target = self.dir.path().join(rel);
        if target.exists() {
            return;
        }
        if let Some(parent) = target.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::copy(real_file, &target);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bin_directories_show_their_installation() {
        let home = Path::new("/home/u");
        assert_eq!(
            install_root(Path::new("/srv/x/venv/bin"), Some(home)),
            Path::new("/srv/x/venv")
        );
        assert_eq!(
            install_root(Path::new("/home/u/bin"), Some(home)),
            Path::new("/home/u/bin")
        );
        assert!(too_broad(Path::new("/srv"), Some(home)));
    }
}
