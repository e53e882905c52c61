//! The tool registry of one worktree: built-in tools plus MCP tools, behind the tool
//! policy and the approver.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use dandori_config::CommandPolicyConfig;
use dandori_exec::ResourceLimits;
use dandori_trace::Masker;

use crate::builtin::command::tool_command_policy;
use crate::builtin::{self, CommandCheck, Context};
use crate::error::ToolsError;
use crate::mcp::McpHub;
use crate::policy::{
    ApprovalDecision, ApprovalRequest, Approver, DenyNonInteractive, PolicyDecision, ToolPolicy,
};
use crate::spec::{ReasonCode, ToolCall, ToolError, ToolResult, ToolSpec};
use crate::worktree::Worktree;
use dandori_exec::sandbox::{Sandbox, SandboxMode, SandboxOptions, SandboxStatus};

type Handler = fn(&Context, &serde_json::Value) -> Result<String, ToolError>;

/// Every tool the model may use in one worktree. `Send + Sync`: share it with `Arc`.
pub struct ToolRegistry {
    ctx: Context,
    builtins: Vec<(ToolSpec, Handler)>,
    policy: ToolPolicy,
    approver: Arc<dyn Approver>,
    mcp: Option<Arc<McpHub>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("root", &self.ctx.worktree.root())
            .field("sandbox", self.ctx.sandbox.status())
            .field("mcp", &self.mcp)
            .finish()
    }
}

pub struct ToolRegistryBuilder {
    root: PathBuf,
    policy: ToolPolicy,
    approver: Arc<dyn Approver>,
    env: Option<BTreeMap<String, String>>,
    forbidden_paths: Vec<String>,
    extra_writable: Vec<PathBuf>,
    sandbox: Option<Sandbox>,
    sandbox_mode: SandboxMode,
    command_policy: Option<Arc<dyn CommandCheck>>,
    command_timeout: Duration,
    command_limits: ResourceLimits,
    command_logs: Option<(PathBuf, String)>,
    masker: Option<Masker>,
    mcp: Option<Arc<McpHub>>,
}

impl ToolRegistry {
    /// Starts a registry confined to `worktree`. Defaults: no allow list, `forbid_gh`
    /// on, approvals denied, the process environment, sandbox auto-detected, 60 s
    /// command timeout, the built-in command policy, no MCP servers.
    pub fn builder(worktree: impl Into<PathBuf>) -> ToolRegistryBuilder {
        ToolRegistryBuilder {
            root: worktree.into(),
            policy: ToolPolicy::default(),
            approver: Arc::new(DenyNonInteractive),
            env: None,
            forbidden_paths: Vec::new(),
            extra_writable: Vec::new(),
            sandbox: None,
            sandbox_mode: SandboxMode::Auto,
            command_policy: None,
            command_timeout: Duration::from_secs(60),
            command_limits: ResourceLimits::default(),
            command_logs: None,
            masker: None,
            mcp: None,
        }
    }

    /// The canonical worktree root.
    pub fn root(&self) -> &Path {
        self.ctx.worktree.root()
    }

    /// How `run_command` is sandboxed; the runner records this in the trace.
    pub fn sandbox_status(&self) -> &SandboxStatus {
        self.ctx.sandbox.status()
    }

    /// The specs of every tool the policy lets the model see (built-ins first, then MCP
    /// tools in server order). Forbidden / not-allowed tools are not offered.
    pub fn specs(&self) -> Vec<ToolSpec> {
        let mcp = self.mcp.iter().flat_map(|m| m.specs());
        self.builtins
            .iter()
            .map(|(spec, _)| spec.clone())
            .chain(mcp)
            .filter(|spec| self.policy.is_visible(&spec.name))
            .collect()
    }

    /// Runs one call: policy, approval, then the tool. Never panics; every refusal or
    /// failure is an error result with a reason code.
    pub fn call(&self, call: &ToolCall) -> ToolResult {
        match self.dispatch(call) {
            Ok(content) => ToolResult::ok(call, content),
            Err(error) => ToolResult::err(call, error),
        }
    }

    /// Like [`ToolRegistry::call`] for arguments as the model wrote them (JSON text,
    /// possibly malformed, as in `dandori_llm::ToolCall`): malformed JSON is an
    /// `INVALID_ARGUMENTS` result the model can correct; empty text means no arguments.
    pub fn call_raw(&self, id: Option<&str>, name: &str, arguments: &str) -> ToolResult {
        let mut call = ToolCall::new(name, serde_json::Value::Null);
        call.id = id.map(str::to_string);
        if arguments.trim().is_empty() {
            return self.call(&call);
        }
        match serde_json::from_str(arguments) {
            Ok(value) => {
                call.arguments = value;
                self.call(&call)
            }
            Err(e) => ToolResult::err(
                &call,
                ToolError::new(
                    ReasonCode::InvalidArguments,
                    format!("the arguments of `{name}` are not valid JSON: {e}"),
                ),
            ),
        }
    }

