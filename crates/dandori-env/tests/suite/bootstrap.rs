//! Real installs (PyPI, npm): dev groups without uv or poetry, the editable
//! install fallback, the uv bootstrap into the tool cache, yarn 1 and pnpm
//! without corepack. The tool cache is always a temporary directory.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::AnalysisConfig;
use dandori_env::records::OverallStatus;
use dandori_env::setup::{self, INSTALL_RUNG_FALLBACK, SetupOptions};
use dandori_env::{Toolchain, activation, analyze, phase, select_environment_with, tools};
use dandori_exec::{CommandSpec, Sandbox, SandboxKind, SandboxMode, SandboxOptions, run_command};

use super::{git_init, system_env};

fn write(dir: &Path, files: &[(&str, &str)]) {
    for (p, text) in files {
        let path = dir.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// The system PATH (no uv, no poetry) and a tool cache in `cache`.
fn env_with_cache(cache: &Path, bootstrap: bool) -> BTreeMap<String, String> {
    let mut env = system_env();
    env.insert(tools::TOOLS_DIR_VAR.into(), cache.display().to_string());
    env.insert(
        tools::TOOLS_BOOTSTRAP_VAR.into(),
        if bootstrap { "1" } else { "0" }.into(),
    );
    env
}

fn run_in(
    repo: &Path,
    env: &BTreeMap<String, String>,
    program: &str,
    args: &[&str],
) -> (bool, String) {
    let spec =
        CommandSpec::program(program, args.iter().map(|a| a.to_string()), repo).env(env.clone());
    let o = run_command(&spec).unwrap();
    (o.success(), format!("{}{}", o.stdout_tail, o.stderr_tail))
}

/// A project with PEP 735 groups (one including another), a docs group that must
/// stay out, and tests that import a test-group package.
fn grouped_project(dir: &Path) {
    write(
        dir,
        &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
                 [project]\nname = \"demo\"\nversion = \"0.1.0\"\ndependencies = []\n\n\
                 [dependency-groups]\nbase = [\"pluggy>=1\"]\ntest = [{include-group = \"base\"}, \"iniconfig>=1\"]\n\
                 docs = [\"this-package-does-not-exist-dandori\"]\n",
            ),
            ("demo/__init__.py", "VALUE = 1\n"),
            (
                "tests/test_demo.py",
                "import demo\n\ndef test_value():\n    assert demo.VALUE == 1\n",
            ),
        ],
    );
    git_init(dir);
}

/// Runs the setup of `sel` with `env`: it must succeed.
fn setup_succeeds(
    repo: &Path,
    sel: &dandori_plan::SelectedEnvironment,
    env: &BTreeMap<String, String>,
) -> dandori_env::setup::SetupOutcome {
    let mut opts = SetupOptions::new(repo);
    opts.base_env = env.clone();
    let out = setup::run(sel, &opts).unwrap();
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?}",
        out.errors
    );
    out
}

/// The test group (with its included group) and the project import in `act`.
fn groups_are_importable(repo: &Path, act: &BTreeMap<String, String>) {
    let (ok, text) = run_in(
        repo,
        act,
        "python",
        &["-c", "import iniconfig, pluggy, demo; print('OK')"],
    );
    assert!(ok, "{text}");
}

/// The install lines actually run, in order.
fn installs(out: &dandori_env::setup::SetupOutcome) -> Vec<(String, Option<i32>)> {
    out.setup_result
        .commands_executed
        .iter()
        .filter(|c| c.command.contains(" install "))
        .map(|c| (c.command.clone(), c.exit_code))
        .collect()
}

