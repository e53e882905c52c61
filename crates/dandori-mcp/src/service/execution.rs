//! A run handed to the client as its executor: the runner started on the run
//! (`ensure_started`), the steps offered (`next`, `step`) and the client's
//! results taken back (`step_update`), follow-up steps included.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use dandori_plan::StepStatus;
use dandori_runner::RunOptions;
use serde_json::{Map, Value, json};

use super::{Active, Service, bad, file_uri, lock, opt_str, opt_u64, req_str, status_str};
use crate::error::{McpError, reason};
use crate::handoff::{Answer, Board, Ended, HandoffExecutor};
use crate::inspect::RunFiles;

impl Service {
    /// The board of a run, starting the runner on it (with the client as
    /// executor) unless it runs already.
    pub(super) fn ensure_started(
        &self,
        run_dir: &Path,
        repo: &Path,
    ) -> Result<Arc<Board>, McpError> {
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
    pub(super) fn run_repo(
        &self,
        args: &Map<String, Value>,
        run_dir: &Path,
    ) -> Result<PathBuf, McpError> {
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
    pub(super) fn stopped_run_dir(
        &self,
        args: &Map<String, Value>,
        why: &str,
    ) -> Result<PathBuf, McpError> {
        let run_dir = self.run_dir(args)?;
        if self.board(&run_dir).is_some_and(|b| b.ended().is_none()) {
            return Err(McpError::path(reason::RUN_ACTIVE, &run_dir, why));
        }
        Ok(run_dir)
    }

    pub(super) fn board(&self, run_dir: &Path) -> Option<Arc<Board>> {
        lock(&self.active).get(run_dir).map(|a| a.board.clone())
    }

    pub(super) fn ended_json(run_dir: &Path, ended: &Ended) -> Value {
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

    pub(super) fn next(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
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

    pub(super) fn step(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
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

    pub(super) fn step_update(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
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
