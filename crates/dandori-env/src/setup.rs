//! EnvironmentSetupManager (seed 002 §5.6): runs the setup commands of the
//! selected environment under the command policy, classifies failures (§9.1),
//! retries retryable ones with exponential backoff (§9.2.1), asks a
//! [`CommandRegenerator`] for corrected commands on fixable ones (§9.2.2), stops at
//! once on fatal ones, verifies (§5.5), and writes the records.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dandori_config::{EnvironmentSetupConfig, OnFailure};
use dandori_exec::{CommandPolicy, CommandSpec, ExecError, ResourceLimits, run_command};
use dandori_plan::SelectedEnvironment;
use dandori_trace::Masker;
use serde::{Deserialize, Serialize};

use crate::EnvError;
use crate::activation;
use crate::analyzer::join_rel;
use crate::classify::{ErrorClass, ErrorKind, classify};
use crate::records::{
    self, AttemptLine, Blocked, CommandRecord, ENV_PACKAGE_UNAVAILABLE, ENV_REGISTRY_UNREACHABLE,
    ENV_TOOL_MISSING, Handover, OverallStatus, RegenerationRecord, SetupRecord, VerificationRecord,
};
use crate::reuse::{self, PreparedState};
use crate::selection::{CONDA_PREFIX_DIR, FALLBACK_KEY, MANIFEST_ERRORS_KEY, VENV_DIR};
use crate::verify::{self, VerifyOptions};

/// §9.2.1 default base wait.
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(5);

/// What a regenerator is told (§9.2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RegenerationRequest {
    pub environment: String,
    pub error_kind: ErrorKind,
    pub failed_command: String,
    pub exit_code: Option<i32>,
    /// The end of the command's output, secrets masked.
    pub error: String,
    /// §5.2 error analysis: what the error kind means, how it is handled, the
    /// detected environment (package manager, runtime, root) and the
    /// regeneration budget left.
    pub analysis: String,
    /// The setup commands as planned.
    pub setup_commands: Vec<String>,
    pub verification_commands: Vec<String>,
    pub expected_results: BTreeMap<String, String>,
}

impl RegenerationRequest {
    /// The prompt of seed 002 §9.2.2, for a model.
    pub fn prompt(&self) -> String {
        format!(
            "The following error occurred while setting up the {env} environment:\n\
             Command: {cmd}\nExit code: {code}\nError kind: {kind}\nOutput (end):\n{err}\n\n\
             Error analysis:\n{analysis}\n\n\
             Original setup commands:\n{setup}\n\n\
             Generate corrected setup commands that fix the error. They replace the failed \
             command and the commands after it. Use only package managers and build tools, \
             inside the repository (no sudo, no system paths, no global installs, no piping \
             downloads into a shell): every command is checked by a command policy and a \
             refused command counts as a failed attempt.\n\
             Return JSON of this form:\n\
             {{\n  \"setup_commands\": [\"corrected command 1\", \"corrected command 2\"],\n  \
             \"verification_commands\": [\"verification command 1\"],\n  \
             \"expected_results\": {{\"verification command 1\": \"expected output pattern\"}}\n}}\n",
            env = self.environment,
            cmd = self.failed_command,
            code = self
                .exit_code
                .map_or_else(|| "none".to_string(), |c| c.to_string()),
            kind = self.error_kind.as_str(),
            err = self.error,
            analysis = self.analysis,
            setup = self
                .setup_commands
                .iter()
                .map(|c| format!("- {c}"))
                .collect::<Vec<_>>()
                .join("\n"),
        )
    }
}

/// Corrected commands (§9.2.2 response).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegeneratedCommands {
    /// Which regenerator answered (`offline`, `llm:<provider>/<model>`); set by
    /// the regenerator, never read from the model's JSON.
    #[serde(skip)]
    pub source: String,
    pub setup_commands: Vec<String>,
    #[serde(default)]
    pub verification_commands: Vec<String>,
    #[serde(default)]
    pub expected_results: BTreeMap<String, String>,
}

impl RegeneratedCommands {
    /// Parses a model's answer: the JSON object in it (bare or in a code fence).
    pub fn parse(text: &str) -> Result<Self, EnvError> {
        let bad = |message: String| EnvError::Regeneration { message };
        let start = text
            .find('{')
            .ok_or_else(|| bad("no JSON object in the response".into()))?;
        let end = text
            .rfind('}')
            .filter(|e| *e > start)
            .ok_or_else(|| bad("unterminated JSON object in the response".into()))?;
        let parsed: RegeneratedCommands =
            serde_json::from_str(&text[start..=end]).map_err(|e| {
                bad(format!(
                    "response JSON at line {} column {}: {e}",
                    e.line(),
                    e.column()
                ))
            })?;
        if parsed.setup_commands.is_empty() {
            return Err(bad("`setup_commands` is empty".into()));
        }
        Ok(parsed)
    }
}

/// Produces corrected setup commands for a fixable error. The LLM layer
/// implements it; [`OfflineRegenerator`] is the deterministic built-in one.
pub trait CommandRegenerator {
    fn regenerate(&self, request: &RegenerationRequest) -> Result<RegeneratedCommands, EnvError>;
    /// How the setup record names this regenerator.
    fn name(&self) -> String {
        "custom".to_string()
    }
}

/// Rule-based regeneration for well-known fixable errors, used when no model
/// is configured: a lock file out of sync falls back from `npm ci` /
/// frozen installs to a plain install.
#[derive(Debug, Clone, Copy, Default)]
pub struct OfflineRegenerator;

impl CommandRegenerator for OfflineRegenerator {
    fn name(&self) -> String {
        OFFLINE.to_string()
    }

    fn regenerate(&self, r: &RegenerationRequest) -> Result<RegeneratedCommands, EnvError> {
        let fixed = match r.error_kind {
            ErrorKind::LockfileOutOfSync => {
                let c = r.failed_command.replace("npm ci", "npm install");
                let c = c
                    .replace(" --frozen-lockfile", "")
                    .replace(" --immutable", "")
                    .replace(" --locked", "")
                    .replace(" --frozen", "");
                (c != r.failed_command).then_some(c)
            }
            ErrorKind::NetworkError
            | ErrorKind::TemporaryServerError
            | ErrorKind::LockContention
            | ErrorKind::RegistryUnreachable
            | ErrorKind::VersionConflict
            | ErrorKind::PackageNotFound
            | ErrorKind::PackageUnavailable
            | ErrorKind::ConfigSyntaxError
            | ErrorKind::RuntimeUnavailable
            | ErrorKind::CommandFailed
            | ErrorKind::PolicyViolation
            | ErrorKind::ToolMissing
            | ErrorKind::DiskFull
            | ErrorKind::OutOfMemory
            | ErrorKind::PermissionDenied
            | ErrorKind::CommandTimeout
            | ErrorKind::SpawnFailed => None,
        };
        let Some(fixed) = fixed else {
            return Err(EnvError::Regeneration {
                message: format!(
                    "no offline rule fixes {} in `{}`; configure an LLM provider for regeneration",
                    r.error_kind.as_str(),
                    r.failed_command
                ),
            });
        };
        let pos = r
            .setup_commands
            .iter()
            .position(|c| *c == r.failed_command)
            .unwrap_or(0);
        let mut setup = vec![fixed];
        setup.extend(r.setup_commands.iter().skip(pos + 1).cloned());
        Ok(RegeneratedCommands {
            source: OFFLINE.to_string(),
            setup_commands: setup,
            verification_commands: Vec::new(),
            expected_results: BTreeMap::new(),
        })
    }
}

