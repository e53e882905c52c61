//! The planner's one error enum. Every variant names what it concerns (a file, a
//! request id, a planner) and maps to a stable reason code with [`PlannerError::code`].

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum PlannerError {
    /// `--repo` does not exist or is not a directory.
    #[error("repository {} does not exist or is not a directory", path.display())]
    RepoNotFound { path: PathBuf },

    /// The request file could not be read.
    #[error("request {}: cannot be read: {source}", path.display())]
    RequestUnreadable {
        path: PathBuf,
        #[source]
        source: dandori_fs::FsError,
    },

    /// The request has no text to plan from.
    #[error("request {origin}: is empty (no title, summary or requirements)")]
    EmptyRequest { origin: String },

    /// The request is malformed (bad front matter, unusable id).
    #[error("request {origin}: line {line}: {message}")]
    InvalidRequest {
        origin: String,
        line: usize,
        message: String,
    },

    /// The request is larger than [`crate::request::MAX_REQUEST_BYTES`]: planning
    /// work grows with it, so a hostile request is refused before parsing.
    #[error("request {origin}: {bytes} bytes exceeds the limit of {limit} bytes")]
    RequestTooLarge {
        origin: String,
        bytes: usize,
        limit: usize,
    },

    /// The repository scan failed.
    #[error("scanning {}: {message}", root.display())]
    Scan { root: PathBuf, message: String },

    /// A draft planner could not produce a draft. The common code falls back to a
    /// single-step plan (fail-closed, seed 003 §9.2) when it sees this.
    #[error("planner {planner}: {message}")]
    Draft {
        planner: String,
        message: String,
        /// A model's failure: its reason code, cause and config key.
        failure: Option<crate::llm::failure::ModelFailure>,
    },

    /// The model found the goal unclear (seed 000 §10.1.1): planning stops with the
    /// clarification questions (exit status 3 in the CLI), it does not fall back.
    #[error("planner {planner}: the goal is unclear: {message}; clarification needed: {}", questions.join(" / "))]
    UnclearGoal {
        planner: String,
        message: String,
        questions: Vec<String>,
    },

    /// `--provider` / `--base-url` / `--model` / `--api-key-env` or the `llm:` config
    /// section do not name a usable provider.
    #[error("LLM provider: {message}")]
    Provider { message: String },

    /// The assembled plan could not be serialised or is structurally unusable.
    #[error("assembling planning.json: {0}")]
    Assemble(String),

    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),

    #[error(transparent)]
    Trace(#[from] dandori_trace::TraceError),
}

impl PlannerError {
    /// A stable reason code for `--json` output and `errors.json`.
    pub fn code(&self) -> &'static str {
        match self {
            PlannerError::RepoNotFound { .. } => "REPO_NOT_FOUND",
            PlannerError::RequestUnreadable { .. } => "REQUEST_UNREADABLE",
            PlannerError::EmptyRequest { .. } => "REQUEST_EMPTY",
            PlannerError::InvalidRequest { .. } => "REQUEST_INVALID",
            PlannerError::RequestTooLarge { .. } => "REQUEST_TOO_LARGE",
            PlannerError::Scan { .. } => "REPO_SCAN_FAILED",
            PlannerError::Draft { .. } => "PLANNING_DRAFT_FAILED",
            PlannerError::UnclearGoal { .. } => "PLANNING_UNCLEAR_GOAL",
            PlannerError::Provider { .. } => "LLM_PROVIDER_INVALID",
            PlannerError::Assemble(_) => "PLANNING_ASSEMBLE_FAILED",
            PlannerError::Fs(_) => "IO_ERROR",
            PlannerError::Trace(_) => "TRACE_ERROR",
        }
    }

    /// True for errors of the user's input (exit code 2 in the CLI).
    pub fn is_input_error(&self) -> bool {
        match self {
            PlannerError::RepoNotFound { .. }
            | PlannerError::RequestUnreadable { .. }
            | PlannerError::EmptyRequest { .. }
            | PlannerError::InvalidRequest { .. }
            | PlannerError::RequestTooLarge { .. }
            | PlannerError::Provider { .. } => true,
            PlannerError::Scan { .. }
            | PlannerError::Draft { .. }
            | PlannerError::UnclearGoal { .. }
            | PlannerError::Assemble(_)
            | PlannerError::Fs(_)
            | PlannerError::Trace(_) => false,
        }
    }
}
