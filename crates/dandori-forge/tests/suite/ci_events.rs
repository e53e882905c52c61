//! Every CI event shape `dandori ci` may be handed, decided twice: by the `if:`
//! of the workflow `dandori init github-action` writes (evaluated as GitHub's
//! runner does, `dandori_test_support::gh_expr`) and by `dandori ci`'s own
//! reading (`ci::github_event`, `ci::may_trigger`). The events are GitHub's
//! published examples (npm `@octokit/webhooks-examples`: every event and
//! action) and variants of their real shapes (a `/dandori` command, each
//! `author_association`, a bot, a pull request's conversation, edited and
//! deleted comments, labels, malformed and truncated payloads), each variant
//! checked against GitHub's payload schema (`@octokit/webhooks-schemas`) so it
//! stays a shape GitHub sends. The decision table is docs/forges.md's "Which
//! events act".

use std::collections::BTreeMap;

use dandori_config::PermissionsConfig;
use dandori_forge::ci::{self, CiCommand, CiSkip};
use dandori_forge::ci_bot::{EventSource, read_event};
use dandori_forge::permissions::Permissions;
use dandori_forge::workflow::{self, WorkflowAgent, WorkflowOptions};
use dandori_forge::{ItemKind, reason};
use dandori_test_support::{gh_expr, openapi, webhook_examples};
use serde_json::{Value, json};

/// What `dandori ci` makes of an event.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    /// Exit 0, `CI_EVENT_IGNORED` and the reason in the job log.
    Ignored,
    /// Exit 2, `CI_EVENT_INVALID` naming the JSON path.
    Invalid(String),
    /// Exit 2, `FORGE_PERMISSION_DENIED`: nothing runs.
    Refused,
    /// A reply listing the commands.
    Reply,
    Act(CiCommand),
}

fn decide(name: &str, payload: &Value) -> Outcome {
    match ci::github_event(name, payload, "dandori") {
        Err(CiSkip::Ignored(why)) => {
            assert!(!why.is_empty());
            Outcome::Ignored
        }
        Err(CiSkip::Invalid(m)) => Outcome::Invalid(m),
        Ok(e) => {
            let config = PermissionsConfig::default();
            let perms = Permissions::new(&config, &e.issue_author);
            if !ci::may_trigger(&e, &perms) {
                Outcome::Refused
            } else if e.command == CiCommand::Help {
                Outcome::Reply
            } else {
                Outcome::Act(e.command)
            }
        }
    }
}

/// The generated workflow's job condition.
fn gate() -> String {
    let wf = workflow::github_actions(&WorkflowOptions {
        label: "dandori".into(),
        agent: WorkflowAgent::Preset(dandori_config::AgentPreset::Claude),
        dandori_version: "0.1.0".into(),
        allowed_users: Vec::new(),
    });
    gh_expr::job_if(&wf, "dandori").expect("the job's if:")
}

fn starts(cond: &str, name: &str, payload: &Value) -> bool {
    let ctx = json!({"github": {"event_name": name, "event": payload}});
    gh_expr::truthy_expr(cond, &ctx).unwrap_or_else(|e| panic!("{cond}: {e}"))
}

/// A variant must stay a payload GitHub sends: checked against its schema,
/// it has no finding the published example it came from does not have (the
/// examples predate some fields the schemas now require).
fn conforms(c: &Corpus, name: &str, payload: &Value) {
    let action = payload["action"].as_str().unwrap_or_default();
    let key = format!("/definitions/{name}${action}");
    let def = c
        .schema
        .pointer(&key)
        .unwrap_or_else(|| panic!("no schema {key}"));
    let findings = |v: &Value| {
        let mut errs = Vec::new();
        openapi::check(&c.schema, def, v, "$", false, &mut errs);
        errs
    };
    let known = findings(&c.first(name, action, false));
    let new: Vec<String> = findings(payload)
        .into_iter()
        .filter(|e| !known.contains(e))
        .collect();
    assert!(new.is_empty(), "{name}/{action} variant: {new:#?}");
}

struct Corpus {
    examples: Vec<(String, Value)>,
    schema: Value,
}

fn corpus() -> Corpus {
    Corpus {
        examples: webhook_examples::github_examples().unwrap_or_else(|e| panic!("{e}")),
        schema: webhook_examples::github_schema().unwrap_or_else(|e| panic!("{e}")),
    }
}

