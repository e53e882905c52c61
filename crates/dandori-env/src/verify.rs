//! EnvironmentVerifier (seed 002 §5.5): runs the verification commands inside the
//! prepared environment, checks exit codes and expected-output patterns, and
//! decides success / partial_success / failed (§5.5.2, §5.5.3).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_config::OnFailure;
use dandori_exec::{CommandPolicy, CommandSpec, ResourceLimits, run_command};
use dandori_plan::SelectedEnvironment;
use dandori_trace::Masker;
use regex::Regex;

use crate::records::{OverallStatus, VerificationRecord, VerificationResult};
use crate::selection::OPTIONAL_VERIFICATION_KEY;

/// One verification check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerificationCheck {
    pub command: String,
    pub expected: Option<String>,
    /// A failed optional check only makes the result partial (§5.5.3).
    pub required: bool,
}

/// The checks of a selected environment: its verification commands with their
/// expected results; those listed under `optional_verification_commands` are optional.
pub fn checks_from(selected: &SelectedEnvironment) -> Vec<VerificationCheck> {
    let optional: Vec<String> = selected
        .extra
        .get(OPTIONAL_VERIFICATION_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    selected
        .verification_commands
        .iter()
        .map(|c| VerificationCheck {
            command: c.clone(),
            expected: selected.expected_results.get(c).cloned(),
            required: !optional.contains(c),
        })
        .collect()
}

/// How to run the checks.
#[derive(Debug, Clone)]
pub struct VerifyOptions {
    pub repo: PathBuf,
    pub environment: String,
    pub env: BTreeMap<String, String>,
    pub timeout: Duration,
    pub policy: CommandPolicy,
    pub log_dir: PathBuf,
    pub masker: Masker,
    pub limits: ResourceLimits,
    pub on_failure: OnFailure,
    /// Run the checks in this sandbox (the repository writable, no network).
    pub sandbox: Option<dandori_exec::Sandbox>,
}

/// An expected result written as prose (the seed's `"パッケージ一覧表示"`) cannot
/// be matched: only the exit code counts for it.
fn is_description(expected: &str) -> bool {
    !expected.is_ascii()
}

/// Lines that are warnings worth attention (§5.5.2 "important warnings").
fn important_warnings(text: &str) -> Vec<String> {
    let re = Regex::new(r"(?i)\bwarn(ing)?\b").ok();
    let serious = [
        "deprecat",
        "incompatib",
        "conflict",
        "unmet",
        "not supported",
        "ebadengine",
        "vulnerab",
    ];
    text.lines()
        .filter(|l| re.as_ref().is_some_and(|r| r.is_match(l)))
        .filter(|l| {
            let low = l.to_ascii_lowercase();
            serious.iter().any(|s| low.contains(s))
        })
        .map(|l| l.trim().chars().take(300).collect())
        .collect()
}

fn first_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("")
        .chars()
        .take(200)
        .collect()
}

/// [`run`], then `verify_environment` of the plugin that detected `selected`
/// (seed 002 §13.2), run in the same sandbox with the same environment; its
/// results count as the checks' do.
pub fn run_with_plugins(
    selected: &SelectedEnvironment,
    opts: &VerifyOptions,
    registry: &crate::plugins::Registry,
) -> VerificationRecord {
    let record = run(&checks_from(selected), opts);
    let extra = crate::plugins::verify(registry, selected, &opts.repo, &opts.env);
    if extra.is_empty() {
        return record;
    }
    let mut results = record.verification_results;
    results.extend(extra);
    // The checks' own warnings stay; errors are recounted from all results.
    let warnings: Vec<String> = record
        .warnings
        .into_iter()
        .filter(|w| !w.starts_with("optional verification `"))
        .collect();
    let errors: Vec<String> = record
        .errors
        .into_iter()
        .filter(|e| !e.starts_with("verification `"))
        .collect();
    decide(results, warnings, errors, opts)
}

