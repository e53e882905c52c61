//! Temporary git repositories, plans and scripted shell agents for the runner tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use dandori_config::Config;
use dandori_runner::{ExecutorChoice, ExecutorKind, RunOptions, RunOutcome, RunnerError};
pub use dandori_test_support::git::git as git_in;
use serde_json::{Value, json};

pub struct Repo {
    _dir: tempfile::TempDir,
    pub path: PathBuf,
}

impl Repo {
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("repo");
        std::fs::create_dir_all(&path).unwrap();
        let r = Repo { _dir: dir, path };
        r.git(&["init", "-q", "-b", "main"]);
        r.git(&["config", "user.name", "Test"]);
        r.git(&["config", "user.email", "test@example.invalid"]);
        std::fs::write(r.path.join("README.md"), "# demo\n").unwrap();
        r.git(&["add", "-A"]);
        r.git(&["commit", "-q", "-m", "initial"]);
        r
    }

    pub fn git(&self, args: &[&str]) -> String {
        git_in(&self.path, args)
    }

    /// The run directory for `planning`, written under `.dandori/runs/`.
    pub fn write_plan(&self, planning: &Value) -> PathBuf {
        let run_dir = self.path.join(".dandori/runs/RQ-1/run-1");
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(
            run_dir.join("planning.json"),
            serde_json::to_string_pretty(planning).unwrap(),
        )
        .unwrap();
        run_dir
    }

    /// `(subject, tree)` of every commit on `branch` after main, oldest first.
    pub fn commits(&self, branch: &str) -> Vec<(String, String)> {
        self.git(&[
            "log",
            "--reverse",
            "--topo-order",
            "--format=%s%x1f%T",
            &format!("main..{branch}"),
        ])
        .lines()
        .map(|l| {
            let (s, t) = l.split_once('\x1f').unwrap();
            (s.to_string(), t.to_string())
        })
        .collect()
    }

    /// A copy of this repository (same commits, same hashes) in a new temp dir.
    pub fn copy(&self) -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().canonicalize().unwrap().join("repo");
        let ok = Command::new("cp")
            .arg("-a")
            .arg(&self.path)
            .arg(&path)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cp -a {}", self.path.display());
        Repo { _dir: dir, path }
    }

    /// A shell script agent in the test's temp dir.
    pub fn agent(&self, body: &str) -> PathBuf {
        let p = self.path.parent().unwrap().join("agent.sh");
        std::fs::write(&p, format!("#!/bin/sh\nset -e\n{body}\n")).unwrap();
        p
    }

    pub fn ctl(&self) -> PathBuf {
        let p = self.path.parent().unwrap().join("ctl");
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}

/// One step of a test plan.
pub struct S {
    pub id: &'static str,
    pub deps: Option<Vec<&'static str>>,
    pub unit: Vec<String>,
    pub acs: Vec<&'static str>,
    pub max_diff: u64,
    pub targets: Vec<String>,
    /// `unit` is still the default command.
    default_unit: bool,
}

