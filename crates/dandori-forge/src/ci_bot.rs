//! `dandori ci`'s body: the CI job's event read ([`read_event`]), who asked
//! checked and an unrecognised command answered ([`admit`]), then the event's
//! steps ([`dispatch`]): `plan`, `approve`, `revise`, `run`, each a command of
//! the same binary that the caller starts ([`CiHost`]), so that each writes its
//! own output and exit code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_config::Config;
use serde_json::{Value, json};

use crate::ci::{self, CiCommand, CiEvent, CiSkip};
use crate::permissions::Permissions;
use crate::session::{client_for, membership};
use crate::{ForgeError, reason};

/// Where the event comes from: `--event FILE` / `--event-name`, else the CI
/// variables.
pub struct EventSource<'a> {
    pub event: Option<&'a Path>,
    pub event_name: Option<&'a str>,
    /// The label that asks dandori to plan an issue.
    pub label: &'a str,
}

/// The event of this CI job: GitHub Actions, GitLab CI, or `--event FILE`
/// (a GitHub payload, with `--event-name`).
pub fn read_event(
    src: &EventSource<'_>,
    env: &BTreeMap<String, String>,
) -> Result<CiEvent, CiSkip> {
    let get = |k: &str| env.get(k).map(String::as_str).unwrap_or_default();
    let read = |path: &Path| -> Result<Value, CiSkip> {
        let text = dandori_fs::read_to_string(path)
            .map_err(|e| CiSkip::Invalid(format!("the event payload: {e}")))?;
        serde_json::from_str(&text).map_err(|e| {
            CiSkip::Invalid(format!(
                "{}: line {} column {}: {} JSON: {e}",
                path.display(),
                e.line(),
                e.column(),
                if e.is_eof() { "truncated" } else { "not" }
            ))
        })
    };
    if get("GITLAB_CI") == "true" && src.event.is_none() {
        // A file variable holds a path; a plain variable the JSON itself.
        let payload = match get("TRIGGER_PAYLOAD") {
            "" => None,
            p if Path::new(p).is_file() => Some(read(Path::new(p))?),
            json_text => Some(serde_json::from_str(json_text).map_err(|e| {
                CiSkip::Invalid(format!(
                    "TRIGGER_PAYLOAD: line {} column {}: {} JSON: {e}",
                    e.line(),
                    e.column(),
                    if e.is_eof() { "truncated" } else { "not" }
                ))
            })?),
        };
        let source = match get("TRIGGER_PAYLOAD") {
            p if Path::new(p).is_file() => format!("TRIGGER_PAYLOAD ({p})"),
            _ => "TRIGGER_PAYLOAD".to_string(),
        };
        return ci::gitlab_event(env, payload.as_ref(), src.label).map_err(|e| in_file(e, &source));
    }
    let path = match (src.event, get("GITHUB_EVENT_PATH")) {
        (Some(p), _) => p.to_path_buf(),
        (None, "") => {
            return Err(CiSkip::Invalid(
                "not in GitHub Actions (GITHUB_EVENT_PATH unset) nor GitLab CI (GITLAB_CI unset); pass --event FILE --event-name NAME".into(),
            ));
        }
        (None, p) => PathBuf::from(p),
    };
    let name = match (src.event_name, get("GITHUB_EVENT_NAME")) {
        (Some(n), _) => n.to_string(),
        (None, "") => {
            return Err(CiSkip::Invalid(
                "GITHUB_EVENT_NAME is unset; pass --event-name issues|issue_comment".into(),
            ));
        }
        (None, n) => n.to_string(),
    };
    // Another event is ignored unread: its payload is not dandori's to judge.
    if !ci::GITHUB_EVENTS.contains(&name.as_str()) {
        return ci::github_event(&name, &Value::Null, src.label);
    }
    ci::github_event(&name, &read(&path)?, src.label)
        .map_err(|e| in_file(e, &path.display().to_string()))
}

/// An unreadable payload's message, with the file it is in.
fn in_file(e: CiSkip, file: &str) -> CiSkip {
    match e {
        CiSkip::Invalid(m) => CiSkip::Invalid(format!("{file}: {m}")),
        ignored => ignored,
    }
}

