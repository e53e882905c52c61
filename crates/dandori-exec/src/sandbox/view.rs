//! What a sandboxed command sees of the file system: one declarative view, the
//! same for both mechanisms and for every command, built from the tables below
//! and the caller's [`SandboxPolicy`]. Nothing is shown because a command names it
//! in its arguments: what a command may touch depends on who asked for it (the
//! policy), never on what it says.
//!
//! [`table_markdown`] renders the view as the table of docs/security.md (a test
//! checks the two agree); [`layout`] is the list each mechanism mounts, in order.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::SandboxPolicy;

/// System directories, visible read-only where they exist.
pub const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix",
];

/// Secret files of `/etc` hidden even where others may read them (besides
/// every entry of `/etc` that others may not read, found when first needed).
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

/// The device nodes of the sandbox's `/dev` (bubblewrap's `--dev`; the fallback
/// grants exactly these). No disk, loop or other host device.
pub const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Toolchains installed in the user's home, visible read-only in the fresh home.
pub const HOME_TOOLCHAINS: &[&str] = &[
    ".cargo",
    ".rustup",
    ".nvm",
    ".fnm",
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
    ".local/share/fnm",
    ".gem",
    ".dotnet",
    "go",
    "sdk",
];

/// Directory names that root a toolchain installation wherever it lives: a
/// `PATH` entry inside one shows the whole installation (`/root/.pyenv/shims`
/// → `/root/.pyenv`), also when `HOME` points elsewhere.
pub const TOOLCHAIN_ROOTS: &[&str] = &[
    ".cargo", ".rustup", ".nvm", ".fnm", ".pyenv", ".rbenv", ".volta", ".bun", ".deno", ".sdkman",
    ".asdf", "mise", ".dotnet",
];

/// Variables naming a toolchain's installation (rustup's and cargo's homes
/// outside the home, a pyenv or nvm root, …): shown read-only.
pub const TOOLCHAIN_VARS: &[&str] = &[
    "RUSTUP_HOME",
    "CARGO_HOME",
    "PYENV_ROOT",
    "NVM_DIR",
    "FNM_DIR",
    "VOLTA_HOME",
    "ASDF_DIR",
    "ASDF_DATA_DIR",
    "MISE_DATA_DIR",
    "RBENV_ROOT",
    "SDKMAN_DIR",
    "BUN_INSTALL",
    "DENO_INSTALL",
    "GOROOT",
    "JAVA_HOME",
    "DOTNET_ROOT",
    "DANDORI_TOOLS_DIR",
];

/// Files under `HOME` in which agent CLIs keep their credentials and settings:
/// copied into the fresh home for an agent (never the host's file, never the
/// rest of its state: sessions and transcripts stay in the run), hidden from
/// every other command.
pub const AGENT_CREDENTIAL_FILES: &[&str] = &[
    ".claude/.credentials.json",
    ".claude/settings.json",
    ".claude.json",
    ".codex/auth.json",
    ".codex/config.toml",
    ".gemini/oauth_creds.json",
    ".gemini/google_accounts.json",
    ".gemini/settings.json",
];

/// The name of dandori's own directory in a repository (runs, environment
/// records): hidden from the repository's tools.
pub const DANDORI_DIR: &str = ".dandori";

/// How a path is shown inside the sandbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Show {
    ReadOnly,
    Writable,
    /// Read-only inside a writable directory (`.git`, dandori's tool cache).
    ReadOnlyOver,
    Hidden,
}

/// One row of the view, in mount order.
struct Row {
    what: &'static str,
    access: &'static str,
    paths: fn() -> String,
}

fn list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

