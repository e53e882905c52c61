//! `dandori run --engine restate`: every step becomes a durable call of
//! `DandoriStep/execute` through Restate's ingress, keyed by an idempotency key of
//! the run, step and attempt, so a call sent again after a crash (of this process
//! or of the server) attaches to the same invocation instead of running the step
//! twice. The step's base goes to the workers and its commit comes back through the
//! git remote (see [`crate::refs`]).

use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use dandori_plan::Planning;
use dandori_runner::dispatch::{StepCall, StepDispatch};
use dandori_runner::git::Git;
use dandori_runner::step::StepReport;
use dandori_runner::{Progress, RunnerError};
use serde::{Deserialize, Serialize};

use crate::admin;
use crate::error::DistributedError;
use crate::protocol::{
    HANDLER, OutcomeStatus, RESTATE_UNAVAILABLE, SERVICE, StepOutcome, StepRequest,
};
use crate::refs;

/// How long a step call keeps retrying while the server cannot be reached.
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
}

impl RestateEngine {
    pub fn new(
        opts: EngineOptions,
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
            if admin::service_registered(&self.client, &admin).await? {
                return Ok(());
            }
            if self.opts.register.is_empty() {
                return Err(DistributedError::Restate {
                    url: admin.clone(),
                    message: format!(
                        "{RESTATE_UNAVAILABLE}: no worker is registered ({SERVICE} is unknown): start `dandori worker --listen ADDR` and pass --register-worker http://ADDR"
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

    /// The request for `call`, with every base commit made reachable on the remote.
    fn request(&self, call: &StepCall<'_>) -> Result<StepRequest, DistributedError> {
        let run_id = &call.planning.run_id;
        let step = &call.planning.steps[call.index];
        refs::check_component("step id", &step.step_id)?;
        for (id, commit) in call.commits {
            if id == dandori_runner::git::WORK_START {
                continue;
            }
            // A base commit made by a worker is on the remote already; one made
            // before (a local run resumed here) is pushed under its hash.
            let known = refs::local_ref(call.repo, &refs::step_ref(run_id, id))?;
            if known.as_deref() != Some(commit.as_str()) {
                let _turn = self.git_lock.lock().unwrap_or_else(|p| p.into_inner());
                refs::push_once(
                    call.repo,
                    &self.opts.remote,
                    run_id,
                    &format!("{}/commits/{commit}", refs::run_prefix(run_id)),
                    commit,
                )?;
            }
        }
        Ok(StepRequest {
            run_id: run_id.clone(),
            step_id: step.step_id.clone(),
            index: call.index,
            attempt: call.attempt,
            remote: self.opts.remote.clone(),
            planning: self.planning_text(call.planning_path)?,
            commits: call.commits.to_vec(),
        })
    }

    /// Sends the call and waits for its outcome, sending it again (same
    /// idempotency key: the same invocation) while the server is unreachable.
    async fn call(&self, req: &StepRequest) -> Result<StepOutcome, DistributedError> {
        let url = format!(
            "{}/{SERVICE}/{HANDLER}",
            self.opts.restate_url.trim_end_matches('/')
        );
        let key = req.idempotency_key();
        let mut down_since: Option<Instant> = None;
        let mut wait = Duration::from_millis(200);
        loop {
            let sent = self
                .client
                .post(&url)
                .header("idempotency-key", &key)
                .json(req)
                .send()
                .await;
            let retry = match sent {
                Ok(resp) if resp.status().is_success() => {
                    let text = resp.text().await.map_err(|e| admin::unreachable(&url, e))?;
                    return serde_json::from_str(&text).map_err(|e| DistributedError::Restate {
                        url: url.clone(),
                        message: format!("{key}: not a step outcome: {e}: {text}"),
                    });
                }
                // Restate unavailable, overloaded, or the ingress not ready yet.
                Ok(resp) if matches!(resp.status().as_u16(), 502..=504 | 429) => {
                    format!("HTTP {}", resp.status())
                }
                Ok(resp) => {
                    let status = resp.status();
                    let body = resp.text().await.unwrap_or_default();
                    return Err(DistributedError::Restate {
                        url,
                        message: format!("{key}: HTTP {status}: {}", body.trim()),
                    });
                }
                Err(e) => e.to_string(),
            };
            let since = *down_since.get_or_insert_with(Instant::now);
            if since.elapsed() > UNAVAILABLE_LIMIT {
                return Err(DistributedError::Restate {
                    url,
                    message: format!(
                        "{RESTATE_UNAVAILABLE}: {key}: unreachable for {} s: {retry}",
                        UNAVAILABLE_LIMIT.as_secs()
                    ),
                });
            }
            self.progress(&format!(
                "{}: restate unreachable ({retry}); sending again",
                req.step_id
            ));
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(3));
        }
    }

    fn run_call(&self, call: &StepCall<'_>) -> Result<StepReport, DistributedError> {
        let req = self.request(call)?;
        let outcome = self.runtime.block_on(self.call(&req))?;
        if outcome.status == OutcomeStatus::Committed {
            let _turn = self.git_lock.lock().unwrap_or_else(|p| p.into_inner());
            refs::fetch_run(call.repo, &self.opts.remote, &req.run_id)?;
            for c in &outcome.commits {
                call.repo.rev_parse(c)?;
            }
        }
        self.progress(&format!(
            "{}: ran on worker {}{}",
            req.step_id,
            outcome.worker,
            if outcome.recovered {
                " (its commit was already on the remote)"
            } else {
                ""
            }
        ));
        Ok(outcome.into_report(call.index, &req.step_id))
    }
}

impl StepDispatch for RestateEngine {
    fn name(&self) -> &str {
        "restate"
    }

    fn record(&self) -> serde_json::Value {
        let mut o = self.opts.clone();
        o.register.clear();
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
