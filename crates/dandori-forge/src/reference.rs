//! Forge references: `github:OWNER/REPO#N`, `github-pr:OWNER/REPO#N`,
//! `gitlab:GROUP/SUB/PROJECT#N`, `gitlab-mr:GROUP/PROJECT!N`, and the web URLs of
//! issues, pull requests and merge requests (github.com, GitHub Enterprise,
//! gitlab.com, self-hosted GitLab).

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::ForgeError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Forge {
    GitHub,
    GitLab,
}

/// An issue, or a change request (a GitHub pull request / a GitLab merge request).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    Issue,
    ChangeRequest,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ForgeRef {
    pub forge: Forge,
    pub kind: ItemKind,
    /// `OWNER/REPO` on GitHub, the full project path (`group/sub/project`) on GitLab.
    pub project: String,
    pub number: u64,
    /// The web host of a URL reference (`github.example.com`), when not the public one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// The URL scheme of a URL reference (`http` for a local forge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
}

impl fmt::Display for ForgeRef {
    /// The canonical shorthand.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.forge, self.kind) {
            (Forge::GitHub, ItemKind::Issue) => {
                write!(f, "github:{}#{}", self.project, self.number)
            }
            (Forge::GitHub, ItemKind::ChangeRequest) => {
                write!(f, "github-pr:{}#{}", self.project, self.number)
            }
            (Forge::GitLab, ItemKind::Issue) => {
                write!(f, "gitlab:{}#{}", self.project, self.number)
            }
            (Forge::GitLab, ItemKind::ChangeRequest) => {
                write!(f, "gitlab-mr:{}!{}", self.project, self.number)
            }
        }
    }
}

impl ForgeRef {
    /// Parses a shorthand or a URL.
    pub fn parse(input: &str) -> Result<ForgeRef, ForgeError> {
        let s = input.trim();
        let bad = |reason: &str| ForgeError::InvalidRef {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        if s.starts_with("http://") || s.starts_with("https://") {
            return parse_url(s).map_err(|r| bad(&r));
        }
        let (prefix, rest) = s
            .split_once(':')
            .ok_or_else(|| bad("no `github:` / `gitlab:` prefix"))?;
        let (forge, kind, sep) = match prefix.to_ascii_lowercase().as_str() {
            "github" | "gh" => (Forge::GitHub, ItemKind::Issue, '#'),
            "github-pr" | "gh-pr" => (Forge::GitHub, ItemKind::ChangeRequest, '#'),
            "gitlab" | "gl" => (Forge::GitLab, ItemKind::Issue, '#'),
            "gitlab-mr" | "gl-mr" => (Forge::GitLab, ItemKind::ChangeRequest, '!'),
            other => return Err(bad(&format!("unknown prefix `{other}:`"))),
        };
        // `gitlab-mr:` accepts `#` too; `gitlab:` accepts `!` as a merge request.
        let (project, number, kind) = match rest.rsplit_once(sep) {
            Some((p, n)) => (p, n, kind),
            None if forge == Forge::GitLab && sep == '#' => match rest.rsplit_once('!') {
                Some((p, n)) => (p, n, ItemKind::ChangeRequest),
                None => return Err(bad("no `#N` (issue) or `!N` (merge request)")),
            },
            None if forge == Forge::GitLab => match rest.rsplit_once('#') {
                Some((p, n)) => (p, n, kind),
                None => return Err(bad("no `!N`")),
            },
            None => return Err(bad("no `#N`")),
        };
        let number = parse_number(number).map_err(|r| bad(&r))?;
        check_project(forge, project).map_err(|r| bad(&r))?;
        Ok(ForgeRef {
            forge,
            kind,
            project: project.to_string(),
            number,
            host: None,
            scheme: None,
        })
    }

    /// The request id: the reference as a plain id (`github-owner-repo-15`,
    /// `gitlab-mr-group-sub-project-7`), valid as a directory and branch name.
    pub fn request_id(&self) -> String {
        let kind = match (self.forge, self.kind) {
            (Forge::GitHub, ItemKind::Issue) => "github",
            (Forge::GitHub, ItemKind::ChangeRequest) => "github-pr",
            (Forge::GitLab, ItemKind::Issue) => "gitlab",
            (Forge::GitLab, ItemKind::ChangeRequest) => "gitlab-mr",
        };
        let mut project: String = self
            .project
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        while project.contains("--") {
            project = project.replace("--", "-");
        }
        let project = project.trim_matches('-');
        let mut id = format!("{kind}-{project}-{}", self.number);
        if id.len() > 100 {
            // Keep the end (the project name and number) distinct.
            id = format!("{kind}-{}", &id[id.len() - 90..]);
            id = id.replace("--", "-");
        }
        id
    }

    /// The seed 000 §9.3 task type: `github_issue`, `github_pr`, `gitlab`.
    pub fn task_type(&self) -> &'static str {
        match (self.forge, self.kind) {
            (Forge::GitHub, ItemKind::Issue) => "github_issue",
            (Forge::GitHub, ItemKind::ChangeRequest) => "github_pr",
            (Forge::GitLab, _) => "gitlab",
        }
    }

