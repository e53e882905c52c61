//! The forge side of the CLI: `plan --issue` intake, reporting back on the issue
//! (plan summary, status, completion, the help label), and the run hook. All
//! forge work goes through `dandori_forge`; this file only wires it to commands.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dandori_config::{Config, ForgesConfig};
use dandori_forge::permissions::Permissions;
use dandori_forge::record::ForgeRecord;
use dandori_forge::{ForgeClient, ForgeError, ForgeRef, ForgeSettings, report};

use crate::output;

/// The name under which a forge token is registered with the trace masker.
pub const MASKED_TOKEN_VAR: &str = "DANDORI_FORGE_TOKEN";

/// What `plan --issue` learnt from the forge.
pub struct Intake {
    pub text: String,
    pub task_type: String,
    pub record: ForgeRecord,
    pub client: ForgeClient,
    pub skipped_comments: usize,
    pub truncated: bool,
}

/// The client of a reference, from the environment and `forges:`.
pub fn client_for(
    r: &ForgeRef,
    forges: &ForgesConfig,
    env: &BTreeMap<String, String>,
) -> Result<ForgeClient, ForgeError> {
    ForgeClient::new(ForgeSettings::resolve(r, forges, env)?)
}

/// Registers the token's value with the masker: run directories, traces and
/// reports never show it, whatever the variable is called.
pub fn mask_token(client: &ForgeClient, secret_env: &mut BTreeMap<String, String>) {
    if let Some(t) = client.settings().token_value() {
        secret_env.insert(MASKED_TOKEN_VAR.to_string(), t.to_string());
    }
}

/// Team membership through the forge, for [`Permissions`].
pub fn membership(client: &ForgeClient) -> impl Fn(&str, &str) -> Result<bool, ForgeError> + '_ {
    move |team, user| client.is_member(team, user)
}

/// Reads the issue, checks that its author may trigger dandori, and builds the
/// request text and the task type (seed 000 §9.3).
pub fn intake(
    reference: &str,
    config: &Config,
    env: &BTreeMap<String, String>,
    comment: bool,
) -> Result<Intake, ForgeError> {
    let r = ForgeRef::parse(reference)?;
    let client = client_for(&r, &config.forges, env)?;
    let issue = client.issue(&r)?;
    let (task_type, built, consumed) = {
        let member = membership(&client);
        let perms = Permissions {
            config: &config.planning.permissions,
            issue_author: &issue.author,
            membership: Some(&member),
        };
        perms.check_trigger(&issue.author)?;
        let configured: Vec<&str> = config
            .planning
            .task_specific
            .keys()
            .map(String::as_str)
            .collect();
        let task_type = dandori_forge::intake::task_type(&issue, &configured);
        let built = dandori_forge::intake::request_text(&issue, &perms);
        // The comments read now are part of the request, not feedback for later.
        let consumed: BTreeMap<u64, String> = issue
            .comments
            .iter()
            .filter(|c| perms.may_steer(&c.author) && !report::is_dandori_comment(&c.body))
            .map(|c| (c.id, c.updated_at.clone()))
            .collect();
        (task_type, built, consumed)
    };
    let record = ForgeRecord {
        reference: r.clone(),
        source: r.to_string(),
        web_url: issue.web_url.clone(),
        title: issue.title.clone(),
        issue_author: issue.author.clone(),
        labels: issue.labels.clone(),
        task_type: task_type.clone(),
        comment,
        comments: BTreeMap::new(),
        consumed,
        help_label: false,
        pull_request: None,
    };
    let skipped = built.skipped_comments.len();
    Ok(Intake {
        text: built.text,
        task_type,
        record,
        client,
        skipped_comments: skipped,
        truncated: built.truncated,
    })
}

/// After planning: `forge.json` in the run directory and, when asked, the plan
/// summary and the status comment on the issue.
pub fn after_plan(intake: Intake, run_dir: &Path, config: &Config) -> Result<(), ForgeError> {
    let Intake {
        mut record, client, ..
    } = intake;
    let result = post_plan(&client, config, &mut record, run_dir);
    record.save(run_dir)?;
    result
}

