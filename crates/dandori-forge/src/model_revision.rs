//! Model-written plan revisions (seed 000 §2.5 human reflection, §11.3, the
//! reflection answer of §15.3.1): the human feedback and the current plan go to
//! the model, which answers with the seed's reflection JSON
//!
//! ```json
//! {"phase": "reflection",
//!  "reflection": {"feedback_type": "human", "feedback_source": "issue_comment",
//!                 "feedback_summary": "…"},
//!  "plan_revision": {"reason": "…", "changes": [
//!     {"type": "modify_action", "action_id": "S01",
//!      "updates": {"file": "src/auth.ts", "description": "…"}},
//!     {"type": "add_action", "action": {"task_id": "S00", "file": "src/utils/auth.ts",
//!      "description": "…", "before_task": "S01"}},
//!     {"type": "remove_action", "action_id": "S03"}]},
//!  "comment": "…"}
//! ```
//!
//! `action_id` / `before_task` name plan steps (`S01`, …). The changes become
//! [`Edit`]s; [`check`] applies them to a copy of the plan and returns every
//! problem (unknown step, unknown change type, a path outside the repository, a
//! command the policy refuses, a plan that no longer validates), phrased for the
//! model so the caller can re-ask once and otherwise fall back to the offline
//! edits (fail closed, like the planner).

use dandori_plan::Planning;
use dandori_plan::validation::{CommandJudge, Severity};
use serde_json::{Value, json};

use crate::revise::{Edit, Feedback, apply_edits};

/// Trace event: a revision was made (or refused), with `revised_by`
/// (`model` | `offline_edits`) and the changes.
pub const PLAN_REVISION: &str = "PLAN_REVISION";
/// Trace event: the model's answer was unusable or the call failed; the
/// offline edits were applied instead (`error`, `fallback`).
pub const PLAN_REVISION_MODEL_FAILED: &str = "PLAN_REVISION_MODEL_FAILED";

/// The change types of seed 000 §15.3.1 (`remove_action` completes the pair).
pub const CHANGE_TYPES: &[&str] = &["add_action", "modify_action", "remove_action"];

/// The model's revision, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelRevision {
    /// `plan_revision.reason`.
    pub reason: String,
    /// `plan_revision.changes`, as the model wrote them.
    pub changes: Vec<Value>,
    /// `reflection.feedback_summary`, when given.
    pub feedback_summary: Option<String>,
    pub edits: Vec<Edit>,
}

/// The JSON schema of the answer (what `chat_structured` validates first).
pub fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["phase", "reflection", "plan_revision"],
        "properties": {
            "phase": {"type": "string", "enum": ["reflection"]},
            "reflection": {
                "type": "object",
                "properties": {
                    "feedback_type": {"type": "string"},
                    "feedback_source": {"type": "string"},
                    "feedback_summary": {"type": "string"},
                },
            },
            "plan_revision": {
                "type": "object",
                "required": ["reason", "changes"],
                "properties": {
                    "reason": {"type": "string"},
                    "changes": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["type"],
                            "properties": {
                                "type": {"type": "string", "enum": CHANGE_TYPES},
                                "action_id": {"type": "string"},
                                "updates": {"type": "object"},
                                "action": {"type": "object"},
                            },
                        },
                    },
                },
            },
            "comment": {"type": "string"},
        },
    })
}

