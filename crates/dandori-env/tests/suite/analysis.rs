use dandori_config::AnalysisConfig;
use dandori_env::analyzer::{self, DependencyKind};
use dandori_env::selection::{Toolchain, choose};
use dandori_env::{analyze, analyze_paths, select_environment_with};
use pretty_assertions::assert_eq;

use super::fixture;

const FIXTURES: &[&str] = &[
    "python_requirements",
    "python_uv",
    "python_poetry",
    "python_pdm",
    "python_pipenv",
    "python_setup_py",
    "python_setup_cfg",
    "conda_env",
    "conda_mixed",
    "node_npm",
    "node_yarn_classic",
    "node_yarn_berry",
    "node_pnpm",
    "node_bun",
    "node_monorepo",
    "java_maven",
    "java_gradle",
    "go_mod",
    "rust_crate",
    "rust_legacy_toolchain",
    "mixed_python_node",
    "mixed_build_files",
    "empty",
    "only_sources",
    "broken",
    "blocked_go",
    "blocked_maven",
];

/// A machine with everything: the commands in the snapshots are the preferred ones.
fn all_tools() -> Toolchain {
    Toolchain::with(&[
        "uv", "python3", "conda", "mamba", "node", "npm", "corepack", "mvn", "java", "go", "cargo",
        "rustc", "poetry",
    ])
}

#[test]
fn every_fixture_matches_its_snapshot() {
    for name in FIXTURES {
        let a = analyze(&fixture(name), &AnalysisConfig::default());
        let selected = select_environment_with(&a, None, &all_tools());
        insta::assert_json_snapshot!(
            format!("analysis__{name}"),
            serde_json::json!({"analysis": a, "selected_environment": selected})
        );
    }
}

#[test]
fn package_managers_and_versions_per_rule() {
    let pm = |name: &str, eco: &str| {
        let a = analyze(&fixture(name), &AnalysisConfig::default());
        let e = a
            .ecosystem(eco)
            .unwrap_or_else(|| panic!("{name}: no {eco}"))
            .clone();
        (
            e.package_manager,
            e.package_manager_version,
            e.package_manager_flavor,
            e.runtime_version.map(|v| (v.value, v.source)),
        )
    };
    let s = |x: &str| Some(x.to_string());
    let v = |x: &str, src: &str| Some((x.to_string(), src.to_string()));
    assert_eq!(
        vec![
            pm("python_requirements", "python"),
            pm("python_uv", "python"),
            pm("python_poetry", "python"),
            pm("python_pdm", "python"),
            pm("python_pipenv", "python"),
            pm("python_setup_py", "python"),
            pm("conda_env", "miniforge"),
            pm("node_npm", "node"),
            pm("node_yarn_classic", "node"),
            pm("node_yarn_berry", "node"),
            pm("node_pnpm", "node"),
            pm("node_bun", "node"),
            pm("java_maven", "java"),
            pm("java_gradle", "java"),
            pm("go_mod", "go"),
            pm("rust_crate", "rust"),
            pm("rust_legacy_toolchain", "rust"),
        ],
        vec![
            ("pip".into(), None, None, v("3.11", ".python-version")),
            ("uv".into(), None, None, v(">=3.10", "pyproject.toml")),
            ("poetry".into(), None, None, v("^3.9", "pyproject.toml")),
            ("pdm".into(), None, None, None),
            ("pipenv".into(), None, None, v("3.12", "Pipfile")),
            ("pip".into(), None, None, v("3.10.12", "runtime.txt")),
            ("conda".into(), None, None, v("3.11", "environment.yml")),
            ("npm".into(), None, None, v("v20.11.1", ".nvmrc")),
            (
                "yarn".into(),
                None,
                s("classic"),
                v("18.x", "package.json engines.node")
            ),
            ("yarn".into(), s("4.1.0"), s("berry"), None),
            ("pnpm".into(), s("9.1.0"), None, v("20", ".node-version")),
            ("bun".into(), None, None, None),
            (
                "maven".into(),
                None,
                s("wrapper"),
                v("17", "pom.xml <maven.compiler.release>")
            ),
            ("gradle".into(), None, None, v("21", "build.gradle.kts")),
            ("go".into(), None, None, v("1.22.3", "go.mod")),
            (
                "cargo".into(),
                None,
                None,
                v("1.80.0", "rust-toolchain.toml")
            ),
            ("cargo".into(), None, None, v("stable", "rust-toolchain")),
        ]
    );
}

