//! Dependency analysis of the steps of a plan (seed 003 §5–6, seed 001 §10.4).
//!
//! Three kinds of edges, `from` → `to` meaning "`to` runs after `from`":
//!
//! * **logical**: `to.depends_on` names `from`.
//! * **data**: `from.produces` an artefact that `to.consumes`. An artefact with no
//!   producer is an external input and adds no edge.
//! * **resource**: the two steps' `scope.target_paths` overlap (see
//!   [`crate::graph::paths`] for what "overlap" means for directories and globs).
//!   A resource dependency only asks for mutual exclusion, so it is oriented along
//!   the topological order of the logical and data edges (ties by plan order) and
//!   never creates a cycle. Steps touching one resource are *chained*: with three
//!   steps on one file the edges are `A → B → C`, not also `A → C`, which keeps
//!   the edge count linear while implying the same order.
//!
//! Execution groups are topological levels: a step's level is one more than the
//! highest level of the steps it depends on. A group runs its steps in parallel
//! when it has more than one, sequentially otherwise; `depends_on_groups` lists
//! the groups of its direct predecessors.
//!
//! The critical path is the heaviest path through the graph, weighting each step
//! by its `estimated_complexity` (score 1–10 as is; level low/medium/high as
//! 3/6/9) and by 1 when a step has none, so a plan without estimates gets the
//! longest path in steps. Ties go to the step earlier in the plan.
//!
//! Everything is linear in steps + edges + path components (Kahn's algorithm,
//! Tarjan's SCC for cycle reports, a path trie for resource overlap), and every
//! output is ordered by plan position, so equal input gives equal output.

pub mod paths;
mod render;

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rustc_hash::FxHashMap as HashMap;

use serde::Serialize;

use crate::model::Extra;

use crate::{
    Complexity, ComplexityLevel, DependencyEdge, DependencyGraph, EdgeType, ExecutionGroup,
    ExecutionMode, ExecutionPlan, GroupMode, Step,
};

pub use render::{to_mermaid, to_text};

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GraphError {
    #[error("step {step_id} appears more than once")]
    DuplicateStepId { step_id: String },
    #[error("step {step} depends on unknown step {dependency}")]
    UnknownDependency { step: String, dependency: String },
    #[error("dependency cycle: {}", format_cycles(.cycles))]
    Cycle {
        /// Each cycle as its steps in order; the first step is repeated at the end.
        cycles: Vec<Vec<String>>,
    },
}

fn format_cycles(cycles: &[Vec<String>]) -> String {
    cycles
        .iter()
        .map(|c| c.join(" -> "))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One step as the graph sees it: borrowed slices of strings (`S` is `String`
/// for typed steps, `&str` for validation's view of raw JSON), so building it
/// copies nothing and allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSpec<'a, S = &'a str> {
    pub id: &'a str,
    pub depends_on: &'a [S],
    pub produces: &'a [S],
    pub consumes: &'a [S],
    pub target_paths: &'a [S],
    /// Critical-path weight (≥ 1).
    pub weight: u64,
}

impl<'a> NodeSpec<'a, String> {
    pub fn from_step(step: &'a Step) -> Self {
        NodeSpec {
            id: &step.step_id,
            depends_on: step.depends_on.as_deref().unwrap_or_default(),
            produces: step.produces.as_deref().unwrap_or_default(),
            consumes: step.consumes.as_deref().unwrap_or_default(),
            target_paths: &step.scope.target_paths,
            weight: complexity_weight(step.estimated_complexity),
        }
    }
}

/// The critical-path weight of a step's estimated complexity.
pub fn complexity_weight(c: Option<Complexity>) -> u64 {
    match c {
        None => 1,
        Some(Complexity::Score(n)) => u64::from(n.max(1)),
        Some(Complexity::Level(ComplexityLevel::Low)) => 3,
        Some(Complexity::Level(ComplexityLevel::Medium)) => 6,
        Some(Complexity::Level(ComplexityLevel::High)) => 9,
    }
}

/// The result of [`analyze`]. Serialises to the `dandori graph --format json` shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GraphAnalysis {
    pub execution_mode: ExecutionMode,
    pub execution_groups: Vec<ExecutionGroup>,
    pub edges: Vec<DependencyEdge>,
    pub critical_path: Vec<String>,
    /// Sum of the weights along the critical path.
    #[serde(skip)]
    pub critical_path_weight: u64,
    /// Step ids in a topological order (plan order among independent steps).
    #[serde(skip)]
    pub topological_order: Vec<String>,
}