/// Without uv, with the pip that ships with the system Python (older than 25.1
/// here): `pip install --group` is refused and the explicit list is the next rung.
#[test]
fn dependency_groups_are_installed_with_an_older_pip_through_the_explicit_list() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    grouped_project(repo.path());
    let env = env_with_cache(cache.path(), false);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
    let install = sel.setup_commands.last().unwrap().clone();
    assert_eq!(
        install, ".venv/bin/python -m pip install -e . --group test pytest",
        "docs stays out, the test group by name (pytest: the tests need it, nothing declares it)"
    );
    let out = setup_succeeds(repo.path(), &sel, &env);
    assert_eq!(
        out.setup_result.install_rung.as_deref(),
        Some(setup::INSTALL_RUNG_EDITABLE)
    );
    let act = activation::env_for_with(repo.path(), &env);
    let (_, pip) = run_in(repo.path(), &act, "python", &["-m", "pip", "--version"]);
    let ran = installs(&out);
    if pip_knows_groups(&pip) {
        // A newer system pip: the first line did it.
        assert_eq!(ran.len(), 1, "{ran:?}");
    } else {
        assert_eq!(ran.len(), 2, "{ran:?}");
        assert_ne!(ran[0].1, Some(0), "{ran:?}");
        assert!(
            ran[1].0.contains("'iniconfig>=1'") && ran[1].0.contains("'pluggy>=1'"),
            "the explicit list expands include-group: {ran:?}"
        );
        assert!(
            !ran[1].0.contains("does-not-exist"),
            "docs group stays out: {ran:?}"
        );
        assert_eq!(ran[1].1, Some(0), "{ran:?}");
    }
    groups_are_importable(repo.path(), &act);
    // The egg-info setuptools left behind is excluded: `git status` stays clean.
    let (_, status) = run_in(repo.path(), &env, "git", &["status", "--porcelain"]);
    assert_eq!(status.trim(), "", "setup dirtied the work tree");
}

/// `pip X.Y…` of `pip --version` is 25.1 or newer.
fn pip_knows_groups(version_line: &str) -> bool {
    let v: Vec<u32> = version_line
        .split_whitespace()
        .nth(1)
        .unwrap_or("0")
        .split('.')
        .take(2)
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    (
        v.first().copied().unwrap_or(0),
        v.get(1).copied().unwrap_or(0),
    ) >= (25, 1)
}

/// pip ≥ 25.1 in the environment: the groups are installed by name, in one
/// command, with `include-group` resolved by pip.
#[test]
fn dependency_groups_are_installed_by_name_with_pip_25_1() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    grouped_project(repo.path());
    let env = env_with_cache(cache.path(), false);
    // The venv the setup reuses, with a pip that knows `--group`.
    let (ok, text) = run_in(repo.path(), &env, "python3", &["-m", "venv", ".venv"]);
    assert!(ok, "{text}");
    let (ok, text) = run_in(
        repo.path(),
        &env,
        ".venv/bin/python",
        &["-m", "pip", "install", "-q", "pip>=25.1"],
    );
    assert!(ok, "{text}");
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
    let out = setup_succeeds(repo.path(), &sel, &env);
    let ran = installs(&out);
    assert_eq!(
        ran,
        vec![(
            ".venv/bin/python -m pip install -e . --group test pytest".to_string(),
            Some(0)
        )]
    );
    let act = activation::env_for_with(repo.path(), &env);
    groups_are_importable(repo.path(), &act);
}

#[test]
fn a_flat_layout_falls_back_to_dependencies_and_a_source_path() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    // setuptools refuses `pip install -e .`: two top-level packages in a flat layout.
    write(
        repo.path(),
        &[
            (
                "pyproject.toml",
                "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n\
                 [project]\nname = \"todo\"\nversion = \"0.1.0\"\ndependencies = [\"iniconfig\"]\n",
            ),
            ("todo/__init__.py", "NAME = 'todo'\n"),
            ("requests/__init__.py", ""),
            ("requests/r1.py", "X = 1\n"),
        ],
    );
    git_init(repo.path());
    let env = env_with_cache(cache.path(), false);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
    let lines = RefCell::new(Vec::new());
    let say = |s: &str| lines.borrow_mut().push(s.to_string());
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = env.clone();
    opts.progress = Some(&say);
    let out = setup::run(&sel, &opts).unwrap();
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?}",
        out.setup_result
    );
    assert_eq!(
        out.setup_result.install_rung.as_deref(),
        Some(INSTALL_RUNG_FALLBACK)
    );
    assert!(
        lines.borrow().iter().any(|l| l.contains("falling back")),
        "{:?}",
        lines.borrow()
    );
    let act = activation::env_for_with(repo.path(), &env);
    let (ok, text) = run_in(
        Path::new("/"),
        &act,
        "python",
        &["-c", "import todo, iniconfig; print(todo.NAME)"],
    );
    assert!(ok && text.contains("todo"), "{text}");
}

