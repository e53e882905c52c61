//! Integration tests of dandori-tools: real files, real git, real child processes,
//! real MCP servers.

mod approval;
mod command;
mod escape;
mod files;
mod git;
mod links_and_walks;
mod mcp;
mod properties;
mod sandbox;
mod snapshots;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use dandori_tools::{ToolCall, ToolRegistry, ToolResult};
use serde_json::Value;

/// A temporary git repository with one commit.
pub struct Repo {
    pub dir: tempfile::TempDir,
}

impl Repo {
    pub fn new() -> Repo {
        Repo::init(tempfile::tempdir().unwrap())
    }

    /// A repository under `target/tmp` (not under /tmp, which sandboxed commands see
    /// as a private tmpfs).
    pub fn in_target() -> Repo {
        Repo::init(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
    }

    fn init(dir: tempfile::TempDir) -> Repo {
        let repo = Repo { dir };
        repo.git(&["init", "-q", "-b", "main"]);
        repo.write("README.md", "# demo\n");
        repo.write(
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        );
        repo.write(".gitignore", "target/\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "init"]);
        repo
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, content: &str) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    pub fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .current_dir(self.path())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    /// A registry with default policy and the process environment.
    pub fn registry(&self) -> ToolRegistry {
        ToolRegistry::builder(self.path())
            .env(env())
            .build()
            .unwrap()
    }
}

/// The environment handed to tools: the test process's own (read, never mutated).
pub fn env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

/// The tool loop's command policy plus the utilities these tests use.
pub fn test_policy() -> std::sync::Arc<dandori_exec::CommandPolicy> {
    let config = dandori_config::CommandPolicyConfig {
        allowed_commands: ["sleep", "seq", "exit"].map(String::from).to_vec(),
        forbidden_patterns: vec![],
    };
    std::sync::Arc::new(dandori_tools::tool_command_policy(&config).unwrap())
}

pub fn call(registry: &ToolRegistry, name: &str, args: Value) -> ToolResult {
    registry.call(&ToolCall::new(name, args))
}

/// An external tool the tests drive, found on PATH, or a failure saying how to get it.
pub fn tool_on_path(name: &str) -> PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH: run the tests with ./scripts/test.sh, which installs it into target/test-tools and puts it on PATH"
            )
        })
}