    /// A finer task type tried before [`ForgeRef::task_type`] when the config has it:
    /// `gitlab_issue` / `gitlab_mr`.
    pub fn specific_task_type(&self) -> Option<&'static str> {
        match (self.forge, self.kind) {
            (Forge::GitLab, ItemKind::Issue) => Some("gitlab_issue"),
            (Forge::GitLab, ItemKind::ChangeRequest) => Some("gitlab_mr"),
            _ => None,
        }
    }
}

fn parse_number(n: &str) -> Result<u64, String> {
    match n.trim().parse::<u64>() {
        Ok(v) if v > 0 => Ok(v),
        _ => Err(format!("`{n}` is not a positive issue number")),
    }
}

fn check_project(forge: Forge, project: &str) -> Result<(), String> {
    let parts: Vec<&str> = project.split('/').collect();
    let ok_part = |p: &&str| {
        !p.is_empty()
            && *p != "."
            && *p != ".."
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    if !parts.iter().all(ok_part) {
        return Err(format!(
            "`{project}` is not a project path (letters, digits, `-`, `_`, `.` between `/`)"
        ));
    }
    match forge {
        Forge::GitHub if parts.len() != 2 => Err(format!("`{project}` is not OWNER/REPO")),
        Forge::GitLab if parts.len() < 2 => Err(format!("`{project}` is not GROUP/PROJECT")),
        _ => Ok(()),
    }
}

/// `https://github.com/o/r/issues/1`, `…/pull/1`, `https://gitlab.example.com/g/s/p/-/issues/1`,
/// `…/-/merge_requests/1` (a trailing `#note_…`, query or path tail is ignored).
fn parse_url(url: &str) -> Result<ForgeRef, String> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| "not a URL".to_string())?;
    let rest = rest.split(['#', '?']).next().unwrap_or_default();
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() {
        return Err("the URL has no host".to_string());
    }
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // GitLab: everything before `/-/` is the project path.
    if let Some(dash) = segs.iter().position(|s| *s == "-") {
        let project = segs[..dash].join("/");
        let (kind, number) = match (segs.get(dash + 1), segs.get(dash + 2)) {
            (Some(&"issues"), Some(n)) => (ItemKind::Issue, n),
            (Some(&"merge_requests"), Some(n)) => (ItemKind::ChangeRequest, n),
            _ => return Err("a GitLab URL must end in /-/issues/N or /-/merge_requests/N".into()),
        };
        check_project(Forge::GitLab, &project)?;
        return Ok(ForgeRef {
            forge: Forge::GitLab,
            kind,
            project,
            number: parse_number(number)?,
            host: public_host(host, "gitlab.com"),
            scheme: (scheme != "https").then(|| scheme.to_string()),
        });
    }
    match segs.as_slice() {
        [owner, repo, what, n, ..] if matches!(*what, "issues" | "pull" | "pulls") => {
            let project = format!("{owner}/{repo}");
            check_project(Forge::GitHub, &project)?;
            Ok(ForgeRef {
                forge: if host.contains("gitlab") {
                    Forge::GitLab
                } else {
                    Forge::GitHub
                },
                kind: if *what == "issues" {
                    ItemKind::Issue
                } else {
                    ItemKind::ChangeRequest
                },
                project,
                number: parse_number(n)?,
                host: public_host(host, "github.com"),
                scheme: (scheme != "https").then(|| scheme.to_string()),
            })
        }
        _ => Err(
            "a GitHub URL must look like https://HOST/OWNER/REPO/issues/N or …/pull/N".to_string(),
        ),
    }
}

fn public_host(host: &str, public: &str) -> Option<String> {
    let h = host.to_ascii_lowercase();
    (h != public && h != format!("www.{public}")).then_some(h)
}
