//! `dandori revise` and `dandori approve`: human feedback → a revised plan
//! (seed 000 §2.5, §10.4, §11.3.1), paused for approval when asked.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use chrono::Utc;
use dandori_config::Config;
use dandori_forge::permissions::Permissions;
use dandori_forge::record::ForgeRecord;
use dandori_forge::revise::{self, Feedback, FeedbackSource, Outcome};
use dandori_forge::{ForgeClient, ForgeError, model_revision, report};
use dandori_planner::llm::provider::resolve;
use serde_json::json;

use super::forge::{client_for, exit_code, membership, read_planning};
use crate::cli::{ApproveArgs, ReviseArgs};
use crate::output;

/// Exit status while a revision waits for approval.
const EXIT_AWAITING_APPROVAL: u8 = 3;

struct Context {
    config: Config,
    env: BTreeMap<String, String>,
    record: Option<ForgeRecord>,
}

fn context(config: Option<&Path>, sets: &[String], run_dir: &Path) -> Result<Context, ExitCode> {
    if !run_dir.join("planning.json").is_file() {
        output::error(&format!(
            "{}: {} is not a run directory (no planning.json)",
            dandori_report::reason::RUN_DIR_INVALID,
            run_dir.display()
        ));
        return Err(ExitCode::from(2));
    }
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let repo = dandori_runner::plan::default_repo(run_dir);
    let record = match ForgeRecord::load(run_dir) {
        Ok(r) => r,
        Err(e) => return Err(fail(&e)),
    };
    let task_type = record.as_ref().map(|r| r.task_type.clone());
    let config = match super::load_config_for(config, sets, &repo, &env, task_type) {
        Ok(l) => l.config,
        Err(e) => {
            output::error(&format!("{e:#}"));
            return Err(ExitCode::from(2));
        }
    };
    Ok(Context {
        config,
        env,
        record,
    })
}

fn fail(e: &ForgeError) -> ExitCode {
    output::error(&format!("{}: {e}", e.code()));
    ExitCode::from(exit_code(e))
}

fn forge_of(ctx: &Context, run_dir: &Path) -> Result<(ForgeRecord, ForgeClient), ExitCode> {
    let Some(record) = ctx.record.clone() else {
        return Err(fail(&ForgeError::Record {
            path: ForgeRecord::path(run_dir),
            message: "this run was not planned from an issue (dandori plan --issue REF); give --text or --file".to_string(),
        }));
    };
    match client_for(&record.reference, &ctx.config.forges, &ctx.env) {
        Ok(c) => Ok((record, c)),
        Err(e) => Err(fail(&e)),
    }
}

