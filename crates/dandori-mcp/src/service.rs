//! What each tool does, as plain blocking functions over JSON arguments. The MCP
//! layer ([`crate::server`]) runs them off the async runtime and turns errors into
//! tool errors; nothing here can end the server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use dandori_config::{Config, Loaded};
use dandori_plan::{StepStatus, graph, validation};
use dandori_planner::{DraftPlanner, PlannerError, RequestSource};
use dandori_runner::RunOptions;
use dandori_runner::environment::EnvironmentPhase;
use serde_json::{Map, Value, json};

use crate::error::{McpError, reason};
use crate::handoff::{Answer, Board, Ended, HandoffExecutor};
use crate::inspect::{self, RunFiles, TraceFilter};

/// What only the binary knows: how the environment phase is done and which model
/// planner the configuration selects. The CLI implements it with the same code as
/// `dandori run` and `dandori plan`, so every tool applies the same policies.
pub trait Host: Send + Sync {
    /// The configuration of a repository, layered as for the CLI (defaults < user
    /// config < file < environment < `-c`, with the repository's trust rules).
    fn config(&self, repo: &Path) -> Result<Loaded, String>;
    fn environment(&self, config: &Config) -> Option<Arc<dyn EnvironmentPhase>>;
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

    /// The board of a run, starting the runner on it (with the client as
    /// executor) unless it runs already.
    fn ensure_started(&self, run_dir: &Path, repo: &Path) -> Result<Arc<Board>, McpError> {
        let mut active = lock(&self.active);
        if let Some(a) = active.get(run_dir)
            && a.board.ended().is_none()
        {
            return Ok(a.board.clone());
        }
        let board = Arc::new(Board::default());
        let loaded = self.load(repo)?;
        let config = loaded.config;
        let environment = self.opts.host.environment(&config);
        let opts = RunOptions {
            target: run_dir.to_path_buf(),
            repo: repo.to_path_buf(),
            config,
            executor: None,
            executor_override: Some(Arc::new(HandoffExecutor {
                board: board.clone(),
            })),
            approve: false,
            resume: false,
            base_env: self.opts.base_env.clone(),
            environment,
            progress: None,
            dispatch: None,
        };
        let b = board.clone();
        std::thread::Builder::new()
            .name("dandori-run".to_string())
            .spawn(move || {
                let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    dandori_runner::run(&opts)
                }));
                let ended = match run {
                    Ok(Ok(o)) => Ended::Completed(
                        serde_json::to_value(&o.completion).unwrap_or(Value::Null),
                    ),
                    Ok(Err(e)) => Ended::Error {
                        code: e.reason_code().to_string(),
                        message: e.to_string(),
                    },
                    Err(_) => Ended::Error {
                        code: reason::RUN_FAILED.to_string(),
                        message: "the run stopped unexpectedly; `dandori resume` continues it from stage.json".to_string(),
                    },
                };
                b.end(ended);
            })
            .map_err(|e| dandori_fs::FsError::new("starting the run thread for", run_dir, e))?;
        active.insert(
            run_dir.to_path_buf(),
            Active {
                board: board.clone(),
            },
        );
        Ok(board)
    }

    /// The repository of a run: the `repo` argument, the one it was planned in by
    /// this server, else the git work tree holding the run directory.
    fn run_repo(&self, args: &Map<String, Value>, run_dir: &Path) -> Result<PathBuf, McpError> {
        if let Some(r) = opt_str(args, "repo")? {
            return Ok(self.path(r));
        }
        if let Some(r) = lock(&self.repos).get(run_dir) {
            return Ok(r.clone());
        }
        let top = dandori_runner::git::Git::new(run_dir)
            .run(&["rev-parse", "--show-toplevel"])
            .map_err(|_| {
                McpError::path(
                    reason::ARGUMENT_INVALID,
                    run_dir,
                    "the run directory is outside a git repository: give repo",
                )
            })?;
        Ok(PathBuf::from(top.trim()))
    }

    /// The run directory argument of a tool that must not touch a run this
    /// server is executing (`RUN_ACTIVE` with `why`).
    fn stopped_run_dir(&self, args: &Map<String, Value>, why: &str) -> Result<PathBuf, McpError> {
        let run_dir = self.run_dir(args)?;
        if self.board(&run_dir).is_some_and(|b| b.ended().is_none()) {
            return Err(McpError::path(reason::RUN_ACTIVE, &run_dir, why));
        }
        Ok(run_dir)
    }

    fn board(&self, run_dir: &Path) -> Option<Arc<Board>> {
        lock(&self.active).get(run_dir).map(|a| a.board.clone())
    }

    fn ended_json(run_dir: &Path, ended: &Ended) -> Value {
        let report = run_dir.join("report.md");
        match ended {
            Ended::Completed(c) => json!({
                "status": c.get("status").cloned().unwrap_or(Value::Null),
                "exit_code": c.get("exit_code").cloned().unwrap_or(Value::Null),
                "comment": c.get("comment").cloned().unwrap_or(Value::Null),
                "report": report.is_file().then(|| file_uri(&report)),
            }),
            Ended::Error { code, message } => json!({
                "status": "error", "reason_code": code, "message": message,
            }),
        }
    }

    fn next(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.run_dir(args)?;
        let wait = Duration::from_secs(opt_u64(args, "wait_sec")?.unwrap_or(30).min(600));
        let files = RunFiles::open(&run_dir)?;
        let finished = files
            .stage
            .as_ref()
            .is_some_and(|s| s.status == dandori_plan::RunStatus::Done);
        // A run this server drove to its end stays ended (`dandori resume`, or a
        // new server, resumes a failed one).
        if let Some(e) = self.board(&run_dir).and_then(|b| b.ended()) {
            return Ok(
                json!({"status": "finished", "ready": [], "completion": Self::ended_json(&run_dir, &e)}),
            );
        }
        if finished && self.board(&run_dir).is_none() {
            let report = run_dir.join("report.md");
            return Ok(json!({"status": "finished", "ready": [],
                "completion": {"status": "completed", "report": report.is_file().then(|| file_uri(&report))}}));
        }
        let repo = self.run_repo(args, &run_dir)?;
        let board = self.ensure_started(&run_dir, &repo)?;
        let _contact = board.contact();
        board.wait_ready(wait);
        let ready: Vec<Value> = board
            .pending()
            .into_iter()
            .map(|(id, attempt, workdir, started)| {
                // A follow-up step is recorded after `files` was read.
                let title = find_step(&files, &id)
                    .or_else(|| RunFiles::open(&run_dir).ok().and_then(|f| find_step(&f, &id)))
                    .map(|f| f.step.title)
                    .unwrap_or_default();
                json!({"step_id": id, "title": title, "attempt": attempt, "workdir": workdir, "started": started})
            })
            .collect();
        let ended = board.ended();
        Ok(match (&ended, ready.is_empty()) {
            (Some(e), true) => {
                json!({"status": "finished", "ready": [], "completion": Self::ended_json(&run_dir, e)})
            }
            _ => json!({"status": "running", "ready": ready}),
        })
    }

    fn step(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.run_dir(args)?;
        let id = req_str(args, "step_id")?;
        let files = RunFiles::open(&run_dir)?;
        let Some(found) = find_step(&files, id) else {
            return Err(unknown_step(id, &files));
        };
        let step = &found.step;
        let st = found.state(&files);
        // Reading a waiting step takes it: its timeout starts now.
        let board = self.board(&run_dir);
        let _contact = board.as_ref().map(|b| b.contact());
        let handoff = board.as_ref().and_then(|b| b.take(id));
        let (prompt, workdir, attempt) = match handoff {
            Some((attempt, prompt, workdir)) => (prompt, Some(workdir), Some(attempt)),
            None => (
                dandori_runner::prompt::build(
                    &files.planning,
                    step,
                    None,
                    dandori_runner::environment::read_summary(&run_dir).as_deref(),
                ),
                None,
                None,
            ),
        };
        let acs: Vec<Value> = files
            .planning
            .context
            .acceptance_criteria
            .iter()
            .filter(|ac| step.links_to_ac.iter().any(|l| l == &ac.id))
            .map(|ac| serde_json::to_value(ac).unwrap_or(Value::Null))
            .collect();
        Ok(json!({
            "step_id": step.step_id,
            "title": step.title,
            "status": st.map(|s| status_str(s.status)),
            "follow_up_for": found.follow_up_for(),
            "attempt": attempt,
            "workdir": workdir,
            "depends_on": step.depends_on,
            "target_paths": step.scope.target_paths,
            "max_diff_lines": step.scope.max_diff_lines,
            "unit_commands": step.commands.unit,
            "suggested_tools": step.suggested_tools,
            "suggested_persona": step.suggested_persona,
            "acceptance_criteria": acs,
            "prompt": prompt,
        }))
    }

    fn step_update(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.run_dir(args)?;
        let id = req_str(args, "step_id")?;
        let status = req_str(args, "status")?;
        let summary = opt_str(args, "summary")?.unwrap_or("").to_string();
        let files = RunFiles::open(&run_dir)?;
        let Some(found) = find_step(&files, id) else {
            return Err(unknown_step(id, &files));
        };
        let not_ready = || {
            McpError::invalid(
                reason::STEP_NOT_READY,
                format!("{id} is not waiting for an executor; call next for the ready steps"),
            )
        };
        let board = self.board(&run_dir).ok_or_else(not_ready)?;
        let _contact = board.contact();
        let answer = match status {
            "started" => {
                if !board.start(id) {
                    return Err(not_ready());
                }
                let workdir = board.handoff(id).map(|(_, _, w)| w);
                return Ok(json!({"step_id": id, "status": "started", "workdir": workdir}));
            }
            "done" => Answer::Done {
                summary: if summary.is_empty() {
                    "done (mcp client)".to_string()
                } else {
                    summary
                },
            },
            "failed" => Answer::Failed {
                message: if summary.is_empty() {
                    "the MCP client could not do the step".to_string()
                } else {
                    summary
                },
            },
            other => {
                return Err(bad(format!(
                    "status: {other:?} is not one of started, done, failed"
                )));
            }
        };
        let workdir = board.handoff(id).map(|(_, _, w)| w);
        let attempt = board.answer(id, answer).ok_or_else(not_ready)?;
        let run_id = files.planning.run_id.clone();
        let step_over = || {
            RunFiles::open(&run_dir)
                .ok()
                .and_then(|f| found.state(&f).map(|x| x.status))
                .is_some_and(|s| !matches!(s, StepStatus::Running | StepStatus::Pending))
        };
        // Checks passed: the step's worktree holds its commit (merged onto the work
        // branch later, in step order).
        let committed = || -> Option<String> {
            let git = dandori_runner::git::Git::new(workdir.as_ref()?);
            let c = git.step_commits("-1").ok()?.into_iter().next()?;
            (c.step_id == id && c.run_id == run_id && c.completes_step()).then_some(c.hash)
        };
        let answered = std::time::Instant::now();
        // When other steps wait for the client, it must not wait here for a merge
        // that itself waits for those steps.
        let others_wait = || {
            answered.elapsed() > Duration::from_secs(3)
                && board
                    .pending()
                    .iter()
                    .any(|(s, _, _, started)| s != id && !started)
        };
        let again = board.wait_after(id, attempt, Duration::from_secs(600), || {
            step_over() || committed().is_some() || others_wait()
        });
        if let Some(next_attempt) = again {
            return Ok(
                json!({"step_id": id, "status": "retry", "attempt": next_attempt,
                "message": "dandori's checks failed (unit commands or diff size); the step is handed to you again: read its prompt with the step tool, fix in the same workdir, then mark it done"}),
            );
        }
        let stage_path = run_dir.join("stage.json");
        let now = RunFiles::open(&run_dir)?;
        let Some(st) = found.state(&now) else {
            return Err(McpError::path(
                reason::RUN_DIR_INVALID,
                stage_path,
                "no stage.json",
            ));
        };
        if matches!(st.status, StepStatus::Running | StepStatus::Pending) {
            let (status, message) = match committed() {
                Some(_) => (
                    "committed",
                    "checks passed; merged onto the work branch in step order",
                ),
                None => (
                    "checking",
                    "dandori is still checking the step; other steps are ready (next), status shows the verdict",
                ),
            };
            return Ok(
                json!({"step_id": id, "status": status, "commit": committed(), "message": message}),
            );
        }
        let end = dandori_trace::read_trace(run_dir.join("trace.jsonl"))
            .unwrap_or_default()
            .into_iter()
            .rev()
            .find(|e| {
                e.event == "STEP_END" && e.data.get("step_id").and_then(Value::as_str) == Some(id)
            })
            .map(|e| e.data)
            .unwrap_or(Value::Null);
        let mut out = json!({
            "step_id": id,
            "status": status_str(st.status),
            "commit": st.commit,
            "reason_code": st.reason_code,
            "message": st.message,
            "diff_lines": end.get("diff_lines"),
            "unit_passed": end.get("unit_passed"),
        });
        if let (Some(e), Some(m)) = (board.ended(), out.as_object_mut()) {
            m.insert("run".to_string(), Self::ended_json(&run_dir, &e));
        }
        Ok(out)
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

    fn env_detect(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let repo = dandori_fs::canonicalize(self.repo(args)?)?;
        let loaded = self.load(&repo)?;
        let analysis = dandori_env::analyzer::analyze(
            &repo,
            &loaded.config.planning.environment_setup.analysis,
        );
        // The commands setup will run, with the tools it runs them with: this
        // server's PATH and dandori's tool cache, plus the package manager the
        // bootstrap installs (as `dandori env detect`).
        let selected = dandori_env::phase::select_expected(
            &analysis,
            opt_str(args, "language")?,
            &self.opts.base_env,
        );
        Ok(json!({
            "selected": selected,
            "ecosystems": analysis.ecosystem_names(),
        }))
    }

    /// The environment sub-phase of a planned run, as `dandori run` does it before
    /// the first step (same policy, sandbox and records under
    /// `<run>/environment/`); the run reuses the result when its fingerprint holds.
    fn env_setup(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.stopped_run_dir(
            args,
            "the run is executing; its environment was prepared when it started",
        )?;
        let repo = dandori_fs::canonicalize(self.run_repo(args, &run_dir)?)?;
        let loaded = self.load(&repo)?;
        let Some(phase) = self.opts.host.environment(&loaded.config) else {
            return Err(McpError::invalid(
                reason::ENVIRONMENT_FAILED,
                "this server has no environment phase",
            ));
        };
        let r = phase
            .prepare(&repo, &run_dir)
            .map_err(|e| McpError::path(reason::ENVIRONMENT_FAILED, &run_dir, e))?;
        // As the runner does: the masked summary the step prompts carry.
        let summary = dandori_runner::environment::summary_path(&run_dir);
        let masker = dandori_runner::coordinator::masker_for(&loaded.config, &self.opts.base_env);
        dandori_fs::write_atomic(&summary, masker.mask_str(&r.summary))?;
        Ok(json!({
            "status": r.status,
            "message": r.message,
            "setup_record": r.setup_record.as_deref().map(file_uri),
            "summary": file_uri(&summary),
            "details": r.details,
        }))
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

/// A step of the plan, or a follow-up step the run added for an uncovered
/// acceptance criterion (seed 001 §10.6: `F01`, …, recorded in stage.json's
/// `follow_ups`, offered by `next` like the plan's steps).
struct FoundStep {
    step: dandori_plan::Step,
    /// The plan's index of the step; `None` for a follow-up.
    index: Option<usize>,
}

/// Where a step's progress is recorded, in the shape of a plan step's.
struct StepState {
    status: StepStatus,
    commit: Option<String>,
    reason_code: Option<String>,
    message: Option<String>,
}

impl FoundStep {
    /// The step's state in `files`' stage.json, if it has one yet.
    fn state(&self, files: &RunFiles) -> Option<StepState> {
        let stage = files.stage.as_ref()?;
        match self.index {
            Some(i) => stage.steps.get(i).map(|s| StepState {
                status: s.status,
                commit: s.commit.clone(),
                reason_code: s.reason_code.clone(),
                message: s.message.clone(),
            }),
            None => dandori_runner::completion::follow_ups(stage)
                .into_iter()
                .find(|f| f.step_id == self.step.step_id)
                .map(|f| StepState {
                    status: f.status,
                    commit: f.commit,
                    reason_code: f.reason_code,
                    message: None,
                }),
        }
    }

    /// The criterion a follow-up step is for.
    fn follow_up_for(&self) -> Option<&str> {
        match self.index {
            Some(_) => None,
            None => self.step.links_to_ac.first().map(String::as_str),
        }
    }
}

fn find_step(files: &RunFiles, id: &str) -> Option<FoundStep> {
    if let Some(i) = files.planning.steps.iter().position(|s| s.step_id == id) {
        return Some(FoundStep {
            step: files.planning.steps[i].clone(),
            index: Some(i),
        });
    }
    let f = dandori_runner::completion::follow_ups(files.stage.as_ref()?)
        .into_iter()
        .find(|f| f.step_id == id)?;
    let paths = dandori_runner::plan::RunPaths::locate(&files.run_dir).ok()?;
    let mut step = dandori_runner::completion::follow_up_step(&files.planning, &paths, id, &f.ac);
    step.suggested_tools = Some(f.suggested_tools).filter(|t| !t.is_empty());
    Some(FoundStep { step, index: None })
}

fn unknown_step(id: &str, files: &RunFiles) -> McpError {
    let follow_ups = files
        .stage
        .as_ref()
        .map(dandori_runner::completion::follow_ups)
        .unwrap_or_default();
    let ids: Vec<&str> = files
        .planning
        .steps
        .iter()
        .map(|s| s.step_id.as_str())
        .chain(follow_ups.iter().map(|f| f.step_id.as_str()))
        .collect();
    McpError::invalid(
        reason::STEP_UNKNOWN,
        format!("no step {id:?} in this plan (steps: {})", ids.join(", ")),
    )
}
