//! MCP against the real servers installed by ./scripts/test.sh:
//! `@modelcontextprotocol/server-filesystem` (npm) and `mcp-server-git` (PyPI).

use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_config::{McpServerConfig, SecurityConfig};
use dandori_tools::{
    McpHub, McpStartOptions, ReasonCode, Sandbox, SandboxKind, SandboxMode, SandboxOptions,
    ToolPolicy, ToolRegistry, ToolStatus,
};

use super::{Repo, call, env, tool_on_path};

fn server(name: &str, command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        name: name.to_string(),
        command: command.to_string(),
        args: args.iter().map(|s| s.to_string()).collect(),
        env: Default::default(),
        sandbox: true,
    }
}

fn hub(repo: &Repo) -> McpHub {
    hub_with(repo, None)
}

fn hub_with(repo: &Repo, sandbox: Option<Sandbox>) -> McpHub {
    let fs = tool_on_path("mcp-server-filesystem");
    let git = tool_on_path("mcp-server-git");
    let servers = [
        server("fs", &fs.display().to_string(), &["{worktree}"]),
        server(
            "git",
            &git.display().to_string(),
            &["--repository", "{worktree}"],
        ),
    ];
    let logs = repo.path().join("target/mcp-logs");
    let mut options = McpStartOptions::new(repo.path(), env());
    options.stderr_dir = Some(logs);
    options.sandbox = sandbox;
    McpHub::start(&servers, &options).unwrap()
}