impl GraphAnalysis {
    /// The `dependency_graph` extension of planning.json.
    pub fn dependency_graph(&self) -> DependencyGraph {
        DependencyGraph {
            edges: self.edges.clone(),
            execution_groups: self.execution_groups.clone(),
            critical_path: self.critical_path.clone(),
            extra: Extra::new(),
        }
    }

    /// The `execution_plan` extension of planning.json. The duration estimate is
    /// left at 0: nothing here knows how long a step takes.
    pub fn execution_plan(&self) -> ExecutionPlan {
        ExecutionPlan {
            execution_mode: self.execution_mode,
            execution_groups: self.execution_groups.clone(),
            estimated_total_duration_ms: 0,
            worker_strategy: None,
            extra: Extra::new(),
        }
    }
}

/// Analyses the steps of a plan.
pub fn analyze(steps: &[Step]) -> Result<GraphAnalysis, GraphError> {
    let nodes: Vec<NodeSpec<'_, String>> = steps.iter().map(NodeSpec::from_step).collect();
    analyze_nodes(&nodes)
}

/// [`analyze`] over [`NodeSpec`]s.
pub fn analyze_nodes<S: AsRef<str>>(
    nodes: &[NodeSpec<'_, S>],
) -> Result<GraphAnalysis, GraphError> {
    let index = index_nodes(nodes)?;
    let ordering = ordering_edges(nodes, &index);
    if let Some(u) = ordering.unknown.first() {
        return Err(GraphError::UnknownDependency {
            step: nodes[u.step].id.to_string(),
            dependency: u.name.to_string(),
        });
    }
    let n = nodes.len();
    let order = topo_order(n, &ordering.edges);
    if order.len() < n {
        return Err(GraphError::Cycle {
            cycles: find_cycles(nodes, &ordering.edges, &order),
        });
    }
    let mut edges = ordering.edges;
    edges.extend(paths::resource_edges(nodes, &order));
    edges.sort_unstable();
    edges.dedup();

    // Predecessors by pair (an edge may be both data and logical): the edges
    // are sorted by `from`, so each step's list fills in ascending order and a
    // repeated pair is adjacent.
    let preds = Adjacency::build(n, edges.iter().map(|&(from, to, _)| (to, from)), true);
    let mut level = vec![0usize; n];
    for &v in &order {
        level[v] = preds[v].iter().map(|&u| level[u] + 1).max().unwrap_or(0);
    }
    let group_count = level.iter().copied().max().map_or(0, |m| m + 1);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); group_count];
    for (v, &l) in level.iter().enumerate() {
        members[l].push(v);
    }
    let execution_groups: Vec<ExecutionGroup> = members
        .iter()
        .enumerate()
        .map(|(g, vs)| {
            let mut deps: Vec<u64> = vs
                .iter()
                .flat_map(|&v| preds[v].iter().map(|&u| level[u] as u64))
                .collect();
            deps.sort_unstable();
            deps.dedup();
            ExecutionGroup {
                group_index: g as u64,
                mode: if vs.len() > 1 {
                    GroupMode::Parallel
                } else {
                    GroupMode::Sequential
                },
                step_ids: vs.iter().map(|&v| nodes[v].id.to_string()).collect(),
                depends_on_groups: deps,
            }
        })
        .collect();
    let execution_mode = if n <= 1 {
        ExecutionMode::Single
    } else if group_count == 1 {
        ExecutionMode::Parallel
    } else if group_count == n {
        ExecutionMode::Sequential
    } else {
        ExecutionMode::Hybrid
    };

    // Critical path: heaviest path, ties to the earlier step.
    let mut dist = vec![0u64; n];
    let mut via: Vec<Option<usize>> = vec![None; n];
    for &v in &order {
        let mut best: Option<usize> = None;
        for &u in &preds[v] {
            if best.is_none_or(|b| dist[u] > dist[b]) {
                best = Some(u);
            }
        }
        dist[v] = nodes[v].weight.max(1) + best.map_or(0, |b| dist[b]);
        via[v] = best;
    }
    let mut end: Option<usize> = None;
    for v in 0..n {
        if end.is_none_or(|e| dist[v] > dist[e]) {
            end = Some(v);
        }
    }
    let mut critical = Vec::new();
    let mut cur = end;
    while let Some(v) = cur {
        critical.push(nodes[v].id.to_string());
        cur = via[v];
    }
    critical.reverse();

    Ok(GraphAnalysis {
        execution_mode,
        execution_groups,
        edges: edges
            .iter()
            .map(|&(from, to, kind)| DependencyEdge {
                from: nodes[from].id.to_string(),
                to: nodes[to].id.to_string(),
                kind,
            })
            .collect(),
        critical_path: critical,
        critical_path_weight: end.map_or(0, |e| dist[e]),
        topological_order: order.iter().map(|&v| nodes[v].id.to_string()).collect(),
    })
}

