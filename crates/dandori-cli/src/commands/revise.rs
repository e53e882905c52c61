//! `dandori revise` and `dandori approve`, adapted: the configuration loaded,
//! the model client and the command judge built, then
//! `dandori_forge::revision_flow` does the work; its outcome printed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use dandori_config::Config;
use dandori_forge::record::ForgeRecord;
use dandori_forge::revision_flow::{
    EXIT_AWAITING_APPROVAL, Failure, FeedbackInput, Revision, RevisionModel,
};
use dandori_planner::llm::provider::resolve;
use serde_json::{Value, json};

use crate::cli::{ApproveArgs, ReviseArgs};
use crate::output;

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
    let record = ForgeRecord::load(run_dir).map_err(|e| fail(e.into()))?;
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

fn fail(f: Failure) -> ExitCode {
    output::error(&f.message);
    ExitCode::from(f.exit)
}

fn notify(line: &str) {
    match line.strip_prefix("error: ") {
        Some(e) => output::error(e),
        None => output::progress(line),
    }
}

/// The configured model as a [`RevisionModel`]: a structured `plan_revision`
/// call at temperature 0 under the planning budget (the plan is in the prompt).
struct LlmReviser {
    client: dandori_llm::Client,
    provider: String,
    model: String,
}

impl RevisionModel for LlmReviser {
    fn names(&self) -> (String, String) {
        (self.provider.clone(), self.model.clone())
    }

    fn ask(
        &self,
        system: String,
        user: String,
        check: &(dyn Fn(&Value) -> Vec<String> + Sync),
    ) -> Result<Value, String> {
        let mut request = dandori_llm::ChatRequest::new(
            dandori_llm::Phase::Planning,
            vec![
                dandori_llm::Message::system(system),
                dandori_llm::Message::user(user),
            ],
        );
        request.response_schema = Some(dandori_llm::ResponseSchema {
            name: "plan_revision".to_string(),
            schema: dandori_forge::model_revision::schema(),
        });
        request.temperature = Some(0.0);
        match dandori_llm::block_on(dandori_llm::structured::chat_structured(
            &self.client,
            &request,
            check,
        )) {
            Ok(Ok(s)) => Ok(s.value),
            Ok(Err(e)) => Err(e.to_string()),
            Err(e) => Err(format!("cannot start the model call: {e}")),
        }
    }
}

/// With a provider (`--provider …` or `llm.default_provider`) and not
/// `--offline`: the model that revises the plan. A provider that cannot be set
/// up (unknown name, missing key variable) is a usage error (exit 2).
fn reviser(ctx: &Context, args: &ReviseArgs) -> Result<Option<LlmReviser>, ExitCode> {
    if args.offline {
        return Ok(None);
    }
    let usage = |e: String| {
        output::error(&format!("LLM_PROVIDER_INVALID: {e}"));
        ExitCode::from(2)
    };
    let provider = match resolve(&ctx.config.llm, &super::plan_llm::flags(&args.llm)) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(None),
        Err(e) => return Err(usage(e.to_string())),
    };
    let lookup = |name: &str| ctx.env.get(name).cloned();
    let client = dandori_llm::Client::from_config(&provider, &ctx.config.llm.budgets, &lookup)
        .map_err(|e| usage(e.to_string()))?
        .with_agent_runtime(dandori_llm::AgentRuntime::from_config(
            &ctx.config,
            &ctx.env,
        ));
    Ok(Some(LlmReviser {
        client,
        provider: provider.name.clone(),
        model: provider.model.clone(),
    }))
}

fn feedback_input(args: &ReviseArgs) -> Result<FeedbackInput, ExitCode> {
    if args.from_issue {
        return Ok(FeedbackInput::FromIssue);
    }
    match (&args.text, &args.file) {
        (Some(t), _) => Ok(FeedbackInput::Text(t.clone())),
        (None, Some(f)) => dandori_fs::read_to_string(f)
            .map(FeedbackInput::Text)
            .map_err(|e| {
                output::error(&format!("{}: {e}", dandori_report::reason::FILE_NOT_FOUND));
                ExitCode::from(2)
            }),
        (None, None) => {
            output::error("REVISION_NO_CHANGES: give --from-issue, --text \"…\" or --file FILE");
            Err(ExitCode::from(2))
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
    let input = match feedback_input(args) {
        Ok(i) => i,
        Err(code) => return Ok(code),
    };
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
    let model = match reviser(&ctx, args) {
        Ok(m) => m,
        Err(code) => return Ok(code),
    };
    // `--json`: the comments left out are no warning worth a line.
    let json_notify = |line: &str| {
        if !line.starts_with("ignored comment") {
            notify(line);
        }
    };
    let revision = Revision {
        run_dir,
        config: &ctx.config,
        env: &ctx.env,
        record: ctx.record.clone(),
        comment: args.comment,
        notify: if args.json { &json_notify } else { &notify },
    };
    let open_trace = |masker| {
        super::run::open_run_trace(
            &run_dir.join("planning.json"),
            &run_dir.join("trace.jsonl"),
            masker,
        )
    };
    let revised = match revision.revise(
        input,
        model.as_ref().map(|m| m as &dyn RevisionModel),
        &judge,
        &open_trace,
    ) {
        Ok(r) => r,
        Err(f) => return Ok(fail(f)),
    };
    if args.json {
        output::json(&revised.to_json());
    } else {
        output::line(&format!(
            "Revision {} of {} ({}):",
            revised.revision,
            run_dir.display(),
            if revised.revised_by == "model" {
                "written by the model"
            } else {
                "explicit edits"
            }
        ));
        for c in &revised.changes {
            output::line(&format!("  {c}"));
        }
        match revised.waiting {
            Some(t) => output::line(&format!(
                "Waiting for approval ({t} s): dandori approve {}",
                run_dir.display()
            )),
            None => output::line(&format!("next: dandori run {}", run_dir.display())),
        }
    }
    Ok(if revised.waiting.is_some() {
        ExitCode::from(EXIT_AWAITING_APPROVAL)
    } else {
        ExitCode::SUCCESS
    })
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
    let revision = Revision {
        run_dir,
        config: &ctx.config,
        env: &ctx.env,
        record: ctx.record.clone(),
        comment: false,
        notify: &notify,
    };
    let user = ctx.env.get("USER").map_or("local", String::as_str);
    match revision.approve(args.from_issue, user) {
        Ok((revision, approver)) => {
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
        Err(f) => Ok(fail(f)),
    }
}
