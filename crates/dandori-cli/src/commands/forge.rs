//! `dandori run`'s forge side, adapted: the run's issue reporter and
//! `--open-pr` publisher of `dandori_forge::run_hook`, their lines printed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use dandori_config::Config;
use dandori_forge::run_hook::{Publisher, RunReporter};

use crate::output;

/// The run's reporter on its issue, when it came from one and reports back.
/// The status comment shows what `dandori status` shows.
pub fn reporter(
    target: &Path,
    config: &Config,
    env: &BTreeMap<String, String>,
) -> Option<Arc<RunReporter>> {
    RunReporter::open(
        target,
        config,
        env,
        Box::new(|run_dir: &Path| {
            let progress = dandori_mcp::inspect::progress(run_dir).ok()?;
            serde_json::to_value(&progress).ok()
        }),
        Arc::new(|line: &str| output::progress(line)),
    )
}

/// `--open-pr`, checked before the run: the publisher, or the exit status
/// after the error was printed.
pub fn publisher(
    target: &Path,
    repo: &Path,
    config: &Config,
    env: &BTreeMap<String, String>,
    json: bool,
) -> Result<Publisher, ExitCode> {
    Publisher::open(target, repo, config, env).map_err(|e| {
        let code = e.exit_code();
        if json {
            output::json(
                &serde_json::json!({"status": "error", "reason_code": e.code(),
                "message": e.to_string(), "exit_code": code}),
            );
        }
        output::error(&format!("{}: --open-pr: {e}", e.code()));
        ExitCode::from(code)
    })
}

/// Pushes and opens / updates the pull request: the completion record's
/// `pull_request` value and whether it worked.
pub fn publish(p: &Publisher, completion: &serde_json::Value) -> (serde_json::Value, bool) {
    let report = p.publish(completion);
    for line in &report.lines {
        output::progress(line);
    }
    if let Some(e) = &report.error {
        output::error(e);
    }
    (report.value, report.error.is_none())
}

/// `APPROVAL_PENDING` (exit 3) when the run's plan has a revision waiting for
/// approval.
pub fn refuse_pending(target: &Path) -> Option<ExitCode> {
    dandori_forge::session::pending_approval(target).map(|message| {
        output::error(&message);
        ExitCode::from(dandori_forge::revision_flow::EXIT_AWAITING_APPROVAL)
    })
}

/// The run's progress callback, also editing the status comment.
pub fn with_reporter(
    progress: Option<dandori_runner::Progress>,
    reporter: Option<Arc<RunReporter>>,
) -> Option<dandori_runner::Progress> {
    match reporter {
        None => progress,
        Some(r) => Some(Arc::new(move |line: &str| {
            if let Some(p) = &progress {
                p(line);
            }
            r.progress();
        })),
    }
}
