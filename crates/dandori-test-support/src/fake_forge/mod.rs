//! `FakeForge`: a stateful GitHub REST v3 + GitLab v4 server over real HTTP.
//!
//! GitHub is served under `/gh` (the API root is [`FakeForge::github_api_url`]),
//! GitLab under `/gl/api/v4` ([`FakeForge::gitlab_api_url`]). Projects hold
//! issues / pull requests / merge requests with comments (notes), reviews and
//! labels; tokens map to users; private projects answer 404 to anyone but their
//! readers; listings paginate (`Link` on GitHub, `X-Next-Page` on GitLab) with a
//! configurable page size cap; rate limits can be injected for the next
//! requests. Every request and response is recorded for shape checks.
//!
//! Tokens are of three kinds ([`TokenKind`]), as on GitHub: a user's token
//! (`GET /user` answers), an installation token (GitHub Actions' `GITHUB_TOKEN`
//! or a GitHub App's installation token: `GET /user` answers 403 "Resource not
//! accessible by integration", comments are authored by `SLUG[bot]`, a user of
//! type `Bot`, with `performed_via_github_app`), and an app's JWT (`GET /app`
//! answers; a non-JWT token gets 401 "A JSON web token could not be decoded").
//! Pull requests / merge requests ([`pulls`]) are opened against a bare git
//! repository registered as the project's remote, so a head branch that was
//! never pushed is refused (422) as the forges do.

mod git_http;
mod pulls;

pub use git_http::GitRequest;

