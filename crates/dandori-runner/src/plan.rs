//! Loading the plan a run executes, and the dependency order between its steps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use dandori_plan::{EdgeType, Planning, Step};

use crate::error::RunnerError;
use crate::git::Git;
use crate::reason;

/// Where a run lives: the run directory holding planning.json and stage.json.
#[derive(Debug, Clone)]
pub struct RunPaths {
    pub run_dir: PathBuf,
    pub planning: PathBuf,
    pub stage: PathBuf,
    pub trace: PathBuf,
    pub report: PathBuf,
    pub errors: PathBuf,
    pub patches: PathBuf,
    pub logs: PathBuf,
    pub worktrees: PathBuf,
}

impl RunPaths {
    /// `target` is a planning.json or a run directory containing one.
    pub fn locate(target: &Path) -> Result<Self, RunnerError> {
        let (run_dir, planning) = if target.is_dir() {
            (target.to_path_buf(), target.join("planning.json"))
        } else {
            let dir = match target.parent() {
                Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                _ => PathBuf::from("."),
            };
            (dir, target.to_path_buf())
        };
        if !planning.is_file() {
            return Err(RunnerError::InvalidInput {
                reason_code: reason::RUN_DIR_INVALID,
                path: planning,
                message: "no planning.json here (pass a planning.json or a run directory)"
                    .to_string(),
            });
        }
        let run_dir = dandori_fs::canonicalize(&run_dir)?;
        let planning = run_dir.join(
            planning
                .file_name()
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from("planning.json")),
        );
        Ok(RunPaths {
            stage: run_dir.join("stage.json"),
            trace: run_dir.join("trace.jsonl"),
            report: run_dir.join("report.md"),
            errors: run_dir.join("errors.json"),
            patches: run_dir.join("patches"),
            logs: run_dir.join("logs"),
            worktrees: run_dir.join("worktrees"),
            planning,
            run_dir,
        })
    }

    pub fn patch(&self, step_id: &str) -> PathBuf {
        self.patches.join(format!("{step_id}.patch"))
    }

    /// `evidence/Sxx.json`: the test runs behind a step's proof commit.
    pub fn evidence(&self, step_id: &str) -> PathBuf {
        self.run_dir
            .join("evidence")
            .join(format!("{step_id}.json"))
    }

    /// `logs/step.Sxx.<what>.log`
    pub fn step_log(&self, step_id: &str, what: &str) -> PathBuf {
        self.logs.join(format!("step.{step_id}.{what}.log"))
    }
}

