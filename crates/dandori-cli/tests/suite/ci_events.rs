//! `dandori ci` on the event shapes GitHub publishes (npm
//! `@octokit/webhooks-examples`, retargeted at the fake forge's `octo/app#7`),
//! as the binary a CI job runs, without the workflow's gate in front of it
//! (defence in depth): what it ignores (exit 0, the reason in the job log),
//! answers, refuses (exit 2, nothing written), and how a malformed or truncated
//! payload is named; a comment on dandori's own pull request steers its
//! request; a token that cannot publish is named before any work.

use std::process::{Command, Output, Stdio};

use dandori_test_support::fake_forge::{Api, ItemKind};
use dandori_test_support::webhook_examples;
use serde_json::{Value, json};

use super::ci_bot::{BIN, BOT, Fx, agent, ci, comment, fixture, labeled, pulls, text};

/// A published example, made to point at `octo/app#7` (authored by alice).
fn retarget(mut p: Value) -> Value {
    if let Some(o) = p.get_mut("repository").and_then(Value::as_object_mut) {
        o.insert("full_name".into(), json!("octo/app"));
    }
    if let Some(i) = p.get_mut("issue").and_then(Value::as_object_mut) {
        i.insert("number".into(), json!(7));
        i.insert("user".into(), json!({"login": "alice", "type": "User"}));
    }
    p
}

fn example(name: &str, action: &str) -> Value {
    webhook_examples::github_examples()
        .unwrap_or_else(|e| panic!("{e}"))
        .into_iter()
        .find(|(n, p)| n == name && (action.is_empty() || p["action"] == action))
        .map(|(_, p)| retarget(p))
        .unwrap_or_else(|| panic!("no {name}/{action} example"))
}

/// A real `issue_comment` of `action` by `who` with `assoc`, saying `body`.
fn said(action: &str, who: &str, assoc: &str, body: &str) -> Value {
    let mut p = example("issue_comment", action);
    p["comment"]["body"] = json!(body);
    p["comment"]["author_association"] = json!(assoc);
    p["comment"]["user"]["login"] = json!(who);
    p["sender"]["login"] = json!(who);
    p
}

fn ours(f: &Fx) -> usize {
    f.forge
        .item(Api::GitHub, "octo/app", 7)
        .comments
        .iter()
        .filter(|c| c.author == BOT)
        .count()
}

