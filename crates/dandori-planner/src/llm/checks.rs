//! Checks of a planning answer beyond its schema, phrased for the model (JSON path
//! and problem), so they can be quoted back in the one corrective re-ask.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::response::{PlanningResponse, SubtaskOut};

pub struct Limits<'a> {
    pub max_subtasks: usize,
    /// Names of the detected environments (empty: anything goes).
    pub environments: &'a [String],
}

/// Problems of a schema-valid planning answer.
pub fn check_planning(value: &Value, limits: &Limits<'_>) -> Vec<String> {
    let response: PlanningResponse = match serde_json::from_value(value.clone()) {
        Ok(r) => r,
        Err(e) => return vec![format!("$: {e}")],
    };
    let mut problems = Vec::new();
    let has_plan = response.task_decomposition.is_some();
    match (&response.error, has_plan) {
        (Some(_), _) => {
            if let Some(super::response::PlanningError::DecompositionFailed {
                partial_plan, ..
            }) = &response.error
            {
                check_subtasks(
                    &partial_plan.feasible_subtasks,
                    "$.error.partial_plan.feasible_subtasks",
                    limits,
                    &BTreeSet::new(),
                    &mut problems,
                );
            }
            return problems;
        }
        (None, false) => {
            problems.push(
                "$: neither `task_decomposition` (a plan) nor `error` (unclear_goal / decomposition_failed) is present"
                    .to_string(),
            );
            return problems;
        }
        (None, true) => {}
    }
    if response.goal_understanding.is_none() {
        problems.push("$: missing required property `goal_understanding`".to_string());
    }
    let acs: BTreeSet<String> = response
        .acceptance_criteria
        .iter()
        .map(|a| a.id.clone())
        .collect();
    for (i, ac) in response.acceptance_criteria.iter().enumerate() {
        let Some(check) = &ac.check else {
            continue;
        };
        let path = format!("$.acceptance_criteria[{i}].check");
        let given: Vec<(&str, &str)> = [("command", &check.command), ("test", &check.test)]
            .into_iter()
            .filter_map(|(k, v)| v.as_deref().map(|v| (k, v)))
            .collect();
        match given.as_slice() {
            [(_, v)] if v.trim().is_empty() => problems.push(format!("{path}: empty")),
            [(k, v)] if v.contains('\n') => problems.push(format!(
                "{path}.{k}: one line, one command or test id"
            )),
            [_] => {}
            _ => problems.push(format!(
                "{path}: give exactly one of `command` (exits 0 once the criterion holds) or `test` (a test id or prefix)"
            )),
        }
    }
    let subtasks = response
        .task_decomposition
        .as_ref()
        .map(|d| d.subtasks.as_slice())
        .unwrap_or_default();
    if subtasks.is_empty() {
        problems.push("$.task_decomposition.subtasks: at least one subtask is needed".to_string());
    }
    check_subtasks(
        subtasks,
        "$.task_decomposition.subtasks",
        limits,
        &acs,
        &mut problems,
    );
    let ids: BTreeSet<&str> = subtasks.iter().map(|s| s.id.as_str()).collect();
    if let Some(plan) = &response.action_plan {
        for (i, id) in plan.execution_order.iter().enumerate() {
            if !ids.contains(id.as_str()) {
                problems.push(format!(
                    "$.action_plan.execution_order[{i}]: `{id}` is not a subtask id"
                ));
            }
        }
        for (i, a) in plan.actions.iter().enumerate() {
            match a.get("task_id").and_then(serde_json::Value::as_str) {
                Some(id) if ids.contains(id) => {}
                Some(id) => problems.push(format!(
                    "$.action_plan.actions[{i}].task_id: `{id}` is not a subtask id"
                )),
                None => problems.push(format!(
                    "$.action_plan.actions[{i}].task_id: missing (the subtask id the action serves)"
                )),
            }
        }
    }
    if let Some(env) = &response.selected_environment
        && !limits.environments.is_empty()
        && !limits.environments.iter().any(|e| e == env)
    {
        problems.push(format!(
            "$.selected_environment: `{env}` is not one of the detected environments ({})",
            limits.environments.join(", ")
        ));
    }
    problems
}

