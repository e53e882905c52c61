//! Stable topological order of draft subtasks by `depends_on` and data
//! (`produces` → `consumes`): a subtask comes after everything it depends on and
//! every artefact it consumes, otherwise in the planner's order.
//!
//! [`reasoned_dependencies`] keeps `depends_on` to logical reasons (seed 003 §5):
//! a dependency that a data edge already carries, or that other dependencies
//! already imply, is dropped (the graph draws the data edge; the order holds
//! through the others), and a subtask that creates a path another deletes runs
//! after it.

use std::collections::{BTreeMap, BTreeSet};

use crate::draft::DraftSubtask;

/// For each subtask, every subtask it waits for: its `depends_on` and the
/// producers of what it consumes.
pub fn predecessors(subtasks: &[DraftSubtask]) -> Vec<BTreeSet<usize>> {
    let index: BTreeMap<&str, usize> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let mut preds = data_predecessors(subtasks);
    for (i, s) in subtasks.iter().enumerate() {
        preds[i].extend(
            s.depends_on
                .iter()
                .filter_map(|k| index.get(k.as_str()).copied())
                .filter(|&j| j != i),
        );
    }
    preds
}

/// For each subtask, the subtasks producing what it consumes.
fn data_predecessors(subtasks: &[DraftSubtask]) -> Vec<BTreeSet<usize>> {
    subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| {
            subtasks
                .iter()
                .enumerate()
                .filter(|(j, p)| *j != i && p.produces.iter().any(|a| s.consumes.contains(a)))
                .map(|(j, _)| j)
                .collect()
        })
        .collect()
}

/// Seed 003 §5.1, in place: `depends_on` keeps only logical dependencies.
///
/// * A key the subtask also reaches through a data edge (it consumes what that
///   subtask produces) is dropped: the data edge is the reason, and a second,
///   logical edge for the same pair says nothing more.
/// * Delete → create: a subtask whose text creates a path that another
///   subtask's text deletes, both targeting it, depends on the deleting one
///   (unless that would close a cycle).
pub fn reasoned_dependencies(subtasks: &mut [DraftSubtask]) {
    let data = data_predecessors(subtasks);
    let keys: Vec<String> = subtasks.iter().map(|s| s.key.clone()).collect();
    for (i, s) in subtasks.iter_mut().enumerate() {
        s.depends_on
            .retain(|k| !data[i].iter().any(|&j| &keys[j] == k));
    }
    let n = subtasks.len();
    // A dependency the others already imply (S03 on S01 when S03 waits for S02,
    // which waits for S01) orders nothing more: dropped, so each logical edge
    // left has a reason of its own.
    let index: BTreeMap<String, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.clone(), i))
        .collect();
    for i in 0..n {
        for k in subtasks[i].depends_on.clone() {
            let Some(&j) = index.get(&k) else { continue };
            let others: Vec<usize> = subtasks[i]
                .depends_on
                .iter()
                .filter_map(|o| index.get(o).copied())
                .chain(data[i].iter().copied())
                .filter(|&o| o != j && o != i)
                .collect();
            if others.iter().any(|&o| reaches(subtasks, o, j)) {
                subtasks[i].depends_on.retain(|d| d != &k);
            }
        }
    }
    for c in 0..n {
        for d in 0..n {
            if c == d || !deletes_what_creates(&subtasks[d], &subtasks[c]) {
                continue;
            }
            let key = keys[d].clone();
            if !subtasks[c].depends_on.contains(&key) && !reaches(subtasks, d, c) {
                subtasks[c].depends_on.push(key);
            }
        }
    }
}

/// `from` reaches `to` through `depends_on` or data edges (so `to` depending on
/// `from` would close a cycle).
fn reaches(subtasks: &[DraftSubtask], from: usize, to: usize) -> bool {
    let index: BTreeMap<&str, usize> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let data = data_predecessors(subtasks);
    let mut stack = vec![from];
    let mut seen = vec![false; subtasks.len()];
    while let Some(v) = stack.pop() {
        if v == to {
            return true;
        }
        if std::mem::replace(&mut seen[v], true) {
            continue;
        }
        stack.extend(
            subtasks[v]
                .depends_on
                .iter()
                .filter_map(|k| index.get(k.as_str()).copied()),
        );
        stack.extend(data[v].iter().copied());
    }
    false
}

/// `deleter` deletes a path that `creator` creates: both target it, and each
/// one's own words say so (a delete verb, a create verb) while naming it.
fn deletes_what_creates(deleter: &DraftSubtask, creator: &DraftSubtask) -> bool {
    const DELETE: &[&str] = &["delete", "remove", "drop", "削除", "除去", "删除", "移除"];
    const CREATE: &[&str] = &[
        "create", "add", "write", "new", "generate", "recreate", "作成", "新規", "追加", "新建",
        "创建", "添加",
    ];
    let text = |s: &DraftSubtask| format!("{} {}", s.title, s.intent).to_lowercase();
    let says = |t: &str, verbs: &[&str]| {
        verbs.iter().any(|v| {
            if v.is_ascii() {
                t.split(|c: char| !c.is_alphanumeric()).any(|w| w == *v)
            } else {
                t.contains(v)
            }
        })
    };
    let names = |t: &str, p: &str| {
        let p = p.trim_end_matches('/').to_lowercase();
        let base = p.rsplit('/').next().unwrap_or(&p).to_string();
        !p.is_empty() && (t.contains(&p) || (base.contains('.') && t.contains(&base)))
    };
    let (dt, ct) = (text(deleter), text(creator));
    says(&dt, DELETE)
        && says(&ct, CREATE)
        && deleter
            .target_paths
            .iter()
            .any(|p| creator.target_paths.contains(p) && names(&dt, p) && names(&ct, p))
}

/// Indices in execution order, or the keys caught in a cycle.
pub fn topological(subtasks: &[DraftSubtask]) -> Result<Vec<usize>, Vec<String>> {
    let index: BTreeMap<&str, usize> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let n = subtasks.len();
    let data = data_predecessors(subtasks);
    let preds: Vec<Vec<usize>> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.depends_on
                .iter()
                .filter_map(|k| index.get(k.as_str()).copied())
                .chain(data[i].iter().copied())
                .collect()
        })
        .collect();
    let mut placed = vec![false; n];
    let mut order = Vec::with_capacity(n);
    while order.len() < n {
        // The first (in planner order) subtask whose dependencies are all placed.
        let next = (0..n).find(|&i| !placed[i] && preds[i].iter().all(|&p| placed[p] || p == i));
        match next {
            Some(i) => {
                placed[i] = true;
                order.push(i);
            }
            None => {
                return Err((0..n)
                    .filter(|&i| !placed[i])
                    .map(|i| subtasks[i].key.clone())
                    .collect());
            }
        }
    }
    Ok(order)
}