/// Neighbour lists of `n` nodes in one flat array (one allocation instead of
/// one per node). `list[v]` holds the targets of the pairs `(v, w)` in the order
/// given.
struct Adjacency {
    start: Vec<usize>,
    end: Vec<usize>,
    flat: Vec<usize>,
}

impl Adjacency {
    /// With `dedup_adjacent`, a pair equal to the previous one of its node is
    /// dropped (enough for pairs that come sorted).
    fn build(
        n: usize,
        pairs: impl Iterator<Item = (usize, usize)> + Clone,
        dedup_adjacent: bool,
    ) -> Adjacency {
        let mut start = vec![0usize; n + 1];
        for (v, _) in pairs.clone() {
            start[v + 1] += 1;
        }
        for v in 0..n {
            start[v + 1] += start[v];
        }
        let mut end = start[..n].to_vec();
        let mut flat = vec![0usize; start[n]];
        for (v, w) in pairs {
            if dedup_adjacent && end[v] > start[v] && flat[end[v] - 1] == w {
                continue;
            }
            flat[end[v]] = w;
            end[v] += 1;
        }
        Adjacency { start, end, flat }
    }
}

impl std::ops::Index<usize> for Adjacency {
    type Output = [usize];
    fn index(&self, v: usize) -> &[usize] {
        &self.flat[self.start[v]..self.end[v]]
    }
}

/// Step id → position; duplicate ids are an error.
fn index_nodes<'a, S>(nodes: &[NodeSpec<'a, S>]) -> Result<HashMap<&'a str, usize>, GraphError> {
    let mut index = HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (i, node) in nodes.iter().enumerate() {
        if index.insert(node.id, i).is_some() {
            return Err(GraphError::DuplicateStepId {
                step_id: node.id.to_string(),
            });
        }
    }
    Ok(index)
}

/// A `depends_on` entry naming no step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownDep<'a> {
    /// Position of the step holding the entry.
    pub step: usize,
    /// Position inside its `depends_on`.
    pub entry: usize,
    pub name: &'a str,
}

pub(crate) struct OrderingEdges<'a> {
    /// (from, to, type) by position; logical and data only.
    pub edges: Vec<(usize, usize, EdgeType)>,
    pub unknown: Vec<UnknownDep<'a>>,
}

/// Logical and data edges (the ones that order steps and can form cycles).
/// `index` maps ids to positions (first occurrence wins for duplicates).
pub(crate) fn ordering_edges<'a, S: AsRef<str>>(
    nodes: &[NodeSpec<'a, S>],
    index: &HashMap<&'a str, usize>,
) -> OrderingEdges<'a> {
    let mut edges = Vec::new();
    let mut unknown = Vec::new();
    let mut producers: HashMap<&str, Vec<usize>> =
        HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (i, node) in nodes.iter().enumerate() {
        for p in node.produces {
            let list = producers.entry(p.as_ref()).or_default();
            if list.last() != Some(&i) {
                list.push(i);
            }
        }
    }
    for (i, node) in nodes.iter().enumerate() {
        for (entry, dep) in node.depends_on.iter().enumerate() {
            let dep = dep.as_ref();
            match index.get(dep) {
                Some(&j) => edges.push((j, i, EdgeType::Logical)),
                None => unknown.push(UnknownDep {
                    step: i,
                    entry,
                    name: dep,
                }),
            }
        }
        for c in node.consumes {
            for &p in producers.get(c.as_ref()).into_iter().flatten() {
                if p != i {
                    edges.push((p, i, EdgeType::Data));
                }
            }
        }
    }
    edges.sort_unstable();
    edges.dedup();
    OrderingEdges { edges, unknown }
}