#[test]
fn dependencies_carry_spec_kind_and_optional() {
    let a = analyze(&fixture("node_npm"), &AnalysisConfig::default());
    let deps: Vec<(String, Option<String>, DependencyKind, bool)> = a.ecosystems[0]
        .dependencies
        .iter()
        .map(|d| (d.name.clone(), d.version_spec.clone(), d.kind, d.optional))
        .collect();
    let s = |x: &str| Some(x.to_string());
    assert_eq!(
        deps,
        vec![
            ("is-number".into(), s("^7.0.0"), DependencyKind::Prod, false),
            ("express".into(), s("~4.19.2"), DependencyKind::Prod, false),
            ("typescript".into(), s("^5.4.0"), DependencyKind::Dev, false),
            ("fsevents".into(), s("^2.3.3"), DependencyKind::Prod, true),
            ("react".into(), s(">=18"), DependencyKind::Peer, false),
            ("react-dom".into(), s(">=18"), DependencyKind::Peer, true),
        ]
    );
    let a = analyze(&fixture("python_requirements"), &AnalysisConfig::default());
    let deps: Vec<(String, Option<String>, DependencyKind)> = a.ecosystems[0]
        .dependencies
        .iter()
        .map(|d| (d.name.clone(), d.version_spec.clone(), d.kind))
        .collect();
    assert_eq!(
        deps,
        vec![
            ("attrs".into(), None, DependencyKind::Prod),
            ("pytest".into(), s(">=7"), DependencyKind::Dev),
            ("requests".into(), s(">=2.28,<3"), DependencyKind::Prod),
            ("click".into(), s("==8.1.7"), DependencyKind::Prod),
            ("localdep".into(), None, DependencyKind::Prod),
            ("rich".into(), s(">=13"), DependencyKind::Prod),
        ]
    );
}

#[test]
fn primary_environment_rules() {
    let cfg = AnalysisConfig::default();
    let name = |fx: &str, target: Option<&str>| {
        let a = analyze(&fixture(fx), &cfg);
        let c = choose(&a, target);
        (c.name, c.reason)
    };
    // Mixed: every ecosystem is reported.
    let a = analyze(&fixture("mixed_python_node"), &cfg);
    assert_eq!(a.ecosystem_names(), vec!["node", "python"]);
    // 1. the task's target language wins.
    let (n, r) = name("mixed_python_node", Some("python"));
    assert_eq!(n, "python");
    assert!(r.contains("the task targets python"), "{r}");
    let (n, _) = name("mixed_python_node", Some("TypeScript"));
    assert_eq!(n, "node");
    // 2. then the language with most dependencies (node 4 vs python 1).
    let (n, r) = name("mixed_python_node", None);
    assert_eq!(n, "node");
    assert!(r.contains("most dependencies"), "{r}");
    // 3. then build files (go.mod is one, a package.json without build script is not).
    let (n, r) = name("mixed_build_files", None);
    assert_eq!(n, "go");
    assert!(r.contains("build configuration"), "{r}");
    // conda files make a python project miniforge (§4.2.1).
    assert_eq!(name("conda_mixed", None).0, "miniforge");
    assert_eq!(name("conda_mixed", Some("python")).0, "miniforge");
    // §4.2.3: nothing found → python.
    let (n, r) = name("empty", None);
    assert_eq!(n, "python");
    assert!(r.contains("default"), "{r}");
    // Sources alone hint the language.
    assert_eq!(name("only_sources", None).0, "node");
}

#[test]
fn analyze_paths_reuses_a_scan() {
    let root = fixture("mixed_python_node");
    let paths = [
        "requirements.txt",
        "frontend/package.json",
        "frontend/package-lock.json",
        "Dockerfile",
        "Makefile",
    ];
    let from_paths = analyze_paths(&root, &paths);
    let walked = analyze(&root, &AnalysisConfig::default());
    assert_eq!(from_paths.ecosystems, walked.ecosystems);
    assert_eq!(from_paths.detected_files, walked.detected_files);
}