const OFFLINE: &str = "offline";

/// The built-in rules first; what they cannot fix goes to `then` (a model), if any.
pub struct ChainedRegenerator<'a> {
    pub first: &'a dyn CommandRegenerator,
    pub then: Option<&'a dyn CommandRegenerator>,
}

impl CommandRegenerator for ChainedRegenerator<'_> {
    fn name(&self) -> String {
        match self.then {
            Some(t) => format!("{} then {}", self.first.name(), t.name()),
            None => self.first.name(),
        }
    }

    fn regenerate(&self, r: &RegenerationRequest) -> Result<RegeneratedCommands, EnvError> {
        let (answer, by) = match (self.first.regenerate(r), self.then) {
            (Err(_), Some(then)) => (then.regenerate(r), then),
            (answer, _) => (answer, self.first),
        };
        answer.map(|mut c| {
            if c.source.is_empty() {
                c.source = by.name();
            }
            c
        })
    }
}

/// §5.2 error analysis for the regeneration prompt.
fn error_analysis(
    kind: ErrorKind,
    selected: &SelectedEnvironment,
    used: usize,
    budget: u32,
) -> String {
    let extra = |k: &str| {
        selected
            .extra
            .get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    let mut lines = vec![
        format!(
            "- {}: {} ({:?} error: corrected commands are asked for)",
            kind.as_str(),
            kind.describe(),
            kind.class()
        ),
        format!(
            "- environment: {} ({}); package manager: {}; runtime: {}; root: {}",
            selected.name,
            selected.reason,
            or_unknown(extra("package_manager")),
            or_unknown(extra("runtime_version")),
            or_unknown(extra("root"))
        ),
        format!(
            "- regeneration attempt {} of {budget} (regeneration.max_retries)",
            used + 1
        ),
    ];
    if let Some(t) = selected.extra.get("test_command").and_then(|v| v.as_str()) {
        lines.push(format!("- the project's tests run with `{t}`"));
    }
    lines.join("\n")
}

fn or_unknown(s: String) -> String {
    if s.is_empty() {
        "unknown".to_string()
    } else {
        s
    }
}

/// Asks `regenerator` once and records the attempt, answered or not.
fn ask_regenerator(
    regenerator: &dyn CommandRegenerator,
    request: &RegenerationRequest,
    setup: &mut SetupRecord,
) -> Result<RegeneratedCommands, EnvError> {
    let started = Instant::now();
    let answer = regenerator.regenerate(request);
    let mut record = RegenerationRecord {
        attempt: setup.regenerations.len() as u32 + 1,
        regenerator: regenerator.name(),
        error_kind: request.error_kind,
        failed_command: request.failed_command.clone(),
        status: "proposed".to_string(),
        setup_commands: Vec::new(),
        error: None,
        duration_ms: started.elapsed().as_millis() as u64,
    };
    match &answer {
        Ok(new) => {
            if !new.source.is_empty() {
                record.regenerator = new.source.clone();
            }
            record.setup_commands = new.setup_commands.clone();
        }
        Err(e) => {
            record.status = "failed".to_string();
            record.error = Some(e.to_string());
        }
    }
    setup.regenerations.push(record);
    answer
}

/// How to run the sub-phase.
pub struct SetupOptions<'a> {
    pub repo: PathBuf,
    /// Where setup.json, verification.json, handover.json, error_report.md and the
    /// logs go: `<run>/environment` in a run, `reuse::state_dir` otherwise.
    pub record_dir: PathBuf,
    /// Where `environment_attempts.jsonl` and `environment_stats.json` go
    /// (across runs: the runs root, or `reuse::state_dir`).
    pub stats_dir: PathBuf,
    pub config: EnvironmentSetupConfig,
    /// Prepare again even when nothing changed.
    pub force: bool,
    pub regenerator: Option<&'a dyn CommandRegenerator>,
    pub backoff_base: Duration,
    /// The environment commands start from (`PATH`, `HOME`, proxies).
    pub base_env: BTreeMap<String, String>,
    pub masker: Masker,
    /// Seed 002 §11.2 limits; `None` for the defaults for the configured timeout.
    pub limits: Option<ResourceLimits>,
    /// Progress lines (the CLI prints them).
    pub progress: Option<&'a dyn Fn(&str)>,
    /// The sandbox of setup commands (network on, the repository and package
    /// caches writable) and of verification commands (network off). `None`: run
    /// unconfined (library callers that confine the whole process themselves).
    pub sandbox: Option<dandori_exec::Sandbox>,
    /// What the package-manager bootstrap did before (`tool_bootstrap` of
    /// setup.json): `phase::select_with_bootstrap`'s report.
    pub tool_bootstrap: Option<crate::records::ToolBootstrap>,
    /// The ecosystem plugins found for this repository: the one that detected
    /// the environment (`extra.plugin`) runs `verify_environment`.
    pub plugins: crate::plugins::Registry,
    /// Which ecosystem's state this setup reads and writes (`reuse::state_file`):
    /// `None` for the primary one.
    pub state_key: Option<String>,
    /// Roots of ecosystems set up at the same time (seed 002 §12.2): what
    /// appears under them is theirs, not in this setup's `created_files`.
    pub other_roots: Vec<String>,
}

impl<'a> SetupOptions<'a> {
    /// Defaults: records and statistics in `reuse::state_dir`, default
    /// config, 5 s backoff base, this process's base environment.
    pub fn new(repo: impl Into<PathBuf>) -> Self {
        let repo = repo.into();
        let dir = reuse::state_dir(&repo);
        SetupOptions {
            record_dir: dir.clone(),
            stats_dir: dir,
            repo,
            config: EnvironmentSetupConfig::default(),
            force: false,
            regenerator: None,
            backoff_base: DEFAULT_BACKOFF_BASE,
            base_env: dandori_exec::run::base_env(),
            masker: Masker::default(),
            limits: None,
            progress: None,
            sandbox: None,
            tool_bootstrap: None,
            plugins: crate::plugins::Registry::default(),
            state_key: None,
            other_roots: Vec::new(),
        }
    }

    fn say(&self, s: &str) {
        if let Some(p) = self.progress {
            p(&self.masker.mask_str(s));
        }
    }

    fn limits(&self) -> ResourceLimits {
        self.limits.clone().unwrap_or_else(|| {
            ResourceLimits::configured(&self.config.resources, self.config.command_timeout())
        })
    }
}

/// The sub-phase's result (§5.6.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SetupOutcome {
    pub overall_status: OverallStatus,
    pub setup_result: SetupRecord,
    pub verification_result: VerificationRecord,
    pub handover: Handover,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
    /// The execution phase may start (§6.2: failed stops, partial continues with warnings).
    pub proceed: bool,
    pub record_dir: PathBuf,
}

fn root_of(selected: &SelectedEnvironment) -> String {
    selected
        .extra
        .get("root")
        .and_then(|v| v.as_str())
        .unwrap_or(".")
        .to_string()
}

