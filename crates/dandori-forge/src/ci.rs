//! `dandori ci`: what a CI event asks of dandori. Pure: a payload and the CI
//! variables in, a [`CiEvent`] (or the reason it is ignored) out.
//!
//! * **GitHub Actions** (`GITHUB_ACTIONS=true`): `GITHUB_EVENT_NAME` and the
//!   payload at `GITHUB_EVENT_PATH`. `issues` with action `labeled` and the
//!   trigger label → plan; `issue_comment` with action `created` whose first
//!   line is `/dandori plan|approve|revise|run` → that step (on an issue or a
//!   pull request). Comments written by bots are ignored (no loops).
//! * **GitLab CI** (`GITLAB_CI=true`): a pipeline triggered by a project webhook
//!   carries the webhook's JSON in `TRIGGER_PAYLOAD` (a file variable): an
//!   `issue` hook whose changes add the trigger label → plan; a `note` hook on
//!   an issue or a merge request with `/dandori …` → that step. Without a
//!   payload, `DANDORI_CI_COMMAND` (`plan`, …), `DANDORI_CI_ISSUE` (the iid, or
//!   `!iid` for a merge request) and `GITLAB_USER_LOGIN` (the user who started
//!   the pipeline) say the same.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::{Forge, ForgeRef, ItemKind};

/// The step a CI event asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiCommand {
    Plan,
    Approve,
    Revise,
    Run,
    /// A comment that looks meant for dandori but is no command of it (a bare
    /// `/approve`, `/dandori go`): answered with what to type, never ignored.
    Help,
}

impl CiCommand {
    pub fn parse(word: &str) -> Option<CiCommand> {
        match word.trim().to_ascii_lowercase().as_str() {
            "plan" => Some(CiCommand::Plan),
            "approve" => Some(CiCommand::Approve),
            "revise" => Some(CiCommand::Revise),
            "run" => Some(CiCommand::Run),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            CiCommand::Plan => "plan",
            CiCommand::Approve => "approve",
            CiCommand::Revise => "revise",
            CiCommand::Run => "run",
            CiCommand::Help => "help",
        }
    }
}

/// Who asked what, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CiEvent {
    pub command: CiCommand,
    pub reference: ForgeRef,
    /// The user who labelled or commented.
    pub actor: String,
    /// GitHub's `author_association` of the actor (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `NONE`, …), when the event has it.
    pub association: Option<String>,
    /// The issue's author.
    pub issue_author: String,
    /// The comment's first line (empty for a label): what a [`CiCommand::Help`]
    /// reply quotes.
    pub said: String,
    /// The whole comment (empty for a label): the feedback of a `/dandori
    /// revise` on dandori's own pull / merge request.
    pub body: String,
    /// On a pull / merge request whose body carries dandori's marker: the
    /// request id it names. Trusted only once [`crate::ci_bot::admit`] found
    /// the open pull / merge request of that request's branch to be this one.
    pub pull_request_of: Option<String>,
}

/// Why an event is not for dandori, or cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CiSkip {
    /// Not an event dandori acts on (another label, a comment without
    /// `/dandori`, a bot's comment): exit 0.
    Ignored(String),
    /// No payload, a broken one, missing variables: exit 2.
    Invalid(String),
}

/// The line a command is read from: the comment's first line, only when the
/// comment starts with `/` (the workflow's gate is `startsWith(body, '/dandori')`,
/// so a command after a blank line or a space would never start the job).
fn command_line(body: &str) -> Option<&str> {
    body.starts_with('/')
        .then(|| body.lines().next().unwrap_or_default().trim_end())
}

/// `/dandori WORD` at the start of a comment (ASCII case ignored, as the
/// workflow's `startsWith` ignores it).
pub fn command_in(body: &str) -> Option<CiCommand> {
    let line = command_line(body)?;
    let mut words = line.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("/dandori") {
        return None;
    }
    CiCommand::parse(words.next()?)
}

/// What a comment asks of dandori in CI: [`command_in`], else
/// [`CiCommand::Help`] for a comment starting with `/dandori` and no or another
/// word, or a bare `/plan`, `/approve`, `/revise`, `/run`; else nothing.
pub fn ci_command_in(body: &str) -> Option<CiCommand> {
    if let Some(c) = command_in(body) {
        return Some(c);
    }
    let first = command_line(body)?
        .split_whitespace()
        .next()?
        .to_ascii_lowercase();
    let bare = first
        .strip_prefix('/')
        .is_some_and(|w| CiCommand::parse(w).is_some());
    (first == "/dandori" || bare).then_some(CiCommand::Help)
}

