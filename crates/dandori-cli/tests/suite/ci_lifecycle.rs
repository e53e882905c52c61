//! The pull / merge request lifecycle of the CI bot, end to end (GitHub Actions
//! and GitLab CI emulated as in ci_bot.rs: event payload files, the fake forge,
//! a bare remote): the job's own gate decides which comments start it; a bare
//! `/approve` gets a reply; a run that has not achieved the goal opens a real
//! draft; the run that achieves it marks it ready (GitHub's GraphQL
//! `markPullRequestReadyForReview`, GitLab's title); the body carries the
//! evidence table; a later failing run never replaces the green branch.

use std::process::Command;

use dandori_test_support::fake_forge::Api;
use dandori_test_support::git::git;
use serde_json::{Value, json};

use super::ci_bot::{
    BIN, BOT, Fx, GL_BOT, ci, ci_gitlab, comment, fixture, gitlab_fixture, label_hook, labeled,
    note, pulls, text,
};
use super::workflow_gate::job_starts;

/// The `if:` of the job `dandori init github-action` writes.
fn workflow_if(f: &Fx) -> String {
    let o = Command::new(BIN)
        .args(["init", "github-action", "--force", "--repo"])
        .arg(&f.repo)
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let wf = std::fs::read_to_string(f.repo.join(".github/workflows/dandori.yml")).unwrap();
    // Not part of the user's change: the run must not see them.
    std::fs::remove_dir_all(f.repo.join(".github")).unwrap();
    let mut lines = wf.lines().skip_while(|l| l.trim() != "if: >-").skip(1);
    let mut cond = String::new();
    for l in lines.by_ref() {
        if !l.starts_with("      ") {
            break;
        }
        cond.push_str(l.trim());
        cond.push(' ');
    }
    cond
}

/// A GitHub Actions event as the runner would see it: the job's `if:` first;
/// `dandori ci` only when it lets the job start.
fn event(f: &Fx, gate: &str, name: &str, payload: &Value) -> Option<std::process::Output> {
    job_starts(gate, name, payload).then(|| ci(f, name, payload, &[]))
}

fn remote_head(f: &Fx, branch: &str) -> String {
    git(&f.remote, &["rev-parse", branch]).trim().to_string()
}

fn fail_readme(f: &Fx, fail: bool) {
    let p = f.root.join("fail-readme");
    if fail {
        std::fs::write(&p, "").unwrap();
    } else {
        let _ = std::fs::remove_file(&p);
    }
}

/// The owner's `/dandori plan`, then `/dandori run` (the run's output).
fn replan_and_run(f: &Fx, gate: &str) -> std::process::Output {
    let plan = comment(f, "alice", "OWNER", "/dandori plan");
    let o = event(f, gate, "issue_comment", &plan).expect("the owner's comment starts the job");
    assert!(o.status.success(), "{}", text(&o));
    let run = comment(f, "alice", "OWNER", "/dandori run");
    event(f, gate, "issue_comment", &run).expect("the owner's comment starts the job")
}

/// The same on GitLab: the notes `/dandori plan`, then `/dandori run`.
fn gitlab_replan_and_run(f: &Fx) -> std::process::Output {
    let o = ci_gitlab(f, &note(f, "alice", "/dandori plan"));
    assert!(o.status.success(), "{}", text(&o));
    ci_gitlab(f, &note(f, "alice", "/dandori run"))
}

