//! The one error type of the crate, each variant with its reason code.

use std::path::PathBuf;

use crate::reason;

#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    /// A reference that is neither a shorthand nor an issue / PR / MR URL.
    #[error(
        "{input:?} is not a forge reference: {reason} (use github:OWNER/REPO#N, github-pr:OWNER/REPO#N, gitlab:GROUP/PROJECT#N, gitlab-mr:GROUP/PROJECT!N or an issue / pull request / merge request URL)"
    )]
    InvalidRef { input: String, reason: String },
    /// A base URL that is not http(s).
    #[error("{origin}: API URL {url:?} must start with http:// or https://")]
    InvalidBaseUrl { origin: String, url: String },
    /// 401: the token is missing, expired or wrong.
    #[error("{method} {path}: 401 unauthorized: {hint}")]
    Unauthorized {
        method: String,
        path: String,
        hint: String,
    },
    /// 403 without a rate limit: the token may not do this.
    #[error("{method} {path}: 403 forbidden: {message}")]
    Forbidden {
        method: String,
        path: String,
        message: String,
    },
    /// 404: no such issue, or a private repository the token cannot see.
    #[error("{method} {path}: 404 not found: {hint}")]
    NotFound {
        method: String,
        path: String,
        hint: String,
    },
    /// A rate limit whose reset lies beyond the waiting budget.
    #[error(
        "{method} {path}: rate limited ({status}); the limit resets in {reset_secs} s, beyond the {budget_secs} s waiting budget (forges.rate_limit_wait)"
    )]
    RateLimited {
        method: String,
        path: String,
        status: u16,
        reset_secs: u64,
        budget_secs: u64,
    },
    /// Any other non-success status.
    #[error("{method} {path}: HTTP {status}: {message}")]
    Http {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    /// The connection failed.
    #[error("{method} {path}: {message}")]
    Transport {
        method: String,
        path: String,
        message: String,
    },
    /// A 2xx body that is not the documented shape.
    #[error("{method} {path}: unexpected response at {at}: {message}")]
    InvalidResponse {
        method: String,
        path: String,
        at: String,
        message: String,
    },
    /// A pagination link that leaves the API (the token would go elsewhere).
    #[error("{path}: the next-page link {link:?} leaves the API at {base}; refusing to follow it")]
    ForeignLink {
        path: String,
        link: String,
        base: String,
    },
    /// The operation is not in `forges.operations`, or a user may not do this.
    #[error("{0}")]
    OperationNotPermitted(String),
    /// A user who may not trigger / steer / approve.
    #[error("{0}")]
    PermissionDenied(String),
    /// The run directory has no forge record or a broken one.
    #[error("{}: {message}", path.display())]
    Record { path: PathBuf, message: String },
    /// The feedback asked for nothing dandori can apply offline.
    #[error("{0}")]
    NothingToRevise(String),
    /// The revised plan does not validate.
    #[error("the revised plan is invalid: {0}")]
    RevisionInvalid(String),
    /// `planning.revision.max_revisions` reached (seed 000 §10.4).
    #[error(
        "revision limit reached: {attempts} of max_revisions {max}; human intervention is required"
    )]
    RevisionLimit { attempts: u64, max: u64 },
    /// The revision waits for approval.
    #[error("{0}")]
    ApprovalPending(String),
    /// The approval window (`approval_timeout`) closed.
    #[error("{0}")]
    ApprovalTimeout(String),
    /// `git push` of the work branch failed (no remote, authentication, network);
    /// the branch stays local.
    #[error("git push to {remote} failed: {message} (the branch {branch} stays local)")]
    PushFailed {
        remote: String,
        branch: String,
        message: String,
    },
    /// `git push` was refused: the remote branch moved (someone else pushed) or
    /// is protected; the branch stays local.
    #[error("git push to {remote} was rejected: {message} (the branch {branch} stays local)")]
    PushRejected {
        remote: String,
        branch: String,
        message: String,
    },
    /// A check before slow work failed (no token, no `origin`, …).
    #[error("{0}")]
    Preflight(String),
    /// The work branch has no commit beyond the base: no pull request to open.
    #[error("{0}")]
    NothingToPublish(String),
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error("{0}")]
    Internal(String),
}

impl ForgeError {
    /// The reason code (documented in docs/forges.md).
    pub fn code(&self) -> &'static str {
        match self {
            ForgeError::InvalidRef { .. } => reason::FORGE_REF_INVALID,
            ForgeError::InvalidBaseUrl { .. } => reason::FORGE_CONFIG_INVALID,
            ForgeError::Unauthorized { .. } => reason::FORGE_UNAUTHORIZED,
            ForgeError::Forbidden { .. } => reason::FORGE_FORBIDDEN,
            ForgeError::NotFound { .. } => reason::FORGE_NOT_FOUND,
            ForgeError::RateLimited { .. } => reason::FORGE_RATE_LIMITED,
            ForgeError::Http { .. } => reason::FORGE_HTTP_ERROR,
            ForgeError::Transport { .. } => reason::FORGE_UNREACHABLE,
            ForgeError::InvalidResponse { .. } => reason::FORGE_RESPONSE_INVALID,
            ForgeError::ForeignLink { .. } => reason::FORGE_RESPONSE_INVALID,
            ForgeError::OperationNotPermitted(_) => reason::FORGE_OPERATION_NOT_PERMITTED,
            ForgeError::PermissionDenied(_) => reason::FORGE_PERMISSION_DENIED,
            ForgeError::Record { .. } => reason::FORGE_RECORD_INVALID,
            ForgeError::NothingToRevise(_) => reason::REVISION_NO_CHANGES,
            ForgeError::RevisionInvalid(_) => reason::REVISION_INVALID,
            ForgeError::RevisionLimit { .. } => reason::REVISION_LIMIT_REACHED,
            ForgeError::ApprovalPending(_) => reason::APPROVAL_PENDING,
            ForgeError::ApprovalTimeout(_) => reason::APPROVAL_TIMEOUT,
            ForgeError::PushFailed { .. } => reason::FORGE_PUSH_FAILED,
            ForgeError::PushRejected { .. } => reason::FORGE_PUSH_REJECTED,
            ForgeError::NothingToPublish(_) => reason::FORGE_NOTHING_TO_PUBLISH,
            ForgeError::Preflight(_) => reason::PREFLIGHT_FAILED,
            ForgeError::Fs(_) => reason::FORGE_IO_ERROR,
            ForgeError::Internal(_) => reason::FORGE_INTERNAL,
        }
    }

    /// The exit status of a command that failed on this error: 2 for what the
    /// user can fix in the invocation (a bad reference, no access), 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        let input = [
            reason::FORGE_REF_INVALID,
            reason::FORGE_CONFIG_INVALID,
            reason::FORGE_NOT_FOUND,
            reason::FORGE_UNAUTHORIZED,
            reason::FORGE_PERMISSION_DENIED,
            reason::FORGE_RECORD_INVALID,
            // A token, remote or scope to set up (docs/forges.md: exit 2).
            reason::PREFLIGHT_FAILED,
        ]
        .contains(&self.code());
        if input { 2 } else { 1 }
    }
}