#[test]
fn uv_is_bootstrapped_once_into_the_tool_cache() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &[
            ("requirements.txt", "iniconfig\n"),
            ("app.py", "import iniconfig\n"),
        ],
    );
    let env = env_with_cache(cache.path(), true);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let lines = RefCell::new(Vec::new());
    let say = |s: &str| lines.borrow_mut().push(s.to_string());
    let sel = phase::select_with_bootstrap(&a, None, &env, &say)
        .unwrap()
        .0;
    assert!(cache.path().join("bin/uv").exists());
    assert!(
        lines
            .borrow()
            .iter()
            .any(|l| l.contains("installing it once from PyPI")),
        "{:?}",
        lines.borrow()
    );
    assert!(
        sel.setup_commands[0].starts_with("uv venv"),
        "{:?}",
        sel.setup_commands
    );
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = tools::with_tools_on_path(&env);
    let out = setup::run(&sel, &opts).unwrap();
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?}",
        out.errors
    );
    // uv is on the PATH of `env exec` too.
    let act = activation::env_for_with(repo.path(), &env);
    let (ok, text) = run_in(repo.path(), &act, "uv", &["--version"]);
    assert!(ok && text.starts_with("uv "), "{text}");
    // Once: the second selection installs nothing.
    lines.borrow_mut().clear();
    phase::select_with_bootstrap(&a, None, &env, &say).unwrap();
    assert!(lines.borrow().is_empty(), "{:?}", lines.borrow());
}

fn node_bootstrap(files: &[(&str, &str)], tool: &str, expect_install: &str) {
    node_bootstrap_in(files, tool, expect_install, false);
}

/// `sandboxed`: the bootstrap and the setup run in bubblewrap (network on,
/// writes to the tool cache, the repository and the package caches only).
fn node_bootstrap_in(files: &[(&str, &str)], tool: &str, expect_install: &str, sandboxed: bool) {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(repo.path(), files);
    let env = env_with_cache(cache.path(), true);
    let sandbox = sandboxed.then(|| {
        let mut with_bwrap = env.clone();
        with_bwrap.insert("PATH".into(), std::env::var("PATH").unwrap_or_default());
        let s = Sandbox::detect(&SandboxOptions::new(SandboxMode::Bubblewrap).env(&with_bwrap));
        assert_eq!(s.status().kind, SandboxKind::Bubblewrap, "{:?}", s.status());
        s
    });
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let lines = RefCell::new(Vec::new());
    let say = |s: &str| lines.borrow_mut().push(s.to_string());
    let sel = phase::select_with_bootstrap(&a, None, &env, &say)
        .unwrap()
        .0;
    assert!(
        cache.path().join("bin").join(tool).exists(),
        "{:?}",
        lines.borrow()
    );
    assert_eq!(sel.setup_commands, vec![expect_install.to_string()]);
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = tools::with_tools_on_path(&env);
    opts.sandbox = sandbox;
    let out = setup::run(&sel, &opts).unwrap();
    assert!(
        !out.setup_result
            .commands_executed
            .iter()
            .any(|c| c.command.contains("corepack")),
        "corepack was not used"
    );
    assert_ne!(
        out.overall_status,
        OverallStatus::Failed,
        "{:#?}",
        out.setup_result
    );
    let act = activation::env_for_with(repo.path(), &env);
    let (ok, text) = run_in(repo.path(), &act, tool, &["--version"]);
    assert!(ok, "`{tool}` on the PATH of env exec: {text}");
}

#[test]
fn yarn_classic_is_bootstrapped_without_corepack() {
    node_bootstrap(
        &[
            (
                "package.json",
                "{\"name\": \"demo\", \"version\": \"1.0.0\", \"private\": true}\n",
            ),
            (
                "yarn.lock",
                "# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.\n# yarn lockfile v1\n\n\n",
            ),
        ],
        "yarn",
        "yarn install --frozen-lockfile",
    );
}

#[test]
fn pinned_pnpm_is_bootstrapped_without_corepack_inside_the_sandbox() {
    super::require_tool("bwrap");
    node_bootstrap_in(
        &[(
            "package.json",
            "{\"name\": \"demo\", \"version\": \"1.0.0\", \"private\": true, \"packageManager\": \"pnpm@9.1.0\"}\n",
        )],
        "pnpm",
        "pnpm install",
        true,
    );
}