/// The first non-empty line of a comment, clipped.
fn first_line(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or_default();
    crate::intake::cut_chars(line, 80).0.to_string()
}

/// The reply to a [`CiCommand::Help`] comment: what was not understood and the
/// commands there are.
pub fn help_reply(said: &str) -> String {
    let said = said.replace('`', "'");
    format!(
        "dandori did not act on `{said}`: a command is `/dandori` and one word, at the start of the comment.\n\n\
         - `/dandori approve`: run the plan; the run ends in a pull / merge request.\n\
         - `/dandori revise` and, on the next lines, your changes: a revised plan.\n\
         - `/dandori plan`: plan the issue again.\n\
         - `/dandori run`: run the newest plan as it is.\n"
    )
}

/// The marker dandori's pull / merge request bodies start with
/// (`<!-- dandori:pull_request REQUEST_ID -->`): the request whose runs a
/// comment on it steers.
pub fn pull_request_marker(body: &str) -> Option<String> {
    let rest = body.split("<!-- dandori:pull_request ").nth(1)?;
    let id = rest.split(" -->").next()?.trim();
    (!id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'))
    .then(|| id.to_string())
}

/// The string at `ptr`, empty when absent.
fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

/// A JSON pointer as the `$.a.b[0]` path an error names.
fn json_path(ptr: &str) -> String {
    let mut out = String::from("$");
    for part in ptr.split('/').skip(1) {
        if part.chars().all(|c| c.is_ascii_digit()) && !part.is_empty() {
            out.push_str(&format!("[{part}]"));
        } else {
            out.push('.');
            out.push_str(part);
        }
    }
    out
}

/// Why a value at `ptr` is unusable: missing, or of another type.
fn bad(v: &Value, ptr: &str, want: &str, event: &str) -> CiSkip {
    let what = match v.pointer(ptr) {
        None => "missing".to_string(),
        Some(x) => format!(
            "{} where {want} is required",
            match x {
                Value::Null => "null",
                Value::Bool(_) => "a boolean",
                Value::Number(_) => "a number",
                Value::String(_) => "a string",
                Value::Array(_) => "an array",
                Value::Object(_) => "an object",
            }
        ),
    };
    CiSkip::Invalid(format!(
        "{}: {what} (a {event} payload has it)",
        json_path(ptr)
    ))
}

/// A string the payload must have.
fn req_str<'a>(v: &'a Value, ptr: &str, event: &str) -> Result<&'a str, CiSkip> {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .ok_or_else(|| bad(v, ptr, "a string", event))
}

/// A non-empty string the payload must have.
fn req_name<'a>(v: &'a Value, ptr: &str, event: &str) -> Result<&'a str, CiSkip> {
    match req_str(v, ptr, event)? {
        "" => Err(CiSkip::Invalid(format!(
            "{}: empty (a {event} payload names it)",
            json_path(ptr)
        ))),
        x => Ok(x),
    }
}

/// A positive integer the payload must have (an issue number, an iid).
fn req_number(v: &Value, ptr: &str, event: &str) -> Result<u64, CiSkip> {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .filter(|n| *n > 0)
        .ok_or_else(|| bad(v, ptr, "a positive integer", event))
}

/// The events `dandori ci` reads on GitHub; any other is ignored unread.
pub const GITHUB_EVENTS: [&str; 2] = ["issues", "issue_comment"];

