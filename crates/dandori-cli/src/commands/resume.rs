//! `dandori resume RUN_DIR`: the body is shared with `run` (see `run.rs`); resume
//! differs only in requiring an existing stage.json.

pub use super::run::resume;