const ROWS: &[Row] = &[
    Row {
        what: "system directories",
        access: "read-only",
        paths: || list(SYSTEM_DIRS),
    },
    Row {
        what: "secret files of the system",
        access: "hidden",
        paths: || {
            format!(
                "{}, the SSH host keys, and every entry of `/etc` that others may not read",
                list(HIDDEN_SYSTEM)
            )
        },
    },
    Row {
        what: "devices",
        access: "read-write",
        paths: || {
            format!(
                "{} (a private `pts` and `shm`); nothing else of `/dev`",
                list(DEVICES)
            )
        },
    },
    Row {
        what: "processes",
        access: "the sandbox's own",
        paths: || "`/proc` of the sandbox's PID namespace".to_string(),
    },
    Row {
        what: "temporary files",
        access: "read-write, private",
        paths: || "`/tmp`, `/var/tmp` (empty; `TMPDIR`)".to_string(),
    },
    Row {
        what: "home",
        access: "read-write, fresh",
        paths: || {
            "a directory of dandori's over `$HOME` (a run's is `<run dir>/home`, kept for a resume): a credential-free `.npmrc`; an agent's credential files copied in".to_string()
        },
    },
    Row {
        what: "toolchains",
        access: "read-only",
        paths: || {
            format!(
                "in the home: {}; for each `PATH` entry outside the system directories: the toolchain it lies in (a directory named {}), the virtual environment of its `bin` (`pyvenv.cfg`), the `node_modules` of its `.bin`, dandori's tool cache of its `dandori/tools/bin`, else the entry itself (never its parent); the directories the toolchain variables {} name",
                list(HOME_TOOLCHAINS),
                list(TOOLCHAIN_ROOTS),
                list(TOOLCHAIN_VARS)
            )
        },
    },
    Row {
        what: "what the caller shows",
        access: "read-only",
        paths: || {
            "the main repository seen from a pool worktree, dandori's tool cache, the program and script of the agent command the user chose".to_string()
        },
    },
    Row {
        what: "the worktree and the policy's writable paths",
        access: "read-write",
        paths: || {
            "the worktree (everything under it writable: no read-only path above shadows it), the run directory, package caches during environment setup".to_string()
        },
    },
    Row {
        what: "read-only inside writable paths",
        access: "read-only",
        paths: || "the git directories, dandori's tool cache".to_string(),
    },
    Row {
        what: "credential stores",
        access: "hidden",
        paths: || {
            format!(
                "{} where a shown directory holds them; the agent credential files {} except for an agent; `{DANDORI_DIR}` of a shown repository (unless a shown path lies inside it)",
                list(super::HIDDEN_HOME_PATHS),
                list(AGENT_CREDENTIAL_FILES)
            )
        },
    },
];

/// The view as a Markdown table (docs/security.md carries it verbatim).
pub fn table_markdown() -> String {
    let mut out = String::from("| # | what | access | paths |\n| --- | --- | --- | --- |\n");
    for (n, r) in ROWS.iter().enumerate() {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            n + 1,
            r.what,
            r.access,
            (r.paths)()
        ));
    }
    out
}

/// The secret files of the system directories that exist: the fixed list, the
/// SSH host keys, and the entries of `/etc` others may not read (read once).
pub fn hidden_system() -> &'static [PathBuf] {
    static HIDDEN: OnceLock<Vec<PathBuf>> = OnceLock::new();
    HIDDEN.get_or_init(|| {
        let mut out: Vec<PathBuf> = HIDDEN_SYSTEM.iter().map(PathBuf::from).collect();
        if let Ok(entries) = std::fs::read_dir("/etc/ssh") {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with("ssh_host_") && name.ends_with("_key") {
                    out.push(e.path());
                }
            }
        }
        unreadable_by_others(Path::new("/etc"), 0, &mut out);
        out.sort();
        out.dedup();
        out
    })
}

/// Entries under `dir` whose mode denies others reading (not descending into
/// them): what only root could read before the sandbox kept root's override of
/// file modes.
fn unreadable_by_others(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    use std::os::unix::fs::PermissionsExt;
    if depth > 8 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(meta) = e.path().symlink_metadata() else {
            continue;
        };
        if meta.file_type().is_symlink() {
            continue;
        }
        if meta.permissions().mode() & 0o004 == 0 {
            out.push(e.path());
        } else if meta.is_dir() {
            unreadable_by_others(&e.path(), depth + 1, out);
        }
    }
}

/// True when `p` lies in a system directory (already visible).
pub fn in_system(p: &Path) -> bool {
    SYSTEM_DIRS.iter().any(|d| p.starts_with(d))
}

