//! The environment sub-phase of seed 002: analyse the repository's environment
//! files (`analyzer`), choose the environment and its commands (`selection`), run
//! the setup under the command policy with error classification, retries and
//! regeneration (`setup`, `classify`), verify it (`verify`), record everything
//! (`records`), set up a repository's independent ecosystems at the same time
//! (`parallel`), reuse an unchanged environment (`reuse`), and run commands
//! inside the prepared environments afterwards (`activation`). A run's
//! environment is prepared in a checkout dandori keeps inside the git directory
//! (`tree`), never in the user's. `regenerate` asks a model for corrected setup
//! commands when a provider is configured.

pub mod activation;
pub mod analyzer;
pub mod classify;
pub mod installer;
pub mod lockfile;
pub mod network;
pub mod parallel;
pub mod phase;
pub mod plugins;
pub mod records;
pub mod regenerate;
pub mod reuse;
pub mod selection;
pub mod setup;
pub mod tools;
pub mod tree;
pub mod verify;

pub use analyzer::{EnvironmentAnalysis, analyze, analyze_paths};
pub use selection::{Toolchain, select_environment, select_environment_with};

/// The errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error(transparent)]
    Exec(#[from] dandori_exec::ExecError),
    #[error("{path}: {message}")]
    Record { path: String, message: String },
    #[error("command regeneration: {message}")]
    Regeneration { message: String },
    /// An ecosystem plugin failed or answered outside the protocol.
    #[error("plugin {plugin}: {function}: {message} ({code})")]
    Plugin {
        plugin: String,
        function: &'static str,
        code: &'static str,
        message: String,
    },
}
