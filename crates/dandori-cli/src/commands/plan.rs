//! `dandori plan`: a thin adapter over `dandori_planner::plan`.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use dandori_planner::{PlanOptions, PlanOutcome, Progress, RequestSource};
use serde_json::json;

use dandori_forge::session::{self, Intake};

use crate::cli::PlanArgs;
use crate::output;

/// Exit status when the model asks for clarification instead of planning.
pub const EXIT_UNCLEAR_GOAL: u8 = 3;

pub fn run(args: PlanArgs, config: Option<&Path>, sets: &[String]) -> anyhow::Result<ExitCode> {
    let provider_flags = super::plan_llm::flags(&args.llm);
    let env: BTreeMap<String, String> = std::env::vars().collect();
    // `--issue`: the request comes from the forge (seed 000 §2.5).
    let intake = match &args.issue {
        Some(reference) => match plan_intake(reference, &args, config, sets, &env) {
            Ok(i) => Some(i),
            Err(code) => return Ok(code),
        },
        None => None,
    };
    let request = match (args.request, args.text) {
        _ if intake.is_some() => {
            RequestSource::Text(intake.as_ref().map(|i| i.text.clone()).unwrap_or_default())
        }
        (Some(path), None) if !path.is_file() => {
            return Ok(fail(args.json, &missing_request(&path, &args.repo), 2));
        }
        (Some(path), None) => RequestSource::File(path),
        (None, Some(text)) => RequestSource::Text(text),
        (Some(_), Some(_)) => {
            return Ok(fail(
                args.json,
                "REQUEST_INVALID: give a request file or --text, not both",
                2,
            ));
        }
        (None, None) => {
            return Ok(fail(
                args.json,
                "REQUEST_INVALID: a request file (requests/<id>.md), --text \"…\" or --issue REF is required",
                2,
            ));
        }
    };
    // Defaults < --config < environment < -c, for both planners. The binary reads the
    // process environment; tests pass their own to the library. A config that cannot
    // be loaded stops here (exit 2, `CONFIG_INVALID`): planning with the defaults would
    // drop the file's narrowing keys with its broken one. Warnings are recorded in
    // the trace.
    let task_type = intake.as_ref().map(|i| i.task_type.clone());
    let loaded = super::load_config_for(config, sets, &args.repo, &env, task_type)?;
    let config_warnings: Vec<String> = loaded.warnings.iter().map(|w| w.to_string()).collect();
    // The LLM planner: --provider / the `llm:` config section; else the offline one.
    let llm = match super::plan_llm::select(&provider_flags, &loaded, &env) {
        Ok(selected) => selected,
        Err(e) => {
            return Ok(fail(args.json, &format!("{}: {e}", e.code()), 2));
        }
    };
    // Only long work is worth a line: small repositories plan in well under a second.
    let progress = |p: &Progress| match p {
        Progress::Scanned { files, millis } if *files >= 2000 || *millis >= 500 => {
            output::progress(&format!("scanned {files} files in {millis} ms"))
        }
        Progress::Indexed { files, millis } if *files >= 2000 || *millis >= 500 => {
            output::progress(&format!("indexed {files} files in {millis} ms"))
        }
        Progress::Scanning { .. }
        | Progress::Scanned { .. }
        | Progress::Indexed { .. }
        | Progress::Drafting { .. }
        | Progress::Assembling { .. }
        | Progress::Writing { .. } => {}
    };
    let executes_with = executes_with(&loaded.config);
    super::model_progress::install(args.json);
    let repo = args.repo.clone();
    let mut opts = PlanOptions::new(args.repo, request);
    opts.runs_root = args.runs_root;
    opts.config = loaded.config;
    opts.task_planning = loaded.task_planning;
    opts.config_warnings = config_warnings;
    opts.secret_env = env.clone();
    opts.environment_plugins = super::env::plugins(&opts.config, &repo);
    if let Some(i) = &intake {
        dandori_forge::session::mask_token(&i.client, &mut opts.secret_env);
    }
    let forge_config = opts.config.clone();
    opts.progress = Some(&progress);
    if let Some(planner) = &llm {
        opts.planner = Some(planner);
    }

    let outcome = match dandori_planner::plan(&opts) {
        Ok(o) => o,
        // Seed 000 §10.1.1: the model needs answers before it can plan (exit 3).
        Err(dandori_planner::PlannerError::UnclearGoal {
            planner,
            message,
            questions,
        }) => {
            if args.json {
                output::json(&json!({"status": "unclear_goal", "planner": planner,
                    "message": message, "clarification_needed": questions}));
            } else {
                output::error(&format!("PLANNING_UNCLEAR_GOAL: {message}"));
                for q in &questions {
                    output::line(&format!("  ? {q}"));
                }
            }
            return Ok(ExitCode::from(EXIT_UNCLEAR_GOAL));
        }
        Err(e) => {
            return Ok(fail(
                args.json,
                &format!("{}: {e}", e.code()),
                if e.is_input_error() { 2 } else { 1 },
            ));
        }
    };
    if let Some(i) = intake
        && let Some(code) = plan_after(i, &outcome.run_dir, &forge_config, args.json)
    {
        return Ok(code);
    }
    let llm_usage = llm.as_ref().map(|p| p.client().usage());
    // The model could not plan: one line saying why and what to change, where
    // the user looks (stderr), whatever the output format.
    if let Some(f) = &outcome.fallback {
        output::progress(&format!(
            "warning: planner {} failed, using the offline planner's plan ({} steps): {}",
            f.planner,
            outcome.planning.steps.len(),
            f.failure.line()
        ));
    }
    if args.json {
        output::json(&json!({
            "run_dir": outcome.run_dir,
            "planning_json": outcome.planning_json,
            "stage_json": outcome.stage_json,
            "trace_jsonl": outcome.trace_jsonl,
            "request_id": outcome.request_id,
            "run_id": outcome.run_id,
            "planner": outcome.planner,
            "steps": outcome.planning.steps.len(),
            "planning_skipped": outcome.skipped,
            "fallback": outcome.fallback,
            "validation": outcome.validation,
            "llm_usage": llm_usage,
        }));
    } else {
        human(&outcome);
        next_line(&outcome, &repo, &executes_with);
        if let Some(usage) = &llm_usage {
            output::line(&format!(
                "Model tokens: {} in {} call(s)",
                usage.total(),
                usage.phases.values().map(|p| p.calls).sum::<u64>()
            ));
        }
    }
    Ok(if outcome.validation.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// A failed `plan`: the error on stderr and, with `--json`, as JSON on stdout
/// (`{"status": "error", "reason_code", "message", "exit_code"}`), so scripts
/// always get a JSON answer. `line` is `CODE: message`.
pub(crate) fn fail(json: bool, line: &str, exit: u8) -> ExitCode {
    output::error(line);
    if json {
        let (code, message) = match line.split_once(": ") {
            Some((c, m))
                if !c.is_empty() && c.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') =>
            {
                (c, m)
            }
            _ => ("ERROR", line),
        };
        output::json(
            &json!({"status": "error", "reason_code": code, "message": message,
            "exit_code": exit}),
        );
    }
    ExitCode::from(exit)
}

/// The error for a request file that is not there: where it was looked for, the
/// requests that do exist, and what to pass instead.
fn missing_request(path: &Path, repo: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    let mut msg = format!(
        "REQUEST_UNREADABLE: {} does not exist; the request path is read from the current directory ({}), not from --repo",
        path.display(),
        cwd.display()
    );
    let in_repo = repo.join(path);
    if in_repo.is_file() {
        msg.push_str(&format!("; did you mean {}?", in_repo.display()));
    }
    let mut found: Vec<String> = Vec::new();
    for dir in [repo.join("requests"), std::path::PathBuf::from("requests")] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "md") {
                let shown = p.display().to_string();
                if !found.contains(&shown) {
                    found.push(shown);
                }
            }
        }
    }
    found.sort();
    if found.is_empty() {
        msg.push_str(&format!(
            "; no requests/*.md found in {} or here: write one, or pass --text \"…\"",
            repo.display()
        ));
    } else {
        msg.push_str(&format!("; requests that exist: {}", found.join(", ")));
    }
    msg
}

