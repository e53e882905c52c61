//! Reuse of a prepared environment: the environment files (manifests, lock files,
//! version pins) and the setup commands are hashed; when the hash equals the one
//! recorded after the last successful setup and the prepared artefacts still
//! exist, the setup is not run again (`--force` overrides).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_plan::SelectedEnvironment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::EnvError;
use crate::analyzer::{MINIFORGE, NODE, PYTHON, join_rel};
use crate::records::{OverallStatus, SetupRecord, VerificationRecord};
use crate::selection::{CONDA_PREFIX_DIR, VENV_DIR};

/// `<repo>/.dandori/environment`: the prepared environment's state, and the
/// records of `dandori env setup` run outside a run, for a directory that is
/// not a git repository ([`state_dir`]).
pub const STATE_DIR: &str = ".dandori/environment";
pub const STATE_FILE: &str = "state.json";

/// Files that do not change what gets installed.
const NOT_HASHED: &[&str] = &[
    "README.md",
    "Dockerfile",
    "Makefile",
    "docker-compose.yml",
    "docker-compose.yaml",
    "compose.yaml",
    "compose.yml",
];

/// What `<repo>/.dandori/environment/state.json` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreparedState {
    pub fingerprint: String,
    pub environment: String,
    /// Ecosystem directory relative to the repository.
    pub root: String,
    pub overall_status: OverallStatus,
    pub prepared_at: String,
    pub variables: BTreeMap<String, String>,
    pub setup: SetupRecord,
    pub verification: VerificationRecord,
}

/// Where the prepared environment's state and the records of `dandori env
/// setup` go: inside the repository's git directory (`.git/dandori/environment`,
/// a worktree's own git directory for a worktree), which every tool that walks
/// the tree skips — prettier, eslint, pytest, jest, tsc — where `.dandori/` is
/// read (prettier ignores neither `.git/info/exclude` nor a nested
/// `.gitignore`). Outside git: `<repo>/.dandori/environment`.
pub fn state_dir(repo: &Path) -> PathBuf {
    git_dir(repo)
        .map(|g| g.join(GIT_STATE_DIR))
        .unwrap_or_else(|| repo.join(STATE_DIR))
}

/// The state directory's place inside a git directory.
pub const GIT_STATE_DIR: &str = "dandori/environment";

/// `<repo>/.git` when it is a directory, the `gitdir:` of a worktree's `.git`
/// file; read from the file system (no git process).
fn git_dir(repo: &Path) -> Option<PathBuf> {
    let dot_git = repo.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    let text = dandori_fs::read_to_string(&dot_git).ok()?;
    let target = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    let dir = repo.join(target);
    dir.is_dir().then_some(dir)
}

