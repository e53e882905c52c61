//! The runner's one error enum. Step-level failures are not errors: they are
//! recorded in `stage.json` with a reason code. These are the conditions that stop
//! the runner itself (bad input, a refused gate, IO, git).

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error(transparent)]
    Trace(#[from] dandori_trace::TraceError),
    #[error("{reason_code}: {path}: {message}")]
    InvalidInput {
        reason_code: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("gate {gate} refused the run ({reason_code}): {message}")]
    Gate {
        gate: &'static str,
        reason_code: &'static str,
        message: String,
    },
    #[error("git {args} (in {cwd}) failed: {message}")]
    Git {
        args: String,
        cwd: PathBuf,
        message: String,
    },
    #[error("running {command}: {message}")]
    Process { command: String, message: String },
    #[error("executor: {0}")]
    Executor(String),
}

impl RunnerError {
    /// The reason code recorded in `errors.json` for this error.
    pub fn reason_code(&self) -> &'static str {
        match self {
            RunnerError::Fs(_) | RunnerError::Trace(_) => crate::reason::IO_ERROR,
            RunnerError::InvalidInput { reason_code, .. } => reason_code,
            RunnerError::Gate { reason_code, .. } => reason_code,
            RunnerError::Git { .. } => crate::reason::GIT_ERROR,
            RunnerError::Process { .. } => crate::reason::PROCESS_ERROR,
            RunnerError::Executor(_) => crate::reason::EXECUTOR_ERROR,
        }
    }
}
