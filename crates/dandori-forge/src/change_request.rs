//! Pull requests (GitHub) and merge requests (GitLab) opened by dandori: found
//! by their head branch, created, edited.
//!
//! * GitHub: `GET /repos/{o}/{r}/pulls?state=open&head=OWNER:BRANCH`,
//!   `POST /repos/{o}/{r}/pulls` (`draft` when the goal is not achieved),
//!   `PATCH /repos/{o}/{r}/pulls/{n}` (title and body: the REST API cannot turn
//!   a draft into a ready pull request), and the GraphQL mutation
//!   `markPullRequestReadyForReview` (`POST /graphql`; GitHub Enterprise:
//!   `/api/graphql`) when the goal is achieved.
//! * GitLab: `GET /projects/:id/merge_requests?state=opened&source_branch=B`,
//!   `POST /projects/:id/merge_requests`, `PUT /projects/:id/merge_requests/:iid`;
//!   a draft is a title starting `Draft: ` (so an edit can make it ready).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::client::{block_on, encode_project, str_field};
use crate::{Forge, ForgeClient, ForgeError};

/// A pull / merge request as the forge answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRequest {
    pub number: u64,
    pub web_url: String,
    /// The head commit the forge knows (the lease of the next push).
    pub head_sha: String,
    pub draft: bool,
    /// GitHub's GraphQL node id (the ready-for-review mutation's input); empty
    /// on GitLab.
    #[serde(default)]
    pub node_id: String,
}

/// What to open or edit.
#[derive(Debug, Clone)]
pub struct ChangeRequestText<'a> {
    pub title: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

const GITLAB_DRAFT: &str = "Draft: ";

impl ForgeClient {
    /// The open pull / merge request whose head is `branch` in `project`.
    pub fn find_change_request(
        &self,
        project: &str,
        branch: &str,
    ) -> Result<Option<ChangeRequest>, ForgeError> {
        block_on(async {
            let (path, method) = match self.settings().forge {
                Forge::GitHub => {
                    let owner = project.split('/').next().unwrap_or_default();
                    (
                        format!(
                            "/repos/{project}/pulls?state=open&head={owner}:{branch}&per_page=100"
                        ),
                        "GET",
                    )
                }
                Forge::GitLab => (
                    format!(
                        "/projects/{}/merge_requests?state=opened&source_branch={branch}&per_page=100",
                        encode_project(project)
                    ),
                    "GET",
                ),
            };
            let v = self.send_json(method, &path, None).await?;
            let Value::Array(items) = v else {
                return Err(ForgeError::InvalidResponse {
                    method: method.into(),
                    path: strip_query(&path),
                    at: "$".into(),
                    message: "expected a JSON array".into(),
                });
            };
            match items.first() {
                Some(first) => Ok(Some(self.to_change_request(first, method, &path)?)),
                None => Ok(None),
            }
        })
    }

    /// Opens a pull / merge request from `head` onto `base`.
    pub fn create_change_request(
        &self,
        project: &str,
        head: &str,
        base: &str,
        text: &ChangeRequestText<'_>,
    ) -> Result<ChangeRequest, ForgeError> {
        block_on(async {
            let (path, body) = match self.settings().forge {
                Forge::GitHub => (
                    format!("/repos/{project}/pulls"),
                    json!({"title": text.title, "head": head, "base": base,
                           "body": text.body, "draft": text.draft}),
                ),
                Forge::GitLab => (
                    format!("/projects/{}/merge_requests", encode_project(project)),
                    json!({"source_branch": head, "target_branch": base,
                           "title": gitlab_title(text), "description": text.body}),
                ),
            };
            let v = self.send_json("POST", &path, Some(body)).await?;
            self.to_change_request(&v, "POST", &path)
        })
    }

