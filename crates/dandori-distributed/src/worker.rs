//! `dandori worker`: a Restate service endpoint (HTTP/2) serving
//! `DandoriStep/execute`, which runs one step of a run with the same pipeline as a
//! local run. Each worker has its own working directory: a git repository that
//! fetches the run's refs from the remote named in the request, a run directory per
//! run (the step's trace events, logs and patch) and the steps' worktrees.
//!
//! The step runs inside one journaled side effect: once it returned, Restate
//! remembers the outcome and never runs it again. A worker that dies mid-step
//! leaves no trace in the journal; Restate retries the invocation (on the
//! deployment's address), and the retry first looks for the step's ref on the
//! remote: a commit pushed before the death is taken as the result, not redone.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dandori_config::Config;
use dandori_runner::git::Git;
use dandori_runner::step::StepResult;
use dandori_runner::{ExecutorChoice, Progress, RunOptions, reason};
use restate_sdk::prelude::*;
use sha2::{Digest, Sha256};

use crate::error::DistributedError;
use crate::protocol::{OutcomeStatus, STEP_FILE_LIMIT, StepFile, StepOutcome, StepRequest};
use crate::refs;

pub struct WorkerOptions {
    /// The worker's own working directory (created when missing).
    pub work_dir: PathBuf,
    pub config: Config,
    /// The executor of every step this worker runs (its agent command, or the
    /// configured model provider).
    pub executor: Option<ExecutorChoice>,
    pub approve: bool,
    /// The worker's environment: where its agent's credentials come from.
    pub base_env: BTreeMap<String, String>,
    pub progress: Option<Progress>,
    /// Restate's request identity keys (`publickeyv1_…`): when any is given, only
    /// requests signed by the matching server are answered (401 otherwise).
    pub identity_keys: Vec<String>,
}

struct Worker {
    opts: WorkerOptions,
    /// `host:pid`, recorded in each outcome.
    id: String,
    /// Fetches and pushes of one run do not interleave (runs do: their refs are
    /// disjoint).
    run_locks: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Creating a repository.
    init_lock: Mutex<()>,
    worktrees: AtomicU64,
}

/// The Restate service: one handler, `execute`.
pub struct DandoriStep(Arc<Worker>);

#[restate_sdk::service]
impl DandoriStep {
    #[handler]
    async fn execute(
        &self,
        ctx: Context<'_>,
        req: Json<StepRequest>,
    ) -> HandlerResult<Json<StepOutcome>> {
        let worker = self.0.clone();
        let Json(req) = req;
        let outcome = ctx
            .run(move || async move {
                let step = format!("{} {}", req.run_id, req.step_id);
                let joined = tokio::task::spawn_blocking(move || worker.execute(&req)).await;
                match joined {
                    Ok(Ok(outcome)) => Ok(Json(outcome)),
                    // A request that can never succeed ends the invocation.
                    Ok(Err(e @ DistributedError::Invalid { .. })) => {
                        Err(TerminalError::new(format!("{step}: {e}")).into())
                    }
                    // Git, filesystem, remote: Restate retries with backoff.
                    Ok(Err(e)) => Err(HandlerError::from(format!("{step}: {e}"))),
                    Err(e) => Err(HandlerError::from(format!("{step}: worker task: {e}"))),
                }
            })
            .name("step")
            .await?;
        Ok(outcome)
    }
}

