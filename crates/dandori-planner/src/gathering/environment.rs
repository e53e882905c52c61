//! Environment analysis and selection through `dandori-env` (seed 002 §3.2, §4.2),
//! over the file list the repository scan already produced.

use dandori_config::AnalysisConfig;
use dandori_plan::SelectedEnvironment;

pub use dandori_env::{EnvironmentAnalysis, Toolchain};

use super::RepoScan;

/// Analyses the environment files among the scanned paths (only those are read).
pub fn analyze_environment(scan: &RepoScan, config: &AnalysisConfig) -> EnvironmentAnalysis {
    let paths: Vec<&str> = scan.files.iter().map(|f| f.path.as_str()).collect();
    dandori_env::analyzer::analyze_paths_with(&scan.root, &paths, config)
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
