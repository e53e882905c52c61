//! Errors of the distributed engine.

use dandori_runner::RunnerError;

#[derive(Debug, thiserror::Error)]
pub enum DistributedError {
    /// The Restate server answered with an error or could not be reached.
    #[error("restate {url}: {message}")]
    Restate { url: String, message: String },
    /// A request that can never succeed (bad run or step id, bad plan).
    #[error("{reason_code}: {message}")]
    Invalid {
        reason_code: &'static str,
        message: String,
    },
    #[error(transparent)]
    Runner(#[from] RunnerError),
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
}

impl DistributedError {
    /// The reason code recorded for this error.
    pub fn reason_code(&self) -> &'static str {
        match self {
            DistributedError::Restate { .. } => crate::protocol::RESTATE_UNAVAILABLE,
            DistributedError::Invalid { reason_code, .. } => reason_code,
            DistributedError::Runner(e) => e.reason_code(),
            DistributedError::Fs(_) => dandori_runner::reason::IO_ERROR,
        }
    }
}

impl From<DistributedError> for RunnerError {
    fn from(e: DistributedError) -> RunnerError {
        match e {
            DistributedError::Runner(e) => e,
            DistributedError::Fs(e) => RunnerError::Fs(e),
            e => RunnerError::Executor(e.to_string()),
        }
    }
}
