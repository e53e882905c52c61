//! The one installer decision: what plan, detect and verify expect is what
//! setup and the runner use; pins are honoured (or said plainly); a failed
//! bootstrap is recorded with its fallback; no setup command writes into the
//! tool cache. Real installs (PyPI, npm), real git, real sandbox.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::{AnalysisConfig, EnvironmentSetupConfig};
use dandori_env::installer::{self, Source};
use dandori_env::records::OverallStatus;
use dandori_env::setup::{self, SetupOptions};
use dandori_env::{activation, analyze, phase, tools};
use dandori_exec::{CommandSpec, Sandbox, SandboxKind, SandboxMode, SandboxOptions, run_command};

use super::{git_init, system_env};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn env_with(cache: &Path, bootstrap: bool) -> BTreeMap<String, String> {
    let mut env = system_env();
    env.insert(tools::TOOLS_DIR_VAR.into(), cache.display().to_string());
    env.insert(
        tools::TOOLS_BOOTSTRAP_VAR.into(),
        if bootstrap { "1" } else { "0" }.into(),
    );
    env
}

fn run_in(repo: &Path, env: &BTreeMap<String, String>, args: &[&str]) -> (bool, String, String) {
    let spec = CommandSpec::program(args[0], args[1..].iter().map(|a| a.to_string()), repo)
        .env(env.clone());
    let o = run_command(&spec).unwrap();
    (o.success(), o.stdout_tail, o.stderr_tail)
}

/// A plain Python package with an empty tool cache and no uv on PATH: what
/// `dandori plan`, `env detect`, `env verify` and MCP `env_detect` expect
/// (uv, from the bootstrap) is what `env setup` runs after the bootstrap.
#[test]
fn plan_and_setup_pick_the_same_installer_from_an_empty_tool_cache() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &[
            ("requirements.txt", "iniconfig\n"),
            ("app.py", "print(1)\n"),
        ],
    );
    git_init(repo.path());
    let env = env_with(cache.path(), true);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let expected = phase::select_expected(&a, None, &env);
    let (selected, bootstrap) = phase::select_with_bootstrap(&a, None, &env, &|_| {}).unwrap();
    assert_eq!(expected.setup_commands, selected.setup_commands);
    assert!(
        selected.setup_commands[0].starts_with("uv venv"),
        "{:?}",
        selected.setup_commands
    );
    let b = bootstrap.unwrap();
    assert_eq!(
        (b.tool.as_str(), b.version.as_str(), b.status.as_str()),
        ("uv", installer::UV_VERSION, "installed"),
        "{b:#?}"
    );
    assert!(
        b.commands
            .iter()
            .any(|c| c.contains(&format!("uv=={}", installer::UV_VERSION))
                && c.contains("--only-binary")),
        "{:?}",
        b.commands
    );
    // The second decision finds it in the cache: the same commands again.
    let (again, b2) = phase::select_with_bootstrap(&a, None, &env, &|_| {}).unwrap();
    assert_eq!(again.setup_commands, selected.setup_commands);
    assert_eq!(b2.unwrap().status, "cached");
}

/// The bootstrap cannot write its cache (a file where a directory should
/// be): the decision's fallback (pip) is used, and setup.json says why.
#[test]
fn a_failed_bootstrap_is_recorded_with_the_fallback_it_used() {
    let repo = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let blocker = scratch.path().join("not-a-directory");
    std::fs::write(&blocker, "").unwrap();
    write(
        repo.path(),
        &[("requirements.txt", ""), ("app.py", "print(1)\n")],
    );
    git_init(repo.path());
    let env = env_with(&blocker.join("tools"), true);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let (selected, bootstrap) = phase::select_with_bootstrap(&a, None, &env, &|_| {}).unwrap();
    let b = bootstrap.unwrap();
    assert_eq!(b.status, "failed", "{b:#?}");
    assert!(
        b.error.as_deref().unwrap_or("").contains("not-a-directory"),
        "{b:#?}"
    );
    assert!(
        b.fallback.as_deref().unwrap_or("").contains("pip"),
        "{b:#?}"
    );
    assert!(
        !selected.setup_commands.iter().any(|c| c.starts_with("uv ")),
        "{:?}",
        selected.setup_commands
    );
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = tools::with_tools_on_path(&env);
    opts.tool_bootstrap = Some(b);
    let out = setup::run(&selected, &opts).unwrap();
    assert_eq!(out.overall_status, OverallStatus::Success, "{:#?}", out);
    let text =
        std::fs::read_to_string(opts.record_dir.join(dandori_env::records::SETUP_FILE)).unwrap();
    let record: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(record["tool_bootstrap"]["status"], "failed", "{record:#}");
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("the bootstrap failed")),
        "{:?}",
        out.warnings
    );
    // dandori's own records are ignored by git (and by the tools that list
    // files through it).
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/.dandori/"), "{exclude}");
}

