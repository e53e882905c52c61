//! Ecosystem plugins through the library (seed 002 §13.2) and the §3.5.1
//! environment information: real plugin processes (no sandbox here: the
//! library's callers confine them; the CLI suite runs them sandboxed).

use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::{AnalysisConfig, PluginsConfig};
use dandori_env::analyzer::info::{environment_info, file_summaries};
use dandori_env::plugins::{self, Registry};
use dandori_env::selection::{Toolchain, select_environment_with};

fn write_plugin(dir: &Path, name: &str, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join(name);
    std::fs::write(&p, body).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn registry(paths: &[&Path], repo: &Path) -> Registry {
    let config = PluginsConfig {
        paths: paths.iter().map(|p| p.display().to_string()).collect(),
        ..PluginsConfig::default()
    };
    // No HOME: no user plugin directory, no trusted repositories.
    let env: BTreeMap<String, String> = [(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    )]
    .into();
    plugins::discover(&config, repo, &env, None)
}

const ELIXIR: &str = r#"#!/bin/sh
req=$(cat)
case "$1" in
  detect)
    case "$req" in
      *'"mix.exs"'*) echo '{"detected": true, "environment_type": "elixir", "detected_files": {"mix.exs": "defmodule X"}, "dependencies": ["jason", {"name": "credo", "version_spec": "~> 1.7", "kind": "dev"}], "setup_commands": ["mix deps.get"], "registries": ["hex.pm", "repo.hex.pm"], "test_command": "mix test"}' ;;
      *) echo '{"detected": false}' ;;
    esac ;;
  generate) echo '{"setup_commands": ["mix deps.get"], "verification_commands": ["elixir --version", "mix deps"], "expected_results": {"elixir --version": "Elixir"}, "optional_verification_commands": ["mix deps"]}' ;;
  verify) echo '{"verification_results": [{"command": "mix deps.loadpaths", "expected": "ok", "actual": "", "status": "failed", "reason": "deps missing"}]}' ;;
esac
"#;