/// With a provider (`--provider …` or `llm.default_provider`) and not
/// `--offline`: the feedback and the plan go to the model, and its seed-format
/// `plan_revision` is checked (shape, steps, paths inside the repository, the
/// command policy, plan validation), re-asked once with the problems quoted.
/// An unusable answer or a failed call falls back to the offline edits with the
/// reason in the trace (`PLAN_REVISION_MODEL_FAILED`). A provider that cannot
/// be set up (unknown name, missing key variable) is a usage error (exit 2).
fn model_revision(
    ctx: &Context,
    args: &ReviseArgs,
    run_dir: &Path,
    feedback: &[Feedback],
    judge: &(dyn dandori_plan::validation::CommandJudge + Sync),
    trace: Option<&dandori_trace::TraceWriter>,
) -> Result<Option<model_revision::ModelRevision>, ExitCode> {
    if args.offline {
        return Ok(None);
    }
    let flags = super::plan_llm::flags(&args.llm);
    let usage = |e: String| {
        output::error(&format!("LLM_PROVIDER_INVALID: {e}"));
        ExitCode::from(2)
    };
    let provider = match resolve(&ctx.config.llm, &flags) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(None),
        Err(e) => return Err(usage(e.to_string())),
    };
    let lookup = |name: &str| ctx.env.get(name).cloned();
    let client = match dandori_llm::Client::from_config(&provider, &ctx.config.llm.budgets, &lookup)
    {
        Ok(c) => c.with_agent_runtime(dandori_llm::AgentRuntime::from_config(
            &ctx.config,
            &ctx.env,
        )),
        Err(e) => return Err(usage(e.to_string())),
    };
    let planning: dandori_plan::Planning = match dandori_fs::read(run_dir.join("planning.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(p) => p,
        // The revision itself reports the broken plan.
        None => return Ok(None),
    };
    let (system, user) = model_revision::prompt(&planning, feedback);
    let mut request = dandori_llm::ChatRequest::new(
        // A re-plan: the plan is in the prompt, so the planning budget applies.
        dandori_llm::Phase::Planning,
        vec![
            dandori_llm::Message::system(system),
            dandori_llm::Message::user(user),
        ],
    );
    request.response_schema = Some(dandori_llm::ResponseSchema {
        name: "plan_revision".to_string(),
        schema: model_revision::schema(),
    });
    request.temperature = Some(0.0);
    let extra = |v: &serde_json::Value| model_revision::check(&planning, v, judge);
    let answer = dandori_llm::block_on(dandori_llm::structured::chat_structured(
        &client, &request, &extra,
    ));
    let failed = |reason: String| {
        if let Some(t) = trace {
            let _ = t.emit(
                model_revision::PLAN_REVISION_MODEL_FAILED,
                json!({"provider": provider.name, "model": provider.model, "error": reason, "fallback": "offline_edits"}),
            );
        }
        output::progress(&format!(
            "the model's plan revision was not usable ({reason}); applying the feedback's explicit edits"
        ));
    };
    match answer {
        Ok(Ok(s)) => match model_revision::parse(&s.value) {
            Ok(m) => Ok(Some(m)),
            Err(problems) => {
                failed(problems.join("; "));
                Ok(None)
            }
        },
        Ok(Err(e)) => {
            failed(e.to_string());
            Ok(None)
        }
        Err(e) => {
            failed(format!("cannot start the model call: {e}"));
            Ok(None)
        }
    }
}

