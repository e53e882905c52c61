//! The seam to the environment sub-phase (seed 002 §5), which runs before the first
//! step. The CLI plugs in `dandori-env`; the runner only decides what its status
//! means for the run (`environment_setup.verification.on_failure`: a failed
//! environment stops the run with `ENVIRONMENT_FAILED` unless `warn` or `ignore`
//! is set explicitly) and hands the summary to every executor prompt. The
//! environment lives in a checkout of its own ([`EnvironmentReport::prepared_in`]):
//! step workspaces see it through `PATH` / `VIRTUAL_ENV` / `CONDA_PREFIX`, the
//! editable installs mapped onto them, and [`NodeLinks`], never through a copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvironmentStatus {
    Success,
    PartialSuccess,
    Failed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EnvironmentReport {
    pub status: EnvironmentStatus,
    /// Variables that activate the prepared environment (PATH with the venv or
    /// node_modules/.bin first, …), applied to every agent and unit command.
    pub activation_env: BTreeMap<String, String>,
    pub message: String,
    /// The setup record (`<run>/environment/setup.json`), when something was set up.
    pub setup_record: Option<PathBuf>,
    /// Seed 002 §7.2: the environment as the executing agent is told about it
    /// (the body of the prompt's `## Execution environment` section).
    pub summary: String,
    /// Extra fields of the `ENVIRONMENT_SETUP` trace event (regenerations, …).
    pub details: serde_json::Value,
    /// The checkout the environment was prepared in (dandori's environment
    /// tree, not the user's): editable Python installs name it
    /// ([`crate::pythonpath`]), and every step workspace links its
    /// `node_modules` ([`NodeLinks`]). `None`: nothing was prepared.
    pub prepared_in: Option<PathBuf>,
}

pub trait EnvironmentPhase: Send + Sync {
    /// Sets up and verifies the environment of `repo` for the run in `run_dir`
    /// (in a checkout of the run's base commit the phase keeps, never in
    /// `repo`'s working tree), writing its records under `run_dir/environment/`.
    fn prepare(&self, repo: &Path, run_dir: &Path) -> Result<EnvironmentReport, String>;
}

/// `<run>/environment/summary.md`: the seed 002 §7.2 summary the prompts carry.
pub fn summary_path(run_dir: &Path) -> PathBuf {
    run_dir.join("environment").join("summary.md")
}

/// The summary of a run's prepared environment, if the sub-phase ran.
pub fn read_summary(run_dir: &Path) -> Option<String> {
    dandori_fs::read_to_string(summary_path(run_dir)).ok()
}

/// Agents and unit commands find the summary file here.
pub const SUMMARY_FILE_VAR: &str = "DANDORI_ENVIRONMENT_FILE";
/// …and the environment's status (`success`, `partial_success`, `failed`).
pub const STATUS_VAR: &str = "DANDORI_ENVIRONMENT_STATUS";

/// The `.gitignore` of a linked `node_modules/`: `*` ignores its every entry,
/// itself included.
const LINKED_IGNORE: &str = ".gitignore";

/// The `node_modules` directories of the prepared environment, linked into every
/// step workspace (and the baseline's) so that Node's resolution — `require`,
/// ESM `import`, bundlers, jest, vitest — finds the packages from the
/// workspace's files as it would in the environment's own checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLinks {
    tree: PathBuf,
    /// Relative to the tree: `node_modules`, `packages/a/node_modules`, ….
    dirs: Vec<String>,
}

impl NodeLinks {
    /// The `node_modules` directories of the environment prepared in `tree`: the
    /// repository's root and those two levels down at most (a workspace
    /// package's, a sub-project's); `None` when there is none.
    pub fn find(tree: &Path) -> Option<NodeLinks> {
        let mut dirs: Vec<String> = Vec::new();
        let mut add = |rel: String| {
            if tree.join(&rel).is_dir() && !dirs.contains(&rel) {
                dirs.push(rel);
            }
        };
        add("node_modules".to_string());
        for first in plain_dirs(tree) {
            add(format!("{first}/node_modules"));
            for second in plain_dirs(&tree.join(&first)) {
                add(format!("{first}/{second}/node_modules"));
            }
        }
        (!dirs.is_empty()).then(|| NodeLinks {
            tree: tree.to_path_buf(),
            dirs,
        })
    }

