//! Installation tokens (GitHub Actions' `GITHUB_TOKEN`, a GitHub App's), app
//! JWTs, and the pull / merge requests `--open-pr` opens, against the fake
//! forge, every exchange checked against the official descriptions.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use dandori_config::ForgesConfig;
use dandori_forge::change_request::ChangeRequestText;
use dandori_forge::record::ForgeRecord;
use dandori_forge::{ForgeClient, ForgeRef, ForgeSettings, Identity, report};
use dandori_test_support::fake_forge::{Api, FakeForge, ItemKind};
use dandori_test_support::git::git;
use dandori_test_support::openapi::{check_exchanges, github_descriptions, gitlab_subset};

/// The client of `reference` on the fake forge, authenticating with `token`
/// (both forges' URL and token variables set, as in CI).
pub fn client_with(f: &FakeForge, reference: &str, token: &str) -> (ForgeRef, ForgeClient) {
    let r = ForgeRef::parse(reference).unwrap();
    let env = BTreeMap::from([
        ("GITHUB_API_URL".to_string(), f.github_api_url()),
        ("GITLAB_API_URL".to_string(), f.gitlab_api_url()),
        ("GITHUB_TOKEN".to_string(), token.to_string()),
        ("GITLAB_TOKEN".to_string(), token.to_string()),
    ]);
    let s = ForgeSettings::resolve(&r, &ForgesConfig::default(), &env).unwrap();
    (r, ForgeClient::new(s).unwrap())
}

fn record(r: &ForgeRef) -> ForgeRecord {
    ForgeRecord {
        reference: r.clone(),
        source: r.to_string(),
        web_url: String::new(),
        title: "t".into(),
        issue_author: "alice".into(),
        labels: Vec::new(),
        task_type: r.task_type().into(),
        comment: true,
        comments: Default::default(),
        consumed: Default::default(),
        help_label: false,
        pull_request: None,
    }
}

/// A bare remote with `main` and a `feature` branch one commit ahead.
pub fn remote(dir: &Path) -> std::path::PathBuf {
    let work = dir.join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(dir, &["init", "-q", "--bare", "-b", "main", "remote.git"]);
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), "a\n").unwrap();
    git(&work, &["add", "-A"]);
    git(
        &work,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@x",
            "commit",
            "-q",
            "-m",
            "a",
        ],
    );
    git(&work, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(work.join("b.txt"), "b\n").unwrap();
    git(&work, &["add", "-A"]);
    git(
        &work,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@x",
            "commit",
            "-q",
            "-m",
            "b",
        ],
    );
    let bare = dir.join("remote.git");
    git(
        &work,
        &["push", "-q", bare.to_str().unwrap(), "main", "feature"],
    );
    bare
}

#[test]
fn installation_tokens_are_bots_without_get_user() {
    let f = FakeForge::start();
    f.add_installation_token("ghs_install", "github-actions");
    f.add_app_jwt("eyJ.app.jwt", "dandori-app");
    f.add_project(
        Api::GitHub,
        "octo/app",
        true,
        &["github-actions[bot]", "dandori-app[bot]"],
    );
    f.add_item(
        Api::GitHub,
        "octo/app",
        1,
        ItemKind::Issue,
        "T",
        "B",
        &[],
        "alice",
    );
    // A person's comment carrying a marker is not dandori's.
    f.add_comment(
        Api::GitHub,
        "octo/app",
        1,
        "mallory",
        "<!-- dandori:status github-octo-app-1 -->\nfake",
    );

    let (r, c) = client_with(&f, "github:octo/app#1", "ghs_install");
    assert_eq!(c.identity().unwrap(), Identity::Bot(None));
    let mut rec = record(&r);
    let cfg = ForgesConfig::default();
    let first = report::upsert(
        &c,
        &cfg,
        &mut rec,
        "status",
        "<!-- dandori:status github-octo-app-1 -->\none",
    )
    .unwrap();
    // Forgotten comment ids: found again by marker and bot author, edited.
    rec.comments.clear();
    let again = report::upsert(
        &c,
        &cfg,
        &mut rec,
        "status",
        "<!-- dandori:status github-octo-app-1 -->\ntwo",
    )
    .unwrap();
    assert_eq!(first, again);
    let item = f.item(Api::GitHub, "octo/app", 1);
    let ours: Vec<_> = item
        .comments
        .iter()
        .filter(|c| c.author == "github-actions[bot]")
        .collect();
    assert_eq!(ours.len(), 1);
    assert!(ours[0].body.ends_with("two"));
    // GET /user once (403), GET /app once (401: not a JWT); never again.
    let ex = f.exchanges();
    let asked = |p: &str| {
        ex.iter()
            .filter(|e| e.path == p)
            .map(|e| e.status)
            .collect::<Vec<_>>()
    };
    assert_eq!(asked("/user"), vec![403]);
    assert_eq!(asked("/app"), vec![401]);
    // The comments name their app.
    // (the listing after the first comment)
    let listed = ex
        .iter()
        .rev()
        .find(|e| e.method == "GET" && e.path.ends_with("/comments"))
        .unwrap();
    let bot = listed
        .response
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["user"]["login"] == "github-actions[bot]")
        .unwrap();
    assert_eq!(bot["user"]["type"], "Bot");
    assert_eq!(bot["performed_via_github_app"]["slug"], "github-actions");

    // An app's JWT: GET /app names it.
    let (_, jwt) = client_with(&f, "github:octo/app#1", "eyJ.app.jwt");
    assert_eq!(
        jwt.identity().unwrap(),
        Identity::Bot(Some("dandori-app[bot]".into()))
    );

    for (name, doc) in github_descriptions().unwrap() {
        let (ops, errs) = check_exchanges(&doc, &f.exchanges());
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        assert!(
            ops.contains("users/get-authenticated") && ops.contains("apps/get-authenticated"),
            "{name}: {ops:?}"
        );
    }
}