/// A run whose plan assumed uv (the plan's selection carries `root`) while
/// the bootstrap fails at run time: the runner's environment phase generates
/// the commands again for what is there, and records why.
#[test]
fn the_runner_regenerates_a_plans_commands_when_the_bootstrap_fails() {
    let repo = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &[("requirements.txt", ""), ("app.py", "print(1)\n")],
    );
    git_init(repo.path());
    let a = analyze(repo.path(), &AnalysisConfig::default());
    // Plan time: an empty, writable cache; the plan expects the bootstrapped uv.
    let planned = phase::select_expected(&a, None, &env_with(scratch.path(), true));
    assert!(planned.setup_commands[0].starts_with("uv venv"));
    let run_dir = scratch.path().join("runs/req/run1");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("planning.json"),
        serde_json::json!({ "selected_environment": planned }).to_string(),
    )
    .unwrap();
    // Run time: the cache cannot be written.
    let blocker = scratch.path().join("file");
    std::fs::write(&blocker, "").unwrap();
    let env = env_with(&blocker.join("tools"), true);
    let out = phase::prepare_run(
        &EnvironmentSetupConfig::default(),
        &env,
        repo.path(),
        &run_dir,
        None,
        &|_| {},
        None,
    )
    .unwrap();
    assert_eq!(out.status, OverallStatus::Success, "{}", out.message);
    let o = out.outcome.unwrap();
    assert_eq!(
        o.setup_result
            .tool_bootstrap
            .as_ref()
            .map(|b| b.status.as_str()),
        Some("failed")
    );
    assert!(
        !o.setup_result
            .commands_executed
            .iter()
            .any(|c| c.command.starts_with("uv ")),
        "{:#?}",
        o.setup_result.commands_executed
    );
}

fn pnpm_project(dir: &Path, version: &str) {
    write(
        dir,
        &[(
            "package.json",
            &format!(
                "{{\"name\": \"demo\", \"version\": \"1.0.0\", \"private\": true, \"packageManager\": \"pnpm@{version}\"}}\n"
            ),
        )],
    );
}

/// Two repositories pinning two pnpm releases share one tool cache: each runs
/// its own pin. With the bootstrap off, a third pin that the cache lacks is
/// not replaced silently: the decision and the launcher say so.
#[test]
fn pinned_pnpm_releases_are_honoured_per_repository() {
    let cache = tempfile::tempdir().unwrap();
    let env = env_with(cache.path(), true);
    let mut repos = Vec::new();
    for version in ["9.1.0", "10.18.3"] {
        let repo = tempfile::tempdir().unwrap();
        pnpm_project(repo.path(), version);
        let a = analyze(repo.path(), &AnalysisConfig::default());
        let (_, b) = phase::select_with_bootstrap(&a, None, &env, &|_| {}).unwrap();
        let b = b.unwrap();
        assert_eq!(
            (b.tool.as_str(), b.version.as_str(), b.status.as_str()),
            ("pnpm", version, "installed"),
            "{b:#?}"
        );
        assert!(
            b.pinned_by.as_deref().unwrap_or("").contains(version),
            "{b:#?}"
        );
        repos.push((repo, version));
    }
    for (repo, version) in &repos {
        let act = activation::env_for_with(repo.path(), &env);
        let (ok, out, err) = run_in(repo.path(), &act, &["pnpm", "--version"]);
        assert!(ok, "{err}");
        assert_eq!(out.trim(), *version, "{err}");
    }
    // The bootstrap off, a pin the cache lacks.
    let off = env_with(cache.path(), false);
    let repo = tempfile::tempdir().unwrap();
    pnpm_project(repo.path(), "10.0.0");
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let d = installer::decide(&a.ecosystems[0], &off).unwrap();
    assert!(matches!(d.source, Source::CachedOtherVersion(_)), "{d:#?}");
    let note = d.note().unwrap();
    assert!(
        note.contains("pnpm 10.0.0") && note.contains("bootstrap is off"),
        "{note}"
    );
    let (_, b) = phase::select_with_bootstrap(&a, None, &off, &|_| {}).unwrap();
    assert_eq!(b.unwrap().fallback, Some(note));
    let act = activation::env_for_with(repo.path(), &off);
    let (_, _, err) = run_in(repo.path(), &act, &["pnpm", "--version"]);
    assert!(
        err.contains("pnpm 10.0.0 (pinned by package.json) is not in dandori's tool cache"),
        "{err}"
    );
}

/// The setup sandbox makes the package caches under HOME writable, but not
/// dandori's tool cache inside them: a setup command cannot plant a program
/// that later runs of any repository would execute.
#[test]
fn setup_commands_cannot_write_into_the_tool_cache() {
    super::require_tool("bwrap");
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    let mut env = system_env();
    env.insert("HOME".into(), home.path().display().to_string());
    env.remove("XDG_CACHE_HOME");
    env.remove(tools::TOOLS_DIR_VAR);
    let cache_dir = home.path().join(".cache");
    std::fs::create_dir_all(&cache_dir).unwrap();
    let tools_dir = tools::tools_dir(&env).unwrap();
    assert!(tools_dir.starts_with(&cache_dir), "{}", tools_dir.display());
    let mut with_bwrap = env.clone();
    with_bwrap.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
    let sandbox = Sandbox::detect(&SandboxOptions::new(SandboxMode::Bubblewrap).env(&with_bwrap));
    assert_eq!(
        sandbox.status().kind,
        SandboxKind::Bubblewrap,
        "{:?}",
        sandbox.status()
    );
    let policy = tools::with_tools_read_only(
        dandori_exec::SandboxPolicy::environment_setup(repo.path(), &env),
        &env,
    );
    assert!(
        tools_dir.is_dir(),
        "the carve-out exists before any command runs"
    );
    let write = |target: &Path| {
        let spec = CommandSpec::program(
            "sh",
            [
                "-c".to_string(),
                format!("echo planted > '{}'", target.display()),
            ],
            repo.path(),
        )
        .env(env.clone())
        .sandbox(
            sandbox.clone(),
            policy.clone(),
            dandori_exec::Origin::Issued,
        );
        run_command(&spec).unwrap()
    };
    let o = write(&cache_dir.join("pip-probe"));
    assert!(
        o.success(),
        "the package caches stay writable: {}",
        o.stderr_tail
    );
    let o = write(&tools_dir.join("planted"));
    assert!(!o.success(), "wrote into the tool cache");
    assert!(!tools_dir.join("planted").exists());
}
