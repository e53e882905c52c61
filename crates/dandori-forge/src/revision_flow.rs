//! `dandori revise` and `dandori approve` (seed 000 §2.5, §10.4, §11.3.1): the
//! feedback gathered (the issue's comments from users allowed to steer, or the
//! text given), masked, turned into a revised plan (by the model when there is
//! one, else the explicit edits), paused for approval when asked, and reported
//! on the issue. The caller loads the configuration, prints the outcome, and
//! gives the model ([`RevisionModel`]), the command judge and the trace.

use std::collections::BTreeMap;
use std::path::Path;

use chrono::Utc;
use dandori_config::Config;
use dandori_plan::validation::CommandJudge;
use dandori_trace::{Masker, TraceWriter};
use serde_json::{Value, json};

use crate::model_revision::{self, ModelRevision};
use crate::permissions::Permissions;
use crate::record::ForgeRecord;
use crate::revise::{self, Feedback, FeedbackSource, Outcome};
use crate::session::{client_for, mask_token, membership, post_plan_comment};
use crate::{ForgeClient, ForgeError, reason, report};

/// Exit status while a revision waits for approval.
pub const EXIT_AWAITING_APPROVAL: u8 = 3;

/// A command that stopped: its exit status and the message, reason code first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub exit: u8,
    pub message: String,
}

impl From<ForgeError> for Failure {
    fn from(e: ForgeError) -> Failure {
        Failure {
            exit: e.exit_code(),
            message: format!("{}: {e}", e.code()),
        }
    }
}

/// The model that writes a seed-format `plan_revision`
/// ([`model_revision::schema`]); `check` returns the problems of an answer,
/// which the model is asked once to fix.
pub trait RevisionModel {
    /// The provider and the model, for the trace.
    fn names(&self) -> (String, String);
    fn ask(
        &self,
        system: String,
        user: String,
        check: &(dyn Fn(&Value) -> Vec<String> + Sync),
    ) -> Result<Value, String>;
}

/// Where the feedback comes from.
pub enum FeedbackInput {
    /// New comments on the run's issue.
    FromIssue,
    /// `--text` or the contents of `--file`.
    Text(String),
}

/// One run directory's revision context.
pub struct Revision<'a> {
    pub run_dir: &'a Path,
    pub config: &'a Config,
    pub env: &'a BTreeMap<String, String>,
    /// `forge.json`, when the run was planned from an issue.
    pub record: Option<ForgeRecord>,
    /// Report on the issue even when the run does not (`--comment`).
    pub comment: bool,
    /// Progress and warning lines.
    pub notify: &'a dyn Fn(&str),
}

/// What [`Revision::revise`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Revised {
    pub revision: u64,
    pub changes: Vec<String>,
    /// The approval timeout (s) when the revision waits for approval.
    pub waiting: Option<u64>,
    pub feedback_sources: Vec<&'static str>,
    /// `model` or `offline_edits`.
    pub revised_by: &'static str,
}

impl Revised {
    pub fn to_json(&self) -> Value {
        json!({
            "status": if self.waiting.is_some() { "awaiting_approval" } else { "revised" },
            "revision": self.revision,
            "revision_attempts": self.revision,
            "changes": self.changes,
            "feedback_sources": self.feedback_sources,
            "revised_by": self.revised_by,
            "approval_timeout": self.waiting,
        })
    }
}

type Forge = (ForgeRecord, ForgeClient);

