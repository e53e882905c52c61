//! `dandori ci` and `dandori init github-action | gitlab-ci`, adapted: the
//! event, the admission and the steps are `dandori_forge::ci_bot`'s, the
//! workflow files `dandori_forge::workflow`'s; here each step is this same
//! binary started as a child, and the outcome is printed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use dandori_forge::ci::CiSkip;
use dandori_forge::ci_bot::{self, Admission, CiHost, EventSource, RunFlags};
use dandori_forge::{reason, workflow};
use serde_json::json;

use crate::cli::{CiArgs, InitCommand};
use crate::output;

/// Exit status of an event that cannot be read (no payload, broken JSON).
const EXIT_INVALID: u8 = 2;

pub fn ci(config: Option<&Path>, sets: &[String], args: &CiArgs) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let source = EventSource {
        event: args.event.as_deref(),
        event_name: args.event_name.as_deref(),
        label: &args.label,
    };
    let mut event = match ci_bot::read_event(&source, &env) {
        Ok(e) => e,
        Err(CiSkip::Ignored(why)) => {
            output::progress(&format!("{}: {why}", reason::CI_EVENT_IGNORED));
            if args.json {
                output::json(
                    &json!({"status": "ignored", "reason_code": reason::CI_EVENT_IGNORED, "message": why}),
                );
            }
            return Ok(ExitCode::SUCCESS);
        }
        Err(CiSkip::Invalid(why)) => {
            output::error(&format!("{}: {why}", reason::CI_EVENT_INVALID));
            if args.json {
                output::json(
                    &json!({"status": "error", "reason_code": reason::CI_EVENT_INVALID, "message": why}),
                );
            }
            return Ok(ExitCode::from(EXIT_INVALID));
        }
    };
    let cfg = super::load_config(config, sets, &args.repo, &env)?.config;
    let reference = event.reference.to_string();
    output::progress(&format!(
        "ci: {} on {reference} by @{}",
        event.command.as_str(),
        event.actor
    ));
    let admitted = ci_bot::admit(&mut event, &cfg, &env).and_then(|a| {
        // A token that cannot publish is named before a plan or a run is paid for.
        ci_bot::preflight(&event, &cfg, &env, &args.repo, !args.no_open_pr)?;
        Ok(a)
    });
    match admitted {
        Ok(Admission::Proceed) => {}
        Ok(Admission::Replied) => {
            output::progress(&format!(
                "ci: `{}` is not a dandori command; replied on {reference}",
                event.said
            ));
            if args.json {
                output::json(&json!({"status": "replied", "command": "help",
                    "reference": reference, "actor": event.actor, "said": event.said}));
            }
            return Ok(ExitCode::SUCCESS);
        }
        Err(e) => {
            let code = e.exit_code();
            output::error(&format!("{}: {e}", e.code()));
            if args.json {
                output::json(&json!({"status": "error", "reason_code": e.code(),
                    "message": e.to_string(), "exit_code": code}));
            }
            return Ok(ExitCode::from(code));
        }
    }
    let host = Host {
        config,
        sets,
        json: args.json,
    };
    let flags = RunFlags {
        repo: &args.repo,
        open_pr: !args.no_open_pr,
        agent_cmd: args.agent_cmd.as_deref(),
        agent: args.agent.map(|a| a.preset().name()),
    };
    let runs_root = dandori_planner::run_dir::runs_root(&args.repo, None, &cfg.runs.root);
    let (code, done) = ci_bot::dispatch(&event, &runs_root, &flags, &host);
    if args.json {
        output::json(&json!({"status": if code == 0 { "done" } else { "failed" },
            "command": event.command.as_str(), "reference": reference, "actor": event.actor,
            "steps": done, "exit_code": code}));
    }
    Ok(ExitCode::from(code))
}

/// The steps as children of this binary, with the global `--config` / `-c`.
struct Host<'a> {
    config: Option<&'a Path>,
    sets: &'a [String],
    json: bool,
}

impl CiHost for Host<'_> {
    fn latest_run(&self, runs_root: &Path, request_id: &str) -> Option<PathBuf> {
        dandori_mcp::inspect::list_runs(runs_root)
            .ok()?
            .into_iter()
            .find(|r| r.request_id == request_id)
            .map(|r| r.run_dir)
    }

    /// stdout and stderr passed through, stdin closed.
    fn run(&self, argv: &[String]) -> u8 {
        let exe = match std::env::current_exe() {
            Ok(e) => e,
            Err(e) => {
                output::error(&format!("cannot find the dandori binary: {e}"));
                return 1;
            }
        };
        let mut cmd = Command::new(exe);
        if let Some(c) = self.config {
            cmd.arg("--config").arg(c);
        }
        for s in self.sets {
            cmd.arg("-c").arg(s);
        }
        cmd.args(argv).stdin(Stdio::null());
        // In `--json` mode the children's JSON would mix with ours.
        if self.json {
            cmd.stdout(Stdio::null());
        }
        output::progress(&format!("ci: dandori {}", argv.join(" ")));
        match cmd.status() {
            Ok(s) => s.code().and_then(|c| u8::try_from(c).ok()).unwrap_or(1),
            Err(e) => {
                output::error(&format!("cannot run dandori {}: {e}", argv.join(" ")));
                1
            }
        }
    }

    fn error(&self, message: &str) {
        output::error(message);
    }
}

/// `dandori init github-action | gitlab-ci`: the workflow file
/// ([`dandori_forge::workflow`]), then what to set up on the forge.
pub fn init(config: Option<&Path>, sets: &[String], cmd: &InitCommand) -> anyhow::Result<ExitCode> {
    let (args, system) = match cmd {
        InitCommand::GithubAction(a) => (a, workflow::CiSystem::GitHubActions),
        InitCommand::GitlabCi(a) => (a, workflow::CiSystem::GitLabCi),
    };
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let cfg = super::load_config(config, sets, &args.repo, &env)?.config;
    let options = workflow::WorkflowOptions {
        label: args.label.clone(),
        agent: match (&args.agent_cmd, args.agent) {
            (Some(c), _) => workflow::WorkflowAgent::Command(c.clone()),
            (None, a) => workflow::WorkflowAgent::Preset(
                a.map(crate::cli::AgentCli::preset)
                    .unwrap_or(dandori_config::AgentPreset::Claude),
            ),
        },
        dandori_version: env!("CARGO_PKG_VERSION").to_string(),
        allowed_users: cfg.planning.permissions.allowed_users.clone(),
    };
    let (files, next) = workflow::init_files(&args.repo, system, &options);
    if !args.force
        && let Some((file, _)) = files.iter().find(|(f, _)| f.exists())
    {
        output::error(&format!(
            "{}: {} exists; pass --force to replace it",
            dandori_report::reason::USAGE_ERROR,
            file.display()
        ));
        return Ok(ExitCode::from(2));
    }
    for file in workflow::write_init_files(&files)? {
        output::line(&file.display().to_string());
    }
    output::progress("next steps:");
    for (i, step) in next.iter().enumerate() {
        output::progress(&format!("  {}. {step}", i + 1));
    }
    Ok(ExitCode::SUCCESS)
}