#[test]
fn pull_and_merge_requests_are_found_opened_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    let bare = remote(dir.path());
    let f = FakeForge::start();
    f.add_installation_token("ghs_install", "github-actions");
    f.add_token("glpat-bot", "project_7_bot_abc");
    f.add_project(Api::GitHub, "octo/app", false, &[]);
    f.add_project(Api::GitLab, "grp/app", false, &[]);
    f.set_remote(Api::GitHub, "octo/app", &bare);
    f.set_remote(Api::GitLab, "grp/app", &bare);
    f.add_item(
        Api::GitHub,
        "octo/app",
        1,
        ItemKind::Issue,
        "T",
        "B",
        &[],
        "alice",
    );
    f.add_item(
        Api::GitLab,
        "grp/app",
        1,
        ItemKind::Issue,
        "T",
        "B",
        &[],
        "alice",
    );
    for (reference, token, project) in [
        ("github:octo/app#1", "ghs_install", "octo/app"),
        ("gitlab:grp/app#1", "glpat-bot", "grp/app"),
    ] {
        let (_, c) = client_with(&f, reference, token);
        assert_eq!(c.find_change_request(project, "feature").unwrap(), None);
        // A head that was never pushed is refused, as by the forges.
        let draft = ChangeRequestText {
            title: "dandori: T",
            body: "Closes #1",
            draft: true,
        };
        assert!(
            c.create_change_request(project, "nope", "main", &draft)
                .is_err()
        );
        let opened = c
            .create_change_request(project, "feature", "main", &draft)
            .unwrap();
        assert!(opened.draft, "{reference}");
        assert_eq!(opened.number, 2);
        assert_eq!(
            opened.head_sha,
            git(&bare, &["rev-parse", "feature"]).trim()
        );
        let found = c.find_change_request(project, "feature").unwrap().unwrap();
        assert_eq!(found.number, opened.number);
        let ready = ChangeRequestText {
            title: "dandori: T",
            body: "Closes #1\n\nmore",
            draft: false,
        };
        let updated = c
            .update_change_request(project, found.number, &ready)
            .unwrap();
        assert_eq!(updated.number, opened.number);
    }
    let gh = f.item(Api::GitHub, "octo/app", 2);
    assert_eq!(gh.body, "Closes #1\n\nmore");
    assert!(
        gh.pr.unwrap().draft,
        "GitHub's REST API keeps a draft a draft"
    );
    let gl = f.item(Api::GitLab, "grp/app", 2);
    assert_eq!(gl.title, "dandori: T", "GitLab: the Draft: prefix removed");
    assert!(!gl.pr.unwrap().draft);

    let (gh_ex, gl_ex): (Vec<_>, Vec<_>) = f
        .exchanges()
        .into_iter()
        .partition(|e| e.api == Api::GitHub);
    for (name, doc) in github_descriptions().unwrap() {
        let (ops, errs) = check_exchanges(&doc, &gh_ex);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        let want: BTreeSet<String> = ["pulls/list", "pulls/create", "pulls/update"]
            .into_iter()
            .map(String::from)
            .collect();
        assert!(want.is_subset(&ops), "{name}: {ops:?}");
    }
    let (ops, errs) = check_exchanges(&gitlab_subset().unwrap(), &gl_ex);
    assert!(errs.is_empty(), "{errs:#?}");
    for op in [
        "getApiV4ProjectsIdMergeRequests",
        "postApiV4ProjectsIdMergeRequests",
        "putApiV4ProjectsIdMergeRequestsMergeRequestIid",
    ] {
        assert!(ops.contains(op), "{op}: {ops:?}");
    }
}

#[test]
fn a_huge_plan_makes_a_capped_plan_comment() {
    let (_t, dir) = super::revise::run_dir();
    let mut p = super::revise::planning(&dir);
    let huge = "word ".repeat(1_000_000);
    p.context.summary = huge.clone();
    for s in &mut p.steps {
        s.title = huge.clone();
    }
    for ac in &mut p.context.acceptance_criteria {
        ac.then = huge.clone();
    }
    let body = report::plan_comment(&p, 0);
    assert!(
        body.chars().count() <= report::MAX_COMMENT_CHARS,
        "{}",
        body.chars().count()
    );
    assert!(body.starts_with("<!-- dandori:plan "), "the marker stays");
    assert!(
        body.contains("dandori revise RUN_DIR --from-issue"),
        "the reply hint stays"
    );
}
