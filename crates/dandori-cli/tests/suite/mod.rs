#[cfg(feature = "restate")]
mod distributed;
// --
mod ci_init;
// --
mod ci_lifecycle;
// --
mod workflow_gate;
// --
mod corpus;
// --
mod end_to_end;
// --
mod env;
// --
mod env_parallel;
// --
mod env_plugins;
// --
mod env_plugins_shipped;
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
mod local_model;
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
mod resume_work;
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
mod run_files;
mod run_llm;
// --
mod seed_replan;
// --
mod seed_rows;
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
mod config_fail_closed;
// --
mod trust;
// --
mod agent_cli;
// --
mod agent_presets;
// --
mod ci_bot;
mod ci_events;
mod ci_gitlab_local;
// --
mod env_kill;
// --
mod kill_matrix;
mod kill_publish;
// --
mod overlay_workspace;
// --
mod repl;
// --

/// Whether the tests run as root (CI jobs and containers do).
pub fn running_as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Starts `cmd` (a `dandori run` or `resume`, its output discarded), waits until
/// `point` yields a value — the moment of the run to kill it at — and kills it
/// with SIGKILL `settle` later. Fails, naming `what`, when the point is not
/// reached within `within` or the run ends before it.
pub fn kill_run_at<T>(
    cmd: &mut std::process::Command,
    what: &str,
    within: std::time::Duration,
    settle: std::time::Duration,
    mut point: impl FnMut() -> Option<T>,
) -> T {
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let reached = loop {
        if let Some(v) = point() {
            break v;
        }
        if start.elapsed() > within || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the run never reached the point to kill it at: {what}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    std::thread::sleep(settle);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    reached
}
