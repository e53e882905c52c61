//! `dandori run --engine restate`: the run's scheduling moves into its Restate
//! workflow (`DandoriRun`, keyed by the run id, [`crate::workflow`]), which calls
//! every step as a durable call of `DandoriStep/execute` on the workers. This side
//! starts the workflow, or attaches to it when it runs already (a `resume` after
//! this process died), and follows it: each step the coordinator schedules waits
//! for the workflow's outcome of that step (a durable promise), whose commit comes
//! back through the git remote (see [`crate::refs`]). Merging, `stage.json`, the
//! guardrails and the report stay with the coordinator.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dandori_plan::{Planning, Stage, StepStatus};
use dandori_runner::dispatch::{StepCall, StepDispatch};
use dandori_runner::git::Git;
use dandori_runner::plan::RunPaths;
use dandori_runner::step::StepReport;
use dandori_runner::{Progress, RunnerError};
use serde::{Deserialize, Serialize};

use crate::admin;
use crate::error::DistributedError;
use crate::protocol::{
    OutcomeStatus, RESTATE_UNAVAILABLE, RunSpec, SERVICE, SpecStep, StepFile, StepOutcome,
    WORKFLOW, WorkflowState,
};
use crate::refs;

/// How long a request keeps being sent again while the server cannot be reached.
const UNAVAILABLE_LIMIT: Duration = Duration::from_secs(600);

/// The engine settings recorded in `stage.json` (`engine`), so `resume` continues
/// on the same server and remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineOptions {
    /// Restate's ingress (`http://host:8080`).
    pub restate_url: String,
    /// Restate's admin API; default: the ingress host, port 9070.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_url: Option<String>,
    /// The git remote the workers fetch from and push to (URL or path).
    pub remote: String,
    /// Worker endpoints to register when the step service is not registered yet.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub register: Vec<String>,
    /// The key of the run's workflow (`<run id>`, or `<run id>.g<n>` for a later
    /// generation started by `resume` after the workflow ended).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workflow: Option<String>,
}

/// What the coordinator's scheduler is limited by, handed to the workflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `runner.max_parallel_workers` (lowered by the plan's `worker_strategy`,
    /// `dandori_runner::plan::max_parallel`).
    pub max_parallel_workers: u32,
}

impl EngineOptions {
    pub fn admin_url(&self) -> String {
        self.admin_url
            .clone()
            .unwrap_or_else(|| admin::default_admin_url(&self.restate_url))
    }
}

pub struct RestateEngine {
    opts: EngineOptions,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    progress: Option<Progress>,
    /// The planning.json text sent with each step (read once).
    planning: Mutex<Option<String>>,
    /// Fetches into the run's repository do not interleave.
    git_lock: Mutex<()>,
    /// The run directory (its stage.json is what the workflow starts from).
    run_dir: PathBuf,
    limits: Limits,
    /// The key of the run's workflow, once started or attached.
    workflow: Mutex<Option<String>>,
}

