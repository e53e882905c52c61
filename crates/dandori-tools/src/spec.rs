//! The values exchanged with the LLM tool loop: tool specs, calls, results and the
//! reason codes of every refusal or failure (documented in `docs/tools.md`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the model is told about a tool: its name, what it does and the JSON Schema of
/// its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One call of a tool, as the model asked for it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id of the call, echoed in the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

impl ToolCall {
    pub fn new(name: impl Into<String>, arguments: Value) -> Self {
        ToolCall {
            id: None,
            name: name.into(),
            arguments,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Ok,
    Error,
}

/// The result of a call. `content` is always the text to give back to the model (for
/// an error: `error [CODE]: message` followed by any output); `error` carries the
/// structured reason for traces, reflection and `errors.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    pub tool: String,
    pub status: ToolStatus,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl ToolResult {
    pub fn ok(call: &ToolCall, content: String) -> Self {
        ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status: ToolStatus::Ok,
            content,
            error: None,
        }
    }

    pub fn err(call: &ToolCall, error: ToolError) -> Self {
        let mut content = format!("error [{}]: {}", error.code.as_str(), error.message);
        if let Some(output) = &error.output {
            content.push('\n');
            content.push_str(output);
        }
        ToolResult {
            call_id: call.id.clone(),
            tool: call.name.clone(),
            status: ToolStatus::Error,
            content,
            error: Some(error),
        }
    }

    pub fn is_error(&self) -> bool {
        self.status == ToolStatus::Error
    }

    pub fn code(&self) -> Option<ReasonCode> {
        self.error.as_ref().map(|e| e.code)
    }
}

/// A refusal or failure of a tool call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ToolError {
    pub code: ReasonCode,
    pub message: String,
    /// Output worth showing the model (the tail of a failed command, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
}

impl ToolError {
    pub fn new(code: ReasonCode, message: impl Into<String>) -> Self {
        ToolError {
            code,
            message: message.into(),
            output: None,
        }
    }

    pub fn with_output(mut self, output: impl Into<String>) -> Self {
        self.output = Some(output.into());
        self
    }
}

/// Why a tool call was refused or failed. Serialized verbatim (`PATH_OUTSIDE_WORKTREE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReasonCode {
    // Policy (seed 000 §12.1.1).
    ToolForbidden,
    ToolNotAllowed,
    ApprovalDenied,
    UnknownTool,
    InvalidArguments,
    // Worktree confinement.
    PathOutsideWorktree,
    SymlinkEscape,
    SymlinkWriteRefused,
    GitDirProtected,
    PathForbidden,
    /// A file with more than one hard link (it may be a file outside the worktree).
    HardLinkRefused,
    // Files.
    NotFound,
    NotAFile,
    NotADirectory,
    BinaryFile,
    FileTooLarge,
    InvalidRegex,
    PatchNoMatch,
    PatchAmbiguous,
    IoError,
    // Commands (seed 002 §11, seed 004 §3.5 forbid_gh).
    CommandForbidden,
    GhForbidden,
    CommandFailed,
    CommandTimeout,
    /// No sandbox mechanism works and the user did not switch the sandbox off.
    SandboxUnavailable,
    // Git.
    GitFailed,
    // MCP servers.
    McpError,
    McpToolError,
    // The registry was used wrongly (e.g. the blocking API inside an async runtime).
    InternalError,
}

impl ReasonCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasonCode::ToolForbidden => "TOOL_FORBIDDEN",
            ReasonCode::ToolNotAllowed => "TOOL_NOT_ALLOWED",
            ReasonCode::ApprovalDenied => "APPROVAL_DENIED",
            ReasonCode::UnknownTool => "UNKNOWN_TOOL",
            ReasonCode::InvalidArguments => "INVALID_ARGUMENTS",
            ReasonCode::PathOutsideWorktree => "PATH_OUTSIDE_WORKTREE",
            ReasonCode::SymlinkEscape => "SYMLINK_ESCAPE",
            ReasonCode::SymlinkWriteRefused => "SYMLINK_WRITE_REFUSED",
            ReasonCode::GitDirProtected => "GIT_DIR_PROTECTED",
            ReasonCode::PathForbidden => "PATH_FORBIDDEN",
            ReasonCode::HardLinkRefused => "HARD_LINK_REFUSED",
            ReasonCode::NotFound => "NOT_FOUND",
            ReasonCode::NotAFile => "NOT_A_FILE",
            ReasonCode::NotADirectory => "NOT_A_DIRECTORY",
            ReasonCode::BinaryFile => "BINARY_FILE",
            ReasonCode::FileTooLarge => "FILE_TOO_LARGE",
            ReasonCode::InvalidRegex => "INVALID_REGEX",
            ReasonCode::PatchNoMatch => "PATCH_NO_MATCH",
            ReasonCode::PatchAmbiguous => "PATCH_AMBIGUOUS",
            ReasonCode::IoError => "IO_ERROR",
            ReasonCode::CommandForbidden => "COMMAND_FORBIDDEN",
            ReasonCode::GhForbidden => "GH_FORBIDDEN",
            ReasonCode::CommandFailed => "COMMAND_FAILED",
            ReasonCode::CommandTimeout => "COMMAND_TIMEOUT",
            ReasonCode::SandboxUnavailable => "SANDBOX_UNAVAILABLE",
            ReasonCode::GitFailed => "GIT_FAILED",
            ReasonCode::McpError => "MCP_ERROR",
            ReasonCode::McpToolError => "MCP_TOOL_ERROR",
            ReasonCode::InternalError => "INTERNAL_ERROR",
        }
    }
}

impl std::fmt::Display for ReasonCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
