//! MCP servers over stdio (the official `rmcp` client): each server of
//! `dandori_config::McpConfig` is spawned, initialised and asked for its tools, which
//! are exposed as `<server>__<tool>` with their own input schemas.
//!
//! The API is blocking: [`McpHub`] owns a small tokio runtime and drives the async
//! client on it, so the (synchronous) runner can call it from any plain thread. It
//! must not be called from inside another tokio runtime (that returns an error; use
//! `tokio::task::spawn_blocking`). Dropping the hub shuts every server down: stdin is
//! closed, the server gets a few seconds to exit, then it is killed.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use dandori_config::McpServerConfig;
use rmcp::model::{CallToolRequestParam, ClientInfo, Implementation, RawContent};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use crate::error::ToolsError;
use crate::spec::{ReasonCode, ToolError, ToolSpec};
use dandori_exec::sandbox::{Origin, Sandbox, SandboxPolicy};

/// Separates the server name from the tool name.
pub const NAMESPACE_SEPARATOR: &str = "__";

/// Most bytes of an MCP tool result given back to the model.
pub const MCP_MAX_RESULT_BYTES: usize = 256 * 1024;

/// How servers are started.
#[derive(Debug, Clone)]
pub struct McpStartOptions {
    /// Working directory of every server; replaces `{worktree}` in args and env values.
    pub worktree: PathBuf,
    /// The environment every server starts with (config `env` entries are added).
    /// Pass the runner's command environment; `PATH` is used to find the command.
    pub env: BTreeMap<String, String>,
    /// Where each server's stderr goes (`<dir>/mcp.<server>.stderr.log`); discarded if
    /// `None`.
    pub stderr_dir: Option<PathBuf>,
    /// Time allowed for spawn + initialize + tools/list, per server.
    pub startup_timeout: Duration,
    /// Time allowed for one tool call.
    pub call_timeout: Duration,
    /// Run the servers (those with `sandbox: true`, the default) inside this sandbox
    /// (worktree writable, the rest read-only), as `run_command` does. `None`: servers
    /// run unsandboxed and rely on their own confinement (e.g. the filesystem server's
    /// allowed directories).
    pub sandbox: Option<Sandbox>,
}

impl McpStartOptions {
    pub fn new(worktree: impl Into<PathBuf>, env: BTreeMap<String, String>) -> Self {
        McpStartOptions {
            worktree: worktree.into(),
            env,
            stderr_dir: None,
            startup_timeout: Duration::from_secs(60),
            call_timeout: Duration::from_secs(60),
            sandbox: None,
        }
    }
}

struct Server {
    name: String,
    service: Option<RunningService<RoleClient, ClientInfo>>,
    /// namespaced name → the server's own tool name.
    tools: BTreeMap<String, String>,
    specs: Vec<ToolSpec>,
}

/// The running MCP servers of one worktree.
pub struct McpHub {
    runtime: tokio::runtime::Runtime,
    servers: Vec<Server>,
    call_timeout: Duration,
}

