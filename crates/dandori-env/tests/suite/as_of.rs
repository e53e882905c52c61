//! `execution.resolve_as_of`: a Python project without a lock installs what
//! was published by its base commit's date (the versions it was developed and
//! tested with), falls back to today's index when nothing then satisfied it,
//! and `now` resolves against today's. Real uv against an index on 127.0.0.1
//! that serves PyPI's JSON API with upload times.

use std::path::Path;

use dandori_env::records::OverallStatus;

use super::lockfit::{Index, index_env, setup_in};

/// The version of `dated` the setup installed into the project's `.venv`.
fn installed(repo: &Path) -> String {
    let out = std::process::Command::new(repo.join(".venv/bin/python"))
        .args(["-c", "import dated; print(dated.VERSION)"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A repository whose one commit is dated 2024-06-01, requiring `requirement`.
fn repo_of(requirement: &str) -> tempfile::TempDir {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("requirements.txt"),
        format!("{requirement}\n"),
    )
    .unwrap();
    std::fs::write(repo.path().join("app.py"), "import dated\n").unwrap();
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &["commit", "-qm", "init"],
    ] {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .env("GIT_AUTHOR_DATE", "2024-06-01T12:00:00Z")
            .env("GIT_COMMITTER_DATE", "2024-06-01T12:00:00Z")
            .current_dir(repo.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
    repo
}

fn index(tmp: &Path) -> Index {
    let index = Index::new(&tmp.join("index"));
    index.publish_dated(
        "dated",
        &[
            ("1.0", "2023-01-10T00:00:00Z"),
            ("2.0", "2024-05-20T00:00:00Z"),
            ("3.0", "2025-09-01T00:00:00Z"),
        ],
    );
    index
}

#[test]
fn an_unlocked_install_gets_what_was_published_by_the_base_commits_date() {
    let tmp = tempfile::tempdir().unwrap();
    let index = index(tmp.path());
    let env = index_env(&index, tmp.path());
    let repo = repo_of("dated");
    let (_, out) = setup_in(repo.path(), &env, &["uv", "python3"]);
    assert_eq!(out.overall_status, OverallStatus::Success, "{out:#?}");
    assert_eq!(installed(repo.path()), "2.0");
    let date = out.setup_result.resolved_as_of.as_deref().unwrap();
    assert!(date.starts_with("2024-06-01T12:00:00"), "{date}");
}

#[test]
fn a_requirement_newer_than_the_commit_falls_back_to_todays_index() {
    let tmp = tempfile::tempdir().unwrap();
    let index = index(tmp.path());
    let env = index_env(&index, tmp.path());
    let repo = repo_of("dated>=3");
    let (_, out) = setup_in(repo.path(), &env, &["uv", "python3"]);
    assert_eq!(out.overall_status, OverallStatus::Success, "{out:#?}");
    assert_eq!(installed(repo.path()), "3.0");
    assert_eq!(out.setup_result.resolved_as_of, None);
    assert!(
        out.setup_result
            .warnings
            .iter()
            .any(|w| w.contains("resolved with today's index") && w.contains("No solution found")),
        "{:?}",
        out.setup_result.warnings
    );
}

#[test]
fn resolve_as_of_now_takes_todays_index() {
    let tmp = tempfile::tempdir().unwrap();
    let index = index(tmp.path());
    let env = index_env(&index, tmp.path());
    let repo = repo_of("dated");
    let a = dandori_env::analyze(repo.path(), &dandori_config::AnalysisConfig::default());
    let sel = dandori_env::select_environment_with(
        &a,
        None,
        &dandori_env::Toolchain::with(&["uv", "python3"]),
    );
    let mut opts = dandori_env::setup::SetupOptions::new(repo.path());
    opts.base_env = env;
    opts.config.execution.resolve_as_of = dandori_config::ResolveAsOf::Now;
    let out = dandori_env::setup::run(&sel, &opts).unwrap();
    assert_eq!(out.overall_status, OverallStatus::Success, "{out:#?}");
    assert_eq!(installed(repo.path()), "3.0");
    assert_eq!(out.setup_result.resolved_as_of, None);
}
