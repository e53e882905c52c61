//! `dandori run`'s forge side: the status and completion comments of a run
//! planned from an issue ([`RunReporter`]) and `--open-pr` ([`Publisher`]).
//! The caller gives the run's progress (it reads the run directory) and where
//! warnings go.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dandori_config::{Config, ForgesConfig};
use serde_json::{Value, json};

use crate::publish::Published;
use crate::record::ForgeRecord;
use crate::session::{client_for, read_planning, run_dir_of};
use crate::{Forge, ForgeClient, ForgeError, report};

/// The run's progress as the status comment shows it (a run directory → its
/// `progress` JSON), None when it cannot be read now.
pub type StatusSource = Box<dyn Fn(&Path) -> Option<Value> + Send + Sync>;

/// Where warning lines go (the CLI: stderr).
pub type Notify = Arc<dyn Fn(&str) + Send + Sync>;

/// A run's connection to its issue, when it came from one and reports back.
pub struct RunReporter {
    run_dir: PathBuf,
    client: ForgeClient,
    forges: ForgesConfig,
    record: Mutex<ForgeRecord>,
    last: Mutex<Option<Instant>>,
    warned: Mutex<bool>,
    status: StatusSource,
    notify: Notify,
}

/// Status comments are edited at most this often while a run goes on.
const STATUS_EVERY: Duration = Duration::from_secs(10);

impl RunReporter {
    /// The reporter of `target`'s run, or None when the run did not come from an
    /// issue or does not report back.
    pub fn open(
        target: &Path,
        config: &Config,
        env: &BTreeMap<String, String>,
        status: StatusSource,
        notify: Notify,
    ) -> Option<Arc<RunReporter>> {
        let run_dir = run_dir_of(target);
        let record = match ForgeRecord::load(&run_dir) {
            Ok(Some(r)) if r.comment || config.forges.comment => r,
            Ok(_) => return None,
            Err(e) => {
                notify(&format!("warning: {}: {e}", e.code()));
                return None;
            }
        };
        match client_for(&record.reference, &config.forges, env) {
            Ok(client) => Some(Arc::new(RunReporter {
                run_dir,
                client,
                forges: config.forges.clone(),
                record: Mutex::new(record),
                last: Mutex::new(None),
                warned: Mutex::new(false),
                status,
                notify,
            })),
            Err(e) => {
                notify(&format!("warning: {}: {e}", e.code()));
                None
            }
        }
    }

    /// Called on every progress line: edits the status comment, at most every
    /// [`STATUS_EVERY`].
    pub fn progress(&self) {
        let due = match self.last.lock() {
            Ok(mut last) => {
                let due = last.is_none_or(|t| t.elapsed() >= STATUS_EVERY);
                if due {
                    *last = Some(Instant::now());
                }
                due
            }
            Err(_) => false,
        };
        if due {
            self.update_status();
        }
    }

    fn update_status(&self) {
        let Some(value) = (self.status)(&self.run_dir) else {
            return;
        };
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        let body = report::status_comment(&record.reference.request_id(), &value);
        let result = report::upsert(&self.client, &self.forges, &mut record, "status", &body);
        self.warn(result.map(|_| ()));
    }

    fn warn(&self, result: Result<(), ForgeError>) {
        if let Err(e) = result
            && let Ok(mut warned) = self.warned.lock()
            && !*warned
        {
            *warned = true;
            (self.notify)(&format!(
                "warning: reporting on the issue failed: {}: {e}",
                e.code()
            ));
        }
    }

    /// At the end of the run: the final status, the completion report, and the
    /// help label when a person must step in (seed 000 §10.4).
    pub fn finish(&self, completion: &Value) {
        self.update_status();
        let Ok(mut record) = self.record.lock() else {
            return;
        };
        let id = record.reference.request_id();
        let body = report::completion_comment(&id, completion);
        let mut result =
            report::upsert(&self.client, &self.forges, &mut record, "completion", &body)
                .map(|_| ());
        if result.is_ok()
            && completion.get("status").and_then(Value::as_str)
                == Some("requires_human_intervention")
        {
            result = report::add_help_label(&self.client, &self.forges, &mut record);
        }
        self.warn(result);
        // `--open-pr` wrote its pull request into forge.json meanwhile.
        if let Ok(Some(disk)) = ForgeRecord::load(&self.run_dir) {
            record.pull_request = disk.pull_request;
        }
        self.warn(record.save(&self.run_dir));
    }
}

