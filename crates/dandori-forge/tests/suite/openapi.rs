//! dandori's requests and the fake forge's responses against the official
//! OpenAPI descriptions (the checker: `dandori_test_support::openapi`).
//!
//! GitHub: npm `@octokit/openapi` (GitHub's own generated descriptions:
//! `generated/api.github.com.json` and the newest `ghes-*.json`), installed by
//! scripts/test.sh into target/test-tools/node. Every exchange is matched to
//! its operation (method and path template), its path and query parameters and
//! JSON body are checked against the operation's parameters and request body
//! (unknown fields are errors), and the response against the schema of its
//! status code ($ref, required, types, formats, enums, nullable, oneOf with a
//! discriminator, anyOf, allOf).
//!
//! GitLab: its official description (doc/api/openapi/openapi_v2.yaml) is not
//! installable from a package registry; the committed subset
//! crates/dandori-forge/openapi/gitlab-subset.json is checked the same way
//! (scripts/refresh-forge-openapi.py refreshes it from the official file).

use std::collections::BTreeSet;

use dandori_config::{ForgeOperation, ForgesConfig};
use dandori_forge::record::ForgeRecord;
use dandori_forge::{ForgeRef, report};
use dandori_test_support::fake_forge::{Api, ForgeExchange, ItemKind};
use dandori_test_support::openapi::{
    check_exchange, check_exchanges, github_descriptions, gitlab_subset,
};
use serde_json::Value;

use super::client::{client, seeded};

/// Exercises every request dandori's forge client makes, on both forges.
fn exercise() -> dandori_test_support::fake_forge::FakeForge {
    let f = seeded();
    f.set_max_per_page(1);
    f.add_comment(Api::GitHub, "octo/app", 1, "alice", "one");
    f.add_comment(Api::GitHub, "octo/app", 1, "bob", "two");
    f.add_item(
        Api::GitHub,
        "octo/app",
        3,
        ItemKind::ChangeRequest,
        "PR",
        "b",
        &[],
        "alice",
    );
    f.add_review(Api::GitHub, "octo/app", 3, "carol", "", "APPROVED");
    f.add_review(
        Api::GitHub,
        "octo/app",
        3,
        "dave",
        "use tokio",
        "CHANGES_REQUESTED",
    );
    f.add_comment(Api::GitLab, "grp/sub/app", 2, "alice", "note");
    f.add_item(
        Api::GitLab,
        "grp/sub/app",
        4,
        ItemKind::ChangeRequest,
        "MR",
        "b",
        &[],
        "alice",
    );
    f.add_review(Api::GitLab, "grp/sub/app", 4, "carol", "diff note", "");
    f.add_team("octo/reviewers", &["carol"]);
    f.add_team("grp/maint", &["carol"]);
    let cfg = ForgesConfig::default();
    assert!(cfg.operations.contains(&ForgeOperation::Label));
    for reference in [
        "github:octo/app#1",
        "github-pr:octo/app#3",
        "gitlab:grp/sub/app#2",
        "gitlab-mr:grp/sub/app!4",
    ] {
        let r = ForgeRef::parse(reference).unwrap();
        let c = client(&f, &r, &cfg);
        assert_eq!(c.whoami().unwrap(), "dandori-bot");
        let issue = c.issue(&r).unwrap();
        let mut rec = ForgeRecord {
            reference: r.clone(),
            source: r.to_string(),
            web_url: issue.web_url.clone(),
            title: issue.title.clone(),
            issue_author: issue.author.clone(),
            labels: issue.labels.clone(),
            task_type: r.task_type().into(),
            comment: true,
            comments: Default::default(),
            consumed: Default::default(),
            help_label: false,
            pull_request: None,
        };
        report::upsert(
            &c,
            &cfg,
            &mut rec,
            "status",
            "<!-- dandori:status x -->\nfirst",
        )
        .unwrap();
        report::upsert(
            &c,
            &cfg,
            &mut rec,
            "status",
            "<!-- dandori:status x -->\nsecond",
        )
        .unwrap();
        if r.kind == dandori_forge::ItemKind::Issue {
            report::add_help_label(&c, &cfg, &mut rec).unwrap();
        }
        let team = if r.forge == dandori_forge::Forge::GitHub {
            "octo/reviewers"
        } else {
            "grp/maint"
        };
        assert!(c.is_member(team, "carol").unwrap());
        assert!(!c.is_member(team, "mallory").unwrap());
        // The token's scopes (GitLab: `personal_access_tokens/self`).
        dandori_forge::scopes::check(&c, &r.project).unwrap();
        // A missing item: the 404 answer is checked too.
        let missing = ForgeRef::parse(&reference.replace(['1', '3', '2', '4'], "9")).unwrap();
        assert!(c.issue(&missing).is_err());
    }
    // `--open-pr`: a pull / merge request found, opened and updated.
    let dir = tempfile::tempdir().unwrap();
    let bare = super::bot::remote(dir.path());
    f.set_remote(Api::GitHub, "octo/app", &bare);
    f.set_remote(Api::GitLab, "grp/sub/app", &bare);
    for (reference, project) in [
        ("github:octo/app#1", "octo/app"),
        ("gitlab:grp/sub/app#2", "grp/sub/app"),
    ] {
        let r = ForgeRef::parse(reference).unwrap();
        let c = client(&f, &r, &cfg);
        let text = dandori_forge::change_request::ChangeRequestText {
            title: "dandori: x",
            body: "Closes #1",
            draft: true,
        };
        assert!(c.find_change_request(project, "feature").unwrap().is_none());
        let cr = c
            .create_change_request(project, "feature", "main", &text)
            .unwrap();
        c.update_change_request(project, cr.number, &text).unwrap();
    }
    f
}

