//! dandori as a CI bot, end to end: GitHub Actions emulated (`GITHUB_ACTIONS`,
//! an event payload file, `GITHUB_TOKEN` an installation token whose `GET
//! /user` is refused, as on GitHub) against the fake forge and a bare git
//! remote. label → plan comment → `/dandori approve` → run with a scripted
//! agent → branch pushed → one pull request (ACs with evidence, `Closes #7`)
//! → a second run updates it. The token is nowhere on disk.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dandori_test_support::fake_forge::{Api, FakeForge, ItemKind};
use dandori_test_support::git::git;
use serde_json::{Value, json};

use super::run_files::all_text;
pub(super) use super::run_files::text;

pub(super) const BIN: &str = env!("CARGO_BIN_EXE_dandori");
/// An installation token, as GitHub Actions' `GITHUB_TOKEN` is.
pub(super) const TOKEN: &str = "ghs_ciInstallationToken0123456789";
pub(super) const BOT: &str = "github-actions[bot]";

pub(super) const ISSUE_BODY: &str = "Add a greeting module.\n\n\
## Requirements\n\n- Add `src/greet.txt` with a greeting\n- Describe `src/greet.txt` in `README.md`\n\n\
## Acceptance criteria\n\n- Given the repository, when src/greet.txt is read, then it greets (check: `grep -q hello src/greet.txt`)\n\
- Given the README, when it is read, then it mentions the greeting (check: `grep -q greet README.md`)\n\
- Given the repository, when it is checked out, then nothing else changed\n";

pub(super) struct Fx {
    _dir: tempfile::TempDir,
    pub(super) root: PathBuf,
    pub(super) repo: PathBuf,
    pub(super) remote: PathBuf,
    pub(super) home: PathBuf,
    pub(super) forge: FakeForge,
}

pub(super) fn fixture() -> Fx {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let remote = root.join("remote.git");
    let home = root.join("home");
    std::fs::create_dir_all(repo.join("src")).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    git(&root, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "CI"]);
    git(&repo, &["config", "user.email", "ci@example.invalid"]);
    std::fs::write(repo.join("README.md"), "# demo\n").unwrap();
    std::fs::write(repo.join("src/hello.txt"), "hello\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    git(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    git(&repo, &["push", "-q", "origin", "main"]);
    let forge = FakeForge::start();
    forge.add_installation_token(TOKEN, "github-actions");
    forge.add_project(Api::GitHub, "octo/app", true, &[BOT]);
    forge.set_remote(Api::GitHub, "octo/app", &remote);
    forge.add_item(
        Api::GitHub,
        "octo/app",
        7,
        ItemKind::Issue,
        "Add a greeting",
        ISSUE_BODY,
        &["dandori"],
        "alice",
    );
    Fx {
        _dir: dir,
        root,
        repo,
        remote,
        home,
        forge,
    }
}