/// Directories too broad to show as anybody's installation.
fn too_broad(p: &Path, home: Option<&Path>) -> bool {
    p.parent().is_none()
        || p.components().count() <= 2
        || Some(p) == home
        || p == Path::new("/root")
        || p == Path::new("/home")
        || p == Path::new("/tmp")
        || p == Path::new("/var/tmp")
}

/// The installation a `PATH` entry belongs to: the toolchain root it lies in
/// (`/x/.pyenv/shims` → `/x/.pyenv`), the virtual environment of its `bin`, the
/// `node_modules` of its `.bin`, else the entry itself — never a parent that is
/// not recognisably an installation.
fn installation(dir: &Path, home: Option<&Path>) -> PathBuf {
    let mut found: Option<PathBuf> = None;
    for a in dir.ancestors() {
        if a.file_name()
            .is_some_and(|n| TOOLCHAIN_ROOTS.iter().any(|r| n == *r))
            && !too_broad(a, home)
        {
            found = Some(a.to_path_buf());
        }
    }
    if let Some(root) = found {
        return root;
    }
    if let Some(parent) = dir.parent()
        && !too_broad(parent, home)
    {
        let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        let venv = name.as_deref() == Some("bin") && parent.join("pyvenv.cfg").is_file();
        // dandori's tool cache (`…/dandori/tools/bin` links into `…/dandori/tools`).
        let tools = name.as_deref() == Some("bin")
            && parent.file_name().is_some_and(|n| n == "tools")
            && parent
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "dandori");
        let node = name.as_deref() == Some(".bin")
            && parent.file_name().is_some_and(|n| n == "node_modules");
        if venv || node || tools {
            return parent.to_path_buf();
        }
    }
    dir.to_path_buf()
}

/// The installations of the `PATH` entries outside the system directories.
/// `~/.cargo` brings the `~/.rustup` beside it (its proxies run toolchains from
/// there).
pub fn path_roots(path_var: Option<&str>, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(path) = path_var else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = Vec::new();
    let mut push = |p: PathBuf| {
        if !out.contains(&p) {
            out.push(p);
        }
    };
    for dir in std::env::split_paths(path) {
        if !dir.is_absolute() || !dir.is_dir() || in_system(&dir) || too_broad(&dir, home) {
            continue;
        }
        let root = installation(&dir, home);
        if root.file_name().is_some_and(|n| n == ".cargo")
            && let Some(rustup) = root.parent().map(|p| p.join(".rustup"))
            && rustup.is_dir()
        {
            push(rustup);
        }
        push(root);
    }
    out
}

/// The installations named by toolchain variables ([`TOOLCHAIN_VARS`]).
pub fn var_roots(vars: &[(String, String)], home: Option<&Path>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for (_, v) in vars {
        let p = PathBuf::from(v);
        if p.is_absolute()
            && p.is_dir()
            && !in_system(&p)
            && !too_broad(&p, home)
            && !out.contains(&p)
        {
            out.push(p);
        }
    }
    out
}

/// Programs that run the file named by their first operand.
const SCRIPT_RUNNERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "python", "python3", "node", "perl", "ruby", "deno", "bun",
];