    fn dispatch(&self, call: &ToolCall) -> Result<String, ToolError> {
        match self.policy.decide(&call.name) {
            PolicyDecision::Allow => {}
            PolicyDecision::Refuse(error) => return Err(error),
            PolicyDecision::NeedsApproval => {
                let request = ApprovalRequest {
                    tool: &call.name,
                    arguments: &call.arguments,
                };
                match self.approver.approve(&request) {
                    ApprovalDecision::Approved => {}
                    ApprovalDecision::Denied { reason } => {
                        return Err(ToolError::new(ReasonCode::ApprovalDenied, reason));
                    }
                }
            }
        }
        if let Some((_, handler)) = self.builtins.iter().find(|(s, _)| s.name == call.name) {
            return handler(&self.ctx, &call.arguments);
        }
        if let Some(mcp) = &self.mcp
            && mcp.has_tool(&call.name)
        {
            return mcp.call(&call.name, &call.arguments);
        }
        Err(ToolError::new(
            ReasonCode::UnknownTool,
            format!(
                "there is no tool `{}`; available: {}",
                call.name,
                self.specs()
                    .iter()
                    .map(|s| s.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ))
    }
}

impl ToolRegistryBuilder {
    pub fn policy(mut self, policy: ToolPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// Who answers `require_approval` calls (see `policy::session_approver`).
    pub fn approver(mut self, approver: Arc<dyn Approver>) -> Self {
        self.approver = approver;
        self
    }

    /// The exact environment of commands and git (e.g. the environment sub-phase's
    /// activation env). Default: the process environment.
    pub fn env(mut self, env: BTreeMap<String, String>) -> Self {
        self.env = Some(env);
        self
    }

    /// The step's `scope.forbidden_paths`: refused for writes with PATH_FORBIDDEN.
    pub fn forbidden_paths(mut self, patterns: Vec<String>) -> Self {
        self.forbidden_paths = patterns;
        self
    }

    /// Directories besides the worktree and /tmp that sandboxed commands may write
    /// (e.g. a package cache).
    pub fn extra_writable(mut self, dirs: Vec<PathBuf>) -> Self {
        self.extra_writable = dirs;
        self
    }

    pub fn sandbox_mode(mut self, mode: SandboxMode) -> Self {
        self.sandbox_mode = mode;
        self
    }

    /// Reuse a sandbox detected once (detection runs bwrap once).
    pub fn sandbox(mut self, sandbox: Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// The command policy `run_command` checks. Default:
    /// `tool_command_policy(&CommandPolicyConfig::default())` (dandori-exec's built-in
    /// policy plus `sh` / `bash`); pass `tool_command_policy(&config)` to extend it.
    pub fn command_policy(mut self, policy: Arc<dyn CommandCheck>) -> Self {
        self.command_policy = Some(policy);
        self
    }

    /// `setrlimit` limits of each command (default: none).
    pub fn command_limits(mut self, limits: ResourceLimits) -> Self {
        self.command_limits = limits;
        self
    }

    /// Stream each command's whole output to
    /// `<dir>/<prefix>.cmdNNN.stdout.log` / `.stderr.log` (e.g. `logs/`, `step.S01`).
    pub fn command_logs(mut self, dir: impl Into<PathBuf>, prefix: impl Into<String>) -> Self {
        self.command_logs = Some((dir.into(), prefix.into()));
        self
    }

    /// Masks secrets in command output (tails given to the model, and logs).
    pub fn masker(mut self, masker: Masker) -> Self {
        self.masker = Some(masker);
        self
    }

    /// Upper bound of one `run_command` (config `planning.execution.action_timeout`).
    pub fn command_timeout(mut self, timeout: Duration) -> Self {
        self.command_timeout = timeout;
        self
    }

    /// MCP servers already started for this worktree.
    pub fn mcp(mut self, hub: Arc<McpHub>) -> Self {
        self.mcp = Some(hub);
        self
    }

    pub fn build(self) -> Result<ToolRegistry, ToolsError> {
        let worktree = Worktree::new(&self.root)?.with_forbidden_paths(&self.forbidden_paths)?;
        let env = self
            .env
            .unwrap_or_else(|| std::env::vars().collect::<BTreeMap<_, _>>());
        let sandbox = match self.sandbox {
            Some(s) => s,
            None => Sandbox::detect(&SandboxOptions::new(self.sandbox_mode).env(&env)),
        };
        let extra_writable = self
            .extra_writable
            .iter()
            .map(dandori_fs::canonicalize)
            .collect::<Result<Vec<_>, _>>()?;
        let forbid_gh = self.policy.forbid_gh();
        let command_policy: Arc<dyn CommandCheck> = match self.command_policy {
            Some(policy) => policy,
            None => {
                let mut p = tool_command_policy(&CommandPolicyConfig::default())
                    .map_err(ToolsError::CommandPolicy)?
                    .with_root(worktree.root());
                if let Some(home) = env.get("HOME") {
                    p = p.with_home(std::path::Path::new(home));
                }
                for dir in &extra_writable {
                    p = p.with_root(dir);
                }
                Arc::new(p)
            }
        };
        Ok(ToolRegistry {
            ctx: Context {
                worktree,
                env,
                sandbox,
                extra_writable,
                command_policy,
                command_timeout: self.command_timeout,
                command_limits: self.command_limits,
                command_logs: self.command_logs,
                command_counter: AtomicUsize::new(0),
                masker: self.masker,
                forbid_gh,
            },
            builtins: builtin::all(self.command_timeout),
            policy: self.policy,
            approver: self.approver,
            mcp: self.mcp,
        })
    }
}

// The runner shares registries across threads.
const _: fn() = || {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ToolRegistry>();
    send_sync::<McpHub>();
};
