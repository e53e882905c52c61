//! `dandori ci` (GitHub Actions / GitLab CI: the event → plan, approve, revise
//! or run, ending in a pull / merge request) and `dandori init github-action |
//! gitlab-ci` (the workflow files). The event is read by `dandori_forge::ci`;
//! each step is this same binary's `plan` / `approve` / `revise` / `run`,
//! started as a child so that each writes its own output and exit code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use dandori_forge::ci::{self, CiCommand, CiEvent, CiSkip};
use dandori_forge::permissions::Permissions;
use dandori_forge::reason;
use dandori_forge::workflow;
use serde_json::{Value, json};

use crate::cli::{CiArgs, InitCommand};
use crate::output;

/// Exit status of an event that cannot be read (no payload, broken JSON).
const EXIT_INVALID: u8 = 2;

pub fn ci(config: Option<&Path>, sets: &[String], args: &CiArgs) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let event = match read_event(args, &env) {
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
    let loaded = super::load_config(config, sets, &args.repo, &env)?;
    let cfg = loaded.config;
    let reference = event.reference.to_string();
    output::progress(&format!(
        "ci: {} on {reference} by @{}",
        event.command.as_str(),
        event.actor
    ));
    // Who may ask: planning.permissions (seed 000 §12.3), teams through the forge.
    let client = match super::forge::client_for(&event.reference, &cfg.forges, &env) {
        Ok(c) => c,
        Err(e) => return Ok(forge_fail(args.json, &e)),
    };
    let author = if event.issue_author.is_empty() {
        match client.issue(&event.reference) {
            Ok(i) => i.author,
            Err(e) => return Ok(forge_fail(args.json, &e)),
        }
    } else {
        event.issue_author.clone()
    };
    let allowed = {
        let member = super::forge::membership(&client);
        let perms = Permissions {
            config: &cfg.planning.permissions,
            issue_author: &author,
            membership: Some(&member),
        };
        ci::may_trigger(&event, &perms)
    };
    if !allowed {
        let e = dandori_forge::ForgeError::PermissionDenied(format!(
            "@{} may not ask dandori to {} (planning.permissions.allowed_users{})",
            event.actor,
            event.command.as_str(),
            if event.command == CiCommand::Approve {
                ", auto_execution_allowed, always_require_approval"
            } else {
                ""
            }
        ));
        return Ok(forge_fail(args.json, &e));
    }
    if event.command == CiCommand::Help {
        // Never silence: the comment gets the commands there are.
        let body = ci::help_reply(&event.said);
        let posted = dandori_forge::permissions::check_operation(
            &cfg.forges,
            dandori_config::ForgeOperation::Comment,
        )
        .and_then(|()| client.create_comment(&event.reference, &body));
        if let Err(e) = posted {
            return Ok(forge_fail(args.json, &e));
        }
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
    let steps = Steps {
        args,
        config,
        sets,
        reference: &reference,
        request_id: event.reference.request_id(),
        runs_root: dandori_planner::run_dir::runs_root(&args.repo, None, &cfg.runs.root),
    };
    let (code, done) = steps.dispatch(&event);
    if args.json {
        output::json(&json!({"status": if code == 0 { "done" } else { "failed" },
            "command": event.command.as_str(), "reference": reference, "actor": event.actor,
            "steps": done, "exit_code": code}));
    }
    Ok(ExitCode::from(code))
}

fn forge_fail(json: bool, e: &dandori_forge::ForgeError) -> ExitCode {
    let code = super::forge::exit_code(e);
    output::error(&format!("{}: {e}", e.code()));
    if json {
        output::json(
            &json!({"status": "error", "reason_code": e.code(), "message": e.to_string(), "exit_code": code}),
        );
    }
    ExitCode::from(code)
}

/// The event of this CI job: GitHub Actions, GitLab CI, or `--event FILE`
/// (a GitHub payload, with `--event-name`).
fn read_event(args: &CiArgs, env: &BTreeMap<String, String>) -> Result<CiEvent, CiSkip> {
    let get = |k: &str| env.get(k).map(String::as_str).unwrap_or_default();
    let read = |path: &Path| -> Result<Value, CiSkip> {
        let text = dandori_fs::read_to_string(path)
            .map_err(|e| CiSkip::Invalid(format!("the event payload: {e}")))?;
        serde_json::from_str(&text).map_err(|e| {
            CiSkip::Invalid(format!(
                "{}: line {} column {}: {e}",
                path.display(),
                e.line(),
                e.column()
            ))
        })
    };
    if get("GITLAB_CI") == "true" && args.event.is_none() {
        // A file variable holds a path; a plain variable the JSON itself.
        let payload = match get("TRIGGER_PAYLOAD") {
            "" => None,
            p if Path::new(p).is_file() => Some(read(Path::new(p))?),
            json_text => Some(
                serde_json::from_str(json_text)
                    .map_err(|e| CiSkip::Invalid(format!("TRIGGER_PAYLOAD is not JSON: {e}")))?,
            ),
        };
        return ci::gitlab_event(env, payload.as_ref(), &args.label);
    }
    let path = match (&args.event, get("GITHUB_EVENT_PATH")) {
        (Some(p), _) => p.clone(),
        (None, "") => {
            return Err(CiSkip::Invalid(
                "not in GitHub Actions (GITHUB_EVENT_PATH unset) nor GitLab CI (GITLAB_CI unset); pass --event FILE --event-name NAME".into(),
            ));
        }
        (None, p) => PathBuf::from(p),
    };
    let name = match (&args.event_name, get("GITHUB_EVENT_NAME")) {
        (Some(n), _) => n.clone(),
        (None, "") => {
            return Err(CiSkip::Invalid(
                "GITHUB_EVENT_NAME is unset; pass --event-name issues|issue_comment".into(),
            ));
        }
        (None, n) => n.to_string(),
    };
    ci::github_event(&name, &read(&path)?, &args.label)
}

struct Steps<'a> {
    args: &'a CiArgs,
    config: Option<&'a Path>,
    sets: &'a [String],
    reference: &'a str,
    request_id: String,
    runs_root: PathBuf,
}