/// A GitHub Actions event (`GITHUB_EVENT_NAME`, the payload). The event name
/// and action decide first (another event, an edited or deleted comment, a
/// label other than the trigger is ignored unread); an event dandori acts on
/// must carry every field it reads, else [`CiSkip::Invalid`] names the JSON
/// path.
pub fn github_event(name: &str, payload: &Value, label: &str) -> Result<CiEvent, CiSkip> {
    if !GITHUB_EVENTS.contains(&name) {
        return Err(CiSkip::Ignored(format!(
            "the {name} event (dandori acts on issues and issue_comment)"
        )));
    }
    if !payload.is_object() {
        return Err(CiSkip::Invalid(format!(
            "$: not a JSON object (an {name} payload is one)"
        )));
    }
    let ev = format!("{name} event");
    let action = req_str(payload, "/action", &ev)?;
    let ev = format!("{name}/{action}");
    match (name, action) {
        ("issues", "labeled") => {}
        ("issues", other) => {
            return Err(CiSkip::Ignored(format!(
                "issues/{other}: dandori starts on the label {label:?} being added"
            )));
        }
        ("issue_comment", "created") => {}
        (_, other) => {
            return Err(CiSkip::Ignored(format!(
                "issue_comment/{other}: only a new comment asks dandori (an edited or deleted one never starts a run)"
            )));
        }
    }
    let number = req_number(payload, "/issue/number", &ev)?;
    let repo = req_name(payload, "/repository/full_name", &ev)?;
    let kind = match payload.pointer("/issue/pull_request") {
        Some(Value::Object(_)) => ItemKind::ChangeRequest,
        _ => ItemKind::Issue,
    };
    let reference = ForgeRef {
        forge: Forge::GitHub,
        kind,
        project: repo.to_string(),
        number,
        host: None,
        scheme: None,
    };
    let issue_author = s(payload, "/issue/user/login").to_string();
    let marker = match kind {
        ItemKind::ChangeRequest => pull_request_marker(s(payload, "/issue/body")),
        ItemKind::Issue => None,
    };
    if name == "issues" {
        let added = req_str(payload, "/label/name", &ev)?;
        if !added.eq_ignore_ascii_case(label) {
            return Err(CiSkip::Ignored(format!(
                "issues/labeled with {added:?}: dandori starts on the label {label:?}"
            )));
        }
        return Ok(CiEvent {
            command: CiCommand::Plan,
            reference,
            actor: req_name(payload, "/sender/login", &ev)?.to_string(),
            // Labelling needs triage access to the repository.
            association: Some("MEMBER".to_string()),
            issue_author,
            said: String::new(),
            body: String::new(),
            pull_request_of: marker,
        });
    }
    let actor = req_name(payload, "/comment/user/login", &ev)?;
    let body = req_str(payload, "/comment/body", &ev)?;
    let bot = actor.ends_with("[bot]")
        || s(payload, "/comment/user/type") == "Bot"
        || s(payload, "/sender/type") == "Bot";
    if bot {
        return Err(CiSkip::Ignored(format!(
            "a comment by the bot {actor} (dandori never answers a bot)"
        )));
    }
    let Some(command) = ci_command_in(body) else {
        return Err(CiSkip::Ignored(
            "a comment that does not start with `/dandori plan|approve|revise|run`".to_string(),
        ));
    };
    let association = req_str(payload, "/comment/author_association", &ev)?;
    Ok(CiEvent {
        command,
        reference,
        actor: actor.to_string(),
        association: Some(association.to_string()),
        issue_author,
        said: first_line(body),
        body: body.to_string(),
        pull_request_of: marker,
    })
}

