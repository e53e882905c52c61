//! [`plan`]: one planning run from request to run directory.

use std::path::{Path, PathBuf};
use std::time::Instant;

use chrono::Utc;
use dandori_config::{Config, TaskPlanningConfig};
use dandori_plan::{Planning, Stage};
use dandori_trace::{Masker, TraceWriter, events};
use serde::Serialize;
use serde_json::json;

use crate::assemble::{self, Skip};
use crate::context::PlanningContext;
use crate::error::PlannerError;
use crate::gathering::{self, Progress, ScanOptions};
use crate::llm::failure::ModelFailure;
use crate::offline::SimplePlanner;
use crate::request::Request;
use crate::{DraftPlanner, run_dir};
use dandori_plan::validation::{self, Finding, Severity};

/// Where the request comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestSource {
    /// `requests/<id>.md`.
    File(PathBuf),
    /// `--text "…"`.
    Text(String),
}

pub struct PlanOptions<'a> {
    pub repo: PathBuf,
    pub request: RequestSource,
    /// `--runs-root`; None → config `runs.root`.
    pub runs_root: Option<PathBuf>,
    pub config: Config,
    pub task_planning: TaskPlanningConfig,
    /// None → the offline planner (strategy `simple`).
    pub planner: Option<&'a dyn DraftPlanner>,
    pub progress: Option<&'a dyn Fn(&Progress)>,
    /// The tools environment commands may use; None → those on this process's PATH.
    pub toolchain: Option<gathering::Toolchain>,
    /// Problems met while loading config (recorded in `PLANNING_START`).
    pub config_warnings: Vec<String>,
    /// The environment whose secret variables' values are masked in the run
    /// directory (`dandori_trace::mask::is_secret_env`); the CLI passes its own.
    pub secret_env: std::collections::BTreeMap<String, String>,
    /// The ecosystems environment analysis asks (seed 002 §13.2): the
    /// built-ins and the plugins found for the repository, the same registry
    /// `dandori env` and the run's environment phase use. Built-ins only by default.
    pub environment_plugins: dandori_env::plugins::Registry,
}

impl<'a> PlanOptions<'a> {
    /// Default config, offline planner, no progress.
    pub fn new(repo: impl Into<PathBuf>, request: RequestSource) -> Self {
        PlanOptions {
            repo: repo.into(),
            request,
            runs_root: None,
            config: Config::default(),
            task_planning: TaskPlanningConfig::default(),
            planner: None,
            progress: None,
            toolchain: None,
            config_warnings: Vec::new(),
            secret_env: std::collections::BTreeMap::new(),
            environment_plugins: dandori_env::plugins::Registry::builtin(),
        }
    }
}

/// Validation of the written planning.json, for `--json` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ValidationSummary {
    pub ok: bool,
    pub fail: usize,
    pub warn: usize,
    pub findings: Vec<Finding>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PlanOutcome {
    pub request_id: String,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub planning_json: PathBuf,
    pub stage_json: PathBuf,
    pub trace_jsonl: PathBuf,
    pub planning: Planning,
    pub validation: ValidationSummary,
    /// The fail-closed reason when planning fell back to a single step.
    pub skipped: Option<String>,
    /// The planner that drafted (`offline`, `llm:…`).
    pub planner: String,
    /// The model could not plan and the offline planner's plan was used: why.
    pub fallback: Option<PlanFallback>,
}

/// `dandori plan --json`'s `fallback`: the planner that failed, what replaced
/// it, and the reason code, cause and config key of its failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanFallback {
    pub planner: String,
    /// `offline`: the offline planner's whole plan.
    pub fallback: String,
    #[serde(flatten)]
    pub failure: ModelFailure,
}