#[test]
fn dependency_dirs_are_skipped_and_members_merged() {
    let a = analyze(&fixture("node_monorepo"), &AnalysisConfig::default());
    assert_eq!(a.ecosystems.len(), 1);
    let e = &a.ecosystems[0];
    assert_eq!(e.members, vec!["packages/a".to_string()]);
    assert!(e.files.iter().all(|f| !f.contains("node_modules")));
    assert!(e.dependencies.iter().any(|d| d.name == "left-pad"));
    // analyze_paths filters them as well.
    let b = analyze_paths(
        &fixture("node_monorepo"),
        &["package.json", "node_modules/left-pad/package.json"],
    );
    assert_eq!(b.ecosystems[0].files, vec!["package.json".to_string()]);
}

#[test]
fn limits_and_broken_files_become_warnings() {
    let a = analyze(&fixture("broken"), &AnalysisConfig::default());
    let w: Vec<(&str, bool)> = a
        .warnings
        .iter()
        .map(|w| (w.path.as_str(), w.message.contains("parse error")))
        .collect();
    assert_eq!(w, vec![("package.json", true), ("pyproject.toml", true)]);

    let small = AnalysisConfig {
        max_file_size: 10,
        ..AnalysisConfig::default()
    };
    let a = analyze(&fixture("go_mod"), &small);
    assert!(
        a.warnings[0].message.contains("max_file_size"),
        "{:?}",
        a.warnings
    );
    let shallow = AnalysisConfig {
        max_search_depth: 1,
        ..AnalysisConfig::default()
    };
    let a = analyze(&fixture("mixed_python_node"), &shallow);
    assert_eq!(a.ecosystem_names(), vec!["python"]);
}

#[test]
fn generated_commands_follow_the_tools_present() {
    let a = analyze(&fixture("python_requirements"), &AnalysisConfig::default());
    let with_uv = select_environment_with(&a, None, &Toolchain::with(&["uv", "python3"]));
    assert_eq!(
        with_uv.setup_commands,
        vec![
            "uv venv .venv --allow-existing --python 3.11",
            "uv pip install --python .venv/bin/python -r requirements.txt -r requirements-base.txt -r requirements-dev.txt",
        ]
    );
    let without = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
    assert_eq!(
        without.setup_commands,
        vec![
            "python3 -m venv .venv",
            ".venv/bin/python -m pip install -r requirements.txt -r requirements-base.txt -r requirements-dev.txt",
        ]
    );
    let a = analyze(&fixture("node_pnpm"), &AnalysisConfig::default());
    let s = select_environment_with(&a, None, &Toolchain::with(&["node", "npm", "corepack"]));
    assert_eq!(
        s.setup_commands,
        vec!["COREPACK_ENABLE_DOWNLOAD_PROMPT=0 corepack pnpm install --frozen-lockfile"]
    );
    // Every generated command passes the default policy.
    let policy = dandori_exec::CommandPolicy::default();
    for fx in FIXTURES {
        let a = analyze(&fixture(fx), &AnalysisConfig::default());
        let s = select_environment_with(&a, None, &all_tools());
        for c in s.setup_commands.iter().chain(&s.verification_commands) {
            assert!(
                policy.check(c).is_ok(),
                "{fx}: `{c}` refused: {:?}",
                policy.check(c)
            );
        }
    }
    let _ = analyzer::PYTHON;
}

#[test]
fn pep735_include_group_entries_are_expanded() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[project]\nname = \"demo\"\nversion = \"0.1\"\n\n[dependency-groups]\n\
         coverage = [\"coverage>=7\"]\n\
         test = [\"pytest>=8\", {include-group = \"coverage\"}]\n\
         loop = [{include-group = \"loop\"}, \"hypothesis\"]\n",
    )
    .unwrap();
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let mut test: Vec<String> = a.ecosystems[0]
        .dependencies
        .iter()
        .filter(|d| d.group.as_deref() == Some("test"))
        .map(|d| d.name.clone())
        .collect();
    test.sort();
    assert_eq!(test, vec!["coverage", "pytest"]);
    let looped: Vec<&str> = a.ecosystems[0]
        .dependencies
        .iter()
        .filter(|d| d.group.as_deref() == Some("loop"))
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(looped, vec!["hypothesis"], "a cycle contributes nothing");
}

