use std::collections::BTreeMap;
use std::time::Instant;

use dandori_config::ForgesConfig;
use dandori_forge::{CommentSource, ForgeClient, ForgeRef, ForgeSettings};
use dandori_test_support::fake_forge::{Api, FakeForge, ItemKind, RateLimit};

pub fn env_for(forge: &FakeForge) -> BTreeMap<String, String> {
    BTreeMap::from([
        ("GITHUB_API_URL".to_string(), forge.github_api_url()),
        ("GITLAB_API_URL".to_string(), forge.gitlab_api_url()),
        (
            "GITHUB_TOKEN".to_string(),
            "ghp_secret_bot_token".to_string(),
        ),
        (
            "GITLAB_TOKEN".to_string(),
            "glpat-secret-bot-token".to_string(),
        ),
    ])
}

pub fn client(forge: &FakeForge, r: &ForgeRef, config: &ForgesConfig) -> ForgeClient {
    let s = ForgeSettings::resolve(r, config, &env_for(forge)).unwrap();
    ForgeClient::new(s).unwrap()
}

pub fn seeded() -> FakeForge {
    let f = FakeForge::start();
    f.add_token("ghp_secret_bot_token", "dandori-bot");
    f.add_token("glpat-secret-bot-token", "dandori-bot");
    f.add_project(Api::GitHub, "octo/app", false, &[]);
    f.add_item(
        Api::GitHub,
        "octo/app",
        1,
        ItemKind::Issue,
        "Add a health endpoint",
        "Add GET /health.",
        &["enhancement"],
        "alice",
    );
    f.add_project(Api::GitLab, "grp/sub/app", false, &[]);
    f.add_item(
        Api::GitLab,
        "grp/sub/app",
        2,
        ItemKind::Issue,
        "Fix the parser",
        "It breaks.",
        &["bug"],
        "alice",
    );
    f
}

#[test]
fn github_issue_with_paginated_comments() {
    let f = seeded();
    f.set_max_per_page(2);
    for i in 0..5 {
        f.add_comment(Api::GitHub, "octo/app", 1, "alice", &format!("comment {i}"));
    }
    let r = ForgeRef::parse("github:octo/app#1").unwrap();
    let issue = client(&f, &r, &ForgesConfig::default()).issue(&r).unwrap();
    assert_eq!(issue.title, "Add a health endpoint");
    assert_eq!(issue.labels, vec!["enhancement"]);
    assert_eq!(issue.author, "alice");
    let bodies: Vec<&str> = issue.comments.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(
        bodies,
        [
            "comment 0",
            "comment 1",
            "comment 2",
            "comment 3",
            "comment 4"
        ]
    );
    let pages = f
        .exchanges()
        .iter()
        .filter(|e| e.path.ends_with("/comments"))
        .count();
    assert_eq!(pages, 3, "5 comments at 2 a page");
    // The token went only to the fake, as a bearer token.
    assert!(
        f.exchanges()
            .iter()
            .all(|e| e.headers.get("authorization").map(String::as_str)
                == Some("Bearer ghp_secret_bot_token"))
    );
}

#[test]
fn gitlab_notes_paginate_by_x_next_page_and_skip_system_notes() {
    let f = seeded();
    f.set_max_per_page(2);
    f.add_comment(Api::GitLab, "grp/sub/app", 2, "alice", "one");
    f.add_system_note("grp/sub/app", 2, "added ~bug label");
    f.add_comment(Api::GitLab, "grp/sub/app", 2, "bob", "two");
    f.add_comment(Api::GitLab, "grp/sub/app", 2, "alice", "three");
    let r = ForgeRef::parse("gitlab:grp/sub/app#2").unwrap();
    let issue = client(&f, &r, &ForgesConfig::default()).issue(&r).unwrap();
    assert_eq!(issue.body, "It breaks.");
    let bodies: Vec<&str> = issue.comments.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, ["one", "two", "three"]);
    assert!(
        f.exchanges()
            .iter()
            .all(|e| e.headers.get("private-token").map(String::as_str)
                == Some("glpat-secret-bot-token"))
    );
    assert!(
        f.exchanges()
            .iter()
            .any(|e| e.path == "/projects/grp%2Fsub%2Fapp/issues/2"
                || e.path == "/projects/grp/sub/app/issues/2")
    );
}

