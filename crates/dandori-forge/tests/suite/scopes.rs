//! The token's scopes, as the forges report them (GitHub's `X-OAuth-Scopes` on
//! every answer to a classic token; GitLab's `GET /personal_access_tokens/self`),
//! checked before a run that publishes: the missing scope is named.

use dandori_forge::scopes;
use dandori_test_support::fake_forge::{Api, FakeForge};
use dandori_test_support::openapi::check_all;

use super::bot::client_with as client;

#[test]
fn a_token_without_the_scope_to_push_is_refused_naming_it() {
    let f = FakeForge::start();
    f.add_project(Api::GitHub, "octo/app", false, &[]);
    f.add_project(Api::GitLab, "grp/app", false, &[]);
    for (t, user) in [
        ("ghp_readOrgOnly", "alice"),
        ("ghp_repo", "alice"),
        ("ghp_fineGrained", "alice"),
        ("glpat-readOnly", "alice"),
        ("glpat-full", "alice"),
    ] {
        f.add_token(t, user);
    }
    f.set_token_scopes("ghp_readOrgOnly", &["read:org", "gist"]);
    f.set_token_scopes("ghp_repo", &["repo", "read:org"]);
    f.set_token_scopes("glpat-readOnly", &["api", "read_repository"]);

    let (r, c) = client(&f, "github:octo/app#1", "ghp_readOrgOnly");
    let e = scopes::check(&c, &r.project).unwrap_err();
    assert_eq!(e.code(), "PREFLIGHT_FAILED");
    let m = e.to_string();
    assert!(
        m.contains("lacks the scope `repo` (X-OAuth-Scopes: read:org, gist)"),
        "{m}"
    );
    let (r, c) = client(&f, "github:octo/app#1", "ghp_repo");
    scopes::check(&c, &r.project).unwrap();
    // A fine-grained token: GitHub sends no X-OAuth-Scopes and lists no
    // permission; a pull request with an empty head is refused 422 when the
    // token may open one, 403 when it may not.
    let (r, c) = client(&f, "github:octo/app#1", "ghp_fineGrained");
    assert_eq!(scopes::token_scopes(&c, &r.project).unwrap(), None);
    scopes::check(&c, &r.project).unwrap();
    f.set_token_permissions(
        "ghp_fineGrained",
        &[
            ("contents", "write"),
            ("issues", "write"),
            ("pull_requests", "write"),
        ],
    );
    scopes::check(&c, &r.project).unwrap();
    f.set_token_permissions(
        "ghp_fineGrained",
        &[
            ("contents", "write"),
            ("issues", "write"),
            ("pull_requests", "read"),
        ],
    );
    let e = scopes::check(&c, &r.project).unwrap_err();
    assert_eq!(e.code(), "PREFLIGHT_FAILED");
    let m = e.to_string();
    assert!(
        m.contains("lacks the permission `pull_requests: write` (POST /repos/octo/app/pulls answered 403: Resource not accessible by personal access token"),
        "{m}"
    );
    // GitHub Actions' GITHUB_TOKEN with `pull-requests: read`.
    f.add_installation_token("ghs_readPulls", "github-actions");
    f.set_token_permissions("ghs_readPulls", &[("pull_requests", "read")]);
    let (r, c) = client(&f, "github:octo/app#1", "ghs_readPulls");
    let m = scopes::check(&c, &r.project).unwrap_err().to_string();
    assert!(m.contains("Resource not accessible by integration"), "{m}");
    // Nothing was opened by asking.
    assert!(f.change_requests(Api::GitHub, "octo/app").is_empty());

    let (r, c) = client(&f, "gitlab:grp/app#1", "glpat-readOnly");
    let m = scopes::check(&c, &r.project).unwrap_err().to_string();
    assert!(
        m.contains(
            "lacks the scope `write_repository` (personal_access_tokens/self: api, read_repository)"
        ),
        "{m}"
    );
    let (r, c) = client(&f, "gitlab:grp/app#1", "glpat-full");
    scopes::check(&c, &r.project).unwrap();
    let errs = check_all(&f.exchanges()).unwrap();
    assert!(errs.is_empty(), "{errs:#?}");
}