fn check_subtasks(
    subtasks: &[SubtaskOut],
    path: &str,
    limits: &Limits<'_>,
    acs: &BTreeSet<String>,
    problems: &mut Vec<String>,
) {
    if subtasks.len() > limits.max_subtasks {
        problems.push(format!(
            "{path}: {} subtasks, at most {} allowed",
            subtasks.len(),
            limits.max_subtasks
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, s) in subtasks.iter().enumerate() {
        if s.id.trim().is_empty() {
            problems.push(format!("{path}[{i}].id: empty"));
        } else if !seen.insert(s.id.as_str()) {
            problems.push(format!("{path}[{i}].id: `{}` is used twice", s.id));
        }
        if s.title.trim().is_empty() {
            problems.push(format!("{path}[{i}].title: empty"));
        }
        for (j, p) in s.target_paths.iter().enumerate() {
            if p.starts_with('/') || p.contains('\\') || p.split('/').any(|c| c == "..") {
                problems.push(format!(
                    "{path}[{i}].target_paths[{j}]: `{p}` must be relative to the repository, `/`-separated, without `..`"
                ));
            }
        }
        if !acs.is_empty() {
            for (j, ac) in s.links_to_ac.iter().enumerate() {
                if !acs.contains(ac) {
                    problems.push(format!(
                        "{path}[{i}].links_to_ac[{j}]: `{ac}` is not an acceptance criterion id"
                    ));
                }
            }
        }
    }
    let ids: BTreeSet<&str> = subtasks.iter().map(|s| s.id.as_str()).collect();
    for (i, s) in subtasks.iter().enumerate() {
        for (j, d) in s.depends_on.iter().enumerate() {
            if d == &s.id {
                problems.push(format!(
                    "{path}[{i}].depends_on[{j}]: a subtask cannot depend on itself"
                ));
            } else if !ids.contains(d.as_str()) {
                problems.push(format!(
                    "{path}[{i}].depends_on[{j}]: `{d}` is not a subtask id"
                ));
            }
        }
    }
    if let Some(cycle) = find_cycle(subtasks) {
        problems.push(format!(
            "{path}: depends_on forms a cycle: {}",
            cycle.join(" -> ")
        ));
    }
}

/// A dependency cycle, if any (ids in order, first repeated at the end).
fn find_cycle(subtasks: &[SubtaskOut]) -> Option<Vec<String>> {
    let mut deps: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in subtasks {
        deps.entry(s.id.as_str())
            .or_default()
            .extend(s.depends_on.iter().map(String::as_str));
    }
    // 0 = unvisited, 1 = on stack, 2 = done.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new();
    fn visit<'a>(
        node: &'a str,
        deps: &BTreeMap<&'a str, Vec<&'a str>>,
        state: &mut BTreeMap<&'a str, u8>,
        stack: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match state.get(node).copied().unwrap_or(0) {
            1 => {
                let start = stack.iter().position(|n| *n == node).unwrap_or(0);
                let mut cycle: Vec<String> = stack[start..].iter().map(|s| s.to_string()).collect();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            2 => return None,
            _ => {}
        }
        state.insert(node, 1);
        stack.push(node);
        for next in deps.get(node).into_iter().flatten() {
            if deps.contains_key(next)
                && let Some(c) = visit(next, deps, state, stack)
            {
                return Some(c);
            }
        }
        stack.pop();
        state.insert(node, 2);
        None
    }
    for node in deps.keys() {
        let mut stack = Vec::new();
        if let Some(c) = visit(node, &deps, &mut state, &mut stack) {
            return Some(c);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn reports_plan_problems_with_paths() {
        let value = json!({"phase": "planning",
            "goal_understanding": {"main_objective": "x"},
            "task_decomposition": {"subtasks": [
                {"id": "task_1", "title": "a", "intent": "", "target_paths": ["../etc"], "depends_on": ["task_2"], "complexity": 2, "links_to_ac": ["AC-09"]},
                {"id": "task_2", "title": "b", "intent": "", "target_paths": ["src"], "depends_on": ["task_1", "task_7"], "complexity": 2},
                {"id": "task_2", "title": "c", "intent": "", "target_paths": [], "depends_on": [], "complexity": 2}
            ]},
            "action_plan": {"execution_order": ["task_1", "task_9"]},
            "acceptance_criteria": [{"id": "AC-01", "given": "g", "when": "w", "then": "t"}],
            "selected_environment": "cobol"});
        let envs = vec!["python".to_string()];
        let problems = check_planning(
            &value,
            &Limits {
                max_subtasks: 2,
                environments: &envs,
            },
        );
        assert_eq!(
            problems,
            vec![
                "$.task_decomposition.subtasks: 3 subtasks, at most 2 allowed",
                "$.task_decomposition.subtasks[0].target_paths[0]: `../etc` must be relative to the repository, `/`-separated, without `..`",
                "$.task_decomposition.subtasks[0].links_to_ac[0]: `AC-09` is not an acceptance criterion id",
                "$.task_decomposition.subtasks[2].id: `task_2` is used twice",
                "$.task_decomposition.subtasks[1].depends_on[1]: `task_7` is not a subtask id",
                "$.task_decomposition.subtasks: depends_on forms a cycle: task_1 -> task_2 -> task_1",
                "$.action_plan.execution_order[1]: `task_9` is not a subtask id",
                "$.selected_environment: `cobol` is not one of the detected environments (python)",
            ]
        );
        let empty = check_planning(
            &json!({"phase": "planning"}),
            &Limits {
                max_subtasks: 2,
                environments: &[],
            },
        );
        assert_eq!(empty.len(), 1);
    }

    #[test]
    fn a_criterions_check_is_one_command_or_one_test() {
        let plan = |checks: Value| {
            let acs: Vec<Value> = checks
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(i, c)| json!({"id": format!("AC-0{}", i + 1), "given": "g", "when": "w", "then": "t", "check": c}))
                .collect();
            check_planning(
                &json!({"phase": "planning", "goal_understanding": {"main_objective": "x"},
                    "task_decomposition": {"subtasks": [{"id": "task_1", "title": "a", "intent": "",
                        "target_paths": ["src/a.py"], "depends_on": [], "complexity": 2}]},
                    "acceptance_criteria": acs}),
                &Limits {
                    max_subtasks: 5,
                    environments: &[],
                },
            )
        };
        assert!(
            plan(
                json!([{"command": "python -m pkg --version"}, {"test": "tests/test_a.py::test_x"}])
            )
            .is_empty()
        );
        assert_eq!(
            plan(
                json!([{"command": "make", "test": "t"}, {}, {"test": "  "}, {"command": "a\nb"}])
            ),
            vec![
                "$.acceptance_criteria[0].check: give exactly one of `command` (exits 0 once the criterion holds) or `test` (a test id or prefix)",
                "$.acceptance_criteria[1].check: give exactly one of `command` (exits 0 once the criterion holds) or `test` (a test id or prefix)",
                "$.acceptance_criteria[2].check: empty",
                "$.acceptance_criteria[3].check.command: one line, one command or test id",
            ]
        );
    }
}