impl RestateEngine {
    /// The engine of the run in `run_dir` (a run directory or its planning.json).
    pub fn new(
        opts: EngineOptions,
        run_dir: &Path,
        limits: Limits,
        progress: Option<Progress>,
    ) -> Result<RestateEngine, DistributedError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|e| DistributedError::Restate {
                url: opts.restate_url.clone(),
                message: format!("starting the HTTP client runtime: {e}"),
            })?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .build()
            .map_err(|e| DistributedError::Restate {
                url: opts.restate_url.clone(),
                message: format!("HTTP client: {e}"),
            })?;
        Ok(RestateEngine {
            opts,
            runtime,
            client,
            progress,
            planning: Mutex::new(None),
            git_lock: Mutex::new(()),
            run_dir: run_dir.to_path_buf(),
            limits,
            workflow: Mutex::new(None),
        })
    }

    pub fn options(&self) -> &EngineOptions {
        &self.opts
    }

    fn progress(&self, line: &str) {
        if let Some(p) = &self.progress {
            p(line);
        }
    }

    /// Registers the configured workers when `DandoriStep` is not registered yet;
    /// an error when it is not and there is nothing to register.
    pub fn ensure_registered(&self) -> Result<(), DistributedError> {
        let admin = self.opts.admin_url();
        self.runtime.block_on(async {
            if admin::service_registered(&self.client, &admin, SERVICE).await?
                && admin::service_registered(&self.client, &admin, WORKFLOW).await?
            {
                return Ok(());
            }
            if self.opts.register.is_empty() {
                return Err(DistributedError::Restate {
                    url: admin.clone(),
                    message: format!(
                        "{RESTATE_UNAVAILABLE}: no worker is registered ({SERVICE} or {WORKFLOW} is unknown): start `dandori worker --listen ADDR` and pass --register-worker http://ADDR"
                    ),
                });
            }
            for w in &self.opts.register {
                self.progress(&format!("restate: registering the worker deployment {w}"));
                admin::register(&self.client, &admin, w).await?;
            }
            Ok(())
        })
    }

    fn planning_text(&self, path: &Path) -> Result<String, DistributedError> {
        let mut cached = self.planning.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(t) = cached.as_ref() {
            return Ok(t.clone());
        }
        let text = dandori_fs::read_to_string(path)?;
        *cached = Some(text.clone());
        Ok(text)
    }

    /// What the run's workflow starts from: the plan, and every step as
    /// `stage.json` has it now (the coordinator saved it after reconciling). A done
    /// step's commit not on the remote yet (made by a local run resumed here) is
    /// pushed under `commits/<hash>` so that the workers can build on it.
    fn spec(
        &self,
        planning: &Planning,
        repo: &Git,
        work_start: &str,
    ) -> Result<RunSpec, DistributedError> {
        let paths = RunPaths::locate(&self.run_dir)?;
        let stage: Option<Stage> = dandori_fs::read_to_string(&paths.stage)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let preds = dandori_runner::plan::predecessors(planning)?;
        let mut steps = Vec::with_capacity(planning.steps.len());
        for (i, step) in planning.steps.iter().enumerate() {
            refs::check_component("step id", &step.step_id)?;
            let recorded = stage
                .as_ref()
                .and_then(|st| st.steps.iter().find(|s| s.step_id == step.step_id));
            let status = recorded.map_or(StepStatus::Pending, |s| s.status);
            let commit = recorded
                .filter(|s| s.status == StepStatus::Done)
                .and_then(|s| s.commit.clone());
            if let Some(c) = &commit {
                let known =
                    refs::local_ref(repo, &refs::step_ref(&planning.run_id, &step.step_id))?;
                if known.as_deref() != Some(c.as_str()) {
                    refs::push_once(
                        repo,
                        &self.opts.remote,
                        &planning.run_id,
                        &format!("{}/commits/{c}", refs::run_prefix(&planning.run_id)),
                        c,
                    )?;
                }
            }
            steps.push(SpecStep {
                step_id: step.step_id.clone(),
                preds: preds
                    .get(i)
                    .map(|p| p.iter().copied().collect())
                    .unwrap_or_default(),
                status: serde_json::to_value(status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_else(|| "pending".to_string()),
                commit,
                attempts: recorded.map_or(0, |s| s.attempts),
            });
        }
        Ok(RunSpec {
            run_id: planning.run_id.clone(),
            remote: self.opts.remote.clone(),
            planning: self.planning_text(&paths.planning)?,
            work_start: work_start.to_string(),
            steps,
            max_parallel: dandori_runner::plan::max_parallel(
                planning,
                self.limits.max_parallel_workers,
            ),
            max_steps: planning.limits.max_steps_per_run.max(1),
        })
    }

    /// Starts the run's workflow, or attaches to it when it runs already (this
    /// process is a `resume` after the coordinator died). A workflow that ended
    /// (its `run` returned) cannot run again under its key: the next generation
    /// `<run id>.g<n>` starts instead. Returns the key.
    async fn submit(&self, spec: &RunSpec) -> Result<String, DistributedError> {
        let mut key = self
            .opts
            .workflow
            .clone()
            .unwrap_or_else(|| spec.run_id.clone());
        loop {
            let sent = self
                .post(
                    &format!("{WORKFLOW}/{key}/run/send"),
                    &serde_json::to_value(spec).unwrap_or_default(),
                    &key,
                )
                .await?;
            let status = serde_json::from_str::<serde_json::Value>(&sent)
                .ok()
                .and_then(|v| v.get("status")?.as_str().map(str::to_string))
                .unwrap_or_default();
            if status == "Accepted" {
                self.progress(&format!(
                    "restate: started the run's workflow {WORKFLOW}/{key}"
                ));
                return Ok(key);
            }
            let state = self.workflow_state(&key).await?;
            if !state.finished {
                self.progress(&format!(
                    "restate: attached to the run's workflow {WORKFLOW}/{key} (already running)"
                ));
                return Ok(key);
            }
            key = next_generation(&spec.run_id, &key);
        }
    }

    /// The workflow's stage machine as it is now.
    pub async fn workflow_state(&self, key: &str) -> Result<WorkflowState, DistributedError> {
        let text = self
            .post(
                &format!("{WORKFLOW}/{key}/status"),
                &serde_json::Value::Null,
                key,
            )
            .await?;
        serde_json::from_str(&text).map_err(|e| DistributedError::Restate {
            url: self.opts.restate_url.clone(),
            message: format!("{WORKFLOW}/{key}/status: not a workflow state: {e}: {text}"),
        })
    }

    /// `POST {ingress}/{path}` with a JSON body, sent again while the server is
    /// unreachable (up to [`UNAVAILABLE_LIMIT`]); the response body.
    async fn post(
        &self,
        path: &str,
        body: &serde_json::Value,
        what: &str,
    ) -> Result<String, DistributedError> {
        let url = format!("{}/{path}", self.opts.restate_url.trim_end_matches('/'));
        let mut down_since: Option<Instant> = None;
        let mut wait = Duration::from_millis(200);
        loop {
            let mut req = self.client.post(&url);
            if !body.is_null() {
                req = req.json(body);
            }
            let retry = match req.send().await {
                Ok(resp) if resp.status().is_success() => match resp.text().await {
                    Ok(text) => return Ok(text),
                    // The connection broke while the answer came (a server restart).
                    Err(e) => e.to_string(),
                },
                // Restate unavailable, overloaded, or the ingress not ready yet.
                Ok(resp) if matches!(resp.status().as_u16(), 502..=504 | 429) => {
                    format!("HTTP {}", resp.status())
                }
                Ok(resp) => {
                    let status = resp.status();
                    let text = resp.text().await.unwrap_or_default();
                    return Err(DistributedError::Restate {
                        url,
                        message: format!("{what}: HTTP {status}: {}", text.trim()),
                    });
                }
                Err(e) => e.to_string(),
            };
            let since = *down_since.get_or_insert_with(Instant::now);
            if since.elapsed() > UNAVAILABLE_LIMIT {
                return Err(DistributedError::Restate {
                    url,
                    message: format!(
                        "{RESTATE_UNAVAILABLE}: {what}: unreachable for {} s: {retry}",
                        UNAVAILABLE_LIMIT.as_secs()
                    ),
                });
            }
            self.progress(&format!(
                "{what}: restate unreachable ({retry}); sending again"
            ));
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(3));
        }
    }

    fn workflow_key(&self) -> Result<String, DistributedError> {
        self.workflow
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| DistributedError::Restate {
                url: self.opts.restate_url.clone(),
                message: "the run's workflow was not started (prepare was not called)".to_string(),
            })
    }

    /// Waits for step `call`'s outcome from the run's workflow and brings its
    /// commits into the run's repository.
    fn run_call(&self, call: &StepCall<'_>) -> Result<StepReport, DistributedError> {
        let step_id = call.planning.steps[call.index].step_id.clone();
        let key = self.workflow_key()?;
        let text = self.runtime.block_on(self.post(
            &format!("{WORKFLOW}/{key}/outcome"),
            &serde_json::Value::String(step_id.clone()),
            &step_id,
        ))?;
        let outcome: StepOutcome =
            serde_json::from_str(&text).map_err(|e| DistributedError::Restate {
                url: self.opts.restate_url.clone(),
                message: format!("{step_id}: not a step outcome: {e}: {text}"),
            })?;
        if outcome.status == OutcomeStatus::Committed {
            let _turn = self.git_lock.lock().unwrap_or_else(|p| p.into_inner());
            refs::fetch_run(call.repo, &self.opts.remote, &call.planning.run_id)?;
            for c in &outcome.commits {
                call.repo.rev_parse(c)?;
            }
        }
        self.keep_files(&step_id, &outcome)?;
        if !outcome.worker.is_empty() {
            self.progress(&format!(
                "{step_id}: ran on worker {}{}",
                outcome.worker,
                if outcome.recovered {
                    " (its commit was already on the remote)"
                } else {
                    ""
                }
            ));
        }
        Ok(outcome.into_report(call.index, &step_id))
    }

    /// Writes the step's logs and patch from the worker into the run directory.
    fn keep_files(&self, step_id: &str, outcome: &StepOutcome) -> Result<(), DistributedError> {
        let paths = RunPaths::locate(&self.run_dir)?;
        for f in &outcome.files {
            if !StepFile::belongs_to(&f.path, step_id) {
                return Err(DistributedError::Invalid {
                    reason_code: dandori_runner::reason::RUN_DIR_INVALID,
                    message: format!(
                        "{step_id}: the worker returned a file outside the step's logs: {}",
                        f.path
                    ),
                });
            }
            dandori_fs::write_atomic(paths.run_dir.join(&f.path), &f.text)?;
        }
        Ok(())
    }

    /// Tells the run's workflow to start no more steps (the coordinator ended or
    /// stopped); steps already running finish. Best effort: a workflow that ended
    /// already, or a server that is gone, changes nothing.
    pub fn stop(&self, reason: &str) {
        let Ok(key) = self.workflow_key() else {
            return;
        };
        let url = format!(
            "{}/{WORKFLOW}/{key}/stop",
            self.opts.restate_url.trim_end_matches('/')
        );
        // The request is built inside the runtime: its timeout needs the timer.
        let _ = self.runtime.block_on(async {
            self.client
                .post(&url)
                .timeout(Duration::from_secs(10))
                .json(&reason)
                .send()
                .await
        });
    }
}

