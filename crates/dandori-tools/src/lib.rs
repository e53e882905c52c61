//! Tools for the LLM tool loop: files, search, patches, commands and git confined to a
//! worktree; the tools of MCP servers; the tool policy and approvals; the command
//! sandbox. See `docs/tools.md`.
//!
//! ```text
//! let hub = McpHub::start(&config.mcp.servers, &McpStartOptions::new(&worktree, env.clone()))?;
//! let registry = ToolRegistry::builder(&worktree)
//!     .policy(ToolPolicy::from_config(&config.planning.security, gates.forbid_gh)?)
//!     .approver(Arc::from(session_approver(args.approve)))
//!     .env(env)
//!     .mcp(Arc::new(hub))
//!     .build()?;
//! let specs = registry.specs();            // give these to the model
//! let result = registry.call(&tool_call);  // ToolResult: content + optional ToolError
//! ```

pub mod builtin;
pub mod error;
pub mod mcp;
pub mod policy;
pub mod registry;
pub mod spec;
pub mod worktree;

pub use builtin::command::{TOOL_EXTRA_ALLOWED_COMMANDS, tool_command_policy};
pub use builtin::{CommandCheck, CommandRefusal};
pub use dandori_exec::sandbox::{
    Origin, Sandbox, SandboxKind, SandboxMode, SandboxOptions, SandboxPolicy, SandboxStatus,
};
pub use error::ToolsError;
pub use mcp::{McpHub, McpStartOptions};
pub use policy::{
    ApprovalDecision, ApprovalRequest, Approver, AutoApprove, DenyNonInteractive, PolicyDecision,
    TerminalApprover, ToolPolicy, session_approver,
};
pub use registry::{ToolRegistry, ToolRegistryBuilder};
pub use spec::{ReasonCode, ToolCall, ToolError, ToolResult, ToolSpec, ToolStatus};
pub use worktree::{Access, ResolvedPath, Worktree};
