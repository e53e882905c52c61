//! The environment sub-phase as the callers run it: choose the environment,
//! bootstrap the package manager it prefers into dandori's tool cache, set it up
//! and verify it. `dandori env setup` and the runner's environment phase (before
//! the first step of `dandori run`) both come through here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_config::EnvironmentSetupConfig;
use dandori_plan::SelectedEnvironment;

use crate::EnvError;
use crate::analyzer::EnvironmentAnalysis;
use crate::records::{OverallStatus, SETUP_FILE, ToolBootstrap};
use crate::selection::{self, Toolchain};
use crate::setup::{CommandRegenerator, SetupOptions, SetupOutcome};
use crate::{activation, installer, tools};

/// Picks the environment of `analysis` and generates its commands, after
/// carrying out the installer decision ([`crate::installer::decide`]):
/// bootstrapping the package manager (uv, pnpm, yarn) into the tool cache
/// when it is missing. The commands are generated for the tools that are
/// there afterwards, so a failed bootstrap gives the fallback's commands (pip)
/// and the returned record says why.
pub fn select_with_bootstrap(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    base_env: &BTreeMap<String, String>,
    progress: &dyn Fn(&str),
) -> Result<(SelectedEnvironment, Option<ToolBootstrap>), EnvError> {
    let choice = selection::choose(analysis, target_language);
    let bootstrap = match choice.ecosystem {
        Some(eco) => tools::ensure_for(eco, base_env, progress)?,
        None => None,
    };
    // What is there now: the decided tool when the bootstrap found or
    // installed it, the fallback's tools when it failed.
    let env = tools::with_tools_on_path(base_env);
    let toolchain = Toolchain::discover(env.get("PATH").map(String::as_str).unwrap_or(""));
    let selected = selection::select_environment_with(analysis, target_language, &toolchain);
    Ok((selected, bootstrap))
}

/// The tools the commands of `analysis`'s environment will find: those on
/// `base_env`'s `PATH` and in the tool cache, and the package manager the
/// installer decision picks for the chosen ecosystem (the bootstrap installs it
/// when it is missing). `dandori plan`, `env detect`, `env verify` and MCP
/// `env_detect` generate commands with it; `env setup` and the runner with it
/// after the bootstrap ran, so they agree unless the bootstrap failed.
pub fn expected_toolchain(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    base_env: &BTreeMap<String, String>,
) -> Toolchain {
    let env = tools::with_tools_on_path(base_env);
    let found = Toolchain::discover(env.get("PATH").map(String::as_str).unwrap_or(""));
    let decided = selection::choose(analysis, target_language)
        .ecosystem
        .and_then(|eco| installer::decide(eco, base_env));
    match decided {
        Some(d) if d.usable() => found.and(d.tool),
        _ => found,
    }
}

/// The environment of `analysis` with the commands for [`expected_toolchain`].
pub fn select_expected(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    base_env: &BTreeMap<String, String>,
) -> SelectedEnvironment {
    let tools = expected_toolchain(analysis, target_language, base_env);
    selection::select_environment_with(analysis, target_language, &tools)
}

/// The status a run acts on: a required verification that failed makes the
/// environment failed even when `on_failure` turned the setup's own status into
/// a partial (warn) or full (ignore) success — the run's gate decides, with the
/// configured `on_failure`, whether to go on.
fn run_status(out: &SetupOutcome) -> OverallStatus {
    match out.overall_status {
        OverallStatus::Success | OverallStatus::PartialSuccess
            if !out.handover.environment_ready =>
        {
            OverallStatus::Failed
        }
        s => s,
    }
}

/// Why the environment is not ready, in one line.
fn not_ready_reason(out: &SetupOutcome) -> String {
    if let Some(b) = &out.setup_result.blocked {
        return format!("{}: {}", b.code, b.reason);
    }
    if let Some(e) = out.errors.first() {
        return e.clone();
    }
    let failed: Vec<String> = out
        .verification_result
        .verification_results
        .iter()
        .filter(|v| v.required && v.status != "success")
        .map(|v| format!("`{}`", v.command))
        .collect();
    if failed.is_empty() {
        out.handover.setup_notes.clone()
    } else {
        format!("required verification failed: {}", failed.join(", "))
    }
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
    /// Seed 002 §7.2: what the executing agent is told about the environment
    /// (the body of the prompt's `## Execution environment` section).
    pub summary: String,
    pub outcome: Option<SetupOutcome>,
    /// The environment tree the environment was prepared in ([`crate::tree`]).
    pub prepared_in: PathBuf,
}