/// The key of the generation after `key` of run `run_id`'s workflow.
pub fn next_generation(run_id: &str, key: &str) -> String {
    let n = key
        .strip_prefix(run_id)
        .and_then(|rest| rest.strip_prefix(".g"))
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(1);
    format!("{run_id}.g{}", n + 1)
}

impl StepDispatch for RestateEngine {
    fn name(&self) -> &str {
        "restate"
    }

    fn record(&self) -> serde_json::Value {
        let mut o = self.opts.clone();
        o.register.clear();
        o.workflow = self
            .workflow
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .or(o.workflow);
        serde_json::to_value(o).unwrap_or_default()
    }

    fn prepare(
        &self,
        planning: &Planning,
        repo: &Git,
        work_start: &str,
    ) -> Result<(), RunnerError> {
        refs::check_component("run id", &planning.run_id)?;
        self.ensure_registered()?;
        let start = refs::start_ref(&planning.run_id);
        let _turn = self.git_lock.lock().unwrap_or_else(|p| p.into_inner());
        let held = refs::push_once(
            repo,
            &self.opts.remote,
            &planning.run_id,
            &start,
            work_start,
        )?;
        if held != work_start {
            return Err(DistributedError::Invalid {
                reason_code: dandori_runner::reason::RUN_DIR_INVALID,
                message: format!(
                    "{start} on {} is {held}, not this run's work branch start {work_start}",
                    self.opts.remote
                ),
            }
            .into());
        }
        drop(_turn);
        let spec = {
            let _turn = self.git_lock.lock().unwrap_or_else(|p| p.into_inner());
            self.spec(planning, repo, work_start)?
        };
        let key = self.runtime.block_on(self.submit(&spec))?;
        *self.workflow.lock().unwrap_or_else(|p| p.into_inner()) = Some(key);
        Ok(())
    }