/// A path as the user can type it from here: relative to the current directory
/// when inside it.
fn from_here(p: &Path) -> String {
    let cwd = std::env::current_dir()
        .ok()
        .and_then(|d| dandori_fs::canonicalize(d).ok())
        .unwrap_or_default();
    match p.strip_prefix(&cwd) {
        Ok(rel) if !rel.as_os_str().is_empty() => rel.display().to_string(),
        _ => p.display().to_string(),
    }
}

fn human(o: &PlanOutcome) {
    let p = &o.planning;
    let mode = p
        .execution_plan
        .as_ref()
        .map(|e| format!("{:?}", e.execution_mode).to_lowercase())
        .unwrap_or_default();
    let groups = p
        .execution_plan
        .as_ref()
        .map_or(0, |e| e.execution_groups.len());
    // After a fallback the plan is the offline planner's, whoever was asked.
    let planner = match &o.fallback {
        Some(f) => format!("{} planner ({} failed)", f.fallback, f.planner),
        None => format!("{} planner", o.planner),
    };
    output::line(&format!(
        "Planned {} (run {}) with the {}: {} step(s), {} group(s), {}",
        o.request_id,
        o.run_id,
        planner,
        p.steps.len(),
        groups,
        mode
    ));
    if let Some(reason) = &o.skipped {
        output::line(&format!(
            "Planning skipped (fail-closed, single step): {reason}"
        ));
    }
    for s in &p.steps {
        // What the step waits for: its logical and data dependencies (resource
        // edges only serialise, they are not shown).
        let mut waits: Vec<&str> = s.depends_on.iter().flatten().map(String::as_str).collect();
        for e in p.dependency_graph.iter().flat_map(|g| &g.edges) {
            if e.to == s.step_id
                && e.kind == dandori_plan::EdgeType::Data
                && !waits.contains(&e.from.as_str())
            {
                waits.push(&e.from);
            }
        }
        waits.sort_unstable();
        let after = if waits.is_empty() {
            String::new()
        } else {
            format!(" (after {})", waits.join(", "))
        };
        output::line(&format!("  {} {}{}", s.step_id, s.title, after));
        output::line(&format!(
            "      targets: {}",
            s.scope.target_paths.join(", ")
        ));
    }
    if let Some(e) = &p.execution_plan {
        for g in &e.execution_groups {
            output::line(&format!(
                "  group {}: {} ({})",
                g.group_index,
                g.step_ids.join(", "),
                format!("{:?}", g.mode).to_lowercase()
            ));
        }
    }
    if let Some(env) = &p.selected_environment {
        output::line(&format!("Environment: {} — {}", env.name, env.reason));
    }
    output::line(&format!(
        "Acceptance criteria ({}):",
        p.context.acceptance_criteria.len()
    ));
    for ac in &p.context.acceptance_criteria {
        output::line(&format!("  {} {}", ac.id, ac_text(ac)));
    }
    output::line(&format!(
        "Validation: {} ({} FAIL, {} WARN)",
        if o.validation.ok { "ok" } else { "FAILED" },
        o.validation.fail,
        o.validation.warn
    ));
    output::line(&format!("Run directory: {}", o.run_dir.display()));
}