const BUILTINS: &[&str] = &[
    "cd", "export", "test", "[", "echo", "true", "false", "pwd", "type", "printf",
];

/// Programs of `line` that are not installed (commands with a `/` are skipped:
/// they are created by earlier commands or resolved against a directory).
fn missing_tools(policy: &CommandPolicy, line: &str, path: &str, repo: &Path) -> Vec<String> {
    let Ok(parsed) = policy.check(line) else {
        return Vec::new();
    };
    parsed
        .commands
        .iter()
        .map(|c| c.program.as_str())
        .filter(|p| !p.is_empty() && !p.contains('/') && !BUILTINS.contains(p))
        .filter(|p| dandori_exec::run::find_program(p, path, repo).is_none())
        .map(str::to_string)
        .collect()
}

fn now() -> String {
    dandori_trace::now_rfc3339()
}

fn masked_tail(m: &Masker, s: &str) -> String {
    m.mask_str(s)
}

/// Runs the environment sub-phase for `selected` in `opts.repo`.
pub fn run(
    selected: &SelectedEnvironment,
    opts: &SetupOptions<'_>,
) -> Result<SetupOutcome, EnvError> {
    let started = Instant::now();
    let started_at = now();
    let repo = dandori_fs::canonicalize(&opts.repo)?;
    let root = root_of(selected);
    let previous = reuse::load_for(&repo, opts.state_key.as_deref());
    let created = previous
        .as_ref()
        .map(|s| s.setup.created_files.clone())
        .unwrap_or_default();
    let fingerprint = reuse::fingerprint(&repo, selected, &created)?;
    dandori_fs::create_dir_all(&opts.record_dir)?;

    // 7. Reuse.
    if !opts.force
        && let Some(state) = previous
        && state.fingerprint == fingerprint
        && !matches!(
            state.overall_status,
            OverallStatus::Failed | OverallStatus::Blocked
        )
        && reuse::artifacts_present(&repo, &state.environment, &state.root)
    {
        opts.say(&format!(
            "environment {} unchanged since {}: reusing it (--force to prepare again)",
            state.environment, state.prepared_at
        ));
        let mut setup = state.setup.clone();
        setup.reused = true;
        setup.commands_executed.clear();
        setup.started_at = started_at;
        setup.finished_at = now();
        setup.duration_ms = started.elapsed().as_millis() as u64;
        setup.warnings.push(format!(
            "reused the environment prepared at {} (manifests and lock files unchanged)",
            state.prepared_at
        ));
        return finish(
            opts,
            &repo,
            selected,
            setup,
            state.verification.clone(),
            true,
        );
    }

    let policy = CommandPolicy::new(&opts.config.security)?;
    let timeout = opts.config.command_timeout();
    let limits = opts.limits();
    let log_dir = opts.record_dir.join("logs");
    let mut setup = SetupRecord {
        setup_phase: "environment_setup".to_string(),
        environment: selected.name.clone(),
        repo: repo.display().to_string(),
        root: root.clone(),
        started_at,
        finished_at: String::new(),
        duration_ms: 0,
        fingerprint,
        reused: false,
        setup_commands: selected.setup_commands.clone(),
        commands_executed: Vec::new(),
        verification_results: Vec::new(),
        overall_status: OverallStatus::Failed,
        blocked: None,
        regenerations: Vec::new(),
        install_rung: None,
        resolved_as_of: None,
        created_files: Vec::new(),
        tool_bootstrap: None,
        variables: BTreeMap::new(),
        limits_applied: Vec::new(),
        network_allowed: Vec::new(),
        warnings: Vec::new(),
        errors: Vec::new(),
    };
    let mut verification_cmds = selected.clone();

    if !opts.config.enabled {
        setup.overall_status = OverallStatus::Success;
        setup
            .warnings
            .push("planning.environment_setup.enabled is false: nothing was run".into());
        let v = skipped_verification(selected, opts, "environment setup is disabled");
        return finish(opts, &repo, selected, setup, v, false);
    }

    let mut fallbacks: BTreeMap<String, Vec<String>> = selected
        .extra
        .get(FALLBACK_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let fallback_lines: Vec<String> = fallbacks.keys().cloned().collect();
    let untracked_before = git_untracked(&repo, &opts.base_env);
    // Write-ahead: the directories setup creates are ignored before they exist,
    // so a kill in the middle of setup leaves `git status` clean and `resume`
    // goes on (instead of WORKTREE_DIRTY over a half-made .venv).
    exclude_ahead(&repo, &root, &opts.base_env)?;
    let mut blocked_before_fallback: Option<Blocked> = None;
    let lock_constraints: Option<(String, String)> = selected
        .extra
        .get(crate::lockfile::LOCK_CONSTRAINTS_KEY)
        .and_then(|v| {
            Some((
                v.get("lock")?.as_str()?.to_string(),
                v.get("file")?.as_str()?.to_string(),
            ))
        });
    let mut constraints_written = false;
    // Installs without a lock resolve as of the base commit's date.
    let mut as_of = resolve_as_of(&repo, selected, &opts.config, &opts.base_env)
        .filter(|_| lock_constraints.is_none());
    if let Some(date) = &as_of {
        opts.say(&format!(
            "resolving unlocked requirements as of {date}, the base commit's date (execution.resolve_as_of: now for today's index)"
        ));
        setup.resolved_as_of = Some(date.clone());
    }
    // A manifest of the environment that does not parse: setup would install
    // something other than what the project declares.
    let manifest_errors: Vec<String> = selected
        .extra
        .get(MANIFEST_ERRORS_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if !manifest_errors.is_empty() {
        for m in &manifest_errors {
            opts.say(&format!("error: {m}"));
        }
        setup.errors.extend(manifest_errors.iter().map(|m| {
            format!(
                "{}: the manifest does not parse, so the environment cannot be prepared as declared: {m}",
                ErrorKind::ConfigSyntaxError.as_str()
            )
        }));
        setup.overall_status = OverallStatus::Failed;
        setup.finished_at = now();
        setup.duration_ms = started.elapsed().as_millis() as u64;
        let v = skipped_verification(selected, opts, "a manifest does not parse");
        return finish(opts, &repo, selected, setup, v, false);
    }
    // §11.3: with `network.allowed_domains`, setup traffic goes through a
    // proxy on 127.0.0.1 that allows those hosts and the registries needed.
    let proxy = match crate::network::allowed_hosts(&opts.config.network, selected, &opts.base_env)
    {
        Some(hosts) => {
            let p =
                dandori_exec::proxy::DomainProxy::start(hosts).map_err(|e| EnvError::Record {
                    path: "127.0.0.1".into(),
                    message: format!("starting the setup proxy: {e}"),
                })?;
            opts.say(&format!(
                "network: setup traffic through {} (allowed: {})",
                p.url(),
                p.allowed().join(", ")
            ));
            setup.network_allowed = p.allowed().to_vec();
            Some(p)
        }
        None => None,
    };
    let mut commands = selected.setup_commands.clone();
    let mut i = 0;
    let mut setup_ok = true;
    let mut step = 0usize;
    let verification = 'phase: loop {
        'commands: while i < commands.len() {
            let line = commands[i].clone();
            if let Some((lock, file)) = &lock_constraints
                && !constraints_written
                && line.contains(file.as_str())
            {
                constraints_written = true;
                match crate::lockfile::write_constraints(&repo.join(&root), lock, file) {
                    Ok(n) => opts.say(&format!(
                        "{lock}: {n} locked versions written to {file} as install constraints"
                    )),
                    Err(e) => {
                        setup
                            .errors
                            .push(format!("{}: {e}", ErrorKind::ConfigSyntaxError.as_str()));
                        setup_ok = false;
                        break 'commands;
                    }
                }
            }
            let mut env = activation::environment(&repo, &root, &setup.variables, &opts.base_env);
            if let Some(p) = &proxy {
                env.extend(p.env());
            }
            let path = env.get("PATH").cloned().unwrap_or_default();
            let mut attempt: u32 = 0;
            loop {
                attempt += 1;
                let dated = as_of.as_ref().filter(|_| line.contains("uv pip install"));
                match dated {
                    Some(date) => env.insert(UV_EXCLUDE_NEWER.to_string(), date.clone()),
                    None => env.remove(UV_EXCLUDE_NEWER),
                };
                let dated = dated.is_some();
                step += 1;
                let refused_before = proxy.as_ref().map_or(0, |p| p.refusals().len());
                let mut record = CommandRecord {
                    command: line.clone(),
                    exit_code: None,
                    stdout: String::new(),
                    stderr: String::new(),
                    duration_ms: 0,
                    attempt,
                    error_kind: None,
                    error_class: None,
                    timed_out: false,
                    stdout_log: None,
                    stderr_log: None,
                };
                // The policy, then the tools (§12.3 early failure), then the run.
                let kind = match policy.check(&line) {
                    Err(v) => {
                        record.stderr = v.to_string();
                        Some(ErrorKind::PolicyViolation)
                    }
                    Ok(parsed) => {
                        let missing = missing_tools(&policy, &line, &path, &repo);
                        if !missing.is_empty() {
                            let reason = format!(
                                "`{}` is not installed on this machine (not found on PATH): the {} environment was detected but cannot be prepared here",
                                missing.join("`, `"),
                                selected.name
                            );
                            record.stderr = reason.clone();
                            setup.blocked = Some(Blocked {
                                code: ENV_TOOL_MISSING.to_string(),
                                reason,
                            });
                            Some(ErrorKind::ToolMissing)
                        } else {
                            for c in &parsed.commands {
                                for (k, v) in &c.assignments {
                                    setup.variables.insert(k.clone(), v.clone());
                                }
                            }
                            opts.say(&format!(
                                "$ {line}{}",
                                if attempt > 1 {
                                    format!("  (attempt {attempt})")
                                } else {
                                    String::new()
                                }
                            ));
                            if opts.sandbox.is_some() {
                                create_tool_caches(
                                    parsed.commands.iter().map(|c| c.program.as_str()),
                                    &setup_policy(&repo, &env),
                                    &env,
                                );
                            }
                            let mut spec = CommandSpec::shell(parsed, &repo)
                                .env(env.clone())
                                .timeout(timeout)
                                .logs(&log_dir, &format!("setup.{step:02}"))
                                .masker(opts.masker.clone())
                                .limits(limits.clone());
                            if let Some(s) = &opts.sandbox {
                                let policy = setup_policy(&repo, &env);
                                spec =
                                    spec.sandbox(s.clone(), policy, dandori_exec::Origin::Issued);
                            }
                            match run_command(&spec) {
                                Ok(o) => {
                                    record.exit_code = o.exit_code;
                                    record.stdout = masked_tail(&opts.masker, &o.stdout_tail);
                                    record.stderr = masked_tail(&opts.masker, &o.stderr_tail);
                                    record.duration_ms = o.duration_ms;
                                    record.timed_out = o.timed_out;
                                    record.stdout_log =
                                        o.stdout_log.as_ref().map(|p| p.display().to_string());
                                    record.stderr_log =
                                        o.stderr_log.as_ref().map(|p| p.display().to_string());
                                    setup.limits_applied = o.limits_applied.clone();
                                    if o.success() {
                                        None
                                    } else {
                                        let kind = classify(&o);
                                        if kind == ErrorKind::PackageUnavailable
                                            && let Some((package, version)) =
                                                crate::classify::unavailable_pin(&format!(
                                                    "{}\n{}",
                                                    o.stdout_tail, o.stderr_tail
                                                ))
                                        {
                                            setup.blocked = Some(Blocked {
                                                code: ENV_PACKAGE_UNAVAILABLE.to_string(),
                                                reason: format!(
                                                    "`{package}` {version} is pinned by the project but the package registry does not serve that version (`{line}`): the {} environment cannot be installed as declared",
                                                    selected.name
                                                ),
                                            });
                                        }
                                        Some(kind)
                                    }
                                }
                                Err(ExecError::ProgramNotFound { program, .. }) => {
                                    record.stderr = format!("`{program}` not found");
                                    Some(ErrorKind::ToolMissing)
                                }
                                Err(e) => {
                                    record.stderr = e.to_string();
                                    Some(ErrorKind::SpawnFailed)
                                }
                            }
                        }
                    }
                };
                let Some(mut kind) = kind else {
                    if fallback_lines.contains(&line) {
                        setup.install_rung = Some(INSTALL_RUNG_EDITABLE.to_string());
                    }
                    setup.commands_executed.push(record);
                    i += 1;
                    continue 'commands;
                };
                let mut class = kind.class();
                // §11.3: a host outside `allowed_domains` is not retried.
                let refused: Vec<String> = proxy
                    .as_ref()
                    .map(|p| {
                        let mut hosts: Vec<String> = p.refusals()[refused_before..]
                            .iter()
                            .map(|r| r.host.clone())
                            .collect();
                        hosts.dedup();
                        hosts
                    })
                    .unwrap_or_default();
                if let (false, Some(p)) = (refused.is_empty(), &proxy) {
                    class = ErrorClass::Fatal;
                    setup.blocked = Some(Blocked {
                        code: dandori_exec::proxy::ENV_NETWORK_DOMAIN_REFUSED.to_string(),
                        reason: format!(
                            "`{line}` tried to reach `{}`, which is not in planning.environment_setup.network.allowed_domains (allowed: {}); add it there to allow it",
                            refused.join("`, `"),
                            p.allowed().join(", ")
                        ),
                    });
                }
                // Nothing published by the base commit's date satisfies the
                // requirements (a pin newer than the commit): today's index.
                if dated && class != ErrorClass::Retryable && refused.is_empty() {
                    let date = as_of.take().unwrap_or_default();
                    // What failed (no solution, or a build backend of that
                    // date that cannot build the project), in its own words.
                    let why = dated_failure(&record.stderr);
                    opts.say(&format!(
                        "`{line}` failed as of {date} ({why}): resolving with today's index"
                    ));
                    setup.warnings.push(format!(
                        "`{line}` failed ({}: {why}) resolving as of {date}; resolved with today's index",
                        kind.as_str()
                    ));
                    setup.resolved_as_of = None;
                    record.error_kind = Some(kind);
                    record.error_class = Some(class);
                    setup.blocked = None;
                    setup.commands_executed.push(record);
                    continue;
                }
                let retries_left = attempt <= opts.config.execution.max_retries;
                if class == ErrorClass::Retryable && !retries_left {
                    if matches!(
                        kind,
                        ErrorKind::NetworkError | ErrorKind::TemporaryServerError
                    ) {
                        kind = ErrorKind::RegistryUnreachable;
                        class = kind.class();
                        setup.blocked = Some(Blocked {
                            code: ENV_REGISTRY_UNREACHABLE.to_string(),
                            reason: format!(
                                "the package registry stayed unreachable for `{line}` after {attempt} attempts: the {} environment was detected but cannot be installed from this machine",
                                selected.name
                            ),
                        });
                    } else {
                        class = ErrorClass::Fatal;
                    }
                }
                record.error_kind = Some(kind);
                record.error_class = Some(class);
                let error_text = format!("{}\n{}", record.stdout, record.stderr)
                    .trim()
                    .to_string();
                let exit_code = record.exit_code;
                setup.commands_executed.push(record);
                match class {
                    ErrorClass::Retryable => {
                        let wait = opts.backoff_base * 2u32.saturating_pow(attempt - 1);
                        opts.say(&format!(
                            "{} in `{line}`: retrying in {:.1} s",
                            kind.as_str(),
                            wait.as_secs_f64()
                        ));
                        std::thread::sleep(wait);
                    }
                    ErrorClass::Fixable | ErrorClass::Fatal
                        if has_fallback(kind)
                            && fallbacks
                                .get(&line)
                                .is_some_and(|rung| may_get_around(&line, rung, kind)) =>
                    {
                        let rung = fallbacks.remove(&line).unwrap_or_default();
                        opts.say(&format!(
                            "`{line}` failed ({}): falling back to `{}`",
                            kind.as_str(),
                            rung.join(" && ")
                        ));
                        setup.warnings.push(format!(
                            "`{line}` failed ({}); fell back to `{}`",
                            kind.as_str(),
                            rung.join(" && ")
                        ));
                        // The fallback may well reach what the first try could not;
                        // if it fails too, the first reason stands.
                        if let Some(b) = setup.blocked.take() {
                            blocked_before_fallback = Some(b);
                        }
                        if selected.name == crate::analyzer::PYTHON {
                            setup.install_rung = Some(INSTALL_RUNG_FALLBACK.to_string());
                        }
                        commands.splice(i..=i, rung);
                        continue 'commands;
                    }
                    ErrorClass::Fixable => {
                        let can = opts.config.regeneration.enabled
                            && (setup.regenerations.len() as u32)
                                < opts.config.regeneration.max_retries;
                        let regenerator = opts.regenerator.filter(|_| can);
                        let Some(regenerator) = regenerator else {
                            let why = if can {
                                "no command regenerator is configured (set llm.default_provider to let a model propose corrected commands)".to_string()
                            } else if !opts.config.regeneration.enabled {
                                "regeneration is disabled (planning.environment_setup.regeneration.enabled)".to_string()
                            } else {
                                format!(
                                    "regeneration.max_retries ({}) reached",
                                    opts.config.regeneration.max_retries
                                )
                            };
                            setup
                                .errors
                                .push(format!("`{line}` failed ({}): {why}", kind.as_str()));
                            setup_ok = false;
                            break 'commands;
                        };
                        let request = RegenerationRequest {
                            environment: selected.name.clone(),
                            error_kind: kind,
                            failed_command: line.clone(),
                            exit_code,
                            error: error_text,
                            analysis: error_analysis(
                                kind,
                                selected,
                                setup.regenerations.len(),
                                opts.config.regeneration.max_retries,
                            ),
                            setup_commands: commands.clone(),
                            verification_commands: verification_cmds.verification_commands.clone(),
                            expected_results: verification_cmds.expected_results.clone(),
                        };
                        opts.say(&format!(
                            "{} in `{line}`: regenerating the setup commands",
                            kind.as_str()
                        ));
                        match ask_regenerator(regenerator, &request, &mut setup) {
                            Ok(new) => {
                                commands.truncate(i);
                                commands.extend(new.setup_commands);
                                if !new.verification_commands.is_empty() {
                                    verification_cmds.verification_commands =
                                        new.verification_commands;
                                    verification_cmds.expected_results = new.expected_results;
                                }
                                continue 'commands;
                            }
                            Err(e) => {
                                setup.errors.push(format!(
                                    "`{line}` failed ({}); regeneration failed: {e}",
                                    kind.as_str()
                                ));
                                setup_ok = false;
                                break 'commands;
                            }
                        }
                    }
                    ErrorClass::Fatal => {
                        setup.errors.push(match &setup.blocked {
                            Some(b) => format!("{}: {}", b.code, b.reason),
                            None => {
                                format!("`{line}` failed with a fatal error ({})", kind.as_str())
                            }
                        });
                        setup_ok = false;
                        break 'commands;
                    }
                }
            }
        }
        // 5. Verification.
        let verification = if !setup_ok {
            skipped_verification(selected, opts, "setup failed")
        } else if !opts.config.verification.enabled {
            skipped_verification(selected, opts, "verification is disabled")
        } else {
            opts.say("verifying the environment");
            let vopts = VerifyOptions {
                repo: repo.clone(),
                environment: selected.name.clone(),
                env: activation::environment(&repo, &root, &setup.variables, &opts.base_env),
                timeout,
                policy: policy.clone(),
                log_dir: log_dir.clone(),
                masker: opts.masker.clone(),
                limits: limits.clone(),
                on_failure: opts.config.verification.on_failure(),
                sandbox: opts.sandbox.clone(),
            };
            verify::run_with_plugins(&verification_cmds, &vopts, &opts.plugins)
        };
        // §5.2: a failed verification that can be fixed goes back to regeneration.
        let regenerate = setup_ok
            && verification.performed
            && verification.overall_status == OverallStatus::Failed
            && opts.config.regeneration.enabled
            && (setup.regenerations.len() as u32) < opts.config.regeneration.max_retries;
        if let (true, Some(regenerator)) = (regenerate, opts.regenerator) {
            let failed = verification
                .verification_results
                .iter()
                .find(|r| r.required && r.status != "success");
            if let Some(failed) = failed {
                let request = RegenerationRequest {
                    environment: selected.name.clone(),
                    error_kind: ErrorKind::CommandFailed,
                    failed_command: failed.command.clone(),
                    exit_code: failed.exit_code,
                    error: format!(
                        "verification failed: expected `{}`, got `{}` ({})",
                        failed.expected,
                        failed.actual,
                        failed.reason.as_deref().unwrap_or("")
                    ),
                    analysis: error_analysis(
                        ErrorKind::CommandFailed,
                        selected,
                        setup.regenerations.len(),
                        opts.config.regeneration.max_retries,
                    ),
                    setup_commands: commands.clone(),
                    verification_commands: verification_cmds.verification_commands.clone(),
                    expected_results: verification_cmds.expected_results.clone(),
                };
                opts.say("verification failed: regenerating the setup commands");
                match ask_regenerator(regenerator, &request, &mut setup) {
                    Ok(new) => {
                        commands = new.setup_commands;
                        i = 0;
                        if !new.verification_commands.is_empty() {
                            verification_cmds.verification_commands = new.verification_commands;
                            verification_cmds.expected_results = new.expected_results;
                        }
                        continue 'phase;
                    }
                    Err(e) => setup
                        .warnings
                        .push(format!("regeneration after the failed verification: {e}")),
                }
            }
        }
        break verification;
    };
    setup.setup_commands = commands;
    if !setup_ok && setup.blocked.is_none() {
        setup.blocked = blocked_before_fallback;
    }
    setup.overall_status = if setup.blocked.is_some() {
        OverallStatus::Blocked
    } else if !setup_ok {
        OverallStatus::Failed
    } else if !verification.performed {
        OverallStatus::Success
    } else {
        match (
            verification.overall_status,
            opts.config.verification.on_failure(),
        ) {
            (OverallStatus::Success, _) => OverallStatus::Success,
            (OverallStatus::Blocked, _) => OverallStatus::Blocked,
            (OverallStatus::PartialSuccess, _) => OverallStatus::PartialSuccess,
            (OverallStatus::Failed, OnFailure::Fail) => OverallStatus::Failed,
            (OverallStatus::Failed, OnFailure::Warn) => {
                setup
                    .warnings
                    .push("verification failed; continuing with warnings (verification.on_failure = warn)".into());
                OverallStatus::PartialSuccess
            }
            (OverallStatus::Failed, OnFailure::Ignore) => {
                setup.warnings.push(
                    "verification failures ignored (verification.on_failure = ignore)".into(),
                );
                OverallStatus::Success
            }
        }
    };
    if setup.overall_status == OverallStatus::Failed && setup_ok {
        setup.errors.extend(verification.errors.iter().cloned());
    }
    let missing = missing_submodules(&repo);
    if !missing.is_empty() {
        setup.warnings.push(format!(
            "{}: git submodule{} `{}` (.gitmodules) not checked out: tests that read {} will fail although the environment is complete; run `git submodule update --init --recursive`",
            records::ENV_SUBMODULE_MISSING,
            if missing.len() == 1 { "" } else { "s" },
            missing.join("`, `"),
            if missing.len() == 1 { "it" } else { "them" },
        ));
        if setup.overall_status == OverallStatus::Success {
            setup.overall_status = OverallStatus::PartialSuccess;
        }
    }
    setup.finished_at = now();
    setup.duration_ms = started.elapsed().as_millis() as u64;
    if let Some(before) = untracked_before {
        setup.created_files = exclude_created(&repo, &before, &opts.base_env)?;
        setup.created_files.retain(|p| {
            !opts
                .other_roots
                .iter()
                .any(|r| p.starts_with(&format!("{r}/")))
        });
    }
    finish(opts, &repo, selected, setup, verification, false)
}

