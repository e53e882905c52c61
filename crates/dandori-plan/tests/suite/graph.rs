#![allow(clippy::needless_range_loop)] // index loops read clearer for matrices
use std::collections::{BTreeSet, HashMap};

use dandori_plan::graph::{self, GraphError, paths::overlaps};
use dandori_plan::{Complexity, EdgeType, ExecutionMode, GroupMode, Step, validation};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

use super::step;

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn seed003_hybrid_example() {
    // Seed 003 §6.3: 1, 2 independent; 3 after 1; 4 after 2; 5 after 3 and 4.
    let steps = vec![
        step("S01", &["src/user.rs"], &[]),
        step("S02", &["src/auth.rs"], &[]),
        step("S03", &["src/user_service.rs"], &["S01"]),
        step("S04", &["src/auth_service.rs"], &["S02"]),
        step("S05", &["tests/integration.rs"], &["S03", "S04"]),
    ];
    let a = graph::analyze(&steps).unwrap();
    assert_eq!(
        serde_json::to_value(&a).unwrap(),
        json!({
            "execution_mode": "hybrid",
            "execution_groups": [
                {"group_index": 0, "mode": "parallel", "step_ids": ["S01", "S02"], "depends_on_groups": []},
                {"group_index": 1, "mode": "parallel", "step_ids": ["S03", "S04"], "depends_on_groups": [0]},
                {"group_index": 2, "mode": "sequential", "step_ids": ["S05"], "depends_on_groups": [1]}
            ],
            "edges": [
                {"from": "S01", "to": "S03", "type": "logical"},
                {"from": "S02", "to": "S04", "type": "logical"},
                {"from": "S03", "to": "S05", "type": "logical"},
                {"from": "S04", "to": "S05", "type": "logical"}
            ],
            "critical_path": ["S01", "S03", "S05"]
        })
    );
}

#[test]
fn execution_modes() {
    let single = graph::analyze(&[step("S01", &["a"], &[])]).unwrap();
    assert_eq!(single.execution_mode, ExecutionMode::Single);
    let parallel = graph::analyze(&[step("S01", &["a"], &[]), step("S02", &["b"], &[])]).unwrap();
    assert_eq!(parallel.execution_mode, ExecutionMode::Parallel);
    assert_eq!(parallel.execution_groups[0].mode, GroupMode::Parallel);
    let sequential = graph::analyze(&[
        step("S01", &["a"], &[]),
        step("S02", &["b"], &["S01"]),
        step("S03", &["b/c.rs"], &[]),
    ])
    .unwrap();
    assert_eq!(sequential.execution_mode, ExecutionMode::Sequential);
    assert_eq!(sequential.critical_path, ids(&["S01", "S02", "S03"]));
}

#[test]
fn data_edges_from_produces_to_consumes() {
    let mut a = step("S01", &["a"], &[]);
    let mut b = step("S02", &["b"], &[]);
    let mut c = step("S03", &["c"], &[]);
    a.consumes = Some(ids(&["interface"]));
    b.produces = Some(ids(&["interface"]));
    c.consumes = Some(ids(&["interface", "external_input"]));
    let g = graph::analyze(&[a, b, c]).unwrap();
    let edges: Vec<(String, String, EdgeType)> = g
        .edges
        .iter()
        .map(|e| (e.from.clone(), e.to.clone(), e.kind))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("S02".into(), "S01".into(), EdgeType::Data),
            ("S02".into(), "S03".into(), EdgeType::Data),
        ]
    );
    assert_eq!(g.topological_order, ids(&["S02", "S01", "S03"]));
}

