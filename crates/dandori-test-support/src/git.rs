//! `TempGitRepo`: a real git repository in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A git repository in a temporary directory, with a local user configured so commits
/// work on machines without a global git identity. Removed on drop.
pub struct TempGitRepo {
    dir: tempfile::TempDir,
}

impl TempGitRepo {
    /// `git init` (branch `main`) with `user.name` / `user.email` set locally.
    pub fn new() -> TempGitRepo {
        let dir = match tempfile::Builder::new().prefix("dandori-repo-").tempdir() {
            Ok(dir) => dir,
            Err(err) => panic!("creating a temporary directory: {err}"),
        };
        let repo = TempGitRepo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.git(&["config", "user.name", "dandori-test"]);
        repo.git(&["config", "user.email", "dandori-test@example.invalid"]);
        repo.git(&["config", "commit.gpgsign", "false"]);
        repo
    }

    /// A repository with these files committed as "initial".
    pub fn with_files(files: &[(&str, &str)]) -> TempGitRepo {
        let repo = TempGitRepo::new();
        for (path, text) in files {
            repo.write(path, text);
        }
        repo.commit_all("initial");
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Write a file (relative `/` path), creating parent directories.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(rel);
        if let Some(parent) = path.parent()
            && let Err(err) = std::fs::create_dir_all(parent)
        {
            panic!("creating {}: {err}", parent.display());
        }
        if let Err(err) = std::fs::write(&path, text) {
            panic!("writing {}: {err}", path.display());
        }
        path
    }

    pub fn read(&self, rel: &str) -> String {
        let path = self.dir.path().join(rel);
        match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(err) => panic!("reading {}: {err}", path.display()),
        }
    }

    /// `git add -A && git commit -m MESSAGE`; returns the new HEAD commit id.
    pub fn commit_all(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self.head()
    }

    pub fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }

    /// Run git in the repository with a fixed environment; panics on failure with
    /// git's stderr. Returns stdout.
    pub fn git(&self, args: &[&str]) -> String {
        let output = Command::new("git")
            .args(args)
            .current_dir(self.dir.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(Stdio::null())
            .output();
        match output {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
            Ok(out) => panic!(
                "git {} failed in {}: {}",
                args.join(" "),
                self.dir.path().display(),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(err) => panic!("running git {}: {err}", args.join(" ")),
        }
    }
}

impl Default for TempGitRepo {
    fn default() -> Self {
        TempGitRepo::new()
    }
}

/// Runs git in `dir` (the caller's environment) and returns stdout; panics with
/// git's stderr when it fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("running git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
