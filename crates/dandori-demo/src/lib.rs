//! `dandori demo`: the whole loop on a copy of the embedded example, safely and
//! without a model. It writes the example into a fresh directory, makes it its own
//! git repository, plans [`example::REQUEST`] with the offline planner and runs the
//! plan with the scripted [`agent::DemoAgent`]: real worktrees, unit commands,
//! commits with trailers, `report.md` with its Mermaid charts. Nothing outside the
//! new directory is touched.

pub mod agent;
pub mod example;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use dandori_planner::{PlanOptions, RequestSource};
use dandori_runner::{Completion, Progress, RunOptions};

/// The unit command of the demo's steps: the example's tests are `unittest`
/// tests, so they run on a bare Python 3 (the planner's `python -m pytest` would
/// need pytest, installed by the environment sub-phase from the network).
pub const UNIT_COMMAND: &str = "python3 -m unittest discover -s tests -t . -v";

/// The demo's reason codes.
pub mod reason {
    /// The demo directory exists and is not empty.
    pub const DEMO_DIR_NOT_EMPTY: &str = "DEMO_DIR_NOT_EMPTY";
    /// `git init` / commit of the demo repository failed (is git installed?).
    pub const DEMO_GIT_FAILED: &str = "DEMO_GIT_FAILED";
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error(
        "{}: {} exists and is not empty. To start again: `rm -rf {}` and run `dandori demo {}` again, or pass a new directory (`dandori demo NEW_DIR`); an earlier demo's runs are in {}/.dandori/runs (`dandori runs --repo {}`)",
        reason::DEMO_DIR_NOT_EMPTY,
        .0.display(),
        .0.display(),
        .0.display(),
        .0.display(),
        .0.display()
    )]
    DirNotEmpty(PathBuf),
    #[error("{}: git {args} in {}: {message}", reason::DEMO_GIT_FAILED, .dir.display())]
    Git {
        args: String,
        dir: PathBuf,
        message: String,
    },
    #[error(transparent)]
    Fs(#[from] dandori_fs::FsError),
    #[error("{code}: {source}", code = .0.code(), source = .0)]
    Plan(#[from] dandori_planner::PlannerError),
    #[error("{code}: {source}", code = .0.reason_code(), source = .0)]
    Run(#[from] dandori_runner::RunnerError),
}

impl DemoError {
    pub fn reason_code(&self) -> &'static str {
        match self {
            DemoError::DirNotEmpty(_) => reason::DEMO_DIR_NOT_EMPTY,
            DemoError::Git { .. } => reason::DEMO_GIT_FAILED,
            DemoError::Fs(_) => dandori_runner::reason::IO_ERROR,
            DemoError::Plan(e) => e.code(),
            DemoError::Run(e) => e.reason_code(),
        }
    }
}

pub struct DemoOptions {
    /// A new (or empty) directory for the demo repository.
    pub dir: PathBuf,
    /// Environment of git, the unit commands and the agent (the CLI passes its own).
    pub base_env: BTreeMap<String, String>,
    pub progress: Option<Progress>,
}

#[derive(Debug, Clone)]
pub struct DemoOutcome {
    pub dir: PathBuf,
    pub run_dir: PathBuf,
    pub work_branch: String,
    pub base_branch: String,
    pub completion: Completion,
    /// `git log base..work`: each commit's subject and trailers, oldest first.
    pub commits: Vec<String>,
    pub report: PathBuf,
}

pub fn run(opts: &DemoOptions) -> Result<DemoOutcome, DemoError> {
    let say = |s: &str| {
        if let Some(p) = &opts.progress {
            p(s);
        }
    };
    if opts.dir.exists() {
        let empty = std::fs::read_dir(&opts.dir)
            .map(|mut d| d.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(DemoError::DirNotEmpty(opts.dir.clone()));
        }
    }
    dandori_fs::create_dir_all(&opts.dir)?;
    let dir = dandori_fs::canonicalize(&opts.dir)?;
    say(&format!(
        "demo: writing the example todo-api into {}",
        dir.display()
    ));
    for (path, text) in example::FILES {
        dandori_fs::write_atomic(dir.join(path), text)?;
    }
    say("demo: git init (a repository of its own) and a first commit");
    git(
        &dir,
        &opts.base_env,
        &["init", "--quiet", "--initial-branch=main"],
    )?;
    // The demo repository's own identity, so the runner's step commits work on a
    // machine without a global git identity (only this repository's config).
    git(
        &dir,
        &opts.base_env,
        &["config", "user.name", "dandori demo"],
    )?;
    git(
        &dir,
        &opts.base_env,
        &["config", "user.email", "demo@dandori.invalid"],
    )?;
    git(&dir, &opts.base_env, &["add", "-A"])?;
    git(
        &dir,
        &opts.base_env,
        &[
            "commit",
            "--quiet",
            "-m",
            "todo-api: the example repository",
        ],
    )?;

    say(&format!(
        "demo: planning {} with the offline planner",
        example::REQUEST
    ));
    let mut config = dandori_config::Config::default();
    // The example needs nothing but Python 3: no install, no network.
    config.planning.environment_setup.enabled = false;
    let mut plan_opts = PlanOptions::new(&dir, RequestSource::File(dir.join(example::REQUEST)));
    plan_opts.config = config.clone();
    let planned = dandori_planner::plan(&plan_opts)?;
    let mut planning = planned.planning;
    for step in &mut planning.steps {
        step.commands.unit = Some(vec![UNIT_COMMAND.to_string()]);
    }
    // Each behaviour the request asks for is proven by the example's test of it
    // (issue 20: red or absent on the base, green after the change).
    for ac in &mut planning.context.acceptance_criteria {
        let text = format!("{} {}", ac.when, ac.then);
        let check = [
            ("sort=priority", "test_sort_by_priority"),
            ("priority=high", "test_filter_by_priority"),
            ("urgent", "test_unknown_priority_is_rejected"),
        ]
        .iter()
        .find(|(k, _)| text.contains(k))
        .map(|(_, t)| *t);
        if let Some(t) = check {
            ac.extra.insert(
                "check".to_string(),
                serde_json::Value::String(t.to_string()),
            );
        }
    }
    let text = serde_json::to_string_pretty(&planning).map_err(|e| {
        DemoError::Run(dandori_runner::RunnerError::Executor(format!(
            "serialising planning.json: {e}"
        )))
    })?;
    dandori_fs::write_atomic(&planned.planning_json, format!("{text}\n"))?;
    say(&format!(
        "demo: {} step(s) planned; unit command of every step: {UNIT_COMMAND}",
        planning.steps.len()
    ));
    say("demo: running the plan with the DEMO AGENT (scripted edits, no model)");
    let targets = planning
        .steps
        .iter()
        .map(|s| (s.step_id.clone(), s.scope.target_paths.clone()))
        .collect();
    let run_opts = RunOptions {
        target: planned.run_dir.clone(),
        repo: dir.clone(),
        config,
        executor: None,
        executor_override: Some(Arc::new(agent::DemoAgent::new(targets))),
        approve: false,
        resume: false,
        base_env: opts.base_env.clone(),
        environment: None,
        progress: opts.progress.clone(),
        dispatch: None,
    };
    let outcome = dandori_runner::run(&run_opts)?;
    // The demo's directory may be removed next: the pool's files first.
    dandori_runner::git::wait_for_removals();
    let log = git(
        &dir,
        &opts.base_env,
        &[
            "log",
            "--reverse",
            "--format=%h %s%n%(trailers:only,unfold)%x00",
            &format!("{}..{}", planning.base_branch, planning.work_branch),
        ],
    )?;
    let commits = log
        .split('\0')
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
        .collect();
    Ok(DemoOutcome {
        report: outcome.run_dir.join("report.md"),
        run_dir: outcome.run_dir,
        work_branch: planning.work_branch,
        base_branch: planning.base_branch,
        completion: outcome.completion,
        commits,
        dir,
    })
}

/// Runs git in the demo repository with a fixed identity (the repository is the
/// demo's own; the user's git config is neither read for identity nor changed).
fn git(dir: &Path, env: &BTreeMap<String, String>, args: &[&str]) -> Result<String, DemoError> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=dandori demo",
            "-c",
            "user.email=demo@dandori.invalid",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .env_clear()
        .envs(env)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| DemoError::Git {
            args: args.join(" "),
            dir: dir.to_path_buf(),
            message: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(DemoError::Git {
            args: args.join(" "),
            dir: dir.to_path_buf(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
