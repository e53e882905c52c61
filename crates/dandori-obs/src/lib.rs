//! Observability over what runs record (`trace.jsonl`, `planning.json`,
//! `stage.json`): the seed 000 §16.1–16.3 metrics across runs ([`metrics`]), the
//! §16.4.1 human log format ([`log`]), and OpenTelemetry spans exported over
//! OTLP/HTTP ([`otlp`], §16.4.2). Everything here reads the masked trace events, so
//! nothing it prints or sends carries a secret the trace does not.

pub mod log;
pub mod metrics;
pub mod otlp;

use std::path::PathBuf;

/// Reason codes of this crate (listed in docs/REASON_CODES.md).
pub mod reason {
    /// `--runs-root` / the repository's runs root does not exist or is not a directory.
    pub const RUNS_ROOT_MISSING: &str = "RUNS_ROOT_MISSING";
    /// `--since` is neither an RFC 3339 time nor a `YYYY-MM-DD` date.
    pub const SINCE_INVALID: &str = "SINCE_INVALID";
    /// The OTLP endpoint, protocol or headers cannot be used.
    pub const OTLP_CONFIG_INVALID: &str = "OTLP_CONFIG_INVALID";
    /// The OTLP receiver refused the spans or could not be reached.
    pub const OTLP_EXPORT_FAILED: &str = "OTLP_EXPORT_FAILED";
}

#[derive(Debug, thiserror::Error)]
pub enum ObsError {
    #[error("{path}: {message} ({code})")]
    Path {
        code: &'static str,
        path: PathBuf,
        message: String,
    },
    #[error("{message} ({code})")]
    Invalid { code: &'static str, message: String },
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
}

impl ObsError {
    pub fn code(&self) -> &'static str {
        match self {
            ObsError::Path { code, .. } | ObsError::Invalid { code, .. } => code,
            ObsError::Fs(_) => "IO_ERROR",
        }
    }
}
