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

/// `/dandori WORD` on the first non-empty line of a comment.
pub fn command_in(body: &str) -> Option<CiCommand> {
    let line = body.lines().map(str::trim).find(|l| !l.is_empty())?;
    let rest = line.strip_prefix("/dandori")?;
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return None;
    }
    CiCommand::parse(rest.split_whitespace().next()?)
}

/// What a comment asks of dandori in CI: [`command_in`], else
/// [`CiCommand::Help`] for a first line that is `/dandori` with no or another
/// word, or a bare `/plan`, `/approve`, `/revise`, `/run`; else nothing.
pub fn ci_command_in(body: &str) -> Option<CiCommand> {
    if let Some(c) = command_in(body) {
        return Some(c);
    }
    let line = body.lines().map(str::trim).find(|l| !l.is_empty())?;
    let first = line.split_whitespace().next()?.to_ascii_lowercase();
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
        "dandori did not act on `{said}`: a command is `/dandori` and one word, on the comment's first line.\n\n\
         - `/dandori approve`: run the plan; the run ends in a pull / merge request.\n\
         - `/dandori revise` and, on the next lines, your changes: a revised plan.\n\
         - `/dandori plan`: plan the issue again.\n\
         - `/dandori run`: run the newest plan as it is.\n"
    )
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

/// A GitHub Actions event (`GITHUB_EVENT_NAME`, the payload).
pub fn github_event(name: &str, payload: &Value, label: &str) -> Result<CiEvent, CiSkip> {
    let repo = s(payload, "/repository/full_name");
    let number = payload.pointer("/issue/number").and_then(Value::as_u64);
    let (Some(number), false) = (number, repo.is_empty()) else {
        return Err(CiSkip::Invalid(format!(
            "the {name} payload has no issue.number / repository.full_name"
        )));
    };
    let kind = if payload.pointer("/issue/pull_request").is_some() {
        ItemKind::ChangeRequest
    } else {
        ItemKind::Issue
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
    let action = s(payload, "/action");
    match name {
        "issues" => {
            let added = s(payload, "/label/name");
            if action != "labeled" || !added.eq_ignore_ascii_case(label) {
                return Err(CiSkip::Ignored(format!(
                    "issues/{action} (label {added:?}): dandori starts on the label {label:?}"
                )));
            }
            Ok(CiEvent {
                command: CiCommand::Plan,
                reference,
                actor: s(payload, "/sender/login").to_string(),
                // Labelling needs triage access to the repository.
                association: Some("MEMBER".to_string()),
                issue_author,
                said: String::new(),
            })
        }
        "issue_comment" => {
            if action != "created" {
                return Err(CiSkip::Ignored(format!("issue_comment/{action}")));
            }
            let actor = s(payload, "/comment/user/login");
            let bot = actor.ends_with("[bot]")
                || s(payload, "/comment/user/type") == "Bot"
                || s(payload, "/sender/type") == "Bot";
            if bot {
                return Err(CiSkip::Ignored(format!("a comment by the bot {actor}")));
            }
            let body = s(payload, "/comment/body");
            let Some(command) = ci_command_in(body) else {
                return Err(CiSkip::Ignored(
                    "a comment without `/dandori plan|approve|revise|run`".to_string(),
                ));
            };
            Ok(CiEvent {
                command,
                reference,
                actor: actor.to_string(),
                association: Some(s(payload, "/comment/author_association").to_string()),
                issue_author,
                said: first_line(body),
            })
        }
        other => Err(CiSkip::Ignored(format!(
            "the {other} event (dandori acts on issues and issue_comment)"
        ))),
    }
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
    if let Some(p) = payload {
        let project = match s(p, "/project/path_with_namespace") {
            "" => project_var,
            x => x,
        };
        let actor = s(p, "/user/username").to_string();
        match s(p, "/object_kind") {
            "note" => {
                let (kind, ptr) = match s(p, "/object_attributes/noteable_type") {
                    "Issue" => (ItemKind::Issue, "/issue"),
                    "MergeRequest" => (ItemKind::ChangeRequest, "/merge_request"),
                    other => {
                        return Err(CiSkip::Ignored(format!(
                            "a note on a {other} (dandori acts on issues and merge requests)"
                        )));
                    }
                };
                let Some(iid) = p.pointer(&format!("{ptr}/iid")).and_then(Value::as_u64) else {
                    return Err(CiSkip::Invalid(format!(
                        "the note payload has no {ptr}/iid"
                    )));
                };
                if actor.contains("_bot") && actor.starts_with(['p', 'g']) {
                    return Err(CiSkip::Ignored(format!("a note by the bot {actor}")));
                }
                let note = s(p, "/object_attributes/note");
                let Some(command) = ci_command_in(note) else {
                    return Err(CiSkip::Ignored(
                        "a note without `/dandori plan|approve|revise|run`".to_string(),
                    ));
                };
                Ok(CiEvent {
                    command,
                    reference: make(project, kind, iid),
                    actor,
                    association: None,
                    issue_author: String::new(),
                    said: first_line(note),
                })
            }
            "issue" => {
                let added = p
                    .pointer("/changes/labels/current")
                    .and_then(Value::as_array)
                    .is_some_and(|cur| {
                        let had = p
                            .pointer("/changes/labels/previous")
                            .and_then(Value::as_array)
                            .is_some_and(|prev| prev.iter().any(|l| s(l, "/title") == label));
                        !had && cur.iter().any(|l| s(l, "/title") == label)
                    });
                let Some(iid) = p.pointer("/object_attributes/iid").and_then(Value::as_u64) else {
                    return Err(CiSkip::Invalid(
                        "the issue payload has no object_attributes.iid".into(),
                    ));
                };
                if !added {
                    return Err(CiSkip::Ignored(format!(
                        "an issue event that does not add the label {label:?}"
                    )));
                }
                Ok(CiEvent {
                    command: CiCommand::Plan,
                    reference: make(project, ItemKind::Issue, iid),
                    actor,
                    association: None,
                    issue_author: String::new(),
                    said: String::new(),
                })
            }
            other => Err(CiSkip::Ignored(format!("the {other:?} webhook"))),
        }
    } else {
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
        })
    }
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
        assert_eq!(command_in("\n  /dandori run please"), Some(CiCommand::Run));
        assert_eq!(command_in("/dandorix run"), None);
        assert_eq!(command_in("hello\n/dandori run"), None);
        assert_eq!(command_in("/dandori dance"), None);
    }

    #[test]
    fn a_bare_or_unknown_command_asks_for_help_and_prose_is_ignored() {
        assert_eq!(ci_command_in("/dandori approve"), Some(CiCommand::Approve));
        assert_eq!(ci_command_in("/approve"), Some(CiCommand::Help));
        assert_eq!(ci_command_in("  /Run now"), Some(CiCommand::Help));
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