impl std::fmt::Debug for McpHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHub")
            .field(
                "servers",
                &self.servers.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl McpHub {
    /// Starts every server; fails (shutting down those already started) if one cannot
    /// be started, initialised or listed.
    pub fn start(
        configs: &[McpServerConfig],
        options: &McpStartOptions,
    ) -> Result<Self, ToolsError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ToolsError::InsideAsyncRuntime);
        }
        validate_names(configs)?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("dandori-mcp")
            .enable_all()
            .build()
            .map_err(ToolsError::Runtime)?;
        let mut hub = McpHub {
            runtime,
            servers: Vec::new(),
            call_timeout: options.call_timeout,
        };
        for config in configs {
            let server = hub.runtime.block_on(start_server(config, options))?;
            hub.servers.push(server);
        }
        Ok(hub)
    }

    /// The namespaced specs of every server's tools.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.servers
            .iter()
            .flat_map(|s| s.specs.iter().cloned())
            .collect()
    }

    pub fn has_tool(&self, namespaced: &str) -> bool {
        self.servers
            .iter()
            .any(|s| s.tools.contains_key(namespaced))
    }

    /// Calls `<server>__<tool>` with `arguments` (a JSON object or null). The text
    /// content of the result is returned; a result flagged `isError` is
    /// `MCP_TOOL_ERROR`, a transport or protocol failure `MCP_ERROR`.
    pub fn call(&self, namespaced: &str, arguments: &Value) -> Result<String, ToolError> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return Err(ToolError::new(
                ReasonCode::InternalError,
                ToolsError::InsideAsyncRuntime.to_string(),
            ));
        }
        let Some((server, tool)) = self
            .servers
            .iter()
            .find_map(|s| s.tools.get(namespaced).map(|t| (s, t.clone())))
        else {
            return Err(ToolError::new(
                ReasonCode::UnknownTool,
                format!("no MCP tool `{namespaced}`"),
            ));
        };
        let arguments = match arguments {
            Value::Null => None,
            Value::Object(map) => Some(map.clone()),
            other => {
                return Err(ToolError::new(
                    ReasonCode::InvalidArguments,
                    format!("arguments of `{namespaced}` must be a JSON object, got {other}"),
                ));
            }
        };
        let Some(service) = &server.service else {
            return Err(ToolError::new(
                ReasonCode::McpError,
                format!("MCP server `{}` is shut down", server.name),
            ));
        };
        let param = CallToolRequestParam {
            name: tool.into(),
            arguments,
        };
        let timeout = self.call_timeout;
        let result = self
            .runtime
            .block_on(async { tokio::time::timeout(timeout, service.call_tool(param)).await });
        let result = match result {
            Err(_) => {
                return Err(ToolError::new(
                    ReasonCode::McpError,
                    format!(
                        "`{namespaced}` did not answer within {}s",
                        timeout.as_secs()
                    ),
                ));
            }
            Ok(Err(e)) => {
                return Err(ToolError::new(
                    ReasonCode::McpError,
                    format!(
                        "calling `{namespaced}` on MCP server `{}`: {e}",
                        server.name
                    ),
                ));
            }
            Ok(Ok(result)) => result,
        };
        let mut parts = Vec::new();
        for content in &result.content {
            match &content.raw {
                RawContent::Text(t) => parts.push(t.text.clone()),
                other => parts.push(serde_json::to_string(other).unwrap_or_default()),
            }
        }
        if parts.is_empty()
            && let Some(structured) = &result.structured_content
        {
            parts.push(structured.to_string());
        }
        let mut text = parts.join("\n");
        if text.len() > MCP_MAX_RESULT_BYTES {
            let cut = (0..=MCP_MAX_RESULT_BYTES)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            text.truncate(cut);
            text.push_str(&format!(
                "\n[result cut at {} KiB]",
                MCP_MAX_RESULT_BYTES / 1024
            ));
        }
        if result.is_error == Some(true) {
            return Err(ToolError::new(
                ReasonCode::McpToolError,
                format!("`{namespaced}` reported an error: {text}"),
            ));
        }
        Ok(text)
    }

    /// Stops every server (also done on drop).
    pub fn shutdown(mut self) {
        self.stop_all();
    }

    fn stop_all(&mut self) {
        let services: Vec<_> = self
            .servers
            .iter_mut()
            .filter_map(|s| s.service.take())
            .collect();
        if services.is_empty() {
            return;
        }
        if tokio::runtime::Handle::try_current().is_ok() {
            // Cannot block here; dropping the services cancels them on our runtime,
            // and the child processes are killed when their transports drop.
            drop(services);
            return;
        }
        self.runtime.block_on(async {
            for service in services {
                let _ = tokio::time::timeout(Duration::from_secs(5), service.cancel()).await;
            }
        });
    }
}

impl Drop for McpHub {
    fn drop(&mut self) {
        self.stop_all();
    }
}

