//! The REST clients: GitHub REST v3 and GitLab v4 over one HTTP core.
//!
//! * **Base URL**: GitHub `GITHUB_API_URL` (as in GitHub Actions) > config
//!   `forges.github.api_url` > `https://HOST/api/v3` for a GitHub Enterprise URL
//!   reference > `https://api.github.com`. GitLab `CI_API_V4_URL` > `GITLAB_API_URL`
//!   > `forges.gitlab.api_url` > `https://HOST/api/v4` > `https://gitlab.com/api/v4`.
//! * **Token**: the variable named by `forges.<forge>.token_env`, else
//!   `GITHUB_TOKEN` then `GH_TOKEN` / `GITLAB_TOKEN`. Read from the environment
//!   only; `Debug` never shows it.
//! * **Pagination**: `Link: <…>; rel="next"` (both forges), else GitLab's
//!   `X-Next-Page`. A next link outside the API base is refused (the token would
//!   travel with it).
//! * **Rate limits**: 429, or 403 with `Retry-After` or `X-RateLimit-Remaining: 0`
//!   (`RateLimit-Remaining` on GitLab): wait `Retry-After` seconds or until
//!   `X-RateLimit-Reset` / `RateLimit-Reset` while the total wait stays within
//!   `forges.rate_limit_wait`; beyond it, `FORGE_RATE_LIMITED`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use dandori_config::ForgesConfig;
use reqwest::header::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ForgeError;
use crate::reference::{Forge, ForgeRef, ItemKind};

/// Where a piece of human feedback came from (seed 000 §2.5 human reflection).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CommentSource {
    IssueComment,
    PrReview,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
    pub source: CommentSource,
    /// Written by a bot: a GitHub user of type `Bot` (`…[bot]`, e.g.
    /// `github-actions[bot]`) or with `performed_via_github_app`; a GitLab
    /// project / group access token's bot user (`project_N_bot_…`).
    #[serde(default)]
    pub by_bot: bool,
}

/// Who the forge token acts as; decides which comments are dandori's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Identity {
    /// A person's token (or a GitLab access token's bot user): `GET /user` answered.
    User(String),
    /// A GitHub App installation token (GitHub Actions' `GITHUB_TOKEN`): `GET
    /// /user` answers 403. The login is `SLUG[bot]` when `GET /app` names the
    /// app; None: any bot author (with dandori's marker) is dandori.
    Bot(Option<String>),
}

impl Identity {
    /// Whether `c` was written with this identity.
    pub fn owns(&self, c: &Comment) -> bool {
        match self {
            Identity::User(me) | Identity::Bot(Some(me)) => c.author.eq_ignore_ascii_case(me),
            Identity::Bot(None) => c.by_bot,
        }
    }

    /// The login, when known.
    pub fn login(&self) -> Option<&str> {
        match self {
            Identity::User(me) | Identity::Bot(Some(me)) => Some(me),
            Identity::Bot(None) => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub reference: ForgeRef,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub author: String,
    pub state: String,
    pub web_url: String,
    pub comments: Vec<Comment>,
}

/// The resolved API location and credentials of one forge.
#[derive(Clone)]
pub struct ForgeSettings {
    pub forge: Forge,
    /// The API root without a trailing slash.
    pub api_url: String,
    /// Where `api_url` came from (a variable name, a config key, `default`).
    pub api_url_origin: String,
    token: Option<String>,
    /// The variable the token was read from.
    pub token_var: Option<String>,
    pub rate_limit_wait: Duration,
    /// Masks every comment body before it is posted: the token, the secret
    /// variables of the environment and credential shapes, in every form.
    masker: dandori_trace::Masker,
}

impl std::fmt::Debug for ForgeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ForgeSettings")
            .field("forge", &self.forge)
            .field("api_url", &self.api_url)
            .field("token_var", &self.token_var)
            .field("token", &self.token.as_ref().map(|_| "***"))
            .finish()
    }
}

