//! `dandori env detect | setup | verify | exec`: thin adapters over `dandori-env`,
//! and the runner's environment phase backed by the same library.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use dandori_config::{EnvironmentSetupConfig, OnFailure};
use dandori_env::records::{OverallStatus, VerificationRecord};
use dandori_env::regenerate::LlmRegenerator;
use dandori_env::setup::{
    ChainedRegenerator, CommandRegenerator, OfflineRegenerator, SetupOptions,
};
use dandori_env::verify::{self, VerifyOptions};
use dandori_env::{activation, analyzer, phase, reuse};
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
    // A repository is a directory: anything else is a usage error (exit 2),
    // said once, before the configuration or the analysis reads it.
    let repo = match &cmd {
        EnvCommand::Detect(a) | EnvCommand::Verify(a) => &a.repo,
        EnvCommand::Setup(a) => &a.common.repo,
        EnvCommand::Exec(a) => &a.repo,
    };
    repo_dir(repo)?;
    match cmd {
        EnvCommand::Detect(a) => detect(&load(config, sets, &a.repo)?, &a),
        EnvCommand::Setup(a) => setup_cmd(&load(config, sets, &a.common.repo)?, &a.common, a.force),
        EnvCommand::Verify(a) => verify_cmd(&load(config, sets, &a.repo)?, &a),
        EnvCommand::Exec(a) => exec(&load(config, sets, &a.repo)?, &a),
    }
}

/// The sandbox of commands run for `config` with `env` (`sandbox.mode`).
pub fn detect_sandbox(
    config: &dandori_config::Config,
    env: &BTreeMap<String, String>,
) -> dandori_exec::Sandbox {
    dandori_exec::Sandbox::detect(&dandori_exec::SandboxOptions::new(config.sandbox.mode).env(env))
}

/// The `planning.environment_setup` section of the shared loader (defaults < config
/// file < seed 002 §8.2 variables < `-c key=value`).
fn load(
    file: Option<&Path>,
    sets: &[String],
    repo: &Path,
) -> anyhow::Result<dandori_config::Config> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    Ok(super::load_config(file, sets, repo, &env)?.config)
}

/// This process's environment for children under `config`'s
/// `shell_environment_policy` (secrets removed).
pub fn child_env(config: &dandori_config::Config) -> BTreeMap<String, String> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    dandori_exec::child_env::filter(
        &env,
        &config.shell_environment_policy,
        &provider_keys(config),
    )
    .env
}

fn provider_keys(config: &dandori_config::Config) -> Vec<String> {
    config
        .llm
        .providers
        .iter()
        .filter_map(|p| p.api_key_env.clone())
        .collect()
}

fn repo_dir(repo: &Path) -> anyhow::Result<PathBuf> {
    let dir = dandori_fs::canonicalize(repo)?;
    if !dir.is_dir() {
        anyhow::bail!(
            "{}: not a directory: `dandori env` prepares a repository directory (reason code: {})",
            repo.display(),
            dandori_report::reason::USAGE_ERROR
        );
    }
    Ok(dir)
}

fn record_dir(a: &EnvArgs, repo: &Path) -> PathBuf {
    a.record_dir
        .clone()
        .unwrap_or_else(|| reuse::state_dir(repo))
}

/// The built-in ecosystems and the plugins found for `repo` (seed 002 §13.2),
/// run in `config`'s sandbox with the children's environment: the one registry
/// of every detection path (`env`, `plan`, the MCP server's `plan` and `env_detect`).
pub(crate) fn plugins(
    config: &dandori_config::Config,
    repo: &Path,
) -> dandori_env::plugins::Registry {
    let env = child_env(config);
    let sandbox = detect_sandbox(config, &env);
    dandori_env::plugins::discover(
        &config.planning.environment_setup.plugins,
        repo,
        &env,
        Some(sandbox),
    )
}