/// The repository to use when `--repo` is not given: the one recorded in the run
/// directory of `target` (a planning.json or a run directory), else the current
/// directory.
pub fn default_repo(target: &Path) -> PathBuf {
    let run_dir = if target.is_dir() {
        target.to_path_buf()
    } else {
        target.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    dandori_fs::read_to_string(run_dir.join(dandori_plan::repository::FILE_NAME))
        .ok()
        .and_then(|t| serde_json::from_str::<dandori_plan::repository::RepositoryRecord>(&t).ok())
        .map(|r| r.repository)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The root of the repository a run works in. `repo` is `--repo` (or the
/// current directory); when the run directory records its repository
/// (`repository.json`, written by the planner), that repository must be a git
/// repository root and `repo` must lie in the same repository: the runner never
/// creates branches, checks out or sets up an environment anywhere else.
pub fn repository_root(repo: &Path, run_dir: &Path) -> Result<PathBuf, RunnerError> {
    let record_path = run_dir.join(dandori_plan::repository::FILE_NAME);
    let recorded = if record_path.is_file() {
        let text = dandori_fs::read_to_string(&record_path)?;
        let record: dandori_plan::repository::RepositoryRecord = serde_json::from_str(&text)
            .map_err(|e| RunnerError::InvalidInput {
                reason_code: reason::RUN_DIR_INVALID,
                path: record_path.clone(),
                message: format!("not a repository record: {e}"),
            })?;
        Some(record.repository)
    } else {
        None
    };
    let toplevel = |dir: &Path| -> Result<PathBuf, RunnerError> {
        let (ok, out, err) = Git::new(dir).output(&["rev-parse", "--show-toplevel"])?;
        if !ok {
            return Err(RunnerError::InvalidInput {
                reason_code: reason::REPO_MISMATCH,
                path: dir.to_path_buf(),
                message: format!(
                    "not inside a git repository ({}); `git init` it and commit, or pass --repo",
                    err.trim()
                ),
            });
        }
        Ok(dandori_fs::canonicalize(Path::new(out.trim()))?)
    };
    let Some(recorded) = recorded else {
        return toplevel(repo);
    };
    if !recorded.is_dir() {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::REPO_MISMATCH,
            path: recorded,
            message: format!(
                "the plan's repository (recorded in {}) no longer exists",
                record_path.display()
            ),
        });
    }
    let recorded = dandori_fs::canonicalize(&recorded)?;
    let root = toplevel(&recorded)?;
    if root != recorded {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::REPO_MISMATCH,
            path: recorded.clone(),
            message: format!(
                "the plan was made for {}, which is not a git repository of its own but a \
                 directory inside {}; the runner works only in the plan's own repository: \
                 make it one (`git init && git add -A && git commit`) and plan again, or plan \
                 from {} (--repo)",
                recorded.display(),
                root.display(),
                root.display()
            ),
        });
    }
    let given = toplevel(repo)?;
    if given != root {
        return Err(RunnerError::InvalidInput {
            reason_code: reason::REPO_MISMATCH,
            path: repo.to_path_buf(),
            message: format!(
                "--repo is the repository {}, but the plan belongs to {}; omit --repo or pass --repo {}",
                given.display(),
                root.display(),
                root.display()
            ),
        });
    }
    Ok(root)
}

/// The plan sanitiser's judgement of one command line (seed 000 §12.1.2): `None`
/// when `policy` (the one `run_command` uses) allows it. Shared by `dandori
/// validate` and the runner so both judge a plan alike.
pub fn command_verdict(
    policy: &dandori_exec::CommandPolicy,
    line: &str,
) -> Option<dandori_plan::validation::CommandVerdict> {
    policy
        .check(line)
        .err()
        .map(|v| dandori_plan::validation::CommandVerdict {
            code: v.code.to_string(),
            rule: v.rule,
            message: v.message,
        })
}