/// The submodule paths of the repository's `.gitmodules` that are missing or
/// empty in the work tree (paths outside the repository are ignored).
fn missing_submodules(repo: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(repo.join(".gitmodules")) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == "path").then(|| v.trim().trim_matches('"').to_string())
        })
        .filter(|p| {
            let rel = Path::new(p);
            !p.is_empty()
                && rel
                    .components()
                    .all(|c| matches!(c, std::path::Component::Normal(_)))
        })
        .filter(|p| std::fs::read_dir(repo.join(p)).map_or(true, |mut d| d.next().is_none()))
        .collect()
}

/// The package caches under `HOME` each tool writes (and creates when missing).
const TOOL_CACHES: &[(&str, &[&str])] = &[
    ("gradle", &[".gradle"]),
    ("gradlew", &[".gradle"]),
    ("mvn", &[".m2"]),
    ("mvnw", &[".m2"]),
    ("go", &["go/pkg"]),
    ("bun", &[".bun/install/cache"]),
    ("npm", &[".npm"]),
    ("npx", &[".npm"]),
    ("pnpm", &[".local/share/pnpm", ".pnpm-store"]),
    ("yarn", &[".yarn", ".cache"]),
    ("cargo", &[".cargo/registry", ".cargo/git"]),
    // pip's cache (`~/.cache/pip`), e.g. the uv bootstrap's `python -m pip`.
    ("python", &[".cache"]),
    ("python3", &[".cache"]),
];

