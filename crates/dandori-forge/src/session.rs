//! A run's link to its issue, for the commands that use it: the client of a
//! reference, `plan --issue` intake and the comments after planning, the run
//! directory of a target, and the revision that holds a run back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_config::{Config, ForgesConfig};

use crate::permissions::Permissions;
use crate::record::ForgeRecord;
use crate::{ForgeClient, ForgeError, ForgeRef, ForgeSettings, report, revise};

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
        let task_type = crate::intake::task_type(&issue, &configured);
        let built = crate::intake::request_text(&issue, &perms);
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
    let planning = post_plan_comment(client, config, record, run_dir)?;
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

/// The plan comment of the run's current plan and revision, posted or edited;
/// the plan it describes.
pub fn post_plan_comment(
    client: &ForgeClient,
    config: &Config,
    record: &mut ForgeRecord,
    run_dir: &Path,
) -> Result<dandori_plan::Planning, ForgeError> {
    let planning = read_planning(run_dir)?;
    let revision = revise::load_history(run_dir)?.revision_attempts;
    report::upsert(
        client,
        &config.forges,
        record,
        "plan",
        &report::plan_comment(&planning, revision),
    )?;
    Ok(planning)
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

/// `APPROVAL_PENDING`: the message when the run's plan has a revision waiting
/// for approval (running the old plan would ignore the person who asked for
/// changes), None otherwise.
pub fn pending_approval(target: &Path) -> Option<String> {
    let run_dir = run_dir_of(target);
    match revise::load_pending(&run_dir) {
        Ok(Some(p)) if !revise::expired(&p, chrono::Utc::now()) => Some(format!(
            "{}: revision {} of this plan waits for approval: dandori approve {} (or reply /approve on the issue and run dandori approve --from-issue)",
            crate::reason::APPROVAL_PENDING,
            p.revision,
            run_dir.display()
        )),
        _ => None,
    }
}
