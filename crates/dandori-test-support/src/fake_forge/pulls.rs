//! Pull requests (GitHub) and merge requests (GitLab) opened through the API:
//! listed by head / source branch, created, edited. The head branch must exist
//! in the project's remote (a bare repository, [`super::FakeForge::set_remote`])
//! as on the real forges, and the answer carries the head commit found there.
//!
//! Shapes: GitHub's `pull-request` with every field its official description
//! requires (npm @octokit/openapi: `pulls/list`, `pulls/create`,
//! `pulls/update`); GitLab's merge request fields of `doc/api/merge_requests.md`.

use serde_json::{Value, json};

use super::{
    Answer, Api, FakeItem, FakePr, ItemKind, Shared, answer, gh_label, gh_user, gh_user_id,
    not_found, page, param,
};

/// The head commit of `branch` in the project's remote; None when the branch
/// does not exist there (or no remote is registered).
fn remote_head(s: &Shared, api: Api, project: &str, branch: &str) -> Option<String> {
    let bare = s.remotes.get(&(api, project.to_string()))?;
    let out = std::process::Command::new("git")
        .arg("--git-dir")
        .arg(bare)
        .args(["rev-parse", "--verify", "--quiet"])
        .arg(format!("refs/heads/{branch}^{{commit}}"))
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn next_number(s: &Shared, api: Api, project: &str) -> u64 {
    s.projects
        .get(&(api, project.to_string()))
        .and_then(|p| p.items.keys().next_back().copied())
        .unwrap_or(0)
        + 1
}

/// `POST|GET|PATCH /repos/{owner}/{repo}/pulls[/{n}]`.
#[allow(clippy::too_many_arguments)]
pub(super) fn github(
    s: &mut Shared,
    method: &str,
    rest: &[&str],
    query: &str,
    body: &Value,
    user: Option<&str>,
    host: &str,
    project: &str,
    path: &str,
) -> Answer {
    let key = (Api::GitHub, project.to_string());
    let owner = project.split('/').next().unwrap_or_default().to_string();
    let strip = |head: &str| {
        head.split_once(':')
            .map(|(_, b)| b.to_string())
            .unwrap_or_else(|| head.to_string())
    };
    match (method, rest) {
        ("GET", ["pulls"]) => {
            let state = param(query, "state").unwrap_or("open");
            let head = param(query, "head").map(|h| strip(&h.replace("%3A", ":")));
            let items: Vec<Value> = s.projects[&key]
                .items
                .iter()
                .filter(|(_, i)| {
                    i.pr.as_ref().is_some_and(|pr| {
                        (state == "all" || i.state == state)
                            && head.as_ref().is_none_or(|h| &pr.head == h)
                    })
                })
                .map(|(n, i)| gh_pull(project, *n, i, host))
                .collect();
            page(s, Api::GitHub, items, query, host, "/gh", path)
        }
        ("POST", ["pulls"]) => {
            let (Some(head), Some(base)) = (
                body.get("head").and_then(Value::as_str),
                body.get("base").and_then(Value::as_str),
            ) else {
                return invalid("head", "missing_field");
            };
            let head = strip(head);
            let Some(sha) = remote_head(s, Api::GitHub, project, &head) else {
                return invalid("head", "invalid");
            };
            if remote_head(s, Api::GitHub, project, base).is_none() {
                return invalid("base", "invalid");
            }
            let exists = s.projects[&key]
                .items
                .values()
                .any(|i| i.state == "open" && i.pr.as_ref().is_some_and(|p| p.head == head));
            if exists {
                return answer(
                    422,
                    json!({"message": "Validation Failed", "errors": [{"resource": "PullRequest", "code": "custom",
                        "message": format!("A pull request already exists for {owner}:{head}.")}]}),
                );
            }
            let n = next_number(s, Api::GitHub, project);
            let item = FakeItem {
                kind: ItemKind::ChangeRequest,
                title: body
                    .get("title")
                    .and_then(Value::as_str)
                    .unwrap_or(&head)
                    .to_string(),
                body: body
                    .get("body")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
                labels: Vec::new(),
                author: user.unwrap_or_default().to_string(),
                state: "open".to_string(),
                comments: Vec::new(),
                pr: Some(FakePr {
                    head,
                    base: base.to_string(),
                    draft: body.get("draft").and_then(Value::as_bool).unwrap_or(false),
                    head_sha: sha,
                }),
            };
            let v = gh_pull(project, n, &item, host);
            if let Some(p) = s.projects.get_mut(&key) {
                p.items.insert(n, item);
            }
            answer(201, v)
        }
        ("PATCH", ["pulls", n]) => {
            let Ok(n) = n.parse::<u64>() else {
                return not_found();
            };
            let head = match s.projects[&key].items.get(&n).and_then(|i| i.pr.clone()) {
                Some(pr) => pr.head,
                None => return not_found(),
            };
            let sha = remote_head(s, Api::GitHub, project, &head);
            let Some(item) = s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)) else {
                return not_found();
            };
            if let Some(t) = body.get("title").and_then(Value::as_str) {
                item.title = t.to_string();
            }
            if let Some(b) = body.get("body").and_then(Value::as_str) {
                item.body = b.to_string();
            }
            if let Some(st) = body.get("state").and_then(Value::as_str) {
                item.state = st.to_string();
            }
            if let (Some(pr), Some(sha)) = (item.pr.as_mut(), sha) {
                pr.head_sha = sha;
            }
            let item = item.clone();
            answer(200, gh_pull(project, n, &item, host))
        }
        _ => not_found(),
    }
}