/// What a command *the user chose* (an agent command from `--agent-cmd` or the
/// config, never a model's or a plan's) needs to start: the installation of its
/// program and, for an interpreter, the directory of the script it runs
/// (`python3 /opt/agents/run.py`), following symbolic links and the `#!`
/// interpreter. The caller adds these to [`SandboxPolicy::readable`]; the view
/// itself never reads a command's arguments.
pub fn program_roots(argv: &[String], home: Option<&Path>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    let Some(first) = argv.first() else {
        return Vec::new();
    };
    let program = Path::new(first);
    if program.is_absolute() {
        files.push(program.to_path_buf());
    }
    let base = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let trimmed = base.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    if (SCRIPT_RUNNERS.contains(&trimmed) || SCRIPT_RUNNERS.contains(&base.as_str()))
        && let Some(script) = argv[1..].iter().find(|a| !a.starts_with('-'))
    {
        let script = Path::new(script);
        if script.is_absolute() && script.is_file() {
            files.push(script.to_path_buf());
        }
    }
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
    files.extend(extra);
    let mut out = Vec::new();
    for f in &files {
        let Some(dir) = f.parent() else { continue };
        if in_system(dir) || !dir.is_dir() {
            continue;
        }
        let root = if too_broad(dir, home) {
            f.clone()
        } else {
            installation(dir, home)
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

/// Prefixes of dandori's temporary directories; each name carries the creating
/// process's id so that those of a killed process can be removed later.
pub(crate) const TEMP_PREFIXES: &[&str] =
    &["dandori-home-", "dandori-seccomp-", "dandori-sandbox-"];

/// A temporary directory of this process: `<prefix><pid>-XXXXXX`.
pub(crate) fn temp_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    sweep_stale_temp_dirs();
    tempfile::Builder::new()
        .prefix(&format!("{prefix}{}-", std::process::id()))
        .tempdir()
}

/// Removes (once per process) dandori's temporary directories whose process is
/// gone: a killed run leaves nothing behind for long. Directories of the older
/// naming (no process id) go when a day old.
fn sweep_stale_temp_dirs() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(rest) = TEMP_PREFIXES.iter().find_map(|p| name.strip_prefix(p)) else {
                continue;
            };
            let stale = match rest
                .split_once('-')
                .and_then(|(pid, _)| pid.parse::<u32>().ok())
            {
                Some(pid) => !Path::new(&format!("/proc/{pid}")).exists(),
                None => e
                    .metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.elapsed().ok())
                    .is_some_and(|age| age.as_secs() > 24 * 3600),
            };
            if stale && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
}

#[derive(Debug)]
enum HomeDir {
    Temp(tempfile::TempDir),
    /// A run's home, kept in its run directory for a resume.
    Kept(PathBuf),
}

/// The fresh home of one sandbox: a directory of dandori's shown in place of the
/// user's home. Holds a credential-free `.npmrc` (empty when the user has none)
/// so that npm and yarn 1 read a readable file.
#[derive(Debug)]
pub struct FreshHome {
    /// The user's home (where the fresh one is shown).
    pub real: PathBuf,
    dir: HomeDir,
}

impl FreshHome {
    /// A fresh home in `kept` (created when missing, never deleted), else in a
    /// temporary directory removed with it.
    pub fn create(real: &Path, kept: Option<&Path>) -> Option<FreshHome> {
        if !real.is_absolute() {
            return None;
        }
        let dir = match kept {
            Some(k) => {
                std::fs::create_dir_all(k).ok()?;
                HomeDir::Kept(k.to_path_buf())
            }
            None => HomeDir::Temp(temp_dir("dandori-home-").ok()?),
        };
        let home = FreshHome {
            real: real.to_path_buf(),
            dir,
        };
        let npmrc = std::fs::read_to_string(real.join(".npmrc"))
            .map(|t| super::without_credentials(&t))
            .unwrap_or_default();
        std::fs::write(home.dir().join(".npmrc"), npmrc).ok()?;
        Some(home)
    }

    pub fn dir(&self) -> &Path {
        match &self.dir {
            HomeDir::Temp(t) => t.path(),
            HomeDir::Kept(p) => p,
        }
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
        let target = self.dir().join(rel);
        if target.exists() {
            return;
        }
        if let Some(parent) = target.parent() {
            let _ = std::fs::create_dir_all(parent);
        }
        let _ = std::fs::copy(real_file, &target);
    }
}