impl Corpus {
    fn first(&self, name: &str, action: &str, pr: bool) -> Value {
        self.examples
            .iter()
            .find(|(n, p)| {
                n == name
                    && p["action"] == action
                    && p.pointer("/issue/pull_request").is_some() == pr
            })
            .map(|(_, p)| p.clone())
            .unwrap_or_else(|| panic!("no {name}/{action} example (pull request: {pr})"))
    }

    /// A real `issue_comment` of `action` saying `body`, by a user with `assoc`.
    fn comment(&self, action: &str, body: &str, assoc: &str) -> Value {
        let mut p = self.first("issue_comment", action, false);
        p["comment"]["body"] = json!(body);
        p["comment"]["author_association"] = json!(assoc);
        p
    }
}

const WRITERS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];
const OTHERS: [&str; 5] = [
    "CONTRIBUTOR",
    "FIRST_TIME_CONTRIBUTOR",
    "FIRST_TIMER",
    "NONE",
    "MANNEQUIN",
];

#[test]
fn every_published_example_is_ignored_by_the_gate_and_by_dandori() {
    let c = corpus();
    let cond = gate();
    let mut events = BTreeMap::<&str, usize>::new();
    for (name, payload) in &c.examples {
        *events.entry(name).or_default() += 1;
        // None is a `/dandori` comment or the trigger label (`bug` is added).
        assert_eq!(
            decide(name, payload),
            Outcome::Ignored,
            "{name} {payload:#}"
        );
        assert!(!starts(&cond, name, payload), "{name}: the job would start");
    }
    assert!(events.len() >= 50 && c.examples.len() >= 300, "{events:?}");
    for name in [
        "issues",
        "issue_comment",
        "pull_request",
        "push",
        "workflow_dispatch",
    ] {
        assert!(events.contains_key(name), "{name} not in the corpus");
    }
}

#[test]
fn commands_by_each_author_association_the_gate_and_dandori_agree() {
    let c = corpus();
    let cond = gate();
    let mut rows = 0;
    for cmd in [
        CiCommand::Plan,
        CiCommand::Approve,
        CiCommand::Revise,
        CiCommand::Run,
    ] {
        for (body, spelled) in [
            (format!("/dandori {}", cmd.as_str()), "plain"),
            (
                format!(
                    "/DANDORI {}\r\nwith more lines",
                    cmd.as_str().to_uppercase()
                ),
                "upper",
            ),
        ] {
            for assoc in WRITERS.iter().chain(&OTHERS) {
                let p = c.comment("created", &body, assoc);
                conforms(&c, "issue_comment", &p);
                let writer = WRITERS.contains(assoc);
                assert_eq!(
                    starts(&cond, "issue_comment", &p),
                    writer,
                    "{spelled} {assoc}"
                );
                // Without the gate, dandori refuses the same users itself.
                let want = if writer {
                    Outcome::Act(cmd)
                } else {
                    Outcome::Refused
                };
                assert_eq!(decide("issue_comment", &p), want, "{body:?} by {assoc}");
                rows += 1;
            }
        }
    }
    assert_eq!(rows, 4 * 2 * 8);
}

#[test]
fn unrecognised_commands_get_a_reply_and_prose_is_ignored() {
    let c = corpus();
    let cond = gate();
    for body in [
        "/approve",
        "/Run now",
        "/dandori",
        "/dandori dance",
        "/revise\nmore",
    ] {
        let p = c.comment("created", body, "MEMBER");
        conforms(&c, "issue_comment", &p);
        assert!(starts(&cond, "issue_comment", &p), "{body:?}");
        assert_eq!(decide("issue_comment", &p), Outcome::Reply, "{body:?}");
        // A stranger gets no reply: refused, without the gate too.
        let p = c.comment("created", body, "NONE");
        assert!(!starts(&cond, "issue_comment", &p), "{body:?}");
        assert_eq!(decide("issue_comment", &p), Outcome::Refused, "{body:?}");
    }
    // What the gate stops, dandori ignores too: a command not at the start.
    for body in [
        "\n/dandori run",
        " /dandori run",
        "please /dandori run",
        "LGTM",
        "",
        "/cc @octocat",
    ] {
        let p = c.comment("created", body, "OWNER");
        assert!(!starts(&cond, "issue_comment", &p), "{body:?}");
        assert_eq!(decide("issue_comment", &p), Outcome::Ignored, "{body:?}");
    }
    // The one shape the gate lets through and dandori ignores: a word that
    // only starts like a command (`startsWith` has no word boundary). The job
    // ends at once with the reason, exit 0.
    for body in ["/planning notes", "/dandorian", "/runway"] {
        let p = c.comment("created", body, "OWNER");
        assert!(starts(&cond, "issue_comment", &p), "{body:?}");
        assert_eq!(decide("issue_comment", &p), Outcome::Ignored, "{body:?}");
    }
}

