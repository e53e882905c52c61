//! `dandori env detect | setup | verify | exec`: thin adapters over `dandori-env`,
//! and the runner's environment phase backed by the same library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use dandori_config::{EnvironmentSetupConfig, OnFailure};
use dandori_env::records::{OverallStatus, VerificationRecord};
use dandori_env::setup::{OfflineRegenerator, SetupOptions};
use dandori_env::verify::{self, VerifyOptions};
use dandori_env::{activation, analyzer, phase, reuse, selection, setup};
use dandori_plan::SelectedEnvironment;
use dandori_runner::environment::{EnvironmentPhase, EnvironmentReport, EnvironmentStatus};

use crate::cli::{EnvArgs, EnvCommand, EnvExecArgs};
use crate::output;

/// Exit code of `env setup` when the environment was detected but cannot be
/// prepared on this machine.
pub const EXIT_BLOCKED: u8 = 3;
/// Exit code of `env setup` when the environment is usable but an optional
/// check failed (or important warnings were found): partial success.
pub const EXIT_PARTIAL: u8 = 4;

pub fn env(config: Option<&Path>, sets: &[String], cmd: EnvCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        EnvCommand::Detect(a) => detect(&load(config, sets, &a.repo)?, &a),
        EnvCommand::Setup(a) => setup_cmd(&load(config, sets, &a.common.repo)?, &a.common, a.force),
        EnvCommand::Verify(a) => verify_cmd(&load(config, sets, &a.repo)?, &a),
        EnvCommand::Exec(a) => exec(&a),
    }
}

/// The `planning.environment_setup` section of the shared loader (defaults < config
/// file < seed 002 §8.2 variables < `-c key=value`).
fn load(
    file: Option<&Path>,
    sets: &[String],
    repo: &Path,
) -> anyhow::Result<EnvironmentSetupConfig> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    Ok(super::load_config(file, sets, repo, &env)?
        .config
        .planning
        .environment_setup)
}

fn repo_dir(repo: &Path) -> anyhow::Result<PathBuf> {
    Ok(dandori_fs::canonicalize(repo)?)
}

fn record_dir(a: &EnvArgs, repo: &Path) -> PathBuf {
    a.record_dir
        .clone()
        .unwrap_or_else(|| reuse::state_dir(repo))
}