/// "Given …, when …, then …" of one acceptance criterion (with its type).
fn ac_text(ac: &dandori_plan::AcceptanceCriterion) -> String {
    let kind = ac
        .kind
        .and_then(|k| serde_json::to_value(k).ok())
        .and_then(|v| v.as_str().map(|s| format!(" [{s}]")))
        .unwrap_or_default();
    format!(
        "Given {}, when {}, then {}{kind}",
        ac.given.trim(),
        ac.when.trim(),
        ac.then.trim()
    )
}

/// Who `dandori run` gives the steps to, by the loaded config: an agent
/// (`runner.agent` / `runner.agent_cmd`), the model of `llm.default_provider`,
/// or nobody (`None`).
fn executes_with(config: &dandori_config::Config) -> Option<String> {
    if let Some(agent) = config.runner.agent {
        return Some(format!("the {} agent (runner.agent)", agent.name()));
    }
    if config.runner.agent_cmd.is_some() {
        return Some("the agent command of runner.agent_cmd".to_string());
    }
    let name = config.llm.default_provider.as_ref()?;
    let model = config
        .llm
        .providers
        .iter()
        .find(|p| &p.name == name)
        .map(|p| p.model.as_str())
        .unwrap_or("?");
    Some(format!("the model {name}/{model} (llm.default_provider)"))
}