#[test]
fn pull_request_reviews_count_as_pr_review_feedback() {
    let f = seeded();
    f.add_item(
        Api::GitHub,
        "octo/app",
        5,
        ItemKind::ChangeRequest,
        "PR",
        "body",
        &[],
        "alice",
    );
    f.add_comment(Api::GitHub, "octo/app", 5, "alice", "plain comment");
    f.add_review(
        Api::GitHub,
        "octo/app",
        5,
        "carol",
        "drop S02",
        "CHANGES_REQUESTED",
    );
    let r = ForgeRef::parse("github-pr:octo/app#5").unwrap();
    let issue = client(&f, &r, &ForgesConfig::default()).issue(&r).unwrap();
    let kinds: Vec<(CommentSource, &str)> = issue
        .comments
        .iter()
        .map(|c| (c.source, c.body.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            (CommentSource::IssueComment, "plain comment"),
            (CommentSource::PrReview, "drop S02")
        ]
    );
}

#[test]
fn private_repository_is_a_clear_not_found() {
    let f = seeded();
    f.add_project(Api::GitHub, "octo/secret", true, &["someone-else"]);
    f.add_item(
        Api::GitHub,
        "octo/secret",
        1,
        ItemKind::Issue,
        "t",
        "b",
        &[],
        "x",
    );
    let r = ForgeRef::parse("github:octo/secret#1").unwrap();
    let e = client(&f, &r, &ForgesConfig::default())
        .issue(&r)
        .unwrap_err();
    assert_eq!(e.code(), "FORGE_NOT_FOUND");
    let msg = e.to_string();
    assert!(
        msg.contains("private repository") && msg.contains("GITHUB_TOKEN"),
        "{msg}"
    );
    assert!(!msg.contains("ghp_secret_bot_token"));
}

#[test]
fn a_wrong_token_is_unauthorized_and_never_printed() {
    let f = seeded();
    let r = ForgeRef::parse("github:octo/app#1").unwrap();
    let mut env = env_for(&f);
    env.insert("GITHUB_TOKEN".into(), "ghp_wrong_value_123".into());
    let c = ForgeClient::new(ForgeSettings::resolve(&r, &ForgesConfig::default(), &env).unwrap())
        .unwrap();
    let e = c.issue(&r).unwrap_err();
    assert_eq!(e.code(), "FORGE_UNAUTHORIZED");
    assert!(!e.to_string().contains("ghp_wrong_value_123"));
    assert!(!format!("{c:?}").contains("ghp_wrong_value_123"));
}

#[test]
fn rate_limits_wait_within_the_budget_then_fail_clearly() {
    let f = seeded();
    let r = ForgeRef::parse("github:octo/app#1").unwrap();
    f.rate_limit_next(&[RateLimit::RetryAfter(1), RateLimit::Reset(1)]);
    let c = client(&f, &r, &ForgesConfig::default());
    let t = Instant::now();
    c.issue(&r).unwrap();
    assert!(t.elapsed().as_millis() >= 1000, "waited for Retry-After");
    assert!(c.rate_limit_waited().as_secs() >= 2);

    // A reset beyond the budget is a reason code, not a hang.
    let cfg = ForgesConfig {
        rate_limit_wait: 5,
        ..ForgesConfig::default()
    };
    f.rate_limit_next(&[RateLimit::Reset(3600)]);
    let t = Instant::now();
    let e = client(&f, &r, &cfg).issue(&r).unwrap_err();
    assert_eq!(e.code(), "FORGE_RATE_LIMITED");
    assert!(t.elapsed().as_secs() < 5);
    assert!(e.to_string().contains("forges.rate_limit_wait"), "{e}");

    // GitLab's RateLimit-* headers too.
    let g = ForgeRef::parse("gitlab:grp/sub/app#2").unwrap();
    f.rate_limit_next(&[RateLimit::Reset(1)]);
    client(&f, &g, &ForgesConfig::default()).issue(&g).unwrap();
}

