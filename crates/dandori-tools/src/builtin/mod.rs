//! The built-in tools: files, search, patch, commands, git. Each is a spec plus a
//! handler taking the JSON arguments and returning the text for the model.

pub mod command;
pub mod files;
pub mod git;
pub mod patch;
pub mod search;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use dandori_exec::ResourceLimits;
use dandori_trace::Masker;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::spec::{ReasonCode, ToolError, ToolSpec};
use crate::worktree::Worktree;
use dandori_exec::sandbox::Sandbox;

/// A refusal of the command policy (seed 002 §11): its reason code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRefusal {
    pub code: String,
    pub message: String,
}

/// The command policy `run_command` applies before running anything.
pub trait CommandCheck: Send + Sync {
    fn check(&self, line: &str) -> Result<(), CommandRefusal>;
}

/// What the built-in tools work with.
pub(crate) struct Context {
    pub worktree: Worktree,
    pub env: BTreeMap<String, String>,
    pub sandbox: Sandbox,
    pub extra_writable: Vec<PathBuf>,
    pub command_policy: Arc<dyn CommandCheck>,
    pub command_timeout: Duration,
    pub command_limits: ResourceLimits,
    /// `(dir, prefix)`: each command's output goes to `<dir>/<prefix>.cmdNNN.{stdout,stderr}.log`.
    pub command_logs: Option<(PathBuf, String)>,
    pub command_counter: AtomicUsize,
    pub masker: Option<Masker>,
    pub forbid_gh: bool,
}

type Handler = fn(&Context, &Value) -> Result<String, ToolError>;

/// Every built-in tool, in the order offered to the model.
pub(crate) fn all(command_timeout: Duration) -> Vec<(ToolSpec, Handler)> {
    vec![
        (files::read_file_spec(), files::read_file as Handler),
        (files::list_dir_spec(), files::list_dir),
        (search::search_spec(), search::search),
        (files::write_file_spec(), files::write_file),
        (patch::apply_patch_spec(), patch::apply_patch),
        (
            command::run_command_spec(command_timeout),
            command::run_command,
        ),
        (git::git_status_spec(), git::git_status),
        (git::git_diff_spec(), git::git_diff),
    ]
}

fn parse_args<T: DeserializeOwned>(args: &Value) -> Result<T, ToolError> {
    // Models sometimes send `null` or nothing for tools without arguments.
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args.clone()
    };
    serde_json::from_value(args).map_err(|e| {
        ToolError::new(
            ReasonCode::InvalidArguments,
            format!("invalid arguments: {e}"),
        )
    })
}

fn io_error(path: &str, e: std::io::Error) -> ToolError {
    if e.kind() == std::io::ErrorKind::NotFound {
        ToolError::new(ReasonCode::NotFound, format!("`{path}` does not exist"))
    } else {
        ToolError::new(ReasonCode::IoError, format!("`{path}`: {e}"))
    }
}