impl S {
    pub fn new(id: &'static str) -> S {
        S {
            id,
            deps: None,
            // Red on the base, green once the step made its directory: the
            // evidence its ACs are covered (issue 20).
            unit: vec![format!("test -d src/{id}")],
            acs: vec!["AC-01", "AC-02", "AC-03"],
            max_diff: 200,
            targets: vec![format!("src/{id}")],
            default_unit: true,
        }
    }
    pub fn deps(mut self, d: &[&'static str]) -> S {
        self.deps = Some(d.to_vec());
        self
    }
    /// Replaces the default unit command (`test -d src/Sxx`); may be repeated.
    pub fn unit(mut self, u: &str) -> S {
        if self.default_unit {
            self.unit.clear();
            self.default_unit = false;
        }
        self.unit.push(u.to_string());
        self
    }
    /// Also points the default unit command at the first target (`test -e`).
    pub fn targets(mut self, t: &[&str]) -> S {
        self.targets = t.iter().map(|t| t.to_string()).collect();
        if self.default_unit
            && let Some(first) = t.first()
        {
            self.unit = vec![format!("test -e {first}")];
        }
        self
    }
    pub fn acs(mut self, a: &[&'static str]) -> S {
        self.acs = a.to_vec();
        self
    }
    pub fn max_diff(mut self, n: u64) -> S {
        self.max_diff = n;
        self
    }
}

pub fn planning(steps: Vec<S>, gates: Value) -> Value {
    let mut g = json!({
        "require_clean_worktree": true,
        "require_work_branch": true,
        "require_unit_pass": true,
        "require_e2e_for_regression_ac": false,
        "forbid_gh": true,
        "max_step_too_large_retries": 1
    });
    for (k, v) in gates.as_object().cloned().unwrap_or_default() {
        g[k] = v;
    }
    let steps: Vec<Value> = steps
        .into_iter()
        .map(|s| {
            let mut v = json!({
                "step_id": s.id,
                "title": format!("Do {}", s.id),
                "role": "implementer",
                "intent": format!("Create the file of {}", s.id),
                "scope": {"target_paths": s.targets, "max_diff_lines": s.max_diff},
                "inputs": {"request_path": "requests/RQ-1.md"},
                "commands": {"unit": s.unit},
                "success_criteria": [format!("{} exists", s.id)],
                "links_to_ac": s.acs,
                "expected_diff": {"lines_max": s.max_diff, "files_max": 5, "risk_level": "low"},
                "outputs": {"patch_path": format!("patches/{}.patch", s.id), "log_prefix": format!("logs/step.{}", s.id)}
            });
            if let Some(d) = s.deps {
                v["depends_on"] = json!(d);
            }
            v
        })
        .collect();
    json!({
        "version": "1.0",
        "request_id": "RQ-1",
        "run_id": "run-1",
        "created_at": "2026-01-01T00:00:00Z",
        "base_branch": "main",
        "work_branch": "dandori/RQ-1/run-1",
        "limits": {"max_diff_lines": 400, "timeout_sec": 60, "max_steps_per_run": 100, "max_autofix_cycles": 2},
        "context": {
            "summary": "Create files step by step",
            "constraints": ["local_only"],
            "acceptance_criteria": [
                {"id": "AC-01", "given": "a repo", "when": "the run ends", "then": "files exist"},
                {"id": "AC-02", "given": "a repo", "when": "the run ends", "then": "tests pass"},
                {"id": "AC-03", "given": "a repo", "when": "the run ends", "then": "a report exists"}
            ],
            "test_instructions": {"unit": ""}
        },
        "steps": steps,
        "gates": g,
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    })
}

pub fn env() -> BTreeMap<String, String> {
    let mut e = BTreeMap::new();
    e.insert(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string()),
    );
    e.insert(
        "HOME".to_string(),
        std::env::temp_dir().to_string_lossy().into_owned(),
    );
    e
}

pub fn options(repo: &Repo, run_dir: &Path, agent_cmd: Option<String>) -> RunOptions {
    // The scripted agents of these orchestration tests report to a control
    // directory outside the worktree, which the sandbox forbids (as it should);
    // the sandbox itself is tested end to end in the CLI and tools suites.
    let mut config = Config::default();
    config.sandbox.mode = dandori_config::SandboxMode::Off;
    // The default (`auto`: copy-on-write step workspaces where overlayfs works)
    // unless this names one (read only: the process environment is never
    // changed by a test): `pool` runs the whole suite in pool worktrees.
    match std::env::var("DANDORI_TEST_STEP_WORKSPACE").as_deref() {
        Ok("overlay") => config.runner.step_workspace = dandori_config::StepWorkspaceKind::Overlay,
        Ok("pool") => config.runner.step_workspace = dandori_config::StepWorkspaceKind::Pool,
        _ => {}
    }
    RunOptions {
        target: run_dir.to_path_buf(),
        repo: repo.path.clone(),
        config,
        executor: Some(match &agent_cmd {
            Some(_) => ExecutorChoice {
                kind: ExecutorKind::Command,
                agent_cmd,
                agent: None,
                agent_model: None,
            },
            None => ExecutorChoice {
                kind: ExecutorKind::None,
                agent_cmd: None,
                agent: None,
                agent_model: None,
            },
        }),
        executor_override: None,
        approve: false,
        resume: false,
        base_env: env(),
        environment: None,
        progress: None,
        dispatch: None,
    }
}

pub fn run(opts: &RunOptions) -> Result<RunOutcome, RunnerError> {
    dandori_runner::run(opts)
}

pub fn stage(run_dir: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap()).unwrap()
}

pub fn statuses(run_dir: &Path) -> Vec<(String, String)> {
    stage(run_dir)["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

pub fn trace_events(run_dir: &Path, event: &str) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == event)
        .collect()
}

/// After a run of this process: no step workspace is left in the run
/// directory, whichever kind the steps ran in — pool worktrees
/// (`pool-<pid>-<n>`), or copy-on-write layers, the workers' mount points
/// (`ovl-<pid>-…`) and the run's copy of the shared index
/// (`sharedindex-<pid>`). Waits for the background removals first.
pub fn assert_no_step_workspace_left(run_dir: &Path) {
    dandori_runner::git::wait_for_removals();
    let pid = std::process::id();
    let ours = |n: &str| {
        n.starts_with(&format!("pool-{pid}-"))
            || n.starts_with(&format!("ovl-{pid}-"))
            || n == format!("sharedindex-{pid}")
    };
    let left: Vec<String> = std::fs::read_dir(run_dir.join("worktrees"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| ours(n))
        .collect();
    assert!(
        left.is_empty(),
        "step workspaces left after the run: {left:?}"
    );
}