fn validate_names(configs: &[McpServerConfig]) -> Result<(), ToolsError> {
    let mut seen = std::collections::BTreeSet::new();
    for (index, config) in configs.iter().enumerate() {
        let err = |message: &str| ToolsError::McpServerName {
            index,
            name: config.name.clone(),
            message: message.to_string(),
        };
        if config.name.is_empty()
            || !config
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(err("use letters, digits, `_` and `-` only"));
        }
        if config.name.contains(NAMESPACE_SEPARATOR) {
            return Err(err("must not contain `__` (it separates server and tool)"));
        }
        if !seen.insert(config.name.as_str()) {
            return Err(err("two servers have this name"));
        }
    }
    Ok(())
}

async fn start_server(
    config: &McpServerConfig,
    options: &McpStartOptions,
) -> Result<Server, ToolsError> {
    let fail = |message: String| ToolsError::McpStart {
        server: config.name.clone(),
        command: std::iter::once(config.command.as_str())
            .chain(config.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" "),
        message,
    };
    let worktree = options.worktree.to_string_lossy().into_owned();
    let expand = |s: &str| s.replace("{worktree}", &worktree);
    let argv: Vec<String> = std::iter::once(expand(&config.command))
        .chain(config.args.iter().map(|a| expand(a)))
        .collect();
    let argv = match &options.sandbox {
        Some(sandbox) if config.sandbox => sandbox
            .wrap(
                argv,
                &SandboxPolicy::worktree(&options.worktree, &[]),
                &options.worktree,
                Origin::Issued,
            )
            .map_err(|e| fail(e.to_string()))?,
        Some(_) | None => argv,
    };
    let Some((program, args)) = argv.split_first() else {
        return Err(fail("empty command".to_string()));
    };
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(&options.worktree)
        .env_clear()
        .envs(&options.env)
        .envs(config.env.iter().map(|(k, v)| (k.clone(), expand(v))))
        .kill_on_drop(true);
    let stderr = match &options.stderr_dir {
        Some(dir) => {
            dandori_fs::create_dir_all(dir).map_err(|e| fail(e.to_string()))?;
            let path = dir.join(format!("mcp.{}.stderr.log", config.name));
            let file = std::fs::File::create(&path)
                .map_err(|e| fail(format!("creating {}: {e}", path.display())))?;
            Stdio::from(file)
        }
        None => Stdio::null(),
    };
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(stderr)
        .spawn()
        .map_err(|e| fail(format!("spawning: {e}")))?;
    let client = ClientInfo {
        protocol_version: Default::default(),
        capabilities: Default::default(),
        client_info: Implementation {
            name: "dandori".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            ..Default::default()
        },
    };
    let started = tokio::time::timeout(options.startup_timeout, async {
        let service = client
            .serve(transport)
            .await
            .map_err(|e| fail(format!("initialize: {e}")))?;
        let tools = service
            .list_all_tools()
            .await
            .map_err(|e| fail(format!("tools/list: {e}")))?;
        Ok::<_, ToolsError>((service, tools))
    })
    .await
    .map_err(|_| {
        fail(format!(
            "no answer within {}s",
            options.startup_timeout.as_secs()
        ))
    })?;
    let (service, tools) = started?;
    let mut names = BTreeMap::new();
    let mut specs = Vec::new();
    for tool in tools {
        let namespaced = format!(
            "{}{NAMESPACE_SEPARATOR}{}",
            config.name,
            sanitize(&tool.name)
        );
        names.insert(namespaced.clone(), tool.name.to_string());
        specs.push(ToolSpec {
            name: namespaced,
            description: tool
                .description
                .as_deref()
                .unwrap_or("(no description)")
                .to_string(),
            input_schema: Value::Object((*tool.input_schema).clone()),
        });
    }
    Ok(Server {
        name: config.name.clone(),
        service: Some(service),
        tools: names,
        specs,
    })
}

/// Tool names as providers accept them (`[A-Za-z0-9_-]`).
fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
