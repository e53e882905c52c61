//! Command execution: the command policy of seed 002 §11.1 (`policy`) and hardened
//! child processes (`run`): null stdin, explicit environment, own process group
//! killed on timeout and on drop, output streamed to log files with tails kept in
//! memory, resource limits of seed 002 §11.2 where the platform allows.

pub mod policy;
pub mod run;

pub use policy::{CommandPolicy, ParsedCommand, PolicyViolation};
pub use run::{CommandLine, CommandOutcome, CommandSpec, ResourceLimits, run_command};

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
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
}
