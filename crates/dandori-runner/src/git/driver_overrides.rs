//! The `-c` overrides that neutralise the driver programs a repository configures
//! (`dandori_exec::git::driver_overrides`), computed once per state of the
//! repository's config files instead of by a second git process before every git
//! command.
//!
//! The overrides depend only on the repository's local config: `config` in the
//! common git directory and the worktree's `config.worktree`. Each entry is kept
//! with those files' identity (inode, size, modification and change times) as
//! seen *before* git read them, so any later change of either file — by an agent,
//! a unit command or the user — gives a different identity and a fresh
//! computation. A config that includes other files (`include.path`,
//! `includeIf`) is never cached: the included files could change unseen.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

type Identity = Vec<Option<(u64, u64, i64, i64, i64, i64)>>;

/// Per worktree: the config files' identity and the overrides computed from them.
type Cache = HashMap<PathBuf, (Identity, Arc<Vec<String>>)>;

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

/// The config files the overrides of `dir` are computed from, when `dir` is the
/// root of a worktree (its `.git` directory or file found).
fn config_files(dir: &Path) -> Option<[PathBuf; 2]> {
    let (gitdir, common) = dandori_exec::git::git_dirs(dir)?;
    Some([common.join("config"), gitdir.join("config.worktree")])
}

fn identity(files: &[PathBuf]) -> Identity {
    files
        .iter()
        .map(|f| {
            std::fs::metadata(f).ok().map(|m| {
                (
                    m.ino(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                )
            })
        })
        .collect()
}

/// Whether one of `files` pulls in other config files.
fn includes(files: &[PathBuf]) -> bool {
    files.iter().any(|f| {
        std::fs::read(f).is_ok_and(|text| {
            text.to_ascii_lowercase()
                .windows(b"include".len())
                .any(|w| w == b"include")
        })
    })
}

/// The driver overrides of the worktree at `dir`.
pub fn for_dir(dir: &Path) -> Arc<Vec<String>> {
    let Some(files) = config_files(dir) else {
        return Arc::new(dandori_exec::git::driver_overrides(dir));
    };
    let seen = identity(&files);
    {
        let cache = match CACHE.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        if let Some((id, args)) = cache.as_ref().and_then(|c| c.get(dir))
            && *id == seen
        {
            return args.clone();
        }
    }
    let args = Arc::new(dandori_exec::git::driver_overrides(dir));
    if !includes(&files) {
        let mut cache = match CACHE.lock() {
            Ok(c) => c,
            Err(p) => p.into_inner(),
        };
        cache
            .get_or_insert_with(HashMap::new)
            .insert(dir.to_path_buf(), (seen, args.clone()));
    }
    args
}

#[cfg(test)]
mod tests {
    use super::for_dir;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn a_changed_config_is_read_again() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path();
        git(repo, &["init", "-q"]);
        assert!(for_dir(repo).is_empty());
        assert!(for_dir(repo).is_empty());
        git(repo, &["config", "filter.evil.clean", "touch /tmp/pwned"]);
        let args = for_dir(repo);
        assert!(args.contains(&"filter.evil.clean=".to_string()), "{args:?}");
        git(repo, &["config", "--unset", "filter.evil.clean"]);
        git(repo, &["config", "diff.tool.textconv", "x"]);
        let args = for_dir(repo);
        assert!(
            !args.contains(&"filter.evil.clean=".to_string()),
            "{args:?}"
        );
        assert!(
            args.contains(&"diff.tool.textconv=cat".to_string()),
            "{args:?}"
        );
    }

    #[test]
    fn an_included_config_is_never_cached() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path();
        git(repo, &["init", "-q"]);
        let extra = t.path().join("extra.cfg");
        std::fs::write(&extra, "").unwrap();
        git(repo, &["config", "include.path", extra.to_str().unwrap()]);
        assert!(for_dir(repo).is_empty());
        // Same size and, possibly, the same modification time: only a fresh
        // computation sees it.
        std::fs::write(&extra, "[merge \"m\"]\n\tdriver = x\n").unwrap();
        let args = for_dir(repo);
        assert!(
            args.contains(&"merge.m.driver=false".to_string()),
            "{args:?}"
        );
    }
}
