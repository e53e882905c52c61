//! Stable topological order of draft subtasks by `depends_on`: a subtask comes after
//! everything it depends on, otherwise in the planner's order.

use std::collections::BTreeMap;

use crate::draft::DraftSubtask;

/// Indices in execution order, or the keys caught in a cycle.
pub fn topological(subtasks: &[DraftSubtask]) -> Result<Vec<usize>, Vec<String>> {
    let index: BTreeMap<&str, usize> = subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), i))
        .collect();
    let n = subtasks.len();
    let preds: Vec<Vec<usize>> = subtasks
        .iter()
        .map(|s| {
            s.depends_on
                .iter()
                .filter_map(|k| index.get(k.as_str()).copied())
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