#[test]
fn edited_and_deleted_comments_and_bots_never_start_a_run() {
    let c = corpus();
    let cond = gate();
    for action in ["edited", "deleted"] {
        let p = c.comment(action, "/dandori run", "OWNER");
        conforms(&c, "issue_comment", &p);
        assert!(!starts(&cond, "issue_comment", &p), "{action}");
        assert_eq!(decide("issue_comment", &p), Outcome::Ignored, "{action}");
    }
    // github-actions[bot] (dandori's own comments), another app's bot; a
    // bot's association can be anything.
    for (login, assoc) in [
        ("github-actions[bot]", "NONE"),
        ("github-actions[bot]", "MEMBER"),
        ("renovate[bot]", "CONTRIBUTOR"),
    ] {
        let mut p = c.comment("created", "/dandori run", assoc);
        p["comment"]["user"]["login"] = json!(login);
        p["comment"]["user"]["type"] = json!("Bot");
        p["sender"] = p["comment"]["user"].clone();
        conforms(&c, "issue_comment", &p);
        assert!(!starts(&cond, "issue_comment", &p), "{login}");
        assert_eq!(decide("issue_comment", &p), Outcome::Ignored, "{login}");
    }
}

#[test]
fn labels_issue_actions_and_other_events() {
    let c = corpus();
    let cond = gate();
    for label in ["dandori", "Dandori"] {
        let mut p = c.first("issues", "labeled", false);
        p["label"]["name"] = json!(label);
        conforms(&c, "issues", &p);
        assert!(starts(&cond, "issues", &p), "{label}");
        assert_eq!(decide("issues", &p), Outcome::Act(CiCommand::Plan));
    }
    // Removing the label, and every other action, even on an issue carrying it.
    let actions: Vec<(String, Value)> = c
        .examples
        .iter()
        .filter(|(n, p)| n == "issues" && p["action"] != "labeled")
        .cloned()
        .collect();
    assert!(actions.len() >= 20);
    for (name, mut p) in actions {
        let action = p["action"].as_str().unwrap().to_string();
        if let Some(l) = p.get_mut("label") {
            l["name"] = json!("dandori");
        }
        assert!(!starts(&cond, &name, &p), "issues/{action}");
        assert_eq!(decide(&name, &p), Outcome::Ignored, "issues/{action}");
    }
    // An event dandori does not act on is ignored unread, whatever its body.
    for name in [
        "pull_request",
        "push",
        "workflow_dispatch",
        "pull_request_review",
    ] {
        assert_eq!(decide(name, &json!("not even an object")), Outcome::Ignored);
        let (_, p) = c.examples.iter().find(|(n, _)| n == name).unwrap();
        assert!(!starts(&cond, name, p));
    }
}