fn detect(cfg: &EnvironmentSetupConfig, a: &EnvArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&a.repo)?;
    let analysis = analyzer::analyze(&repo, &cfg.analysis);
    let selected = selection::select_environment(&analysis, a.language.as_deref());
    if a.json {
        output::json(&serde_json::json!({
            "analysis": analysis,
            "selected_environment": selected,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    if analysis.ecosystems.is_empty() {
        output::line("no environment files found");
    }
    for e in &analysis.ecosystems {
        let prod = e
            .dependencies
            .iter()
            .filter(|d| d.kind == analyzer::DependencyKind::Prod)
            .count();
        output::line(&format!(
            "{:<10} {:<12} {}{}  {} dependencies ({} prod)",
            e.name,
            e.dir,
            e.package_manager,
            e.runtime_version
                .as_ref()
                .map(|v| format!("  {} {} ({})", e.name, v.value, v.source))
                .unwrap_or_default(),
            e.dependencies.len(),
            prod
        ));
        output::line(&format!("           files: {}", e.files.join(", ")));
    }
    for w in &analysis.warnings {
        output::progress(&format!("warning: {}: {}", w.path, w.message));
    }
    print_selected(&selected);
    Ok(ExitCode::SUCCESS)
}

fn print_selected(s: &SelectedEnvironment) {
    output::line(&format!("selected: {} ({})", s.name, s.reason));
    output::line("setup commands:");
    for c in &s.setup_commands {
        output::line(&format!("  $ {c}"));
    }
    output::line("verification commands:");
    for c in &s.verification_commands {
        match s.expected_results.get(c) {
            Some(x) => output::line(&format!("  $ {c}    # expect /{x}/")),
            None => output::line(&format!("  $ {c}")),
        }
    }
}

fn setup_cmd(cfg: &EnvironmentSetupConfig, a: &EnvArgs, force: bool) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&a.repo)?;
    let analysis = analyzer::analyze(&repo, &cfg.analysis);
    let say = |s: &str| output::progress(s);
    let quiet = |_: &str| {};
    let base_env = dandori_exec::run::base_env();
    let selected = phase::select_with_bootstrap(
        &analysis,
        a.language.as_deref(),
        &base_env,
        if a.json { &quiet } else { &say },
    )?;
    let regen = OfflineRegenerator;
    let mut opts = SetupOptions::new(&repo);
    opts.base_env = dandori_env::tools::with_tools_on_path(&base_env);
    opts.record_dir = record_dir(a, &repo);
    opts.config = cfg.clone();
    opts.force = force;
    opts.regenerator = Some(&regen);
    if !a.json {
        opts.progress = Some(&say);
        output::progress(&format!(
            "environment: {} ({})",
            selected.name, selected.reason
        ));
    }
    let out = setup::run(&selected, &opts)?;
    if a.json {
        output::json(&out);
    } else {
        for v in &out.verification_result.verification_results {
            output::line(&format!(
                "{:<7} {}{}",
                v.status,
                v.command,
                if v.required { "" } else { "  (optional)" }
            ));
        }
        for w in &out.warnings {
            output::progress(&format!("warning: {w}"));
        }
        for e in &out.errors {
            output::error(e);
        }
        output::line(&format!(
            "{}: {}{} (records: {})",
            out.overall_status.as_str(),
            out.handover.setup_notes,
            if out.setup_result.reused {
                " [reused]"
            } else {
                ""
            },
            out.record_dir.display()
        ));
    }
    Ok(ExitCode::from(setup_exit_code(&out)))
}

/// 0 only when every required verification passed and nothing failed; a
/// required check that failed is 1 whatever `on_failure` says (as `env verify`);
/// [`EXIT_PARTIAL`] when only optional checks failed or warnings matter.
fn setup_exit_code(out: &dandori_env::setup::SetupOutcome) -> u8 {
    let required_failed = out
        .verification_result
        .verification_results
        .iter()
        .any(|v| v.required && v.status != "success");
    match out.overall_status {
        OverallStatus::Blocked => EXIT_BLOCKED,
        OverallStatus::Failed => 1,
        _ if required_failed => 1,
        OverallStatus::PartialSuccess => EXIT_PARTIAL,
        OverallStatus::Success => 0,
    }
}

fn verify_cmd(cfg: &EnvironmentSetupConfig, a: &EnvArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&a.repo)?;
    let analysis = analyzer::analyze(&repo, &cfg.analysis);
    let selected = selection::select_environment(&analysis, a.language.as_deref());
    let dir = record_dir(a, &repo);
    let timeout = Duration::from_secs(cfg.execution.command_timeout_seconds);
    let opts = VerifyOptions {
        repo: repo.clone(),
        environment: selected.name.clone(),
        env: activation::env_for(&repo),
        timeout,
        policy: dandori_exec::CommandPolicy::new(&cfg.security)?,
        log_dir: verify::log_dir(&dir),
        masker: dandori_trace::Masker::default(),
        limits: dandori_exec::ResourceLimits::seed_defaults(timeout),
        on_failure: cfg.verification.on_failure,
    };
    let record: VerificationRecord = verify::run(&verify::checks_from(&selected), &opts);
    dandori_env::records::write_json(&dir, dandori_env::records::VERIFICATION_FILE, &record)?;
    if a.json {
        output::json(&record);
    } else {
        for v in &record.verification_results {
            output::line(&format!(
                "{:<7} {}  → {}{}",
                v.status,
                v.command,
                v.actual,
                v.reason
                    .as_deref()
                    .map(|r| format!("  ({r})"))
                    .unwrap_or_default()
            ));
        }
        for w in &record.warnings {
            output::progress(&format!("warning: {w}"));
        }
        output::line(record.overall_status.as_str());
    }
    // `on_failure = ignore` never fails; fail and warn report a failed verification.
    let failed = record.overall_status == OverallStatus::Failed
        && cfg.verification.on_failure != OnFailure::Ignore;
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn exec(a: &EnvExecArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&a.repo)?;
    let code = activation::exec(&repo, &a.cmd, &dandori_exec::run::base_env())?;
    Ok(match code {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

/// The runner's environment phase: [`dandori_env::phase::prepare_run`] with the
/// run's config, mapped onto the runner's types.
pub struct EnvPhase {
    pub config: EnvironmentSetupConfig,
    pub base_env: BTreeMap<String, String>,
}

impl EnvironmentPhase for EnvPhase {
    fn prepare(&self, repo: &Path, run_dir: &Path) -> Result<EnvironmentReport, String> {
        let regen = OfflineRegenerator;
        let say = |s: &str| output::progress(&format!("environment: {s}"));
        let out = phase::prepare_run(
            &self.config,
            &self.base_env,
            repo,
            run_dir,
            Some(&regen),
            &say,
        )
        .map_err(|e| e.to_string())?;
        Ok(EnvironmentReport {
            status: match out.status {
                OverallStatus::Success => EnvironmentStatus::Success,
                OverallStatus::PartialSuccess => EnvironmentStatus::PartialSuccess,
                OverallStatus::Failed | OverallStatus::Blocked => EnvironmentStatus::Failed,
            },
            activation_env: out.activation_env,
            message: out.message,
        })
    }
}