#[test]
fn resource_overlap_rules() {
    assert!(overlaps("src", "src/lib.rs"));
    assert!(overlaps("./src/", "src/lib.rs"));
    assert!(overlaps("src/lib.rs", "src/lib.rs"));
    assert!(!overlaps("src", "srcx/lib.rs"));
    assert!(!overlaps("src/a.rs", "src/b.rs"));
    assert!(overlaps("", "anything"));
    assert!(overlaps("src/**/*.rs", "src/a/b.rs"));
    assert!(overlaps("src/*.rs", "src/lib.rs"));
    assert!(!overlaps("src/*.rs", "src/a/b.rs"));
    assert!(!overlaps("src/**/*.rs", "docs/x.md"));
    assert!(!overlaps("src/**/*.rs", "src/readme.md"));
    assert!(overlaps("src/**/*.rs", "src"));
    assert!(overlaps("src/**/*.rs", "src/nested"));
    assert!(overlaps("src/**/*.rs", "src/*.toml"));
    assert!(!overlaps("src/*.rs", "src/x/*.toml"));
    assert!(overlaps("src/*/*.rs", "src/x/*.toml"));
    assert!(!overlaps("src/**/*.rs", "docs/*.md"));
}

#[test]
fn resource_edges_chain_and_follow_order() {
    // S03 must run before S01 (data); all touch src: the resource edges follow
    // the topological order S02, S03, S01 (earliest ready first) and add no cycle.
    let mut s1 = step("S01", &["src/lib.rs"], &[]);
    let s2 = step("S02", &["src"], &[]);
    let mut s3 = step("S03", &["src/**/*.rs"], &[]);
    s1.consumes = Some(ids(&["x"]));
    s3.produces = Some(ids(&["x"]));
    let g = graph::analyze(&[s1, s2, s3]).unwrap();
    let edges: Vec<(&str, &str, EdgeType)> = g
        .edges
        .iter()
        .map(|e| (e.from.as_str(), e.to.as_str(), e.kind))
        .collect();
    assert_eq!(
        edges,
        vec![
            ("S02", "S01", EdgeType::Resource),
            ("S02", "S03", EdgeType::Resource),
            ("S03", "S01", EdgeType::Data),
            ("S03", "S01", EdgeType::Resource),
        ]
    );
}

#[test]
fn errors() {
    assert_eq!(
        graph::analyze(&[step("S01", &[], &["S07"])]),
        Err(GraphError::UnknownDependency {
            step: "S01".into(),
            dependency: "S07".into()
        })
    );
    assert_eq!(
        graph::analyze(&[step("S01", &[], &[]), step("S01", &[], &[])]),
        Err(GraphError::DuplicateStepId {
            step_id: "S01".into()
        })
    );
    let err = graph::analyze(&[
        step("S01", &[], &["S02"]),
        step("S02", &[], &["S01"]),
        step("S03", &[], &["S03"]),
        step("S04", &[], &["S01"]),
    ])
    .unwrap_err();
    assert_eq!(
        err,
        GraphError::Cycle {
            cycles: vec![ids(&["S01", "S02", "S01"]), ids(&["S03", "S03"])]
        }
    );
    assert_eq!(
        err.to_string(),
        "dependency cycle: S01 -> S02 -> S01; S03 -> S03"
    );
}

#[test]
fn critical_path_uses_complexity() {
    let mut a = step("S01", &["a"], &[]);
    let b = step("S02", &["b"], &["S01"]);
    let mut c = step("S03", &["c"], &[]);
    a.estimated_complexity = Some(Complexity::Score(2));
    c.estimated_complexity = Some(Complexity::Score(5));
    let g = graph::analyze(&[a, b, c]).unwrap();
    assert_eq!(g.critical_path, ids(&["S03"]));
    assert_eq!(g.critical_path_weight, 5);
}

#[test]
fn renders() {
    let steps = vec![step("S01", &["a"], &[]), step("S02", &["a"], &[])];
    let g = graph::analyze(&steps).unwrap();
    assert_eq!(
        graph::to_text(&g),
        "execution mode: sequential\nexecution groups:\n  group 0 (sequential): S01\n  group 1 (sequential after group 0): S02\nedges:\n  S01 -> S02 (resource)\ncritical path: S01 -> S02\n"
    );
    assert_eq!(
        graph::to_mermaid(&g, &steps),
        "flowchart TD\n  subgraph G0[\"group 0\"]\n    S01[\"S01: step S01\"]\n  end\n  subgraph G1[\"group 1\"]\n    S02[\"S02: step S02\"]\n  end\n  S01 -->|resource| S02\n"
    );
}

