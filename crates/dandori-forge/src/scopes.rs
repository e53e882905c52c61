//! The forge token's scopes, checked before a run that will publish
//! ([`crate::publish::preflight`]): a missing scope is named now, not found out
//! by a refused push after the run's slow work.
//!
//! * GitHub: a classic personal access token's scopes come back on every answer
//!   in `X-OAuth-Scopes`; pushing and opening a pull request needs `repo` (or
//!   `public_repo` on a public repository). Fine-grained tokens and installation
//!   tokens (GitHub Actions' `GITHUB_TOKEN`) send no such header and GitHub has
//!   no call that lists their permissions: dandori asks to open a pull request
//!   with an empty head, which GitHub refuses 403 ("Resource not accessible by
//!   personal access token" / "… by integration", `X-Accepted-GitHub-Permissions:
//!   pull_requests=write`) when the token lacks `pull_requests: write`, and
//!   refuses 422 (nothing opened) when it has it.
//! * GitLab: `GET /personal_access_tokens/self` (personal, project and group
//!   access tokens) lists `scopes`; dandori needs `api` (comments, merge
//!   requests) and `write_repository` (the push). A token that cannot ask (an
//!   older GitLab, another kind of token) is not judged here.

use serde_json::{Value, json};

use crate::client::block_on;
use crate::{Forge, ForgeClient, ForgeError};

/// GitHub: the scopes a classic token needs, any one of them.
pub const GITHUB_PUSH_SCOPES: [&str; 2] = ["repo", "public_repo"];
/// GitLab: the scopes a token needs, all of them.
pub const GITLAB_SCOPES: [&str; 2] = ["api", "write_repository"];

/// The scopes the forge reports for the client's token; `None` when the forge
/// does not say (see the module documentation).
pub fn token_scopes(
    client: &ForgeClient,
    project: &str,
) -> Result<Option<Vec<String>>, ForgeError> {
    block_on(async {
        match client.settings().forge {
            Forge::GitHub => {
                let path = format!("/repos/{project}/pulls?state=open&per_page=1");
                let reply = client.send("GET", &path, None).await?;
                Ok(reply
                    .headers
                    .get("x-oauth-scopes")
                    .and_then(|v| v.to_str().ok())
                    .map(split_scopes))
            }
            Forge::GitLab => match client
                .send("GET", "/personal_access_tokens/self", None)
                .await
            {
                Ok(reply) => Ok(reply.body.get("scopes").and_then(Value::as_array).map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })),
                Err(
                    ForgeError::NotFound { .. }
                    | ForgeError::Unauthorized { .. }
                    | ForgeError::Forbidden { .. },
                ) => Ok(None),
                Err(e) => Err(e),
            },
        }
    })
}

fn split_scopes(header: &str) -> Vec<String> {
    header
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// The scope(s) missing for pushing and opening a pull / merge request, from
/// the scopes the token has: empty when nothing is missing.
pub fn missing(forge: Forge, has: &[String]) -> Vec<&'static str> {
    let has = |s: &str| has.iter().any(|h| h == s);
    match forge {
        Forge::GitHub => {
            if GITHUB_PUSH_SCOPES.iter().any(|s| has(s)) {
                Vec::new()
            } else {
                vec!["repo"]
            }
        }
        Forge::GitLab => GITLAB_SCOPES.into_iter().filter(|s| !has(s)).collect(),
    }
}

/// GitHub, a token without scopes: whether it may open pull requests, asked
/// with a request GitHub refuses either way (an empty head: 422 with the
/// permission, 403 without it).
fn check_pull_request_permission(client: &ForgeClient, project: &str) -> Result<(), ForgeError> {
    let path = format!("/repos/{project}/pulls");
    let probe = json!({"title": "dandori preflight", "head": "", "base": ""});
    match block_on(client.send("POST", &path, Some(probe))) {
        Err(ForgeError::Forbidden { message, .. }) => Err(ForgeError::Preflight(format!(
            "the forge token lacks the permission `pull_requests: write` (POST {path} answered 403: {message}): a fine-grained token needs \"Pull requests: Read and write\", GitHub Actions' GITHUB_TOKEN `permissions: pull-requests: write`"
        ))),
        // 422 (or, on a forge that accepted it, anything else): permitted.
        _ => Ok(()),
    }
}

/// Refuses a token the forge says lacks a scope (or, GitHub's fine-grained
/// and installation tokens, the permission) dandori needs, naming it.
pub fn check(client: &ForgeClient, project: &str) -> Result<(), ForgeError> {
    let Some(has) = token_scopes(client, project)? else {
        if client.settings().forge == Forge::GitHub {
            return check_pull_request_permission(client, project);
        }
        return Ok(());
    };
    let lacking = missing(client.settings().forge, &has);
    if lacking.is_empty() {
        return Ok(());
    }
    let (what, hint) = match client.settings().forge {
        Forge::GitHub => (
            "X-OAuth-Scopes",
            "a classic token needs `repo` (`public_repo` for a public repository) to push the branch and open the pull request",
        ),
        Forge::GitLab => (
            "personal_access_tokens/self",
            "the token needs `api` (notes, merge requests) and `write_repository` (the push)",
        ),
    };
    Err(ForgeError::Preflight(format!(
        "the forge token lacks the scope {} ({what}: {}): {hint}",
        lacking
            .iter()
            .map(|s| format!("`{s}`"))
            .collect::<Vec<_>>()
            .join(" and "),
        if has.is_empty() {
            "none".to_string()
        } else {
            has.join(", ")
        }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_missing_scope_is_named() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(missing(Forge::GitHub, &s(&["read:org", "gist"])), ["repo"]);
        assert!(missing(Forge::GitHub, &s(&["public_repo"])).is_empty());
        assert_eq!(
            missing(Forge::GitLab, &s(&["api", "read_repository"])),
            ["write_repository"]
        );
        assert_eq!(split_scopes("repo, read:org"), ["repo", "read:org"]);
    }
}