/// A pull request's GraphQL node id (opaque, unique over the fake's projects).
fn pull_node_id(project: &str, n: u64) -> String {
    format!("PR_{}_{n}", project.replace('/', "__"))
}

/// `POST /graphql`, the one mutation dandori sends: GitHub's
/// `markPullRequestReadyForReview(input: {pullRequestId})` (the REST API has no
/// way to turn a draft ready: `PATCH /pulls/{n}` takes no `draft`). Errors as
/// GitHub answers them: HTTP 200 with `errors`.
pub(super) fn github_graphql(s: &mut Shared, body: &Value, _host: &str) -> Answer {
    let query = body
        .get("query")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let gql_error =
        |message: String| answer(200, json!({"data": null, "errors": [{"message": message}]}));
    if !query.contains("markPullRequestReadyForReview") {
        return gql_error(format!(
            "the fake forge answers markPullRequestReadyForReview only, not: {query}"
        ));
    }
    let Some(id) = body.pointer("/variables/id").and_then(Value::as_str) else {
        return gql_error("Variable $id of type ID! was provided invalid value".into());
    };
    for ((api, project), p) in s.projects.iter_mut() {
        if *api != Api::GitHub {
            continue;
        }
        for (n, item) in p.items.iter_mut() {
            if pull_node_id(project, *n) != id {
                continue;
            }
            let Some(pr) = item.pr.as_mut() else { continue };
            if !pr.draft {
                return gql_error("Pull request is not in draft state".into());
            }
            pr.draft = false;
            return answer(
                200,
                json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"id": id, "isDraft": false, "number": n}}}}),
            );
        }
    }
    gql_error(format!(
        "Could not resolve to a node with the global id of '{id}'"
    ))
}

fn invalid(field: &str, code: &str) -> Answer {
    answer(
        422,
        json!({"message": "Validation Failed",
               "errors": [{"resource": "PullRequest", "field": field, "code": code}]}),
    )
}

