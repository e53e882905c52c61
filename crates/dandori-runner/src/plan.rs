//! Loading the plan a run executes, and the dependency order between its steps.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use dandori_plan::{EdgeType, Planning, Step};

use crate::error::RunnerError;
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

    /// `logs/step.Sxx.<what>.log`
    pub fn step_log(&self, step_id: &str, what: &str) -> PathBuf {
        self.logs.join(format!("step.{step_id}.{what}.log"))
    }
}

/// Reads and checks a planning.json. The FAIL rules of seed 004 §4.1 stop here with
/// their reason codes, so a bad plan never starts a run.
pub fn load_planning(path: &Path) -> Result<Planning, RunnerError> {
    let text = dandori_fs::read_to_string(path)?;
    let invalid = |reason_code: &'static str, message: String| RunnerError::InvalidInput {
        reason_code,
        path: path.to_path_buf(),
        message,
    };
    let planning: Planning = serde_json::from_str(&text).map_err(|e| {
        invalid(
            reason::JSON_PARSE_ERROR,
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })?;
    let mut problems = Vec::new();
    let mut seen = BTreeSet::new();
    for (i, s) in planning.steps.iter().enumerate() {
        if !is_step_id(&s.step_id) {
            problems.push(format!(
                "$.steps[{i}].step_id: {:?} is not S\\d\\d",
                s.step_id
            ));
        }
        if !seen.insert(s.step_id.as_str()) {
            problems.push(format!("$.steps[{i}].step_id: {} is repeated", s.step_id));
        }
        if s.expected_diff.lines_max > planning.limits.max_diff_lines {
            problems.push(format!(
                "$.steps[{i}].expected_diff.lines_max: {} > limits.max_diff_lines {}",
                s.expected_diff.lines_max, planning.limits.max_diff_lines
            ));
        }
        if s.scope.max_diff_lines > planning.limits.max_diff_lines {
            problems.push(format!(
                "$.steps[{i}].scope.max_diff_lines: {} > limits.max_diff_lines {}",
                s.scope.max_diff_lines, planning.limits.max_diff_lines
            ));
        }
    }
    if planning.steps.is_empty() {
        problems.push("$.steps: no steps".to_string());
    }
    if !planning.gates.forbid_gh {
        problems.push("$.gates.forbid_gh: must be true in v1".to_string());
    }
    if !problems.is_empty() {
        return Err(invalid(reason::PLAN_INVALID, problems.join("; ")));
    }
    if planning.context.acceptance_criteria.len() < 3 {
        return Err(invalid(
            reason::AC_TOO_FEW,
            format!(
                "$.context.acceptance_criteria: {} criteria, at least 3 required",
                planning.context.acceptance_criteria.len()
            ),
        ));
    }
    Ok(planning)
}

fn is_step_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 3 && b[0] == b'S' && b[1].is_ascii_digit() && b[2].is_ascii_digit()
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
        None if has_info => edges.extend(derived_edges(steps)),
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

/// Data and resource edges, for plans without a `dependency_graph`.
fn derived_edges(steps: &[Step]) -> Vec<(String, String, EdgeType)> {
    let mut out = Vec::new();
    for (j, b) in steps.iter().enumerate() {
        for a in &steps[..j] {
            let produces: BTreeSet<&String> = a.produces.iter().flatten().collect();
            if b.consumes.iter().flatten().any(|c| produces.contains(c)) {
                out.push((a.step_id.clone(), b.step_id.clone(), EdgeType::Data));
            }
            if a.scope
                .target_paths
                .iter()
                .any(|p| b.scope.target_paths.iter().any(|q| paths_overlap(p, q)))
            {
                out.push((a.step_id.clone(), b.step_id.clone(), EdgeType::Resource));
            }
        }
    }
    out
}

fn paths_overlap(a: &str, b: &str) -> bool {
    let a = a.trim_end_matches('/');
    let b = b.trim_end_matches('/');
    a == b || b.starts_with(&format!("{a}/")) || a.starts_with(&format!("{b}/"))
}
