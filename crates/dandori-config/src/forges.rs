//! `forges:`: GitHub and GitLab as the task source (seed 000 §2.5, §13.3.1).
//!
//! Where the APIs are and which environment variable holds each token. A token
//! is never a config value: only the *name* of the variable is configurable, and
//! an untrusted repository's own config cannot set it (nor the API URL) at all
//! (the `_env` / `url` keys are stripped by [`crate::trust::filter_untrusted`]).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ForgesConfig {
    pub github: ForgeEndpoint,
    pub gitlab: ForgeEndpoint,
    /// Report back on the issue / pull request (plan summary, status, completion,
    /// the help label). Off unless asked (`--comment` or `true` here).
    pub comment: bool,
    /// Repository operations dandori may perform on the forge: `comment` (post
    /// and edit its own comments), `label` (add the help label),
    /// `pull_request` (push the work branch and open or update a pull / merge
    /// request: `dandori run --open-pr`). Anything not listed is refused with
    /// `FORGE_OPERATION_NOT_PERMITTED`.
    pub operations: Vec<ForgeOperation>,
    /// The longest total wait for a rate limit to reset, in seconds; a longer
    /// reset fails with `FORGE_RATE_LIMITED`.
    pub rate_limit_wait: u64,
}

impl Default for ForgesConfig {
    fn default() -> Self {
        ForgesConfig {
            github: ForgeEndpoint::default(),
            gitlab: ForgeEndpoint::default(),
            comment: false,
            operations: vec![
                ForgeOperation::Comment,
                ForgeOperation::Label,
                ForgeOperation::PullRequest,
            ],
            rate_limit_wait: 60,
        }
    }
}

/// One forge's API.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ForgeEndpoint {
    /// The REST API root (`https://ghe.example.com/api/v3`,
    /// `https://gitlab.example.com/api/v4`). The environment (`GITHUB_API_URL`;
    /// `CI_API_V4_URL`, `GITLAB_API_URL`) takes precedence.
    pub api_url: Option<String>,
    /// The environment variable holding the token (default `GITHUB_TOKEN`, then
    /// `GH_TOKEN`; `GITLAB_TOKEN`).
    pub token_env: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForgeOperation {
    Comment,
    Label,
    PullRequest,
}