    /// Edits the title and body (and, on GitLab, the draft state).
    pub fn update_change_request(
        &self,
        project: &str,
        number: u64,
        text: &ChangeRequestText<'_>,
    ) -> Result<ChangeRequest, ForgeError> {
        block_on(async {
            let (method, path, body) = match self.settings().forge {
                Forge::GitHub => (
                    "PATCH",
                    format!("/repos/{project}/pulls/{number}"),
                    json!({"title": text.title, "body": text.body}),
                ),
                Forge::GitLab => (
                    "PUT",
                    format!(
                        "/projects/{}/merge_requests/{number}",
                        encode_project(project)
                    ),
                    json!({"title": gitlab_title(text), "description": text.body}),
                ),
            };
            let v = self.send_json(method, &path, Some(body)).await?;
            self.to_change_request(&v, method, &path)
        })
    }

    fn to_change_request(
        &self,
        v: &Value,
        method: &str,
        path: &str,
    ) -> Result<ChangeRequest, ForgeError> {
        let (number_field, sha_ptr, url_field) = match self.settings().forge {
            Forge::GitHub => ("number", "/head/sha", "html_url"),
            Forge::GitLab => ("iid", "/sha", "web_url"),
        };
        let number = v.get(number_field).and_then(Value::as_u64).ok_or_else(|| {
            ForgeError::InvalidResponse {
                method: method.to_string(),
                path: strip_query(path),
                at: number_field.to_string(),
                message: "missing or not a number".to_string(),
            }
        })?;
        Ok(ChangeRequest {
            number,
            web_url: str_field(v, url_field, method, path)?,
            head_sha: v
                .pointer(sha_ptr)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            draft: v.get("draft").and_then(Value::as_bool).unwrap_or(false),
            node_id: v
                .get("node_id")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        })
    }

    /// Marks a draft pull request ready for review: GitHub's GraphQL mutation
    /// `markPullRequestReadyForReview` (the REST API cannot). On GitLab the draft
    /// is the title's `Draft: `, which [`Self::update_change_request`] drops.
    pub fn mark_ready(&self, cr: &ChangeRequest) -> Result<ChangeRequest, ForgeError> {
        if self.settings().forge == Forge::GitLab || !cr.draft {
            return Ok(cr.clone());
        }
        let url = graphql_url(&self.settings().api_url);
        let query = "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }";
        let v = block_on(self.send_json(
            "POST",
            &url,
            Some(json!({"query": query, "variables": {"id": cr.node_id}})),
        ))?;
        if let Some(errors) = v.get("errors").and_then(Value::as_array) {
            let message = errors
                .iter()
                .filter_map(|e| e.get("message").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ForgeError::Http {
                method: "POST".into(),
                path: "/graphql (markPullRequestReadyForReview)".into(),
                status: 200,
                message,
            });
        }
        let draft = v
            .pointer("/data/markPullRequestReadyForReview/pullRequest/isDraft")
            .and_then(Value::as_bool)
            .ok_or_else(|| ForgeError::InvalidResponse {
                method: "POST".into(),
                path: "/graphql".into(),
                at: "data.markPullRequestReadyForReview.pullRequest.isDraft".into(),
                message: "missing or not a boolean".into(),
            })?;
        Ok(ChangeRequest {
            draft,
            ..cr.clone()
        })
    }
}

/// GitHub's GraphQL endpoint for a REST API root: `https://api.github.com` →
/// `https://api.github.com/graphql`; GitHub Enterprise's `https://HOST/api/v3` →
/// `https://HOST/api/graphql`.
pub fn graphql_url(api_url: &str) -> String {
    match api_url.strip_suffix("/api/v3") {
        Some(host) => format!("{host}/api/graphql"),
        None => format!("{api_url}/graphql"),
    }
}

fn gitlab_title(text: &ChangeRequestText<'_>) -> String {
    let bare = text.title.trim_start_matches(GITLAB_DRAFT);
    if text.draft {
        format!("{GITLAB_DRAFT}{bare}")
    } else {
        bare.to_string()
    }
}

fn strip_query(path: &str) -> String {
    path.split('?').next().unwrap_or(path).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_graphql_endpoint_of_github_and_github_enterprise() {
        assert_eq!(
            super::graphql_url("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            super::graphql_url("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
    }
}