use std::collections::{BTreeMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::Response;
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Api {
    GitHub,
    GitLab,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemKind {
    Issue,
    /// A GitHub pull request / a GitLab merge request.
    ChangeRequest,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeComment {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    /// A GitLab system note.
    pub system: bool,
    /// A GitLab diff note (review comment) / a GitHub review.
    pub review: bool,
    /// GitHub review state (`APPROVED`, `CHANGES_REQUESTED`, `COMMENTED`).
    pub review_state: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakeItem {
    pub kind: ItemKind,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub author: String,
    pub state: String,
    pub comments: Vec<FakeComment>,
    /// The branches of a pull / merge request opened through the API.
    pub pr: Option<FakePr>,
}

/// A pull / merge request's branches, as opened through the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FakePr {
    pub head: String,
    pub base: String,
    pub draft: bool,
    /// The head commit in the project's remote when the request was opened or edited.
    pub head_sha: String,
}

/// What a token authenticates as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenKind {
    /// A person's (or a GitLab project / group access token's bot user's) token.
    User,
    /// A GitHub App installation token (GitHub Actions' `GITHUB_TOKEN` is the
    /// `github-actions` app's): the user is `APP[bot]`.
    Installation { app: String },
    /// A GitHub App's JWT: only `GET /app` answers.
    AppJwt { app: String },
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FakeProject {
    pub private: bool,
    /// Users who can see a private project.
    pub readers: Vec<String>,
    pub items: BTreeMap<u64, FakeItem>,
}

/// A rate limit answered instead of the next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RateLimit {
    /// 429 with `Retry-After: secs`.
    RetryAfter(u64),
    /// 403 with `X-RateLimit-Remaining: 0` and `X-RateLimit-Reset` (GitLab:
    /// `RateLimit-Remaining` / `RateLimit-Reset`) `secs` from now.
    Reset(u64),
}

/// One request as received, with the answer given.
#[derive(Debug, Clone, PartialEq)]
pub struct ForgeExchange {
    pub api: Api,
    pub method: String,
    /// The path below the API root (`/repos/o/r/issues/1`), query removed.
    pub path: String,
    pub query: String,
    pub headers: BTreeMap<String, String>,
    pub body: Value,
    pub status: u16,
    pub response: Value,
}

#[derive(Debug, Default)]
struct Shared {
    projects: BTreeMap<(Api, String), FakeProject>,
    tokens: BTreeMap<String, String>,
    token_kinds: BTreeMap<String, TokenKind>,
    /// A token's scopes: GitHub's classic tokens report them in `X-OAuth-Scopes`
    /// on every answer; GitLab's in `GET /personal_access_tokens/self` (a token
    /// without an entry there has `api`, `read_repository`, `write_repository`).
    scopes: BTreeMap<String, Vec<String>>,
    /// A GitHub fine-grained or installation token's permissions (`pull_requests`
    /// → `read` | `write`): a write the token has no permission for is refused
    /// 403 with `X-Accepted-GitHub-Permissions`, before the request is
    /// validated. A token without an entry may do everything.
    permissions: BTreeMap<String, BTreeMap<String, String>>,
    /// Bare git repositories standing for the projects' remotes.
    remotes: BTreeMap<(Api, String), PathBuf>,
    git_requests: Vec<git_http::GitRequest>,
    teams: BTreeMap<String, Vec<String>>,
    rate_limits: VecDeque<RateLimit>,
    max_per_page: Option<usize>,
    exchanges: Vec<ForgeExchange>,
    next_id: u64,
    clock: u64,
    /// Stamp comments with the wall clock (seconds, strictly increasing)
    /// instead of `2026-01-01T…` counting up.
    real_time: bool,
    /// How long every request (API and git) waits before it is handled.
    latency: std::time::Duration,
}

impl Shared {
    /// A new comment by `author`, stamped now.
    fn comment(&mut self, author: &str, body: &str) -> FakeComment {
        let (id, now) = (self.id(), self.now());
        FakeComment {
            id,
            author: author.to_string(),
            body: body.to_string(),
            created_at: now.clone(),
            updated_at: now,
            system: false,
            review: false,
            review_state: None,
        }
    }

    fn now(&mut self) -> String {
        if self.real_time {
            // Rounded up: a stamp is never earlier than the moment it stands for.
            let wall = u64::try_from(chrono::Utc::now().timestamp()).unwrap_or(0) + 1;
            self.clock = wall.max(self.clock + 1);
            return chrono::DateTime::from_timestamp(self.clock as i64, 0)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_default();
        }
        self.clock += 1;
        chrono_like(self.clock)
    }
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        1000 + self.next_id
    }
}

/// `2026-01-01T00:00:NNZ`-style timestamps that sort in creation order.
fn chrono_like(n: u64) -> String {
    let (h, rest) = (n / 3600, n % 3600);
    format!(
        "2026-01-01T{:02}:{:02}:{:02}Z",
        h % 24,
        rest / 60,
        rest % 60
    )
}

#[derive(Clone)]
struct AppState(Arc<Mutex<Shared>>);

impl AppState {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        match self.0.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// The running fake forge. Dropping it shuts it down.
pub struct FakeForge {
    addr: SocketAddr,
    state: AppState,
    /// The server; stopped when this is dropped.
    _served: crate::serve::Served,
}

impl FakeForge {
    pub fn start() -> FakeForge {
        let state = AppState(Arc::new(Mutex::new(Shared::default())));
        let served = crate::serve::spawn(
            Router::new().fallback(handle).with_state(state.clone()),
            "fake forge",
        );
        FakeForge {
            addr: served.addr,
            state,
            _served: served,
        }
    }

    /// The GitHub API root (`GITHUB_API_URL`).
    pub fn github_api_url(&self) -> String {
        format!("http://{}/gh", self.addr)
    }

    /// The GitLab API root (`GITLAB_API_URL` / `CI_API_V4_URL`).
    pub fn gitlab_api_url(&self) -> String {
        format!("http://{}/gl/api/v4", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `token` authenticates as `user`.
    pub fn add_token(&self, token: &str, user: &str) {
        self.state
            .lock()
            .tokens
            .insert(token.to_string(), user.to_string());
    }

    /// The scopes of a (GitHub classic or GitLab) token, as the forge reports them.
    pub fn set_token_scopes(&self, token: &str, scopes: &[&str]) {
        self.state.lock().scopes.insert(
            token.to_string(),
            scopes.iter().map(|x| x.to_string()).collect(),
        );
    }

    /// A GitHub fine-grained personal access token's (or an installation
    /// token's) repository permissions, e.g. `[("pull_requests", "read")]`:
    /// such tokens send no `X-OAuth-Scopes`.
    pub fn set_token_permissions(&self, token: &str, permissions: &[(&str, &str)]) {
        self.state.lock().permissions.insert(
            token.to_string(),
            permissions
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
    }

    /// A GitHub App installation token (`github-actions` for GitHub Actions'
    /// `GITHUB_TOKEN`): it acts as `APP[bot]`.
    pub fn add_installation_token(&self, token: &str, app: &str) {
        let mut s = self.state.lock();
        s.tokens.insert(token.to_string(), format!("{app}[bot]"));
        s.token_kinds.insert(
            token.to_string(),
            TokenKind::Installation {
                app: app.to_string(),
            },
        );
    }

    /// A GitHub App's JWT (`GET /app` answers with the app).
    pub fn add_app_jwt(&self, token: &str, app: &str) {
        let mut s = self.state.lock();
        s.tokens.insert(token.to_string(), format!("{app}[bot]"));
        s.token_kinds.insert(
            token.to_string(),
            TokenKind::AppJwt {
                app: app.to_string(),
            },
        );
    }

    /// The bare git repository behind `project` (its branches are the pull /
    /// merge requests' heads).
    pub fn set_remote(&self, api: Api, project: &str, bare: &Path) {
        self.state
            .lock()
            .remotes
            .insert((api, project.to_string()), bare.to_path_buf());
    }

    /// Every request (API and git over HTTP) waits `latency` before it is
    /// handled, as a forge across a network does: a run's pushes and pull
    /// request calls then take a share of its time (the kill matrix lands there).
    pub fn set_latency(&self, latency: std::time::Duration) {
        self.state.lock().latency = latency;
    }

    /// Stamp new comments with the wall clock (for flows that compare them with
    /// times dandori records, such as an approval after a revision).
    pub fn use_real_time(&self) {
        self.state.lock().real_time = true;
    }

    /// The project's remote over smart HTTP (`git http-backend` on the bare
    /// repository of [`FakeForge::set_remote`]; the token as the basic-auth
    /// password, as on the forges).
    pub fn git_url(&self, api: Api, project: &str) -> String {
        let prefix = match api {
            Api::GitHub => "gh",
            Api::GitLab => "gl",
        };
        format!("http://{}/git/{prefix}/{project}.git", self.addr)
    }

    /// Every git request over HTTP, with the user its token authenticated.
    pub fn git_requests(&self) -> Vec<GitRequest> {
        self.state.lock().git_requests.clone()
    }

    /// A project (created empty when new); `private` hides it from all but `readers`.
    pub fn add_project(&self, api: Api, project: &str, private: bool, readers: &[&str]) {
        let mut s = self.state.lock();
        let p = s.projects.entry((api, project.to_string())).or_default();
        p.private = private;
        p.readers = readers.iter().map(|r| r.to_string()).collect();
    }

    /// An issue or change request numbered `number`.
    #[allow(clippy::too_many_arguments)]
    pub fn add_item(
        &self,
        api: Api,
        project: &str,
        number: u64,
        kind: ItemKind,
        title: &str,
        body: &str,
        labels: &[&str],
        author: &str,
    ) {
        let mut s = self.state.lock();
        let p = s.projects.entry((api, project.to_string())).or_default();
        p.items.insert(
            number,
            FakeItem {
                kind,
                title: title.to_string(),
                body: body.to_string(),
                labels: labels.iter().map(|l| l.to_string()).collect(),
                author: author.to_string(),
                state: "open".to_string(),
                comments: Vec::new(),
                pr: None,
            },
        );
    }

    /// A comment by `author`; returns its id.
    pub fn add_comment(
        &self,
        api: Api,
        project: &str,
        number: u64,
        author: &str,
        body: &str,
    ) -> u64 {
        self.push_comment(api, project, number, author, body, false, None)
    }

    /// A GitHub review (`state` `APPROVED`, …) / a GitLab diff note.
    pub fn add_review(
        &self,
        api: Api,
        project: &str,
        number: u64,
        author: &str,
        body: &str,
        state: &str,
    ) -> u64 {
        self.push_comment(
            api,
            project,
            number,
            author,
            body,
            true,
            Some(state.to_string()),
        )
    }

    /// A GitLab system note ("added ~bug label").
    pub fn add_system_note(&self, project: &str, number: u64, body: &str) -> u64 {
        let mut s = self.state.lock();
        let c = FakeComment {
            system: true,
            ..s.comment("gitlab-bot", body)
        };
        let id = c.id;
        item_mut(&mut s, Api::GitLab, project, number)
            .comments
            .push(c);
        id
    }

    #[allow(clippy::too_many_arguments)]
    fn push_comment(
        &self,
        api: Api,
        project: &str,
        number: u64,
        author: &str,
        body: &str,
        review: bool,
        review_state: Option<String>,
    ) -> u64 {
        let mut s = self.state.lock();
        let c = FakeComment {
            review,
            review_state,
            ..s.comment(author, body)
        };
        let id = c.id;
        item_mut(&mut s, api, project, number).comments.push(c);
        id
    }

    /// Edits a comment's body as its author would (bumps `updated_at`).
    pub fn edit_comment(&self, api: Api, project: &str, number: u64, id: u64, body: &str) {
        let mut s = self.state.lock();
        let now = s.now();
        let item = item_mut(&mut s, api, project, number);
        if let Some(c) = item.comments.iter_mut().find(|c| c.id == id) {
            c.body = body.to_string();
            c.updated_at = now;
        }
    }

    pub fn delete_comment(&self, api: Api, project: &str, number: u64, id: u64) {
        let mut s = self.state.lock();
        let item = item_mut(&mut s, api, project, number);
        item.comments.retain(|c| c.id != id);
    }

    /// The item as it is now (comments, labels).
    pub fn item(&self, api: Api, project: &str, number: u64) -> FakeItem {
        let mut s = self.state.lock();
        item_mut(&mut s, api, project, number).clone()
    }

    /// The pull / merge requests opened through the API, by number.
    pub fn change_requests(&self, api: Api, project: &str) -> Vec<(u64, FakeItem)> {
        let s = self.state.lock();
        s.projects
            .get(&(api, project.to_string()))
            .map(|p| {
                p.items
                    .iter()
                    .filter(|(_, i)| i.pr.is_some())
                    .map(|(n, i)| (*n, i.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// `team` (`org/slug` or a GitLab group path) has these members.
    pub fn add_team(&self, team: &str, members: &[&str]) {
        self.state.lock().teams.insert(
            team.to_string(),
            members.iter().map(|m| m.to_string()).collect(),
        );
    }

    /// Answer the next requests with these rate limits, one each.
    pub fn rate_limit_next(&self, limits: &[RateLimit]) {
        self.state.lock().rate_limits.extend(limits.iter().cloned());
    }

    /// Cap `per_page` (forces pagination with few items).
    pub fn set_max_per_page(&self, n: usize) {
        self.state.lock().max_per_page = Some(n);
    }

    pub fn exchanges(&self) -> Vec<ForgeExchange> {
        self.state.lock().exchanges.clone()
    }

    pub fn clear_exchanges(&self) {
        self.state.lock().exchanges.clear();
    }
}

fn item_mut<'a>(s: &'a mut Shared, api: Api, project: &str, number: u64) -> &'a mut FakeItem {
    match s
        .projects
        .get_mut(&(api, project.to_string()))
        .and_then(|p| p.items.get_mut(&number))
    {
        Some(i) => i,
        None => panic!("fake forge: no item {project}#{number}"),
    }
}

struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: Value,
}

fn answer(status: u16, body: Value) -> Answer {
    Answer {
        status,
        headers: Vec::new(),
        body,
    }
}

fn not_found() -> Answer {
    answer(404, json!({"message": "Not Found"}))
}

async fn handle(
    State(state): State<AppState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let latency = state.lock().latency;
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    let full = uri.path().to_string();
    if full.starts_with("/git/") {
        return git_http::serve(&state, &method, &uri, &headers, body).await;
    }
    let query = uri.query().unwrap_or_default().to_string();
    let (api, path) = if let Some(p) = full.strip_prefix("/gh") {
        (Api::GitHub, p.to_string())
    } else if let Some(p) = full.strip_prefix("/gl/api/v4") {
        (Api::GitLab, p.to_string())
    } else {
        return respond(&answer(404, json!({"message": "not an API path"})));
    };
    let req_body: Value = if body.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&body)
            .unwrap_or(Value::String(String::from_utf8_lossy(&body).into()))
    };
    let mut hdrs = BTreeMap::new();
    for (k, v) in &headers {
        hdrs.insert(
            k.as_str().to_string(),
            v.to_str().unwrap_or_default().to_string(),
        );
    }
    let host = hdrs.get("host").cloned().unwrap_or_default();
    let mut s = state.lock();
    let a = match s.rate_limits.pop_front() {
        Some(limit) => rate_limited(api, &limit),
        None => {
            let token = match api {
                Api::GitHub => hdrs
                    .get("authorization")
                    .and_then(|v| {
                        v.strip_prefix("Bearer ")
                            .or_else(|| v.strip_prefix("token "))
                    })
                    .map(str::to_string),
                Api::GitLab => hdrs.get("private-token").cloned(),
            };
            let user = token.as_ref().and_then(|t| s.tokens.get(t).cloned());
            let kind = token
                .as_ref()
                .and_then(|t| s.token_kinds.get(t).cloned())
                .unwrap_or(TokenKind::User);
            if token.is_some() && user.is_none() {
                answer(401, json!({"message": "Bad credentials"}))
            } else if api == Api::GitLab
                && path == "/personal_access_tokens/self"
                && let Some(t) = &token
            {
                let scopes = s.scopes.get(t).cloned().unwrap_or_else(|| {
                    ["api", "read_repository", "write_repository"]
                        .map(str::to_string)
                        .to_vec()
                });
                answer(
                    200,
                    json!({"id": 42, "name": "dandori", "revoked": false, "active": true,
                           "created_at": "2026-01-01T00:00:00.000Z", "scopes": scopes,
                           "user_id": 1, "last_used_at": null, "expires_at": null}),
                )
            } else if api == Api::GitHub
                && let Some(a) = github_identity(&kind, &path, user.as_deref(), &host)
            {
                a
            } else if api == Api::GitHub
                && let Some(a) = token
                    .as_ref()
                    .and_then(|t| github_permission_refusal(&s, t, &kind, method.as_str(), &path))
            {
                a
            } else {
                route(
                    &mut s,
                    api,
                    method.as_str(),
                    &path,
                    &query,
                    &req_body,
                    user.as_deref(),
                    &host,
                )
            }
        }
    };
    let mut a = a;
    if api == Api::GitHub
        && let Some(scopes) = token_of(&hdrs).and_then(|t| s.scopes.get(&t))
    {
        a.headers.push(("x-oauth-scopes".into(), scopes.join(", ")));
    }
    if api == Api::GitHub && a.status >= 400 {
        // GitHub's error bodies (`basic-error`, `validation-error`) carry the
        // documentation link.
        if let Some(o) = a.body.as_object_mut() {
            o.entry("documentation_url")
                .or_insert_with(|| json!("https://docs.github.com/rest"));
        }
    }
    s.exchanges.push(ForgeExchange {
        api,
        method: method.to_string(),
        path: path.clone(),
        query,
        headers: hdrs,
        body: req_body,
        status: a.status,
        response: a.body.clone(),
    });
    drop(s);
    respond(&a)
}

/// The GitHub token of a request's `authorization` header.
fn token_of(hdrs: &BTreeMap<String, String>) -> Option<String> {
    hdrs.get("authorization")
        .and_then(|v| {
            v.strip_prefix("Bearer ")
                .or_else(|| v.strip_prefix("token "))
        })
        .map(str::to_string)
}

fn respond(a: &Answer) -> Response {
    let mut b = Response::builder()
        .status(StatusCode::from_u16(a.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR))
        .header("content-type", "application/json");
    for (k, v) in &a.headers {
        b = b.header(k.as_str(), v.as_str());
    }
    match b.body(Body::from(a.body.to_string())) {
        Ok(r) => r,
        Err(err) => panic!("fake forge response: {err}"),
    }
}

fn rate_limited(api: Api, limit: &RateLimit) -> Answer {
    match limit {
        RateLimit::RetryAfter(secs) => Answer {
            status: 429,
            headers: vec![("retry-after".into(), secs.to_string())],
            body: json!({"message": "You have exceeded a secondary rate limit"}),
        },
        RateLimit::Reset(secs) => {
            let reset = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
                + secs;
            let (rem, res) = match api {
                Api::GitHub => ("x-ratelimit-remaining", "x-ratelimit-reset"),
                Api::GitLab => ("ratelimit-remaining", "ratelimit-reset"),
            };
            Answer {
                status: 403,
                headers: vec![(rem.into(), "0".into()), (res.into(), reset.to_string())],
                body: json!({"message": "API rate limit exceeded"}),
            }
        }
    }
}

/// `GET /user` and `GET /app` by token kind (GitHub). None: route as usual.
///
/// Checked against GitHub's REST description (npm @octokit/openapi 23.0.2):
/// `users/get-authenticated` declares 403 (`basic-error`), the answer an
/// installation token gets ("Resource not accessible by integration", as
/// GitHub Actions' `GITHUB_TOKEN` does); `apps/get-authenticated` declares only
/// 200 and says a JWT is required; GitHub answers other tokens 401 "A JSON web
/// token could not be decoded".
/// GitHub's answer to a write a fine-grained or installation token has no
/// permission for: 403, the message naming the kind of token, and the
/// permission the endpoint needs in `X-Accepted-GitHub-Permissions`.
fn github_permission_refusal(
    s: &Shared,
    token: &str,
    kind: &TokenKind,
    method: &str,
    path: &str,
) -> Option<Answer> {
    let granted = s.permissions.get(token)?;
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let needed = match (method, segs.as_slice()) {
        ("POST" | "PATCH", ["repos", _, _, "pulls", ..]) => "pull_requests",
        ("POST" | "PATCH" | "DELETE", ["repos", _, _, "issues", ..]) => "issues",
        _ => return None,
    };
    if granted.get(needed).map(String::as_str) == Some("write") {
        return None;
    }
    let by = match kind {
        TokenKind::Installation { .. } => "integration",
        _ => "personal access token",
    };
    let mut a = answer(
        403,
        json!({"message": format!("Resource not accessible by {by}"), "status": "403"}),
    );
    a.headers.push((
        "x-accepted-github-permissions".into(),
        format!("{needed}=write"),
    ));
    Some(a)
}

fn github_identity(kind: &TokenKind, path: &str, user: Option<&str>, host: &str) -> Option<Answer> {
    let segs: Vec<&str> = path.split('/').filter(|x| !x.is_empty()).collect();
    match (segs.as_slice(), kind) {
        (["user"], TokenKind::Installation { .. } | TokenKind::AppJwt { .. }) => Some(answer(
            403,
            json!({"message": "Resource not accessible by integration",
                   "documentation_url": "https://docs.github.com/rest/users/users#get-the-authenticated-user",
                   "status": "403"}),
        )),
        (["app"], TokenKind::AppJwt { app }) => Some(answer(200, gh_integration(app, host))),
        (["app"], _) if user.is_some() => Some(answer(
            401,
            json!({"message": "A JSON web token could not be decoded",
                   "documentation_url": "https://docs.github.com/rest", "status": "401"}),
        )),
        _ => None,
    }
}

/// GitHub's `integration` (a GitHub App), every required field.
fn gh_integration(app: &str, host: &str) -> Value {
    json!({
        "id": gh_user_id(app),
        "slug": app,
        "node_id": format!("A_{app}"),
        "client_id": format!("Iv1.{app}"),
        "owner": gh_user("octo", host),
        "name": app,
        "description": null,
        "external_url": format!("http://{host}/apps/{app}"),
        "html_url": format!("http://{host}/apps/{app}"),
        "created_at": "2026-01-01T00:00:00Z",
        "updated_at": "2026-01-01T00:00:00Z",
        "permissions": {"issues": "write", "pull_requests": "write", "contents": "write", "metadata": "read"},
        "events": [],
    })
}

fn param<'a>(query: &'a str, name: &str) -> Option<&'a str> {
    query
        .split('&')
        .find_map(|kv| kv.strip_prefix(name).and_then(|r| r.strip_prefix('=')))
}

#[allow(clippy::too_many_arguments)]
fn route(
    s: &mut Shared,
    api: Api,
    method: &str,
    path: &str,
    query: &str,
    body: &Value,
    user: Option<&str>,
    host: &str,
) -> Answer {
    let segs: Vec<&str> = path.split('/').filter(|x| !x.is_empty()).collect();
    if segs == ["user"] {
        return match (user, api) {
            (Some(u), Api::GitHub) => answer(200, gh_private_user(u, host)),
            (Some(u), Api::GitLab) => answer(200, json!({"username": u, "id": 1, "name": u})),
            (None, _) => answer(401, json!({"message": "Requires authentication"})),
        };
    }
    if api == Api::GitHub && segs == ["graphql"] {
        return match (method, user) {
            ("POST", Some(_)) => pulls::github_graphql(s, body, host),
            ("POST", None) => answer(
                401,
                json!({"message": "This endpoint requires you to be authenticated."}),
            ),
            _ => not_found(),
        };
    }
    match api {
        Api::GitHub => github(s, method, &segs, query, body, user, host, path),
        Api::GitLab => gitlab(s, method, &segs, query, body, user, host, path),
    }
}

fn visible(s: &Shared, api: Api, project: &str, user: Option<&str>) -> bool {
    match s.projects.get(&(api, project.to_string())) {
        Some(p) => !p.private || user.is_some_and(|u| p.readers.iter().any(|r| r == u)),
        None => false,
    }
}

/// One page of `items` and the pagination headers.
fn page(
    s: &Shared,
    api: Api,
    items: Vec<Value>,
    query: &str,
    host: &str,
    prefix: &str,
    path: &str,
) -> Answer {
    let per_page = param(query, "per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(30)
        .clamp(1, 100)
        .min(s.max_per_page.unwrap_or(100));
    let page = param(query, "page")
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(1)
        .max(1);
    let total = items.len();
    let chunk: Vec<Value> = items
        .into_iter()
        .skip((page - 1) * per_page)
        .take(per_page)
        .collect();
    let mut headers = Vec::new();
    let has_next = page * per_page < total;
    match api {
        Api::GitHub => {
            if has_next {
                let other: Vec<&str> = query
                    .split('&')
                    .filter(|kv| !kv.is_empty() && !kv.starts_with("page="))
                    .collect();
                let mut q = other.join("&");
                if !q.is_empty() {
                    q.push('&');
                }
                headers.push((
                    "link".to_string(),
                    format!(
                        "<http://{host}{prefix}{path}?{q}page={}>; rel=\"next\", <http://{host}{prefix}{path}?{q}page={}>; rel=\"last\"",
                        page + 1,
                        total.div_ceil(per_page)
                    ),
                ));
            }
        }
        Api::GitLab => {
            headers.push(("x-page".into(), page.to_string()));
            headers.push(("x-per-page".into(), per_page.to_string()));
            headers.push(("x-total".into(), total.to_string()));
            headers.push((
                "x-next-page".into(),
                if has_next {
                    (page + 1).to_string()
                } else {
                    String::new()
                },
            ));
        }
    }
    Answer {
        status: 200,
        headers,
        body: Value::Array(chunk),
    }
}

/// A stable id for a login (the same user has the same id in every answer).
fn gh_user_id(login: &str) -> u64 {
    login
        .bytes()
        .fold(7u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)))
        % 1_000_000
        + 1
}

/// GitHub's `simple-user`, every required field of the official description.
fn gh_user(login: &str, host: &str) -> Value {
    let api = format!("http://{host}/gh/users/{login}");
    json!({
        "login": login,
        "id": gh_user_id(login),
        "node_id": format!("U_{login}"),
        "avatar_url": format!("http://{host}/avatars/{login}"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("http://{host}/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": if login.ends_with("[bot]") { "Bot" } else { "User" },
        "site_admin": false,
    })
}

/// GitHub's `private-user` (`GET /user` with a token).
fn gh_private_user(login: &str, host: &str) -> Value {
    let mut v = gh_user(login, host);
    let extra = json!({
        "user_view_type": "private",
        "name": login, "company": null, "blog": "", "location": null, "email": null,
        "hireable": null, "bio": null, "public_repos": 0, "public_gists": 0,
        "followers": 0, "following": 0,
        "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
        "private_gists": 0, "total_private_repos": 0, "owned_private_repos": 0,
        "disk_usage": 0, "collaborators": 0, "two_factor_authentication": true,
    });
    if let (Some(o), Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}

/// GitHub's `label`.
fn gh_label(project: &str, name: &str, host: &str) -> Value {
    let id = gh_user_id(name);
    json!({
        "id": id,
        "node_id": format!("LA_{id}"),
        "url": format!("http://{host}/gh/repos/{project}/labels/{}", name.replace(' ', "%20")),
        "name": name,
        "description": null,
        "color": "ededed",
        "default": false,
    })
}

/// GitHub's `issue-comment`.
fn gh_comment(project: &str, number: u64, c: &FakeComment, host: &str) -> Value {
    json!({
        "id": c.id,
        "node_id": format!("IC_{}", c.id),
        "url": format!("http://{host}/gh/repos/{project}/issues/comments/{}", c.id),
        "html_url": format!("http://{host}/{project}/issues/{number}#issuecomment-{}", c.id),
        "issue_url": format!("http://{host}/gh/repos/{project}/issues/{number}"),
        "body": c.body,
        "user": gh_user(&c.author, host),
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "author_association": "NONE",
        // A comment written with an installation token names its app.
        "performed_via_github_app": c.author.strip_suffix("[bot]").map(|app| gh_integration(app, host)),
    })
}

#[allow(clippy::too_many_arguments)]
fn github(
    s: &mut Shared,
    method: &str,
    segs: &[&str],
    query: &str,
    body: &Value,
    user: Option<&str>,
    host: &str,
    path: &str,
) -> Answer {
    if let ["orgs", org, "teams", slug, "memberships", who] = segs {
        let team = format!("{org}/{slug}");
        return match s.teams.get(&team) {
            Some(m) if m.iter().any(|x| x == who) => answer(
                200,
                json!({
                    "state": "active",
                    "role": "member",
                    "url": format!("http://{host}/gh/organizations/1/team/1/memberships/{who}"),
                }),
            ),
            _ => not_found(),
        };
    }
    let ["repos", owner, repo, rest @ ..] = segs else {
        return not_found();
    };
    let project = format!("{owner}/{repo}");
    if !visible(s, Api::GitHub, &project, user) {
        return not_found();
    }
    let writes = matches!(method, "POST" | "PATCH" | "PUT" | "DELETE");
    if writes && user.is_none() {
        return answer(401, json!({"message": "Requires authentication"}));
    }
    if matches!(rest, ["pulls"] | ["pulls", _]) {
        return pulls::github(s, method, rest, query, body, user, host, &project, path);
    }
    let key = (Api::GitHub, project.clone());
    match (method, rest) {
        ("GET", ["issues", n]) => {
            let Some(item) = n
                .parse()
                .ok()
                .and_then(|n: u64| s.projects[&key].items.get(&n))
            else {
                return not_found();
            };
            let api = format!("http://{host}/gh/repos/{project}");
            let mut v = json!({
                "id": 500 + n.parse::<u64>().unwrap_or(0),
                "node_id": format!("I_{n}"),
                "number": n.parse::<u64>().unwrap_or(0),
                "title": item.title,
                "body": item.body,
                "state": item.state,
                "locked": false,
                "user": gh_user(&item.author, host),
                "assignee": null,
                "milestone": null,
                "labels": item.labels.iter().map(|l| gh_label(&project, l, host)).collect::<Vec<_>>(),
                "comments": item.comments.iter().filter(|c| !c.review).count(),
                "html_url": format!("http://{host}/{project}/issues/{n}"),
                "url": format!("{api}/issues/{n}"),
                "repository_url": api,
                "labels_url": format!("{api}/issues/{n}/labels{{/name}}"),
                "comments_url": format!("{api}/issues/{n}/comments"),
                "events_url": format!("{api}/issues/{n}/events"),
                "author_association": "NONE",
                "created_at": "2026-01-01T00:00:00Z",
                "updated_at": "2026-01-01T00:00:00Z",
                "closed_at": null,
            });
            if item.kind == ItemKind::ChangeRequest {
                v["pull_request"] = json!({
                    "url": format!("{api}/pulls/{n}"),
                    "html_url": format!("http://{host}/{project}/pull/{n}"),
                    "diff_url": format!("http://{host}/{project}/pull/{n}.diff"),
                    "patch_url": format!("http://{host}/{project}/pull/{n}.patch"),
                    "merged_at": null,
                });
            }
            answer(200, v)
        }
        ("GET", ["issues", n, "comments"]) => {
            let Some(item) = n
                .parse()
                .ok()
                .and_then(|n: u64| s.projects[&key].items.get(&n))
            else {
                return not_found();
            };
            let items = item
                .comments
                .iter()
                .filter(|c| !c.review)
                .map(|c| gh_comment(&project, n.parse().unwrap_or(0), c, host))
                .collect();
            page(s, Api::GitHub, items, query, host, "/gh", path)
        }
        ("GET", ["pulls", n, "reviews"]) => {
            let Some(item) = n
                .parse()
                .ok()
                .and_then(|n: u64| s.projects[&key].items.get(&n))
            else {
                return not_found();
            };
            if item.kind != ItemKind::ChangeRequest {
                return not_found();
            }
            let items = item
                .comments
                .iter()
                .filter(|c| c.review)
                .map(|c| {
                    let html = format!(
                        "http://{host}/{project}/pull/{n}#pullrequestreview-{}",
                        c.id
                    );
                    let pr = format!("http://{host}/gh/repos/{project}/pulls/{n}");
                    json!({
                        "id": c.id,
                        "node_id": format!("PRR_{}", c.id),
                        "user": gh_user(&c.author, host),
                        "body": c.body,
                        "state": c.review_state.clone().unwrap_or_else(|| "COMMENTED".into()),
                        "submitted_at": c.created_at,
                        "commit_id": "0123456789abcdef0123456789abcdef01234567",
                        "html_url": html,
                        "pull_request_url": pr,
                        "_links": {"html": {"href": html}, "pull_request": {"href": pr}},
                        "author_association": "NONE",
                    })
                })
                .collect();
            page(s, Api::GitHub, items, query, host, "/gh", path)
        }
        ("POST", ["issues", n, "comments"]) => {
            let Some(text) = body.get("body").and_then(Value::as_str) else {
                return answer(
                    422,
                    json!({"message": "Validation Failed", "errors": [{"field": "body", "code": "missing_field"}]}),
                );
            };
            let c = s.comment(user.unwrap_or_default(), text);
            let Some(item) = n
                .parse()
                .ok()
                .and_then(|n: u64| s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)))
            else {
                return not_found();
            };
            item.comments.push(c.clone());
            answer(201, gh_comment(&project, n.parse().unwrap_or(0), &c, host))
        }
        ("PATCH", ["issues", "comments", id]) => {
            let Some(text) = body.get("body").and_then(Value::as_str) else {
                return answer(422, json!({"message": "Validation Failed"}));
            };
            let now = s.now();
            let id: u64 = id.parse().unwrap_or(0);
            let Some(p) = s.projects.get_mut(&key) else {
                return not_found();
            };
            for (number, item) in p.items.iter_mut() {
                if let Some(c) = item.comments.iter_mut().find(|c| c.id == id && !c.review) {
                    if Some(c.author.as_str()) != user {
                        return answer(
                            403,
                            json!({"message": "Must have admin rights to Repository."}),
                        );
                    }
                    c.body = text.to_string();
                    c.updated_at = now;
                    let c = c.clone();
                    return answer(200, gh_comment(&project, *number, &c, host));
                }
            }
            not_found()
        }
        ("POST", ["issues", n, "labels"]) => {
            let Some(labels) = body.get("labels").and_then(Value::as_array) else {
                return answer(422, json!({"message": "Validation Failed"}));
            };
            let Some(item) = n
                .parse()
                .ok()
                .and_then(|n: u64| s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)))
            else {
                return not_found();
            };
            for l in labels.iter().filter_map(Value::as_str) {
                if !item.labels.iter().any(|x| x == l) {
                    item.labels.push(l.to_string());
                }
            }
            let out: Vec<Value> = item
                .labels
                .iter()
                .map(|l| gh_label(&project, l, host))
                .collect();
            answer(200, Value::Array(out))
        }
        _ => not_found(),
    }
}

fn gl_note(c: &FakeComment, kind: ItemKind) -> Value {
    json!({
        "id": c.id,
        "body": c.body,
        "author": {"id": 1, "username": c.author, "name": c.author},
        "created_at": c.created_at,
        "updated_at": c.updated_at,
        "system": c.system,
        "noteable_type": if kind == ItemKind::Issue { "Issue" } else { "MergeRequest" },
        "type": if c.review { Value::from("DiffNote") } else { Value::Null },
    })
}

#[allow(clippy::too_many_arguments)]
fn gitlab(
    s: &mut Shared,
    method: &str,
    segs: &[&str],
    query: &str,
    body: &Value,
    user: Option<&str>,
    host: &str,
    path: &str,
) -> Answer {
    if let ["groups", group, "members", "all"] = segs {
        let group = group.replace("%2F", "/").replace("%2f", "/");
        let who = param(query, "query").unwrap_or_default();
        let members: Vec<Value> = s
            .teams
            .get(&group)
            .map(|m| {
                m.iter()
                    .filter(|x| x.contains(who))
                    .map(|x| json!({"id": 1, "username": x, "name": x, "access_level": 30}))
                    .collect()
            })
            .unwrap_or_default();
        return answer(200, Value::Array(members));
    }
    if let ["projects", enc, "merge_requests", rest @ ..] = segs
        && rest.len() <= 1
    {
        let project = enc.replace("%2F", "/").replace("%2f", "/");
        if !visible(s, Api::GitLab, &project, user) {
            return answer(404, json!({"message": "404 Project Not Found"}));
        }
        if matches!(method, "POST" | "PUT") && user.is_none() {
            return answer(401, json!({"message": "401 Unauthorized"}));
        }
        let number = rest.first().and_then(|n| n.parse::<u64>().ok());
        let opened_here = number.is_some_and(|n| {
            s.projects[&(Api::GitLab, project.clone())]
                .items
                .get(&n)
                .is_some_and(|i| i.pr.is_some())
        });
        if number.is_none() || (opened_here && method == "PUT") {
            return pulls::gitlab(s, method, number, query, body, user, host, &project, path);
        }
    }
    let ["projects", enc, what, n, rest @ ..] = segs else {
        return not_found();
    };
    let project = enc.replace("%2F", "/").replace("%2f", "/");
    if !visible(s, Api::GitLab, &project, user) {
        return answer(404, json!({"message": "404 Project Not Found"}));
    }
    if matches!(method, "POST" | "PUT" | "DELETE") && user.is_none() {
        return answer(401, json!({"message": "401 Unauthorized"}));
    }
    let kind = match *what {
        "issues" => ItemKind::Issue,
        "merge_requests" => ItemKind::ChangeRequest,
        _ => return not_found(),
    };
    let key = (Api::GitLab, project.clone());
    let Ok(n) = n.parse::<u64>() else {
        return not_found();
    };
    let exists = s.projects[&key]
        .items
        .get(&n)
        .is_some_and(|i| i.kind == kind);
    if !exists {
        return answer(404, json!({"message": "404 Not found"}));
    }
    match (method, rest) {
        ("GET", []) => {
            let item = &s.projects[&key].items[&n];
            let web = if kind == ItemKind::Issue {
                "issues"
            } else {
                "merge_requests"
            };
            answer(
                200,
                json!({
                    "id": 700 + n,
                    "iid": n,
                    "project_id": 1,
                    "title": item.title,
                    "description": item.body,
                    "state": if item.state == "open" { "opened" } else { "closed" },
                    "labels": item.labels,
                    "author": {"id": 1, "username": item.author, "name": item.author},
                    "web_url": format!("http://{host}/{project}/-/{web}/{n}"),
                    "created_at": "2026-01-01T00:00:00Z",
                    "updated_at": "2026-01-01T00:00:00Z",
                    "user_notes_count": item.comments.iter().filter(|c| !c.system).count(),
                }),
            )
        }
        ("PUT", []) => {
            let now_labels = {
                let Some(item) = s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)) else {
                    return not_found();
                };
                if let Some(add) = body.get("add_labels").and_then(Value::as_str) {
                    for l in add.split(',').map(str::trim).filter(|l| !l.is_empty()) {
                        if !item.labels.iter().any(|x| x == l) {
                            item.labels.push(l.to_string());
                        }
                    }
                }
                item.labels.clone()
            };
            let item = &s.projects[&key].items[&n];
            answer(
                200,
                json!({
                    "id": 700 + n, "iid": n, "project_id": 1, "title": item.title,
                    "description": item.body, "state": "opened", "labels": now_labels,
                    "author": {"id": 1, "username": item.author, "name": item.author},
                    "web_url": format!("http://{host}/{project}/-/issues/{n}"),
                }),
            )
        }
        ("GET", ["notes"]) => {
            let item = &s.projects[&key].items[&n];
            let notes = item.comments.iter().map(|c| gl_note(c, kind)).collect();
            page(s, Api::GitLab, notes, query, host, "/gl/api/v4", path)
        }
        ("POST", ["notes"]) => {
            let Some(text) = body.get("body").and_then(Value::as_str) else {
                return answer(400, json!({"error": "body is missing"}));
            };
            let c = s.comment(user.unwrap_or_default(), text);
            let Some(item) = s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)) else {
                return not_found();
            };
            item.comments.push(c.clone());
            answer(201, gl_note(&c, kind))
        }
        ("PUT", ["notes", id]) => {
            let Some(text) = body.get("body").and_then(Value::as_str) else {
                return answer(400, json!({"error": "body is missing"}));
            };
            let now = s.now();
            let id: u64 = id.parse().unwrap_or(0);
            let Some(item) = s.projects.get_mut(&key).and_then(|p| p.items.get_mut(&n)) else {
                return not_found();
            };
            match item.comments.iter_mut().find(|c| c.id == id) {
                Some(c) if Some(c.author.as_str()) != user => {
                    answer(403, json!({"message": "403 Forbidden"}))
                }
                Some(c) => {
                    c.body = text.to_string();
                    c.updated_at = now;
                    let c = c.clone();
                    answer(200, gl_note(&c, kind))
                }
                None => answer(404, json!({"message": "404 Note Not Found"})),
            }
        }
        _ => not_found(),
    }
}