fn post_plan(
    client: &ForgeClient,
    config: &Config,
    record: &mut ForgeRecord,
    run_dir: &Path,
) -> Result<(), ForgeError> {
    if !record.comment {
        return Ok(());
    }
    let planning = read_planning(run_dir)?;
    let revision = dandori_forge::revise::load_history(run_dir)?.revision_attempts;
    let body = report::plan_comment(&planning, revision);
    report::upsert(client, &config.forges, record, "plan", &body)?;
    let status = serde_json::json!({"status": "planned", "done": 0, "total": planning.steps.len(),
        "steps": planning.steps.iter().map(|s| serde_json::json!({"step_id": s.step_id, "title": s.title, "status": "pending"})).collect::<Vec<_>>()});
    report::upsert(
        client,
        &config.forges,
        record,
        "status",
        &report::status_comment(&planning.request_id, &status),
    )?;
    Ok(())
}

pub fn read_planning(run_dir: &Path) -> Result<dandori_plan::Planning, ForgeError> {
    let path = run_dir.join("planning.json");
    let bytes = dandori_fs::read(&path)?;
    serde_json::from_slice(&bytes).map_err(|e| ForgeError::Record {
        path,
        message: format!("not a planning.json: {e}"),
    })
}

/// The run directory of a `dandori run` target (a run directory or its planning.json).
pub fn run_dir_of(target: &Path) -> PathBuf {
    if target.is_dir() {
        target.to_path_buf()
    } else {
        target
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    }
}

/// A run's connection to its issue, when it came from one and reports back.
pub struct RunReporter {
    run_dir: PathBuf,
    client: ForgeClient,
    forges: ForgesConfig,
    record: Mutex<ForgeRecord>,
    last: Mutex<Option<Instant>>,
    warned: Mutex<bool>,
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
    ) -> Option<Arc<RunReporter>> {
        let run_dir = run_dir_of(target);
        let record = match ForgeRecord::load(&run_dir) {
            Ok(Some(r)) if r.comment || config.forges.comment => r,
            Ok(_) => return None,
            Err(e) => {
                output::progress(&format!("warning: {}: {e}", e.code()));
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
            })),
            Err(e) => {
                output::progress(&format!("warning: {}: {e}", e.code()));
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
        let Ok(progress) = dandori_mcp::inspect::progress(&self.run_dir) else {
            return;
        };
        let value = serde_json::to_value(&progress).unwrap_or_default();
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
            output::progress(&format!(
                "warning: reporting on the issue failed: {}: {e}",
                e.code()
            ));
        }
    }

    /// At the end of the run: the final status, the completion report, and the
    /// help label when a person must step in (seed 000 §10.4).
    pub fn finish(&self, completion: &serde_json::Value) {
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
            && completion.get("status").and_then(serde_json::Value::as_str)
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
        dandori_forge::publish::preflight(
            &client,
            &config.forges,
            repo,
            &record.reference.project,
        )?;
        Ok(Publisher {
            run_dir,
            repo: repo.to_path_buf(),
            client,
            forges: config.forges.clone(),
        })
    }

    /// Pushes and opens / updates the pull request; the outcome for the
    /// completion record, and whether it worked. Failures are reported on stderr
    /// with their reason code; the work branch stays local.
    pub fn publish(&self, completion: &serde_json::Value) -> (serde_json::Value, bool) {
        let result = (|| {
            let planning = read_planning(&self.run_dir)?;
            let mut record =
                ForgeRecord::load(&self.run_dir)?.ok_or_else(|| ForgeError::Record {
                    path: ForgeRecord::path(&self.run_dir),
                    message: "forge.json disappeared during the run".to_string(),
                })?;
            let published = dandori_forge::publish::publish(
                &self.client,
                &self.forges,
                &mut record,
                &self.repo,
                &planning,
                completion,
            )?;
            record.save(&self.run_dir)?;
            Ok::<_, ForgeError>(published)
        })();
        match result {
            Ok(p) => {
                let kind = match self.client.settings().forge {
                    dandori_forge::Forge::GitHub => "pull request",
                    dandori_forge::Forge::GitLab => "merge request",
                };
                if let Some(g) = &p.kept_green {
                    output::progress(&format!(
                        "{kind} {} ({}) is the last run that achieved the goal: left as it is, this run went to {}",
                        g.number, g.web_url, p.branch
                    ));
                }
                output::progress(&format!(
                    "{} {kind} {}{} ({}) from {}",
                    p.action,
                    p.change_request.number,
                    if p.change_request.draft {
                        " as a draft"
                    } else {
                        ""
                    },
                    p.change_request.web_url,
                    p.branch
                ));
                (
                    serde_json::json!({"status": p.action, "number": p.change_request.number,
                        "url": p.change_request.web_url, "branch": p.branch,
                        "draft": p.change_request.draft,
                        "kept_green": p.kept_green.as_ref().map(|g| g.number)}),
                    true,
                )
            }
            Err(e) => {
                output::error(&format!(
                    "{}: the run finished, but publishing its branch failed: {e}",
                    e.code()
                ));
                (
                    serde_json::json!({"status": "failed", "reason_code": e.code(),
                        "message": e.to_string()}),
                    false,
                )
            }
        }
    }
}