// ---- properties ----

/// A random plan: `n` steps, edges i → j (i < j in a random permutation), random
/// paths from a small vocabulary so overlaps happen.
#[derive(Debug, Clone)]
struct RandomPlan {
    steps: Vec<Step>,
}

const PATHS: &[&str] = &[
    "src",
    "src/a.rs",
    "src/b.rs",
    "src/x",
    "src/x/y.rs",
    "docs",
    "docs/a.md",
    "src/**/*.rs",
    "src/*.rs",
    "docs/*.md",
    "tests/t.rs",
    "README.md",
    "src/x/*.toml",
];

fn random_plan(max: usize, acyclic: bool) -> impl Strategy<Value = RandomPlan> {
    (1..max).prop_flat_map(move |n| {
        (
            Just(n),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            proptest::collection::vec((0..n, 0..n), 0..n * 2),
            proptest::collection::vec(proptest::collection::vec(0..PATHS.len(), 0..3), n),
            proptest::collection::vec((0..4usize, 0..4usize), n),
        )
            .prop_map(move |(n, perm, pairs, paths, data)| {
                let name = |i: usize| format!("S{:02}", i + 1);
                let mut steps: Vec<Step> = (0..n)
                    .map(|i| {
                        let targets: Vec<&str> = paths[i].iter().map(|&p| PATHS[p]).collect();
                        step(&name(i), &targets, &[])
                    })
                    .collect();
                for (a, b) in pairs {
                    // In acyclic mode, edges go forward in the permutation.
                    let (from, to) = if acyclic {
                        let (pa, pb) = (perm[a], perm[b]);
                        if pa == pb {
                            continue;
                        }
                        if pa < pb { (a, b) } else { (b, a) }
                    } else {
                        (a, b)
                    };
                    steps[to]
                        .depends_on
                        .get_or_insert_with(Vec::new)
                        .push(name(from));
                }
                if acyclic {
                    // Data edges also forward: produce/consume keyed by permutation rank.
                    for i in 0..n {
                        let (p, c) = data[i];
                        steps[i].produces = Some(vec![format!("art{}", perm[i] * 4 + p)]);
                        let lower: Vec<usize> = (0..n).filter(|&j| perm[j] < perm[i]).collect();
                        if let Some(&j) = lower.get(c) {
                            steps[i].consumes =
                                Some(vec![format!("art{}", perm[j] * 4 + data[j].0)]);
                        }
                    }
                }
                RandomPlan { steps }
            })
    })
}