impl Revision<'_> {
    fn forge(&self) -> Result<Forge, Failure> {
        let Some(record) = self.record.clone() else {
            return Err(ForgeError::Record {
                path: ForgeRecord::path(self.run_dir),
                message: "this run was not planned from an issue (dandori plan --issue REF); give --text or --file".to_string(),
            }
            .into());
        };
        let client = client_for(&record.reference, &self.config.forges, self.env)?;
        Ok((record, client))
    }

    fn permissions<'p>(
        &'p self,
        author: &'p str,
        member: &'p dyn Fn(&str, &str) -> Result<bool, ForgeError>,
    ) -> Permissions<'p> {
        Permissions {
            config: &self.config.planning.permissions,
            issue_author: author,
            membership: Some(member),
        }
    }

    fn issue_feedback(&self) -> Result<(Vec<Feedback>, Forge), Failure> {
        let (record, client) = self.forge()?;
        let comments = client.comments(&record.reference)?;
        let (out, ignored) = {
            let member = membership(&client);
            let perms = self.permissions(&record.issue_author, &member);
            crate::feedback::from_comments(&comments, &record, &perms)
        };
        for (id, author) in ignored {
            (self.notify)(&format!(
                "ignored comment {id} by @{author}: not allowed to steer (planning.permissions.allowed_users)"
            ));
        }
        Ok((out, (record, client)))
    }

    /// The feedback → a revised plan (or one waiting for approval), reported
    /// on the issue when the run reports there.
    pub fn revise(
        &self,
        input: FeedbackInput,
        model: Option<&dyn RevisionModel>,
        judge: &(dyn CommandJudge + Sync),
        open_trace: &dyn Fn(Masker) -> Option<TraceWriter>,
    ) -> Result<Revised, Failure> {
        let (feedback, mut forge) = match input {
            FeedbackInput::FromIssue => {
                let (f, forge) = self.issue_feedback()?;
                (f, Some(forge))
            }
            FeedbackInput::Text(text) => (
                vec![Feedback {
                    source: FeedbackSource::Explicit,
                    author: None,
                    comment_id: None,
                    text,
                }],
                None,
            ),
        };
        if feedback.is_empty() {
            return Err(Failure {
                exit: 1,
                message: format!(
                    "{}: no new comments from users allowed to steer",
                    reason::REVISION_NO_CHANGES
                ),
            });
        }
        // Secrets pasted into feedback (the forge token, any secret variable's
        // value, key-shaped strings) reach neither the model nor the history.
        let mut secret_env = self.env.clone();
        if let Some((_, client)) = &forge {
            mask_token(client, &mut secret_env);
        }
        let masker = Masker::default().with_env_secrets(&secret_env);
        let feedback: Vec<Feedback> = feedback
            .into_iter()
            .map(|mut f| {
                f.text = masker.mask_str(&f.text);
                f
            })
            .collect();
        let author = self
            .record
            .as_ref()
            .map(|r| r.issue_author.clone())
            .unwrap_or_default();
        let approval_needed = Permissions::new(&self.config.planning.permissions, &author)
            .approval_needed(self.config.planning.revision.require_human_approval);
        let trace = open_trace(masker);
        let model = model.and_then(|m| self.ask_model(m, &feedback, judge, trace.as_ref()));
        let result = revise::revise(
            self.run_dir,
            &feedback,
            model.as_ref(),
            judge,
            &self.config.planning.revision,
            approval_needed,
            Utc::now(),
        );
        let revised_by = if model.is_some() {
            "model"
        } else {
            "offline_edits"
        };
        if let Some(t) = &trace {
            let _ = t.emit(
                model_revision::PLAN_REVISION,
                revise::revision_event(&result, revised_by),
            );
        }
        // Report on the issue when the run reports there (or --comment).
        let reporting = forge.is_none()
            && self.record.is_some()
            && (self.comment || self.record.as_ref().is_some_and(|r| r.comment));
        if reporting && let Ok(f) = self.forge() {
            forge = Some(f);
        }
        match result {
            Ok(outcome) => {
                let (revision, changes, waiting) = match outcome {
                    Outcome::Applied { revision, changes } => (revision, changes, None),
                    Outcome::AwaitingApproval {
                        revision,
                        changes,
                        timeout,
                    } => (revision, changes, Some(timeout)),
                };
                if let Some((record, client)) = forge {
                    self.report_revision(record, &client, &feedback, revision, &changes, waiting)?;
                }
                Ok(Revised {
                    revision,
                    changes,
                    waiting,
                    feedback_sources: feedback.iter().map(|f| f.source.as_str()).collect(),
                    revised_by,
                })
            }
            Err(e @ ForgeError::RevisionLimit { .. }) => {
                if let Some((record, client)) = forge {
                    self.report_limit(record, &client);
                }
                Err(e.into())
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The model's revision, or None (the offline edits apply) with the reason
    /// in the trace (`PLAN_REVISION_MODEL_FAILED`) when its answer is unusable.
    fn ask_model(
        &self,
        model: &dyn RevisionModel,
        feedback: &[Feedback],
        judge: &(dyn CommandJudge + Sync),
        trace: Option<&TraceWriter>,
    ) -> Option<ModelRevision> {
        // The revision itself reports a broken plan.
        let planning: dandori_plan::Planning = dandori_fs::read(self.run_dir.join("planning.json"))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())?;
        let (system, user) = model_revision::prompt(&planning, feedback);
        let check = |v: &Value| model_revision::check(&planning, v, judge);
        let failed = |reason: String| {
            if let Some(t) = trace {
                let (provider, name) = model.names();
                let _ = t.emit(
                    model_revision::PLAN_REVISION_MODEL_FAILED,
                    json!({"provider": provider, "model": name, "error": reason, "fallback": "offline_edits"}),
                );
            }
            (self.notify)(&format!(
                "the model's plan revision was not usable ({reason}); applying the feedback's explicit edits"
            ));
        };
        match model.ask(system, user, &check) {
            Ok(value) => match model_revision::parse(&value) {
                Ok(m) => Some(m),
                Err(problems) => {
                    failed(problems.join("; "));
                    None
                }
            },
            Err(e) => {
                failed(e);
                None
            }
        }
    }

    fn report_revision(
        &self,
        mut record: ForgeRecord,
        client: &ForgeClient,
        feedback: &[Feedback],
        revision: u64,
        changes: &[String],
        waiting: Option<u64>,
    ) -> Result<(), Failure> {
        for f in feedback {
            if let Some(id) = f.comment_id
                && let Ok(cs) = client.comments(&record.reference)
                && let Some(c) = cs.iter().find(|c| c.id == id)
            {
                record.consumed.insert(id, c.updated_at.clone());
            }
        }
        if record.comment || self.comment {
            let id = record.reference.request_id();
            let body = report::revision_comment(&id, revision, changes, waiting);
            let mut r = report::upsert(client, &self.config.forges, &mut record, "revision", &body)
                .map(|_| ());
            if r.is_ok() && waiting.is_none() {
                r = post_plan_comment(client, self.config, &mut record, self.run_dir).map(|_| ());
            }
            if let Err(e) = r {
                (self.notify)(&format!(
                    "error: {}: reporting on the issue failed: {e}",
                    e.code()
                ));
            }
        }
        record.save(self.run_dir)?;
        Ok(())
    }

    /// Seed 000 §10.4: stop, report, ask for a person, label the issue.
    fn report_limit(&self, mut record: ForgeRecord, client: &ForgeClient) {
        if !(record.comment || self.comment) {
            return;
        }
        let history = revise::load_history(self.run_dir).unwrap_or_default();
        let completion = json!({
            "phase": "completion",
            "status": "requires_human_intervention",
            "summary": {
                "goal_achieved": false,
                "tasks_completed": 0,
                "tasks_failed": 0,
                "revision_attempts": history.revision_attempts,
                "reason": "計画修正の上限に達しました (max_revisions reached)",
                "recommendations": ["Edit planning.json by hand, or raise planning.revision.max_revisions and revise again"],
            },
            "comment": "自動処理が困難なため、人間の介入が必要です。上記の推奨事項をご確認ください。",
        });
        let id = record.reference.request_id();
        let forges = &self.config.forges;
        let r = report::upsert(
            client,
            forges,
            &mut record,
            "completion",
            &report::completion_comment(&id, &completion),
        )
        .and_then(|_| report::add_help_label(client, forges, &mut record));
        if let Err(e) = r {
            (self.notify)(&format!(
                "error: {}: reporting on the issue failed: {e}",
                e.code()
            ));
        }
        let _ = record.save(self.run_dir);
    }

    /// Approves the waiting revision: by the permitted user whose `/approve`
    /// comment came after it (`from_issue`), else by `local_user`. The revision
    /// approved.
    pub fn approve(&self, from_issue: bool, local_user: &str) -> Result<(u64, String), Failure> {
        let pending = match revise::load_pending(self.run_dir)? {
            Some(p) => p,
            None => {
                return Err(Failure {
                    exit: 2,
                    message: format!(
                        "{}: no revision of {} waits for approval",
                        reason::FORGE_RECORD_INVALID,
                        self.run_dir.display()
                    ),
                });
            }
        };
        let now = Utc::now();
        let mut forge = None;
        let approver = if from_issue {
            let (record, client) = self.forge()?;
            let comments = client.comments(&record.reference)?;
            let found = {
                let member = membership(&client);
                let perms = self.permissions(&record.issue_author, &member);
                crate::feedback::approver(&comments, &perms, &pending.requested_at)
            };
            forge = Some((record, client));
            match found {
                Some(user) => user,
                // Let approve() drop it with APPROVAL_TIMEOUT.
                None if revise::expired(&pending, now) => String::new(),
                None => {
                    return Err(Failure {
                        exit: EXIT_AWAITING_APPROVAL,
                        message: format!(
                            "{}: no approving comment (`/approve`) from a permitted user yet; revision {} waits until {} s after {}",
                            reason::APPROVAL_PENDING,
                            pending.revision,
                            pending.approval_timeout,
                            pending.requested_at
                        ),
                    });
                }
            }
        } else {
            format!("local:{local_user}")
        };
        let revision =
            revise::approve(self.run_dir, &approver, &self.config.planning.revision, now)?;
        if forge.is_none()
            && self.record.as_ref().is_some_and(|r| r.comment)
            && let Ok(f) = self.forge()
        {
            forge = Some(f);
        }
        if let Some((mut record, client)) = forge
            && record.comment
        {
            let changes = revise::load_history(self.run_dir)
                .ok()
                .and_then(|h| h.entries.last().map(|e| e.changes.clone()))
                .unwrap_or_default();
            let id = record.reference.request_id();
            let body = report::revision_comment(&id, revision, &changes, None);
            let forges = &self.config.forges;
            let r = report::upsert(&client, forges, &mut record, "revision", &body)
                .and_then(|_| post_plan_comment(&client, self.config, &mut record, self.run_dir));
            if let Err(e) = r {
                (self.notify)(&format!(
                    "error: {}: reporting on the issue failed: {e}",
                    e.code()
                ));
            }
            let _ = record.save(self.run_dir);
        }
        Ok((revision, approver))
    }
}