/// Kahn's algorithm, taking the earliest ready step first. Returns fewer than `n`
/// positions when there is a cycle.
pub(crate) fn topo_order(n: usize, edges: &[(usize, usize, EdgeType)]) -> Vec<usize> {
    let mut indegree = vec![0usize; n];
    for &(_, to, _) in edges {
        indegree[to] += 1;
    }
    let succ = Adjacency::build(n, edges.iter().map(|&(from, to, _)| (from, to)), false);
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&v| indegree[v] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(v)) = ready.pop() {
        order.push(v);
        for &w in &succ[v] {
            indegree[w] -= 1;
            if indegree[w] == 0 {
                ready.push(Reverse(w));
            }
        }
    }
    order
}

/// One cycle per strongly connected component that has one (Tarjan, iterative),
/// each starting at its earliest step. `ordered` are the positions Kahn's
/// algorithm could order: they are on no cycle.
pub(crate) fn find_cycles<S>(
    nodes: &[NodeSpec<'_, S>],
    edges: &[(usize, usize, EdgeType)],
    ordered: &[usize],
) -> Vec<Vec<String>> {
    cycle_positions(nodes.len(), edges, ordered)
        .into_iter()
        .map(|c| c.iter().map(|&v| nodes[v].id.to_string()).collect())
        .collect()
}

pub(crate) fn cycle_positions(
    n: usize,
    edges: &[(usize, usize, EdgeType)],
    ordered: &[usize],
) -> Vec<Vec<usize>> {
    let mut on_cycle_candidate = vec![true; n];
    for &v in ordered {
        on_cycle_candidate[v] = false;
    }
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to, _) in edges {
        if on_cycle_candidate[from] && on_cycle_candidate[to] && succ[from].last() != Some(&to) {
            succ[from].push(to);
        }
    }
    for s in &mut succ {
        s.sort_unstable();
        s.dedup();
    }

    // Iterative Tarjan.
    const UNSEEN: usize = usize::MAX;
    let mut idx = vec![UNSEEN; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut comp = vec![UNSEEN; n];
    let mut comps: Vec<Vec<usize>> = Vec::new();
    let mut counter = 0usize;
    for root in 0..n {
        if !on_cycle_candidate[root] || idx[root] != UNSEEN {
            continue;
        }
        let mut call: Vec<(usize, usize)> = vec![(root, 0)];
        idx[root] = counter;
        low[root] = counter;
        counter += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut next)) = call.last_mut() {
            if let Some(&w) = succ[v].get(*next) {
                *next += 1;
                if idx[w] == UNSEEN {
                    idx[w] = counter;
                    low[w] = counter;
                    counter += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    call.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(idx[w]);
                }
            } else {
                call.pop();
                if let Some(&(parent, _)) = call.last() {
                    low[parent] = low[parent].min(low[v]);
                }
                if low[v] == idx[v] {
                    let mut members = Vec::new();
                    while let Some(w) = stack.pop() {
                        on_stack[w] = false;
                        comp[w] = comps.len();
                        members.push(w);
                        if w == v {
                            break;
                        }
                    }
                    members.sort_unstable();
                    comps.push(members);
                }
            }
        }
    }

    let mut cycles = Vec::new();
    for (c, members) in comps.iter().enumerate() {
        let start = members[0];
        let self_loop = succ[start].contains(&start);
        if members.len() == 1 && !self_loop {
            continue;
        }
        if self_loop && members.len() == 1 {
            cycles.push(vec![start, start]);
            continue;
        }
        // Shortest way back to `start` inside the component (BFS).
        let mut prev: HashMap<usize, usize> = HashMap::default();
        let mut queue = std::collections::VecDeque::from([start]);
        let mut closing = None;
        'bfs: while let Some(v) = queue.pop_front() {
            for &w in &succ[v] {
                if comp[w] != c {
                    continue;
                }
                if w == start {
                    closing = Some(v);
                    break 'bfs;
                }
                if let std::collections::hash_map::Entry::Vacant(e) = prev.entry(w) {
                    e.insert(v);
                    queue.push_back(w);
                }
            }
        }
        let mut path = vec![start];
        let mut cur = closing;
        while let Some(v) = cur {
            if v == start {
                break;
            }
            path.push(v);
            cur = prev.get(&v).copied();
        }
        path.push(start);
        // `path` is start, back-pointers..., start: reverse the middle.
        let last = path.len() - 1;
        path[1..last].reverse();
        cycles.push(path);
    }
    cycles.sort();
    cycles
}