impl ForgeSettings {
    /// Resolves the API URL and token for `r` from the environment and config.
    pub fn resolve(
        r: &ForgeRef,
        config: &ForgesConfig,
        env: &BTreeMap<String, String>,
    ) -> Result<ForgeSettings, ForgeError> {
        let get = |k: &str| env.get(k).filter(|v| !v.trim().is_empty()).cloned();
        let scheme = r.scheme.clone().unwrap_or_else(|| "https".to_string());
        let (url_vars, endpoint, token_vars, derived, default): (&[&str], _, Vec<String>, _, _) =
            match r.forge {
                Forge::GitHub => (
                    &["GITHUB_API_URL"],
                    &config.github,
                    vec!["GITHUB_TOKEN".into(), "GH_TOKEN".into()],
                    r.host.as_ref().map(|h| format!("{scheme}://{h}/api/v3")),
                    "https://api.github.com",
                ),
                Forge::GitLab => (
                    &["CI_API_V4_URL", "GITLAB_API_URL"],
                    &config.gitlab,
                    vec!["GITLAB_TOKEN".into()],
                    r.host.as_ref().map(|h| format!("{scheme}://{h}/api/v4")),
                    "https://gitlab.com/api/v4",
                ),
            };
        let key = match r.forge {
            Forge::GitHub => "forges.github",
            Forge::GitLab => "forges.gitlab",
        };
        let from_env = url_vars
            .iter()
            .find_map(|v| get(v).map(|u| (u, (*v).to_string())));
        let (api_url, origin) = match (from_env, &endpoint.api_url, derived) {
            (Some(found), _, _) => found,
            (None, Some(u), _) => (u.clone(), format!("{key}.api_url")),
            (None, None, Some(d)) => (d, "the reference's host".to_string()),
            (None, None, None) => (default.to_string(), "default".to_string()),
        };
        if !(api_url.starts_with("http://") || api_url.starts_with("https://")) {
            return Err(ForgeError::InvalidBaseUrl {
                origin,
                url: api_url,
            });
        }
        let token_vars = match &endpoint.token_env {
            Some(v) => vec![v.clone()],
            None => token_vars,
        };
        let found = token_vars
            .iter()
            .find_map(|v| get(v).map(|t| (t, v.clone())));
        Ok(ForgeSettings {
            forge: r.forge,
            api_url: api_url.trim_end_matches('/').to_string(),
            api_url_origin: origin,
            token_var: found.as_ref().map(|(_, v)| v.clone()),
            masker: dandori_trace::Masker::default()
                .with_env_secrets(env)
                .with_literal_secrets(found.as_ref().map(|(t, _)| t.clone())),
            token: found.map(|(t, _)| t),
            rate_limit_wait: Duration::from_secs(config.rate_limit_wait),
        })
    }