/// GitHub's `repository`, every required field.
fn gh_repository(project: &str, host: &str) -> Value {
    let api = format!("http://{host}/gh/repos/{project}");
    let (owner, name) = project.split_once('/').unwrap_or((project, project));
    let mut v = json!({
        "id": gh_user_id(project), "node_id": format!("R_{project}"), "name": name,
        "full_name": project, "owner": gh_user(owner, host), "private": true,
        "html_url": format!("http://{host}/{project}"), "description": null, "fork": false,
        "url": api, "clone_url": format!("http://{host}/{project}.git"),
        "git_url": format!("git://{host}/{project}.git"), "ssh_url": format!("git@{host}:{project}.git"),
        "svn_url": format!("http://{host}/{project}"), "homepage": null, "language": null,
        "mirror_url": null, "license": null, "pushed_at": null, "created_at": null,
        "updated_at": null, "default_branch": "main", "forks": 0, "forks_count": 0,
        "open_issues": 0, "open_issues_count": 0, "size": 0, "stargazers_count": 0,
        "watchers": 0, "watchers_count": 0, "has_downloads": true, "has_issues": true,
        "has_projects": false, "has_wiki": false, "has_pages": false, "archived": false,
        "disabled": false,
    });
    let urls = [
        ("archive_url", "{archive_format}{/ref}"),
        ("assignees_url", "assignees{/user}"),
        ("blobs_url", "git/blobs{/sha}"),
        ("branches_url", "branches{/branch}"),
        ("collaborators_url", "collaborators{/collaborator}"),
        ("comments_url", "comments{/number}"),
        ("commits_url", "commits{/sha}"),
        ("compare_url", "compare/{base}...{head}"),
        ("contents_url", "contents/{+path}"),
        ("contributors_url", "contributors"),
        ("deployments_url", "deployments"),
        ("downloads_url", "downloads"),
        ("events_url", "events"),
        ("forks_url", "forks"),
        ("git_commits_url", "git/commits{/sha}"),
        ("git_refs_url", "git/refs{/sha}"),
        ("git_tags_url", "git/tags{/sha}"),
        ("hooks_url", "hooks"),
        ("issue_comment_url", "issues/comments{/number}"),
        ("issue_events_url", "issues/events{/number}"),
        ("issues_url", "issues{/number}"),
        ("keys_url", "keys{/key_id}"),
        ("labels_url", "labels{/name}"),
        ("languages_url", "languages"),
        ("merges_url", "merges"),
        ("milestones_url", "milestones{/number}"),
        (
            "notifications_url",
            "notifications{?since,all,participating}",
        ),
        ("pulls_url", "pulls{/number}"),
        ("releases_url", "releases{/id}"),
        ("stargazers_url", "stargazers"),
        ("statuses_url", "statuses/{sha}"),
        ("subscribers_url", "subscribers"),
        ("subscription_url", "subscription"),
        ("tags_url", "tags"),
        ("teams_url", "teams"),
        ("trees_url", "git/trees{/sha}"),
    ];
    if let Some(o) = v.as_object_mut() {
        for (k, rest) in urls {
            o.insert(k.to_string(), json!(format!("{api}/{rest}")));
        }
    }
    v
}

/// GitHub's `pull-request`, every required field.
fn gh_pull(project: &str, n: u64, item: &FakeItem, host: &str) -> Value {
    let api = format!("http://{host}/gh/repos/{project}");
    let html = format!("http://{host}/{project}/pull/{n}");
    let pr = item.pr.clone().unwrap_or(FakePr {
        head: String::new(),
        base: "main".to_string(),
        draft: false,
        head_sha: String::new(),
    });
    let owner = project.split('/').next().unwrap_or_default();
    let link = |href: String| json!({ "href": href });
    let end = |r: &str, sha: &str| {
        json!({"label": format!("{owner}:{r}"), "ref": r, "sha": sha,
               "repo": gh_repository(project, host), "user": gh_user(owner, host)})
    };
    let links = json!({
        "self": link(format!("{api}/pulls/{n}")), "html": link(html.clone()),
        "issue": link(format!("{api}/issues/{n}")),
        "comments": link(format!("{api}/issues/{n}/comments")),
        "review_comments": link(format!("{api}/pulls/{n}/comments")),
        "review_comment": link(format!("{api}/pulls/comments{{/number}}")),
        "commits": link(format!("{api}/pulls/{n}/commits")),
        "statuses": link(format!("{api}/statuses/{}", pr.head_sha)),
    });
    let mut v = json!({
        "id": 900 + n, "node_id": pull_node_id(project, n), "number": n,
        "url": format!("{api}/pulls/{n}"), "html_url": html,
        "diff_url": format!("{html}.diff"), "patch_url": format!("{html}.patch"),
        "issue_url": format!("{api}/issues/{n}"),
        "commits_url": format!("{api}/pulls/{n}/commits"),
        "review_comments_url": format!("{api}/pulls/{n}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{api}/issues/{n}/comments"),
        "statuses_url": format!("{api}/statuses/{}", pr.head_sha),
        "state": if item.state == "open" { "open" } else { "closed" },
        "locked": false, "title": item.title, "body": item.body,
        "user": gh_user(&item.author, host),
        "labels": item.labels.iter().map(|l| gh_label(project, l, host)).collect::<Vec<_>>(),
        "head": end(&pr.head, &pr.head_sha), "base": end(&pr.base, ""),
        "_links": links,
    });
    let rest = json!({
        "milestone": null, "assignee": null, "merged_by": null, "auto_merge": null,
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        "closed_at": null, "merged_at": null, "merge_commit_sha": null,
        "author_association": "NONE", "draft": pr.draft,
        "merged": false, "mergeable": null, "mergeable_state": "unknown",
        "maintainer_can_modify": false, "comments": 0, "review_comments": 0,
        "commits": 1, "additions": 0, "deletions": 0, "changed_files": 0,
    });
    if let (Some(o), Value::Object(r)) = (v.as_object_mut(), rest) {
        o.extend(r);
    }
    v
}