/// Exit status of forge errors: 2 for what the user can fix in the invocation
/// (a bad reference, no access), 1 otherwise.
pub fn exit_code(e: &ForgeError) -> u8 {
    use dandori_forge::reason as r;
    let input = [
        r::FORGE_REF_INVALID,
        r::FORGE_CONFIG_INVALID,
        r::FORGE_NOT_FOUND,
        r::FORGE_UNAUTHORIZED,
        r::FORGE_PERMISSION_DENIED,
        r::FORGE_RECORD_INVALID,
    ]
    .contains(&e.code());
    if input { 2 } else { 1 }
}

/// `plan --issue`: the config without a task type (for `forges:` and the
/// permissions), then the issue.
pub fn plan_intake(
    reference: &str,
    args: &crate::cli::PlanArgs,
    config: Option<&Path>,
    sets: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Intake, std::process::ExitCode> {
    // A broken configuration stops before the forge is asked anything.
    let loaded = match super::load_config(config, sets, &args.repo, env) {
        Ok(l) => l.config,
        Err(e) => {
            output::error(&format!("{e:#}"));
            return Err(std::process::ExitCode::from(2));
        }
    };
    let comment = args.comment || loaded.forges.comment;
    match intake(reference, &loaded, env, comment) {
        Ok(i) => {
            if !args.json {
                output::progress(&format!(
                    "read {} ({}): task type {}{}{}",
                    i.record.source,
                    i.record.web_url,
                    i.task_type,
                    match i.skipped_comments {
                        0 => String::new(),
                        n => format!(", {n} comment(s) left out"),
                    },
                    if i.truncated { ", cut to fit" } else { "" }
                ));
            }
            Ok(i)
        }
        Err(e) => {
            let code = exit_code(&e);
            Err(super::plan::fail(
                args.json,
                &format!("{}: {e}", e.code()),
                code,
            ))
        }
    }
}

/// After `plan --issue`: the record and the comments. Some(exit) on failure.
pub fn plan_after(
    intake: Intake,
    run_dir: &Path,
    config: &Config,
    json: bool,
) -> Option<std::process::ExitCode> {
    let comment = intake.record.comment;
    let source = intake.record.source.clone();
    match after_plan(intake, run_dir, config) {
        Ok(()) => {
            if comment && !json {
                output::progress(&format!("posted the plan and status comments on {source}"));
            }
            None
        }
        Err(e) => Some(super::plan::fail(
            json,
            &format!(
                "{}: the plan is written ({}), but reporting on {source} failed: {e}",
                e.code(),
                run_dir.display()
            ),
            1,
        )),
    }
}

/// `APPROVAL_PENDING` (exit 3) when the run's plan has a revision waiting for
/// approval: running the old plan would ignore the person who asked for changes.
pub fn refuse_pending(target: &Path) -> Option<std::process::ExitCode> {
    let run_dir = run_dir_of(target);
    match dandori_forge::revise::load_pending(&run_dir) {
        Ok(Some(p)) if !dandori_forge::revise::expired(&p, chrono::Utc::now()) => {
            output::error(&format!(
                "{}: revision {} of this plan waits for approval: dandori approve {} (or reply /approve on the issue and run dandori approve --from-issue)",
                dandori_forge::reason::APPROVAL_PENDING,
                p.revision,
                run_dir.display()
            ));
            Some(std::process::ExitCode::from(3))
        }
        _ => None,
    }
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
