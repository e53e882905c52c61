//! The `if:` of a GitHub Actions job, evaluated as GitHub's runner does before
//! the job starts (`dandori_test_support::gh_expr`: the expression subset
//! `dandori init github-action` writes, with GitHub's documented semantics).
//! Anything outside the subset fails the test instead of guessing.

use serde_json::{Value, json};

use dandori_test_support::gh_expr;

/// Whether the job starts for the event `name` with `payload`.
pub(super) fn job_starts(cond: &str, name: &str, payload: &Value) -> bool {
    let context = json!({"github": {"event_name": name, "event": payload}});
    gh_expr::truthy_expr(cond, &context).unwrap_or_else(|e| panic!("{cond}: {e}"))
}

#[test]
fn the_gate_reads_like_githubs_runner() {
    let p = serde_json::json!({"comment": {"author_association": "owner", "body": "/Dandori run"}});
    let c = "contains(fromJSON('[\"OWNER\", \"MEMBER\"]'), github.event.comment.author_association) && startsWith(github.event.comment.body, '/dandori')";
    assert!(job_starts(c, "issue_comment", &p));
    assert!(!job_starts("github.event.label.name == 'x'", "issues", &p));
    assert!(job_starts(
        "github.event.comment.user.type != 'Bot'",
        "issue_comment",
        &p
    ));
    assert!(job_starts(
        "(github.event_name == 'x') || github.event_name == 'issue_comment'",
        "issue_comment",
        &p
    ));
}