#[test]
fn github_requests_and_responses_match_the_official_descriptions() {
    let f = exercise();
    let exchanges: Vec<ForgeExchange> = f
        .exchanges()
        .into_iter()
        .filter(|e| e.api == Api::GitHub)
        .collect();
    for (name, doc) in github_descriptions().unwrap() {
        let (ops, errs) = check_exchanges(&doc, &exchanges);
        assert!(errs.is_empty(), "{name}: {errs:#?}");
        // Every operation dandori's GitHub client performs was exercised.
        let expected: BTreeSet<String> = [
            "users/get-authenticated",
            "issues/get",
            "issues/list-comments",
            "issues/create-comment",
            "issues/update-comment",
            "issues/add-labels",
            "pulls/list-reviews",
            "teams/get-membership-for-user-in-org",
            "pulls/list",
            "pulls/create",
            "pulls/update",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        assert_eq!(ops, expected, "{name}");
        assert!(
            exchanges.len() >= 20,
            "{name}: {} exchanges",
            exchanges.len()
        );
    }
}

#[test]
fn gitlab_requests_and_responses_match_the_subset() {
    let f = exercise();
    let doc = gitlab_subset().unwrap();
    let exchanges: Vec<ForgeExchange> = f
        .exchanges()
        .into_iter()
        .filter(|e| e.api == Api::GitLab)
        .collect();
    let (ops, errs) = check_exchanges(&doc, &exchanges);
    assert!(errs.is_empty(), "{errs:#?}");
    // Every operation of the subset was exercised.
    for (t, m) in doc["paths"].as_object().unwrap() {
        for method in m.as_object().unwrap().keys().filter(|k| *k != "parameters") {
            let id = m[method]["operationId"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| format!("{} {t}", method.to_uppercase()));
            assert!(
                ops.contains(&id),
                "gitlab-subset.json: {method} {t} never exercised"
            );
        }
    }
}

#[test]
fn the_checker_rejects_what_the_description_forbids() {
    let docs = github_descriptions().unwrap();
    let doc = &docs[0].1;
    let base = ForgeExchange {
        api: Api::GitHub,
        method: "POST".into(),
        path: "/repos/o/r/issues/1/comments".into(),
        query: String::new(),
        headers: Default::default(),
        body: serde_json::json!({"body": "hi"}),
        status: 422,
        response: serde_json::json!({"message": "x", "documentation_url": "https://docs.github.com/rest"}),
    };
    let errors = |e: &ForgeExchange| {
        let mut errs = Vec::new();
        check_exchange(doc, e, &mut errs);
        errs
    };
    assert!(errors(&base).is_empty(), "{:?}", errors(&base));
    let mut e = base.clone();
    e.body = serde_json::json!({"text": "hi"});
    let errs = errors(&e);
    assert!(
        errs.iter().any(|x| x.contains("body: required")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|x| x.contains(".text: not a property")),
        "{errs:?}"
    );
    let mut e = base.clone();
    e.path = "/repos/o/r/issues/one/comments".into();
    assert!(errors(&e).iter().any(|x| x.contains("not an integer")));
    let mut e = base.clone();
    e.method = "GET".into();
    e.body = Value::Null;
    e.query = "per_page=100&colour=red".into();
    assert!(
        errors(&e)
            .iter()
            .any(|x| x.contains("query parameter colour"))
    );
    let mut e = base.clone();
    e.status = 201;
    e.response = serde_json::json!({"id": "7", "node_id": "x"});
    let errs = errors(&e);
    assert!(
        errs.iter().any(|x| x.contains(".id: expected integer")),
        "{errs:?}"
    );
    assert!(
        errs.iter().any(|x| x.contains(".user: required")),
        "{errs:?}"
    );
    let mut e = base.clone();
    e.method = "DELETE".into();
    e.path = "/repos/o/r/issues/1/comments/nope/x".into();
    assert!(errors(&e).iter().any(|x| x.contains("no such path")));
}