#[test]
fn base_urls_and_tokens_resolve_in_order() {
    let cfg = ForgesConfig::default();
    let r = ForgeRef::parse("github:o/r#1").unwrap();
    let s = ForgeSettings::resolve(&r, &cfg, &BTreeMap::new()).unwrap();
    assert_eq!(s.api_url, "https://api.github.com");
    assert!(s.token_value().is_none());
    let ghe = ForgeRef::parse("https://ghe.example/o/r/issues/1").unwrap();
    let s = ForgeSettings::resolve(
        &ghe,
        &cfg,
        &BTreeMap::from([("GH_TOKEN".into(), "t1".into())]),
    )
    .unwrap();
    assert_eq!(s.api_url, "https://ghe.example/api/v3");
    assert_eq!(s.token_var.as_deref(), Some("GH_TOKEN"));
    let gl = ForgeRef::parse("https://git.example/g/p/-/issues/1").unwrap();
    let env = BTreeMap::from([
        ("CI_API_V4_URL".into(), "https://ci.example/api/v4/".into()),
        ("GITLAB_API_URL".into(), "https://other/api/v4".into()),
    ]);
    assert_eq!(
        ForgeSettings::resolve(&gl, &cfg, &env).unwrap().api_url,
        "https://ci.example/api/v4"
    );
    let named = ForgesConfig {
        gitlab: dandori_config::ForgeEndpoint {
            api_url: None,
            token_env: Some("MY_GL".into()),
        },
        ..ForgesConfig::default()
    };
    let env = BTreeMap::from([
        ("GITLAB_TOKEN".into(), "ignored".into()),
        ("MY_GL".into(), "used".into()),
    ]);
    let s = ForgeSettings::resolve(&gl, &named, &env).unwrap();
    assert_eq!(
        (s.token_var.as_deref(), s.token_value()),
        (Some("MY_GL"), Some("used"))
    );
    assert_eq!(s.api_url, "https://git.example/api/v4");
    let bad = BTreeMap::from([("GITHUB_API_URL".into(), "ftp://x".into())]);
    assert_eq!(
        ForgeSettings::resolve(&r, &cfg, &bad).unwrap_err().code(),
        "FORGE_CONFIG_INVALID"
    );
}

#[test]
fn team_membership_is_asked_of_the_forge() {
    let f = seeded();
    f.add_team("octo/reviewers", &["carol"]);
    f.add_team("grp/maintainers", &["dave"]);
    let r = ForgeRef::parse("github:octo/app#1").unwrap();
    let c = client(&f, &r, &ForgesConfig::default());
    assert!(c.is_member("octo/reviewers", "carol").unwrap());
    assert!(!c.is_member("octo/reviewers", "mallory").unwrap());
    let g = ForgeRef::parse("gitlab:grp/sub/app#2").unwrap();
    let c = client(&f, &g, &ForgesConfig::default());
    assert!(c.is_member("grp/maintainers", "dave").unwrap());
    assert!(!c.is_member("grp/maintainers", "dav").unwrap());
}

/// Issue 39: a comment body holding a secret (the token, a secret variable of the
/// environment) in any of its forms is masked before it reaches the forge, on
/// GitHub and GitLab, when created and when updated.
#[test]
fn comment_bodies_are_masked_in_every_form() {
    use dandori_test_support::secret_forms::{SECRET, SECRET_VAR, forms};
    let f = seeded();
    let mut env = env_for(&f);
    env.insert(SECRET_VAR.to_string(), SECRET.to_string());
    let masker = dandori_trace::Masker::default().with_env_secrets(&env);
    for (reference, api, project, number) in [
        ("github:octo/app#1", Api::GitHub, "octo/app", 1),
        ("gitlab:grp/sub/app#2", Api::GitLab, "grp/sub/app", 2),
    ] {
        let r = ForgeRef::parse(reference).unwrap();
        let s = ForgeSettings::resolve(&r, &ForgesConfig::default(), &env).unwrap();
        let client = ForgeClient::new(s).unwrap();
        for (name, text) in forms(SECRET) {
            let body = format!("dandori status (SECRET_DETECTED):\n{text}\n");
            let posted = client.create_comment(&r, &body).unwrap();
            let updated = client
                .update_comment(
                    &r,
                    posted.id,
                    &format!("{body}\nedited ghp_secret_bot_token"),
                )
                .unwrap();
            let stored = f.item(api, project, number);
            let kept = stored
                .comments
                .iter()
                .find(|c| c.id == updated.id)
                .map(|c| c.body.clone())
                .unwrap();
            assert!(!masker.holds_secret(&kept), "{reference} {name}: {kept}");
            assert!(!kept.contains("ghp_secret_bot_token"), "{kept}");
            assert!(
                kept.contains("SECRET_DETECTED") && kept.contains("***"),
                "{kept}"
            );
        }
    }
}