#[test]
fn a_plugin_ecosystem_is_selected_with_its_generated_code() {
    let t = tempfile::tempdir().unwrap();
    let (repo, plugins_dir) = (t.path().join("repo"), t.path().join("plugins"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(plugins_dir.join("elixir")).unwrap();
    std::fs::write(repo.join("mix.exs"), "defmodule X do end\n").unwrap();
    write_plugin(&plugins_dir.join("elixir"), "dandori-env-elixir", ELIXIR);
    // Not a plugin: the name lacks the prefix.
    write_plugin(&plugins_dir, "helper.sh", "#!/bin/sh\nexit 1\n");
    let reg = registry(&[&plugins_dir], &repo);
    assert_eq!(reg.plugins.len(), 1, "{:?}", reg.plugins);

    let analysis = reg.analyze(&repo, &AnalysisConfig::default());
    assert_eq!(analysis.warnings, vec![]);
    let eco = analysis.ecosystem("elixir").unwrap();
    assert_eq!(eco.files, vec!["mix.exs"]);
    assert_eq!(eco.test_command.as_deref(), Some("mix test"));
    assert_eq!(eco.dependencies.len(), 2);

    let selected = select_environment_with(&analysis, Some("elixir"), &Toolchain::with(&[]));
    assert_eq!(selected.name, "elixir");
    assert_eq!(selected.setup_commands, vec!["mix deps.get"]);
    assert_eq!(
        selected.verification_commands,
        vec!["elixir --version", "mix deps"]
    );
    assert_eq!(selected.expected_results["elixir --version"], "Elixir");
    assert_eq!(
        selected.extra["optional_verification_commands"],
        serde_json::json!(["mix deps"])
    );
    assert_eq!(
        selected.extra["registries"],
        serde_json::json!(["hex.pm", "repo.hex.pm"])
    );
    let plugin_path = selected.extra["plugin"].as_str().unwrap().to_string();
    assert!(plugin_path.ends_with("elixir/dandori-env-elixir"));

    // verify_environment's results, read as §5.4.3 results.
    let results = plugins::verify(&reg, &selected, &repo, &BTreeMap::new());
    assert_eq!(results.len(), 1);
    assert_eq!(results[0].status, "failed");
    assert!(results[0].required);
    assert_eq!(results[0].reason.as_deref(), Some("deps missing"));

    // A plugin not among the registry's is never run, whatever the plan says.
    let none = plugins::verify(&Registry::builtin(), &selected, &repo, &BTreeMap::new());
    assert!(
        none[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("ENV_PLUGIN_UNTRUSTED"),
        "{none:?}"
    );
}

#[test]
fn answers_outside_the_protocol_are_warnings_naming_the_json_path() {
    let t = tempfile::tempdir().unwrap();
    let (repo, dir) = (t.path().join("repo"), t.path().join("plugins"));
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(repo.join("requirements.txt"), "requests\n").unwrap();
    write_plugin(
        &dir,
        "dandori-env-extra",
        "#!/bin/sh\ncat >/dev/null\necho '{\"detected\": true, \"environment_type\": \"x\", \"colour\": 1}'\n",
    );
    write_plugin(
        &dir,
        "dandori-env-fails",
        "#!/bin/sh\ncat >/dev/null\necho 'no such tool' >&2\nexit 7\n",
    );
    write_plugin(
        &dir,
        "dandori-env-nojson",
        "#!/bin/sh\ncat >/dev/null\necho 'detected'\n",
    );
    let analysis = registry(&[&dir], &repo).analyze(&repo, &AnalysisConfig::default());
    let warnings: Vec<String> = analysis
        .warnings
        .iter()
        .map(|w| format!("{}: {}", w.path, w.message))
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:#?}");
    assert!(
        warnings[0].contains("dandori-env-extra")
            && warnings[0].contains("at `$.colour`")
            && warnings[0].contains("ENV_PLUGIN_INVALID"),
        "{warnings:#?}"
    );
    assert!(
        warnings[1].contains("exit code 7: no such tool")
            && warnings[1].contains("ENV_PLUGIN_FAILED"),
        "{warnings:#?}"
    );
    assert!(
        warnings[2].contains("not one JSON object") && warnings[2].contains("ENV_PLUGIN_INVALID"),
        "{warnings:#?}"
    );
    // The built-in ecosystem still counts.
    assert_eq!(analysis.ecosystem_names(), vec!["python"]);
}

#[test]
fn a_configured_path_that_is_no_plugin_is_named() {
    let t = tempfile::tempdir().unwrap();
    let missing = t.path().join("nowhere");
    let reg = registry(&[&missing], t.path());
    assert!(reg.plugins.is_empty());
    assert!(
        reg.skipped[0]
            .message
            .contains("neither an executable nor a directory"),
        "{:?}",
        reg.skipped
    );
}

#[test]
fn environment_info_has_the_seed_fields_with_bounded_contents() {
    let t = tempfile::tempdir().unwrap();
    let repo = t.path();
    std::fs::write(
        repo.join("requirements.txt"),
        "# pinned\nrequests>=2.31\nflask\n",
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "x".repeat(10_000)).unwrap();
    let analysis = dandori_env::analyze(repo, &AnalysisConfig::default());
    let selected = select_environment_with(&analysis, None, &Toolchain::with(&["python3"]));
    let info = environment_info(&analysis, &selected, repo, 64);
    assert_eq!(info.environment_type, "python");
    assert_eq!(
        info.detected_files["requirements.txt"],
        "# pinned\nrequests>=2.31\nflask\n"
    );
    let readme = &info.detected_files["README.md"];
    assert!(readme.starts_with(&"x".repeat(64)), "{readme}");
    assert!(readme.ends_with("… [9936 more bytes]"), "{readme}");
    assert_eq!(info.dependencies, vec!["requests >=2.31", "flask"]);
    assert_eq!(info.setup_commands, selected.setup_commands);
    let value = serde_json::to_value(&info).unwrap();
    let keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        vec![
            "detected_files",
            "environment_type",
            "dependencies",
            "setup_commands"
        ]
    );

    let lines = file_summaries(&info, 1, 30);
    assert_eq!(
        lines,
        vec![
            "README.md: xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…".to_string(),
            "… and 1 more files".to_string()
        ]
    );
    let lines = file_summaries(&info, 5, 100);
    assert_eq!(lines[1], "requirements.txt: requests>=2.31; flask");
}
