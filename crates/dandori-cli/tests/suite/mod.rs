#[cfg(feature = "restate")]
mod distributed;
// --
mod env;
// --
mod evidence;
// --
mod eval_localize;
// --
mod first_run;
// --
mod journeys;
// --
mod forge;
// --
mod graph;
// --
mod help;
// --
mod locate;
// --
mod mcp;
// --
mod mcp_http;
// --
mod metrics;
// --
mod otel;
// --
mod package;
// --
mod runs;
// --
mod report_html;
// --
mod plan;
// --
mod plan_llm;
// --
mod policy;
// --
mod readme;
// --
mod run;
// --
mod run_llm;
// --
mod run_env;
// --
mod sandbox;

mod sandbox_root;
mod sandbox_view;
// --
mod schema;
// --
mod validate;
// --
mod trust;
// --
mod agent_cli;
// --
mod agent_presets;
// --
mod ci_bot;
// --
mod env_kill;
// --
mod kill_matrix;
// --
mod repl;
// --

/// Whether the tests run as root (CI jobs and containers do).
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}