/// Seed 002 §7.2 — the environment, its setup status, the commands available,
/// the installed packages and the notes and warnings of the setup, as the
/// executing agent reads it. Long lists are cut (with the count of what was left
/// out); the full lists are in the handover record.
pub fn prompt_summary(out: &SetupOutcome, record: &Path) -> String {
    const COMMANDS: usize = 40;
    const PACKAGES: usize = 60;
    const WARNINGS: usize = 8;
    let h = &out.handover;
    let mut s = String::new();
    let root = &out.setup_result.root;
    s.push_str(&format!(
        "Current environment: {}{}\n",
        h.environment_name,
        if root == "." {
            String::new()
        } else {
            format!(" (in {root}/)")
        }
    ));
    s.push_str(&format!(
        "Setup status: {} (environment_ready: {}){}\n",
        h.setup_status.as_str(),
        h.environment_ready,
        if out.setup_result.reused {
            ", reused from an earlier setup"
        } else {
            ""
        }
    ));
    let list = |title: &str, items: &[String], max: usize, joiner: &str| -> String {
        if items.is_empty() {
            return format!("{title}: none\n");
        }
        let shown: Vec<&str> = items.iter().take(max).map(String::as_str).collect();
        let more = items.len().saturating_sub(max);
        format!(
            "{title}:\n{}{}\n",
            shown.join(joiner),
            if more > 0 {
                format!("{joiner}… and {more} more")
            } else {
                String::new()
            }
        )
    };
    s.push_str(&list(
        "Available commands",
        &h.available_commands,
        COMMANDS,
        ", ",
    ));
    s.push_str(&list(
        "Installed packages",
        &h.installed_packages,
        PACKAGES,
        ", ",
    ));
    let mut notes = vec![h.setup_notes.clone()];
    notes.extend(h.warnings.iter().take(WARNINGS).cloned());
    notes.extend(out.errors.iter().take(WARNINGS).cloned());
    for v in &out.verification_result.verification_results {
        if v.status != "success" {
            notes.push(format!(
                "{} check failed: `{}`{}",
                if v.required { "required" } else { "optional" },
                v.command,
                v.reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ));
        }
    }
    s.push_str("Notes:\n");
    for n in notes.iter().filter(|n| !n.trim().is_empty()) {
        s.push_str(&format!("- {n}\n"));
    }
    s.push_str(&format!(
        "- Commands you run already have this environment activated (PATH starts with its bin directories); do not install packages globally.\n\
         - Setup record: {}\n",
        record.display()
    ));
    s
}

/// The other ecosystems set up with the primary one, for the prompt.
fn others_summary(runs: &[crate::parallel::EcosystemRun]) -> String {
    let mut s = String::new();
    for r in runs.iter().skip(1) {
        s.push_str(&format!(
            "- Also prepared: {} in {} ({}{}); its commands are on PATH after the primary environment's\n",
            r.environment,
            if r.root == "." {
                "the repository root".to_string()
            } else {
                format!("{}/", r.root)
            },
            r.overall_status.as_str(),
            if r.reused { ", reused" } else { "" }
        ));
    }
    s
}