/// Reads a planning.json and validates it with the core validator (seed 004 §4):
/// any FAIL finding stops here with its reason code and JSON path, so a bad plan
/// never starts a run. Returns the plan and its warnings.
///
/// Plan sanitisation (seed 000 §12.1.2) runs too, with `security` (the run's command
/// policy config) as judge: a plan whose paths leave the repository or whose unit
/// commands the policy refuses never starts either.
pub fn load_planning(
    path: &Path,
    security: &dandori_config::CommandPolicyConfig,
) -> Result<(Planning, Vec<dandori_plan::validation::Finding>), RunnerError> {
    let text = dandori_fs::read_to_string(path)?;
    let policy =
        dandori_tools::tool_command_policy(security).map_err(|e| RunnerError::InvalidInput {
            reason_code: reason::PLAN_INVALID,
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
    let judge = |line: &str| command_verdict(&policy, line);
    let parsed = dandori_plan::validation::parse(&text).and_then(|v| {
        let value: serde_json::Value =
            serde_json::to_value(&v.planning).unwrap_or(serde_json::Value::Null);
        let sanitised = dandori_plan::validation::sanitise(&value, &judge);
        if sanitised.has_fail() {
            Err(sanitised)
        } else {
            let mut v = v;
            v.report.findings.extend(sanitised.findings);
            Ok(v)
        }
    });
    match parsed {
        Ok(v) => Ok((v.planning, v.report.warnings().cloned().collect())),
        Err(report) => {
            let errors: Vec<_> = report.errors().collect();
            let reason_code = errors
                .first()
                .map(|f| reason::plan_code(&f.code))
                .unwrap_or(reason::PLAN_INVALID);
            Err(RunnerError::InvalidInput {
                reason_code,
                path: path.to_path_buf(),
                message: errors
                    .iter()
                    .map(|f| format!("{} at {}: {}", f.code, f.path, f.message))
                    .collect::<Vec<_>>()
                    .join("; "),
            })
        }
    }
}

/// How many steps run at once: `runner.max_parallel_workers` (`configured`),
/// lowered by the plan's `execution_plan.worker_strategy` (seed 003 §6.1: `single`
/// is one worker, otherwise its `max_parallel_workers`). `round_robin` and
/// `least_loaded` are the same here: a ready step takes the next free worker.
pub fn max_parallel(planning: &Planning, configured: u32) -> usize {
    let configured = configured.max(1) as usize;
    let planned = planning
        .execution_plan
        .as_ref()
        .and_then(|p| p.worker_strategy.as_ref())
        .map(|w| match w.kind {
            dandori_plan::WorkerStrategyType::Single => 1,
            dandori_plan::WorkerStrategyType::RoundRobin
            | dandori_plan::WorkerStrategyType::LeastLoaded => {
                w.max_parallel_workers.max(1) as usize
            }
        });
    planned.map_or(configured, |p| p.min(configured))
}

/// For each step (by index), the indices of the steps it must wait for.
///
/// The edges are `dependency_graph.edges` when the plan carries them, plus every
/// `depends_on`; data edges (`produces` → `consumes`) and resource edges (two steps
/// naming the same target path) are derived when the plan carries no graph. A plan
/// with no dependency information at all runs strictly in order (seed 004 §5: "S01
/// から順に"), the safe reading. Every edge must point forward in step order, so
/// merging in step order never waits on a later step.
pub fn predecessors(planning: &Planning) -> Result<Vec<BTreeSet<usize>>, RunnerError> {
    let steps = &planning.steps;
    let index: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.step_id.as_str(), i))
        .collect();
    let mut edges: Vec<(String, String, EdgeType)> = Vec::new();
    let has_info = planning.dependency_graph.is_some()
        || steps
            .iter()
            .any(|s| s.depends_on.is_some() || s.produces.is_some() || s.consumes.is_some());
    if !has_info {
        for w in steps.windows(2) {
            edges.push((
                w[0].step_id.clone(),
                w[1].step_id.clone(),
                EdgeType::Logical,
            ));
        }
    }
    for s in steps {
        for d in s.depends_on.iter().flatten() {
            edges.push((d.clone(), s.step_id.clone(), EdgeType::Logical));
        }
    }
    match &planning.dependency_graph {
        Some(g) => {
            for e in &g.edges {
                edges.push((e.from.clone(), e.to.clone(), e.kind));
            }
        }
        None if has_info => edges.extend(derived_edges(steps)?),
        None => {}
    }
    let mut preds = vec![BTreeSet::new(); steps.len()];
    for (from, to, kind) in edges {
        let (Some(&f), Some(&t)) = (index.get(from.as_str()), index.get(to.as_str())) else {
            return Err(RunnerError::InvalidInput {
                reason_code: reason::PLAN_INVALID,
                path: PathBuf::from("planning.json"),
                message: format!("dependency {from} -> {to}: unknown step id"),
            });
        };
        if f >= t {
            return Err(RunnerError::InvalidInput {
                reason_code: reason::PLAN_ORDER_INVALID,
                path: PathBuf::from("planning.json"),
                message: format!(
                    "{kind:?} dependency {from} -> {to} points backwards: steps must be listed in dependency order"
                ),
            });
        }
        preds[t].insert(f);
    }
    Ok(preds)
}

/// Data and resource edges from the core graph analysis, for plans that carry
/// no `dependency_graph`.
fn derived_edges(steps: &[Step]) -> Result<Vec<(String, String, EdgeType)>, RunnerError> {
    let analysis = dandori_plan::graph::analyze(steps).map_err(|e| RunnerError::InvalidInput {
        reason_code: reason::PLAN_INVALID,
        path: PathBuf::from("planning.json"),
        message: e.to_string(),
    })?;
    Ok(analysis
        .edges
        .into_iter()
        .map(|e| (e.from, e.to, e.kind))
        .collect())
}
