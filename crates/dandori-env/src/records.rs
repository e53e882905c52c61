//! What the environment sub-phase leaves behind: `environment/setup.json` and
//! `environment/verification.json` (seed 002 §5.4.3), `environment/handover.json`
//! (§6.1.1), `environment/error_report.md` (§9.3), and statistics across runs
//! (§10.3): an append-only `environment_attempts.jsonl` and the derived
//! `environment_stats.json` in a stats directory.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::EnvError;
use crate::classify::{ErrorClass, ErrorKind};

pub const SETUP_FILE: &str = "setup.json";
pub const VERIFICATION_FILE: &str = "verification.json";
pub const HANDOVER_FILE: &str = "handover.json";
pub const ERROR_REPORT_FILE: &str = "error_report.md";
pub const ATTEMPTS_FILE: &str = "environment_attempts.jsonl";
pub const STATS_FILE: &str = "environment_stats.json";

/// Blocked: the environment was detected but cannot be prepared on this machine.
pub const ENV_TOOL_MISSING: &str = "ENV_TOOL_MISSING";
/// Blocked: the package registry stayed unreachable after the bounded retries.
pub const ENV_REGISTRY_UNREACHABLE: &str = "ENV_REGISTRY_UNREACHABLE";
/// Blocked: the registry does not serve a version the project pins exactly (a
/// 404 for `name@1.2.3`); the reason names the package and the version.
pub const ENV_PACKAGE_UNAVAILABLE: &str = "ENV_PACKAGE_UNAVAILABLE";
/// Warning (partial success): a git submodule of `.gitmodules` is not checked out,
/// so tests that read it fail although the environment is complete: a problem of
/// the checkout, not of the setup.
pub const ENV_SUBMODULE_MISSING: &str = "ENV_SUBMODULE_MISSING";

/// §5.4.3 `overall_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OverallStatus {
    Success,
    PartialSuccess,
    Failed,
    /// Detected, but cannot be prepared on this machine (tool missing,
    /// registry unreachable): `blocked` in the records says why.
    Blocked,
}

impl OverallStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OverallStatus::Success => "success",
            OverallStatus::PartialSuccess => "partial_success",
            OverallStatus::Failed => "failed",
            OverallStatus::Blocked => "blocked",
        }
    }
}

/// One execution of one setup command (§5.4.3 `commands_executed[]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandRecord {
    pub command: String,
    /// `None` when the command did not run (refused, tool missing) or was killed.
    pub exit_code: Option<i32>,
    /// Tail of stdout, secrets masked.
    pub stdout: String,
    pub stderr: String,
    pub duration_ms: u64,
    /// 1 for the first try of this command.
    pub attempt: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<ErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<ErrorClass>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub timed_out: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_log: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr_log: Option<String>,
}

/// §5.4.3 `verification_results[]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationResult {
    pub command: String,
    /// The expected pattern (a regex, or a literal when it is not one); empty
    /// when only the exit code is checked.
    pub expected: String,
    /// The matching line, else the first output line.
    pub actual: String,
    /// success | failed
    pub status: String,
    /// `false` for checks whose failure only makes the result partial (§5.5.3).
    pub required: bool,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The environment could not be prepared here, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocked {
    /// `ENV_TOOL_MISSING` | `ENV_REGISTRY_UNREACHABLE`
    pub code: String,
    pub reason: String,
}

/// One regeneration of the setup commands (§9.2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegenerationRecord {
    /// 1 for the first regeneration of this setup; every attempt counts against
    /// `regeneration.max_retries`, answered or not.
    #[serde(default)]
    pub attempt: u32,
    /// Who was asked: `offline` (built-in rules) or `llm:<provider>/<model>`.
    #[serde(default)]
    pub regenerator: String,
    pub error_kind: ErrorKind,
    pub failed_command: String,
    /// `proposed` (the commands below replace the failed one and the rest) or
    /// `failed` (no usable answer: `error` says why).
    #[serde(default)]
    pub status: String,
    pub setup_commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default)]
    pub duration_ms: u64,
}

/// `environment/verification.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VerificationRecord {
    pub environment: String,
    /// Verification alone: success | partial_success | failed.
    pub overall_status: OverallStatus,
    pub verification_results: Vec<VerificationResult>,
    /// `verification.on_failure` in force: fail | warn | ignore.
    pub on_failure: String,
    /// False when verification was disabled or setup failed first.
    pub performed: bool,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
}