/// `dandori run --open-pr`: the run's issue, its forge client and the
/// repository, checked before the run starts.
pub struct Publisher {
    run_dir: PathBuf,
    repo: PathBuf,
    client: ForgeClient,
    forges: ForgesConfig,
}

/// What publishing the run's branch came to: the completion record's
/// `pull_request` value, the lines that say it, and whether it worked.
pub struct PublishReport {
    pub value: Value,
    /// Progress lines (stderr).
    pub lines: Vec<String>,
    /// The failure, reason code first, when publishing failed.
    pub error: Option<String>,
}

impl Publisher {
    pub fn open(
        target: &Path,
        repo: &Path,
        config: &Config,
        env: &BTreeMap<String, String>,
    ) -> Result<Publisher, ForgeError> {
        let run_dir = run_dir_of(target);
        let record = ForgeRecord::load(&run_dir)?.ok_or_else(|| ForgeError::Record {
            path: ForgeRecord::path(&run_dir),
            message: "the run was not planned from an issue (dandori plan --issue REF): --open-pr has no forge to open a pull request on".to_string(),
        })?;
        let client = client_for(&record.reference, &config.forges, env)?;
        crate::publish::preflight(&client, &config.forges, repo, &record.reference.project)?;
        Ok(Publisher {
            run_dir,
            repo: repo.to_path_buf(),
            client,
            forges: config.forges.clone(),
        })
    }

    /// Pushes and opens / updates the pull request. On failure the work branch
    /// stays local and the report says why, with its reason code.
    pub fn publish(&self, completion: &Value) -> PublishReport {
        match self.try_publish(completion) {
            Ok(p) => self.published(&p),
            Err(e) => PublishReport {
                value: json!({"status": "failed", "reason_code": e.code(), "message": e.to_string()}),
                lines: Vec::new(),
                error: Some(format!(
                    "{}: the run finished, but publishing its branch failed: {e}",
                    e.code()
                )),
            },
        }
    }

    fn try_publish(&self, completion: &Value) -> Result<Published, ForgeError> {
        let planning = read_planning(&self.run_dir)?;
        let mut record = ForgeRecord::load(&self.run_dir)?.ok_or_else(|| ForgeError::Record {
            path: ForgeRecord::path(&self.run_dir),
            message: "forge.json disappeared during the run".to_string(),
        })?;
        let published = crate::publish::publish(
            &self.client,
            &self.forges,
            &mut record,
            &self.repo,
            &planning,
            completion,
        )?;
        record.save(&self.run_dir)?;
        Ok(published)
    }

    fn published(&self, p: &Published) -> PublishReport {
        let kind = match self.client.settings().forge {
            Forge::GitHub => "pull request",
            Forge::GitLab => "merge request",
        };
        let mut lines = Vec::new();
        if let Some(g) = &p.kept_green {
            lines.push(format!(
                "{kind} {} ({}) is the last run that achieved the goal: left as it is, this run went to {}",
                g.number, g.web_url, p.branch
            ));
        }
        let cr = &p.change_request;
        lines.push(format!(
            "{} {kind} {}{} ({}) from {}",
            p.action,
            cr.number,
            if cr.draft { " as a draft" } else { "" },
            cr.web_url,
            p.branch
        ));
        PublishReport {
            value: json!({"status": p.action, "number": cr.number,
                "url": cr.web_url, "branch": p.branch, "draft": cr.draft,
                "kept_green": p.kept_green.as_ref().map(|g| g.number)}),
            lines,
            error: None,
        }
    }
}