/// What [`admit`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Admission {
    /// The actor may ask for the event's steps: run them.
    Proceed,
    /// Not a dandori command: the comment was answered with the commands there are.
    Replied,
}

/// Who may ask (planning.permissions, seed 000 §12.3; teams through the
/// forge), and the reply to a comment that is no command (never silence).
pub fn admit(
    event: &mut CiEvent,
    config: &Config,
    env: &BTreeMap<String, String>,
) -> Result<Admission, ForgeError> {
    let client = client_for(&event.reference, &config.forges, env)?;
    own_change_request(event, &client)?;
    // On dandori's own pull request (authored by its bot), the request's
    // issue says whose task it is.
    let request = event
        .pull_request_of
        .as_deref()
        .and_then(|id| request_ref(&event.reference, id));
    let author = match (&request, event.issue_author.is_empty()) {
        (Some(r), _) => client.issue(r)?.author,
        (None, true) => client.issue(&event.reference)?.author,
        (None, false) => event.issue_author.clone(),
    };
    let allowed = {
        let member = membership(&client);
        let perms = Permissions {
            config: &config.planning.permissions,
            issue_author: &author,
            membership: Some(&member),
        };
        ci::may_trigger(event, &perms)
    };
    if !allowed {
        return Err(ForgeError::PermissionDenied(format!(
            "@{} may not ask dandori to {} (planning.permissions.allowed_users{})",
            event.actor,
            event.command.as_str(),
            if event.command == CiCommand::Approve {
                ", auto_execution_allowed, always_require_approval"
            } else {
                ""
            }
        )));
    }
    if event.command != CiCommand::Help {
        return Ok(Admission::Proceed);
    }
    crate::permissions::check_operation(&config.forges, dandori_config::ForgeOperation::Comment)?;
    client.create_comment(&event.reference, &ci::help_reply(&event.said))?;
    Ok(Admission::Replied)
}

/// A comment on a pull / merge request whose body names a request of
/// dandori's steers that request's runs only when the open pull / merge
/// request of the request's branch (`dandori-pr/ID`, pushed by dandori with
/// write access) is this very one: a body anyone can write is not trusted
/// alone. Otherwise the marker is dropped and the pull request is a request of
/// its own.
fn own_change_request(event: &mut CiEvent, client: &crate::ForgeClient) -> Result<(), ForgeError> {
    let Some(id) = event.pull_request_of.take() else {
        return Ok(());
    };
    let branch = crate::publish::remote_branch(&id);
    let found = client.find_change_request(&event.reference.project, &branch)?;
    if found.is_some_and(|cr| cr.number == event.reference.number)
        && request_ref(&event.reference, &id).is_some()
    {
        event.pull_request_of = Some(id);
    }
    Ok(())
}

/// The issue (or pull request) a request id of `at`'s project stands for.
pub fn request_ref(at: &crate::ForgeRef, id: &str) -> Option<crate::ForgeRef> {
    let number: u64 = id.rsplit('-').next()?.parse().ok()?;
    [crate::ItemKind::Issue, crate::ItemKind::ChangeRequest]
        .into_iter()
        .map(|kind| crate::ForgeRef {
            kind,
            number,
            ..at.clone()
        })
        .find(|r| r.request_id() == id)
}

/// Before any step: for a step that ends in a pull / merge request (`approve`,
/// `run` with `--open-pr`), what `dandori run --open-pr` checks first (the
/// operation, the token, `origin`, the token's scopes and permissions), so a
/// token that cannot publish is named before a plan or a run is paid for.
pub fn preflight(
    event: &CiEvent,
    config: &Config,
    env: &BTreeMap<String, String>,
    repo: &Path,
    open_pr: bool,
) -> Result<(), ForgeError> {
    if !open_pr || !matches!(event.command, CiCommand::Approve | CiCommand::Run) {
        return Ok(());
    }
    let client = client_for(&event.reference, &config.forges, env)?;
    crate::publish::preflight(&client, &config.forges, repo, &event.reference.project)
}