pub fn revise(
    config: Option<&Path>,
    sets: &[String],
    args: &ReviseArgs,
) -> anyhow::Result<ExitCode> {
    let run_dir = &args.run_dir;
    let ctx = match context(config, sets, run_dir) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let mut forge = None;
    let feedback: Vec<Feedback> = if args.from_issue {
        let (record, client) = match forge_of(&ctx, run_dir) {
            Ok(f) => f,
            Err(code) => return Ok(code),
        };
        let comments = match client.comments(&record.reference) {
            Ok(c) => c,
            Err(e) => return Ok(fail(&e)),
        };
        let member = membership(&client);
        let perms = Permissions {
            config: &ctx.config.planning.permissions,
            issue_author: &record.issue_author,
            membership: Some(&member),
        };
        let (out, ignored) = dandori_forge::feedback::from_comments(&comments, &record, &perms);
        if !args.json {
            for (id, author) in ignored {
                output::progress(&format!(
                    "ignored comment {id} by @{author}: not allowed to steer (planning.permissions.allowed_users)"
                ));
            }
        }
        drop(member);
        forge = Some((record, client));
        out
    } else {
        let text = match (&args.text, &args.file) {
            (Some(t), _) => t.clone(),
            (None, Some(f)) => match dandori_fs::read_to_string(f) {
                Ok(t) => t,
                Err(e) => {
                    output::error(&format!("{}: {e}", dandori_report::reason::FILE_NOT_FOUND));
                    return Ok(ExitCode::from(2));
                }
            },
            (None, None) => {
                output::error(
                    "REVISION_NO_CHANGES: give --from-issue, --text \"…\" or --file FILE",
                );
                return Ok(ExitCode::from(2));
            }
        };
        vec![Feedback {
            source: FeedbackSource::Explicit,
            author: None,
            comment_id: None,
            text,
        }]
    };
    if feedback.is_empty() {
        output::error("REVISION_NO_CHANGES: no new comments from users allowed to steer");
        return Ok(ExitCode::from(1));
    }
    // Secrets pasted into feedback (the forge token, any secret variable's
    // value, key-shaped strings) reach neither the model nor the history.
    let mut secret_env = ctx.env.clone();
    if let Some((_, client)) = &forge {
        super::forge::mask_token(client, &mut secret_env);
    }
    let masker = dandori_trace::Masker::default().with_env_secrets(&secret_env);
    let feedback: Vec<Feedback> = feedback
        .into_iter()
        .map(|mut f| {
            f.text = masker.mask_str(&f.text);
            f
        })
        .collect();
    let author = ctx
        .record
        .as_ref()
        .map(|r| r.issue_author.clone())
        .unwrap_or_default();
    let approval_needed = Permissions::new(&ctx.config.planning.permissions, &author)
        .approval_needed(ctx.config.planning.revision.require_human_approval);
    // Plan sanitisation judges the revised plan with the run's command policy.
    let policy =
        match dandori_tools::tool_command_policy(&ctx.config.planning.environment_setup.security) {
            Ok(p) => p,
            Err(e) => {
                output::error(&format!("{}: {e}", dandori_report::reason::PLAN_INVALID));
                return Ok(ExitCode::from(2));
            }
        };
    let judge = |line: &str| dandori_runner::plan::command_verdict(&policy, line);
    let trace = super::run::open_run_trace(
        &run_dir.join("planning.json"),
        &run_dir.join("trace.jsonl"),
        masker.clone(),
    );
    let model = match model_revision(&ctx, args, run_dir, &feedback, &judge, trace.as_ref()) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    let result = revise::revise(
        run_dir,
        &feedback,
        model.as_ref(),
        &judge,
        &ctx.config.planning.revision,
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
        && ctx.record.is_some()
        && (args.comment || ctx.record.as_ref().is_some_and(|r| r.comment));
    if reporting && let Ok(f) = forge_of(&ctx, run_dir) {
        forge = Some(f);
    }
    match result {
        Ok(outcome) => {
            let (revision, changes, waiting) = match &outcome {
                Outcome::Applied { revision, changes } => (*revision, changes.clone(), None),
                Outcome::AwaitingApproval {
                    revision,
                    changes,
                    timeout,
                } => (*revision, changes.clone(), Some(*timeout)),
            };
            if let Some((mut record, client)) = forge.take() {
                for f in &feedback {
                    if let Some(id) = f.comment_id
                        && let Ok(cs) = client.comments(&record.reference)
                        && let Some(c) = cs.iter().find(|c| c.id == id)
                    {
                        record.consumed.insert(id, c.updated_at.clone());
                    }
                }
                if record.comment || args.comment {
                    let id = record.reference.request_id();
                    let body = report::revision_comment(&id, revision, &changes, waiting);
                    let mut r =
                        report::upsert(&client, &ctx.config.forges, &mut record, "revision", &body)
                            .map(|_| ());
                    if r.is_ok() && waiting.is_none() {
                        r = post_plan_comment(&client, &ctx.config, &mut record, run_dir);
                    }
                    if let Err(e) = r {
                        output::error(&format!("{}: reporting on the issue failed: {e}", e.code()));
                    }
                }
                if let Err(e) = record.save(run_dir) {
                    return Ok(fail(&e));
                }
            }
            if args.json {
                output::json(&json!({
                    "status": if waiting.is_some() { "awaiting_approval" } else { "revised" },
                    "revision": revision,
                    "revision_attempts": revision,
                    "changes": changes,
                    "feedback_sources": feedback.iter().map(|f| f.source.as_str()).collect::<Vec<_>>(),
                    "revised_by": revised_by,
                    "approval_timeout": waiting,
                }));
            } else {
                output::line(&format!(
                    "Revision {revision} of {} ({}):",
                    run_dir.display(),
                    if model.is_some() {
                        "written by the model"
                    } else {
                        "explicit edits"
                    }
                ));
                for c in &changes {
                    output::line(&format!("  {c}"));
                }
                match waiting {
                    Some(t) => output::line(&format!(
                        "Waiting for approval ({t} s): dandori approve {}",
                        run_dir.display()
                    )),
                    None => output::line(&format!("next: dandori run {}", run_dir.display())),
                }
            }
            Ok(if waiting.is_some() {
                ExitCode::from(EXIT_AWAITING_APPROVAL)
            } else {
                ExitCode::SUCCESS
            })
        }
        Err(e @ ForgeError::RevisionLimit { .. }) => {
            // Seed 000 §10.4: stop, report, ask for a person, label the issue.
            if let Some((mut record, client)) = forge.take()
                && (record.comment || args.comment)
            {
                let history = revise::load_history(run_dir).unwrap_or_default();
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
                let r = report::upsert(
                    &client,
                    &ctx.config.forges,
                    &mut record,
                    "completion",
                    &report::completion_comment(&id, &completion),
                )
                .and_then(|_| report::add_help_label(&client, &ctx.config.forges, &mut record));
                if let Err(e2) = r {
                    output::error(&format!(
                        "{}: reporting on the issue failed: {e2}",
                        e2.code()
                    ));
                }
                let _ = record.save(run_dir);
            }
            Ok(fail(&e))
        }
        Err(e) => Ok(fail(&e)),
    }
}

fn post_plan_comment(
    client: &ForgeClient,
    config: &Config,
    record: &mut ForgeRecord,
    run_dir: &Path,
) -> Result<(), ForgeError> {
    let planning = read_planning(run_dir)?;
    let revision = revise::load_history(run_dir)?.revision_attempts;
    report::upsert(
        client,
        &config.forges,
        record,
        "plan",
        &report::plan_comment(&planning, revision),
    )
    .map(|_| ())
}

pub fn approve(
    config: Option<&Path>,
    sets: &[String],
    args: &ApproveArgs,
) -> anyhow::Result<ExitCode> {
    let run_dir = &args.run_dir;
    let ctx = match context(config, sets, run_dir) {
        Ok(c) => c,
        Err(code) => return Ok(code),
    };
    let pending = match revise::load_pending(run_dir) {
        Ok(Some(p)) => p,
        Ok(None) => {
            output::error(&format!(
                "{}: no revision of {} waits for approval",
                dandori_forge::reason::FORGE_RECORD_INVALID,
                run_dir.display()
            ));
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Ok(fail(&e)),
    };
    let now = Utc::now();
    let mut forge = None;
    let approver = if args.from_issue {
        let (record, client) = match forge_of(&ctx, run_dir) {
            Ok(f) => f,
            Err(code) => return Ok(code),
        };
        let comments = match client.comments(&record.reference) {
            Ok(c) => c,
            Err(e) => return Ok(fail(&e)),
        };
        let found = {
            let member = membership(&client);
            let perms = Permissions {
                config: &ctx.config.planning.permissions,
                issue_author: &record.issue_author,
                membership: Some(&member),
            };
            dandori_forge::feedback::approver(&comments, &perms, &pending.requested_at)
        };
        forge = Some((record, client));
        match found {
            Some(user) => user,
            None if revise::expired(&pending, now) => {
                // Let approve() drop it with APPROVAL_TIMEOUT.
                String::new()
            }
            None => {
                output::error(&format!(
                    "{}: no approving comment (`/approve`) from a permitted user yet; revision {} waits until {} s after {}",
                    dandori_forge::reason::APPROVAL_PENDING,
                    pending.revision,
                    pending.approval_timeout,
                    pending.requested_at
                ));
                return Ok(ExitCode::from(EXIT_AWAITING_APPROVAL));
            }
        }
    } else {
        let user = ctx
            .env
            .get("USER")
            .cloned()
            .unwrap_or_else(|| "local".to_string());
        format!("local:{user}")
    };
    match revise::approve(run_dir, &approver, &ctx.config.planning.revision, now) {
        Ok(revision) => {
            if forge.is_none()
                && ctx.record.as_ref().is_some_and(|r| r.comment)
                && let Ok(f) = forge_of(&ctx, run_dir)
            {
                forge = Some(f);
            }
            if let Some((mut record, client)) = forge
                && record.comment
            {
                let changes = revise::load_history(run_dir)
                    .ok()
                    .and_then(|h| h.entries.last().map(|e| e.changes.clone()))
                    .unwrap_or_default();
                let id = record.reference.request_id();
                let body = report::revision_comment(&id, revision, &changes, None);
                let r = report::upsert(&client, &ctx.config.forges, &mut record, "revision", &body)
                    .and_then(|_| post_plan_comment(&client, &ctx.config, &mut record, run_dir));
                if let Err(e) = r {
                    output::error(&format!("{}: reporting on the issue failed: {e}", e.code()));
                }
                let _ = record.save(run_dir);
            }
            if args.json {
                output::json(
                    &json!({"status": "approved", "revision": revision, "approved_by": approver}),
                );
            } else {
                output::line(&format!(
                    "Revision {revision} approved by {approver}; next: dandori run {}",
                    run_dir.display()
                ));
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Ok(fail(&e)),
    }
}