/// The system and user messages: the seed's answer format, the plan's steps,
/// and the feedback.
pub fn prompt(planning: &Planning, feedback: &[Feedback]) -> (String, String) {
    let system = "You revise a coding agent's plan from human feedback. \
Answer with one JSON object only, no prose:\n\
{\"phase\": \"reflection\", \"reflection\": {\"feedback_type\": \"human\", \"feedback_source\": \"issue_comment|pr_review|explicit\", \"feedback_summary\": \"…\"}, \
\"plan_revision\": {\"reason\": \"…\", \"changes\": [CHANGE, …]}, \"comment\": \"…\"}\n\
CHANGE is one of:\n\
- {\"type\": \"modify_action\", \"action_id\": \"S01\", \"updates\": {\"file\": \"path\" | \"files\": [\"path\", …], \"title\": \"…\", \"description\": \"…\", \"commands\": [\"test command\", …]}}\n\
- {\"type\": \"add_action\", \"action\": {\"task_id\": \"new id\", \"file\": \"path\" | \"files\": [\"path\", …], \"description\": \"…\", \"before_task\": \"S02\", \"commands\": [\"test command\", …]}}\n\
- {\"type\": \"remove_action\", \"action_id\": \"S03\"}\n\
action_id and before_task are step ids of the plan. Paths are relative to the repository root. \
Change only what the feedback asks for."
        .to_string();
    let steps: Vec<Value> = planning
        .steps
        .iter()
        .map(|s| {
            json!({
                "step_id": s.step_id,
                "title": s.title,
                "role": s.role,
                "target_paths": s.scope.target_paths,
                "depends_on": s.depends_on,
                "commands": s.commands.unit,
            })
        })
        .collect();
    let plan = json!({
        "summary": planning.context.summary,
        "environment": planning.selected_environment.as_ref().map(|e| &e.name),
        "constraints": planning.context.constraints,
        "steps": steps,
    });
    let mut user = format!(
        "The current plan:\n{}\n\nHuman feedback:\n",
        serde_json::to_string_pretty(&plan).unwrap_or_default()
    );
    for f in feedback {
        let who = f
            .author
            .as_deref()
            .map(|a| format!("@{a} "))
            .unwrap_or_default();
        user.push_str(&format!(
            "- {who}({}): {}\n",
            f.source.as_str(),
            f.text.trim()
        ));
    }
    (system, user)
}

fn str_list(v: &Value, at: &str, problems: &mut Vec<String>) -> Option<Vec<String>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(vec![s.clone()]),
        Value::Array(a) => {
            let mut out = Vec::new();
            for (i, x) in a.iter().enumerate() {
                match x.as_str() {
                    Some(s) => out.push(s.to_string()),
                    None => problems.push(format!("{at}[{i}]: expected a string")),
                }
            }
            Some(out)
        }
        _ => {
            problems.push(format!("{at}: expected a string or an array of strings"));
            None
        }
    }
}

/// `file` / `files`, `commands` / `command` of an action or its updates.
fn files_and_commands(
    obj: &Value,
    at: &str,
    problems: &mut Vec<String>,
) -> (Option<Vec<String>>, Option<Vec<String>>) {
    let files = match (obj.get("files"), obj.get("file")) {
        (Some(f), _) => str_list(f, &format!("{at}.files"), problems),
        (None, Some(f)) => str_list(f, &format!("{at}.file"), problems),
        (None, None) => None,
    };
    let commands = match (obj.get("commands"), obj.get("command")) {
        (Some(c), _) => str_list(c, &format!("{at}.commands"), problems),
        (None, Some(c)) => str_list(c, &format!("{at}.command"), problems),
        (None, None) => None,
    };
    (files, commands)
}