/// The `next:` line: the exact command that runs the plan, and what to expect.
fn next_line(o: &PlanOutcome, repo: &Path, executes_with: &Option<String>) {
    let toplevel = std::process::Command::new("git")
        .args(["rev-parse", "--show-toplevel"])
        .current_dir(repo)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .and_then(|t| dandori_fs::canonicalize(Path::new(&t)).ok());
    let repo = dandori_fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    match toplevel {
        Some(t) if t == repo => {}
        Some(t) => output::line(&format!(
            "note: {} is a directory inside the git repository {}: `dandori run` works only in \
             the plan's own repository and refuses this plan (REPO_MISMATCH); make it a repository \
             of its own (git init) and plan again, or try `dandori demo`",
            repo.display(),
            t.display()
        )),
        None => output::line(&format!(
            "note: {} is not a git repository: `dandori run` needs one (git init && git add -A && git commit)",
            repo.display()
        )),
    }
    let dir = from_here(&o.run_dir);
    match executes_with {
        Some(who) => output::line(&format!("next: dandori run {dir}   (steps run by {who})")),
        // A model given to `plan` alone (`--provider`) drafted the plan but does
        // not run its steps: say so rather than "no model".
        None if o.planner.starts_with("llm:") => output::line(&format!(
            "next: dandori run {dir} --agent-cmd 'claude -p {{prompt}}'   (the plan was drafted \
             with {}, but `dandori run` runs steps with llm.default_provider or an agent, and \
             neither is configured; without one the steps wait, exit 3)",
            o.planner.trim_start_matches("llm:")
        )),
        None => output::line(&format!(
            "next: dandori run {dir} --agent-cmd 'claude -p {{prompt}}'   (no model configured; \
             without --agent-cmd the steps wait for one, exit 3)"
        )),
    }
}

/// `plan --issue`: the config without a task type (for `forges:` and the
/// permissions), then the issue.
fn plan_intake(
    reference: &str,
    args: &PlanArgs,
    config: Option<&Path>,
    sets: &[String],
    env: &BTreeMap<String, String>,
) -> Result<Intake, ExitCode> {
    // A broken configuration stops before the forge is asked anything.
    let loaded = match super::load_config(config, sets, &args.repo, env) {
        Ok(l) => l.config,
        Err(e) => {
            output::error(&format!("{e:#}"));
            return Err(ExitCode::from(2));
        }
    };
    let comment = args.comment || loaded.forges.comment;
    match session::intake(reference, &loaded, env, comment) {
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
        Err(e) => Err(fail(
            args.json,
            &format!("{}: {e}", e.code()),
            e.exit_code(),
        )),
    }
}

/// After `plan --issue`: the record and the comments. Some(exit) on failure.
fn plan_after(
    intake: Intake,
    run_dir: &Path,
    config: &dandori_config::Config,
    json: bool,
) -> Option<ExitCode> {
    let comment = intake.record.comment;
    let source = intake.record.source.clone();
    match session::after_plan(intake, run_dir, config) {
        Ok(()) => {
            if comment && !json {
                output::progress(&format!("posted the plan and status comments on {source}"));
            }
            None
        }
        Err(e) => Some(fail(
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