#[test]
fn tools_of_real_servers_are_listed_namespaced_and_called() {
    let repo = Repo::new();
    repo.write("docs/guide.md", "hello from the guide\n");
    let hub = Arc::new(hub(&repo));
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .mcp(hub.clone())
        .build()
        .unwrap();
    let specs = reg.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    for expected in ["read_file", "fs__list_directory", "git__git_status"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let list = specs
        .iter()
        .find(|s| s.name == "fs__list_directory")
        .unwrap();
    assert_eq!(list.input_schema["type"], "object");
    assert!(
        list.input_schema["properties"]["path"].is_object(),
        "{}",
        list.input_schema
    );

    let root = reg.root().display().to_string();
    let r = call(
        &reg,
        "fs__list_directory",
        json!({"path": format!("{root}/docs")}),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert_eq!(r.content, "[FILE] guide.md");

    let read_tool = if names.contains(&"fs__read_text_file") {
        "fs__read_text_file"
    } else {
        "fs__read_file"
    };
    let r = call(
        &reg,
        read_tool,
        json!({"path": format!("{root}/docs/guide.md")}),
    );
    assert_eq!(r.content, "hello from the guide\n");

    // The server's own confinement answers as an MCP tool error.
    let r = call(&reg, read_tool, json!({"path": "/etc/hostname"}));
    assert_eq!(r.code(), Some(ReasonCode::McpToolError), "{}", r.content);

    repo.write("src/lib.rs", "changed\n");
    let r = call(&reg, "git__git_status", json!({"repo_path": root}));
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert!(
        r.content.contains("modified:   src/lib.rs"),
        "{}",
        r.content
    );
    assert!(r.content.contains("docs/"), "{}", r.content);

    let r = call(&reg, "git__no_such_tool", json!({}));
    assert_eq!(r.code(), Some(ReasonCode::UnknownTool));
    let r = call(&reg, "git__git_status", json!(["not", "an", "object"]));
    assert_eq!(r.code(), Some(ReasonCode::InvalidArguments));
    drop(reg);
    Arc::into_inner(hub).unwrap().shutdown();
}

#[test]
fn mcp_tools_obey_the_tool_policy() {
    let repo = Repo::new();
    let hub = Arc::new(hub(&repo));
    let security = SecurityConfig {
        allowed_tools: vec![],
        forbidden_tools: vec![
            "fs__write_*".into(),
            "fs__move_*".into(),
            "git__git_commit".into(),
        ],
        require_approval: vec!["fs__edit_*".into()],
    };
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .policy(ToolPolicy::from_config(&security, true).unwrap())
        .mcp(hub)
        .build()
        .unwrap();
    let names: Vec<String> = reg.specs().into_iter().map(|s| s.name).collect();
    assert!(
        !names
            .iter()
            .any(|n| n == "fs__write_file" || n == "git__git_commit"),
        "{names:?}"
    );
    assert!(names.iter().any(|n| n == "fs__edit_file"), "{names:?}");

    let root = reg.root().display().to_string();
    let r = call(
        &reg,
        "fs__write_file",
        json!({"path": format!("{root}/x.txt"), "content": "x"}),
    );
    assert_eq!(r.code(), Some(ReasonCode::ToolForbidden));
    assert!(!repo.path().join("x.txt").exists());
    let r = call(
        &reg,
        "fs__edit_file",
        json!({"path": format!("{root}/README.md"), "edits": []}),
    );
    assert_eq!(r.code(), Some(ReasonCode::ApprovalDenied));
}

#[test]
fn a_server_that_cannot_start_is_a_clear_error() {
    let repo = Repo::new();
    let servers = [server("broken", "/nonexistent/mcp-server", &[])];
    let err = McpHub::start(&servers, &McpStartOptions::new(repo.path(), env())).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("MCP server `broken` (`/nonexistent/mcp-server`): spawning: "),
        "{err}"
    );
    let servers = [server("bad__name", "true", &[])];
    let err = McpHub::start(&servers, &McpStartOptions::new(repo.path(), env())).unwrap_err();
    assert_eq!(
        err.to_string(),
        "mcp.servers[0].name `bad__name`: must not contain `__` (it separates server and tool)"
    );
    // A process that is not an MCP server.
    let servers = [server("notmcp", "true", &[])];
    let err = McpHub::start(&servers, &McpStartOptions::new(repo.path(), env())).unwrap_err();
    assert!(err.to_string().contains("initialize"), "{err}");
}

#[test]
fn servers_run_inside_the_sandbox() {
    tool_on_path("bwrap");
    let repo = Repo::new();
    let sandbox = Sandbox::detect(&SandboxOptions::new(SandboxMode::Bubblewrap));
    if sandbox.status().kind == SandboxKind::None {
        let reason = sandbox.status().fallback_reason.clone().unwrap_or_default();
        assert!(
            reason.contains("bwrap cannot create a sandbox here"),
            "{reason}"
        );
        return;
    }
    let hub = Arc::new(hub_with(&repo, Some(sandbox)));
    let reg = ToolRegistry::builder(repo.path())
        .env(env())
        .mcp(hub)
        .build()
        .unwrap();
    let root = reg.root().display().to_string();
    let r = call(
        &reg,
        "fs__write_file",
        json!({"path": format!("{root}/made.txt"), "content": "by mcp\n"}),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    assert_eq!(repo.read("made.txt"), "by mcp\n");
    let r = call(&reg, "git__git_status", json!({"repo_path": root}));
    assert!(r.content.contains("made.txt"), "{}", r.content);
}

#[test]
fn slow_failing_and_oddly_named_tools() {
    let repo = Repo::new();
    let python = tool_on_path("python3");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/scripted_mcp.py"
    );
    let servers = [server("s", &python.display().to_string(), &[script])];
    let mut options = McpStartOptions::new(repo.path(), env());
    options.call_timeout = std::time::Duration::from_secs(1);
    let hub = McpHub::start(&servers, &options).unwrap();
    let names: Vec<String> = hub.specs().into_iter().map(|s| s.name).collect();
    assert_eq!(names, ["s__echo", "s__fail", "s__sleep", "s__dotted_name"]);

    assert_eq!(hub.call("s__echo", &json!({"text": "hi"})).unwrap(), "hi");
    assert_eq!(
        hub.call("s__dotted_name", &json!(null)).unwrap(),
        "dotted ok"
    );
    let err = hub.call("s__fail", &json!({})).unwrap_err();
    assert_eq!(err.code, ReasonCode::McpToolError);
    assert_eq!(err.message, "`s__fail` reported an error: it broke");

    let started = std::time::Instant::now();
    let err = hub.call("s__sleep", &json!({"seconds": 5})).unwrap_err();
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(err.code, ReasonCode::McpError);
    assert_eq!(err.message, "`s__sleep` did not answer within 1s");
}
