//! What each tool does, as plain blocking functions over JSON arguments. The MCP
//! layer ([`crate::server`]) runs them off the async runtime and turns errors into
//! tool errors; nothing here can end the server. Planning and run inspection are
//! here; the hand-off of a run to the client (`next`, `step`, `step_update`) is in
//! [`execution`], the environment tools in [`environment`].

mod environment;
mod execution;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use dandori_config::{Config, Loaded};
use dandori_env::plugins::Registry;
use dandori_plan::{graph, validation};
use dandori_planner::{DraftPlanner, PlannerError, RequestSource};
use dandori_runner::environment::EnvironmentPhase;
use serde_json::{Map, Value, json};

use crate::error::{McpError, reason};
use crate::handoff::Board;
use crate::inspect::{self, RunFiles, TraceFilter};

/// What only the binary knows: how the environment phase is done and which model
/// planner the configuration selects. The CLI implements it with the same code as
/// `dandori run` and `dandori plan`, so every tool applies the same policies.
pub trait Host: Send + Sync {
    /// The configuration of a repository, layered as for the CLI (defaults < user
    /// config < file < environment < `-c`, with the repository's trust rules).
    fn config(&self, repo: &Path) -> Result<Loaded, String>;
    fn environment(&self, config: &Config) -> Option<Arc<dyn EnvironmentPhase>>;
    /// The built-in ecosystems and the plugins found for `repo` (seed 002
    /// §13.2): the registry `env_detect` and `plan` analyse the environment with,
    /// the same as the CLI's.
    fn environment_plugins(&self, config: &Config, repo: &Path) -> Registry;
    /// The model planner for a configuration; None = the offline planner.
    fn planner(&self, loaded: &Loaded) -> Result<Option<Box<dyn DraftPlanner>>, PlannerError>;
}

/// How the server was started.
pub struct ServiceOptions {
    /// Where relative paths and a missing `repo` argument point.
    pub cwd: PathBuf,
    /// Environment of the server process (child processes, secret masking).
    pub base_env: BTreeMap<String, String>,
    pub host: Arc<dyn Host>,
}

/// A run this server executes, with the client as executor.
struct Active {
    board: Arc<Board>,
}

pub struct Service {
    opts: ServiceOptions,
    active: Mutex<BTreeMap<PathBuf, Active>>,
    /// Run directories this server planned or opened (listed as resources).
    known: Mutex<Vec<PathBuf>>,
    /// The repository of each run this server planned.
    repos: Mutex<BTreeMap<PathBuf, PathBuf>>,
    /// Masks every answer: the secret variables of the server's environment and
    /// credential shapes, in every form (a run's files are masked when written;
    /// a repository's own text, a plan or a locate hit may still hold one).
    masker: dandori_trace::Masker,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn bad(message: impl Into<String>) -> McpError {
    McpError::invalid(reason::ARGUMENT_INVALID, message)
}

fn opt_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<Option<&'a str>, McpError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(bad(format!("{key}: expected a string"))),
    }
}

fn req_str<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, McpError> {
    opt_str(args, key)?.ok_or_else(|| bad(format!("{key}: required")))
}

fn opt_u64(args: &Map<String, Value>, key: &str) -> Result<Option<u64>, McpError> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| bad(format!("{key}: expected a non-negative integer"))),
    }
}

