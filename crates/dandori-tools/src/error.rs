//! Errors of building the tool registry or starting MCP servers. Failures of single
//! tool calls are not errors of this kind: they are `ToolResult`s with a `ToolError`
//! (see `spec`), so the model can see them and react.

#[derive(Debug, thiserror::Error)]
pub enum ToolsError {
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error("invalid glob `{pattern}` in {what}: {message}")]
    Glob {
        what: &'static str,
        pattern: String,
        message: String,
    },
    #[error("mcp.servers[{index}].name `{name}`: {message}")]
    McpServerName {
        index: usize,
        name: String,
        message: String,
    },
    #[error("MCP server `{server}` (`{command}`): {message}")]
    McpStart {
        server: String,
        command: String,
        message: String,
    },
    #[error(transparent)]
    CommandPolicy(dandori_exec::ExecError),
    #[error("starting the tokio runtime for MCP clients: {0}")]
    Runtime(std::io::Error),
    #[error(
        "the blocking tool registry API was called from inside an async runtime; call it from a plain thread (e.g. tokio::task::spawn_blocking)"
    )]
    InsideAsyncRuntime,
}