/// Serves the step handler and the run workflow on `listener` until the process
/// ends. An identity key that is not a Restate public key is an error before
/// anything is served.
pub async fn serve(
    listener: tokio::net::TcpListener,
    opts: WorkerOptions,
) -> Result<(), DistributedError> {
    let mut endpoint = Endpoint::builder();
    if !opts.identity_keys.is_empty() {
        crate::identity::install();
    }
    for k in &opts.identity_keys {
        endpoint = endpoint
            .identity_key(k)
            .map_err(|e| DistributedError::Invalid {
                reason_code: crate::protocol::RESTATE_IDENTITY_INVALID,
                message: format!("identity key {k}: {e}"),
            })?;
    }
    let id = format!(
        "{}:{}",
        std::fs::read_to_string("/etc/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "localhost".to_string()),
        std::process::id()
    );
    let worker = Arc::new(Worker {
        opts,
        id,
        run_locks: Mutex::new(HashMap::new()),
        init_lock: Mutex::new(()),
        worktrees: AtomicU64::new(0),
    });
    // A step takes minutes of model time without a journal entry: Restate must
    // not abort it as stalled (a dead worker is noticed by its closed connection).
    // A step whose worker is gone is retried every few seconds for hours, so a
    // replaced worker picks it up soon.
    let service = DandoriStep(worker).into_service_definition().options(
        ServiceOptions::new()
            .inactivity_timeout(Duration::from_secs(6 * 3600))
            .abort_timeout(Duration::from_secs(6 * 3600))
            .retry_policy_initial_interval(Duration::from_millis(500))
            .retry_policy_max_interval(Duration::from_secs(5))
            .retry_policy_max_attempts(5000),
    );
    // The run workflows are served by every worker too; a workflow waiting for
    // its steps' calls is suspended by Restate, holding no worker.
    HttpServer::new(
        endpoint
            .bind(service)
            .bind(crate::workflow::DandoriRun)
            .build(),
    )
    .serve(listener)
    .await;
    Ok(())
}

impl Worker {
    fn progress(&self, line: &str) {
        if let Some(p) = &self.opts.progress {
            p(line);
        }
    }

    fn execute(&self, req: &StepRequest) -> Result<StepOutcome, DistributedError> {
        refs::check_component("run id", &req.run_id)?;
        refs::check_component("step id", &req.step_id)?;
        let repo = self.repository(&req.remote)?;
        let git = Git::new(&repo);
        let step_ref = refs::step_ref(&req.run_id, &req.step_id);
        let run_lock = self.run_lock(&req.run_id);
        {
            let _turn = run_lock.lock().unwrap_or_else(|p| p.into_inner());
            refs::fetch_run(&git, &req.remote, &req.run_id)?;
        }
        if let Some(held) = refs::local_ref(&git, &step_ref)? {
            self.progress(&format!(
                "{} {}: already on the remote at {held}",
                req.run_id, req.step_id
            ));
            return self.recovered(&git, req, &held);
        }
        let run_dir = self.opts.work_dir.join("runs").join(&req.run_id);
        let planning_path = run_dir.join("planning.json");
        if dandori_fs::read_to_string(&planning_path).ok().as_deref() != Some(&req.planning) {
            dandori_fs::write_atomic(&planning_path, &req.planning)?;
        }
        let worktree = run_dir.join("worktrees").join(format!(
            "{}.{}-{}-{}",
            req.step_id,
            req.attempt,
            std::process::id(),
            self.worktrees.fetch_add(1, Ordering::SeqCst)
        ));
        let opts = RunOptions {
            target: run_dir.clone(),
            repo: repo.clone(),
            config: self.opts.config.clone(),
            executor: self.opts.executor.clone(),
            executor_override: None,
            approve: self.opts.approve,
            resume: false,
            base_env: self.opts.base_env.clone(),
            environment: None,
            progress: None,
            dispatch: None,
        };
        self.progress(&format!(
            "{} {}: started (attempt {})",
            req.run_id, req.step_id, req.attempt
        ));
        let report =
            dandori_runner::run_dispatched_step(&opts, req.index, &req.commits, &worktree)?;
        if report.step_id != req.step_id {
            return Err(DistributedError::Invalid {
                reason_code: reason::PLAN_INVALID,
                message: format!(
                    "$.steps[{}] is {}, not {}",
                    req.index, report.step_id, req.step_id
                ),
            });
        }
        let mut outcome = StepOutcome::from_report(&report, &self.id);
        outcome.files = step_files(&run_dir, &req.step_id);
        if let StepResult::Committed { commits } = &report.result
            && let Some(proof) = commits.last()
        {
            let held = {
                let _turn = run_lock.lock().unwrap_or_else(|p| p.into_inner());
                refs::push_once(&git, &req.remote, &req.run_id, &step_ref, proof)?
            };
            if &held != proof {
                // Another execution of this step pushed first: its commit is the
                // step's, ours is dropped.
                outcome = self.recovered(&git, req, &held)?;
            }
        }
        if worktree.exists() && outcome.status == OutcomeStatus::Committed {
            let _ = git.remove_worktree(&worktree);
        }
        self.progress(&format!(
            "{} {}: {:?}{}",
            req.run_id,
            req.step_id,
            outcome.status,
            outcome
                .reason_code
                .as_deref()
                .map(|c| format!(" ({c})"))
                .unwrap_or_default()
        ));
        Ok(outcome)
    }

    /// The outcome of a step whose proof commit `held` is already on the remote,
    /// after checking its trailers name this run and step.
    fn recovered(
        &self,
        git: &Git,
        req: &StepRequest,
        held: &str,
    ) -> Result<StepOutcome, DistributedError> {
        let commits = git.step_commits(&format!("{held}^!"))?;
        let proof = commits
            .iter()
            .find(|c| c.hash == held && c.run_id == req.run_id && c.step_id == req.step_id)
            .filter(|c| c.completes_step())
            .ok_or_else(|| DistributedError::Invalid {
                reason_code: reason::RUN_DIR_INVALID,
                message: format!(
                    "{} holds {held}, which is not the proof commit of {} in run {} (Dandori-Run / Dandori-Step trailers)",
                    refs::step_ref(&req.run_id, &req.step_id),
                    req.step_id,
                    req.run_id
                ),
            })?;
        Ok(StepOutcome {
            commits: vec![held.to_string()],
            checks: proof.checks.clone(),
            recovered: true,
            // The logs, when this worker is the one that ran it.
            files: step_files(
                &self.opts.work_dir.join("runs").join(&req.run_id),
                &req.step_id,
            ),
            ..StepOutcome::bare(OutcomeStatus::Committed, &self.id)
        })
    }

    fn run_lock(&self, run_id: &str) -> Arc<Mutex<()>> {
        let mut locks = self.run_locks.lock().unwrap_or_else(|p| p.into_inner());
        locks.entry(run_id.to_string()).or_default().clone()
    }

    /// The worker's repository for `remote` (created on first use): a plain
    /// repository that only ever holds what the runs' refs bring.
    fn repository(&self, remote: &str) -> Result<PathBuf, DistributedError> {
        let digest = Sha256::digest(remote.as_bytes());
        let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        let dir = self.opts.work_dir.join("repos").join(name);
        let _turn = self.init_lock.lock().unwrap_or_else(|p| p.into_inner());
        if !dir.join(".git").exists() {
            dandori_fs::create_dir_all(&dir)?;
            init_repository(&dir)?;
        }
        Ok(dir)
    }
}

/// The step's logs and patch in the worker's run directory, for the coordinator's.
fn step_files(run_dir: &Path, step_id: &str) -> Vec<StepFile> {
    let mut paths = Vec::new();
    if let Ok(entries) = std::fs::read_dir(run_dir.join("logs")) {
        for e in entries.flatten() {
            paths.push(format!("logs/{}", e.file_name().to_string_lossy()));
        }
    }
    paths.push(format!("patches/{step_id}.patch"));
    paths.sort();
    paths
        .into_iter()
        .filter(|p| StepFile::belongs_to(p, step_id))
        .filter_map(|path| {
            let mut text = dandori_fs::read_to_string(run_dir.join(&path)).ok()?;
            if text.len() > STEP_FILE_LIMIT {
                let mut end = STEP_FILE_LIMIT;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push_str("\n[dandori: truncated on the worker; the whole file is in its run directory]\n");
            }
            Some(StepFile { path, text })
        })
        .collect()
}

fn init_repository(dir: &Path) -> Result<(), DistributedError> {
    let git = Git::new(dir);
    git.run(&["init", "--quiet"])?;
    // Step commits are authored by dandori; a worker without a git identity
    // must still be able to commit.
    for (k, v) in [
        ("user.name", "dandori worker"),
        ("user.email", "dandori@localhost"),
    ] {
        let (ok, _, _) = git.output(&["config", "--get", k])?;
        if !ok {
            git.run(&["config", k, v])?;
        }
    }
    Ok(())
}
