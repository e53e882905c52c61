//! Seed 000 §2.3 `action_plan.actions`: the tool-use plan of each step.
//!
//! A planner's own actions (a model's `action_type: "tool_call"`, `tool:
//! "apply_patch"`, …) are kept as written, with `task_id` renamed to the step
//! they became and the seed's keys filled in where the model left them out. A
//! step without any gets one action per tool of its `required_tools` /
//! `suggested_tools` (seed 001 §10.3), in that order, each with the tool it uses.

use dandori_plan::{ExecutionGroup, Step};
use serde_json::{Map, Value, json};

const FALLBACK: &str = "split the step when its diff exceeds the limit; fix and re-run unit tests up to max_autofix_cycles";

/// The actions of every step, in plan order. `planned[i]` are the planner's
/// actions of step `i` (empty when it wrote none).
pub fn actions(steps: &[Step], planned: &[&[Value]], groups: &[ExecutionGroup]) -> Vec<Value> {
    let mut out = Vec::new();
    for (i, s) in steps.iter().enumerate() {
        let group = groups.iter().find(|g| g.step_ids.contains(&s.step_id));
        let common = |a: &mut Map<String, Value>| {
            a.insert(
                "can_parallelize".into(),
                json!(group.is_some_and(|g| g.step_ids.len() > 1)),
            );
            a.insert("parallel_group".into(), json!(group.map(|g| g.group_index)));
        };
        let own = planned.get(i).copied().unwrap_or_default();
        if !own.is_empty() {
            for a in own {
                let mut a = a.as_object().cloned().unwrap_or_default();
                a.insert("task_id".into(), json!(s.step_id));
                a.entry("action_type").or_insert(json!("tool_call"));
                a.entry("purpose").or_insert(json!(s.intent));
                a.entry("expected_outcome")
                    .or_insert(json!(s.success_criteria.first()));
                a.entry("fallback_strategy").or_insert(json!(FALLBACK));
                common(&mut a);
                out.push(Value::Object(a));
            }
            continue;
        }
        let mut tools: Vec<&str> = Vec::new();
        for t in s
            .required_tools
            .iter()
            .flatten()
            .chain(s.suggested_tools.iter().flatten())
        {
            if !tools.contains(&t.as_str()) {
                tools.push(t);
            }
        }
        if tools.is_empty() {
            // A step changes files: at least the editing tool.
            tools.push("apply_patch");
        }
        // The step's own words (in the request's language); `tool` says how
        // each action serves it.
        let outcome = s
            .success_criteria
            .first()
            .cloned()
            .unwrap_or_else(|| format!("{} is done", s.title));
        for tool in tools {
            let mut a = Map::new();
            a.insert("task_id".into(), json!(s.step_id));
            a.insert("action_type".into(), json!("tool_call"));
            a.insert("tool".into(), json!(tool));
            a.insert("purpose".into(), json!(s.intent));
            a.insert("expected_outcome".into(), json!(outcome));
            a.insert("fallback_strategy".into(), json!(FALLBACK));
            common(&mut a);
            out.push(Value::Object(a));
        }
    }
    out
}