/// The sandbox policy of a setup command: the repository, the package caches
/// and the network, with dandori's tool cache read-only inside them.
fn setup_policy(repo: &Path, env: &BTreeMap<String, String>) -> dandori_exec::SandboxPolicy {
    let mut policy = dandori_exec::SandboxPolicy::environment_setup(repo, env);
    // A linked worktree (the run's environment tree, inside the git directory):
    // git in it (setuptools-scm, hatch-vcs) reads the repository's git
    // directory, and tools that look for a workspace root in the parent
    // directories (uv, cargo) read the checkout around it, as they do from a
    // step's worktree. Shown readable, not mounted read-only over the tree,
    // which must stay writable under both mechanisms.
    if repo.join(".git").is_file()
        && let Some((_, common)) = dandori_exec::git::git_dirs(repo)
    {
        if common.file_name().is_some_and(|n| n == ".git")
            && let Some(main) = common.parent()
        {
            policy.readable.push(main.to_path_buf());
        }
        policy.readable.push(common);
    }
    crate::tools::with_tools_read_only(policy, env)
}

/// A sandbox can only make writable what exists: the caches the command's tools
/// would create on their own outside a sandbox (`~/.gradle` for the Gradle
/// wrapper's distribution, …) are created first, and only those the setup
/// sandbox allows writing.
pub(crate) fn create_tool_caches<'a>(
    programs: impl IntoIterator<Item = &'a str>,
    policy: &dandori_exec::SandboxPolicy,
    env: &BTreeMap<String, String>,
) {
    let Some(home) = env.get("HOME").map(PathBuf::from) else {
        return;
    };
    for program in programs {
        let program = program.rsplit('/').next().unwrap_or(program);
        for (tool, caches) in TOOL_CACHES {
            if program != *tool {
                continue;
            }
            for rel in *caches {
                let dir = home.join(rel);
                if !dir.exists() && policy.writable.contains(&dir) {
                    // Best effort: without it the tool reports its own error.
                    let _ = dandori_fs::create_dir_all(&dir);
                }
            }
        }
    }
}