/// `GET|POST /projects/:id/merge_requests` and `PUT /projects/:id/merge_requests/:iid`.
#[allow(clippy::too_many_arguments)]
pub(super) fn gitlab(
    s: &mut Shared,
    method: &str,
    number: Option<u64>,
    query: &str,
    body: &Value,
    user: Option<&str>,
    host: &str,
    project: &str,
    path: &str,
) -> Answer {
    let key = (Api::GitLab, project.to_string());
    let text = |k: &str| body.get(k).and_then(Value::as_str).map(str::to_string);
    match (method, number) {
        ("GET", None) => {
            let state = param(query, "state").unwrap_or("all");
            let source = param(query, "source_branch").map(|b| b.replace("%2F", "/"));
            let items: Vec<Value> = s.projects[&key]
                .items
                .iter()
                .filter(|(_, i)| {
                    i.pr.as_ref().is_some_and(|pr| {
                        (state == "all" || (state == "opened") == (i.state == "open"))
                            && source.as_ref().is_none_or(|b| &pr.head == b)
                    })
                })
                .map(|(n, i)| gl_mr(project, *n, i, host))
                .collect();
            page(s, Api::GitLab, items, query, host, "/gl/api/v4", path)
        }
        ("POST", None) => {
            let (Some(source), Some(target), Some(title)) =
                (text("source_branch"), text("target_branch"), text("title"))
            else {
                return answer(
                    400,
                    json!({"error": "source_branch, target_branch, title are missing"}),
                );
            };
            let Some(sha) = remote_head(s, Api::GitLab, project, &source) else {
                return answer(
                    400,
                    json!({"message": [format!("Source branch \"{source}\" does not exist")]}),
                );
            };
            if let Some((n, _)) = s.projects[&key]
                .items
                .iter()
                .find(|(_, i)| i.state == "open" && i.pr.as_ref().is_some_and(|p| p.head == source))
            {
                return answer(
                    409,
                    json!({"message": [format!("Another open merge request already exists for this source branch: !{n}")]}),
                );
            }
            let n = next_number(s, Api::GitLab, project);
            let item = FakeItem {
                kind: ItemKind::ChangeRequest,
                pr: Some(FakePr {
                    head: source,
                    base: target,
                    draft: title.starts_with("Draft:"),
                    head_sha: sha,
                }),
                title,
                body: text("description").unwrap_or_default(),
                labels: Vec::new(),
                author: user.unwrap_or_default().to_string(),
                state: "open".to_string(),
                comments: Vec::new(),
            };
            let v = gl_mr(project, n, &item, host);
            if let Some(p) = s.projects.get_mut(&key) {
                p.items.insert(n, item);
            }
            answer(201, v)
        }
        ("PUT", Some(n)) => {
            let head = match s.projects[&key].items.get(&n).and_then(|i| i.pr.clone()) {
                Some(pr) => pr.head,
                None => return answer(404, json!({"message": "404 Not found"})),
            };
            let sha = remote_head(s, Api::GitLab, project, &head);
            let Some(item) = s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)) else {
                return not_found();
            };
            if let Some(t) = text("title") {
                item.title = t;
            }
            if let Some(d) = text("description") {
                item.body = d;
            }
            if let Some(add) = text("add_labels") {
                for l in add.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                    if !item.labels.iter().any(|x| x == l) {
                        item.labels.push(l.to_string());
                    }
                }
            }
            let draft = item.title.starts_with("Draft:");
            if let Some(pr) = item.pr.as_mut() {
                pr.draft = draft;
                if let Some(sha) = sha {
                    pr.head_sha = sha;
                }
            }
            let item = item.clone();
            answer(200, gl_mr(project, n, &item, host))
        }
        _ => not_found(),
    }
}

/// A GitLab merge request (`doc/api/merge_requests.md`).
fn gl_mr(project: &str, n: u64, item: &FakeItem, host: &str) -> Value {
    let pr = item.pr.clone();
    json!({
        "id": 700 + n, "iid": n, "project_id": 1,
        "title": item.title, "description": item.body,
        "state": if item.state == "open" { "opened" } else { "closed" },
        "labels": item.labels,
        "author": {"id": 1, "username": item.author, "name": item.author},
        "source_branch": pr.as_ref().map(|p| p.head.clone()),
        "target_branch": pr.as_ref().map(|p| p.base.clone()),
        "draft": pr.as_ref().is_some_and(|p| p.draft),
        "sha": pr.as_ref().map(|p| p.head_sha.clone()),
        "web_url": format!("http://{host}/{project}/-/merge_requests/{n}"),
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
    })
}