/// yarn ≥ 2 pinned by `packageManager`, no release in the repository and no
/// corepack that can fetch one: the release comes from npm into the tool cache,
/// and the cache's `yarn` runs it for this project (yarn 1 elsewhere).
#[test]
fn pinned_yarn_berry_is_bootstrapped_without_corepack() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &[
            (
                "package.json",
                "{\"name\": \"demo\", \"version\": \"1.0.0\", \"private\": true, \"packageManager\": \"yarn@4.10.0\"}\n",
            ),
            (".yarnrc.yml", "nodeLinker: node-modules\n"),
        ],
    );
    let env = env_with_cache(cache.path(), true);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let lines = RefCell::new(Vec::new());
    let say = |s: &str| lines.borrow_mut().push(s.to_string());
    let sel = phase::select_with_bootstrap(&a, None, &env, &say)
        .unwrap()
        .0;
    assert!(
        cache
            .path()
            .join("@yarnpkg_cli-dist@4.10.0/node_modules/@yarnpkg/cli-dist/bin/yarn.js")
            .is_file(),
        "{:?}",
        lines.borrow()
    );
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = tools::with_tools_on_path(&env);
    // corepack, when present, cannot reach its download host everywhere: no long waits.
    opts.backoff_base = std::time::Duration::from_millis(10);
    let out = setup::run(&sel, &opts).unwrap();
    assert!(
        matches!(
            out.overall_status,
            OverallStatus::Success | OverallStatus::PartialSuccess
        ),
        "{:#?}",
        out.setup_result
    );
    let act = activation::env_for_with(repo.path(), &env);
    let (ok, text) = run_in(repo.path(), &act, "yarn", &["--version"]);
    assert!(
        ok && text.trim().starts_with("4.10."),
        "the pinned release (its latest patch: 4.10.0 never reached npm) runs: {text}"
    );
    // A project without the pin gets the cache's yarn 1.
    let other = tempfile::tempdir().unwrap();
    write(other.path(), &[("package.json", "{\"name\": \"o\"}\n")]);
    let (ok, text) = run_in(other.path(), &act, "yarn", &["--version"]);
    assert!(
        ok && text.trim().starts_with("1."),
        "yarn 1 elsewhere: {text}"
    );
}

/// yarn 1 refuses a dependency whose `engines` excludes this node (npm only
/// warns): the last rung of the install ignores engines, and the setup succeeds.
#[test]
fn yarn_classic_installs_past_a_dependency_engines_range() {
    let repo = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    write(
        repo.path(),
        &[
            (
                "package.json",
                r#"{"name": "app", "version": "1.0.0", "private": true, "devDependencies": {"release-tool": "file:./release-tool"}}"#,
            ),
            (
                "release-tool/package.json",
                r#"{"name": "release-tool", "version": "1.0.0", "engines": {"node": ">=99"}}"#,
            ),
            (
                "yarn.lock",
                "# yarn lockfile v1\n\n\n\"release-tool@file:./release-tool\":\n  version \"1.0.0\"\n",
            ),
            ("index.js", "module.exports = 1;\n"),
        ],
    );
    let env = env_with_cache(cache.path(), true);
    let a = analyze(repo.path(), &AnalysisConfig::default());
    let sel = phase::select_with_bootstrap(&a, None, &env, &|_: &str| {})
        .unwrap()
        .0;
    assert_eq!(sel.setup_commands, vec!["yarn install --frozen-lockfile"]);
    let mut opts = SetupOptions::new(repo.path());
    opts.base_env = tools::with_tools_on_path(&env);
    let out = setup::run(&sel, &opts).unwrap();
    let ran: Vec<(String, Option<i32>)> = out
        .setup_result
        .commands_executed
        .iter()
        .map(|c| (c.command.clone(), c.exit_code))
        .collect();
    assert_eq!(
        ran,
        vec![
            ("yarn install --frozen-lockfile".to_string(), Some(1)),
            (
                "yarn install --frozen-lockfile --ignore-engines".to_string(),
                Some(0)
            ),
        ]
    );
    assert_eq!(
        out.overall_status,
        OverallStatus::Success,
        "{:#?} {:#?}",
        out.warnings,
        out.verification_result
    );
    assert!(
        repo.path()
            .join("node_modules/release-tool/package.json")
            .exists()
    );
}