/// Failures a fallback rung may get around (a broken build backend, a package
/// manager that corepack cannot fetch); not a missing tool, a full disk or a
/// policy refusal.
fn has_fallback(kind: ErrorKind) -> bool {
    match kind {
        ErrorKind::CommandFailed
        | ErrorKind::PackageNotFound
        | ErrorKind::PackageUnavailable
        | ErrorKind::VersionConflict
        | ErrorKind::ConfigSyntaxError
        | ErrorKind::LockfileOutOfSync
        | ErrorKind::RuntimeUnavailable
        | ErrorKind::RegistryUnreachable
        | ErrorKind::PermissionDenied
        | ErrorKind::NetworkError
        | ErrorKind::TemporaryServerError => true,
        ErrorKind::LockContention
        | ErrorKind::PolicyViolation
        | ErrorKind::ToolMissing
        | ErrorKind::DiskFull
        | ErrorKind::OutOfMemory
        | ErrorKind::CommandTimeout
        | ErrorKind::SpawnFailed => false,
    }
}

/// Whether `rung` may get around `line`'s failure: the same command with more
/// options (`yarn install --ignore-engines`) meets the same unreachable
/// registry, so it is not tried then (an unreachable registry ends quickly).
fn may_get_around(line: &str, rung: &[String], kind: ErrorKind) -> bool {
    let network = matches!(
        kind,
        ErrorKind::RegistryUnreachable | ErrorKind::NetworkError | ErrorKind::TemporaryServerError
    );
    !(network && rung.len() == 1 && rung[0].starts_with(&format!("{line} ")))
}

