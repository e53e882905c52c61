//! `dandori policy check [--json] [--file FILE] -- CMD…`: the verdict of the command
//! policy on each line, through the same policy object `run_command` uses
//! (`dandori_tools::tool_command_policy` over the configured
//! `planning.environment_setup.security`). Exit 0 when every line is allowed, 1
//! otherwise, 2 for usage or IO errors (returned as `Err`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use dandori_exec::policy::{Decision, Verdict};
use serde::Serialize;

use crate::cli::{PolicyCheckArgs, PolicyCommand};
use crate::output;

pub fn policy(
    config: Option<&Path>,
    sets: &[String],
    cmd: PolicyCommand,
) -> anyhow::Result<ExitCode> {
    match cmd {
        PolicyCommand::Check(args) => check(config, sets, &args),
    }
}

#[derive(Serialize)]
struct Report<'a> {
    verdicts: &'a [Verdict],
    allowed: usize,
    refused: usize,
    needs_approval: usize,
}

fn check(
    config: Option<&Path>,
    sets: &[String],
    args: &PolicyCheckArgs,
) -> anyhow::Result<ExitCode> {
    let mut lines: Vec<String> = Vec::new();
    if let Some(file) = &args.file {
        let text = dandori_fs::read_to_string(file).map_err(|e| anyhow::anyhow!("{e}"))?;
        lines.extend(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(str::to_string),
        );
    }
    if !args.command.is_empty() {
        lines.push(args.command.join(" "));
    }
    if lines.is_empty() {
        anyhow::bail!("nothing to check: give a command after `--` or --file FILE");
    }
    let repo = dandori_fs::canonicalize(&args.repo)?;
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = super::load_config(config, sets, &repo, &env)?;
    let mut policy =
        dandori_tools::tool_command_policy(&loaded.config.planning.environment_setup.security)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .with_root(&repo);
    if let Some(home) = env.get("HOME") {
        policy = policy.with_home(std::path::Path::new(home));
    }
    let verdicts: Vec<Verdict> = lines.iter().map(|l| policy.evaluate(l)).collect();
    let count = |d: Decision| verdicts.iter().filter(|v| v.decision == d).count();
    let report = Report {
        verdicts: &verdicts,
        allowed: count(Decision::Allowed),
        refused: count(Decision::Refused),
        needs_approval: count(Decision::NeedsApproval),
    };
    if args.json {
        output::json(&report);
    } else {
        for v in &verdicts {
            output::line(&format!(
                "{} {} [{}]: {}",
                v.decision.as_str(),
                v.code.unwrap_or("-"),
                v.rule,
                v.command
            ));
            if v.decision != Decision::Allowed {
                output::line(&format!("  {}", v.message));
            }
        }
        if verdicts.len() > 1 {
            output::line(&format!(
                "{} allowed, {} refused, {} need approval",
                report.allowed, report.refused, report.needs_approval
            ));
        }
    }
    Ok(if report.allowed == verdicts.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
