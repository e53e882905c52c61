//! Repository shapes met on repositories nobody tried before (issue 11,
//! session 4): how their tests run, which requirement files count, which
//! version checks are advisory, what the environment of commands carries.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::AnalysisConfig;
use dandori_env::selection::Toolchain;
use dandori_env::{analyze, select_environment_with};
use pretty_assertions::assert_eq;

/// A repository made of `files` in a temporary directory.
fn repo(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (p, text) in files {
        let path = dir.path().join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

fn selected(root: &Path) -> dandori_plan::SelectedEnvironment {
    let a = analyze(root, &AnalysisConfig::default());
    select_environment_with(
        &a,
        None,
        &Toolchain::with(&["uv", "python3", "node", "npm"]),
    )
}

/// The detected test command; it must pass the default command policy (the
/// runner's unit-test steps run it).
fn test_command(files: &[(&str, &str)]) -> Option<String> {
    let dir = repo(files);
    let cmd = selected(dir.path())
        .extra
        .get("test_command")
        .and_then(|v| v.as_str())
        .map(str::to_string);
    if let Some(c) = &cmd {
        let verdict = dandori_exec::CommandPolicy::default().check(c);
        assert!(verdict.is_ok(), "`{c}` refused: {verdict:?}");
    }
    cmd
}

/// The generated `pip install` line of the repository at `root`.
fn pip_install_line(root: &Path) -> String {
    selected(root)
        .setup_commands
        .into_iter()
        .find(|c| c.contains("pip install"))
        .unwrap()
}

const SETUP_CFG: &str = "[metadata]\nname = demo\n\n[options]\npackages = find:\n";
const UNITTEST: &str = "import unittest\n\nclass T(unittest.TestCase):\n    def test_x(self):\n        self.assertTrue(True)\n";

#[test]
fn tox_commands_name_the_test_command() {
    let cases: &[(&str, &str)] = &[
        (
            "[tox]\nenvlist = py311\n\n[testenv]\ncommands = {envpython} -m unittest -v {posargs}\n",
            "python -m unittest -v",
        ),
        (
            "[testenv]\ndeps = -rrequirements-dev.txt\ncommands =\n    coverage erase\n    coverage run -m pytest {posargs:tests}\n    coverage report\n",
            "python -m pytest",
        ),
        (
            "[testenv]\ncommands =\n    pytest tests\n",
            "python -m pytest tests",
        ),
        (
            "[testenv]\ncommands = coverage run --parallel-mode --source demo ./runtests.py --testrunner x.Runner {posargs}\n\n[testenv:lint]\ncommands = flake8\n",
            "python runtests.py",
        ),
        (
            "[testenv]\ncommands =\n    coverage run --source={envsitepackagesdir}/demo -m pytest tests --color=yes\n",
            "python -m pytest tests",
        ),
    ];
    for (tox, want) in cases {
        let got = test_command(&[
            ("setup.cfg", SETUP_CFG),
            ("tox.ini", tox),
            ("runtests.py", "print('ok')\n"),
            ("tests/test_a.py", UNITTEST),
        ]);
        assert_eq!(got.as_deref(), Some(*want), "{tox}");
    }
    // Commands that run no tests (linters, `setup.py test`) name nothing: the
    // files decide.
    let got = test_command(&[
        ("setup.cfg", SETUP_CFG),
        (
            "tox.ini",
            "[testenv]\ncommands =\n    flake8 demo\n    python setup.py test\n",
        ),
        ("tests/__init__.py", ""),
        ("tests/test_a.py", UNITTEST),
    ]);
    assert_eq!(got.as_deref(), Some("python -m unittest discover"));
}

#[test]
fn test_files_decide_between_unittest_and_pytest() {
    // unittest test cases only, in a `tests/` folder that is no package.
    let got = test_command(&[("setup.cfg", SETUP_CFG), ("tests/test_a.py", UNITTEST)]);
    assert_eq!(got.as_deref(), Some("python -m unittest discover -s tests"));
    // Inside the package: discovery from the root finds them.
    let got = test_command(&[
        ("setup.cfg", SETUP_CFG),
        ("demo/__init__.py", ""),
        ("demo/tests/__init__.py", ""),
        ("demo/tests/test_a.py", UNITTEST),
    ]);
    assert_eq!(got.as_deref(), Some("python -m unittest discover"));
    // Bare test functions need pytest, declared or not (the install adds it).
    let dir = repo(&[
        ("setup.cfg", SETUP_CFG),
        ("tests/test_a.py", "def test_x():\n    assert 1\n"),
    ]);
    let sel = selected(dir.path());
    assert_eq!(
        sel.extra.get("test_command").and_then(|v| v.as_str()),
        Some("python -m pytest")
    );
    assert!(
        sel.setup_commands.iter().any(|c| c.contains(" pytest")),
        "{:?}",
        sel.setup_commands
    );
    // A conftest.py or pytest configuration means pytest even for unittest cases.
    let got = test_command(&[
        (
            "setup.cfg",
            &format!("{SETUP_CFG}\n[tool:pytest]\ntestpaths = tests\n"),
        ),
        ("tests/test_a.py", UNITTEST),
    ]);
    assert_eq!(got.as_deref(), Some("python -m pytest"));
    // Django: a runtests.py script, else manage.py test with Django declared.
    let got = test_command(&[
        ("setup.cfg", SETUP_CFG),
        ("runtests.py", "print('ok')\n"),
        ("tests/test_a.py", UNITTEST),
    ]);
    assert_eq!(got.as_deref(), Some("python runtests.py"));
    let got = test_command(&[
        ("requirements.txt", "Django>=4.2\n"),
        ("manage.py", "print('ok')\n"),
        ("app/tests.py", "from django.test import TestCase\n"),
    ]);
    assert_eq!(got.as_deref(), Some("python manage.py test"));
}

#[test]
fn requirement_files_of_other_python_versions_and_constraints() {
    let dir = repo(&[
        ("setup.cfg", SETUP_CFG),
        ("requirements-dev.txt", "pytest>=7\n"),
        ("requirements/test.txt", "hypothesis\n"),
        ("requirements/constraints.txt", "hypothesis<7\n"),
        ("requirements/3.3/requirements-dev.txt", "pytest==3.0\n"),
    ]);
    let install = pip_install_line(dir.path());
    assert!(install.contains("-r requirements-dev.txt"), "{install}");
    assert!(install.contains("-r requirements/test.txt"), "{install}");
    assert!(
        install.contains("-c requirements/constraints.txt"),
        "{install}"
    );
    assert!(!install.contains("requirements/3.3"), "{install}");
}

/// The shape of Flask 2.3's checkout: pip-compile-multi files per job under
/// `requirements/` (one of them the oldest supported pins), a tox matrix whose
/// `min:` and `dev:` factors belong to other environments, and example projects
/// of their own under `examples/` that depend on the package from the index.
#[test]
fn other_jobs_requirement_files_tox_factors_and_example_projects_stay_out() {
    let dir = repo(&[
        (
            "pyproject.toml",
            "[project]\nname = \"demo\"\ndependencies = [\"click>=8.0\"]\n\n[build-system]\nrequires = [\"setuptools\"]\n",
        ),
        ("src/demo/__init__.py", ""),
        ("tests/test_a.py", "def test_x():\n    assert 1\n"),
        ("requirements/tests.txt", "pytest==7.2.0\n"),
        ("requirements/tests-pallets-min.txt", "click==8.0.0\n"),
        ("requirements/dev.txt", "-r tests.txt\ntox==4.4.0\n"),
        ("requirements/docs.txt", "sphinx==6.1.0\n"),
        ("requirements/typing.txt", "mypy==1.0.0\n"),
        ("requirements/build.txt", "build==0.10.0\n"),
        (
            "tox.ini",
            "[testenv]\ndeps =\n    -r requirements/tests.txt\n    min: -r requirements/tests-pallets-min.txt\n    dev: https://example.org/click/main.tar.gz\n    py311: coverage\ncommands = pytest -v {posargs:tests}\n",
        ),
        (
            "examples/celery/pyproject.toml",
            "[project]\nname = \"flask-example-celery\"\ndependencies = [\"demo\", \"celery>=5.2.7\"]\n\n[project.optional-dependencies]\ntest = [\"pytest\"]\n",
        ),
        ("examples/celery/requirements.txt", "celery==5.2.7\n"),
    ]);
    let sel = selected(dir.path());
    let all = sel.setup_commands.join("\n");
    let install = pip_install_line(dir.path());
    for wanted in [
        "-r requirements/tests.txt",
        "-r requirements/dev.txt",
        "-e .",
    ] {
        assert!(install.contains(wanted), "{wanted}: {install}");
    }
    for unwanted in [
        "tests-pallets-min",
        "docs.txt",
        "typing.txt",
        "build.txt",
        "https",
        "celery",
        "examples",
        "[test]",
    ] {
        assert!(!all.contains(unwanted), "{unwanted}: {all}");
        let fallback = serde_json::to_string(&sel.extra).unwrap();
        assert!(!fallback.contains(unwanted), "{unwanted}: {fallback}");
    }
    // A Python-version factor is the plain run's: `py311: coverage` counts.
    assert!(install.contains("coverage"), "{install}");
    // The reason names the root's own files first.
    assert!(
        sel.reason.starts_with("pyproject.toml, tox.ini"),
        "{}",
        sel.reason
    );
}

#[test]
fn engines_node_is_an_advisory_check_and_nvmrc_a_required_one() {
    let optional = |files: &[(&str, &str)]| {
        let dir = repo(files);
        let sel = selected(dir.path());
        let opt: Vec<String> = sel
            .extra
            .get("optional_verification_commands")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        opt.iter().any(|c| c == "node --version")
    };
    assert!(optional(&[(
        "package.json",
        r#"{"name": "x", "engines": {"node": ">=22.12.0"}}"#
    )]));
    assert!(!optional(&[
        ("package.json", r#"{"name": "x"}"#),
        (".nvmrc", "22\n")
    ]));
}

#[test]
fn commands_never_let_pnpm_switch_its_own_release() {
    let dir = tempfile::tempdir().unwrap();
    let env =
        dandori_env::activation::environment(dir.path(), ".", &BTreeMap::new(), &BTreeMap::new());
    for k in dandori_env::activation::PNPM_SELF_SWITCH {
        if std::env::var_os(k).is_none() {
            assert_eq!(env.get(k).map(String::as_str), Some("false"), "{k}");
        }
    }
}

/// A Deno project (`deno.json`, no `package.json`) is Deno, not an npm install
/// without a manifest; without `deno` it is blocked at once.
#[test]
fn deno_projects_are_detected_and_blocked_without_deno() {
    use dandori_env::setup::{self, SetupOptions};
    let dir = repo(&[
        (
            "deno.json",
            "{\n  // tasks\n  \"imports\": {\"@std/assert\": \"jsr:@std/assert@^1.0.0\", \"chalk\": \"npm:chalk@5\"}\n}\n",
        ),
        ("mod.ts", "export const x = 1;\n"),
        ("mod.test.ts", "Deno.test('x', () => {});\n"),
    ]);
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let deno = a.ecosystems.iter().find(|e| e.name == "deno").unwrap();
    let deps: Vec<(&str, Option<&str>)> = deno
        .dependencies
        .iter()
        .map(|d| (d.name.as_str(), d.version_spec.as_deref()))
        .collect();
    assert_eq!(
        deps,
        vec![("@std/assert", Some("^1.0.0")), ("chalk", Some("5"))]
    );
    let sel = select_environment_with(&a, None, &Toolchain::with(&["node", "npm"]));
    assert_eq!(sel.name, "deno");
    assert_eq!(sel.setup_commands, vec!["deno install"]);
    assert_eq!(
        sel.extra.get("test_command").and_then(|v| v.as_str()),
        Some("deno test")
    );
    let mut opts = SetupOptions::new(dir.path());
    let mut env = BTreeMap::new();
    env.insert("PATH".to_string(), "/nonexistent".to_string());
    opts.base_env = env;
    let out = setup::run(&sel, &opts).unwrap();
    assert_eq!(
        out.overall_status,
        dandori_env::records::OverallStatus::Blocked
    );
    let b = out.setup_result.blocked.clone().unwrap();
    assert_eq!(b.code, dandori_env::records::ENV_TOOL_MISSING);
}

/// A `setup.py` requirement with a marker that quotes its own values
/// (`os_name == 'nt'`) is one requirement, its marker kept, not fragments.
#[test]
fn setup_py_requirements_keep_quoted_markers_whole() {
    let dir = repo(&[(
        "setup.py",
        "from setuptools import setup\nsetup(\n    name=\"demo\",\n    install_requires=[\"importlib_resources>=1.3 ; python_version < '3.9' and os_name == 'nt'\", 'attrs>=21'],\n    extras_require={'testing': [\"pytest ; python_version >= '3.8'\"]},\n)\n",
    )]);
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let deps: Vec<(&str, Option<&str>, Option<&str>)> = a.ecosystems[0]
        .dependencies
        .iter()
        .map(|d| {
            (
                d.name.as_str(),
                d.version_spec.as_deref(),
                d.marker.as_deref(),
            )
        })
        .collect();
    assert_eq!(
        deps,
        vec![
            (
                "importlib_resources",
                Some(">=1.3"),
                Some("python_version < '3.9' and os_name == 'nt'")
            ),
            ("attrs", Some(">=21"), None),
            ("pytest", None, Some("python_version >= '3.8'")),
        ]
    );
}

/// A `test` script that lints first runs without its linters; a tests-only
/// script wins; anything else stays `<pm> test`.
#[test]
fn node_tests_run_without_the_linters_in_front() {
    let cases: &[(&str, &str)] = &[
        (
            r#"{"scripts": {"test": "xo && npm run build && ava"}}"#,
            "npm run build && ava",
        ),
        (
            r#"{"scripts": {"pretest": "npm run lint", "test": "npm run tests-only", "tests-only": "nyc tape 'test/**/*.js'", "lint": "eslint ."}}"#,
            "npm run tests-only",
        ),
        (
            r#"{"scripts": {"test": "npm run --silent lint && jest", "lint": "eslint ."}}"#,
            "jest",
        ),
        (r#"{"scripts": {"test": "xo && tsd"}}"#, "npm test"),
        // `tsd` is not a command the policy runs: the whole script instead.
        (r#"{"scripts": {"test": "xo && ava && tsd"}}"#, "npm test"),
        (r#"{"scripts": {"test": "tap"}}"#, "npm test"),
        (
            r#"{"scripts": {"test": "eslint . || true; mocha"}}"#,
            "npm test",
        ),
    ];
    for (manifest, want) in cases {
        let got = test_command(&[("package.json", manifest)]);
        assert_eq!(got.as_deref(), Some(*want), "{manifest}");
    }
}

/// yarn berry installs with the installed yarn (dandori's tool-cache launcher
/// runs the pinned release) and corepack as the fallback (issue 22: corepack
/// downloads from repo.yarnpkg.com, which may be unreachable); its check runs
/// the installed yarn, the one `env exec -- yarn …` runs.
#[test]
fn yarn_berry_is_checked_with_the_yarn_that_env_exec_runs() {
    let dir = repo(&[
        (
            "package.json",
            r#"{"name": "x", "packageManager": "yarn@4.5.1"}"#,
        ),
        ("yarn.lock", "__metadata:\n  version: 8\n"),
        (".yarnrc.yml", "nodeLinker: node-modules\n"),
    ]);
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let sel = select_environment_with(
        &a,
        None,
        &Toolchain::with(&["node", "npm", "corepack", "yarn"]),
    );
    assert_eq!(sel.setup_commands, vec!["yarn install --immutable"]);
    assert_eq!(
        sel.extra["fallback_commands"]["yarn install --immutable"],
        serde_json::json!(["COREPACK_ENABLE_DOWNLOAD_PROMPT=0 corepack yarn install --immutable"])
    );
    assert!(
        sel.verification_commands
            .contains(&"yarn --version".to_string()),
        "{:?}",
        sel.verification_commands
    );
    let without_yarn =
        select_environment_with(&a, None, &Toolchain::with(&["node", "npm", "corepack"]));
    assert!(
        without_yarn
            .verification_commands
            .contains(&"COREPACK_ENABLE_DOWNLOAD_PROMPT=0 corepack yarn --version".to_string()),
        "{:?}",
        without_yarn.verification_commands
    );
}

/// A fallback rung that is the failed command with more options (yarn 1's
/// `--ignore-engines`) meets the same unreachable registry: it is not tried
/// then, so an unreachable registry is blocked as quickly as before; after any
/// other failure it is.
#[test]
fn a_rung_with_more_options_is_not_tried_against_an_unreachable_registry() {
    use dandori_env::setup::{self, SetupOptions};
    let fail = |message: &str| {
        format!("python3 -c \"import sys; sys.stderr.write('{message}'); sys.exit(1)\"")
    };
    for (message, rung_tried) in [
        ("connect ECONNREFUSED 10.0.0.1:443", false),
        ("some other failure", true),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let a = analyze(dir.path(), &AnalysisConfig::default());
        let mut sel = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
        let line = fail(message);
        let rung = format!("{line} --ignore-engines");
        sel.setup_commands = vec![line.clone()];
        sel.verification_commands.clear();
        sel.extra.insert(
            dandori_env::selection::FALLBACK_KEY.into(),
            serde_json::json!({ line.clone(): [rung.clone()] }),
        );
        let mut opts = SetupOptions::new(dir.path());
        opts.config.execution.max_retries = 0;
        opts.backoff_base = std::time::Duration::from_millis(1);
        let out = setup::run(&sel, &opts).unwrap();
        let ran: Vec<&str> = out
            .setup_result
            .commands_executed
            .iter()
            .map(|c| c.command.as_str())
            .collect();
        assert_eq!(
            ran.contains(&rung.as_str()),
            rung_tried,
            "{message}: {ran:?}"
        );
    }
}

/// A noxfile's test sessions declare what the tests need
/// (`session.install("mock", "pytest")`, `-r` files); the install carries it.
#[test]
fn noxfile_test_sessions_declare_test_dependencies() {
    let dir = repo(&[
        (
            "setup.py",
            "from setuptools import setup\nsetup(name=\"demo\")\n",
        ),
        (
            "noxfile.py",
            "import nox\n\n\n@nox.session(python=[\"3.11\"])\ndef unit(session):\n    session.install(\"mock\", \"pytest-cov\", *nox.project.dependency_groups(PYPROJECT, \"test\"))\n    session.install(\n        \"-r\",\n        \"testing/deps.txt\",\n    )\n    session.install(\"-e\", \".\", \"--group\", \"test\")\n    session.run(\"pytest\")\n\n\n@nox.session\ndef docs(session):\n    session.install(\"sphinx\")\n",
        ),
        ("testing/deps.txt", "freezegun>=1\n"),
        ("tests/test_a.py", "def test_x():\n    assert 1\n"),
    ]);
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let mut dev: Vec<&str> = a.ecosystems[0]
        .dependencies
        .iter()
        .filter(|d| d.kind == dandori_env::analyzer::DependencyKind::Dev)
        .map(|d| d.name.as_str())
        .collect();
    dev.sort();
    assert_eq!(dev, vec!["freezegun", "mock", "pytest-cov"]);
    let install = pip_install_line(dir.path());
    for want in ["mock", "pytest-cov", "'freezegun>=1'", " pytest"] {
        assert!(install.contains(want), "{want}: {install}");
    }
    assert!(!install.contains("sphinx"), "{install}");
}