/// `install_rung` when the project's editable install worked.
pub const INSTALL_RUNG_EDITABLE: &str = "editable";
/// `install_rung` when it failed and the fallback ran: dependencies installed
/// without the project, the project importable from its directory (`.pth`).
pub const INSTALL_RUNG_FALLBACK: &str = "dependencies_without_project";

fn git(repo: &Path, args: &[&str], base: &BTreeMap<String, String>) -> Option<String> {
    let spec = CommandSpec::program("git", args.iter().map(|a| a.to_string()), repo)
        .env(base.clone())
        .timeout(Duration::from_secs(60));
    let out = run_command(&spec).ok()?;
    out.success().then_some(out.stdout_tail)
}

/// uv's variable for `--exclude-newer`.
const UV_EXCLUDE_NEWER: &str = "UV_EXCLUDE_NEWER";

/// The gist of a date-limited install's failure from its stderr: uv's `No
/// solution found` or the build backend's error (`AttributeError: module
/// 'setuptools.build_meta' has no attribute 'build_editable'`), else its first
/// `error:` line, at most 160 characters.
fn dated_failure(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let pick = lines
        .iter()
        .find(|l| l.contains("No solution found"))
        .or_else(|| {
            lines.iter().rev().find(|l| {
                l.split(':').next().is_some_and(|head| {
                    head.ends_with("Error") && !head.contains(' ') && head.len() > 5
                })
            })
        })
        .or_else(|| lines.iter().find(|l| l.starts_with("error:")))
        .copied()
        .unwrap_or("see the setup log");
    pick.chars().take(160).collect()
}

/// The date a Python project's unlocked install resolves as of
/// (`execution.resolve_as_of: base_commit`): the committer date of the
/// checkout's HEAD, the commit being set up. `None` for a lock-driven install
/// (uv.lock, poetry.lock, Pipfile.lock pin everything already), another
/// ecosystem, no git, or `resolve_as_of: now`.
fn resolve_as_of(
    repo: &Path,
    selected: &SelectedEnvironment,
    config: &EnvironmentSetupConfig,
    base: &BTreeMap<String, String>,
) -> Option<String> {
    let pip = selected
        .extra
        .get("package_manager")
        .and_then(|v| v.as_str())
        == Some("pip");
    if config.execution.resolve_as_of != dandori_config::ResolveAsOf::BaseCommit
        || selected.name != crate::analyzer::PYTHON
        || !pip
    {
        return None;
    }
    let date = git(repo, &["log", "-1", "--format=%cI", "HEAD"], base)?;
    let date = date.trim();
    (date.len() >= 20 && date.as_bytes()[4] == b'-').then(|| date.to_string())
}

/// Untracked paths of the work tree (`None` outside a git repository).
fn git_untracked(repo: &Path, base: &BTreeMap<String, String>) -> Option<Vec<String>> {
    let out = git(
        repo,
        &["status", "--porcelain", "--untracked-files=normal"],
        base,
    )?;
    Some(
        out.lines()
            .filter_map(|l| l.strip_prefix("?? "))
            .map(|p| p.trim_matches('"').to_string())
            .collect(),
    )
}

/// Setup must leave `git status` clean: what it created (`*.egg-info/`, a
/// generated `Cargo.lock`, build directories) goes into `.git/info/exclude`,
/// which is local to this clone and never committed. Returns those paths.
fn exclude_created(
    repo: &Path,
    before: &[String],
    base: &BTreeMap<String, String>,
) -> Result<Vec<String>, EnvError> {
    let Some(after) = git_untracked(repo, base) else {
        return Ok(Vec::new());
    };
    let created: Vec<String> = after.into_iter().filter(|p| !before.contains(p)).collect();
    if created.is_empty() {
        return Ok(created);
    }
    append_exclude(repo, &created, base)?;
    Ok(created)
}

/// The prepared-environment directories (`.venv/`, `.conda-env/`,
/// `node_modules/` under the environment's root) in `.git/info/exclude`
/// before setup runs: the record of what dandori is about to create. dandori's
/// own `.dandori/` too: tools that list files through git (`git ls-files`,
/// lint-staged, ripgrep) then never see its records.
fn exclude_ahead(repo: &Path, root: &str, base: &BTreeMap<String, String>) -> Result<(), EnvError> {
    let mut dirs: Vec<String> = [VENV_DIR, CONDA_PREFIX_DIR, "node_modules"]
        .iter()
        .map(|d| format!("{}/", join_rel(root, d)))
        .collect();
    dirs.push(".dandori/".to_string());
    append_exclude(repo, &dirs, base)
}

/// Appends `/PATH` lines to this clone's `.git/info/exclude` (local, never
/// committed), each once.
fn append_exclude(
    repo: &Path,
    paths: &[String],
    base: &BTreeMap<String, String>,
) -> Result<(), EnvError> {
    // An environment tree shares `info/exclude` with the user's clone: nothing
    // is written there (its records keep `created_files` for the fingerprint).
    if crate::tree::is_managed(repo) {
        return Ok(());
    }
    let Some(rel) = git(repo, &["rev-parse", "--git-path", "info/exclude"], base) else {
        return Ok(());
    };
    let exclude = repo.join(rel.trim());
    // Ecosystems set up at the same time share this file.
    static EXCLUDE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = EXCLUDE.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = dandori_fs::read_to_string(&exclude).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    let before = text.len();
    for p in paths {
        let line = format!("/{}", p.trim_start_matches('/'));
        if !text.lines().any(|l| l == line) {
            text.push_str(&format!("{line}\n"));
        }
    }
    if text.len() == before {
        return Ok(());
    }
    if let Some(parent) = exclude.parent() {
        dandori_fs::create_dir_all(parent)?;
    }
    dandori_fs::write_atomic(&exclude, text)?;
    Ok(())
}

fn skipped_verification(
    selected: &SelectedEnvironment,
    opts: &SetupOptions<'_>,
    why: &str,
) -> VerificationRecord {
    VerificationRecord {
        environment: selected.name.clone(),
        overall_status: if why == "setup failed" {
            OverallStatus::Failed
        } else {
            OverallStatus::Success
        },
        verification_results: Vec::new(),
        on_failure: verify::on_failure_str(opts.config.verification.on_failure()).to_string(),
        performed: false,
        warnings: vec![format!("verification not performed: {why}")],
        errors: Vec::new(),
    }
}