fn text(obj: &Value, key: &str) -> Option<String> {
    obj.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The answer's changes as edits, or the problems (JSON paths and reasons).
pub fn parse(answer: &Value) -> Result<ModelRevision, Vec<String>> {
    let mut problems = Vec::new();
    if answer.get("phase").and_then(Value::as_str) != Some("reflection") {
        problems.push("$.phase: must be \"reflection\"".to_string());
    }
    let reason = text(&answer["plan_revision"], "reason").unwrap_or_default();
    if reason.is_empty() {
        problems.push("$.plan_revision.reason: a non-empty string is required".to_string());
    }
    let Some(changes) = answer
        .pointer("/plan_revision/changes")
        .and_then(Value::as_array)
    else {
        problems.push("$.plan_revision.changes: an array is required".to_string());
        return Err(problems);
    };
    if changes.is_empty() {
        problems.push("$.plan_revision.changes: no change; the feedback asks for one".to_string());
    }
    let mut edits = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        let at = format!("$.plan_revision.changes[{i}]");
        match c.get("type").and_then(Value::as_str).unwrap_or("") {
            "modify_action" => {
                let Some(step) = text(c, "action_id") else {
                    problems.push(format!("{at}.action_id: the step id is required"));
                    continue;
                };
                let u = c.get("updates").cloned().unwrap_or(Value::Null);
                if !u.is_object() {
                    problems.push(format!("{at}.updates: an object is required"));
                    continue;
                }
                let (files, commands) =
                    files_and_commands(&u, &format!("{at}.updates"), &mut problems);
                edits.push(Edit::ModifyStep {
                    step,
                    title: text(&u, "title"),
                    description: text(&u, "description"),
                    files,
                    commands,
                });
            }
            "add_action" => {
                let a = c.get("action").cloned().unwrap_or(Value::Null);
                if !a.is_object() {
                    problems.push(format!("{at}.action: an object is required"));
                    continue;
                }
                let Some(title) = text(&a, "description")
                    .or_else(|| text(&a, "title"))
                    .or_else(|| text(&a, "purpose"))
                else {
                    problems.push(format!(
                        "{at}.action.description: what the new step does is required"
                    ));
                    continue;
                };
                let (files, commands) =
                    files_and_commands(&a, &format!("{at}.action"), &mut problems);
                edits.push(Edit::AddStep {
                    title,
                    paths: files.unwrap_or_default(),
                    before: text(&a, "before_task"),
                    commands,
                });
            }
            "remove_action" => match text(c, "action_id") {
                Some(step) => edits.push(Edit::DropStep { step }),
                None => problems.push(format!("{at}.action_id: the step id is required")),
            },
            other => problems.push(format!(
                "{at}.type: {other:?} is not one of {}",
                CHANGE_TYPES.join(", ")
            )),
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    Ok(ModelRevision {
        reason,
        changes: changes.clone(),
        feedback_summary: text(&answer["reflection"], "feedback_summary"),
        edits,
    })
}

/// Every problem of `answer` against `planning`: its shape, edits naming
/// unknown steps, and the revised plan's validation and sanitisation (paths
/// outside the repository, commands `judge` refuses). Empty: usable.
pub fn check(planning: &Planning, answer: &Value, judge: &dyn CommandJudge) -> Vec<String> {
    let revision = match parse(answer) {
        Ok(r) => r,
        Err(problems) => return problems,
    };
    let mut p = planning.clone();
    let changes = match apply_edits(&mut p, &revision.edits) {
        Ok(c) => c,
        Err(e) => return vec![format!("$.plan_revision.changes: {e}")],
    };
    let mut problems: Vec<String> = changes
        .iter()
        .filter(|c| c.starts_with("skipped"))
        .map(|c| format!("$.plan_revision.changes: {c}"))
        .collect();
    problems.extend(command_problems(&revision.edits, judge));
    problems.extend(plan_problems(&p, judge));
    problems
}

/// Commands the model's edits would add that the policy does not allow
/// outright. Plan validation only warns on a command that needs approval; a
/// command a model wrote from issue text must be allowed as it stands.
pub fn command_problems(edits: &[Edit], judge: &dyn CommandJudge) -> Vec<String> {
    let mut out = Vec::new();
    for e in edits {
        let (commands, at) = match e {
            Edit::ModifyStep {
                step,
                commands: Some(c),
                ..
            } => (c, format!("{step}.commands")),
            Edit::AddStep {
                title,
                commands: Some(c),
                ..
            } => (c, format!("the new step {title:?}.commands")),
            _ => continue,
        };
        for line in commands {
            if let Some(v) = judge.judge(line) {
                out.push(format!(
                    "{} at {at}: `{line}` is refused by the command policy ({} [{}]: {})",
                    crate::reason::REVISION_COMMAND_REFUSED,
                    v.code,
                    v.rule,
                    v.message
                ));
            }
        }
    }
    out
}

/// FAIL findings of validation and sanitisation of a revised plan.
pub fn plan_problems(p: &Planning, judge: &dyn CommandJudge) -> Vec<String> {
    let text = match serde_json::to_string(p) {
        Ok(t) => t,
        Err(e) => return vec![format!("the revised plan cannot be written: {e}")],
    };
    dandori_plan::validation::validate_bytes_with(text.as_bytes(), judge)
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Fail)
        .map(|f| format!("{} at {}: {}", f.code, f.path, f.message))
        .collect()
}
