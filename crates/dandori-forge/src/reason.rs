//! Reason codes of the forge integration (docs/forges.md lists them all).

pub const FORGE_REF_INVALID: &str = "FORGE_REF_INVALID";
pub const FORGE_CONFIG_INVALID: &str = "FORGE_CONFIG_INVALID";
pub const FORGE_UNAUTHORIZED: &str = "FORGE_UNAUTHORIZED";
pub const FORGE_FORBIDDEN: &str = "FORGE_FORBIDDEN";
pub const FORGE_NOT_FOUND: &str = "FORGE_NOT_FOUND";
pub const FORGE_RATE_LIMITED: &str = "FORGE_RATE_LIMITED";
pub const FORGE_HTTP_ERROR: &str = "FORGE_HTTP_ERROR";
pub const FORGE_UNREACHABLE: &str = "FORGE_UNREACHABLE";
pub const FORGE_RESPONSE_INVALID: &str = "FORGE_RESPONSE_INVALID";
pub const FORGE_OPERATION_NOT_PERMITTED: &str = "FORGE_OPERATION_NOT_PERMITTED";
pub const FORGE_PERMISSION_DENIED: &str = "FORGE_PERMISSION_DENIED";
pub const FORGE_RECORD_INVALID: &str = "FORGE_RECORD_INVALID";
pub const FORGE_IO_ERROR: &str = "FORGE_IO_ERROR";
/// `git push` of the work branch failed (no `origin`, authentication, network).
pub const FORGE_PUSH_FAILED: &str = "FORGE_PUSH_FAILED";
/// `git push` refused: the remote branch moved since dandori last pushed, or is protected.
pub const FORGE_PUSH_REJECTED: &str = "FORGE_PUSH_REJECTED";
/// `--open-pr` on a work branch without commits beyond the base.
pub const FORGE_NOTHING_TO_PUBLISH: &str = "FORGE_NOTHING_TO_PUBLISH";
/// `dandori ci`: the event does not ask dandori for anything (not an error).
pub const CI_EVENT_IGNORED: &str = "CI_EVENT_IGNORED";
/// `dandori ci`: the event payload or the CI variables are missing or broken.
pub const CI_EVENT_INVALID: &str = "CI_EVENT_INVALID";
/// A check before slow work failed (agent program, git identity, token, remote).
pub const PREFLIGHT_FAILED: &str = "PREFLIGHT_FAILED";
pub const FORGE_INTERNAL: &str = "FORGE_INTERNAL";
pub const REVISION_NO_CHANGES: &str = "REVISION_NO_CHANGES";
pub const REVISION_INVALID: &str = "REVISION_INVALID";
/// A model-written revision adds a command the policy does not allow outright.
pub const REVISION_COMMAND_REFUSED: &str = "REVISION_COMMAND_REFUSED";
pub const REVISION_LIMIT_REACHED: &str = "REVISION_LIMIT_REACHED";
pub const APPROVAL_PENDING: &str = "APPROVAL_PENDING";
pub const APPROVAL_TIMEOUT: &str = "APPROVAL_TIMEOUT";

/// Every code, for the documentation check.
pub const ALL: &[&str] = &[
    FORGE_REF_INVALID,
    FORGE_CONFIG_INVALID,
    FORGE_UNAUTHORIZED,
    FORGE_FORBIDDEN,
    FORGE_NOT_FOUND,
    FORGE_RATE_LIMITED,
    FORGE_HTTP_ERROR,
    FORGE_UNREACHABLE,
    FORGE_RESPONSE_INVALID,
    FORGE_OPERATION_NOT_PERMITTED,
    FORGE_PERMISSION_DENIED,
    FORGE_RECORD_INVALID,
    FORGE_IO_ERROR,
    FORGE_PUSH_FAILED,
    FORGE_PUSH_REJECTED,
    FORGE_NOTHING_TO_PUBLISH,
    CI_EVENT_IGNORED,
    CI_EVENT_INVALID,
    PREFLIGHT_FAILED,
    FORGE_INTERNAL,
    REVISION_NO_CHANGES,
    REVISION_INVALID,
    REVISION_COMMAND_REFUSED,
    REVISION_LIMIT_REACHED,
    APPROVAL_PENDING,
    APPROVAL_TIMEOUT,
];