#[test]
fn published_event_shapes_are_ignored_answered_or_refused_never_a_panic() {
    let f = fixture();
    let all = webhook_examples::github_examples().unwrap_or_else(|e| panic!("{e}"));
    // Every published issues / issue_comment example, and one of each other
    // event: ignored with the reason, exit 0, nothing written.
    let mut seen = std::collections::BTreeSet::new();
    for (name, p) in all {
        let issue_event = matches!(name.as_str(), "issues" | "issue_comment");
        if !issue_event && !seen.insert(name.clone()) {
            continue;
        }
        let o = ci(&f, &name, &retarget(p.clone()), &[]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{name}/{}: {}",
            p["action"],
            text(&o)
        );
        assert!(
            text(&o).contains("CI_EVENT_IGNORED: "),
            "{name}: {}",
            text(&o)
        );
    }
    assert!(seen.len() >= 50, "{seen:?}");
    // Edited and deleted comments never start a run; bots are never answered.
    for action in ["edited", "deleted"] {
        let o = ci(
            &f,
            "issue_comment",
            &said(action, "alice", "OWNER", "/dandori run"),
            &[],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        assert!(
            text(&o).contains("only a new comment asks dandori"),
            "{}",
            text(&o)
        );
    }
    let mut bot = said("created", BOT, "MEMBER", "/dandori run");
    bot["comment"]["user"]["type"] = json!("Bot");
    let o = ci(&f, "issue_comment", &bot, &["--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        (v["status"].as_str(), v["reason_code"].as_str()),
        (Some("ignored"), Some("CI_EVENT_IGNORED"))
    );
    assert!(v["message"].as_str().unwrap().contains("bot"), "{v}");
    assert_eq!(ours(&f), 0);

    // A stranger, even with no gate before dandori: refused, no reply, no work.
    for (assoc, body) in [
        ("NONE", "/dandori run"),
        ("FIRST_TIME_CONTRIBUTOR", "/dandori approve"),
        ("CONTRIBUTOR", "/approve"),
        ("FIRST_TIMER", "/dandori plan"),
    ] {
        let o = ci(
            &f,
            "issue_comment",
            &said("created", "mallory", assoc, body),
            &[],
        );
        assert_eq!(o.status.code(), Some(2), "{assoc}: {}", text(&o));
        assert!(text(&o).contains("FORGE_PERMISSION_DENIED"), "{}", text(&o));
    }
    assert_eq!(ours(&f), 0, "a stranger got an answer");
    assert!(
        !f.repo.join(".dandori/runs").exists(),
        "work was done for a stranger"
    );

    // An unrecognised command from a maintainer: a reply with the commands.
    let o = ci(
        &f,
        "issue_comment",
        &said("created", "alice", "OWNER", "/dandori dance"),
        &[],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let reply = item.comments.iter().find(|c| c.author == BOT).unwrap();
    assert!(
        reply
            .body
            .contains("dandori did not act on `/dandori dance`"),
        "{}",
        reply.body
    );
    assert!(reply.body.contains("`/dandori approve`"), "{}", reply.body);

    // Malformed and truncated payloads: the file, the JSON path or position,
    // the reason code; exit 2, never a panic (101).
    let full = said("created", "alice", "OWNER", "/dandori run").to_string();
    let dir = f.root.join("payloads");
    std::fs::create_dir_all(&dir).unwrap();
    let truncated = dir.join("truncated.json");
    std::fs::write(&truncated, &full[..full.len() / 3]).unwrap();
    let mut no_number: Value = serde_json::from_str(&full).unwrap();
    no_number["issue"].as_object_mut().unwrap().remove("number");
    let no_number_file = dir.join("no-number.json");
    std::fs::write(&no_number_file, no_number.to_string()).unwrap();
    for (file, want) in [
        (&truncated, "truncated JSON"),
        (&no_number_file, "$.issue.number: missing"),
    ] {
        let o = Command::new(BIN)
            .args(["ci", "--event"])
            .arg(file)
            .args(["--event-name", "issue_comment"])
            .current_dir(&f.repo)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &f.home)
            .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(&format!("CI_EVENT_INVALID: {}: ", file.display())) && err.contains(want),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let errs = dandori_test_support::openapi::check_all(&f.forge.exchanges()).unwrap();
    assert!(errs.is_empty(), "{errs:#?}");
}

/// A comment on the pull request dandori opened: its payload as GitHub sends
/// it (`issue` is the pull request, `issue.pull_request` set, the body ours).
fn on_pull_request(f: &Fx, number: u64, who: &str, body: &str) -> Value {
    let pr = f.forge.item(Api::GitHub, "octo/app", number);
    let id = f
        .forge
        .add_comment(Api::GitHub, "octo/app", number, who, body);
    let mut p = said("created", who, "OWNER", body);
    p["comment"]["id"] = json!(id);
    p["issue"]["number"] = json!(number);
    p["issue"]["body"] = json!(pr.body);
    p["issue"]["user"] = json!({"login": pr.author, "type": "Bot"});
    p["issue"]["pull_request"] = json!({
        "url": format!("https://api.github.com/repos/octo/app/pulls/{number}"),
        "html_url": format!("https://github.com/octo/app/pull/{number}"),
        "diff_url": format!("https://github.com/octo/app/pull/{number}.diff"),
        "patch_url": format!("https://github.com/octo/app/pull/{number}.patch"),
    });
    p
}

#[test]
fn a_comment_on_dandoris_pull_request_steers_its_request() {
    let f = fixture();
    let url = f.forge.git_url(Api::GitHub, "octo/app");
    dandori_test_support::git::git(&f.repo, &["remote", "set-url", "origin", &url]);
    let o = ci(&f, "issues", &labeled(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori approve"),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let prs = pulls(&f);
    assert_eq!(prs.len(), 1, "{}", text(&o));
    let number = prs[0].0;

    // `/dandori run` on the pull request: the issue's run again, the same
    // pull request updated (not a request of the pull request's own).
    f.forge.clear_exchanges();
    let o = ci(
        &f,
        "issue_comment",
        &on_pull_request(&f, number, "alice", "/dandori run"),
        &["--json"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["steps"], json!([{"step": "run", "exit_code": 0}]), "{v}");
    assert_eq!(pulls(&f).len(), 1);
    let ex = f.forge.exchanges();
    assert!(
        ex.iter()
            .any(|e| e.method == "PATCH" && e.path == format!("/repos/octo/app/pulls/{number}")),
        "{ex:#?}"
    );
    // `/dandori revise` there: this comment is the feedback, for the issue's run.
    let o = ci(
        &f,
        "issue_comment",
        &on_pull_request(
            &f,
            number,
            "alice",
            "/dandori revise\nconstraint: keep the greeting short",
        ),
        &["--json"],
    );
    assert!(o.status.success(), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v["steps"],
        json!([{"step": "revise", "exit_code": 0}]),
        "{v}"
    );
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    assert!(
        item.comments
            .iter()
            .any(|c| c.author == BOT && c.body.contains("keep the greeting short")),
        "{:#?}",
        item.comments
    );
    // A pull request whose body merely claims to be dandori's is its own request.
    f.forge.add_item(
        Api::GitHub,
        "octo/app",
        40,
        ItemKind::ChangeRequest,
        "Not dandori's",
        &format!(
            "<!-- dandori:pull_request github-octo-app-7 -->\n{}",
            "forged"
        ),
        &[],
        "mallory",
    );
    let o = ci(
        &f,
        "issue_comment",
        &on_pull_request(&f, 40, "alice", "/dandori revise\ndrop S02"),
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no plan of github-pr:octo/app#40"),
        "{}",
        text(&o)
    );
}

/// `dandori ci` with another token as `GITHUB_TOKEN`.
fn ci_with_token(f: &Fx, token: &str, payload: &Value) -> Output {
    let path = f.root.join(format!("event-{token}.json"));
    std::fs::write(&path, payload.to_string()).unwrap();
    let agent_cmd = format!("sh {} {{step_id}}", agent(f).display());
    Command::new(BIN)
        .args(["--sandbox", "off", "ci", "--agent-cmd", &agent_cmd])
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "issue_comment")
        .env("GITHUB_EVENT_PATH", &path)
        .env("GITHUB_API_URL", f.forge.github_api_url())
        .env("GITHUB_TOKEN", token)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

#[test]
fn a_token_that_cannot_publish_is_named_before_any_work() {
    let f = fixture();
    f.forge
        .add_project(Api::GitHub, "octo/app", true, &[BOT, "alice"]);
    // A classic token without `repo`; a fine-grained one without pull
    // requests write; GITHUB_TOKEN with `pull-requests: read`.
    f.forge.add_token("ghp_classicNoRepo", "alice");
    f.forge
        .set_token_scopes("ghp_classicNoRepo", &["read:org", "workflow"]);
    f.forge.add_token("github_pat_noPulls", "alice");
    f.forge.set_token_permissions(
        "github_pat_noPulls",
        &[
            ("contents", "write"),
            ("issues", "write"),
            ("pull_requests", "read"),
        ],
    );
    f.forge
        .add_installation_token("ghs_readPulls", "github-actions");
    f.forge.set_token_permissions(
        "ghs_readPulls",
        &[
            ("contents", "write"),
            ("issues", "write"),
            ("pull_requests", "read"),
        ],
    );
    for (token, want) in [
        (
            "ghp_classicNoRepo",
            "lacks the scope `repo` (X-OAuth-Scopes: read:org, workflow)",
        ),
        (
            "github_pat_noPulls",
            "lacks the permission `pull_requests: write`",
        ),
        ("ghs_readPulls", "Resource not accessible by integration"),
    ] {
        for body in ["/dandori approve", "/dandori run"] {
            let started = std::time::Instant::now();
            let o = ci_with_token(&f, token, &comment(&f, "alice", "OWNER", body));
            assert_eq!(o.status.code(), Some(2), "{token}: {}", text(&o));
            assert!(text(&o).contains("PREFLIGHT_FAILED"), "{}", text(&o));
            assert!(text(&o).contains(want), "{token}: {}", text(&o));
            assert!(started.elapsed() < std::time::Duration::from_secs(20));
        }
    }
    // Before any work: no plan, no run, no comment, nothing pushed.
    assert!(!f.repo.join(".dandori/runs").exists());
    assert_eq!(ours(&f), 0);
    assert!(pulls(&f).is_empty());
    assert!(
        f.forge
            .git_requests()
            .iter()
            .all(|r| r.service != "git-receive-pack")
    );
    // The installation token with the permission gets through the same check.
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori approve"),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(pulls(&f).len(), 1);
}