/// `environment/setup.json`: §5.4.3 plus timing, reuse and blocking information.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetupRecord {
    /// Always `environment_setup`.
    pub setup_phase: String,
    pub environment: String,
    pub repo: String,
    /// Ecosystem directory relative to the repository.
    pub root: String,
    pub started_at: String,
    pub finished_at: String,
    pub duration_ms: u64,
    /// SHA-256 of the environment files and the setup commands.
    pub fingerprint: String,
    /// True when an unchanged prepared environment was reused (no command ran).
    pub reused: bool,
    pub setup_commands: Vec<String>,
    pub commands_executed: Vec<CommandRecord>,
    pub verification_results: Vec<VerificationResult>,
    pub overall_status: OverallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked: Option<Blocked>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub regenerations: Vec<RegenerationRecord>,
    /// Which rung of the Python install chain succeeded: `editable`, or
    /// `dependencies_without_project` after the editable install failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_rung: Option<String>,
    /// The date unlocked requirements were resolved as of
    /// (`execution.resolve_as_of: base_commit`), when that resolution held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved_as_of: Option<String>,
    /// Untracked paths the setup created, excluded in `.git/info/exclude` and
    /// left out of the reuse fingerprint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_files: Vec<String>,
    /// What dandori's own bootstrap of the package manager did before the setup
    /// (installed, found, or failed and what the setup used instead).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_bootstrap: Option<ToolBootstrap>,
    /// Variables later commands need (`activation`).
    #[serde(default)]
    pub variables: BTreeMap<String, String>,
    #[serde(default)]
    pub limits_applied: Vec<String>,
    /// The hosts setup commands could reach through dandori's proxy (seed
    /// 002 §11.3; empty: no filtering).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_allowed: Vec<String>,
    pub warnings: Vec<String>,
    pub errors: Vec<String>,
}

/// `setup.json`'s `tool_bootstrap`: the package manager of the one installer
/// decision (`crate::installer`), where it came from and, when dandori could
/// not install it, why and what the setup commands use instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolBootstrap {
    /// `uv`, `pnpm` or `yarn`.
    pub tool: String,
    /// The version dandori uses: the repository's pin, else dandori's own.
    pub version: String,
    /// Where the pin comes from (`packageManager: pnpm@10.18.3` in package.json).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned_by: Option<String>,
    /// `on_path` (the user's own), `cached` (already in the tool cache),
    /// `installed` (by this bootstrap), `failed`, `disabled`.
    pub status: String,
    /// The program the commands run (`<tools>/bin/pnpm`, `/usr/bin/uv`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The bootstrap's own commands, as run (outside any command sandbox).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// What the setup commands use when the tool is not there (`pip`, the
    /// cached pnpm of another version, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    #[serde(default)]
    pub duration_ms: u64,
}

/// §6.1.1: what the execution phase gets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handover {
    pub environment_ready: bool,
    pub environment_name: String,
    pub setup_status: OverallStatus,
    pub installed_packages: Vec<String>,
    pub available_commands: Vec<String>,
    pub warnings: Vec<String>,
    pub setup_notes: String,
}

pub fn write_json<T: Serialize>(dir: &Path, name: &str, value: &T) -> Result<PathBuf, EnvError> {
    let p = dir.join(name);
    dandori_fs::write_json_atomic(&p, value)?;
    Ok(p)
}

fn fence(s: &str) -> String {
    let body = if s.trim().is_empty() {
        "(empty)"
    } else {
        s.trim_end()
    };
    format!("```\n{body}\n```\n")
}