#[test]
fn github_draft_until_the_criteria_are_covered_then_ready_and_green_never_replaced() {
    let f = fixture();
    let url = f.forge.git_url(Api::GitHub, "octo/app");
    git(&f.repo, &["remote", "set-url", "origin", &url]);
    let gate = workflow_if(&f);

    // The label: the plan comment says which comment approves, which revises.
    let o = event(&f, &gate, "issues", &labeled()).expect("the label starts the job");
    assert!(o.status.success(), "{}", text(&o));
    let plan = f.forge.item(Api::GitHub, "octo/app", 7);
    let plan = plan
        .comments
        .iter()
        .find(|c| c.body.contains("<!-- dandori:plan"))
        .unwrap();
    assert!(
        plan.body.contains("- `/dandori approve`: run this plan")
            && plan
                .body
                .contains("- `/dandori revise` and, on the next lines, your changes"),
        "{}",
        plan.body
    );

    // A stranger's comment does not even start the job; nor does prose.
    let stranger = comment(&f, "mallory", "NONE", "/dandori approve");
    assert!(event(&f, &gate, "issue_comment", &stranger).is_none());
    let contributor = comment(&f, "mallory", "CONTRIBUTOR", "/dandori run");
    assert!(event(&f, &gate, "issue_comment", &contributor).is_none());
    let prose = comment(&f, "alice", "OWNER", "thanks, looks good");
    assert!(event(&f, &gate, "issue_comment", &prose).is_none());
    let mut bot = comment(&f, BOT, "NONE", "/dandori run");
    bot["comment"]["user"]["type"] = json!("Bot");
    assert!(event(&f, &gate, "issue_comment", &bot).is_none());
    // Had it started, dandori ci refuses the stranger too.
    let o = ci(&f, "issue_comment", &stranger, &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(pulls(&f).is_empty());

    // A bare `/approve` from the owner: a reply saying what to type, no run.
    let bare = comment(&f, "alice", "OWNER", "/approve");
    let o = event(&f, &gate, "issue_comment", &bare).expect("the owner's /approve starts the job");
    assert!(o.status.success(), "{}", text(&o));
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let reply = item.comments.last().unwrap();
    assert_eq!(reply.author, BOT);
    assert!(
        reply.body.contains("dandori did not act on `/approve`")
            && reply.body.contains("`/dandori approve`"),
        "{}",
        reply.body
    );
    assert!(pulls(&f).is_empty());

    // 1. Approved, but the README step fails: a real draft.
    fail_readme(&f, true);
    let approve = comment(&f, "alice", "OWNER", "/dandori approve");
    let o =
        event(&f, &gate, "issue_comment", &approve).expect("the owner's approval starts the job");
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let prs = pulls(&f);
    assert_eq!(prs.len(), 1, "{}", text(&o));
    let (number, pr) = prs[0].clone();
    assert!(
        pr.pr.as_ref().unwrap().draft,
        "the goal is not achieved: a draft"
    );
    assert!(
        pr.body.contains("_A draft: the goal is not achieved yet."),
        "{}",
        pr.body
    );
    let created = f
        .forge
        .exchanges()
        .into_iter()
        // The first POST is preflight's question (an empty head, refused 422).
        .find(|e| e.method == "POST" && e.path == "/repos/octo/app/pulls" && e.status == 201)
        .unwrap();
    assert_eq!(created.body["draft"], true, "{:#}", created.body);

    // 2. Planned again and run with the step fixed: the same pull request,
    // updated and marked ready through GraphQL (REST cannot); the evidence.
    fail_readme(&f, false);
    f.forge.clear_exchanges();
    let o = replan_and_run(&f, &gate);
    assert!(o.status.success(), "{}", text(&o));
    let prs = pulls(&f);
    assert_eq!(prs.len(), 1, "{}", text(&o));
    let pr = &prs[0].1;
    assert!(!pr.pr.as_ref().unwrap().draft, "ready: {}", text(&o));
    let ex = f.forge.exchanges();
    let ready = ex
        .iter()
        .find(|e| e.path == "/graphql")
        .unwrap_or_else(|| panic!("no GraphQL call: {ex:#?}"));
    assert!(
        ready.body["query"]
            .as_str()
            .unwrap()
            .contains("markPullRequestReadyForReview"),
        "{:#}",
        ready.body
    );
    assert!(ready.response["errors"].is_null(), "{:#}", ready.response);
    assert!(
        ex.iter()
            .any(|e| e.method == "PATCH" && e.path == format!("/repos/octo/app/pulls/{number}"))
    );
    assert!(!pr.body.contains("_A draft"), "{}", pr.body);
    assert!(
        pr.body
            .contains("**Evidence** (red on the base commit → green after the steps)"),
        "{}",
        pr.body
    );
    assert!(
        pr.body.contains("| AC-01 | covered | "),
        "the criterion turned green: {}",
        pr.body
    );
    assert!(
        pr.body.contains("grep -q hello src/greet.txt"),
        "{}",
        pr.body
    );
    assert!(
        pr.body.contains("To reproduce: on `main` (red)"),
        "{}",
        pr.body
    );
    let green = remote_head(&f, "dandori-pr/github-octo-app-7");

    // 3. A later attempt that fails: the green branch and its pull request stay
    // as they are; the attempt goes to a branch of its own, as a draft.
    fail_readme(&f, true);
    let o = replan_and_run(&f, &gate);
    assert!(
        text(&o).contains("is the last run that achieved the goal: left as it is"),
        "{}",
        text(&o)
    );
    assert_eq!(remote_head(&f, "dandori-pr/github-octo-app-7"), green);
    let prs = pulls(&f);
    assert_eq!(prs.len(), 2, "{}", text(&o));
    let kept = prs.iter().find(|(n, _)| *n == number).unwrap();
    assert!(!kept.1.pr.as_ref().unwrap().draft);
    assert_eq!(kept.1.pr.as_ref().unwrap().head_sha, green);
    let attempt = prs.iter().find(|(n, _)| *n != number).unwrap();
    let head = attempt.1.pr.as_ref().unwrap();
    assert!(head.draft);
    assert!(
        head.head.starts_with("dandori-pr/github-octo-app-7-"),
        "{}",
        head.head
    );
    assert!(
        attempt
            .1
            .body
            .contains("stays as the last run that achieved the goal"),
        "{}",
        attempt.1.body
    );
    let errs = dandori_test_support::openapi::check_all(&f.forge.exchanges()).unwrap();
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn gitlab_draft_merge_request_until_the_criteria_are_covered_then_ready() {
    let f = gitlab_fixture();
    let o = ci_gitlab(&f, &label_hook());
    assert!(o.status.success(), "{}", text(&o));
    // A stranger's note: refused before any step.
    let o = ci_gitlab(&f, &note(&f, "mallory", "/dandori approve"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A bare `/approve`: a reply note.
    let o = ci_gitlab(&f, &note(&f, "alice", "/approve"));
    assert!(o.status.success(), "{}", text(&o));
    let item = f.forge.item(Api::GitLab, "grp/app", 3);
    let reply = item.comments.last().unwrap();
    assert_eq!(reply.author, GL_BOT);
    assert!(reply.body.contains("`/dandori approve`"), "{}", reply.body);

    // Approved, the README step failing: a draft (GitLab's `Draft: ` title).
    fail_readme(&f, true);
    let o = ci_gitlab(&f, &note(&f, "alice", "/dandori approve"));
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let mrs = f.forge.change_requests(Api::GitLab, "grp/app");
    assert_eq!(mrs.len(), 1, "{}", text(&o));
    let iid = mrs[0].0;
    assert!(mrs[0].1.title.starts_with("Draft: "), "{}", mrs[0].1.title);
    assert!(mrs[0].1.pr.as_ref().unwrap().draft);

    // Fixed: the same merge request, ready, with the evidence.
    fail_readme(&f, false);
    let o = gitlab_replan_and_run(&f);
    assert!(o.status.success(), "{}", text(&o));
    let mrs = f.forge.change_requests(Api::GitLab, "grp/app");
    assert_eq!(mrs.len(), 1);
    let mr = &mrs[0].1;
    assert!(!mr.title.starts_with("Draft:"), "{}", mr.title);
    assert!(!mr.pr.as_ref().unwrap().draft);
    assert!(mr.body.contains("| AC-01 | covered | "), "{}", mr.body);
    let green = git(&f.remote, &["rev-parse", &mr.pr.as_ref().unwrap().head])
        .trim()
        .to_string();

    // A failing attempt: the green merge request untouched, a new draft one.
    fail_readme(&f, true);
    let o = gitlab_replan_and_run(&f);
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    let mrs = f.forge.change_requests(Api::GitLab, "grp/app");
    assert_eq!(mrs.len(), 2, "{}", text(&o));
    let kept = mrs.iter().find(|(n, _)| *n == iid).unwrap();
    assert_eq!(kept.1.pr.as_ref().unwrap().head_sha, green);
    assert!(!kept.1.title.starts_with("Draft:"));
    let attempt = mrs.iter().find(|(n, _)| *n != iid).unwrap();
    assert!(
        attempt.1.title.starts_with("Draft: "),
        "{}",
        attempt.1.title
    );
    assert_eq!(
        git(&f.remote, &["rev-parse", &kept.1.pr.as_ref().unwrap().head]).trim(),
        green
    );
}
