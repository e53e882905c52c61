//! The run directory `runs/<request-id>/<run-id>/` and its names: run ids
//! (`YYYYMMDD-HHMMSS-<6 hex>`), the work branch (`dandori/<request-id>/<run-id>`), the
//! base branch (the repository's current branch, or `main` when there is no git
//! repository), the runs root and the `.gitignore` that keeps runs out of the
//! user's worktree.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};

use crate::error::PlannerError;

/// Where a run's files go, and how planning.json refers to them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunDir {
    pub request_id: String,
    pub run_id: String,
    /// Absolute.
    pub path: PathBuf,
    /// The run directory as planning.json records it: relative to the repository
    /// root (`/`-separated) when inside it, else absolute.
    pub display: String,
}

impl RunDir {
    /// `display` joined with `rel` (for planning.json `outputs`).
    pub fn rel(&self, rel: &str) -> String {
        format!("{}/{rel}", self.display.trim_end_matches('/'))
    }
}

/// The runs root: `--runs-root`, else config `runs.root`; relative paths are taken
/// relative to the repository.
pub fn runs_root(repo: &Path, flag: Option<&Path>, config_root: &str) -> PathBuf {
    let root = match flag {
        Some(p) => p.to_path_buf(),
        None => PathBuf::from(config_root),
    };
    if root.is_absolute() {
        root
    } else {
        repo.join(root)
    }
}

/// `YYYYMMDD-HHMMSS-<6 hex>`; the hex comes from the request id, the time to the
/// nanosecond, the process id and `attempt`.
pub fn run_id(request_id: &str, now: DateTime<Utc>, attempt: u32) -> String {
    let seed = format!(
        "{request_id}|{}|{}|{attempt}",
        now.timestamp_nanos_opt().unwrap_or_default(),
        std::process::id()
    );
    let hex = crate::hex_digest(seed.as_bytes());
    format!("{}-{}", now.format("%Y%m%d-%H%M%S"), &hex[..6])
}

pub fn work_branch(request_id: &str, run_id: &str) -> String {
    format!("dandori/{request_id}/{run_id}")
}

/// Creates a fresh run directory under `root`. When the runs root lies inside the
/// repository, a `.gitignore` containing `*` is written (unless one exists) in
/// `.dandori/` for a root under it (the default), else in the runs root itself, so
/// runs never show up in `git status` and nothing else is hidden.
pub fn create(
    repo: &Path,
    root: &Path,
    request_id: &str,
    now: DateTime<Utc>,
) -> Result<RunDir, PlannerError> {
    dandori_fs::create_dir_all(root)?;
    ignore_runs_root(repo, root)?;
    for attempt in 0..16 {
        let run_id = run_id(request_id, now, attempt);
        let path = root.join(request_id).join(&run_id);
        if path.exists() {
            continue;
        }
        dandori_fs::create_dir_all(&path)?;
        record_repository(repo, &path)?;
        let display = match path.strip_prefix(repo) {
            Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
            Err(_) => path.display().to_string(),
        };
        return Ok(RunDir {
            request_id: request_id.to_string(),
            run_id,
            path,
            display,
        });
    }
    Err(PlannerError::Assemble(format!(
        "could not find a free run directory under {}",
        root.join(request_id).display()
    )))
}

/// Writes `repository.json`: `run` and `resume` operate on this repository and no
/// other, whatever the current directory.
fn record_repository(repo: &Path, run_dir: &Path) -> Result<(), PlannerError> {
    let record = dandori_plan::repository::RepositoryRecord {
        repository: repo.to_path_buf(),
    };
    let text = serde_json::to_string_pretty(&record)
        .map_err(|e| PlannerError::Assemble(format!("repository record: {e}")))?;
    dandori_fs::write_atomic(
        run_dir.join(dandori_plan::repository::FILE_NAME),
        format!("{text}\n"),
    )?;
    Ok(())
}

fn ignore_runs_root(repo: &Path, root: &Path) -> Result<(), PlannerError> {
    let Ok(rel) = root.strip_prefix(repo) else {
        return Ok(());
    };
    let Some(first) = rel.components().next() else {
        return Ok(());
    };
    // `.dandori/` is dandori's own directory (runs, environment records): ignore all
    // of it. Any other runs root ignores only itself, so a runs root such as
    // `work/runs` never hides the user's other files under `work/`.
    let top = if first.as_os_str() == ".dandori" {
        repo.join(first)
    } else {
        root.to_path_buf()
    };
    let gitignore = top.join(".gitignore");
    if !gitignore.exists() {
        dandori_fs::write_atomic(&gitignore, "# dandori run state: never committed\n*\n")?;
    }
    Ok(())
}

/// The current branch of the repository at `repo` from `.git/HEAD` (a worktree's
/// `.git` file is followed). A detached HEAD gives the commit id; no repository
/// gives `main`. Reading the file keeps `plan` free of a git dependency.
pub fn base_branch(repo: &Path) -> String {
    let dot_git = repo.join(".git");
    let git_dir = if dot_git.is_file() {
        match std::fs::read_to_string(&dot_git) {
            Ok(s) => match s.trim().strip_prefix("gitdir:") {
                Some(p) => {
                    let p = PathBuf::from(p.trim());
                    if p.is_absolute() { p } else { repo.join(p) }
                }
                None => return "main".to_string(),
            },
            Err(_) => return "main".to_string(),
        }
    } else if dot_git.is_dir() {
        dot_git
    } else {
        return "main".to_string();
    };
    match std::fs::read_to_string(git_dir.join("HEAD")) {
        Ok(head) => {
            let head = head.trim();
            match head.strip_prefix("ref: refs/heads/") {
                Some(branch) => branch.to_string(),
                None if !head.is_empty() => head.to_string(),
                None => "main".to_string(),
            }
        }
        Err(_) => "main".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_id_shape() {
        let now = DateTime::parse_from_rfc3339("2026-01-23T10:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let id = run_id("RQ-1", now, 0);
        assert!(id.starts_with("20260123-100000-"), "{id}");
        assert_eq!(id.len(), "20260123-100000-".len() + 6);
        assert_ne!(id, run_id("RQ-1", now, 1));
    }

    #[test]
    fn base_branch_without_git_is_main() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(base_branch(dir.path()), "main");
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/develop\n").unwrap();
        assert_eq!(base_branch(dir.path()), "develop");
    }

    #[test]
    fn default_root_gets_a_gitignore() {
        let dir = tempfile::tempdir().unwrap();
        let root = runs_root(dir.path(), None, ".dandori/runs");
        let rd = create(dir.path(), &root, "RQ-1", Utc::now()).unwrap();
        assert!(
            rd.display.starts_with(".dandori/runs/RQ-1/"),
            "{}",
            rd.display
        );
        let gi = std::fs::read_to_string(dir.path().join(".dandori/.gitignore")).unwrap();
        assert!(gi.lines().any(|l| l == "*"));
    }
}
