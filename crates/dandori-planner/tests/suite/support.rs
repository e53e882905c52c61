//! Test helpers: example repositories copied into temp dirs as real git repos,
//! planning with the offline planner, and snapshot filters.

use std::path::{Path, PathBuf};
use std::process::Command;

use dandori_planner::{PlanOptions, PlanOutcome, RequestSource};

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if name == ".dandori" || name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        let target = to.join(&name);
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs git in `dir` with an explicit, minimal environment.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=dandori-test",
            "-c",
            "user.email=test@example.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git must be on PATH for these tests (run ./scripts/test.sh)");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `examples/<name>` copied into a temp dir and committed on `main` of a fresh repo.
pub fn example_repo(name: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&examples_dir().join(name), dir.path());
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(dir.path(), &["add", "-A"]);
    git(dir.path(), &["commit", "-q", "-m", "example"]);
    dir
}

pub fn plan_file(repo: &Path, request: &str) -> PlanOutcome {
    let mut opts = PlanOptions::new(repo, RequestSource::File(repo.join(request)));
    // Fixed tools, so environment commands do not depend on this machine's PATH.
    opts.toolchain = Some(dandori_planner::gathering::Toolchain::with(&[
        "python", "pip",
    ]));
    dandori_planner::plan(&opts).unwrap()
}

/// Filters for run ids, timestamps, durations and temp paths.
pub fn settings() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(r"\d{8}-\d{6}-[0-9a-f]{6}", "[RUN_ID]");
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})",
        "[TIMESTAMP]",
    );
    s.add_filter(r#""duration_ms": \d+"#, r#""duration_ms": "[MS]""#);
    s.add_filter(
        r#""(goal_understanding|task_decomposition|action_plan)": \d+"#,
        r#""$1": "[MS]""#,
    );
    s.add_filter(r"/tmp/[^\s\x22]*", "[TMP]");
    s.set_prepend_module_to_snapshot(false);
    s
}

pub fn pretty(v: &impl serde::Serialize) -> String {
    serde_json::to_string_pretty(v).unwrap()
}

pub fn trace_events(outcome: &PlanOutcome) -> Vec<dandori_trace::TraceEvent> {
    dandori_trace::read_trace(&outcome.trace_jsonl).unwrap()
}