/// The markdown error report of §9.3.
pub fn error_report(setup: &SetupRecord, verification: &VerificationRecord) -> String {
    let mut md = String::new();
    md.push_str("## Environment setup error report\n\n");
    md.push_str(&format!("**Environment**: {}\n", setup.environment));
    let status = match (&setup.blocked, setup.overall_status) {
        (Some(_), _) => "blocked (cannot be prepared here)",
        (None, OverallStatus::Failed) => "failed",
        (None, OverallStatus::Blocked) => "blocked (cannot be prepared here)",
        (None, OverallStatus::PartialSuccess) => "partial success",
        (None, OverallStatus::Success) => "success",
    };
    md.push_str(&format!("**Status**: {status}\n\n"));
    if let Some(b) = &setup.blocked {
        md.push_str(&format!("**Blocked** (`{}`): {}\n\n", b.code, b.reason));
    }
    let failed: Vec<&CommandRecord> = setup
        .commands_executed
        .iter()
        .filter(|c| c.exit_code != Some(0))
        .collect();
    if !failed.is_empty() {
        md.push_str("### Error details\n\n");
        // The last try of each failed command.
        let mut last: BTreeMap<&str, &CommandRecord> = BTreeMap::new();
        for c in &failed {
            last.insert(c.command.as_str(), c);
        }
        for c in last.values() {
            md.push_str(&format!("Command: `{}`\n", c.command));
            match c.exit_code {
                Some(code) => md.push_str(&format!("Exit code: {code}\n")),
                None => md.push_str("Exit code: none (not run or killed)\n"),
            }
            if let Some(k) = c.error_kind {
                md.push_str(&format!("Error kind: {} ({:?})\n", k.as_str(), k.class()));
            }
            md.push_str(&format!("\n**Standard output**:\n{}\n", fence(&c.stdout)));
            md.push_str(&format!("**Standard error**:\n{}\n", fence(&c.stderr)));
        }
    }
    let vfail: Vec<&VerificationResult> = verification
        .verification_results
        .iter()
        .filter(|v| v.status != "success")
        .collect();
    if !vfail.is_empty() {
        md.push_str("### Verification failures\n\n");
        for v in vfail {
            md.push_str(&format!(
                "- `{}` ({}): expected `{}`, got `{}`{}\n",
                v.command,
                if v.required { "required" } else { "optional" },
                v.expected,
                v.actual,
                v.reason
                    .as_deref()
                    .map(|r| format!(" — {r}"))
                    .unwrap_or_default()
            ));
        }
        md.push('\n');
    }
    md.push_str("### Actions tried\n\n");
    let retries = setup
        .commands_executed
        .iter()
        .filter(|c| c.attempt > 1)
        .count();
    let mut n = 0;
    if retries > 0 {
        n += 1;
        md.push_str(&format!(
            "{n}. Retried with exponential backoff ({retries} retries)\n"
        ));
    }
    for r in &setup.regenerations {
        n += 1;
        match &r.error {
            None => md.push_str(&format!(
                "{n}. Regenerated the setup commands ({}) after {} in `{}`: {}\n",
                r.regenerator,
                r.error_kind.as_str(),
                r.failed_command,
                r.setup_commands.join(" ; ")
            )),
            Some(e) => md.push_str(&format!(
                "{n}. Asked {} to regenerate the setup commands after {} in `{}`: no usable answer ({e})\n",
                r.regenerator,
                r.error_kind.as_str(),
                r.failed_command
            )),
        }
    }
    if n == 0 {
        md.push_str("None.\n");
    }
    md.push_str("\n### Recommended manual action\n\n");
    let kinds: Vec<ErrorKind> = setup
        .commands_executed
        .iter()
        .filter_map(|c| c.error_kind)
        .collect();
    let advice = |k: &ErrorKind| -> &'static str {
        match k {
            ErrorKind::NetworkError
            | ErrorKind::RegistryUnreachable
            | ErrorKind::TemporaryServerError => {
                "Check that the package registry is reachable from this machine (proxy, mirror, offline cache)."
            }
            ErrorKind::LockContention => {
                "Make sure no other package manager runs in this repository."
            }
            ErrorKind::PackageNotFound => "Check the package names and versions in the manifest.",
            ErrorKind::PackageUnavailable => {
                "The registry does not serve the pinned version: change the pin (and the lock file) to a published release, or use a registry that has it."
            }
            ErrorKind::VersionConflict => "Relax or align the conflicting version constraints.",
            ErrorKind::ConfigSyntaxError => "Fix the syntax of the manifest named in the error.",
            ErrorKind::LockfileOutOfSync => {
                "Regenerate the lock file (`npm install`, `poetry lock`, …) and commit it."
            }
            ErrorKind::RuntimeUnavailable => {
                "Install the pinned runtime version or change the pin."
            }
            ErrorKind::CommandFailed => "Run the failing command by hand and read its output.",
            ErrorKind::PolicyViolation => {
                "Use commands the command policy allows, or extend allowed_commands."
            }
            ErrorKind::ToolMissing => {
                "Install the missing tool, then run `dandori env setup` again."
            }
            ErrorKind::DiskFull => "Free disk space.",
            ErrorKind::OutOfMemory => "Give the setup more memory or lower its parallelism.",
            ErrorKind::PermissionDenied => {
                "Prepare the environment without root-only steps, or by hand."
            }
            ErrorKind::CommandTimeout => {
                "Raise execution.command_timeout_seconds or speed the step up."
            }
            ErrorKind::SpawnFailed => {
                "Check that the command exists and the working directory is readable."
            }
        }
    };
    let mut seen = Vec::new();
    for k in &kinds {
        if !seen.contains(k) {
            seen.push(*k);
            md.push_str(&format!("- {}\n", advice(k)));
        }
    }
    if seen.is_empty() {
        md.push_str("- Check the verification commands above.\n");
    }
    let logs: Vec<&str> = setup
        .commands_executed
        .iter()
        .filter_map(|c| c.stderr_log.as_deref())
        .collect();
    if let Some(l) = logs.last() {
        md.push_str(&format!("\nSee the logs for details: `{l}`\n"));
    }
    md
}