fn detect(config: &dandori_config::Config, a: &EnvArgs) -> anyhow::Result<ExitCode> {
    let cfg = &config.planning.environment_setup;
    let repo = repo_dir(&a.repo)?;
    let analysis = plugins(config, &repo).analyze(&repo, &cfg.analysis);
    // The commands setup will run: with the tools it bootstraps.
    let selected = phase::select_expected(
        &analysis,
        a.language.as_deref(),
        &dandori_exec::run::base_env(),
    );
    if a.json {
        // Seed 002 §3.5.1's return format beside the full analysis.
        let info = dandori_env::analyzer::info::environment_info(
            &analysis,
            &selected,
            &repo,
            dandori_env::analyzer::info::INFO_FILE_BYTES,
        );
        output::json(&serde_json::json!({
            "analysis": analysis,
            "selected_environment": selected,
            "environment_info": info,
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

fn setup_cmd(
    config: &dandori_config::Config,
    a: &EnvArgs,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let cfg = &config.planning.environment_setup;
    let repo = repo_dir(&a.repo)?;
    let registry = plugins(config, &repo);
    let analysis = registry.analyze(&repo, &cfg.analysis);
    let say = |s: &str| output::progress(s);
    let quiet = |_: &str| {};
    let base_env = dandori_exec::run::base_env();
    // The package-manager bootstrap is dandori's own fixed command, run
    // outside the setup sandbox; its record goes into setup.json.
    let sandbox = detect_sandbox(config, &child_env(config));
    // Seed 002 §12.2: the primary environment and the other languages' ecosystems.
    let plans = dandori_env::parallel::plan(
        &analysis,
        a.language.as_deref(),
        &base_env,
        if a.json { &quiet } else { &say },
    )?;
    let selected = plans[0].selected.clone();
    let process_env: BTreeMap<String, String> = std::env::vars().collect();
    let (model, model_warning) = model_regenerator(config, &process_env);
    if let Some(w) = &model_warning
        && !a.json
    {
        output::progress(w);
    }
    let regen = ChainedRegenerator {
        first: &OfflineRegenerator,
        then: model.as_ref().map(|m| m as &dyn CommandRegenerator),
    };
    let mut opts = SetupOptions::new(&repo);
    opts.masker = env_masker(&std::env::vars().collect());
    opts.record_dir = record_dir(a, &repo);
    opts.config = cfg.clone();
    opts.force = force;
    opts.regenerator = Some(&regen);
    opts.base_env = dandori_env::tools::with_tools_on_path(&child_env(config));
    opts.plugins = registry;
    if !a.json {
        output::progress(&sandbox.status().summary());
    }
    opts.sandbox = Some(sandbox);
    if !a.json {
        opts.progress = Some(&say);
        output::progress(&format!(
            "environment: {} ({})",
            selected.name, selected.reason
        ));
    }
    let multi = dandori_env::parallel::run(plans, &opts)?;
    let out = &multi.primary;
    if a.json {
        output::json(&multi);
    } else {
        for (r, o) in multi.ecosystems.iter().skip(1).zip(&multi.others) {
            let Some(o) = o else { continue };
            for v in &o.verification_result.verification_results {
                output::line(&format!(
                    "{:<7} [{}] {}{}",
                    v.status,
                    r.key,
                    v.command,
                    if v.required { "" } else { "  (optional)" }
                ));
            }
        }
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
        for r in multi.ecosystems.iter().skip(1) {
            output::line(&format!(
                "{} [{}]: {} environment in {}{} (records: {})",
                r.overall_status.as_str(),
                r.key,
                r.environment,
                if r.root == "." { "." } else { r.root.as_str() },
                if r.reused { " [reused]" } else { "" },
                r.record_dir
            ));
        }
    }
    Ok(ExitCode::from(setup_exit_code(out)))
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

fn verify_cmd(config: &dandori_config::Config, a: &EnvArgs) -> anyhow::Result<ExitCode> {
    let cfg = &config.planning.environment_setup;
    let repo = repo_dir(&a.repo)?;
    let registry = plugins(config, &repo);
    let analysis = registry.analyze(&repo, &cfg.analysis);
    // The checks of the tools setup used (uv, the tool cache's pnpm and yarn).
    let selected = phase::select_expected(
        &analysis,
        a.language.as_deref(),
        &dandori_exec::run::base_env(),
    );
    let dir = record_dir(a, &repo);
    let timeout = cfg.command_timeout();
    let base = child_env(config);
    let sandbox = detect_sandbox(config, &base);
    let opts = VerifyOptions {
        repo: repo.clone(),
        environment: selected.name.clone(),
        env: activation::env_for_with(&repo, &base),
        timeout,
        policy: dandori_exec::CommandPolicy::new(&cfg.security)?,
        log_dir: verify::log_dir(&dir),
        masker: env_masker(&std::env::vars().collect()),
        limits: dandori_exec::ResourceLimits::configured(&cfg.resources, timeout),
        on_failure: cfg.verification.on_failure(),
        sandbox: Some(sandbox),
    };
    let record: VerificationRecord = verify::run_with_plugins(&selected, &opts, &registry);
    dandori_env::records::write_json(&dir, dandori_env::records::VERIFICATION_FILE, &record)?;
    // The checks alone can pass where nothing works (`python3 --version` with
    // no `.venv`): the last setup's state decides too.
    let broken = not_working(
        &repo,
        &selected.name,
        &record,
        cfg.verification.on_failure(),
    );
    if a.json {
        let mut v = serde_json::to_value(&record)?;
        if let (Some(obj), Some((code, why, _))) = (v.as_object_mut(), &broken) {
            obj.insert("reason_code".into(), serde_json::json!(code));
            obj.insert("reason".into(), serde_json::json!(why));
        }
        output::json(&v);
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
    Ok(match broken {
        Some((code, why, exit)) => {
            output::error(&format!("{code}: {why}"));
            ExitCode::from(exit)
        }
        None => ExitCode::SUCCESS,
    })
}

/// Why the environment of `repo` does not work — reason code, message, exit
/// code — or `None` when it does: its last setup (state.json) failed
/// ([`ENVIRONMENT_FAILED`](dandori_report::reason::ENVIRONMENT_FAILED), exit 1)
/// or was blocked (its `ENV_*` code, [`EXIT_BLOCKED`]), what it prepared is gone,
/// or a required check failed (`on_failure = ignore` never fails on checks).
fn not_working(
    repo: &Path,
    environment: &str,
    record: &VerificationRecord,
    on_failure: OnFailure,
) -> Option<(String, String, u8)> {
    let failed_env = dandori_report::reason::ENVIRONMENT_FAILED.to_string();
    if let Some(state) = reuse::load(repo) {
        let record = reuse::state_dir(repo).join(reuse::STATE_FILE);
        match state.overall_status {
            OverallStatus::Blocked => {
                let (code, why) = state
                    .setup
                    .blocked
                    .as_ref()
                    .map(|b| (b.code.clone(), b.reason.clone()))
                    .unwrap_or_else(|| (failed_env.clone(), "blocked".into()));
                return Some((
                    code,
                    format!(
                        "the last setup of the {} environment was blocked: {why} (setup state: {})",
                        state.environment,
                        record.display()
                    ),
                    EXIT_BLOCKED,
                ));
            }
            OverallStatus::Failed => {
                let why = state.setup.errors.first().cloned().unwrap_or_default();
                return Some((
                    failed_env,
                    format!(
                        "the last setup of the {} environment failed{}; run `dandori env setup` again (setup state: {})",
                        state.environment,
                        if why.is_empty() {
                            String::new()
                        } else {
                            format!(": {why}")
                        },
                        record.display()
                    ),
                    1,
                ));
            }
            OverallStatus::Success | OverallStatus::PartialSuccess => {
                if state.environment == environment
                    && !reuse::artifacts_present(repo, &state.environment, &state.root)
                {
                    return Some((
                        failed_env,
                        format!(
                            "the {} environment prepared at {} is gone (its virtual environment or node_modules was removed); run `dandori env setup`",
                            state.environment, state.prepared_at
                        ),
                        1,
                    ));
                }
            }
        }
    }
    let failed: Vec<String> = record
        .verification_results
        .iter()
        .filter(|v| v.required && v.status != "success")
        .map(|v| format!("`{}`", v.command))
        .collect();
    if record.overall_status == OverallStatus::Failed && on_failure != OnFailure::Ignore {
        return Some((
            failed_env,
            format!(
                "the {environment} environment does not work: required verification failed: {}",
                if failed.is_empty() {
                    record.errors.join("; ")
                } else {
                    failed.join(", ")
                }
            ),
            1,
        ));
    }
    None
}

/// The user's own command: no command policy, but the same sandbox as every other
/// command (the repository writable, no network) unless `--no-sandbox`.
fn exec(config: &dandori_config::Config, a: &EnvExecArgs) -> anyhow::Result<ExitCode> {
    let repo = repo_dir(&a.repo)?;
    let base = child_env(config);
    let sandbox = if a.no_sandbox {
        None
    } else {
        let s = detect_sandbox(config, &base);
        if let Some(reason) = &s.status().fallback_reason
            && s.status().kind == dandori_exec::SandboxKind::None
            && !s.status().disabled
        {
            output::progress(&format!(
                "warning: running unsandboxed: no sandbox works here ({reason})"
            ));
        }
        let policy = dandori_exec::SandboxPolicy::worktree(&repo, &[])
            .with_network(a.network)
            .in_git_worktree(&repo);
        Some((s, dandori_env::tools::with_tools_read_only(policy, &base)))
    };
    let code = activation::exec(&repo, &a.cmd, &base, sandbox)?;
    Ok(match code {
        Some(c) => ExitCode::from(u8::try_from(c).unwrap_or(1)),
        None => ExitCode::from(1),
    })
}

/// The model that regenerates failed setup commands (seed 002 §5.2): the one of
/// `llm.default_provider` when `planning.environment_setup.regeneration.enabled`.
/// A provider that cannot be used (no key, bad URL) is a warning: the offline
/// rules still apply.
pub fn model_regenerator(
    config: &dandori_config::Config,
    env: &BTreeMap<String, String>,
) -> (Option<LlmRegenerator>, Option<String>) {
    if !config.planning.environment_setup.regeneration.enabled {
        return (None, None);
    }
    match LlmRegenerator::from_config(&config.llm, &|k: &str| env.get(k).cloned()) {
        Ok(r) => (r.map(|r| r.with_masker(env_masker(env))), None),
        Err(e) => (
            None,
            Some(format!(
                "warning: setup commands will not be regenerated by a model: {e}"
            )),
        ),
    }
}

/// The runner's environment phase: [`dandori_env::phase::prepare_run`] with the
/// run's config, mapped onto the runner's types.
pub struct EnvPhase {
    pub config: EnvironmentSetupConfig,
    /// The children's environment (secrets removed).
    pub base_env: BTreeMap<String, String>,
    /// The sandbox of setup and verification commands.
    pub sandbox: Option<dandori_exec::Sandbox>,
    /// The model that regenerates failed setup commands, if one is configured.
    pub model: Option<LlmRegenerator>,
    /// Why the configured model cannot be used, said when the phase runs.
    pub model_warning: Option<String>,
}

impl EnvPhase {
    /// The phase for `config`; `env` is the caller's environment (the provider's
    /// key is read from it, the children get it without secrets).
    pub fn new(config: &dandori_config::Config, env: &BTreeMap<String, String>) -> EnvPhase {
        let child_env = child_env(config);
        let sandbox = detect_sandbox(config, &child_env);
        let (model, model_warning) = model_regenerator(config, env);
        EnvPhase {
            config: config.planning.environment_setup.clone(),
            base_env: child_env,
            sandbox: Some(sandbox),
            model,
            model_warning,
        }
    }
}

impl EnvironmentPhase for EnvPhase {
    fn prepare(&self, repo: &Path, run_dir: &Path) -> Result<EnvironmentReport, String> {
        let regen = ChainedRegenerator {
            first: &OfflineRegenerator,
            then: self.model.as_ref().map(|m| m as &dyn CommandRegenerator),
        };
        let say = |s: &str| output::progress(&format!("environment: {s}"));
        if let Some(w) = &self.model_warning {
            say(w);
        }
        let out = phase::prepare_run(
            &self.config,
            &self.base_env,
            repo,
            run_dir,
            Some(&regen),
            &say,
            self.sandbox.clone(),
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
            setup_record: out.setup_record,
            summary: out.summary,
            details: serde_json::json!({
                "overall_status": out.outcome.as_ref().map(|o| o.overall_status.as_str()),
                "regenerations": out.outcome.as_ref().map(|o| &o.setup_result.regenerations),
            }),
            prepared_in: Some(out.prepared_in),
        })
    }
}

/// Setup and verification logs hide the values of the secret variables of `env`
/// (`dandori_trace::mask::is_secret_env`) besides the known key shapes.
fn env_masker(env: &BTreeMap<String, String>) -> dandori_trace::Masker {
    dandori_trace::Masker::default().with_env_secrets(env)
}