    fn run_step(&self, call: &StepCall<'_>) -> StepReport {
        self.run_call(call).unwrap_or_else(|e| {
            StepOutcome {
                reason_code: Some(e.reason_code().to_string()),
                message: Some(e.to_string()),
                notes: vec![
                    "the step could not be run on the restate engine; `dandori resume` sends it again"
                        .to_string(),
                ],
                ..StepOutcome::bare(OutcomeStatus::Failed, "")
            }
            .into_report(call.index, &call.planning.steps[call.index].step_id)
        })
    }
}

/// The live state of the workflow of the run in `run_dir`, for `dandori status`:
/// `None` when the run is not on the Restate engine (or its workflow was never
/// started); one request, no retry.
pub fn workflow_status(
    run_dir: &Path,
) -> Option<Result<(String, WorkflowState), DistributedError>> {
    let paths = RunPaths::locate(run_dir).ok()?;
    let stage: serde_json::Value =
        serde_json::from_str(&dandori_fs::read_to_string(&paths.stage).ok()?).ok()?;
    let opts: EngineOptions = serde_json::from_value(stage.get("engine")?.clone()).ok()?;
    let key = opts.workflow.clone()?;
    let url = format!(
        "{}/{WORKFLOW}/{key}/status",
        opts.restate_url.trim_end_matches('/')
    );
    let fetch = || -> Result<WorkflowState, DistributedError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| DistributedError::Restate {
                url: url.clone(),
                message: format!("starting the HTTP client runtime: {e}"),
            })?;
        runtime.block_on(async {
            let resp = admin::client()?
                .post(&url)
                .timeout(Duration::from_secs(5))
                .send()
                .await
                .map_err(|e| admin::unreachable(&url, e))?;
            let status = resp.status();
            let text = resp.text().await.map_err(|e| admin::unreachable(&url, e))?;
            if !status.is_success() {
                return Err(DistributedError::Restate {
                    url: url.clone(),
                    message: format!("HTTP {status}: {}", text.trim()),
                });
            }
            serde_json::from_str(&text).map_err(|e| DistributedError::Restate {
                url: url.clone(),
                message: format!("not a workflow state: {e}"),
            })
        })
    };
    Some(fetch().map(|state| (key, state)))
}
