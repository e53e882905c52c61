//! The crate's one error type. Every variant carries a reason code: MCP tools turn
//! errors into tool results (`isError`) with the code, never into a dead server.

use std::path::PathBuf;

/// Reason codes of the MCP tools and the run-inspection commands (docs/mcp.md).
pub mod reason {
    /// An argument is missing, has the wrong type or an unknown value.
    pub const ARGUMENT_INVALID: &str = "ARGUMENT_INVALID";
    /// No tool of that name in the selected tool set.
    pub const TOOL_UNKNOWN: &str = "TOOL_UNKNOWN";
    /// The path is not a run directory (no planning.json).
    pub const RUN_DIR_INVALID: &str = "RUN_DIR_INVALID";
    /// `step_id` names no step of the plan.
    pub const STEP_UNKNOWN: &str = "STEP_UNKNOWN";
    /// The step is not waiting for an executor (not handed off, or already answered).
    pub const STEP_NOT_READY: &str = "STEP_NOT_READY";
    /// The run stopped before or between steps (a gate, a broken plan).
    pub const RUN_FAILED: &str = "RUN_FAILED";
    /// The resource URI names no readable run file.
    pub const RESOURCE_UNKNOWN: &str = "RESOURCE_UNKNOWN";
    /// The plan cannot be read (JSON) or its graph is broken.
    pub const PLAN_INVALID: &str = "PLAN_INVALID";
    /// `--http`: the address may not be bound (not loopback without
    /// `--allow-remote`, no or too short bearer token, or the bind failed).
    pub const BIND_REFUSED: &str = "BIND_REFUSED";
    /// HTTP request without the bearer token the server requires (401).
    pub const AUTH_REQUIRED: &str = "AUTH_REQUIRED";
    /// HTTP request whose Host or Origin is not loopback on a loopback-only server (403).
    pub const ORIGIN_REFUSED: &str = "ORIGIN_REFUSED";
    /// HTTP request body over the server's limit (413).
    pub const REQUEST_TOO_LARGE: &str = "REQUEST_TOO_LARGE";
    /// `env_setup` on a run that is executing.
    pub const RUN_ACTIVE: &str = "RUN_ACTIVE";
    /// The environment sub-phase could not run (`env_setup`).
    pub const ENVIRONMENT_FAILED: &str = "ENVIRONMENT_FAILED";
    /// Reading or writing a file failed.
    pub const IO_ERROR: &str = "IO_ERROR";
}

#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{code}: {message}")]
    Invalid { code: &'static str, message: String },
    #[error("{code}: {}: {message}", path.display())]
    Path {
        code: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error("{code}: {source}", code = .source.code())]
    Planner {
        #[from]
        source: dandori_planner::PlannerError,
    },
    #[error("{code}: {source}", code = .source.reason_code())]
    Runner {
        #[from]
        source: dandori_runner::RunnerError,
    },
    #[error("IO_ERROR: {0}")]
    Trace(#[from] dandori_trace::TraceError),
}

impl McpError {
    pub fn invalid(code: &'static str, message: impl Into<String>) -> Self {
        McpError::Invalid {
            code,
            message: message.into(),
        }
    }

    pub fn path(code: &'static str, path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        McpError::Path {
            code,
            path: path.into(),
            message: message.into(),
        }
    }

    /// The reason code of the error.
    pub fn code(&self) -> &str {
        match self {
            McpError::Invalid { code, .. } | McpError::Path { code, .. } => code,
            McpError::Fs(_) | McpError::Trace(_) => reason::IO_ERROR,
            McpError::Planner { source } => source.code(),
            McpError::Runner { source } => source.reason_code(),
        }
    }
}