/// `dandori ci` as a GitHub Actions job would run it, for one event.
pub(super) fn ci(f: &Fx, event_name: &str, payload: &Value, extra: &[&str]) -> Output {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = f.root.join(format!("event-{n}.json"));
    std::fs::write(&path, payload.to_string()).unwrap();
    let agent = agent(f);
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    Command::new(BIN)
        .args(["--sandbox", "off", "ci", "--agent-cmd", &agent_cmd])
        .args(extra)
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", event_name)
        .env("GITHUB_EVENT_PATH", &path)
        .env("GITHUB_REPOSITORY", "octo/app")
        .env("GITHUB_API_URL", f.forge.github_api_url())
        .env("GITHUB_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// The scripted agent: each step writes its own target.
pub(super) fn agent(f: &Fx) -> PathBuf {
    let agent = f.home.join("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nset -e\ncase \"$1\" in\n\
         S01) mkdir -p src; echo 'hello, friend' > src/greet.txt ;;\n\
         S03) mkdir -p docs; echo 'greeting' > docs/greeting.md ;;\n\
         *) if [ -e {fail} ]; then echo 'the README step fails' >&2; exit 1; fi\n\
            echo \"see src/greet.txt ($1)\" >> README.md ;;\nesac\n",
            fail = f.root.join("fail-readme").display()
        ),
    )
    .unwrap();
    agent
}

pub(super) fn labeled() -> Value {
    json!({"action": "labeled", "label": {"name": "dandori"},
        "issue": {"number": 7, "title": "Add a greeting", "user": {"login": "alice", "type": "User"}},
        "repository": {"full_name": "octo/app"}, "sender": {"login": "alice", "type": "User"}})
}

pub(super) fn comment(f: &Fx, who: &str, association: &str, body: &str) -> Value {
    let id = f.forge.add_comment(Api::GitHub, "octo/app", 7, who, body);
    json!({"action": "created",
        "issue": {"number": 7, "title": "Add a greeting", "user": {"login": "alice", "type": "User"}},
        "comment": {"id": id, "body": body, "author_association": association,
                    "user": {"login": who, "type": "User"}},
        "repository": {"full_name": "octo/app"}, "sender": {"login": who, "type": "User"}})
}

pub(super) fn pulls(f: &Fx) -> Vec<(u64, dandori_test_support::fake_forge::FakeItem)> {
    f.forge.change_requests(Api::GitHub, "octo/app")
}

#[test]
fn github_actions_label_plan_approve_run_pull_request_and_update() {
    let f = fixture();
    // `origin` over HTTP, as in a CI checkout: the push must carry the token.
    let url = f.forge.git_url(Api::GitHub, "octo/app");
    git(&f.repo, &["remote", "set-url", "origin", &url]);

    // 1. The label: a plan comment, written with the installation token.
    let o = ci(&f, "issues", &labeled(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let ex = f.forge.exchanges();
    let user = ex
        .iter()
        .find(|e| e.path == "/user")
        .unwrap_or_else(|| panic!("GET /user never asked: {}", text(&o)));
    assert_eq!(user.status, 403, "an installation token's GET /user");
    assert_eq!(
        user.response["message"],
        "Resource not accessible by integration"
    );
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let ours: Vec<_> = item.comments.iter().filter(|c| c.author == BOT).collect();
    assert_eq!(ours.len(), 2, "plan + status: {:#?}", item.comments);
    let plan = ours
        .iter()
        .find(|c| c.body.contains("<!-- dandori:plan github-octo-app-7 -->"))
        .unwrap();
    assert!(
        plan.body.contains("**Acceptance criteria**"),
        "{}",
        plan.body
    );
    assert!(!plan.body.contains("Labels:"), "{}", plan.body);

    // The labeller's label, again: the comments are edited, not duplicated
    // (dandori knows its comments by marker and bot author, without GET /user).
    let o = ci(&f, "issues", &labeled(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    assert_eq!(item.comments.iter().filter(|c| c.author == BOT).count(), 2);

    // 2. A stranger cannot start the run.
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "mallory", "NONE", "/dandori run"),
        &[],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("FORGE_PERMISSION_DENIED"), "{}", text(&o));
    assert!(pulls(&f).is_empty());

    // 3. The owner approves: the run, the push, the pull request.
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori approve"),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let prs = pulls(&f);
    assert_eq!(prs.len(), 1, "{}", text(&o));
    let (number, pr) = &prs[0];
    let head = pr.pr.as_ref().unwrap();
    assert_eq!(head.head, "dandori-pr/github-octo-app-7");
    assert_eq!(head.base, "main");
    assert_eq!(pr.author, BOT);
    assert!(pr.body.contains("Closes #7"), "{}", pr.body);
    assert!(pr.body.contains("| AC-01 |"), "{}", pr.body);
    assert!(pr.body.contains("**Commits**"), "{}", pr.body);
    assert!(!head.draft, "the goal is achieved: {}", pr.body);
    let pushed = git(&f.remote, &["rev-parse", "dandori-pr/github-octo-app-7"]);
    assert_eq!(pushed.trim(), head.head_sha);
    // Pushed over HTTP with the installation token as the basic-auth password.
    let pushes: Vec<_> = f
        .forge
        .git_requests()
        .into_iter()
        .filter(|r| r.service == "git-receive-pack")
        .collect();
    assert_eq!(pushes.len(), 1, "{pushes:#?}");
    assert_eq!(pushes[0].user.as_deref(), Some(BOT));
    // Without dandori's per-command header the remote refuses: nothing stored.
    let out = Command::new("git")
        .args(["push", "--dry-run", "origin", "main:refs/heads/probe"])
        .current_dir(&f.repo)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        !out.status.success(),
        "a push without the token went through"
    );
    let files = git(
        &f.remote,
        &["show", "dandori-pr/github-octo-app-7:src/greet.txt"],
    );
    assert_eq!(files, "hello, friend\n");
    // The completion comment links the pull request.
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let done = item
        .comments
        .iter()
        .find(|c| c.body.contains("<!-- dandori:completion"))
        .unwrap();
    assert!(
        done.body.contains(&format!(
            "Pull request: http://{}/octo/app/pull/{number}",
            f.forge.addr()
        )),
        "{}",
        done.body
    );
    // The user's checkout never moved.
    assert_eq!(git(&f.repo, &["branch", "--show-current"]).trim(), "main");
    assert_eq!(
        git(
            &f.repo,
            &["status", "--porcelain", "--", ".", ":(exclude).dandori"]
        ),
        ""
    );

    // 4. `/dandori run` again: the same pull request, updated.
    f.forge.clear_exchanges();
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori run"),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(pulls(&f).len(), 1, "still one pull request");
    let ex = f.forge.exchanges();
    assert!(
        ex.iter()
            .any(|e| e.method == "PATCH" && e.path == format!("/repos/octo/app/pulls/{number}")),
        "{ex:#?}"
    );
    assert!(
        !ex.iter()
            .any(|e| e.method == "POST" && e.path.ends_with("/pulls") && e.status == 201)
    );

    // The token is nowhere: not in the run directories, the remote, the
    // repository's config (as a value or as the basic-auth header).
    let header = base64_of(&format!("x-access-token:{TOKEN}"));
    for (what, text) in [
        ("run directories", all_text(&f.repo.join(".dandori"))),
        ("remote", all_text(&f.remote)),
        ("git dir", all_text(&f.repo.join(".git"))),
    ] {
        assert!(!text.contains(TOKEN), "the token is in the {what}");
        assert!(!text.contains(&header), "the auth header is in the {what}");
    }
    let errs = dandori_test_support::openapi::check_all(&f.forge.exchanges()).unwrap();
    assert!(errs.is_empty(), "{errs:#?}");
}

#[test]
fn open_pr_failures_are_reason_coded_and_the_branch_stays_local() {
    let f = fixture();
    let o = ci(&f, "issues", &labeled(), &[]);
    assert!(o.status.success(), "{}", text(&o));
    // No origin: refused before the run starts.
    git(&f.repo, &["remote", "remove", "origin"]);
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori run"),
        &[],
    );
    assert_ne!(o.status.code(), Some(0), "{}", text(&o));
    assert!(text(&o).contains("PREFLIGHT_FAILED"), "{}", text(&o));
    // A remote whose branch moved under the pull request: rejected, nothing lost.
    git(
        &f.repo,
        &["remote", "add", "origin", f.remote.to_str().unwrap()],
    );
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori run"),
        &[],
    );
    assert!(o.status.success(), "{}", text(&o));
    let other = f.root.join("other");
    git(
        &f.root,
        &["clone", "-q", f.remote.to_str().unwrap(), "other"],
    );
    git(&other, &["checkout", "-q", "dandori-pr/github-octo-app-7"]);
    std::fs::write(other.join("x.txt"), "someone else\n").unwrap();
    git(&other, &["add", "-A"]);
    git(
        &other,
        &[
            "-c",
            "user.name=o",
            "-c",
            "user.email=o@x",
            "commit",
            "-q",
            "-m",
            "theirs",
        ],
    );
    git(
        &other,
        &["push", "-q", "origin", "HEAD:dandori-pr/github-octo-app-7"],
    );
    let theirs = git(&other, &["rev-parse", "HEAD"]);
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori run"),
        &[],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FORGE_PUSH_REJECTED"), "{}", text(&o));
    assert_eq!(
        git(&f.remote, &["rev-parse", "dandori-pr/github-octo-app-7"]),
        theirs,
        "their commit is kept"
    );
    assert!(
        git(
            &f.repo,
            &["branch", "--list", "dandori/github-octo-app-7/*"]
        )
        .contains("dandori/"),
        "the work branch stays local"
    );
}

