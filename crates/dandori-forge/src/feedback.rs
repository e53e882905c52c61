//! Which comments are human feedback for `revise --from-issue`, and which one
//! approves a paused revision (`approve --from-issue`). Pure: comments, the
//! forge record and the permissions in, decisions out; the CLI only adapts.

use chrono::{DateTime, Utc};

use crate::client::{Comment, CommentSource};
use crate::permissions::Permissions;
use crate::record::ForgeRecord;
use crate::report::is_dandori_comment;
use crate::revise::{Feedback, FeedbackSource};

/// Whether a comment is an approval: a line `/approve`, `approve`, `approved`,
/// `lgtm`, `承認`, `承認します`, or `/dandori approve` (as `dandori ci` reads it).
pub fn is_approval(body: &str) -> bool {
    body.lines().any(|l| {
        let l = l
            .trim()
            .trim_start_matches('/')
            .trim_end_matches(['.', '!'])
            .to_lowercase();
        let l = l.strip_prefix("dandori ").map_or(l.as_str(), str::trim);
        matches!(l, "approve" | "approved" | "lgtm" | "承認" | "承認します")
    })
}

/// The feedback in `comments`: new or edited since last read (`forge.json`
/// `consumed`), not dandori's own, not an approval, from users allowed to
/// steer. The second list is the comments left out for their author
/// (`(comment id, author)`), for a line saying so.
pub fn from_comments(
    comments: &[Comment],
    record: &ForgeRecord,
    perms: &Permissions<'_>,
) -> (Vec<Feedback>, Vec<(u64, String)>) {
    let mut out = Vec::new();
    let mut ignored = Vec::new();
    for c in comments {
        let seen = record.consumed.get(&c.id) == Some(&c.updated_at);
        if seen || is_dandori_comment(&c.body) || is_approval(&c.body) {
            continue;
        }
        if !perms.may_steer(&c.author) {
            ignored.push((c.id, c.author.clone()));
            continue;
        }
        out.push(Feedback {
            source: match c.source {
                CommentSource::IssueComment => FeedbackSource::IssueComment,
                CommentSource::PrReview => FeedbackSource::PrReview,
            },
            author: Some(c.author.clone()),
            comment_id: Some(c.id),
            text: c.body.clone(),
        });
    }
    (out, ignored)
}

/// The user whose approving comment, written (or edited) at or after
/// `requested_at`, approves the revision: the first one permitted to approve.
pub fn approver(
    comments: &[Comment],
    perms: &Permissions<'_>,
    requested_at: &str,
) -> Option<String> {
    let requested = parse(requested_at);
    let after = |t: &str| match (parse(t), requested) {
        (Some(t), Some(r)) => t >= r,
        // Unparseable times: the text order of RFC 3339 stamps.
        _ => t >= requested_at,
    };
    comments
        .iter()
        .filter(|c| after(&c.updated_at) || after(&c.created_at))
        .filter(|c| is_approval(&c.body) && !is_dandori_comment(&c.body))
        .find(|c| perms.may_approve(&c.author))
        .map(|c| c.author.clone())
}

fn parse(t: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(t)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals() {
        for yes in [
            "/approve",
            "LGTM!",
            "approved.",
            "/dandori approve",
            "承認します",
        ] {
            assert!(is_approval(yes), "{yes}");
        }
        for no in ["please approve this later", "/dandori run", "approve?"] {
            assert!(!is_approval(no), "{no}");
        }
    }

    #[test]
    fn an_approval_counts_by_time_not_by_text() {
        let cfg = dandori_config::PermissionsConfig::default();
        let perms = Permissions::new(&cfg, "alice");
        let c = |at: &str| Comment {
            id: 1,
            author: "alice".into(),
            body: "/approve".into(),
            created_at: at.into(),
            updated_at: at.into(),
            source: CommentSource::IssueComment,
            by_bot: false,
        };
        let req = "2026-11-26T20:16:18.782577773+00:00";
        // Same second, earlier: the text order would say "after" ('Z' > '.').
        assert_eq!(approver(&[c("2026-11-26T20:16:18Z")], &perms, req), None);
        assert_eq!(
            approver(&[c("2026-11-26T20:16:19Z")], &perms, req),
            Some("alice".into())
        );
    }
}