/// The runtime check of a project: `(command, expected pattern)`.
fn runtime_check(files: &[(&str, &str)], command: &str) -> regex::Regex {
    let dir = tempfile::tempdir().unwrap();
    for (p, text) in files {
        std::fs::write(dir.path().join(p), text).unwrap();
    }
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::with(&["npm", "cargo"]));
    let pat = sel
        .expected_results
        .get(command)
        .unwrap_or_else(|| panic!("{command}: {:#?}", sel.expected_results));
    regex::Regex::new(pat).unwrap()
}

/// Minimums are minimums (`engines.node`, `rust-version`); only pins are pins
/// (`.nvmrc`, `volta.node`).
#[test]
fn minimum_versions_accept_newer_runtimes_and_pins_do_not() {
    let engines = runtime_check(
        &[(
            "package.json",
            r#"{"name": "x", "engines": {"node": "14"}}"#,
        )],
        "node --version",
    );
    assert!(engines.is_match("v20.11.1"), "{engines}");
    assert!(engines.is_match("v14.0.0"), "{engines}");
    assert!(!engines.is_match("v12.22.0"), "{engines}");
    let nvmrc = runtime_check(
        &[("package.json", r#"{"name": "x"}"#), (".nvmrc", "14\n")],
        "node --version",
    );
    assert!(nvmrc.is_match("v14.21.3"), "{nvmrc}");
    assert!(!nvmrc.is_match("v20.11.1"), "{nvmrc}");
    let rust = runtime_check(
        &[(
            "Cargo.toml",
            "[package]\nname = \"x\"\nversion = \"0.1.0\"\nrust-version = \"1.68\"\n",
        )],
        "rustc --version",
    );
    assert!(
        rust.is_match("rustc 1.95.0 (59807616e 2026-04-14)"),
        "{rust}"
    );
    assert!(!rust.is_match("rustc 1.60.0"), "{rust}");
}

/// Environment markers survive: PEP 508 ones as written, poetry's `python`
/// constraints translated; the explicit install list carries them, and a
/// dependency behind a marker is not verified (it may not be for this Python).
#[test]
fn environment_markers_reach_the_explicit_list_and_skip_verification() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("pyproject.toml"),
        "[tool.poetry]\nname = \"demo\"\nversion = \"0.1.0\"\n\n\
         [tool.poetry.dependencies]\npython = \">=3.5\"\nimportlib-metadata = {version = \">=1.6.0\", python = \"<3.8\"}\nattrs = \"^23.1\"\n\n\
         [tool.poetry.group.dev.dependencies]\npytest = {version = \"^7.2\", python = \"^3.7\"}\n\n\
         [build-system]\nrequires = [\"poetry-core\"]\nbuild-backend = \"poetry.core.masonry.api\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("requirements.txt"),
        "tomli>=1; python_version < \"3.11\"\n",
    )
    .unwrap();
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let deps = &a.ecosystems[0].dependencies;
    let marker = |n: &str| {
        deps.iter()
            .find(|d| d.name == n)
            .unwrap_or_else(|| panic!("{n}: {deps:#?}"))
            .marker
            .clone()
    };
    assert_eq!(
        marker("importlib-metadata").as_deref(),
        Some("python_version < \"3.8\"")
    );
    assert_eq!(
        marker("pytest").as_deref(),
        Some("python_version >= \"3.7\"")
    );
    assert_eq!(
        marker("tomli").as_deref(),
        Some("python_version < \"3.11\"")
    );
    assert_eq!(marker("attrs"), None);
    let sel = select_environment_with(&a, None, &Toolchain::with(&["python3"]));
    let install = sel.setup_commands.last().unwrap();
    assert!(
        install.contains("'pytest>=7.2,<8; python_version >= \"3.7\"'"),
        "{install}"
    );
    assert!(
        !sel.verification_commands
            .iter()
            .any(|c| c.contains("importlib-metadata") || c.contains("tomli")),
        "{:#?}",
        sel.verification_commands
    );
    assert!(
        sel.verification_commands
            .iter()
            .any(|c| c.ends_with("pip show attrs")),
        "{:#?}",
        sel.verification_commands
    );
}
