use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_tools::ReasonCode;

use super::{Repo, call};

#[test]
fn git_status_and_diff() {
    let repo = Repo::new();
    let reg = repo.registry();
    assert_eq!(call(&reg, "git_status", json!({})).content, "## main\n");
    assert_eq!(call(&reg, "git_diff", json!({})).content, "(no changes)");

    repo.write(
        "src/lib.rs",
        "pub fn add(a: i32, b: i32) -> i32 {\n    b + a\n}\n",
    );
    repo.write("notes.txt", "n\n");
    assert_eq!(
        call(&reg, "git_status", json!(null)).content,
        "## main\n M src/lib.rs\n?? notes.txt\n"
    );
    let diff = call(&reg, "git_diff", json!({"path": "src"})).content;
    assert!(
        diff.starts_with("diff --git a/src/lib.rs b/src/lib.rs\n"),
        "{diff}"
    );
    assert!(diff.contains("\n-    a + b\n+    b + a\n"), "{diff}");

    repo.git(&["add", "notes.txt"]);
    let staged = call(&reg, "git_diff", json!({"staged": true})).content;
    assert!(staged.contains("+++ b/notes.txt"), "{staged}");
    assert!(!staged.contains("src/lib.rs"), "{staged}");

    let r = call(&reg, "git_diff", json!({"path": "../x"}));
    assert_eq!(r.code(), Some(ReasonCode::PathOutsideWorktree));
}

#[test]
fn git_outside_a_repository_is_git_failed() {
    let dir = tempfile::tempdir().unwrap();
    let reg = dandori_tools::ToolRegistry::builder(dir.path())
        .env(
            super::env()
                .into_iter()
                .chain([(
                    "GIT_CEILING_DIRECTORIES".to_string(),
                    dir.path().parent().unwrap().display().to_string(),
                )])
                .collect(),
        )
        .build()
        .unwrap();
    let r = call(&reg, "git_status", json!({}));
    assert_eq!(r.code(), Some(ReasonCode::GitFailed), "{}", r.content);
    assert!(r.content.contains("not a git repository"), "{}", r.content);
}
