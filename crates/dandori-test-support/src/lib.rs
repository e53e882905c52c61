//! Test support: a scripted fake LLM server over real HTTP, an OTLP/HTTP trace
//! receiver, temporary git repositories and hand-written plans.
//!
//! This crate is only used from tests, so it panics with a clear message on setup
//! failures instead of threading errors through every test.

pub mod fake_agent_model;
pub mod fake_forge;
pub mod fake_llm;
pub mod fixtures;
pub mod gh_expr;
pub mod git;
pub mod local_model;
pub mod openapi;
pub mod otlp_receiver;
pub mod package_index;
pub mod plans;
pub mod secret_forms;
mod serve;
pub mod tool_cache;
pub mod webhook_examples;

pub use fake_agent_model::{FakeAgentModel, Turn, Wire, installed_cli};
pub use fake_forge::FakeForge;
pub use fake_llm::{FakeLlmServer, RecordedRequest, Reply};
pub use git::TempGitRepo;
pub use local_model::LocalModel;
pub use otlp_receiver::{OtlpReceiver, ReceivedSpan};
pub use package_index::PackageIndex;