    /// Makes each `node_modules` of the environment a directory of `dir`'s own
    /// whose entries are symbolic links to the tree's (`node_modules/react` →
    /// `<tree>/node_modules/react`, `.bin` alike), with a `.gitignore` of `*`:
    /// what tools write there (`node_modules/.vite`, `.cache`) stays in the
    /// workspace, and git never stages or commits any of it — not the runner's
    /// staging, not an agent's `git add -A`. A `node_modules` the workspace
    /// already has of its own (tracked) is left alone; links already there are
    /// kept (a pool worktree's next step).
    pub fn link_into(&self, dir: &Path) -> Result<(), dandori_fs::FsError> {
        for rel in &self.dirs {
            let target = dir.join(rel);
            match std::fs::symlink_metadata(&target) {
                Err(_) if target.parent().is_some_and(Path::is_dir) => {
                    dandori_fs::create_dir_all(&target)?;
                }
                // The workspace has no such package directory.
                Err(_) => continue,
                Ok(m) if m.is_dir() && target.join(LINKED_IGNORE).is_file() => {}
                Ok(_) => continue,
            }
            let ignore = target.join(LINKED_IGNORE);
            if !ignore.exists() {
                dandori_fs::write_atomic(&ignore, "*\n")?;
            }
            let source = self.tree.join(rel);
            let entries = std::fs::read_dir(&source)
                .map_err(|e| dandori_fs::FsError::new("reading", &source, e))?;
            for e in entries.flatten() {
                let name = e.file_name();
                if name == LINKED_IGNORE {
                    continue;
                }
                let link = target.join(&name);
                if std::fs::symlink_metadata(&link).is_ok() {
                    continue;
                }
                std::os::unix::fs::symlink(e.path(), &link)
                    .map_err(|err| dandori_fs::FsError::new("linking", &link, err))?;
            }
        }
        Ok(())
    }
}

/// The directory names in `dir` a package could live in (not hidden, not
/// `node_modules`), sorted.
fn plain_dirs(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| !n.starts_with('.') && n != "node_modules" && n != "__pycache__")
        .collect();
    names.sort();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linked_node_modules_point_into_the_tree_and_ignore_themselves() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("tree");
        let ws = t.path().join("ws");
        for d in [
            "node_modules/react",
            "node_modules/.bin",
            "node_modules/@types/node",
            "packages/a/node_modules/left-pad",
            "packages/a/src",
            ".venv/lib",
        ] {
            std::fs::create_dir_all(tree.join(d)).unwrap();
        }
        std::fs::write(tree.join("node_modules/.gitignore"), "*\n").unwrap();
        std::fs::create_dir_all(ws.join("packages/a")).unwrap();
        let links = NodeLinks::find(&tree).unwrap();
        assert_eq!(links.dirs, vec!["node_modules", "packages/a/node_modules"]);
        links.link_into(&ws).unwrap();
        assert_eq!(
            std::fs::read_link(ws.join("node_modules/react")).unwrap(),
            tree.join("node_modules/react")
        );
        assert!(ws.join("node_modules/@types/node").is_dir());
        assert!(ws.join("node_modules/.bin").is_dir());
        assert_eq!(
            std::fs::read_to_string(ws.join("node_modules/.gitignore")).unwrap(),
            "*\n"
        );
        assert!(ws.join("packages/a/node_modules/left-pad").is_dir());
        // Again (the next step in the same worktree): nothing changes.
        links.link_into(&ws).unwrap();
        assert!(NodeLinks::find(&ws.join("packages/a/src")).is_none());
    }
}