/// One line of `environment_attempts.jsonl`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptLine {
    pub timestamp: String,
    pub environment: String,
    pub overall_status: OverallStatus,
    pub duration_ms: u64,
    pub reused: bool,
    #[serde(default)]
    pub errors: Vec<ErrorKind>,
}

/// §10.3 `environment_setup_stats`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentSetupStats {
    /// Setups that ran commands (reuses are counted apart).
    pub total_attempts: u64,
    pub successful: u64,
    pub partial_success: u64,
    pub failed: u64,
    pub reused: u64,
    pub average_duration_seconds: f64,
    pub by_environment: BTreeMap<String, BTreeMap<String, u64>>,
    pub common_errors: Vec<CommonError>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommonError {
    pub error: String,
    pub count: u64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsFile {
    pub environment_setup_stats: EnvironmentSetupStats,
}

/// Appends one attempt and rewrites the derived statistics atomically.
pub fn record_attempt(stats_dir: &Path, line: &AttemptLine) -> Result<StatsFile, EnvError> {
    // Ecosystems set up at the same time append to the same file.
    static STATS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = STATS.lock().unwrap_or_else(|e| e.into_inner());
    dandori_fs::create_dir_all(stats_dir)?;
    let path = stats_dir.join(ATTEMPTS_FILE);
    let mut text = serde_json::to_string(line).map_err(|e| EnvError::Record {
        path: path.display().to_string(),
        message: e.to_string(),
    })?;
    text.push('\n');
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| dandori_fs::FsError::new("opening", &path, e))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| dandori_fs::FsError::new("appending to", &path, e))?;
    let stats = compute_stats(stats_dir)?;
    write_json(stats_dir, STATS_FILE, &stats)?;
    Ok(stats)
}

/// Reads `environment_attempts.jsonl`; a torn last line (a crash mid-append) is skipped.
pub fn compute_stats(stats_dir: &Path) -> Result<StatsFile, EnvError> {
    let path = stats_dir.join(ATTEMPTS_FILE);
    let text = match dandori_fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.is_not_found() => String::new(),
        Err(e) => return Err(e.into()),
    };
    let mut s = EnvironmentSetupStats::default();
    let mut total_ms: u64 = 0;
    let mut errors: BTreeMap<&'static str, u64> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(a) = serde_json::from_str::<AttemptLine>(line) else {
            continue;
        };
        if a.reused {
            s.reused += 1;
            continue;
        }
        s.total_attempts += 1;
        total_ms += a.duration_ms;
        let key = match a.overall_status {
            OverallStatus::Success => {
                s.successful += 1;
                "success"
            }
            OverallStatus::PartialSuccess => {
                s.partial_success += 1;
                "partial_success"
            }
            OverallStatus::Failed => {
                s.failed += 1;
                "failed"
            }
            // Not prepared either; `by_environment` tells it apart.
            OverallStatus::Blocked => {
                s.failed += 1;
                "blocked"
            }
        };
        let by = s.by_environment.entry(a.environment.clone()).or_default();
        by.entry("success".into()).or_insert(0);
        by.entry("failed".into()).or_insert(0);
        *by.entry(key.into()).or_insert(0) += 1;
        for e in a.errors {
            *errors.entry(e.as_str()).or_default() += 1;
        }
    }
    if s.total_attempts > 0 {
        s.average_duration_seconds =
            ((total_ms as f64 / s.total_attempts as f64) / 100.0).round() / 10.0;
    }
    let mut common: Vec<CommonError> = errors
        .into_iter()
        .map(|(error, count)| CommonError {
            error: error.to_string(),
            count,
        })
        .collect();
    common.sort_by(|a, b| b.count.cmp(&a.count).then(a.error.cmp(&b.error)));
    s.common_errors = common;
    Ok(StatsFile {
        environment_setup_stats: s,
    })
}