impl Steps<'_> {
    /// Runs the event's steps; the exit status and the steps run.
    fn dispatch(&self, event: &CiEvent) -> (u8, Vec<Value>) {
        let mut done = Vec::new();
        let mut step = |name: &str, argv: Vec<String>| -> u8 {
            let code = self.child(&argv);
            done.push(json!({"step": name, "exit_code": code}));
            code
        };
        match event.command {
            CiCommand::Plan => (step("plan", self.plan_argv()), done),
            // Answered before the steps.
            CiCommand::Help => (0, done),
            CiCommand::Revise => match self.latest_run() {
                Some(run) => {
                    let mut argv = vec!["revise".into(), path(&run), "--from-issue".into()];
                    argv.push("--comment".into());
                    (step("revise", argv), done)
                }
                None => {
                    output::error(&format!(
                        "{}: no plan of {} under {} to revise: comment `/dandori plan` first",
                        reason::FORGE_RECORD_INVALID,
                        self.reference,
                        self.runs_root.display()
                    ));
                    (2, done)
                }
            },
            CiCommand::Approve | CiCommand::Run => {
                // The runs of an earlier job are gone unless the workflow keeps
                // `.dandori/runs` (a cache): the issue is planned again (the plan
                // comment is edited, not duplicated).
                let run = match self.latest_run() {
                    Some(r) => r,
                    None => {
                        let code = step("plan", self.plan_argv());
                        if code != 0 {
                            return (code, done);
                        }
                        match self.latest_run() {
                            Some(r) => r,
                            None => return (1, done),
                        }
                    }
                };
                if event.command == CiCommand::Approve
                    && run.join("revisions/pending.json").is_file()
                {
                    let code = step(
                        "approve",
                        vec!["approve".into(), path(&run), "--from-issue".into()],
                    );
                    if code != 0 {
                        return (code, done);
                    }
                }
                let mut argv = vec![
                    "run".into(),
                    path(&run),
                    "--repo".into(),
                    path(&self.args.repo),
                ];
                if !self.args.no_open_pr {
                    argv.push("--open-pr".into());
                }
                if let Some(a) = &self.args.agent_cmd {
                    argv.push("--agent-cmd".into());
                    argv.push(a.clone());
                }
                if let Some(a) = self.args.agent {
                    argv.push("--agent".into());
                    argv.push(a.preset().name().into());
                }
                (step("run", argv), done)
            }
        }
    }

    fn plan_argv(&self) -> Vec<String> {
        vec![
            "plan".into(),
            "--issue".into(),
            self.reference.to_string(),
            "--comment".into(),
            "--repo".into(),
            path(&self.args.repo),
        ]
    }

    /// The newest run of this request.
    fn latest_run(&self) -> Option<PathBuf> {
        dandori_mcp::inspect::list_runs(&self.runs_root)
            .ok()?
            .into_iter()
            .find(|r| r.request_id == self.request_id)
            .map(|r| r.run_dir)
    }

    /// This binary with `argv` (and the global `--config` / `-c`), stdout and
    /// stderr passed through, stdin closed.
    fn child(&self, argv: &[String]) -> u8 {
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
        if self.args.json {
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
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// `dandori init github-action | gitlab-ci`: the workflow file
/// ([`dandori_forge::workflow`]), then what to set up on the forge.
pub fn init(config: Option<&Path>, sets: &[String], cmd: &InitCommand) -> anyhow::Result<ExitCode> {
    let (args, github) = match cmd {
        InitCommand::GithubAction(a) => (a, true),
        InitCommand::GitlabCi(a) => (a, false),
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
    let (rel, text, next, pkg_dir) = if github {
        (
            ".github/workflows/dandori.yml",
            workflow::github_actions(&options),
            workflow::next_steps_github(&options),
            workflow::GITHUB_PACKAGE_DIR,
        )
    } else {
        (
            ".gitlab/dandori.gitlab-ci.yml",
            workflow::gitlab_ci(&options),
            workflow::next_steps_gitlab(&options),
            workflow::GITLAB_PACKAGE_DIR,
        )
    };
    // The workflow and the npm manifest of what it installs.
    let files = [
        (args.repo.join(rel), text),
        (
            args.repo.join(pkg_dir).join("package.json"),
            workflow::package_json(&options),
        ),
    ];
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
    for (file, text) in &files {
        if let Some(dir) = file.parent() {
            dandori_fs::create_dir_all(dir)?;
        }
        dandori_fs::write_atomic(file, text)?;
        output::line(&file.display().to_string());
    }
    output::progress("next steps:");
    for (i, step) in next.iter().enumerate() {
        output::progress(&format!("  {}. {step}", i + 1));
    }
    Ok(ExitCode::SUCCESS)
}