/// Every path the command sees besides the system directories, the devices,
/// `/proc`, the private temporary directories and the fresh home, in mount
/// order (parents before children; at equal depth read-only, writable,
/// read-only carve-outs, hidden).
pub(crate) fn layout(
    home: Option<&FreshHome>,
    hidden: &[PathBuf],
    roots: &[PathBuf],
    policy: &SandboxPolicy,
) -> Vec<(PathBuf, Show)> {
    let mut read: Vec<PathBuf> = Vec::new();
    if let Some(h) = home {
        read.extend(h.toolchains());
    }
    read.extend(roots.iter().cloned());
    read.extend(policy.readable.iter().cloned());
    let mut writable: Vec<PathBuf> = Vec::new();
    let mut adopted: Vec<&Path> = Vec::new();
    for d in &policy.writable {
        match (home, std::fs::symlink_metadata(d)) {
            // A file of the agent's state in the home: a copy in the fresh home.
            (Some(h), Ok(m)) if m.is_file() && d.starts_with(&h.real) => {
                h.adopt_file(d);
                adopted.push(d);
            }
            (_, Ok(_)) => writable.push(d.clone()),
            (_, Err(_)) => {}
        }
    }
    // The writable paths win: nothing read-only is mounted over them (a
    // repository's `.venv` on `PATH` stays as writable as the rest of it).
    read.retain(|r| r.exists() && !writable.iter().any(|w| r.starts_with(w)));
    let mut out: Vec<(PathBuf, Show)> = read.into_iter().map(|p| (p, Show::ReadOnly)).collect();
    out.extend(writable.iter().map(|p| (p.clone(), Show::Writable)));
    out.extend(
        policy
            .read_only
            .iter()
            .filter(|p| p.exists())
            .map(|p| (p.clone(), Show::ReadOnlyOver)),
    );
    let shown: Vec<PathBuf> = out.iter().map(|(p, _)| p.clone()).collect();
    let mut hide: Vec<PathBuf> = hidden.iter().chain(hidden_system()).cloned().collect();
    if let Some(h) = home {
        // An agent's credentials, copied into this home for an agent command,
        // are not shown to any other command.
        for rel in AGENT_CREDENTIAL_FILES {
            let p = h.real.join(rel);
            if !adopted.contains(&p.as_path()) && h.dir().join(rel).exists() {
                out.push((p, Show::Hidden));
            }
        }
    }
    // dandori's own directory in a shown repository, unless something shown
    // lies inside it (a pool worktree, the run directory).
    for s in &shown {
        let d = s.join(DANDORI_DIR);
        if d.is_dir() && !shown.iter().any(|x| x.starts_with(&d)) {
            hide.push(d);
        }
    }
    for h in &hide {
        let visible = in_system(h) || shown.iter().any(|s| h.starts_with(s));
        if visible && std::fs::symlink_metadata(h).is_ok() && !out.iter().any(|(p, _)| p == h) {
            out.push((h.clone(), Show::Hidden));
        }
    }
    out.sort_by(|(a, ka), (b, kb)| {
        a.components()
            .count()
            .cmp(&b.components().count())
            .then(ka.cmp(kb))
    });
    out.dedup_by(|later, earlier| later.0 == earlier.0 && later.1 == earlier.1);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_entries_show_their_installation_never_a_plain_parent() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        let venv = root.join("tools/venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        let pyenv = root.join("u/.pyenv");
        std::fs::create_dir_all(pyenv.join("shims")).unwrap();
        let plain = root.join("x/bin");
        std::fs::create_dir_all(&plain).unwrap();
        let node = root.join("web/node_modules/.bin");
        std::fs::create_dir_all(&node).unwrap();
        let cargo = root.join("u/.cargo/bin");
        std::fs::create_dir_all(&cargo).unwrap();
        std::fs::create_dir_all(root.join("u/.rustup")).unwrap();
        let path = std::env::join_paths([
            venv.join("bin"),
            pyenv.join("shims"),
            plain.clone(),
            node,
            cargo,
        ])
        .unwrap();
        let roots = path_roots(path.to_str(), Some(Path::new("/home/u")));
        assert_eq!(
            roots,
            vec![
                venv,
                pyenv,
                plain,
                root.join("web/node_modules"),
                root.join("u/.rustup"),
                root.join("u/.cargo"),
            ]
        );
    }

    #[test]
    fn the_table_names_every_list() {
        let t = table_markdown();
        for p in SYSTEM_DIRS.iter().chain(DEVICES).chain(HOME_TOOLCHAINS) {
            assert!(t.contains(&format!("`{p}`")), "{p} missing from the table");
        }
    }
}
