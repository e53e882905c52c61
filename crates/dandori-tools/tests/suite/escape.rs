//! Escape attempts: every one is refused with its reason code and nothing outside the
//! worktree is read or written.

use std::os::unix::fs::symlink;

use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_config::SecurityConfig;
use dandori_tools::{ReasonCode, ToolPolicy, ToolRegistry};

use super::{Repo, call, env};

struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("secret.txt"), "TOP SECRET\n").unwrap();
        Outside { dir }
    }
    fn secret(&self) -> std::path::PathBuf {
        self.dir.path().join("secret.txt")
    }
}

#[test]
fn traversal_and_absolute_paths_are_refused() {
    let repo = Repo::new();
    let outside = Outside::new();
    let reg = repo.registry();
    let secret = outside.secret().display().to_string();
    let cases = [
        ("read_file", json!({"path": "../secret.txt"})),
        ("read_file", json!({"path": "src/../../secret.txt"})),
        ("read_file", json!({"path": secret})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("list_dir", json!({"path": ".."})),
        ("search", json!({"pattern": "SECRET", "path": "../"})),
        ("write_file", json!({"path": "../evil.txt", "content": "x"})),
        (
            "write_file",
            json!({"path": format!("{}/evil.txt", outside.dir.path().display()), "content": "x"}),
        ),
        (
            "apply_patch",
            json!({"path": "../secret.txt", "edits": [{"old": "TOP", "new": "NO"}]}),
        ),
        ("run_command", json!({"command": "true", "cwd": ".."})),
    ];
    for (tool, args) in cases {
        let r = call(&reg, tool, args.clone());
        assert_eq!(
            r.code(),
            Some(ReasonCode::PathOutsideWorktree),
            "{tool} {args}: {}",
            r.content
        );
        assert!(!r.content.contains("TOP SECRET"));
    }
    assert!(!repo.path().parent().unwrap().join("evil.txt").exists());
    assert!(!outside.dir.path().join("evil.txt").exists());
    assert_eq!(
        std::fs::read_to_string(outside.secret()).unwrap(),
        "TOP SECRET\n"
    );
}

#[test]
fn symlinked_directory_leading_out_is_refused() {
    let repo = Repo::new();
    let outside = Outside::new();
    symlink(outside.dir.path(), repo.path().join("out")).unwrap();
    let reg = repo.registry();
    for (tool, args) in [
        ("read_file", json!({"path": "out/secret.txt"})),
        ("list_dir", json!({"path": "out"})),
        ("search", json!({"pattern": "SECRET", "path": "out"})),
        (
            "write_file",
            json!({"path": "out/planted.txt", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "out/deeper/planted.txt", "content": "x"}),
        ),
        (
            "apply_patch",
            json!({"path": "out/secret.txt", "edits": [{"old": "TOP", "new": "NO"}]}),
        ),
        ("run_command", json!({"command": "true", "cwd": "out"})),
    ] {
        let r = call(&reg, tool, args.clone());
        assert_eq!(
            r.code(),
            Some(ReasonCode::SymlinkEscape),
            "{tool} {args}: {}",
            r.content
        );
    }
    assert!(!outside.dir.path().join("planted.txt").exists());
    assert!(!outside.dir.path().join("deeper").exists());
    assert_eq!(
        std::fs::read_to_string(outside.secret()).unwrap(),
        "TOP SECRET\n"
    );

    // Walking tools never follow the link either.
    let r = call(&reg, "search", json!({"pattern": "SECRET"}));
    assert_eq!(r.content, "no matches for `SECRET`");
    let r = call(&reg, "list_dir", json!({"recursive": true}));
    assert!(
        r.content
            .contains(&format!("out -> {}", outside.dir.path().display())),
        "{}",
        r.content
    );
    assert!(!r.content.contains("secret.txt"), "{}", r.content);
}

#[test]
fn symlinked_file_leading_out_is_refused() {
    let repo = Repo::new();
    let outside = Outside::new();
    symlink(outside.secret(), repo.path().join("leak.txt")).unwrap();
    symlink("/nonexistent/dandori/target", repo.path().join("dangling")).unwrap();
    let reg = repo.registry();

    let r = call(&reg, "read_file", json!({"path": "leak.txt"}));
    assert_eq!(r.code(), Some(ReasonCode::SymlinkEscape), "{}", r.content);
    assert!(!r.content.contains("TOP SECRET"));

    for (tool, args) in [
        (
            "write_file",
            json!({"path": "leak.txt", "content": "overwritten"}),
        ),
        (
            "apply_patch",
            json!({"path": "leak.txt", "edits": [{"old": "TOP", "new": "NO"}]}),
        ),
        ("write_file", json!({"path": "dangling", "content": "x"})),
    ] {
        let r = call(&reg, tool, args.clone());
        assert_eq!(
            r.code(),
            Some(ReasonCode::SymlinkWriteRefused),
            "{tool} {args}: {}",
            r.content
        );
    }
    let r = call(&reg, "read_file", json!({"path": "dangling"}));
    assert_eq!(r.code(), Some(ReasonCode::SymlinkEscape), "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(outside.secret()).unwrap(),
        "TOP SECRET\n"
    );
    assert!(!std::path::Path::new("/nonexistent/dandori/target").exists());
}

#[test]
fn symlinks_inside_the_worktree_are_read_but_not_written_through() {
    let repo = Repo::new();
    symlink("src/lib.rs", repo.path().join("lib_link.rs")).unwrap();
    symlink("src", repo.path().join("src_link")).unwrap();
    let reg = repo.registry();
    let r = call(&reg, "read_file", json!({"path": "lib_link.rs"}));
    assert!(r.content.starts_with("pub fn add"), "{}", r.content);
    let r = call(&reg, "read_file", json!({"path": "src_link/lib.rs"}));
    assert!(r.content.starts_with("pub fn add"), "{}", r.content);
    // A directory link inside the worktree may be written through; a final link not.
    let r = call(
        &reg,
        "write_file",
        json!({"path": "src_link/b.rs", "content": "x\n"}),
    );
    assert!(!r.is_error(), "{}", r.content);
    assert_eq!(repo.read("src/b.rs"), "x\n");
    let r = call(
        &reg,
        "write_file",
        json!({"path": "lib_link.rs", "content": "x\n"}),
    );
    assert_eq!(r.code(), Some(ReasonCode::SymlinkWriteRefused));
}

#[test]
fn git_directory_is_protected() {
    let repo = Repo::new();
    symlink(".git/hooks", repo.path().join("hooks")).unwrap();
    let reg = repo.registry();
    for (tool, args) in [
        (
            "write_file",
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\ntouch /tmp/pwned\n"}),
        ),
        (
            "write_file",
            json!({"path": "./.git/config", "content": "x"}),
        ),
        (
            "write_file",
            json!({"path": "hooks/pre-commit", "content": "#!/bin/sh\n"}),
        ),
        ("read_file", json!({"path": ".git/config"})),
    ] {
        let r = call(&reg, tool, args.clone());
        assert_eq!(
            r.code(),
            Some(ReasonCode::GitDirProtected),
            "{tool} {args}: {}",
            r.content
        );
    }
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());
}