/// A GitLab CI pipeline: the webhook payload of a triggered pipeline, else the
/// `DANDORI_CI_*` variables.
pub fn gitlab_event(
    vars: &BTreeMap<String, String>,
    payload: Option<&Value>,
    label: &str,
) -> Result<CiEvent, CiSkip> {
    let get = |k: &str| vars.get(k).map(String::as_str).unwrap_or_default();
    let project_var = get("CI_PROJECT_PATH");
    let make = |project: &str, kind: ItemKind, number: u64| ForgeRef {
        forge: Forge::GitLab,
        kind,
        project: project.to_string(),
        number,
        host: None,
        scheme: None,
    };
    let Some(p) = payload else {
        return gitlab_variables(vars, project_var, make);
    };
    if !p.is_object() {
        return Err(CiSkip::Invalid(
            "$: not a JSON object (a webhook payload is one)".into(),
        ));
    }
    let kind_name = req_str(p, "/object_kind", "webhook")?;
    if !matches!(kind_name, "note" | "issue") {
        return Err(CiSkip::Ignored(format!(
            "the {kind_name:?} webhook (dandori acts on issue and note hooks)"
        )));
    }
    let ev = format!("{kind_name} hook");
    let project = match p.pointer("/project/path_with_namespace") {
        Some(_) => req_name(p, "/project/path_with_namespace", &ev)?,
        None if !project_var.is_empty() => project_var,
        None => return Err(bad(p, "/project/path_with_namespace", "a string", &ev)),
    };
    if kind_name == "issue" {
        let added = p
            .pointer("/changes/labels/current")
            .and_then(Value::as_array)
            .is_some_and(|cur| {
                let had = p
                    .pointer("/changes/labels/previous")
                    .and_then(Value::as_array)
                    .is_some_and(|prev| {
                        prev.iter()
                            .any(|l| s(l, "/title").eq_ignore_ascii_case(label))
                    });
                !had && cur
                    .iter()
                    .any(|l| s(l, "/title").eq_ignore_ascii_case(label))
            });
        if !added {
            return Err(CiSkip::Ignored(format!(
                "an issue hook that does not add the label {label:?}"
            )));
        }
        let iid = req_number(p, "/object_attributes/iid", &ev)?;
        return Ok(CiEvent {
            command: CiCommand::Plan,
            reference: make(project, ItemKind::Issue, iid),
            actor: req_name(p, "/user/username", &ev)?.to_string(),
            association: None,
            issue_author: String::new(),
            said: String::new(),
            body: String::new(),
            pull_request_of: None,
        });
    }
    // A note: GitLab sends `action` `update` for an edited one (newer GitLab).
    let action = s(p, "/object_attributes/action");
    if !action.is_empty() && action != "create" {
        return Err(CiSkip::Ignored(format!(
            "a note hook with action {action:?}: only a new note asks dandori (an edited one never starts a run)"
        )));
    }
    let noteable = req_str(p, "/object_attributes/noteable_type", &ev)?;
    let (kind, ptr) = match noteable {
        "Issue" => (ItemKind::Issue, "/issue"),
        "MergeRequest" => (ItemKind::ChangeRequest, "/merge_request"),
        other => {
            return Err(CiSkip::Ignored(format!(
                "a note on a {other} (dandori acts on issues and merge requests)"
            )));
        }
    };
    let actor = req_name(p, "/user/username", &ev)?;
    if is_gitlab_bot(actor) {
        return Err(CiSkip::Ignored(format!(
            "a note by the bot {actor} (dandori never answers a bot)"
        )));
    }
    let note = req_str(p, "/object_attributes/note", &ev)?;
    let Some(command) = ci_command_in(note) else {
        return Err(CiSkip::Ignored(
            "a note that does not start with `/dandori plan|approve|revise|run`".to_string(),
        ));
    };
    let iid = req_number(p, &format!("{ptr}/iid"), &ev)?;
    let marker = match kind {
        ItemKind::ChangeRequest => pull_request_marker(s(p, "/merge_request/description")),
        ItemKind::Issue => None,
    };
    Ok(CiEvent {
        command,
        reference: make(project, kind, iid),
        actor: actor.to_string(),
        association: None,
        issue_author: String::new(),
        said: first_line(note),
        body: note.to_string(),
        pull_request_of: marker,
    })
}

/// GitLab's bot users: project and group access tokens' (`project_7_bot_…`,
/// `group_3_bot_…`), and GitLab's own (`ghost`, `support-bot`, `alert-bot`).
fn is_gitlab_bot(user: &str) -> bool {
    crate::client::is_gitlab_bot_username(user)
        || matches!(
            user,
            "ghost" | "support-bot" | "alert-bot" | "GitLab-Admin-Bot"
        )
}

/// GitLab without a payload: `DANDORI_CI_COMMAND`, `DANDORI_CI_ISSUE`,
/// `GITLAB_USER_LOGIN`.
fn gitlab_variables(
    vars: &BTreeMap<String, String>,
    project_var: &str,
    make: impl Fn(&str, ItemKind, u64) -> ForgeRef,
) -> Result<CiEvent, CiSkip> {
    let get = |k: &str| vars.get(k).map(String::as_str).unwrap_or_default();
    let Some(command) = CiCommand::parse(get("DANDORI_CI_COMMAND")) else {
        return Err(CiSkip::Invalid(
            "no TRIGGER_PAYLOAD and no DANDORI_CI_COMMAND (plan, approve, revise, run)".into(),
        ));
    };
    let item = get("DANDORI_CI_ISSUE").trim();
    let (kind, number) = match item.strip_prefix('!') {
        Some(n) => (ItemKind::ChangeRequest, n),
        None => (ItemKind::Issue, item.trim_start_matches('#')),
    };
    let Ok(number) = number.parse::<u64>() else {
        return Err(CiSkip::Invalid(format!(
            "DANDORI_CI_ISSUE={item:?} is not an issue iid (7) or a merge request (!7)"
        )));
    };
    if project_var.is_empty() {
        return Err(CiSkip::Invalid("CI_PROJECT_PATH is not set".into()));
    }
    Ok(CiEvent {
        command,
        reference: make(project_var, kind, number),
        actor: get("GITLAB_USER_LOGIN").to_string(),
        association: None,
        issue_author: String::new(),
        said: String::new(),
        body: String::new(),
        pull_request_of: None,
    })
}

