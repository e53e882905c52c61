//! Environment analysis and selection through `dandori-env` (seed 002 §3.2, §4.2),
//! over the file list the repository scan already produced.

use dandori_config::AnalysisConfig;
use dandori_plan::SelectedEnvironment;

pub use dandori_env::{EnvironmentAnalysis, Toolchain};

use super::RepoScan;

/// Analyses the environment files among the scanned paths (only those are
/// read) through `registry`: the built-in ecosystems and the plugins found, as
/// every other detection path does.
pub fn analyze_environment(
    scan: &RepoScan,
    config: &AnalysisConfig,
    registry: &dandori_env::plugins::Registry,
) -> EnvironmentAnalysis {
    let paths: Vec<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
    registry.analyze_paths(&scan.root, &paths, config)
}

/// Seed 002 §4.2 selection with commands for the tools in `tools`.
pub fn select_environment(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    tools: &Toolchain,
) -> SelectedEnvironment {
    dandori_env::select_environment_with(analysis, target_language, tools)
}

/// The unit test command(s) for `commands.unit`: the environment's detected test
/// command, else the ecosystem's conventional one.
pub fn unit_test_commands(env: &SelectedEnvironment) -> Vec<String> {
    if let Some(cmd) = env.extra.get("test_command").and_then(|v| v.as_str())
        && !cmd.trim().is_empty()
    {
        return vec![cmd.to_string()];
    }
    let cmd = match env.name.as_str() {
        "node" => "npm test",
        "java" => "mvn -q test",
        "go" => "go test ./...",
        "rust" => "cargo test",
        _ => "python -m pytest -q",
    };
    vec![cmd.to_string()]
}

/// `selected_environment.reason` in the request's language: the analyser writes
/// English; a Japanese request gets a Japanese sentence with the same facts.
pub fn localized_reason(env: &SelectedEnvironment, lang: crate::request::Language) -> String {
    match lang {
        crate::request::Language::En => env.reason.clone(),
        crate::request::Language::Ja => {
            if let Some((files, rest)) = env.reason.split_once(" found: a ")
                && let Some(name) = rest.strip_suffix(" project")
            {
                return format!("{files} を検出したため {name} プロジェクトと判断した");
            }
            if env.reason.starts_with("no environment files detected") {
                return format!(
                    "環境ファイルが見つからないため既定の {} を選択した",
                    env.name
                );
            }
            if let Some(l) = env
                .reason
                .strip_prefix("no environment files; most source files are ")
            {
                return format!(
                    "環境ファイルはないが、ソースファイルの大半が {l} のため {} を選択した",
                    env.name
                );
            }
            format!("{} 環境を選択した（{}）", env.name, env.reason)
        }
    }
}