/// Runs the checks and decides the verification status (before `on_failure`).
pub fn run(checks: &[VerificationCheck], opts: &VerifyOptions) -> VerificationRecord {
    let mut results = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for (i, check) in checks.iter().enumerate() {
        let mut result = VerificationResult {
            command: check.command.clone(),
            expected: check.expected.clone().unwrap_or_default(),
            actual: String::new(),
            status: "failed".to_string(),
            required: check.required,
            exit_code: None,
            duration_ms: 0,
            reason: None,
        };
        let parsed = match opts.policy.check(&check.command) {
            Ok(p) => p,
            Err(v) => {
                result.reason = Some(format!("refused by the command policy: {v}"));
                errors.push(format!("`{}`: {v}", check.command));
                results.push(result);
                continue;
            }
        };
        let mut env = opts.env.clone();
        if opts.sandbox.is_some() {
            // Checks only read the environment, and the package caches are
            // read-only in the verification sandbox: `uv pip list` would fail
            // taking the cache lock.
            env.entry("UV_NO_CACHE".to_string())
                .or_insert_with(|| "1".to_string());
        }
        let mut spec = CommandSpec::shell(parsed, &opts.repo)
            .env(env)
            .timeout(opts.timeout)
            .logs(&opts.log_dir, &format!("verify.{:02}", i + 1))
            .masker(opts.masker.clone())
            .limits(opts.limits.clone());
        if let Some(s) = &opts.sandbox {
            spec = spec.sandbox(
                s.clone(),
                crate::tools::with_tools_read_only(
                    dandori_exec::SandboxPolicy::worktree(&opts.repo, &[]),
                    &opts.env,
                ),
                dandori_exec::Origin::Issued,
            );
        }
        let outcome = match run_command(&spec) {
            Ok(o) => o,
            Err(e) => {
                result.reason = Some(e.to_string());
                results.push(result);
                continue;
            }
        };
        result.exit_code = outcome.exit_code;
        result.duration_ms = outcome.duration_ms;
        let output = format!("{}\n{}", outcome.stdout_tail, outcome.stderr_tail);
        warnings.extend(
            important_warnings(&output)
                .into_iter()
                .map(|w| format!("`{}`: {w}", check.command)),
        );
        let matched = match check.expected.as_deref() {
            None => Some(first_line(&output)),
            Some(x) if is_description(x) => {
                result.reason = Some("expected result is a description: exit code only".into());
                Some(first_line(&output))
            }
            Some(x) => match Regex::new(x) {
                Ok(re) => re.find(&output).map(|m| {
                    let start = output[..m.start()].rfind('\n').map_or(0, |i| i + 1);
                    let end = output[m.end()..]
                        .find('\n')
                        .map_or(output.len(), |i| m.end() + i);
                    output[start..end].trim().to_string()
                }),
                Err(_) => output
                    .lines()
                    .find(|l| l.contains(x))
                    .map(|l| l.trim().to_string()),
            },
        };
        result.actual = matched.clone().unwrap_or_else(|| first_line(&output));
        if outcome.timed_out {
            result.reason = Some(format!("timed out after {} s", opts.timeout.as_secs()));
        } else if !outcome.success() {
            result.reason = Some(format!(
                "exit code {}",
                outcome
                    .exit_code
                    .map_or_else(|| "none (killed)".to_string(), |c| c.to_string())
            ));
        } else if matched.is_none() {
            result.reason = Some("expected pattern not found in the output".into());
        } else {
            result.status = "success".to_string();
        }
        results.push(result);
    }
    decide(results, warnings, errors, opts)
}

/// The record of `results`: failed when a required one failed, partial when
/// an optional one failed or warnings matter (§5.5.2, §5.5.3).
fn decide(
    results: Vec<VerificationResult>,
    mut warnings: Vec<String>,
    mut errors: Vec<String>,
    opts: &VerifyOptions,
) -> VerificationRecord {
    let required_failed = results.iter().any(|r| r.required && r.status != "success");
    let optional_failed = results.iter().any(|r| !r.required && r.status != "success");
    let overall_status = if required_failed {
        OverallStatus::Failed
    } else if optional_failed || !warnings.is_empty() {
        OverallStatus::PartialSuccess
    } else {
        OverallStatus::Success
    };
    for r in results.iter().filter(|r| r.status != "success") {
        let msg = format!(
            "verification `{}` failed: {}",
            r.command,
            r.reason.as_deref().unwrap_or("unknown")
        );
        if r.required {
            errors.push(msg);
        } else {
            warnings.push(format!("optional {msg}"));
        }
    }
    VerificationRecord {
        environment: opts.environment.clone(),
        overall_status,
        verification_results: results,
        on_failure: on_failure_str(opts.on_failure).to_string(),
        performed: true,
        warnings,
        errors,
    }
}

pub fn on_failure_str(o: OnFailure) -> &'static str {
    match o {
        OnFailure::Fail => "fail",
        OnFailure::Warn => "warn",
        OnFailure::Ignore => "ignore",
    }
}

/// Where verification logs go under a record directory.
pub fn log_dir(record_dir: &Path) -> PathBuf {
    record_dir.join("logs")
}