fn reach(n: usize, edges: &[(usize, usize)]) -> Vec<Vec<bool>> {
    let mut r = vec![vec![false; n]; n];
    for &(a, b) in edges {
        r[a][b] = true;
    }
    for k in 0..n {
        for i in 0..n {
            if r[i][k] {
                for j in 0..n {
                    if r[k][j] {
                        r[i][j] = true;
                    }
                }
            }
        }
    }
    r
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn groups_respect_every_edge_and_overlap(plan in random_plan(14, true)) {
        let a = graph::analyze(&plan.steps).unwrap();
        let pos: HashMap<&str, usize> = plan.steps.iter().enumerate().map(|(i, s)| (s.step_id.as_str(), i)).collect();
        let mut group = HashMap::new();
        let mut seen = BTreeSet::new();
        for g in &a.execution_groups {
            prop_assert_eq!(g.mode == GroupMode::Parallel, g.step_ids.len() > 1);
            for id in &g.step_ids {
                prop_assert!(seen.insert(id.clone()), "step in two groups");
                group.insert(id.clone(), g.group_index);
            }
            for d in &g.depends_on_groups {
                prop_assert!(*d < g.group_index);
            }
        }
        prop_assert_eq!(seen.len(), plan.steps.len());
        for e in &a.edges {
            prop_assert!(group[&e.from] < group[&e.to], "edge {:?} not respected", e);
            prop_assert!(e.from != e.to);
            if e.kind == EdgeType::Resource {
                let (f, t) = (&plan.steps[pos[e.from.as_str()]], &plan.steps[pos[e.to.as_str()]]);
                let any = f.scope.target_paths.iter().any(|x| t.scope.target_paths.iter().any(|y| overlaps(x, y)));
                prop_assert!(any, "resource edge without overlap {:?}", e);
            }
        }
        // Every declared dependency is an edge.
        for s in &plan.steps {
            for d in s.depends_on.iter().flatten() {
                prop_assert!(a.edges.iter().any(|e| &e.from == d && e.to == s.step_id && e.kind == EdgeType::Logical));
            }
        }
        // Every overlapping pair is ordered one way or the other.
        let n = plan.steps.len();
        let pairs: Vec<(usize, usize)> = a.edges.iter().map(|e| (pos[e.from.as_str()], pos[e.to.as_str()])).collect();
        let r = reach(n, &pairs);
        for i in 0..n {
            for j in (i + 1)..n {
                let ov = plan.steps[i].scope.target_paths.iter().any(|x| plan.steps[j].scope.target_paths.iter().any(|y| overlaps(x, y)));
                if ov {
                    prop_assert!(r[i][j] || r[j][i], "{} and {} overlap but are unordered", plan.steps[i].step_id, plan.steps[j].step_id);
                }
            }
        }
        // Critical path is a real path.
        for w in a.critical_path.windows(2) {
            prop_assert!(r[pos[w[0].as_str()]][pos[w[1].as_str()]]);
        }
        // Deterministic, also when dependency lists are reordered.
        let again = graph::analyze(&plan.steps).unwrap();
        prop_assert_eq!(&again, &a);
        let mut shuffled = plan.steps.clone();
        for s in &mut shuffled {
            if let Some(d) = &mut s.depends_on { d.reverse(); }
            s.scope.target_paths.reverse();
        }
        prop_assert_eq!(graph::analyze(&shuffled).unwrap(), a);
    }

    #[test]
    fn every_cycle_is_found(plan in random_plan(9, false)) {
        let n = plan.steps.len();
        let pos: HashMap<String, usize> = plan.steps.iter().enumerate().map(|(i, s)| (s.step_id.clone(), i)).collect();
        let mut edges = Vec::new();
        for (i, s) in plan.steps.iter().enumerate() {
            for d in s.depends_on.iter().flatten() {
                edges.push((pos[d], i));
            }
        }
        let r = reach(n, &edges);
        let cyclic: Vec<usize> = (0..n).filter(|&i| r[i][i]).collect();
        // Components with a cycle: classes of mutual reachability.
        let mut comps = BTreeSet::new();
        for &i in &cyclic {
            let members: Vec<usize> = cyclic.iter().copied().filter(|&j| r[i][j] && r[j][i]).collect();
            comps.insert(members);
        }
        let result = graph::analyze(&plan.steps);
        let report = validation::validate(&planning_with(plan.steps.clone()));
        let reported = report.findings.iter().filter(|f| f.code == "DEPENDENCY_CYCLE").count();
        prop_assert_eq!(reported, comps.len());
        match result {
            Ok(_) => prop_assert!(comps.is_empty()),
            Err(GraphError::Cycle { cycles }) => {
                prop_assert_eq!(cycles.len(), comps.len());
                for c in &cycles {
                    prop_assert_eq!(c.first(), c.last());
                    for w in c.windows(2) {
                        let (a, b) = (pos[&w[0]], pos[&w[1]]);
                        prop_assert!(edges.contains(&(a, b)), "{:?} is not an edge", w);
                    }
                }
            }
            Err(e) => prop_assert!(false, "unexpected {e}"),
        }
    }
}

fn planning_with(steps: Vec<Step>) -> dandori_plan::Planning {
    let mut p: dandori_plan::Planning = serde_json::from_str(&super::sample()).unwrap();
    p.steps = steps;
    p
}