    /// The token's value, for registering with the trace masker.
    pub fn token_value(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// Where the token is expected, for error hints.
    pub fn token_hint(&self) -> String {
        match (&self.token_var, self.forge) {
            (Some(v), _) => format!("the token in {v} was not accepted"),
            (None, Forge::GitHub) => {
                "no token: set GITHUB_TOKEN or GH_TOKEN (or name the variable in forges.github.token_env)".to_string()
            }
            (None, Forge::GitLab) => {
                "no token: set GITLAB_TOKEN (or name the variable in forges.gitlab.token_env)"
                    .to_string()
            }
        }
    }
}

/// Pages read at most from one listing (100 items a page).
const MAX_PAGES: usize = 100;
/// Attempts of one request through rate limits.
const MAX_ATTEMPTS: usize = 6;

/// A client for one forge.
#[derive(Debug)]
pub struct ForgeClient {
    settings: ForgeSettings,
    http: reqwest::Client,
    waited: Mutex<Duration>,
    identity: Mutex<Option<Identity>>,
}

pub(crate) struct Reply {
    pub(crate) headers: HeaderMap,
    pub(crate) body: Value,
}

impl ForgeClient {
    pub fn new(settings: ForgeSettings) -> Result<ForgeClient, ForgeError> {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(60))
            .connect_timeout(Duration::from_secs(15))
            .user_agent(concat!("dandori/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ForgeError::Internal(format!("HTTP client: {e}")))?;
        Ok(ForgeClient {
            settings,
            http,
            waited: Mutex::new(Duration::ZERO),
            identity: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &ForgeSettings {
        &self.settings
    }

    /// The total time spent waiting for rate limits so far.
    pub fn rate_limit_waited(&self) -> Duration {
        self.waited.lock().map(|w| *w).unwrap_or_default()
    }

    /// The login / username of the token's user.
    pub fn whoami(&self) -> Result<String, ForgeError> {
        block_on(async {
            let r = self.send("GET", "/user", None).await?;
            let field = match self.settings.forge {
                Forge::GitHub => "login",
                Forge::GitLab => "username",
            };
            str_field(&r.body, field, "GET", "/user")
        })
    }

    /// Who the token acts as (asked once): `GET /user` where it answers; on
    /// GitHub a 403 there means an installation token (GitHub Actions'
    /// `GITHUB_TOKEN`, a GitHub App's), and `GET /app` names the app when the
    /// token is the app's JWT. `GET /app` refusing (401: not a JWT) leaves a bot
    /// of unknown name.
    pub fn identity(&self) -> Result<Identity, ForgeError> {
        if let Some(i) = self.identity.lock().ok().and_then(|i| i.clone()) {
            return Ok(i);
        }
        let found = block_on(async {
            match (self.send("GET", "/user", None).await, self.settings.forge) {
                (Ok(r), Forge::GitHub) => {
                    Ok(Identity::User(str_field(&r.body, "login", "GET", "/user")?))
                }
                (Ok(r), Forge::GitLab) => Ok(Identity::User(str_field(
                    &r.body, "username", "GET", "/user",
                )?)),
                (Err(ForgeError::Forbidden { .. }), Forge::GitHub) => {
                    match self.send("GET", "/app", None).await {
                        Ok(r) => Ok(Identity::Bot(Some(format!(
                            "{}[bot]",
                            str_field(&r.body, "slug", "GET", "/app")?
                        )))),
                        Err(
                            ForgeError::Unauthorized { .. }
                            | ForgeError::Forbidden { .. }
                            | ForgeError::NotFound { .. },
                        ) => Ok(Identity::Bot(None)),
                        Err(e) => Err(e),
                    }
                }
                (Err(e), _) => Err(e),
            }
        })?;
        if let Ok(mut i) = self.identity.lock() {
            *i = Some(found.clone());
        }
        Ok(found)
    }

    /// The issue / PR / MR with its labels and every comment (and, for a change
    /// request, its reviews), oldest first.
    pub fn issue(&self, r: &ForgeRef) -> Result<Issue, ForgeError> {
        block_on(async {
            let path = self.item_path(r);
            let item = self.send("GET", &path, None).await?.body;
            let comments = self.comments_async(r).await?;
            self.to_issue(r, &item, comments, &path)
        })
    }

    /// Every comment (and review) of the item, oldest first.
    pub fn comments(&self, r: &ForgeRef) -> Result<Vec<Comment>, ForgeError> {
        block_on(self.comments_async(r))
    }

    pub fn create_comment(&self, r: &ForgeRef, body: &str) -> Result<Comment, ForgeError> {
        block_on(async {
            let path = format!("{}/{}", self.item_path(r), self.comments_segment());
            let body = self.settings.masker.mask_str(body);
            let reply = self
                .send("POST", &path, Some(json!({ "body": body })))
                .await?;
            self.to_comment(&reply.body, CommentSource::IssueComment, "POST", &path)
        })
    }

    pub fn update_comment(&self, r: &ForgeRef, id: u64, body: &str) -> Result<Comment, ForgeError> {
        block_on(async {
            let (method, path) = match self.settings.forge {
                Forge::GitHub => (
                    "PATCH",
                    format!("/repos/{}/issues/comments/{id}", r.project),
                ),
                Forge::GitLab => ("PUT", format!("{}/notes/{id}", self.item_path(r))),
            };
            let body = self.settings.masker.mask_str(body);
            let reply = self
                .send(method, &path, Some(json!({ "body": body })))
                .await?;
            self.to_comment(&reply.body, CommentSource::IssueComment, method, &path)
        })
    }

    pub fn add_label(&self, r: &ForgeRef, label: &str) -> Result<(), ForgeError> {
        block_on(async {
            match self.settings.forge {
                Forge::GitHub => {
                    let path = format!("/repos/{}/issues/{}/labels", r.project, r.number);
                    self.send("POST", &path, Some(json!({ "labels": [label] })))
                        .await?;
                }
                Forge::GitLab => {
                    let path = self.item_path(r);
                    self.send("PUT", &path, Some(json!({ "add_labels": label })))
                        .await?;
                }
            }
            Ok(())
        })
    }

    /// Whether `user` belongs to `team`: a GitHub team `ORG/TEAM` (an active
    /// membership) or a GitLab group path (a member, inherited or direct).
    pub fn is_member(&self, team: &str, user: &str) -> Result<bool, ForgeError> {
        block_on(async {
            let path = match self.settings.forge {
                Forge::GitHub => {
                    let Some((org, slug)) = team.split_once('/') else {
                        return Ok(false);
                    };
                    format!("/orgs/{org}/teams/{slug}/memberships/{user}")
                }
                Forge::GitLab => {
                    format!("/groups/{}/members/all?query={user}", encode_project(team))
                }
            };
            match self.send("GET", &path, None).await {
                Ok(r) => Ok(match self.settings.forge {
                    Forge::GitHub => r.body.get("state").and_then(Value::as_str) == Some("active"),
                    Forge::GitLab => r.body.as_array().is_some_and(|members| {
                        members.iter().any(|m| {
                            m.get("username")
                                .and_then(Value::as_str)
                                .is_some_and(|u| u.eq_ignore_ascii_case(user))
                        })
                    }),
                }),
                Err(ForgeError::NotFound { .. }) => Ok(false),
                Err(e) => Err(e),
            }
        })
    }

    // ---- paths and shapes ----

    fn item_path(&self, r: &ForgeRef) -> String {
        match (self.settings.forge, r.kind) {
            (Forge::GitHub, _) => format!("/repos/{}/issues/{}", r.project, r.number),
            (Forge::GitLab, ItemKind::Issue) => {
                format!(
                    "/projects/{}/issues/{}",
                    encode_project(&r.project),
                    r.number
                )
            }
            (Forge::GitLab, ItemKind::ChangeRequest) => format!(
                "/projects/{}/merge_requests/{}",
                encode_project(&r.project),
                r.number
            ),
        }
    }

    fn comments_segment(&self) -> &'static str {
        match self.settings.forge {
            Forge::GitHub => "comments",
            Forge::GitLab => "notes",
        }
    }

    async fn comments_async(&self, r: &ForgeRef) -> Result<Vec<Comment>, ForgeError> {
        let path = match self.settings.forge {
            Forge::GitHub => format!("{}/comments?per_page=100", self.item_path(r)),
            Forge::GitLab => format!(
                "{}/notes?per_page=100&sort=asc&order_by=created_at",
                self.item_path(r)
            ),
        };
        let mut out = Vec::new();
        for v in self.get_all(&path).await? {
            if self.settings.forge == Forge::GitLab {
                // System notes ("added label …") are not comments.
                if v.get("system").and_then(Value::as_bool) == Some(true) {
                    continue;
                }
                let review = r.kind == ItemKind::ChangeRequest
                    && v.get("type").and_then(Value::as_str) == Some("DiffNote");
                let source = if review {
                    CommentSource::PrReview
                } else {
                    CommentSource::IssueComment
                };
                out.push(self.to_comment(&v, source, "GET", &path)?);
            } else {
                out.push(self.to_comment(&v, CommentSource::IssueComment, "GET", &path)?);
            }
        }
        if self.settings.forge == Forge::GitHub && r.kind == ItemKind::ChangeRequest {
            let path = format!(
                "/repos/{}/pulls/{}/reviews?per_page=100",
                r.project, r.number
            );
            for v in self.get_all(&path).await? {
                // Reviews without a body (a bare approval) carry no feedback text
                // but still count for approval.
                let mut c = self.to_comment(&v, CommentSource::PrReview, "GET", &path)?;
                if let Some(state) = v.get("state").and_then(Value::as_str)
                    && c.body.trim().is_empty()
                    && state == "APPROVED"
                {
                    c.body = "/approve".to_string();
                }
                out.push(c);
            }
            out.sort_by(|a, b| a.created_at.cmp(&b.created_at));
        }
        Ok(out)
    }

    fn to_issue(
        &self,
        r: &ForgeRef,
        v: &Value,
        comments: Vec<Comment>,
        path: &str,
    ) -> Result<Issue, ForgeError> {
        let (body_field, author_field, url_field) = match self.settings.forge {
            Forge::GitHub => ("body", "/user/login", "html_url"),
            Forge::GitLab => ("description", "/author/username", "web_url"),
        };
        let labels = match v.get("labels") {
            Some(Value::Array(items)) => items
                .iter()
                .filter_map(|l| match l {
                    Value::String(s) => Some(s.clone()),
                    Value::Object(o) => o.get("name").and_then(Value::as_str).map(str::to_string),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        Ok(Issue {
            reference: r.clone(),
            title: str_field(v, "title", "GET", path)?,
            body: v
                .get(body_field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            labels,
            author: v
                .pointer(author_field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            state: v
                .get("state")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            web_url: v
                .get(url_field)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            comments,
        })
    }

    fn to_comment(
        &self,
        v: &Value,
        source: CommentSource,
        method: &str,
        path: &str,
    ) -> Result<Comment, ForgeError> {
        let author_ptr = match self.settings.forge {
            Forge::GitHub => "/user/login",
            Forge::GitLab => "/author/username",
        };
        let id =
            v.get("id")
                .and_then(Value::as_u64)
                .ok_or_else(|| ForgeError::InvalidResponse {
                    method: method.to_string(),
                    path: path.to_string(),
                    at: "id".to_string(),
                    message: "a comment without a numeric id".to_string(),
                })?;
        let created = v
            .get("created_at")
            .or_else(|| v.get("submitted_at"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let author = v
            .pointer(author_ptr)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let by_bot = match self.settings.forge {
            Forge::GitHub => {
                author.ends_with("[bot]")
                    || v.pointer("/user/type").and_then(Value::as_str) == Some("Bot")
                    || v.get("performed_via_github_app")
                        .is_some_and(|a| !a.is_null())
            }
            Forge::GitLab => {
                v.pointer("/author/bot").and_then(Value::as_bool) == Some(true)
                    || is_gitlab_bot_username(&author)
            }
        };
        Ok(Comment {
            id,
            by_bot,
            author,
            body: v
                .get("body")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            updated_at: v
                .get("updated_at")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| created.clone()),
            created_at: created,
            source,
        })
    }

    // ---- HTTP core ----

    async fn get_all(&self, first: &str) -> Result<Vec<Value>, ForgeError> {
        let mut out = Vec::new();
        let mut next = Some(first.to_string());
        let mut pages = 0;
        while let Some(path) = next.take() {
            pages += 1;
            let reply = self.send("GET", &path, None).await?;
            match reply.body {
                Value::Array(items) => out.extend(items),
                _ => {
                    return Err(ForgeError::InvalidResponse {
                        method: "GET".into(),
                        path,
                        at: "$".into(),
                        message: "expected a JSON array".into(),
                    });
                }
            }
            if pages >= MAX_PAGES {
                break;
            }
            next = self.next_page(&path, &reply.headers)?;
        }
        Ok(out)
    }

    /// The path (relative to the API root) of the next page, if any.
    fn next_page(&self, path: &str, headers: &HeaderMap) -> Result<Option<String>, ForgeError> {
        if let Some(link) = headers.get("link").and_then(|v| v.to_str().ok())
            && let Some(url) = next_link(link)
        {
            return match url.strip_prefix(&self.settings.api_url) {
                Some(rest) if rest.starts_with('/') => Ok(Some(rest.to_string())),
                _ => Err(ForgeError::ForeignLink {
                    path: path.to_string(),
                    link: url,
                    base: self.settings.api_url.clone(),
                }),
            };
        }
        let next = headers
            .get("x-next-page")
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty());
        Ok(next
            .and_then(|n| n.parse::<u64>().ok())
            .map(|n| set_page(path, n)))
    }

    pub(crate) async fn send_json(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, ForgeError> {
        Ok(self.send(method, path, body).await?.body)
    }

    pub(crate) async fn send(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Reply, ForgeError> {
        // A path under the API root, or (GitHub's GraphQL endpoint, outside the
        // REST root on GitHub Enterprise) a whole URL.
        let url = if path.starts_with("http://") || path.starts_with("https://") {
            path.to_string()
        } else {
            format!("{}{path}", self.settings.api_url)
        };
        let shown = path.split('?').next().unwrap_or(path).to_string();
        let m = reqwest::Method::from_bytes(method.as_bytes())
            .map_err(|e| ForgeError::Internal(e.to_string()))?;
        for _attempt in 0..MAX_ATTEMPTS {
            let mut req = self.http.request(m.clone(), &url);
            req = match self.settings.forge {
                Forge::GitHub => req
                    .header("accept", "application/vnd.github+json")
                    .header("x-github-api-version", "2022-11-28"),
                Forge::GitLab => req.header("accept", "application/json"),
            };
            if let Some(token) = &self.settings.token {
                let (name, value) = match self.settings.forge {
                    Forge::GitHub => ("authorization", format!("Bearer {token}")),
                    Forge::GitLab => ("private-token", token.clone()),
                };
                let mut v = HeaderValue::from_str(&value).map_err(|_| {
                    ForgeError::Internal(
                        "the token contains characters not allowed in a header".into(),
                    )
                })?;
                v.set_sensitive(true);
                req = req.header(name, v);
            }
            if let Some(b) = &body {
                req = req.json(b);
            }
            let resp = req.send().await.map_err(|e| ForgeError::Transport {
                method: method.to_string(),
                path: shown.clone(),
                message: format!("cannot reach {}: {}", self.settings.api_url, root_cause(&e)),
            })?;
            let status = resp.status().as_u16();
            let headers = resp.headers().clone();
            let text = resp.text().await.unwrap_or_default();
            if (200..300).contains(&status) {
                let body = if text.trim().is_empty() {
                    Value::Null
                } else {
                    serde_json::from_str(&text).map_err(|e| ForgeError::InvalidResponse {
                        method: method.to_string(),
                        path: shown.clone(),
                        at: format!("line {} column {}", e.line(), e.column()),
                        message: format!("not JSON: {e}"),
                    })?
                };
                return Ok(Reply { headers, body });
            }
            let message = error_message(&text);
            if let Some(wait) = rate_limit_wait(status, &headers) {
                let within = {
                    let mut waited = self
                        .waited
                        .lock()
                        .map_err(|_| ForgeError::Internal("rate limit state poisoned".into()))?;
                    let within = *waited + wait <= self.settings.rate_limit_wait;
                    if within {
                        *waited += wait;
                    }
                    within
                };
                if !within {
                    return Err(ForgeError::RateLimited {
                        method: method.to_string(),
                        path: shown,
                        status,
                        reset_secs: wait.as_secs(),
                        budget_secs: self.settings.rate_limit_wait.as_secs(),
                    });
                }
                tokio::time::sleep(wait).await;
                continue;
            }
            let (method, path) = (method.to_string(), shown);
            return Err(match status {
                401 => ForgeError::Unauthorized {
                    method,
                    path,
                    hint: self.settings.token_hint(),
                },
                403 => ForgeError::Forbidden {
                    method,
                    path,
                    message: format!("{message} ({})", self.settings.token_hint_short()),
                },
                404 => ForgeError::NotFound {
                    method,
                    path,
                    hint: format!(
                        "no such item at {}, or a private repository the token cannot see ({})",
                        self.settings.api_url,
                        self.settings.token_hint_short()
                    ),
                },
                _ => ForgeError::Http {
                    method,
                    path,
                    status,
                    message,
                },
            });
        }
        Err(ForgeError::RateLimited {
            method: method.to_string(),
            path: shown,
            status: 429,
            reset_secs: 0,
            budget_secs: self.settings.rate_limit_wait.as_secs(),
        })
    }
}

impl ForgeSettings {
    fn token_hint_short(&self) -> String {
        match &self.token_var {
            Some(v) => format!("token from {v}"),
            None => self.token_hint(),
        }
    }
}

/// How long a rate-limited response asks to wait, or None when it is not a rate limit.
fn rate_limit_wait(status: u16, headers: &HeaderMap) -> Option<Duration> {
    if status != 429 && status != 403 {
        return None;
    }
    let h = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(secs) = h("retry-after").and_then(|v| v.parse::<u64>().ok()) {
        return Some(Duration::from_secs(secs));
    }
    let remaining = h("x-ratelimit-remaining").or_else(|| h("ratelimit-remaining"));
    let reset = h("x-ratelimit-reset").or_else(|| h("ratelimit-reset"));
    if remaining == Some("0")
        && let Some(reset) = reset.and_then(|v| v.parse::<i64>().ok())
    {
        let now = chrono::Utc::now().timestamp();
        return Some(Duration::from_secs(
            u64::try_from(reset - now).unwrap_or(0).max(1),
        ));
    }
    // A 429 with no hint: GitHub asks for at least a minute.
    (status == 429).then(|| Duration::from_secs(60))
}

/// The `rel="next"` URL of a Link header.
fn next_link(link: &str) -> Option<String> {
    link.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params
            .split(';')
            .any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            })
            .then(|| {
                url.trim()
                    .trim_start_matches('<')
                    .trim_end_matches('>')
                    .to_string()
            })
    })
}

/// `path` with its `page` query parameter set to `n`.
fn set_page(path: &str, n: u64) -> String {
    let (base, query) = path.split_once('?').unwrap_or((path, ""));
    let mut params: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("page="))
        .map(str::to_string)
        .collect();
    params.push(format!("page={n}"));
    format!("{base}?{}", params.join("&"))
}

/// `project_123_bot_…` / `group_45_bot_…`: the users GitLab creates for project
/// and group access tokens.
pub(crate) fn is_gitlab_bot_username(name: &str) -> bool {
    ["project_", "group_"].iter().any(|p| {
        name.strip_prefix(p)
            .and_then(|rest| rest.split_once("_bot"))
            .is_some_and(|(id, _)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
    })
}

pub(crate) fn encode_project(project: &str) -> String {
    project.replace('/', "%2F")
}

fn error_message(text: &str) -> String {
    let v: Value = serde_json::from_str(text).unwrap_or(Value::Null);
    let m = v
        .get("message")
        .or_else(|| v.get("error"))
        .map(|m| match m {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .unwrap_or_else(|| text.chars().take(200).collect());
    m.chars().take(300).collect()
}

pub(crate) fn str_field(
    v: &Value,
    field: &str,
    method: &str,
    path: &str,
) -> Result<String, ForgeError> {
    v.get(field)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| ForgeError::InvalidResponse {
            method: method.to_string(),
            path: path.split('?').next().unwrap_or(path).to_string(),
            at: field.to_string(),
            message: "missing or not a string".to_string(),
        })
}

fn root_cause(e: &dyn std::error::Error) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

/// Runs a future to completion from synchronous code, on a fresh current-thread
/// runtime in a scoped thread (so it also works inside a runtime).
pub(crate) fn block_on<F, T>(future: F) -> Result<T, ForgeError>
where
    F: Future<Output = Result<T, ForgeError>> + Send,
    T: Send,
{
    std::thread::scope(|scope| {
        let handle = scope.spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ForgeError::Internal(format!("runtime: {e}")))?;
            rt.block_on(future)
        });
        handle
            .join()
            .unwrap_or_else(|_| Err(ForgeError::Internal("the HTTP thread panicked".into())))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_link_finds_rel_next() {
        let l = r#"<https://api.github.com/x?page=2>; rel="next", <https://api.github.com/x?page=5>; rel="last""#;
        assert_eq!(
            next_link(l).as_deref(),
            Some("https://api.github.com/x?page=2")
        );
        assert_eq!(next_link(r#"<https://a/x?page=1>; rel="prev""#), None);
    }

    #[test]
    fn set_page_replaces_page() {
        assert_eq!(
            set_page("/a?per_page=100&page=1", 2),
            "/a?per_page=100&page=2"
        );
        assert_eq!(set_page("/a", 3), "/a?page=3");
    }
}