/// The runner's environment phase. The `selected_environment` of the run's
/// planning.json is used when the analyser produced it (it carries `root`); a
/// selection from elsewhere keeps its environment name but gets its commands
/// generated here; without one the analyser chooses, and a repository with no
/// environment files is left untouched. Records go to `<run>/environment/`,
/// statistics across runs to the runs root. Everything is prepared in the
/// repository's environment tree ([`crate::tree`]) at the run's base commit,
/// never in `repo`'s working tree.
pub fn prepare_run(
    config: &EnvironmentSetupConfig,
    base_env: &BTreeMap<String, String>,
    repo: &Path,
    run_dir: &Path,
    regenerator: Option<&dyn CommandRegenerator>,
    progress: &dyn Fn(&str),
    sandbox: Option<dandori_exec::Sandbox>,
) -> Result<RunEnvironment, EnvError> {
    let planned: Option<SelectedEnvironment> =
        dandori_fs::read_to_string(run_dir.join("planning.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("selected_environment").cloned())
            .and_then(|v| serde_json::from_value(v).ok())
            .filter(|s: &SelectedEnvironment| !s.setup_commands.is_empty());
    // Plugins are found (and trusted) for the user's repository; everything
    // else happens in the tree.
    let registry = crate::plugins::discover(&config.plugins, repo, base_env, sandbox.clone());
    let base = crate::tree::base_commit(repo, run_dir, base_env)?;
    let tree = crate::tree::prepare(repo, &base, base_env)?;
    progress(&format!(
        "prepared in {} (a checkout of {} that dandori keeps; your working tree is not touched)",
        tree.display(),
        base.chars().take(12).collect::<String>()
    ));
    let repo = tree.as_path();
    let analysis = registry.analyze(repo, &config.analysis);
    // The plugin that detects the planned environment now (`dandori plan`
    // analyses without plugins): a plan made by another detector is generated again.
    let plugin_of = |name: &str| {
        analysis
            .ecosystems
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.plugin.as_ref())
            .map(|p| p.path.clone())
    };
    let (selected, bootstrap) = match planned {
        // The analyser's own selection from `dandori plan`: its commands were
        // generated with the same installer decision; the bootstrap carries it
        // out, and when it fails the commands are generated again for the
        // tools that are there (the plan's assumed the tool).
        Some(s)
            if s.extra.contains_key("root")
                && plugin_of(&s.name).as_deref()
                    == s.extra
                        .get(crate::plugins::PLUGIN_KEY)
                        .and_then(|v| v.as_str()) =>
        {
            let (again, bootstrap) =
                select_with_bootstrap(&analysis, Some(&s.name), base_env, progress)?;
            let failed = bootstrap.as_ref().is_some_and(|b| b.status == "failed");
            if failed && again.setup_commands != s.setup_commands {
                progress(&format!(
                    "the plan's setup commands assumed {}; they are generated again without it",
                    bootstrap.as_ref().map(|b| b.tool.as_str()).unwrap_or("")
                ));
                (again, bootstrap)
            } else {
                (s, bootstrap)
            }
        }
        Some(s) => select_with_bootstrap(&analysis, Some(&s.name), base_env, progress)?,
        None => {
            if analysis.ecosystems.is_empty() {
                let message = "no environment files detected: nothing to set up".to_string();
                return Ok(RunEnvironment {
                    status: OverallStatus::Success,
                    activation_env: activation::env_for_with(repo, base_env),
                    summary: format!(
                        "Current environment: none\nSetup status: skipped ({message}); use the tools already installed on this machine.\n"
                    ),
                    message,
                    setup_record: None,
                    outcome: None,
                    prepared_in: tree.clone(),
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
    // Setup logs and records hide the values of the secret variables too.
    opts.masker = dandori_trace::Masker::default().with_env_secrets(base_env);
    opts.regenerator = regenerator;
    opts.progress = Some(progress);
    opts.sandbox = sandbox;
    opts.plugins = registry;
    // Seed 002 §12.2: the other languages' ecosystems too, independent ones
    // at the same time.
    let mut plans = vec![crate::parallel::EcosystemPlan {
        selected: selected.clone(),
        bootstrap,
    }];
    plans.extend(crate::parallel::others(
        &analysis, &selected, base_env, progress,
    )?);
    let multi = crate::parallel::run(plans, &opts)?;
    let out = multi.primary;
    let record = out.record_dir.join(SETUP_FILE);
    let status = run_status(&out);
    let message = match status {
        OverallStatus::Success | OverallStatus::PartialSuccess => out.handover.setup_notes.clone(),
        OverallStatus::Failed | OverallStatus::Blocked => format!(
            "the {} environment is not ready ({}): {}; setup record: {}",
            selected.name,
            out.overall_status.as_str(),
            not_ready_reason(&out),
            record.display()
        ),
    };
    Ok(RunEnvironment {
        status,
        activation_env: activation::env_for_with(repo, base_env),
        message,
        summary: prompt_summary(&out, &record) + &others_summary(&multi.ecosystems),
        setup_record: Some(record),
        outcome: Some(out),
        prepared_in: tree.clone(),
    })
}
