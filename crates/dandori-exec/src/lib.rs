//! Command execution: the command policy of seed 002 §11.1 (`policy`) and hardened
//! child processes (`run`): null stdin, explicit environment, own process group
//! killed on timeout and on drop, output streamed to log files with tails kept in
//! memory, resource limits of seed 002 §11.2 where the platform allows.

pub mod child_env;
pub mod git;
pub mod overlay;
pub mod policy;
pub mod proxy;
pub mod run;
pub mod sandbox;

pub use child_env::secret_env_values;
pub use policy::{CommandPolicy, ParsedCommand, PolicyViolation};
pub use run::{CommandLine, CommandOutcome, CommandSpec, ResourceLimits, run_command};
pub use sandbox::{
    Origin, Sandbox, SandboxKind, SandboxMode, SandboxOptions, SandboxPolicy, SandboxStatus,
};

use std::path::PathBuf;

/// The errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error(
        "invalid forbidden pattern `{pattern}` in planning.environment_setup.security.forbidden_patterns: {message}"
    )]
    InvalidPattern { pattern: String, message: String },
    #[error("command refused by policy: {0}")]
    Policy(#[from] PolicyViolation),
    #[error("`{program}` not found (searched PATH={path})")]
    ProgramNotFound { program: String, path: String },
    #[error("working directory {} does not exist", cwd.display())]
    MissingCwd { cwd: PathBuf },
    #[error("spawning `{command}` in {}: {source}", cwd.display())]
    Spawn {
        command: String,
        cwd: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("waiting for `{command}`: {source}")]
    Wait {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`{command}` refused: no sandbox works here ({reason}); install bubblewrap, or run with `--sandbox off` to run model- and plan-issued commands unconfined [SANDBOX_UNAVAILABLE]"
    )]
    SandboxUnavailable { command: String, reason: String },
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
}