#[test]
fn a_comment_on_a_pull_request_is_its_conversation() {
    let c = corpus();
    let cond = gate();
    let pr = c.first("issues", "milestoned", true)["issue"]["pull_request"].clone();
    let mut p = c.comment("created", "/dandori revise\ndrop S02", "OWNER");
    p["issue"]["pull_request"] = pr;
    conforms(&c, "issue_comment", &p);
    assert!(starts(&cond, "issue_comment", &p));
    assert_eq!(decide("issue_comment", &p), Outcome::Act(CiCommand::Revise));
    let e = ci::github_event("issue_comment", &p, "dandori").unwrap();
    assert_eq!(e.reference.kind, ItemKind::ChangeRequest);
    assert_eq!(e.pull_request_of, None, "no marker: a request of its own");
    assert!(e.body.ends_with("drop S02"));
    // dandori's own pull request (its body's marker): the request it names,
    // trusted once the forge confirms the branch (ci_bot::admit).
    p["issue"]["body"] =
        json!("<!-- dandori:pull_request github-codertocat-hello-world-7 -->\n### dandori: x");
    let e = ci::github_event("issue_comment", &p, "dandori").unwrap();
    assert_eq!(
        e.pull_request_of.as_deref(),
        Some("github-codertocat-hello-world-7")
    );
    let of = |id: &str| dandori_forge::ci_bot::request_ref(&e.reference, id).map(|r| r.to_string());
    assert_eq!(
        of("github-Codertocat-Hello-World-7").as_deref(),
        Some("github:Codertocat/Hello-World#7")
    );
    assert_eq!(
        of("github-pr-Codertocat-Hello-World-9").as_deref(),
        Some("github-pr:Codertocat/Hello-World#9")
    );
    // Another repository's request is never this one's.
    assert_eq!(of("github-octo-app-7"), None);
    assert_eq!(of("github-Codertocat-Hello-World-x"), None);
}

#[test]
fn malformed_payloads_name_the_json_path() {
    let c = corpus();
    let cmd = c.comment("created", "/dandori run", "OWNER");
    let cases: Vec<(&str, Value, &str)> = vec![
        ("issue_comment", json!([]), "$: not a JSON object"),
        ("issue_comment", json!(null), "$: not a JSON object"),
        (
            "issue_comment",
            without(&cmd, "/action"),
            "$.action: missing",
        ),
        (
            "issue_comment",
            without(&cmd, "/issue/number"),
            "$.issue.number: missing",
        ),
        (
            "issue_comment",
            with(&cmd, "/issue/number", json!("7")),
            "$.issue.number: a string where a positive integer is required",
        ),
        (
            "issue_comment",
            with(&cmd, "/issue/number", json!(-7)),
            "$.issue.number: a number where a positive integer is required",
        ),
        (
            "issue_comment",
            without(&cmd, "/repository"),
            "$.repository.full_name: missing",
        ),
        (
            "issue_comment",
            with(&cmd, "/comment/body", Value::Null),
            "$.comment.body: null where a string is required",
        ),
        (
            "issue_comment",
            without(&cmd, "/comment/user"),
            "$.comment.user.login: missing",
        ),
        (
            "issue_comment",
            without(&cmd, "/comment/author_association"),
            "$.comment.author_association: missing",
        ),
        (
            "issue_comment",
            with(&cmd, "/comment", json!("x")),
            "$.comment.user.login: missing",
        ),
    ];
    let mut labeled = c.first("issues", "labeled", false);
    labeled["label"]["name"] = json!("dandori");
    let cases = cases.into_iter().chain([
        (
            "issues",
            without(&labeled, "/label"),
            "$.label.name: missing",
        ),
        (
            "issues",
            without(&labeled, "/sender"),
            "$.sender.login: missing",
        ),
        (
            "issues",
            with(&labeled, "/sender/login", json!("")),
            "$.sender.login: empty",
        ),
    ]);
    for (name, p, want) in cases {
        match decide(name, &p) {
            Outcome::Invalid(m) => assert!(m.starts_with(want), "{m} (want {want})"),
            other => panic!("{name} {p}: {other:?}, want {want}"),
        }
        // The gate does not fail on it either (a missing value is null).
        let _ = starts(&gate(), name, &p);
    }
}

