//! The command sandbox: with bubblewrap working, commands cannot write outside the
//! worktree and /tmp, nor into .git; without it, the fallback is stated.

use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_tools::{
    ReasonCode, Sandbox, SandboxKind, SandboxMode, SandboxOptions, ToolRegistry, ToolStatus,
};

use super::{Repo, call, env, tool_on_path};

/// A command check that allows everything, to test the sandbox without the policy.
struct AllowAll;

impl dandori_tools::CommandCheck for AllowAll {
    fn check(&self, _line: &str) -> Result<(), dandori_tools::CommandRefusal> {
        Ok(())
    }
}

#[test]
fn sandboxed_commands_cannot_write_outside_the_worktree() {
    tool_on_path("bwrap");
    let repo = Repo::in_target();
    // Not under /tmp: the sandbox's /tmp is private anyway.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // The command policy refuses every command below before it runs; the sandbox
    // is tested on its own here.
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .command_policy(std::sync::Arc::new(AllowAll))
        .build()
        .unwrap();
    let status = reg.sandbox_status().clone();
    if status.kind == SandboxKind::None {
        // bwrap is installed but cannot create namespaces here: the fallback must say so.
        let reason = status.fallback_reason.unwrap_or_default();
        assert!(
            reason.contains("bwrap cannot create a sandbox here"),
            "{reason}"
        );
        return;
    }
    assert_eq!(status.fallback_reason, None);

    // The policy cannot see inside a script: the sandbox stops the write.
    let target = outside.path().join("escaped.txt");
    repo.write("escape.sh", &format!("echo x > {}\n", target.display()));
    let r = call(&reg, "run_command", json!({"command": "sh escape.sh"}));
    assert_eq!(r.code(), Some(ReasonCode::CommandFailed), "{}", r.content);
    // The directory outside is not even shown (minimal view), or read-only.
    assert!(
        [
            "Directory nonexistent",
            "Read-only file system",
            "Permission denied"
        ]
        .iter()
        .any(|m| r.content.contains(m)),
        "{}",
        r.content
    );
    assert!(!target.exists());

    // A path the command policy cannot see as outside: a relative escape.
    let r = call(
        &reg,
        "run_command",
        json!({"command": "cd .. && touch escaped-sibling"}),
    );
    // Refused by the policy, or stopped by the sandbox.
    assert!(
        matches!(
            r.code(),
            Some(ReasonCode::CommandFailed | ReasonCode::CommandForbidden)
        ),
        "{}",
        r.content
    );
    assert!(
        !repo
            .path()
            .parent()
            .unwrap()
            .join("escaped-sibling")
            .exists()
    );

    // A hard link to a file outside cannot be made (the worktree is its own mount).
    std::fs::write(outside.path().join("secret.txt"), "TOP SECRET\n").unwrap();
    let r = call(
        &reg,
        "run_command",
        json!({"command": format!("ln {}/secret.txt hardlink.txt", outside.path().display())}),
    );
    // Refused by the policy, or stopped by the sandbox.
    assert!(
        matches!(
            r.code(),
            Some(ReasonCode::CommandFailed | ReasonCode::CommandForbidden)
        ),
        "{}",
        r.content
    );
    assert!(!repo.path().join("hardlink.txt").exists());

    // .git stays read-only: no hook can be planted for the runner's commits.
    let r = call(
        &reg,
        "run_command",
        json!({"command": "echo 'touch /tmp/pwned' > .git/hooks/pre-commit"}),
    );
    // Refused by the policy, or stopped by the sandbox.
    assert!(
        matches!(
            r.code(),
            Some(ReasonCode::CommandFailed | ReasonCode::CommandForbidden)
        ),
        "{}",
        r.content
    );
    assert!(!repo.path().join(".git/hooks/pre-commit").exists());

    // The worktree and a private /tmp are writable; the host's /tmp is untouched.
    let probe = format!("dandori-sandbox-probe-{}", std::process::id());
    let r = call(
        &reg,
        "run_command",
        json!({"command": format!("mkdir -p build && echo ok > build/out.txt && echo t > /tmp/{probe} && cat /tmp/{probe} && echo $TMPDIR")}),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert_eq!(repo.read("build/out.txt"), "ok\n");
    assert!(r.content.contains("\nt\n/tmp\n"), "{}", r.content);
    assert!(!std::path::Path::new("/tmp").join(&probe).exists());
}

#[test]
fn extra_writable_directories_are_writable() {
    tool_on_path("bwrap");
    let repo = Repo::new();
    let cache = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .extra_writable(vec![cache.path().to_path_buf()])
        .build()
        .unwrap();
    repo.write(
        "cache.sh",
        &format!("echo c > {}/entry\n", cache.path().display()),
    );
    let r = call(&reg, "run_command", json!({"command": "sh cache.sh"}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert_eq!(
        std::fs::read_to_string(cache.path().join("entry")).unwrap(),
        "c\n"
    );
}

#[test]
fn without_a_sandbox_issued_commands_are_refused_unless_switched_off() {
    let off = Sandbox::detect(&SandboxOptions::new(SandboxMode::Off));
    assert_eq!(off.status().kind, SandboxKind::None);
    assert!(off.status().disabled);
    assert_eq!(off.refusal(), None);
    let empty_path = tempfile::tempdir().unwrap();
    let missing = Sandbox::detect(&SandboxOptions {
        mode: SandboxMode::Bubblewrap,
        path_var: Some(empty_path.path().display().to_string()),
        ..SandboxOptions::default()
    });
    assert_eq!(missing.status().kind, SandboxKind::None);
    assert!(
        missing
            .status()
            .fallback_reason
            .as_deref()
            .unwrap_or_default()
            .starts_with("bwrap (bubblewrap) not found on PATH"),
        "{:?}",
        missing.status()
    );
    let json = serde_json::to_value(missing.status()).unwrap();
    assert_eq!(json["kind"], "none");
    // run_command refuses instead of running unconfined.
    let repo = Repo::new();
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .sandbox(missing)
        .build()
        .unwrap();
    let r = call(&reg, "run_command", json!({"command": "touch made-anyway"}));
    assert_eq!(
        r.code(),
        Some(ReasonCode::SandboxUnavailable),
        "{}",
        r.content
    );
    assert!(!repo.path().join("made-anyway").exists());
}
