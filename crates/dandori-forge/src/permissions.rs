//! Seed 000 §12.3 permissions, applied to forge users.
//!
//! * **trigger** (plan from an issue): the issue's author must be in
//!   `planning.permissions.allowed_users` when that list is not empty.
//! * **steer** (comments become part of the request, or human feedback for
//!   `dandori revise --from-issue`): users in `allowed_users`; when it is empty,
//!   only the issue's author.
//! * **approve** (an approving comment for a paused revision): users in
//!   `auto_execution_allowed` or `allowed_users`; when both are empty, the issue's
//!   author. Users in `always_require_approval` never approve.
//! * **approval needed**: `planning.revision.require_human_approval`, or the
//!   author is in `always_require_approval`, or `auto_execution_allowed` is not
//!   empty and the author is not in it.
//!
//! An entry with a `/` (`my-org/reviewers`, `@my-org/reviewers`, a GitLab group
//! path) is a team / group, resolved through the forge; `*` is everyone.

use dandori_config::{ForgeOperation, ForgesConfig, PermissionsConfig};

use crate::ForgeError;

/// Team membership, asked of the forge: `(team, user) → member?`.
pub type Membership<'a> = &'a dyn Fn(&str, &str) -> Result<bool, ForgeError>;

pub struct Permissions<'a> {
    pub config: &'a PermissionsConfig,
    /// The author of the issue / pull request.
    pub issue_author: &'a str,
    pub membership: Option<Membership<'a>>,
}

impl<'a> Permissions<'a> {
    pub fn new(config: &'a PermissionsConfig, issue_author: &'a str) -> Self {
        Permissions {
            config,
            issue_author,
            membership: None,
        }
    }

    fn listed(&self, list: &[String], user: &str) -> bool {
        let user = user.trim_start_matches('@');
        list.iter().any(|entry| {
            let e = entry.trim().trim_start_matches('@');
            if e == "*" || e.eq_ignore_ascii_case(user) {
                return true;
            }
            match (e.contains('/'), self.membership) {
                (true, Some(member)) => member(e, user).unwrap_or(false),
                _ => false,
            }
        })
    }

    /// Whether `user` may start a plan from an issue.
    pub fn check_trigger(&self, user: &str) -> Result<(), ForgeError> {
        if self.config.allowed_users.is_empty() || self.listed(&self.config.allowed_users, user) {
            Ok(())
        } else {
            Err(ForgeError::PermissionDenied(format!(
                "@{user} is not in planning.permissions.allowed_users and may not start dandori"
            )))
        }
    }

    /// Whether `user`'s comments steer the task.
    pub fn may_steer(&self, user: &str) -> bool {
        if self.config.allowed_users.is_empty() {
            user.eq_ignore_ascii_case(self.issue_author)
        } else {
            self.listed(&self.config.allowed_users, user)
        }
    }

    /// Whether `user` may approve a paused revision.
    pub fn may_approve(&self, user: &str) -> bool {
        if self.listed(&self.config.always_require_approval, user) {
            return false;
        }
        let c = self.config;
        if c.auto_execution_allowed.is_empty() && c.allowed_users.is_empty() {
            return user.eq_ignore_ascii_case(self.issue_author);
        }
        self.listed(&c.auto_execution_allowed, user) || self.listed(&c.allowed_users, user)
    }

    /// Whether a revision of this task waits for approval.
    pub fn approval_needed(&self, require_human_approval: bool) -> bool {
        let c = self.config;
        require_human_approval
            || self.listed(&c.always_require_approval, self.issue_author)
            || (!c.auto_execution_allowed.is_empty()
                && !self.listed(&c.auto_execution_allowed, self.issue_author))
    }
}

/// Refuses a repository operation not in `forges.operations`.
pub fn check_operation(config: &ForgesConfig, op: ForgeOperation) -> Result<(), ForgeError> {
    if config.operations.contains(&op) {
        Ok(())
    } else {
        let name = match op {
            ForgeOperation::Comment => "comment",
            ForgeOperation::Label => "label",
            ForgeOperation::PullRequest => "pull_request",
        };
        Err(ForgeError::OperationNotPermitted(format!(
            "`{name}` is not in forges.operations; dandori may not {name} on the forge"
        )))
    }
}