#[test]
fn plan_json_failure_prints_json_and_init_writes_a_least_privilege_workflow() {
    let f = fixture();
    let o = Command::new(BIN)
        .args(["plan", "--issue", "github:octo/app#99", "--json"])
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("GITHUB_API_URL", f.forge.github_api_url())
        .env("GITHUB_TOKEN", TOKEN)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let v: Value =
        serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", text(&o)));
    assert_eq!(v["status"], "error");
    assert_eq!(v["reason_code"], "FORGE_NOT_FOUND");

    let o = Command::new(BIN)
        .args(["init", "github-action", "--repo"])
        .arg(&f.repo)
        .args(["--agent-cmd", "claude -p {prompt}"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let wf = std::fs::read_to_string(f.repo.join(".github/workflows/dandori.yml")).unwrap();
    assert!(wf.contains("permissions: {}\n"), "{wf}");
    assert!(
        wf.contains("    permissions:\n      contents: write # push the dandori-pr/* branch\n"),
        "{wf}"
    );
    assert!(wf.contains("persist-credentials: false"), "{wf}");
    assert!(
        wf.contains("dandori ci --label 'dandori' --agent-cmd 'claude -p {prompt}'"),
        "{wf}"
    );
    // Again without --force: refused.
    let o = Command::new(BIN)
        .args(["init", "github-action", "--repo"])
        .arg(&f.repo)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = Command::new(BIN)
        .args(["init", "gitlab-ci", "--repo"])
        .arg(&f.repo)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let gl = std::fs::read_to_string(f.repo.join(".gitlab/dandori.gitlab-ci.yml")).unwrap();
    assert!(
        gl.contains("$CI_PIPELINE_SOURCE == \"trigger\" && $TRIGGER_PAYLOAD"),
        "{gl}"
    );
    assert!(gl.contains("GITLAB_TOKEN: $DANDORI_GITLAB_TOKEN"), "{gl}");
    assert!(gl.contains("dandori ci --label 'dandori'"), "{gl}");
}

fn base64_of(s: &str) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let b = s.as_bytes();
    let mut out = String::new();
    for c in b.chunks(3) {
        let n = (u32::from(c[0]) << 16)
            | (u32::from(*c.get(1).unwrap_or(&0)) << 8)
            | u32::from(*c.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= c.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

pub(super) const GL_TOKEN: &str = "glpat-projectBotToken0123456789";
pub(super) const GL_BOT: &str = "project_7_bot_1a2b3c";

/// `dandori ci` as a GitLab CI job triggered by a project webhook would run it.
pub(super) fn ci_gitlab(f: &Fx, payload: &Value) -> Output {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let path = f.root.join(format!("hook-{n}.json"));
    std::fs::write(&path, payload.to_string()).unwrap();
    let agent = agent(f);
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    Command::new(BIN)
        .args(["--sandbox", "off", "ci", "--agent-cmd", &agent_cmd])
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .env("GITLAB_CI", "true")
        .env("CI_PIPELINE_SOURCE", "trigger")
        .env("CI_PROJECT_PATH", "grp/app")
        .env("CI_API_V4_URL", f.forge.gitlab_api_url())
        .env("GITLAB_TOKEN", GL_TOKEN)
        .env("TRIGGER_PAYLOAD", &path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

/// [`fixture`] with the GitLab side: the project `grp/app` (its remote the
/// bare repository, the clone's origin the forge), issue #3, and the project
/// access token's bot.
pub(super) fn gitlab_fixture() -> Fx {
    let f = fixture();
    let url = f.forge.git_url(Api::GitLab, "grp/app");
    git(&f.repo, &["remote", "set-url", "origin", &url]);
    f.forge.add_token(GL_TOKEN, GL_BOT);
    f.forge.add_project(Api::GitLab, "grp/app", true, &[GL_BOT]);
    f.forge.set_remote(Api::GitLab, "grp/app", &f.remote);
    f.forge.add_item(
        Api::GitLab,
        "grp/app",
        3,
        ItemKind::Issue,
        "Add a greeting",
        ISSUE_BODY,
        &["dandori"],
        "alice",
    );
    f
}

/// The issue hook of the trigger label added to `grp/app#3`.
pub(super) fn label_hook() -> Value {
    json!({"object_kind": "issue", "user": {"username": "alice"},
        "project": {"path_with_namespace": "grp/app"},
        "object_attributes": {"iid": 3},
        "changes": {"labels": {"previous": [], "current": [{"title": "dandori"}]}}})
}

pub(super) fn note(f: &Fx, who: &str, body: &str) -> Value {
    f.forge.add_comment(Api::GitLab, "grp/app", 3, who, body);
    json!({"object_kind": "note", "user": {"username": who},
        "project": {"path_with_namespace": "grp/app"},
        "object_attributes": {"note": body, "noteable_type": "Issue"},
        "issue": {"iid": 3}})
}

#[test]
fn gitlab_ci_label_plan_approve_run_merge_request_and_update() {
    let f = gitlab_fixture();
    // The label added (an issue hook): the plan notes, by the project token's bot.
    let o = ci_gitlab(&f, &label_hook());
    assert!(o.status.success(), "{}", text(&o));
    let item = f.forge.item(Api::GitLab, "grp/app", 3);
    assert_eq!(
        item.comments.iter().filter(|c| c.author == GL_BOT).count(),
        2,
        "{:#?}",
        item.comments
    );
    // Someone else's note cannot start the run (the issue's author may).
    let o = ci_gitlab(&f, &note(&f, "mallory", "/dandori run"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("FORGE_PERMISSION_DENIED"), "{}", text(&o));
    // `/dandori approve`: the run, the push, the merge request.
    let o = ci_gitlab(&f, &note(&f, "alice", "/dandori approve"));
    assert!(o.status.success(), "{}", text(&o));
    let mrs = f.forge.change_requests(Api::GitLab, "grp/app");
    assert_eq!(mrs.len(), 1, "{}", text(&o));
    let (iid, mr) = &mrs[0];
    let head = mr.pr.as_ref().unwrap();
    assert!(head.head.starts_with("dandori-pr/gitlab-"), "{}", head.head);
    assert_eq!(mr.author, GL_BOT);
    assert!(mr.body.contains("Closes #3"), "{}", mr.body);
    assert!(mr.body.contains("| AC-01 |"), "{}", mr.body);
    assert!(
        !head.draft && !mr.title.starts_with("Draft:"),
        "{}",
        mr.title
    );
    assert_eq!(
        git(&f.remote, &["rev-parse", &head.head]).trim(),
        head.head_sha
    );
    assert!(
        f.forge
            .git_requests()
            .iter()
            .any(|r| r.service == "git-receive-pack" && r.user.as_deref() == Some(GL_BOT)),
        "{:#?}",
        f.forge.git_requests()
    );
    // `/dandori run` again: the same merge request, edited.
    f.forge.clear_exchanges();
    let o = ci_gitlab(&f, &note(&f, "alice", "/dandori run"));
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(f.forge.change_requests(Api::GitLab, "grp/app").len(), 1);
    let ex = f.forge.exchanges();
    assert!(
        ex.iter()
            .any(|e| e.method == "PUT"
                && e.path == format!("/projects/grp%2Fapp/merge_requests/{iid}")),
        "{ex:#?}"
    );
    for (what, text) in [
        ("run directories", all_text(&f.repo.join(".dandori"))),
        ("remote", all_text(&f.remote)),
        ("git dir", all_text(&f.repo.join(".git"))),
    ] {
        assert!(!text.contains(GL_TOKEN), "the token is in the {what}");
    }
    let errs = dandori_test_support::openapi::check_all(&f.forge.exchanges()).unwrap();
    assert!(errs.is_empty(), "{errs:#?}");
}

/// `dandori` with a user's token (not CI), for the intake-bug checks.
fn dandori_user(f: &Fx, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(&f.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .env("GITHUB_API_URL", f.forge.github_api_url())
        .env("GITHUB_TOKEN", "ghp_userToken0123")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap()
}

fn edit_plan(run_dir: &Path, f: impl FnOnce(&mut Value)) {
    let path = run_dir.join("planning.json");
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(&path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn a_paused_run_is_paused_and_an_environment_failure_is_reported_on_the_issue() {
    let f = fixture();
    f.forge.add_token("ghp_userToken0123", "dandori-bot");
    f.forge
        .add_project(Api::GitHub, "octo/app", true, &[BOT, "dandori-bot"]);
    let plan = |f: &Fx| -> PathBuf {
        let o = dandori_user(
            f,
            &[
                "plan",
                "--issue",
                "github:octo/app#7",
                "--comment",
                "--json",
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        PathBuf::from(v["run_dir"].as_str().unwrap())
    };
    let agent = agent(&f);
    let agent_cmd = format!("sh {} {{step_id}}", agent.display());
    // A step budget below the plan's steps: the run pauses (exit 5).
    let run_dir = plan(&f);
    edit_plan(&run_dir, |v| {
        v["limits"]["max_steps_per_run"] = json!(1);
    });
    let rd = run_dir.to_str().unwrap();
    let o = dandori_user(
        &f,
        &[
            "--sandbox",
            "off",
            "run",
            rd,
            "--agent-cmd",
            &agent_cmd,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(5), "{}", text(&o));
    let o = dandori_user(&f, &["status", rd, "--json"]);
    let status: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(status["status"], "paused", "{status:#}");
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let comment = item
        .comments
        .iter()
        .find(|c| c.body.contains("<!-- dandori:status"))
        .unwrap();
    assert!(
        comment.body.contains("### dandori status: paused"),
        "{}",
        comment.body
    );

    // An environment that cannot be set up: the run stops, and says so on the issue.
    let run_dir = plan(&f);
    edit_plan(&run_dir, |v| {
        v["selected_environment"] = json!({
            "name": "python", "reason": "test", "detected_files": [],
            "setup_commands": ["ls missing-dir-xyz"], "verification_commands": [],
            "expected_results": {}, "root": ".", "package_manager": "pip"});
    });
    let rd = run_dir.to_str().unwrap();
    let o = dandori_user(
        &f,
        &[
            "--sandbox",
            "off",
            "run",
            rd,
            "--agent-cmd",
            &agent_cmd,
            "--json",
        ],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o));
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let done = item
        .comments
        .iter()
        .find(|c| c.body.contains("<!-- dandori:completion"))
        .unwrap_or_else(|| panic!("no completion comment: {}", text(&o)));
    assert!(
        done.body.contains("### dandori completion: failed"),
        "{}",
        done.body
    );
    assert!(done.body.contains("ENVIRONMENT_FAILED"), "{}", done.body);
}

#[test]
fn a_revision_waits_for_slash_approve_then_runs() {
    let f = fixture();
    // The approval must come after the revision, by the clock dandori records.
    f.forge.use_real_time();
    let approval = ["-c", "planning.revision.require_human_approval=true"];
    let o = ci(&f, "issues", &labeled(), &approval);
    assert!(o.status.success(), "{}", text(&o));
    f.forge.add_comment(
        Api::GitHub,
        "octo/app",
        7,
        "alice",
        "add step: Write `docs/greeting.md`",
    );
    // `/dandori revise`: the revision waits for approval (exit 3).
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori revise"),
        &approval,
    );
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    let item = f.forge.item(Api::GitHub, "octo/app", 7);
    let revision = item
        .comments
        .iter()
        .find(|c| c.body.contains("<!-- dandori:revision"))
        .unwrap_or_else(|| panic!("no revision comment: {}", text(&o)));
    assert!(
        revision.body.contains("waits for approval"),
        "{}",
        revision.body
    );
    // `/dandori approve`: the revision applied, then the run and the pull request.
    let o = ci(
        &f,
        "issue_comment",
        &comment(&f, "alice", "OWNER", "/dandori approve"),
        &approval,
    );
    assert!(o.status.success(), "{}", text(&o));
    let prs = pulls(&f);
    assert_eq!(prs.len(), 1, "{}", text(&o));
    let body = &prs[0].1.body;
    assert!(body.contains("S03"), "the approved revision ran: {body}");
    let files = git(
        &f.remote,
        &["show", "dandori-pr/github-octo-app-7:docs/greeting.md"],
    );
    assert_eq!(files, "greeting\n");
}