pub fn plan(opts: &PlanOptions<'_>) -> Result<PlanOutcome, PlannerError> {
    let started = Instant::now();
    let progress = |p: Progress| {
        if let Some(f) = opts.progress {
            f(&p);
        }
    };

    // Intake.
    if !opts.repo.is_dir() {
        return Err(PlannerError::RepoNotFound {
            path: opts.repo.clone(),
        });
    }
    let repo = dandori_fs::canonicalize(&opts.repo)?;
    let request = match &opts.request {
        RequestSource::File(p) => Request::load(p)?,
        RequestSource::Text(t) => Request::from_text(t)?,
    };

    // Pre-planning information gathering.
    let now = Utc::now();
    let runs_root = run_dir::runs_root(&repo, opts.runs_root.as_deref(), &opts.config.runs.root);
    let analysis_cfg = &opts.config.planning.environment_setup.analysis;
    let mut scan_options = ScanOptions {
        env_max_search_depth: analysis_cfg.max_search_depth as usize,
        env_max_file_size: analysis_cfg.max_file_size,
        ..ScanOptions::default()
    };
    // A runs root inside the repository is never scanned (the default
    // `.dandori/` is hidden and skipped anyway).
    if let Ok(rel) = runs_root.strip_prefix(&repo)
        && let Some(first) = rel.components().next()
    {
        scan_options
            .skip_dirs
            .push(first.as_os_str().to_string_lossy().into_owned());
    }
    progress(Progress::Scanning { root: repo.clone() });
    let t = Instant::now();
    let scan = dandori_repo::scan(&repo, &scan_options).map_err(|e| PlannerError::Scan {
        root: repo.clone(),
        message: e.to_string(),
    })?;
    progress(Progress::Scanned {
        files: scan.files.len(),
        millis: t.elapsed().as_millis() as u64,
    });
    let t = Instant::now();
    let index = gathering::Index::build(&scan);
    progress(Progress::Indexed {
        files: index.len(),
        millis: t.elapsed().as_millis() as u64,
    });
    let hits = index.search(&request.query_text(), 10);
    let environment =
        gathering::analyze_environment(&scan, analysis_cfg, &opts.environment_plugins);
    // The installer decision `env setup` and the runner carry out (the
    // bootstrapped uv, pnpm, yarn), so the plan's setup commands are theirs.
    let toolchain = match &opts.toolchain {
        Some(t) => t.clone(),
        None => dandori_env::phase::expected_toolchain(
            &environment,
            None,
            &dandori_exec::run::base_env(),
        ),
    };
    let selected_environment = gathering::select_environment(&environment, None, &toolchain);
    let mut selected_environment = selected_environment;
    selected_environment.reason =
        gathering::localized_reason(&selected_environment, request.language);
    // With no test files some test runners fail on an unchanged tree (pytest
    // exits 5, "no tests collected"; npm's default `test` script exits 1):
    // `commands.unit` stays empty there (docs/planner.md). cargo, go and Maven
    // pass with no test, and Rust keeps its tests inside the source files.
    let passes_without_tests = matches!(selected_environment.name.as_str(), "rust" | "go" | "java");
    let unit_commands = if passes_without_tests || scan.files.iter().any(|f| f.is_test) {
        gathering::unit_test_commands(&selected_environment)
    } else {
        Vec::new()
    };

    // The run directory and its trace.
    let rd = run_dir::create(&repo, &runs_root, &request.id, now)?;
    // Secrets in the request never reach the run directory (seed 000 §12.2).
    let masker = Masker::new(
        opts.config.planning.logging.mask_sensitive_data,
        opts.config.planning.logging.sensitive_patterns.clone(),
    )
    .with_env_secrets(&opts.secret_env);
    let request_path = request_path(&repo, &request, &rd, &masker)?;
    let trace = TraceWriter::open(
        rd.path.join("trace.jsonl"),
        rd.run_id.clone(),
        request.id.clone(),
        masker.clone(),
    )?;

    // Seed 000 §13.4 goal understanding: intake and gathering, up to here.
    let goal_understanding_ms = started.elapsed().as_millis() as u64;
    let offline = SimplePlanner;
    let planner: &dyn DraftPlanner = opts.planner.unwrap_or(&offline);
    let planner_name = planner.name();
    trace.emit(
        events::PLANNING_START,
        json!({
            "user_input_summary": crate::request::truncate_chars(&request.summary.replace('\n', " "), 200),
            "request_id": request.id,
            "run_id": rd.run_id,
            "planner": planner_name,
            "config_warnings": opts.config_warnings,
            "repository": {
                "files": scan.files.len(),
                "test_files": scan.files.iter().filter(|f| f.is_test).count(),
                "readme": gathering::readme_path(&scan),
                "environment": selected_environment.name,
            },
        }),
    )?;

    let ctx = PlanningContext {
        request,
        repo_root: repo.clone(),
        request_path,
        scan,
        index,
        hits,
        environment,
        selected_environment,
        unit_commands,
        config: opts.config.clone(),
        task_planning: opts.task_planning.clone(),
    };

    progress(Progress::Drafting {
        planner: planner_name.clone(),
    });
    let t = Instant::now();
    let drafted = planner.draft(&ctx);
    for (event, data) in planner.trace_events() {
        trace.emit(&event, data)?;
    }
    let mut fallback = None;
    let (draft, skip) = match drafted {
        Ok(d) => match d.not_decomposable.clone() {
            Some(reason) => (
                crate::offline::single_step_draft(&ctx, &d),
                Some(Skip {
                    reason,
                    error_details: None,
                }),
            ),
            None => (d, None),
        },
        // Seed 000 §10.1.1: an unclear goal ends planning with the questions.
        Err(e @ PlannerError::UnclearGoal { .. }) => return Err(e),
        // A model that cannot plan never makes the plan worse than no model: the
        // offline planner's whole plan, and the cause said where the user looks.
        Err(e) if opts.planner.is_some() => {
            let mut base = crate::offline::SimplePlanner.draft(&ctx)?;
            let failure = match &e {
                PlannerError::Draft {
                    failure: Some(f), ..
                } => f.clone(),
                other => ModelFailure::new(other.code(), other.to_string(), None),
            };
            base.assumptions.push(format!(
                "The model's plan was not used ({}): this is the offline planner's plan.",
                failure.line()
            ));
            trace.emit(
                events::PLANNING_FALLBACK,
                json!({"planner": planner_name, "fallback": "offline",
                    "reason_code": failure.reason_code, "cause": failure.cause,
                    "config_key": failure.config_key, "error_details": e.to_string(),
                    "steps": base.subtasks.len()}),
            )?;
            fallback = Some(PlanFallback {
                planner: planner_name.clone(),
                fallback: "offline".to_string(),
                failure,
            });
            (base, None)
        }
        // The offline planner itself failed: seed 003 §9's single step.
        Err(e) => {
            let base = crate::offline::SimplePlanner.draft(&ctx)?;
            (
                crate::offline::single_step_draft(&ctx, &base),
                Some(Skip {
                    reason: format!("planner {planner_name} failed: {}", e.code()),
                    error_details: Some(e.to_string()),
                }),
            )
        }
    };

    let task_decomposition_ms = t.elapsed().as_millis() as u64;
    progress(Progress::Assembling {
        draft_millis: task_decomposition_ms,
    });
    let t = Instant::now();
    let ids = assemble::Ids {
        request_id: ctx.request.id.clone(),
        run_id: rd.run_id.clone(),
        created_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        base_branch: run_dir::base_branch(&repo),
        work_branch: run_dir::work_branch(&ctx.request.id, &rd.run_id),
    };
    let mut assembled = assemble::assemble(&ctx, draft, &ids, &rd, skip, &trace)?;
    let action_plan_ms = t.elapsed().as_millis() as u64;
    let masked = serde_json::to_value(&assembled.planning)
        .map(|v| masker.mask_value(v))
        .and_then(serde_json::from_value)
        .map_err(|e| PlannerError::Assemble(format!("masking planning.json: {e}")))?;
    assembled.planning = masked;

    progress(Progress::Writing {
        run_dir: rd.path.clone(),
    });
    let planning_json = rd.path.join("planning.json");
    let stage_json = rd.path.join("stage.json");
    dandori_fs::write_json_atomic(&planning_json, &assembled.planning)?;
    let written = dandori_fs::read_to_string(&planning_json)?;
    let report = validation::validate_str(&written);
    let stage = Stage::for_planning(&assembled.planning, &dandori_trace::now_rfc3339());
    dandori_fs::write_json_atomic(&stage_json, &stage)?;

    let summary = ValidationSummary {
        ok: !report.has_fail(),
        fail: report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Fail)
            .count(),
        warn: report
            .findings
            .iter()
            .filter(|f| f.severity == Severity::Warn)
            .count(),
        findings: report.findings,
    };
    trace.emit(
        events::PLANNING_END,
        json!({
            "status": if assembled.skipped.is_some() { "single_task" } else { "planned" },
            "step_count": assembled.planning.steps.len(),
            "acceptance_criteria": assembled.planning.context.acceptance_criteria.len(),
            "planning_json": assembled.planning.outputs.planning_json,
            "validation": { "ok": summary.ok, "fail": summary.fail, "warn": summary.warn },
            "duration_ms": started.elapsed().as_millis() as u64,
            // Seed 000 §13.4, the three planning phases of §2 (docs/observability.md).
            "phase_durations_ms": {
                "goal_understanding": goal_understanding_ms,
                "task_decomposition": task_decomposition_ms,
                "action_plan": action_plan_ms,
            },
        }),
    )?;

    Ok(PlanOutcome {
        request_id: ids.request_id,
        run_id: ids.run_id,
        run_dir: rd.path.clone(),
        planning_json,
        stage_json,
        trace_jsonl: trace.path().to_path_buf(),
        planning: assembled.planning,
        validation: summary,
        skipped: assembled.skipped,
        planner: planner_name,
        fallback,
    })
}

/// `inputs.request_path`: the request file relative to the repository when it lives
/// there; otherwise (or for `--text`) a copy saved as `request.md` in the run
/// directory.
fn request_path(
    repo: &Path,
    request: &Request,
    rd: &run_dir::RunDir,
    masker: &Masker,
) -> Result<String, PlannerError> {
    let copy = rd.path.join("request.md");
    dandori_fs::write_atomic(&copy, masker.mask_str(&request.raw))?;
    if let Some(src) = &request.source_path
        && let Ok(abs) = dandori_fs::canonicalize(src)
        && let Ok(rel) = abs.strip_prefix(repo)
    {
        return Ok(rel.to_string_lossy().replace('\\', "/"));
    }
    Ok(rd.rel("request.md"))
}
