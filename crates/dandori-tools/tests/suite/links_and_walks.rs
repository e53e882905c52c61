//! File tools against hard links (a name inside the worktree for a file outside)
//! and inside step worktrees under `.dandori/runs` (below a `.gitignore` of `*`).

use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_tools::{ReasonCode, ToolRegistry, ToolStatus};

use super::{Repo, call, env};

#[test]
fn hard_links_are_refused_for_reads_writes_and_search() {
    let repo = Repo::new();
    // Same filesystem as the repository, so the hard link can be made.
    let outside = tempfile::tempdir_in(repo.path().parent().unwrap()).unwrap();
    let secret = outside.path().join("secret.txt");
    std::fs::write(&secret, "TOP SECRET outside\n").unwrap();
    std::fs::hard_link(&secret, repo.path().join("link.txt")).unwrap();
    let reg = repo.registry();

    let r = call(&reg, "read_file", json!({"path": "link.txt"}));
    assert_eq!(r.code(), Some(ReasonCode::HardLinkRefused), "{}", r.content);
    assert!(!r.content.contains("TOP SECRET"), "{}", r.content);

    let r = call(
        &reg,
        "write_file",
        json!({"path": "link.txt", "content": "overwritten\n"}),
    );
    assert_eq!(r.code(), Some(ReasonCode::HardLinkRefused), "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "TOP SECRET outside\n"
    );

    let r = call(&reg, "search", json!({"pattern": "TOP SECRET"}));
    assert!(!r.content.contains("link.txt"), "{}", r.content);

    // An ordinary file still reads.
    let r = call(&reg, "read_file", json!({"path": "README.md"}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
}

#[test]
fn list_dir_and_search_work_in_a_worktree_under_the_runs_root() {
    let repo = Repo::new();
    // What dandori writes at the top of its state directory.
    repo.write(".dandori/.gitignore", "*\n");
    let wt = repo.path().join(".dandori/runs/req/run1/worktrees/S01.1");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        &wt.display().to_string(),
        "HEAD",
    ]);
    std::fs::write(wt.join("src/ignored.log"), "x\n").unwrap();
    std::fs::write(wt.join(".gitignore"), "target/\n*.log\n").unwrap();
    let reg = ToolRegistry::builder(&wt).env(env()).build().unwrap();

    let r = call(&reg, "list_dir", json!({"path": ".", "recursive": true}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert!(r.content.contains("README.md"), "{}", r.content);
    assert!(r.content.contains("src/lib.rs"), "{}", r.content);
    // The worktree's own ignore rules still apply, in subdirectories too.
    assert!(!r.content.contains("ignored.log"), "{}", r.content);
    let r = call(&reg, "list_dir", json!({"path": "src"}));
    assert!(r.content.contains("lib.rs"), "{}", r.content);
    assert!(!r.content.contains("ignored.log"), "{}", r.content);

    let r = call(&reg, "search", json!({"pattern": "a + b"}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert!(r.content.contains("src/lib.rs"), "{}", r.content);
}