#[test]
fn forbidden_paths_of_the_step_are_refused_for_writes() {
    let repo = Repo::new();
    repo.write("vendor/lib/a.c", "int a;\n");
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .forbidden_paths(vec!["vendor".to_string(), "*.lock".to_string()])
        .build()
        .unwrap();
    for path in ["vendor/lib/a.c", "vendor/new.c", "Cargo.lock"] {
        let r = call(&reg, "write_file", json!({"path": path, "content": "x"}));
        assert_eq!(
            r.code(),
            Some(ReasonCode::PathForbidden),
            "{path}: {}",
            r.content
        );
    }
    let r = call(&reg, "read_file", json!({"path": "vendor/lib/a.c"}));
    assert_eq!(r.content, "int a;\n");
}

#[test]
fn forbidden_and_not_allowed_tools_are_refused_and_hidden() {
    let repo = Repo::new();
    let security = SecurityConfig {
        allowed_tools: vec![
            "read_*".into(),
            "list_*".into(),
            "git_*".into(),
            "write_file".into(),
        ],
        forbidden_tools: vec!["write_*".into(), "*_diff".into()],
        require_approval: vec![],
    };
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .policy(ToolPolicy::from_config(&security, true).unwrap())
        .build()
        .unwrap();
    let names: Vec<String> = reg.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["read_file", "list_dir", "git_status"]);

    let r = call(&reg, "write_file", json!({"path": "a.txt", "content": "x"}));
    assert_eq!(r.code(), Some(ReasonCode::ToolForbidden));
    assert_eq!(
        r.content,
        "error [TOOL_FORBIDDEN]: tool `write_file` matches planning.security.forbidden_tools"
    );
    assert!(!repo.path().join("a.txt").exists());
    assert_eq!(
        call(&reg, "git_diff", json!({})).code(),
        Some(ReasonCode::ToolForbidden)
    );
    let r = call(&reg, "run_command", json!({"command": "touch ran"}));
    assert_eq!(r.code(), Some(ReasonCode::ToolNotAllowed));
    assert!(!repo.path().join("ran").exists());
}