/// Whether `event.actor` may ask for `event.command`: a user listed in
/// `planning.permissions.allowed_users` (teams resolved by `member`); with the
/// list empty, on GitHub an actor with write access to the repository
/// (`author_association` `OWNER`, `MEMBER` or `COLLABORATOR`; a label needs
/// triage access anyway), on GitLab the issue's author. `approve` also
/// follows `auto_execution_allowed` / `always_require_approval`.
pub fn may_trigger(event: &CiEvent, perms: &crate::permissions::Permissions<'_>) -> bool {
    let c = perms.config;
    if event.command == CiCommand::Approve && !perms.may_approve(&event.actor) {
        return false;
    }
    if !c.allowed_users.is_empty() {
        return perms.check_trigger(&event.actor).is_ok();
    }
    match (&event.association, event.reference.forge) {
        (Some(a), Forge::GitHub) => matches!(a.as_str(), "OWNER" | "MEMBER" | "COLLABORATOR"),
        _ => event.actor.eq_ignore_ascii_case(perms.issue_author),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_command_is_on_the_first_line() {
        assert_eq!(command_in("/dandori approve"), Some(CiCommand::Approve));
        assert_eq!(command_in("/dandori run please"), Some(CiCommand::Run));
        assert_eq!(
            command_in("/DANDORI Approve\r\nthanks"),
            Some(CiCommand::Approve)
        );
        // The workflow's gate is `startsWith(body, '/dandori')`: nothing before it.
        assert_eq!(command_in("\n  /dandori run please"), None);
        assert_eq!(command_in("/dandorix run"), None);
        assert_eq!(command_in("hello\n/dandori run"), None);
        assert_eq!(command_in("/dandori dance"), None);
    }

    #[test]
    fn a_bare_or_unknown_command_asks_for_help_and_prose_is_ignored() {
        assert_eq!(ci_command_in("/dandori approve"), Some(CiCommand::Approve));
        assert_eq!(ci_command_in("/approve"), Some(CiCommand::Help));
        assert_eq!(ci_command_in("/Run now"), Some(CiCommand::Help));
        assert_eq!(ci_command_in("  /run now"), None);
        assert_eq!(ci_command_in("/dandori dance"), Some(CiCommand::Help));
        assert_eq!(ci_command_in("/dandori"), Some(CiCommand::Help));
        assert_eq!(ci_command_in("/approved by me"), None);
        assert_eq!(ci_command_in("looks good, /approve"), None);
        assert_eq!(ci_command_in("/cc @bob"), None);
        let reply = help_reply("/approve");
        assert!(
            reply.contains("`/approve`") && reply.contains("`/dandori approve`"),
            "{reply}"
        );
    }

    #[test]
    fn github_label_and_comment_events() {
        let labeled = json!({"action": "labeled", "label": {"name": "dandori"},
            "issue": {"number": 7, "user": {"login": "alice"}},
            "repository": {"full_name": "octo/app"}, "sender": {"login": "alice"}});
        let e = github_event("issues", &labeled, "dandori").unwrap();
        assert_eq!(e.command, CiCommand::Plan);
        assert_eq!(e.reference.to_string(), "github:octo/app#7");
        assert!(matches!(
            github_event("issues", &labeled, "other"),
            Err(CiSkip::Ignored(_))
        ));
        let bot = json!({"action": "created", "issue": {"number": 7, "user": {"login": "alice"}},
            "comment": {"body": "/dandori run", "user": {"login": "github-actions[bot]", "type": "Bot"}},
            "repository": {"full_name": "octo/app"}, "sender": {"type": "Bot"}});
        assert!(matches!(
            github_event("issue_comment", &bot, "dandori"),
            Err(CiSkip::Ignored(_))
        ));
        assert!(matches!(
            github_event("issue_comment", &json!({}), "dandori"),
            Err(CiSkip::Invalid(_))
        ));
    }
}