/// What the caller provides: the runs of this request, and running one
/// command of the binary.
pub trait CiHost {
    /// The newest run directory of `request_id` under `runs_root`.
    fn latest_run(&self, runs_root: &Path, request_id: &str) -> Option<PathBuf>;
    /// Runs the binary with `argv`; its exit status.
    fn run(&self, argv: &[String]) -> u8;
    /// An error line (the CLI: stderr).
    fn error(&self, message: &str);
}

/// The run options `dandori ci` passes on to `dandori run`.
pub struct RunFlags<'a> {
    pub repo: &'a Path,
    pub open_pr: bool,
    pub agent_cmd: Option<&'a str>,
    /// An agent preset's name (`claude`, `codex`, `gemini`).
    pub agent: Option<&'a str>,
}

/// Runs the event's steps; the exit status and the steps run (`{step, exit_code}`).
pub fn dispatch(
    event: &CiEvent,
    runs_root: &Path,
    flags: &RunFlags<'_>,
    host: &dyn CiHost,
) -> (u8, Vec<Value>) {
    // A comment on dandori's own pull / merge request steers its request.
    let target = event
        .pull_request_of
        .as_deref()
        .and_then(|id| request_ref(&event.reference, id))
        .unwrap_or_else(|| event.reference.clone());
    let reference = target.to_string();
    let request_id = target.request_id();
    let latest = || host.latest_run(runs_root, &request_id);
    let mut done = Vec::new();
    let mut step = |name: &str, argv: Vec<String>| -> u8 {
        let code = host.run(&argv);
        done.push(json!({"step": name, "exit_code": code}));
        code
    };
    let plan_argv = || {
        vec![
            "plan".into(),
            "--issue".into(),
            reference.clone(),
            "--comment".into(),
            "--repo".into(),
            path(flags.repo),
        ]
    };
    let code = match event.command {
        CiCommand::Plan => step("plan", plan_argv()),
        // Answered by [`admit`].
        CiCommand::Help => 0,
        CiCommand::Revise => match latest() {
            // On dandori's pull request the feedback is this comment (the
            // issue's comments are not where it was written).
            Some(run) if target != event.reference => {
                let feedback = run.join("revisions").join("ci-feedback.md");
                let written = dandori_fs::create_dir_all(run.join("revisions"))
                    .and_then(|()| dandori_fs::write_atomic(&feedback, &event.body));
                match written {
                    Err(e) => {
                        host.error(&format!("cannot keep the comment's feedback: {e}"));
                        1
                    }
                    Ok(()) => step(
                        "revise",
                        vec![
                            "revise".into(),
                            path(&run),
                            "--file".into(),
                            path(&feedback),
                            "--comment".into(),
                        ],
                    ),
                }
            }
            Some(run) => step(
                "revise",
                vec![
                    "revise".into(),
                    path(&run),
                    "--from-issue".into(),
                    "--comment".into(),
                ],
            ),
            None => {
                host.error(&format!(
                    "{}: no plan of {reference} under {} to revise: comment `/dandori plan` first",
                    reason::FORGE_RECORD_INVALID,
                    runs_root.display()
                ));
                2
            }
        },
        CiCommand::Approve | CiCommand::Run => 'run: {
            // The runs of an earlier job are gone unless the workflow keeps
            // `.dandori/runs` (a cache): the issue is planned again (the plan
            // comment is edited, not duplicated).
            let run = match latest() {
                Some(r) => r,
                None => {
                    let code = step("plan", plan_argv());
                    if code != 0 {
                        break 'run code;
                    }
                    match latest() {
                        Some(r) => r,
                        None => break 'run 1,
                    }
                }
            };
            if event.command == CiCommand::Approve && run.join("revisions/pending.json").is_file() {
                let code = step(
                    "approve",
                    vec!["approve".into(), path(&run), "--from-issue".into()],
                );
                if code != 0 {
                    break 'run code;
                }
            }
            let mut argv = vec!["run".into(), path(&run), "--repo".into(), path(flags.repo)];
            if flags.open_pr {
                argv.push("--open-pr".into());
            }
            if let Some(a) = flags.agent_cmd {
                argv.extend(["--agent-cmd".into(), a.to_string()]);
            }
            if let Some(a) = flags.agent {
                argv.extend(["--agent".into(), a.to_string()]);
            }
            step("run", argv)
        }
    };
    (code, done)
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}
