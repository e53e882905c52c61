//! Seed 003 §5–6: dependency edges between steps (data from produces→consumes,
//! resource from overlapping target paths, logical from depends_on), cycle
//! detection, topological execution groups, the critical path and the execution mode.

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::{
    DependencyEdge, DependencyGraph, EdgeType, ExecutionGroup, ExecutionMode, GroupMode, Step,
};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GraphError {
    #[error("dependency cycle among steps {0:?}")]
    Cycle(Vec<String>),
    #[error("step {step} depends on unknown step {dep}")]
    UnknownDependency { step: String, dep: String },
}

#[derive(Debug, Clone, PartialEq)]
pub struct GraphAnalysis {
    pub edges: Vec<DependencyEdge>,
    pub execution_groups: Vec<ExecutionGroup>,
    pub execution_mode: ExecutionMode,
    pub critical_path: Vec<String>,
    pub dependency_graph: DependencyGraph,
}

fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (a.trim_end_matches('/'), b.trim_end_matches('/'));
    a == b || b.starts_with(&format!("{a}/")) || a.starts_with(&format!("{b}/"))
}

pub fn analyze(steps: &[Step]) -> Result<GraphAnalysis, GraphError> {
    let index: BTreeMap<&str, usize> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| (s.step_id.as_str(), i))
        .collect();
    let mut edges: BTreeSet<(usize, usize, EdgeType)> = BTreeSet::new();
    for (j, s) in steps.iter().enumerate() {
        for dep in s.depends_on.iter().flatten() {
            let Some(&i) = index.get(dep.as_str()) else {
                return Err(GraphError::UnknownDependency {
                    step: s.step_id.clone(),
                    dep: dep.clone(),
                });
            };
            edges.insert((i, j, EdgeType::Logical));
        }
    }
    for i in 0..steps.len() {
        for j in (i + 1)..steps.len() {
            let (a, b) = (&steps[i], &steps[j]);
            let produces = |x: &Step, y: &Step| {
                x.produces
                    .iter()
                    .flatten()
                    .any(|p| y.consumes.iter().flatten().any(|c| c == p))
            };
            if produces(a, b) {
                edges.insert((i, j, EdgeType::Data));
            } else if produces(b, a) {
                edges.insert((j, i, EdgeType::Data));
            }
            if a.scope
                .target_paths
                .iter()
                .any(|x| b.scope.target_paths.iter().any(|y| overlaps(x, y)))
            {
                edges.insert((i, j, EdgeType::Resource));
            }
        }
    }
    // Kahn layering: a step's group is one past the latest of its predecessors.
    let n = steps.len();
    let mut preds: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for &(i, j, _) in &edges {
        if i != j {
            preds[j].insert(i);
        }
    }
    let mut level: Vec<Option<usize>> = vec![None; n];
    let mut done = 0;
    while done < n {
        let mut progressed = false;
        for k in 0..n {
            if level[k].is_some() {
                continue;
            }
            if preds[k].iter().all(|p| level[*p].is_some()) {
                level[k] = Some(
                    preds[k]
                        .iter()
                        .filter_map(|p| level[*p])
                        .map(|l| l + 1)
                        .max()
                        .unwrap_or(0),
                );
                done += 1;
                progressed = true;
            }
        }
        if !progressed {
            let stuck = (0..n)
                .filter(|k| level[*k].is_none())
                .map(|k| steps[k].step_id.clone())
                .collect();
            return Err(GraphError::Cycle(stuck));
        }
    }
    let levels: Vec<usize> = level.into_iter().map(|l| l.unwrap_or(0)).collect();
    let group_count = levels.iter().max().map_or(0, |m| m + 1);
    let mut execution_groups = Vec::new();
    for g in 0..group_count {
        let members: Vec<usize> = (0..n).filter(|k| levels[*k] == g).collect();
        let depends_on_groups: BTreeSet<u64> = members
            .iter()
            .flat_map(|k| preds[*k].iter().map(|p| levels[*p] as u64))
            .collect();
        execution_groups.push(ExecutionGroup {
            group_index: g as u64,
            mode: if members.len() > 1 {
                GroupMode::Parallel
            } else {
                GroupMode::Sequential
            },
            step_ids: members.iter().map(|k| steps[*k].step_id.clone()).collect(),
            depends_on_groups: depends_on_groups.into_iter().collect(),
        });
    }
    // Critical path: the longest chain by step weight (complexity), in step order.
    let weight = |k: usize| match steps[k].estimated_complexity {
        Some(dandori_plan::Complexity::Score(s)) => u64::from(s.max(1)),
        Some(dandori_plan::Complexity::Level(l)) => match l {
            dandori_plan::ComplexityLevel::Low => 2,
            dandori_plan::ComplexityLevel::Medium => 5,
            dandori_plan::ComplexityLevel::High => 8,
        },
        None => 1,
    };
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|k| (levels[*k], *k));
    let mut best: Vec<(u64, Option<usize>)> = vec![(0, None); n];
    for &k in &order {
        let from = preds[k]
            .iter()
            .map(|p| (best[*p].0, Some(*p)))
            .max_by_key(|(w, p)| (*w, std::cmp::Reverse(*p)));
        let (w, p) = from.unwrap_or((0, None));
        best[k] = (w + weight(k), p);
    }
    let mut critical_path = Vec::new();
    let mut cur = (0..n).max_by_key(|k| (best[*k].0, std::cmp::Reverse(*k)));
    while let Some(k) = cur {
        critical_path.push(steps[k].step_id.clone());
        cur = best[k].1;
    }
    critical_path.reverse();

    let execution_mode = if n <= 1 {
        ExecutionMode::Single
    } else if edges.is_empty() {
        ExecutionMode::Parallel
    } else if execution_groups.iter().all(|g| g.step_ids.len() == 1) {
        ExecutionMode::Sequential
    } else {
        ExecutionMode::Hybrid
    };
    let edges: Vec<DependencyEdge> = edges
        .into_iter()
        .map(|(i, j, kind)| DependencyEdge {
            from: steps[i].step_id.clone(),
            to: steps[j].step_id.clone(),
            kind,
        })
        .collect();
    let dependency_graph = DependencyGraph {
        edges: edges.clone(),
        execution_groups: execution_groups.clone(),
        critical_path: critical_path.clone(),
        extra: Default::default(),
    };
    Ok(GraphAnalysis {
        edges,
        execution_groups,
        execution_mode,
        critical_path,
        dependency_graph,
    })
}
