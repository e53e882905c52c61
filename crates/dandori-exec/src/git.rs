//! Git hardening: every git process dandori starts goes through [`git_command`],
//! which neutralises the settings that make git run programs chosen by a
//! repository (or planted in it by a model): hooks, fsmonitor, pager, editor,
//! ssh command, askpass, credential helpers, signing programs, and every
//! `filter.*`, `diff.*` and `merge.*` driver command configured anywhere. It also
//! ignores the system config, drops the `GIT_*` variables that point git at
//! other programs or other config, and never prompts.
//!
//! [`ConfigGuard`] snapshots the main repository's `.git/config` (and the files
//! that make git run programs: hooks, `info/attributes`, `config.worktree`) before
//! a step and, after it, reverts any change and reports it (`GIT_CONFIG_TAMPERED`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The reason code of a step whose commands changed the repository's git config.
pub const GIT_CONFIG_TAMPERED: &str = "GIT_CONFIG_TAMPERED";

/// Options placed before every git subcommand. Command-line `-c` wins over every
/// config file, including files pulled in by `include.path`.
pub const HARDENING_ARGS: &[&str] = &[
    "--no-pager",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.pager=cat",
    "-c",
    "core.editor=true",
    "-c",
    "sequence.editor=true",
    "-c",
    "core.sshCommand=false",
    "-c",
    "core.askPass=",
    "-c",
    "core.gitProxy=",
    "-c",
    "credential.helper=",
    "-c",
    "commit.gpgSign=false",
    "-c",
    "tag.gpgSign=false",
    "-c",
    "gpg.program=false",
    "-c",
    "protocol.ext.allow=never",
    "-c",
    "uploadpack.packObjectsHook=",
];

/// Variables removed from git's environment: they run programs or load other config.
pub const DROPPED_GIT_VARS: &[&str] = &[
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXTERNAL_DIFF",
    "GIT_PROXY_COMMAND",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_EXEC_PATH",
    "GIT_TEMPLATE_DIR",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_TRACE",
    "PAGER",
    "EDITOR",
    "VISUAL",
];

/// Driver settings that name a program, and the harmless value each gets:
/// an empty filter is skipped by git; `cat` is the identity text conversion;
/// external diff and merge drivers cannot be unset from the command line, so they
/// fail closed (`false`: git reports the driver failed, nothing else runs).
const DRIVER_PROGRAM_KEYS: &[(&str, &str, &str)] = &[
    ("filter", "clean", ""),
    ("filter", "smudge", ""),
    ("filter", "process", ""),
    ("diff", "textconv", "cat"),
    ("diff", "command", "false"),
    ("merge", "driver", "false"),
];

/// Whether git's global config (`~/.gitconfig`) is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GlobalConfig {
    /// Read (identity for commits); its executing settings are neutralised anyway.
    Keep,
    /// `GIT_CONFIG_GLOBAL=/dev/null`: inspection commands need nothing from it.
    Ignore,
}

/// A `git` command in `dir` with every executing option neutralised, for the given
/// subcommand arguments. Stdin is null.
pub fn git_command(dir: &Path, global: GlobalConfig) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).stdin(Stdio::null());
    crate::overlay::enter(&mut cmd, dir);
    harden_env(&mut cmd, global);
    cmd.args(HARDENING_ARGS);
    cmd.args(driver_overrides(dir));
    cmd
}

/// Like [`git_command`] with exactly `env` as the environment (before hardening).
pub fn git_command_with_env(
    dir: &Path,
    global: GlobalConfig,
    env: &BTreeMap<String, String>,
) -> Command {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .stdin(Stdio::null())
        .env_clear()
        .envs(env);
    crate::overlay::enter(&mut cmd, dir);
    harden_env(&mut cmd, global);
    cmd.args(HARDENING_ARGS);
    cmd.args(driver_overrides(dir));
    cmd
}

/// The git environment rules, for callers that build their own process (tokio).
pub fn harden_env(cmd: &mut Command, global: GlobalConfig) {
    for v in DROPPED_GIT_VARS {
        cmd.env_remove(v);
    }
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("GIT_CONFIG_KEY_") || k.starts_with("GIT_CONFIG_VALUE_") {
            cmd.env_remove(k.as_ref());
        }
    }
    cmd.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0");
    if global == GlobalConfig::Ignore {
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null");
    }
}