/// Writes the records and the state, appends the statistics.
fn finish(
    opts: &SetupOptions<'_>,
    repo: &Path,
    selected: &SelectedEnvironment,
    setup: SetupRecord,
    verification: VerificationRecord,
    reused: bool,
) -> Result<SetupOutcome, EnvError> {
    let mut setup = setup;
    if let Some(b) = &opts.tool_bootstrap {
        if b.error.is_some() || b.fallback.is_some() {
            let what = match b.status.as_str() {
                "failed" => "the bootstrap failed",
                "disabled" => "not bootstrapped",
                _ => "not as pinned",
            };
            setup.warnings.push(format!(
                "package manager {} {}: {what}{}{}",
                b.tool,
                b.version,
                b.error
                    .as_deref()
                    .map(|e| format!(" ({e})"))
                    .unwrap_or_default(),
                b.fallback
                    .as_deref()
                    .map(|f| format!("; the setup uses {f}"))
                    .unwrap_or_default()
            ));
        }
        setup.tool_bootstrap = Some(b.clone());
    }
    // Secrets in command lines or messages never reach records, reports or output.
    let mut setup = masked(&opts.masker, &setup);
    let verification = masked(&opts.masker, &verification);
    setup.verification_results = verification.verification_results.clone();
    let status = setup.overall_status;
    let mut warnings = setup.warnings.clone();
    warnings.extend(verification.warnings.iter().cloned());
    let errors = setup.errors.clone();
    let proceed = !matches!(status, OverallStatus::Failed | OverallStatus::Blocked);
    // Ready only when every required check passed (on_failure: warn lets the
    // run proceed, but does not make a failed check pass).
    let required_failed = verification
        .verification_results
        .iter()
        .any(|v| v.required && v.status != "success");
    let handover = handover(repo, &setup, &warnings, proceed && !required_failed);

    records::write_json(&opts.record_dir, records::SETUP_FILE, &setup)?;
    records::write_json(&opts.record_dir, records::VERIFICATION_FILE, &verification)?;
    records::write_json(&opts.record_dir, records::HANDOVER_FILE, &handover)?;
    let report = opts.record_dir.join(records::ERROR_REPORT_FILE);
    if status == OverallStatus::Success {
        if report.exists() {
            dandori_fs::remove_file(&report)?;
        }
    } else {
        dandori_fs::write_atomic(&report, records::error_report(&setup, &verification))?;
    }
    records::record_attempt(
        &opts.stats_dir,
        &AttemptLine {
            timestamp: setup.finished_at.clone(),
            environment: setup.environment.clone(),
            overall_status: status,
            duration_ms: setup.duration_ms,
            reused,
            errors: setup
                .commands_executed
                .iter()
                .filter_map(|c| c.error_kind)
                .collect(),
        },
    )?;
    if !reused {
        ignore_prepared_dirs(repo, &setup.root)?;
        reuse::save_for(
            repo,
            opts.state_key.as_deref(),
            &PreparedState {
                fingerprint: setup.fingerprint.clone(),
                environment: selected.name.clone(),
                root: setup.root.clone(),
                overall_status: status,
                prepared_at: setup.finished_at.clone(),
                variables: setup.variables.clone(),
                setup: setup.clone(),
                verification: verification.clone(),
            },
        )?;
    }
    Ok(SetupOutcome {
        overall_status: status,
        setup_result: setup,
        verification_result: verification,
        handover,
        warnings,
        errors,
        proceed,
        record_dir: opts.record_dir.clone(),
    })
}

fn masked<T: Serialize + serde::de::DeserializeOwned + Clone>(m: &Masker, v: &T) -> T {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| serde_json::from_value(m.mask_value(j)).ok())
        .unwrap_or_else(|| v.clone())
}

/// Prepared environments never end up in the project's commits: each gets a
/// `.gitignore` of `*` (uv and Python ≥ 3.13 do this for `.venv` already).
fn ignore_prepared_dirs(repo: &Path, root: &str) -> Result<(), EnvError> {
    for d in [VENV_DIR, CONDA_PREFIX_DIR, "node_modules"] {
        let dir = repo.join(join_rel(root, d));
        let ignore = dir.join(".gitignore");
        if dir.is_dir() && !ignore.exists() {
            dandori_fs::write_atomic(&ignore, "*\n")?;
        }
    }
    Ok(())
}

fn list_dir(p: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(p)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// Installed packages of the prepared environment: `name==version` (python,
/// from `*.dist-info`), `name@version` (node, from `node_modules`).
pub fn installed_packages(repo: &Path, root: &str) -> Vec<String> {
    let base = repo.join(join_rel(root, ""));
    let mut out = Vec::new();
    for env_dir in [VENV_DIR, CONDA_PREFIX_DIR] {
        for lib in list_dir(&base.join(env_dir).join("lib")) {
            for entry in list_dir(&lib.join("site-packages")) {
                let name = entry
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if let Some(stem) = name.strip_suffix(".dist-info")
                    && let Some((n, v)) = stem.rsplit_once('-')
                {
                    out.push(format!("{n}=={v}"));
                }
            }
        }
    }
    let nm = base.join("node_modules");
    let mut pkg_dirs = Vec::new();
    for e in list_dir(&nm) {
        let name = e
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('@') {
            pkg_dirs.extend(list_dir(&e));
        } else if !name.starts_with('.') {
            pkg_dirs.push(e);
        }
    }
    for d in pkg_dirs {
        if let Ok(text) = std::fs::read_to_string(d.join("package.json"))
            && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
            && let (Some(n), Some(ver)) = (
                v.get("name").and_then(|x| x.as_str()),
                v.get("version").and_then(|x| x.as_str()),
            )
        {
            out.push(format!("{n}@{ver}"));
        }
    }
    out.truncate(1000);
    out
}

fn handover(repo: &Path, setup: &SetupRecord, warnings: &[String], ready: bool) -> Handover {
    let mut commands: Vec<String> = Vec::new();
    for d in [
        format!("{VENV_DIR}/bin"),
        format!("{CONDA_PREFIX_DIR}/bin"),
        "node_modules/.bin".to_string(),
    ] {
        for e in list_dir(&repo.join(join_rel(&setup.root, &d))) {
            if let Some(n) = e.file_name() {
                let n = n.to_string_lossy().into_owned();
                if !n.starts_with('.') && !n.starts_with("activate") && !commands.contains(&n) {
                    commands.push(n);
                }
            }
        }
    }
    commands.truncate(300);
    let notes = match (ready, &setup.blocked) {
        (_, Some(b)) => format!("{}: {}", b.code, b.reason),
        (true, None) => format!(
            "{} environment prepared in {}; run commands inside it with `dandori env exec --repo {} -- CMD`{}",
            setup.environment,
            if setup.root == "." {
                "the repository root".to_string()
            } else {
                setup.root.clone()
            },
            repo.display(),
            if warnings.is_empty() {
                String::new()
            } else {
                format!("; {} warning(s)", warnings.len())
            }
        ),
        (false, None) => format!(
            "{} environment setup failed: {}",
            setup.environment,
            setup.errors.first().cloned().unwrap_or_default()
        ),
    };
    Handover {
        environment_ready: ready,
        environment_name: setup.environment.clone(),
        setup_status: setup.overall_status,
        installed_packages: installed_packages(repo, &setup.root),
        available_commands: commands,
        warnings: warnings.to_vec(),
        setup_notes: notes,
    }
}
