mod analysis;
mod as_of;
mod bootstrap;
mod classify;
mod installer;
mod lockfit;
mod plugins;
mod regenerate;
mod setup;
mod shapes;
mod tree;
mod verification;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh copy of a fixture in a temporary directory (setup writes into it).
pub fn copy_fixture(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&fixture(name), dir.path());
    dir
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// The process environment's PATH must hold `tool` (scripts/test.sh installs it).
pub fn require_tool(tool: &str) {
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(
        dandori_exec::run::find_program(tool, &path, Path::new("/")).is_some(),
        "`{tool}` is not on PATH: run the tests through ./scripts/test.sh, which installs it into target/test-tools"
    );
}

/// A base environment whose PATH is only the system directories (no go, no uv).
pub fn system_env() -> BTreeMap<String, String> {
    let mut env = dandori_exec::run::base_env();
    env.insert("PATH".into(), "/usr/local/bin:/usr/bin:/bin".into());
    env
}

/// `system_env()` with a PATH that has no `tool` on it, whatever this machine
/// has installed; the PATH's directory lives as long as the returned guard.
pub fn env_without(tool: &str) -> (BTreeMap<String, String>, tempfile::TempDir) {
    let (path, guard) = dandori_test_support::tool_cache::path_without(tool);
    let mut env = system_env();
    env.insert("PATH".into(), path);
    (env, guard)
}

/// `git init` + one commit of everything in `dir`.
pub fn git_init(dir: &Path) {
    for args in [
        vec!["init", "-q"],
        vec!["add", "-A"],
        vec![
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(&args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}
