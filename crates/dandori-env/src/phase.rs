//! The environment sub-phase as the callers run it: choose the environment,
//! bootstrap the package manager it prefers into dandori's tool cache, set it up
//! and verify it. `dandori env setup` and the runner's environment phase (before
//! the first step of `dandori run`) both come through here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_config::EnvironmentSetupConfig;
use dandori_plan::SelectedEnvironment;

use crate::EnvError;
use crate::analyzer::{self, EnvironmentAnalysis};
use crate::records::{OverallStatus, SETUP_FILE};
use crate::selection::{self, Toolchain};
use crate::setup::{self, CommandRegenerator, SetupOptions, SetupOutcome};
use crate::{activation, tools};

/// Picks the environment of `analysis` and generates its commands for the
/// tools on `base_env`'s `PATH`, after bootstrapping the preferred package
/// manager (uv, yarn, pnpm) into the tool cache when it is missing.
pub fn select_with_bootstrap(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    base_env: &BTreeMap<String, String>,
    progress: &dyn Fn(&str),
) -> Result<SelectedEnvironment, EnvError> {
    let choice = selection::choose(analysis, target_language);
    if let Some(eco) = choice.ecosystem {
        tools::ensure_for(eco, base_env, progress)?;
    }
    let env = tools::with_tools_on_path(base_env);
    let toolchain = Toolchain::discover(env.get("PATH").map(String::as_str).unwrap_or(""));
    Ok(selection::select_environment_with(
        analysis,
        target_language,
        &toolchain,
    ))
}

/// What the runner needs from the sub-phase.
#[derive(Debug, Clone)]
pub struct RunEnvironment {
    pub status: OverallStatus,
    /// Variables that activate the prepared environment for agents and unit commands.
    pub activation_env: BTreeMap<String, String>,
    pub message: String,
    /// `<run>/environment/setup.json` (absent when nothing was set up).
    pub setup_record: Option<PathBuf>,
    pub outcome: Option<SetupOutcome>,
}

/// The runner's environment phase. The `selected_environment` of the run's
/// planning.json is used when the analyser produced it (it carries `root`); a
/// selection from elsewhere keeps its environment name but gets its commands
/// generated here; without one the analyser chooses, and a repository with no
/// environment files is left untouched. Records go to `<run>/environment/`,
/// statistics across runs to the runs root.
pub fn prepare_run(
    config: &EnvironmentSetupConfig,
    base_env: &BTreeMap<String, String>,
    repo: &Path,
    run_dir: &Path,
    regenerator: Option<&dyn CommandRegenerator>,
    progress: &dyn Fn(&str),
) -> Result<RunEnvironment, EnvError> {
    let planned: Option<SelectedEnvironment> =
        dandori_fs::read_to_string(run_dir.join("planning.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("selected_environment").cloned())
            .and_then(|v| serde_json::from_value(v).ok())
            .filter(|s: &SelectedEnvironment| !s.setup_commands.is_empty());
    let selected = match planned {
        Some(s) if s.extra.contains_key("root") => s,
        Some(s) => {
            let analysis = analyzer::analyze(repo, &config.analysis);
            select_with_bootstrap(&analysis, Some(&s.name), base_env, progress)?
        }
        None => {
            let analysis = analyzer::analyze(repo, &config.analysis);
            if analysis.ecosystems.is_empty() {
                return Ok(RunEnvironment {
                    status: OverallStatus::Success,
                    activation_env: activation::env_for_with(repo, base_env),
                    message: "no environment files detected: nothing to set up".to_string(),
                    setup_record: None,
                    outcome: None,
                });
            }
            select_with_bootstrap(&analysis, None, base_env, progress)?
        }
    };
    let mut opts = SetupOptions::new(repo);
    opts.record_dir = run_dir.join("environment");
    opts.stats_dir = run_dir
        .parent()
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| run_dir.to_path_buf());
    opts.config = config.clone();
    opts.base_env = tools::with_tools_on_path(base_env);
    opts.regenerator = regenerator;
    opts.progress = Some(progress);
    let out = setup::run(&selected, &opts)?;
    let record = out.record_dir.join(SETUP_FILE);
    let message = match out.overall_status {
        OverallStatus::Success | OverallStatus::PartialSuccess => out.handover.setup_notes.clone(),
        OverallStatus::Failed | OverallStatus::Blocked => format!(
            "the {} environment is not ready ({}): {}; see {}",
            selected.name,
            out.overall_status.as_str(),
            out.handover.setup_notes,
            record.display()
        ),
    };
    Ok(RunEnvironment {
        status: out.overall_status,
        activation_env: activation::env_for_with(repo, base_env),
        message,
        setup_record: Some(record),
        outcome: Some(out),
    })
}