/// SHA-256 over the environment name, the setup commands and every environment
/// file's path and contents.
/// Files in `created` (made by the last setup, such as a generated
/// `Cargo.lock`) are left out, so a setup does not invalidate itself.
pub fn fingerprint(
    repo: &Path,
    selected: &SelectedEnvironment,
    created: &[String],
) -> Result<String, EnvError> {
    let mut h = Sha256::new();
    h.update(b"dandori-environment-v1\n");
    h.update(selected.name.as_bytes());
    h.update(b"\n");
    for c in &selected.setup_commands {
        h.update(c.as_bytes());
        h.update(b"\n");
    }
    let mut files: Vec<&String> = selected
        .detected_files
        .iter()
        .filter(|f| !NOT_HASHED.contains(&f.rsplit('/').next().unwrap_or(f)))
        .filter(|f| {
            !created
                .iter()
                .any(|c| c == *f || (c.ends_with('/') && f.starts_with(c.as_str())))
        })
        .collect();
    files.sort();
    files.dedup();
    for f in files {
        h.update(f.as_bytes());
        h.update(b"\0");
        match dandori_fs::read(repo.join(f)) {
            Ok(bytes) => h.update(Sha256::digest(&bytes)),
            Err(e) if e.is_not_found() => h.update(b"<missing>"),
            Err(e) => return Err(e.into()),
        }
        h.update(b"\n");
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

pub fn load(repo: &Path) -> Option<PreparedState> {
    load_for(repo, None)
}

/// `ecosystems/` of the state directory: one directory per ecosystem set up
/// besides the primary one (seed 002 §12.2), and their activation order.
pub const ECOSYSTEMS_DIR: &str = "ecosystems";
/// `ecosystems/index.json`: the keys of the other ecosystems, in activation order.
pub const ECOSYSTEMS_INDEX: &str = "index.json";

/// Where the state of the ecosystem `key` goes: `state.json` of the state
/// directory for the primary one (`None`), `ecosystems/<key>/state.json` for
/// the others.
pub fn state_file(repo: &Path, key: Option<&str>) -> PathBuf {
    match key {
        None => state_dir(repo).join(STATE_FILE),
        Some(k) => state_dir(repo)
            .join(ECOSYSTEMS_DIR)
            .join(k)
            .join(STATE_FILE),
    }
}

pub fn load_for(repo: &Path, key: Option<&str>) -> Option<PreparedState> {
    let text = dandori_fs::read_to_string(state_file(repo, key)).ok()?;
    serde_json::from_str(&text).ok()
}

/// The keys of the other ecosystems of the last setup, in activation order.
pub fn load_index(repo: &Path) -> Vec<String> {
    dandori_fs::read_to_string(state_dir(repo).join(ECOSYSTEMS_DIR).join(ECOSYSTEMS_INDEX))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Records the other ecosystems of this setup (none: the index is removed).
pub fn save_index(repo: &Path, keys: &[String]) -> Result<(), EnvError> {
    let dir = state_dir(repo).join(ECOSYSTEMS_DIR);
    let path = dir.join(ECOSYSTEMS_INDEX);
    if keys.is_empty() {
        if path.exists() {
            dandori_fs::remove_file(&path)?;
        }
        return Ok(());
    }
    dandori_fs::create_dir_all(&dir)?;
    dandori_fs::write_json_atomic(path, &keys)?;
    Ok(())
}

/// The prepared environments activation combines: the primary one first, then
/// the others of the index in its order (those whose state exists).
pub fn load_all(repo: &Path) -> Vec<PreparedState> {
    let mut all: Vec<PreparedState> = load(repo).into_iter().collect();
    for k in load_index(repo) {
        all.extend(load_for(repo, Some(&k)));
    }
    all
}

pub fn save(repo: &Path, state: &PreparedState) -> Result<(), EnvError> {
    save_for(repo, None, state)
}

pub fn save_for(repo: &Path, key: Option<&str>, state: &PreparedState) -> Result<(), EnvError> {
    let dir = state_dir(repo);
    dandori_fs::create_dir_all(&dir)?;
    // Keep dandori's state out of the project's commits (outside git only:
    // in a git directory nothing is committed).
    if dir.starts_with(repo.join(".dandori")) {
        let ignore = repo.join(".dandori/.gitignore");
        if !ignore.exists() {
            dandori_fs::write_atomic(&ignore, "*\n")?;
        }
    }
    let file = state_file(repo, key);
    if let Some(parent) = file.parent() {
        dandori_fs::create_dir_all(parent)?;
    }
    dandori_fs::write_json_atomic(file, state)?;
    Ok(())
}

/// The prepared artefacts of the environment still exist.
pub fn artifacts_present(repo: &Path, environment: &str, root: &str) -> bool {
    let at = |p: &str| repo.join(join_rel(root, p));
    match environment {
        PYTHON => at(&format!("{VENV_DIR}/bin/python")).exists(),
        MINIFORGE => at(&format!("{CONDA_PREFIX_DIR}/bin/python")).exists(),
        NODE => at("node_modules").is_dir(),
        _ => true,
    }
}