/// `-c <section>.<driver>.<key>=<harmless>` for every driver program the
/// repository configures for `dir` (see [`DRIVER_PROGRAM_KEYS`]; `required` is
/// cleared so a disabled filter is not an error).
pub fn driver_overrides(dir: &Path) -> Vec<String> {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir).stdin(Stdio::null());
    crate::overlay::enter(&mut cmd, dir);
    harden_env(&mut cmd, GlobalConfig::Keep);
    let out = cmd
        // The repository's own config (and the files it includes): drivers of the
        // user's global config are the user's choice and keep working.
        .args([
            "config",
            "--local",
            "--includes",
            "--null",
            "--name-only",
            "--get-regexp",
        ])
        .arg(r"^((filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver|required)|diff\.external)$")
        .stderr(Stdio::null())
        .output();
    let Ok(out) = out else { return Vec::new() };
    let mut args = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for name in out.stdout.split(|b| *b == 0) {
        let name = String::from_utf8_lossy(name).trim().to_string();
        if name.eq_ignore_ascii_case("diff.external") {
            // Cannot be unset from the command line: fail closed.
            args.push("-c".to_string());
            args.push("diff.external=false".to_string());
            continue;
        }
        let Some((section, rest)) = name.split_once('.') else {
            continue;
        };
        let Some((driver, _key)) = rest.rsplit_once('.') else {
            continue;
        };
        if !seen.insert((section.to_ascii_lowercase(), driver.to_string())) {
            continue;
        }
        for (s, key, value) in DRIVER_PROGRAM_KEYS {
            if s.eq_ignore_ascii_case(section) {
                args.push("-c".to_string());
                args.push(format!("{s}.{driver}.{key}={value}"));
            }
        }
        if section.eq_ignore_ascii_case("filter") {
            args.push("-c".to_string());
            args.push(format!("filter.{driver}.required=false"));
        }
    }
    args
}

/// The git directories of `worktree`: its own (`.git`, or the linked worktree's
/// admin directory) and the common one (the main repository's `.git`), found
/// from the files alone.
pub fn git_dirs(worktree: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = worktree.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some((dot_git.clone(), dot_git));
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let gitdir = text.trim().strip_prefix("gitdir:")?.trim();
    let gitdir = if Path::new(gitdir).is_absolute() {
        PathBuf::from(gitdir)
    } else {
        worktree.join(gitdir)
    };
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => {
            let c = c.trim();
            if Path::new(c).is_absolute() {
                PathBuf::from(c)
            } else {
                gitdir.join(c)
            }
        }
        Err(_) => gitdir.clone(),
    };
    let common = std::fs::canonicalize(&common).unwrap_or(common);
    Some((gitdir, common))
}

/// One changed file found by [`ConfigGuard::restore`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tampered {
    pub path: PathBuf,
    /// `modified`, `created` or `deleted`.
    pub change: &'static str,
}

/// The files of a repository that make git run programs, as they were.
#[derive(Debug, Clone)]
pub struct ConfigGuard {
    files: BTreeMap<PathBuf, Option<Vec<u8>>>,
    hooks_dir: PathBuf,
}

impl ConfigGuard {
    /// Snapshots the guarded files of the repository `worktree` belongs to.
    pub fn capture(worktree: &Path) -> Option<ConfigGuard> {
        let (gitdir, common) = git_dirs(worktree)?;
        let mut paths = vec![
            common.join("config"),
            common.join("config.worktree"),
            gitdir.join("config.worktree"),
            common.join("info").join("attributes"),
        ];
        let hooks_dir = common.join("hooks");
        paths.extend(list_files(&hooks_dir));
        paths.sort();
        paths.dedup();
        let files = paths
            .into_iter()
            .map(|p| {
                let content = std::fs::read(&p).ok();
                (p, content)
            })
            .collect();
        Some(ConfigGuard { files, hooks_dir })
    }

    /// Puts every guarded file back as captured; returns what had changed.
    pub fn restore(&self) -> Result<Vec<Tampered>, dandori_fs::FsError> {
        let mut changed = Vec::new();
        for (path, before) in &self.files {
            let now = std::fs::read(path).ok();
            if &now == before {
                continue;
            }
            match before {
                Some(bytes) => {
                    dandori_fs::write_atomic(path, bytes)?;
                    changed.push(Tampered {
                        path: path.clone(),
                        change: if now.is_some() { "modified" } else { "deleted" },
                    });
                }
                None => {
                    remove(path)?;
                    changed.push(Tampered {
                        path: path.clone(),
                        change: "created",
                    });
                }
            }
        }
        for p in list_files(&self.hooks_dir) {
            if !self.files.contains_key(&p) {
                remove(&p)?;
                changed.push(Tampered {
                    path: p,
                    change: "created",
                });
            }
        }
        Ok(changed)
    }
}

fn remove(p: &Path) -> Result<(), dandori_fs::FsError> {
    match std::fs::remove_file(p) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(dandori_fs::FsError::new("removing", p, e)),
    }
}

fn list_files(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}