fn status_str<T: serde::Serialize>(s: T) -> String {
    serde_json::to_value(s)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A `file://` URI for a run file (the resources this server serves).
pub fn file_uri(p: &Path) -> String {
    format!("file://{}", p.display())
}

impl Service {
    pub fn new(opts: ServiceOptions) -> Self {
        Service {
            masker: dandori_trace::Masker::default().with_env_secrets(&opts.base_env),
            opts,
            active: Mutex::new(BTreeMap::new()),
            known: Mutex::new(Vec::new()),
            repos: Mutex::new(BTreeMap::new()),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        let p = PathBuf::from(p);
        if p.is_absolute() {
            p
        } else {
            self.opts.cwd.join(p)
        }
    }

    fn repo(&self, args: &Map<String, Value>) -> Result<PathBuf, McpError> {
        Ok(match opt_str(args, "repo")? {
            Some(r) => self.path(r),
            None => self.opts.cwd.clone(),
        })
    }

    fn load(&self, repo: &Path) -> Result<Loaded, McpError> {
        self.opts
            .host
            .config(repo)
            .map_err(|e| McpError::invalid("CONFIG_INVALID", e))
    }

    /// The run directory argument, canonical, checked to hold a plan.
    fn run_dir(&self, args: &Map<String, Value>) -> Result<PathBuf, McpError> {
        let p = self.path(req_str(args, "run_dir")?);
        let files_ok = p.join("planning.json").is_file();
        if !files_ok {
            return Err(McpError::path(
                reason::RUN_DIR_INVALID,
                &p,
                "not a run directory (no planning.json); use the run_dir that plan returned",
            ));
        }
        let p = dandori_fs::canonicalize(&p)?;
        self.remember(&p);
        Ok(p)
    }

    fn remember(&self, run_dir: &Path) {
        let mut k = lock(&self.known);
        if !k.iter().any(|x| x == run_dir) {
            k.push(run_dir.to_path_buf());
        }
    }

    pub fn known_runs(&self) -> Vec<PathBuf> {
        lock(&self.known).clone()
    }

    /// Runs a tool; its answer, or its error's message, masked. Unknown names are
    /// the caller's concern (tool sets).
    pub fn call(&self, name: &str, args: &Map<String, Value>) -> Result<Value, McpError> {
        match self.answer(name, args) {
            Ok(v) => Ok(self.masker.mask_strings(v)),
            Err(McpError::Invalid { code, message }) => Err(McpError::Invalid {
                code,
                message: self.masker.mask_str(&message),
            }),
            Err(McpError::Path {
                code,
                path,
                message,
            }) => Err(McpError::Path {
                code,
                path,
                message: self.masker.mask_str(&message),
            }),
            Err(other) => Err(other),
        }
    }

    fn answer(&self, name: &str, args: &Map<String, Value>) -> Result<Value, McpError> {
        match name {
            "plan" => self.plan(args),
            "next" => self.next(args),
            "step" => self.step(args),
            "step_update" => self.step_update(args),
            "report" => self.report(args),
            "validate" => self.validate(args),
            "graph" => self.graph(args),
            "status" => Ok(
                serde_json::to_value(inspect::progress(&self.run_dir(args)?)?)
                    .unwrap_or(Value::Null),
            ),
            "runs" => self.runs(args),
            "env_detect" => self.env_detect(args),
            "env_setup" => self.env_setup(args),
            "revise" => self.revise(args),
            "locate" => self.locate(args),
            "trace" => self.trace(args),
            other => Err(McpError::invalid(
                reason::TOOL_UNKNOWN,
                format!("no tool {other:?}"),
            )),
        }
    }

    fn plan(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let repo = self.repo(args)?;
        let request = match (opt_str(args, "request")?, opt_str(args, "text")?) {
            (Some(f), None) => RequestSource::File(self.path(f)),
            (None, Some(t)) => RequestSource::Text(t.to_string()),
            _ => return Err(bad("give exactly one of request (a file) or text")),
        };
        let loaded = self.load(&repo)?;
        let planner = self.opts.host.planner(&loaded)?;
        let mut opts = dandori_planner::PlanOptions::new(&repo, request);
        opts.environment_plugins = self.opts.host.environment_plugins(&loaded.config, &repo);
        opts.config = loaded.config;
        opts.task_planning = loaded.task_planning;
        if let Some(p) = &planner {
            opts.planner = Some(p.as_ref());
        }
        let o = dandori_planner::plan(&opts)?;
        let run_dir = dandori_fs::canonicalize(&o.run_dir)?;
        self.remember(&run_dir);
        lock(&self.repos).insert(run_dir.clone(), dandori_fs::canonicalize(&repo)?);
        let steps: Vec<Value> = o
            .planning
            .steps
            .iter()
            .map(|s| json!({"id": s.step_id, "title": s.title, "after": s.depends_on.clone().unwrap_or_default()}))
            .collect();
        let groups: Vec<&Vec<String>> = o
            .planning
            .execution_plan
            .iter()
            .flat_map(|e| e.execution_groups.iter().map(|g| &g.step_ids))
            .collect();
        Ok(json!({
            "run_dir": run_dir,
            "run_id": o.run_id,
            "planner": o.planner,
            "steps": steps,
            "groups": groups,
            "valid": o.validation.ok,
            "findings": o.validation.findings.iter().map(|f| format!("{} {}", f.code, f.path)).collect::<Vec<_>>(),
            "planning_skipped": o.skipped,
            "planning": file_uri(&run_dir.join("planning.json")),
        }))
    }

    fn report(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.run_dir(args)?;
        let p = inspect::progress(&run_dir)?;
        let errors = run_dir.join("errors.json");
        Ok(json!({
            "status": p.summary.status,
            "total": p.summary.total,
            "done": p.summary.done,
            "failed": p.summary.failed,
            "tokens": p.tokens.total(),
            "report": p.report.as_deref().map(file_uri),
            "errors": errors.is_file().then(|| file_uri(&errors)),
            "trace": file_uri(&run_dir.join("trace.jsonl")),
        }))
    }

    fn plan_text(&self, args: &Map<String, Value>) -> Result<(PathBuf, String), McpError> {
        let mut p = self.path(req_str(args, "path")?);
        if p.is_dir() {
            p = p.join("planning.json");
        }
        let text = dandori_fs::read_to_string(&p)?;
        Ok((p, text))
    }

    fn validate(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let (_, text) = self.plan_text(args)?;
        let checked = validation::check(&text);
        let r = &checked.report;
        Ok(json!({
            "ok": r.errors().next().is_none(),
            "errors": r.errors().collect::<Vec<_>>(),
            "warnings": r.warnings().collect::<Vec<_>>(),
        }))
    }

    fn graph(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let (path, text) = self.plan_text(args)?;
        let checked = validation::check(&text);
        let Some(planning) = checked.planning else {
            let first = checked
                .report
                .errors()
                .next()
                .map(|f| format!("{} at {}: {}", f.code, f.path, f.message))
                .unwrap_or_default();
            return Err(McpError::path(reason::PLAN_INVALID, path, first));
        };
        let a = graph::analyze(&planning.steps)
            .map_err(|e| McpError::path(reason::PLAN_INVALID, &path, e.to_string()))?;
        Ok(json!({
            "mode": a.execution_mode,
            "groups": a.execution_groups.iter().map(|g| &g.step_ids).collect::<Vec<_>>(),
            "critical_path": a.critical_path,
            "edges": a.edges.len(),
        }))
    }

    fn runs(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let repo = self.repo(args)?;
        let loaded = self.load(&repo)?;
        let root = dandori_planner::run_dir::runs_root(&repo, None, &loaded.config.runs.root);
        let runs = inspect::list_runs(&root)?;
        Ok(json!({"root": root, "runs": runs}))
    }

    /// Human (or calling agent) feedback → a revised planning.json, as `dandori
    /// revise RUN_DIR --text … --offline`: the explicit edits of the feedback
    /// (add file …, drop S02, add step: …, language: …, constraint: …), judged by
    /// the run's command policy, recorded as a seed-format human reflection,
    /// paused for `require_human_approval`. The client is the model here: it
    /// phrases the edits itself.
    fn revise(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        use dandori_forge::revise::{self, Feedback, FeedbackSource, Outcome};
        let run_dir =
            self.stopped_run_dir(args, "the run is executing; revise it when it has stopped")?;
        let repo = dandori_fs::canonicalize(self.run_repo(args, &run_dir)?)?;
        let config = self.load(&repo)?.config;
        let masker = dandori_runner::coordinator::masker_for(&config, &self.opts.base_env);
        let feedback = [Feedback {
            source: FeedbackSource::Explicit,
            author: None,
            comment_id: None,
            text: masker.mask_str(req_str(args, "feedback")?),
        }];
        let policy =
            dandori_tools::tool_command_policy(&config.planning.environment_setup.security)
                .map_err(|e| McpError::invalid("CONFIG_INVALID", e.to_string()))?;
        let judge = |line: &str| dandori_runner::plan::command_verdict(&policy, line);
        let author = dandori_forge::record::ForgeRecord::load(&run_dir)
            .ok()
            .flatten()
            .map(|r| r.issue_author)
            .unwrap_or_default();
        let approval_needed =
            dandori_forge::permissions::Permissions::new(&config.planning.permissions, &author)
                .approval_needed(config.planning.revision.require_human_approval);
        let result = revise::revise(
            &run_dir,
            &feedback,
            None,
            &judge,
            &config.planning.revision,
            approval_needed,
            chrono::Utc::now(),
        );
        let files = RunFiles::open(&run_dir)?;
        if let Ok(trace) = dandori_trace::TraceWriter::open(
            run_dir.join("trace.jsonl"),
            files.planning.run_id.clone(),
            files.planning.request_id.clone(),
            masker,
        ) {
            let _ = trace.emit(
                dandori_forge::model_revision::PLAN_REVISION,
                revise::revision_event(&result, "offline_edits"),
            );
        }
        match result {
            Ok(Outcome::Applied { revision, changes }) => Ok(json!({
                "status": "revised", "revision": revision, "changes": changes,
                "planning": file_uri(&run_dir.join("planning.json")),
            })),
            Ok(Outcome::AwaitingApproval {
                revision,
                changes,
                timeout,
            }) => Ok(json!({
                "status": "awaiting_approval", "revision": revision, "changes": changes,
                "approval_timeout": timeout,
                "approve": format!("dandori approve {}", run_dir.display()),
            })),
            Err(e) => Err(McpError::path(e.code(), &run_dir, e.to_string())),
        }
    }

    fn locate(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let repo = self.repo(args)?;
        let query = req_str(args, "query")?;
        let k = opt_u64(args, "k")?.unwrap_or(10).clamp(1, 100) as usize;
        let scan = dandori_repo::scan(&repo, &dandori_repo::ScanOptions::default())
            .map_err(|e| McpError::path("REPO_NOT_FOUND", &repo, e.to_string()))?;
        let index = dandori_repo::Index::build(&scan);
        let files: Vec<Value> = index
            .search(query, k)
            .into_iter()
            .map(|h| {
                let lines = h.snippets.first().map(|s| [s.start_line, s.end_line]);
                json!({"path": h.path, "score": (h.score * 1000.0).round() / 1000.0,
                       "lines": lines, "why": h.reasons.first()})
            })
            .collect();
        Ok(json!({"files": files}))
    }

    fn trace(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.run_dir(args)?;
        let filter = TraceFilter {
            events: opt_str(args, "event")?
                .map(|e| e.split(',').map(|s| s.trim().to_string()).collect())
                .unwrap_or_default(),
            step: opt_str(args, "step")?.map(str::to_string),
            since: opt_str(args, "since")?
                .map(|s| inspect::parse_since(s, chrono::Utc::now()))
                .transpose()?,
            visibility: opt_str(args, "visibility")?
                .map(inspect::parse_visibility)
                .transpose()?,
        };
        let limit = opt_u64(args, "limit")?.unwrap_or(50).min(1000) as usize;
        let events: Vec<_> = dandori_trace::read_trace(run_dir.join("trace.jsonl"))?
            .into_iter()
            .filter(|e| filter.matches(e))
            .collect();
        let skip = events.len().saturating_sub(limit);
        Ok(json!({"total": events.len(), "events": events[skip..].to_vec()}))
    }
}