#[test]
fn a_truncated_payload_file_is_named_with_the_reason() {
    let c = corpus();
    let dir = tempfile::tempdir().unwrap();
    let full = c.comment("created", "/dandori run", "OWNER").to_string();
    let env = BTreeMap::new();
    for (i, text) in [&full[..full.len() / 2], "", "{\"action\": \"created\",}"]
        .into_iter()
        .enumerate()
    {
        let path = dir.path().join(format!("event-{i}.json"));
        std::fs::write(&path, text).unwrap();
        let src = EventSource {
            event: Some(&path),
            event_name: Some("issue_comment"),
            label: "dandori",
        };
        match read_event(&src, &env) {
            Err(CiSkip::Invalid(m)) => {
                assert!(m.starts_with(&path.display().to_string()), "{m}");
                assert!(m.contains("line 1 column"), "{m}");
                if i < 2 {
                    assert!(m.contains("truncated JSON"), "{m}");
                }
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
    // A field missing from a file: the file and the JSON path.
    let path = dir.path().join("no-number.json");
    std::fs::write(
        &path,
        without(&serde_json::from_str(&full).unwrap(), "/issue/number").to_string(),
    )
    .unwrap();
    let src = EventSource {
        event: Some(&path),
        event_name: Some("issue_comment"),
        label: "dandori",
    };
    let Err(CiSkip::Invalid(m)) = read_event(&src, &env) else {
        panic!("accepted")
    };
    assert_eq!(
        m,
        format!(
            "{}: $.issue.number: missing (a issue_comment/created payload has it)",
            path.display()
        )
    );
    // Another event's payload is not read at all.
    let src = EventSource {
        event: Some(&dir.path().join("event-0.json")),
        event_name: Some("push"),
        label: "dandori",
    };
    assert!(matches!(read_event(&src, &env), Err(CiSkip::Ignored(_))));
    assert_eq!(reason::CI_EVENT_INVALID, "CI_EVENT_INVALID");
}

/// GitLab's webhook shapes (GitLab's "Webhook events" documentation: the note
/// and issue hooks a triggered pipeline carries in `TRIGGER_PAYLOAD`).
fn gitlab_note(noteable: &str, note: &str, user: &str) -> Value {
    let mut p = json!({
        "object_kind": "note", "event_type": "note",
        "user": {"id": 1, "name": "Administrator", "username": user, "avatar_url": "", "email": "[REDACTED]"},
        "project_id": 5,
        "project": {"id": 5, "name": "Gitlab Test", "path_with_namespace": "gitlabhq/gitlab-test",
                    "web_url": "http://example.com/gitlabhq/gitlab-test", "default_branch": "master"},
        "repository": {"name": "Gitlab Test", "url": "http://example.com/gitlab-org/gitlab-test.git"},
        "object_attributes": {"id": 1241, "note": note, "noteable_type": noteable, "author_id": 1,
            "created_at": "2015-05-17 17:06:40 UTC", "updated_at": "2015-05-17 17:06:40 UTC",
            "project_id": 5, "attachment": null, "line_code": null, "commit_id": "", "noteable_id": 92,
            "system": false, "st_diff": null, "action": "create",
            "url": "http://example.com/gitlab-org/gitlab-test/issues/17#note_1241"}
    });
    match noteable {
        "Issue" => {
            p["issue"] = json!({"id": 92, "iid": 17, "title": "test", "description": "test",
                                       "author_id": 1, "state": "opened", "labels": []})
        }
        "MergeRequest" => {
            p["merge_request"] = json!({"id": 7, "iid": 1, "source_branch": "tmp",
            "target_branch": "markdown", "source_project_id": 5, "target_project_id": 5,
            "title": "Tempora et eos debitis quae laborum et.", "description": "Et voluptas corrupti",
            "state": "opened", "draft": false})
        }
        _ => p["commit"] = json!({"id": "cfe32cf61b73a0d5e9f13e774abde7ff789b1660"}),
    }
    p
}

fn gitlab_issue(previous: &[&str], current: &[&str]) -> Value {
    let labels = |ls: &[&str]| -> Value {
        ls.iter()
            .enumerate()
            .map(|(i, t)| json!({"id": 200 + i, "title": t, "color": "#CD5C5C", "project_id": 5, "type": "ProjectLabel", "group_id": null}))
            .collect()
    };
    json!({
        "object_kind": "issue", "event_type": "issue",
        "user": {"id": 1, "name": "Administrator", "username": "root", "email": "[REDACTED]"},
        "project": {"id": 1, "name": "Gitlab Test", "path_with_namespace": "gitlabhq/gitlab-test"},
        "object_attributes": {"id": 301, "iid": 23, "title": "New API: create/update/delete file",
            "state": "opened", "action": "update", "labels": labels(current)},
        "labels": labels(current),
        "changes": {"labels": {"previous": labels(previous), "current": labels(current)}}
    })
}

#[test]
fn gitlab_hooks_are_decided_the_same_way() {
    let vars = BTreeMap::from([(
        "CI_PROJECT_PATH".to_string(),
        "gitlabhq/gitlab-test".to_string(),
    )]);
    let decide = |p: &Value| ci::gitlab_event(&vars, Some(p), "dandori");
    let e = decide(&gitlab_issue(&["bug"], &["bug", "dandori"])).unwrap();
    assert_eq!(
        (e.command, e.reference.to_string().as_str()),
        (CiCommand::Plan, "gitlab:gitlabhq/gitlab-test#23")
    );
    for (prev, cur) in [
        (&["dandori"][..], &["dandori", "bug"][..]),
        (&["dandori"], &[]),
        (&[], &["bug"]),
    ] {
        assert!(
            matches!(decide(&gitlab_issue(prev, cur)), Err(CiSkip::Ignored(_))),
            "{prev:?} → {cur:?}"
        );
    }
    let e = decide(&gitlab_note("Issue", "/dandori approve", "alice")).unwrap();
    assert_eq!(
        (e.command, e.reference.to_string().as_str()),
        (CiCommand::Approve, "gitlab:gitlabhq/gitlab-test#17")
    );
    let e = decide(&gitlab_note("MergeRequest", "/dandori run", "alice")).unwrap();
    assert_eq!(e.reference.to_string(), "gitlab-mr:gitlabhq/gitlab-test!1");
    assert_eq!(
        decide(&gitlab_note("Issue", "/approve", "alice"))
            .unwrap()
            .command,
        CiCommand::Help
    );
    let mut edited = gitlab_note("Issue", "/dandori run", "alice");
    edited["object_attributes"]["action"] = json!("update");
    for (p, what) in [
        (edited, "an edited note"),
        (
            gitlab_note("Issue", "/dandori run", "project_5_bot_3f9a"),
            "a project token's bot",
        ),
        (
            gitlab_note("Issue", "/dandori run", "group_12_bot_77"),
            "a group token's bot",
        ),
        (
            gitlab_note("Commit", "/dandori run", "alice"),
            "a note on a commit",
        ),
        (
            gitlab_note("Issue", "\n/dandori run", "alice"),
            "a command not at the start",
        ),
        (
            json!({"object_kind": "push", "ref": "refs/heads/main"}),
            "a push hook",
        ),
        (json!({"object_kind": "pipeline"}), "a pipeline hook"),
    ] {
        assert!(matches!(decide(&p), Err(CiSkip::Ignored(_))), "{what}");
    }
    // A user whose name merely contains `_bot` is a person.
    assert!(decide(&gitlab_note("Issue", "/dandori run", "pat_bothe")).is_ok());
    let mut no_iid = gitlab_note("Issue", "/dandori run", "alice");
    no_iid["issue"].as_object_mut().unwrap().remove("iid");
    let Err(CiSkip::Invalid(m)) = decide(&no_iid) else {
        panic!()
    };
    assert!(m.starts_with("$.issue.iid: missing"), "{m}");
    let mut no_user = gitlab_note("Issue", "/dandori run", "alice");
    no_user.as_object_mut().unwrap().remove("user");
    let Err(CiSkip::Invalid(m)) = decide(&no_user) else {
        panic!()
    };
    assert!(m.starts_with("$.user.username: missing"), "{m}");
    let Err(CiSkip::Invalid(m)) = decide(&json!({"object_attributes": {}})) else {
        panic!()
    };
    assert!(m.starts_with("$.object_kind: missing"), "{m}");
    let Err(CiSkip::Invalid(m)) = decide(&json!(["note"])) else {
        panic!()
    };
    assert!(m.starts_with("$: not a JSON object"), "{m}");
    // dandori's own merge request: its description's marker.
    let mut mr = gitlab_note("MergeRequest", "/dandori revise\ndrop S02", "alice");
    mr["merge_request"]["description"] =
        json!("<!-- dandori:pull_request gitlab-gitlabhq-gitlab-test-23 -->\nbody");
    let e = decide(&mr).unwrap();
    assert_eq!(
        e.pull_request_of.as_deref(),
        Some("gitlab-gitlabhq-gitlab-test-23")
    );
}

fn without(v: &Value, ptr: &str) -> Value {
    let mut v = v.clone();
    let (parent, key) = ptr.rsplit_once('/').unwrap();
    if let Some(o) = v.pointer_mut(parent).and_then(Value::as_object_mut) {
        o.remove(key);
    }
    v
}

fn with(v: &Value, ptr: &str, x: Value) -> Value {
    let mut v = v.clone();
    *v.pointer_mut(ptr).unwrap() = x;
    v
}
