//! Git hardening: settings planted in a repository's config (as a model's
//! `run_command` could) never run through dandori's git, and `ConfigGuard`
//! reverts them.

use std::path::Path;
use std::process::Command;

use dandori_exec::git::{ConfigGuard, GlobalConfig, git_command};
use pretty_assertions::assert_eq;

fn plain_git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn hardened(dir: &Path, args: &[&str]) -> std::process::Output {
    git_command(dir, GlobalConfig::Keep)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn planted_hooks_filters_pagers_and_fsmonitor_never_run() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    plain_git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    let guard = ConfigGuard::capture(&repo).unwrap();
    let config_before = std::fs::read_to_string(repo.join(".git/config")).unwrap();

    let marker = |name: &str| dir.path().join(name);
    let touch = |name: &str| format!("touch {}", marker(name).display());
    // What a hostile `run_command` plants.
    let hooks = repo.join("evil-hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-commit");
    std::fs::write(&hook, format!("#!/bin/sh\n{}\n", touch("hook"))).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    plain_git(
        &repo,
        &["config", "core.hooksPath", &hooks.display().to_string()],
    );
    plain_git(&repo, &["config", "filter.x.clean", &touch("clean")]);
    plain_git(&repo, &["config", "filter.x.smudge", &touch("smudge")]);
    plain_git(&repo, &["config", "filter.x.required", "true"]);
    plain_git(&repo, &["config", "core.fsmonitor", &touch("fsmonitor")]);
    plain_git(&repo, &["config", "core.pager", &touch("pager")]);
    plain_git(&repo, &["config", "diff.x.textconv", &touch("textconv")]);
    plain_git(
        &repo,
        &["config", "alias.st", &format!("!{}", touch("alias"))],
    );
    std::fs::write(repo.join(".gitattributes"), "*.txt filter=x diff=x\n").unwrap();
    let git_hook = repo.join(".git/hooks/post-commit");
    std::fs::write(&git_hook, format!("#!/bin/sh\n{}\n", touch("githook"))).unwrap();
    std::fs::set_permissions(&git_hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    // dandori's own git: add, commit, diff, status, log with a pager.
    for args in [
        &["add", "-A"][..],
        &["commit", "-q", "-m", "x"],
        &["diff", "HEAD~0"],
        &["status"],
        &["log", "-p", "-1"],
        &["checkout", "--", "a.txt"],
    ] {
        let out = hardened(&repo, args);
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for m in [
        "hook",
        "clean",
        "smudge",
        "fsmonitor",
        "pager",
        "textconv",
        "alias",
        "githook",
    ] {
        assert!(!marker(m).exists(), "{m} ran");
    }

    // The guard reverts the config and removes the planted hook.
    let changed = guard.restore().unwrap();
    let paths: Vec<String> = changed
        .iter()
        .map(|t| {
            format!(
                "{} {}",
                t.path.file_name().unwrap().to_string_lossy(),
                t.change
            )
        })
        .collect();
    assert_eq!(paths, vec!["config modified", "post-commit created"]);
    assert_eq!(
        std::fs::read_to_string(repo.join(".git/config")).unwrap(),
        config_before
    );
    assert!(!git_hook.exists());
    assert_eq!(guard.restore().unwrap(), vec![]);
}
