//! The seed 000 JSON response formats, typed, with the JSON schemas sent to models.
//!
//! * planning: `goal_understanding`, `task_decomposition`, `action_plan` (plus the
//!   acceptance criteria, assumptions, risks and selected environment dandori asks
//!   for), or an `error` of type `unclear_goal` (§10.1.1) / `decomposition_failed`
//!   (§10.1.2);
//! * execution: `current_task`, `function_call`;
//! * reflection: `reflection`, `plan_revision` (§8.2, §10.2.1);
//! * completion: `summary`, `done`, and `status: requires_human_intervention` (§10.4);
//! * seed 003 §3.4: the size estimation answer.
//!
//! The schemas are deliberately small (they are sent with every call and count
//! against the planning budget) and are checked by `dandori_llm::structured`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Any seed 000 answer, by `phase`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "snake_case")]
pub enum PhaseResponse {
    Planning(PlanningResponse),
    Execution(ExecutionResponse),
    Reflection(ReflectionResponse),
    Completion(CompletionResponse),
}

/// `phase: planning`: a plan, or an error (§10.1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PlanningResponse {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goal_understanding: Option<GoalUnderstandingOut>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_decomposition: Option<TaskDecomposition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_plan: Option<ActionPlan>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptance_criteria: Vec<AcceptanceCriterionOut>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assumptions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<String>,
    /// The name of one of the detected environments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_environment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<PlanningError>,
    #[serde(default)]
    pub comment: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GoalUnderstandingOut {
    pub main_objective: String,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    #[serde(default)]
    pub constraints: Vec<String>,
    #[serde(default)]
    pub context: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskDecomposition {
    #[serde(default)]
    pub reasoning: String,
    pub subtasks: Vec<SubtaskOut>,
    /// Seed 001 §10.3: `simple` | `standard` | `complex`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Seed 001 §10.3: 0.0–1.0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complexity_score: Option<f64>,
    /// Seed 001 §10.4: `parallel` | `sequential` | `dag` (recorded as the
    /// model's view; the plan's own strategy comes from its dependency graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execution_strategy: Option<String>,
}

/// One subtask as the model writes it; becomes one step (one commit).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SubtaskOut {
    /// `task_1`, `task_2`, …; `depends_on` and `execution_order` refer to these.
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub intent: String,
    #[serde(default)]
    pub target_paths: Vec<String>,
    #[serde(default)]
    pub produces: Vec<String>,
    #[serde(default)]
    pub consumes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boundaries: Option<BoundariesOut>,
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// 1–10.
    #[serde(default = "default_complexity")]
    pub complexity: u8,
    /// Expected changed lines.
    #[serde(default)]
    pub estimated_lines: u64,
    #[serde(default)]
    pub links_to_ac: Vec<String>,
    #[serde(default)]
    pub success_criteria: Vec<String>,
    /// Hierarchical strategy: the id of the parent goal this subtask serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<String>,
    /// Seed 001 §10.3 `SuggestedTools`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suggested_tools: Vec<String>,
    /// Seed 001 §10.3 `SuggestedPersona`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggested_persona: Option<String>,
}

fn default_complexity() -> u8 {
    5
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BoundariesOut {
    #[serde(default)]
    pub in_scope: Vec<String>,
    #[serde(default)]
    pub out_of_scope: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ActionPlan {
    #[serde(default)]
    pub execution_order: Vec<String>,
    #[serde(default)]
    pub actions: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptanceCriterionOut {
    pub id: String,
    pub given: String,
    pub when: String,
    pub then: String,
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// How the criterion is proven: `{"command": "…"}` (an assertion that
    /// exits 0 once it holds) or `{"test": "…"}` (a test id or prefix);
    /// becomes `acceptance_criteria[].check` (docs/planner.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckOut>,
}

/// An acceptance criterion's check as the model writes it: exactly one of
/// the two.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CheckOut {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub test: Option<String>,
}

/// §10.1: `error.type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum PlanningError {
    /// §10.1.1.
    UnclearGoal {
        message: String,
        #[serde(default)]
        clarification_needed: Vec<String>,
    },
    /// §10.1.2.
    DecompositionFailed {
        message: String,
        #[serde(default)]
        partial_plan: PartialPlan,
    },
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PartialPlan {
    #[serde(default)]
    pub feasible_subtasks: Vec<SubtaskOut>,
    /// Free-form: strings or objects naming what cannot be done and why.
    #[serde(default)]
    pub infeasible_subtasks: Vec<Value>,
    #[serde(default)]
    pub alternative_approaches: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExecutionResponse {
    pub current_task: String,
    pub function_call: FunctionCall,
    #[serde(default)]
    pub comment: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReflectionResponse {
    pub reflection: Reflection,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_revision: Option<PlanRevision>,
    #[serde(default)]
    pub comment: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReflectionStatus {
    Success,
    Failure,
    Partial,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    pub action_evaluated: String,
    pub status: ReflectionStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_cause_analysis: Option<String>,
    #[serde(default)]
    pub issues_identified: Vec<String>,
    pub plan_revision_needed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanRevision {
    pub reason: String,
    /// Strings, or objects such as `{"type": "add_action", "action": {…}}`.
    #[serde(default)]
    pub changes: Vec<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_action_plan: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionResponse {
    /// `requires_human_intervention` (§10.4) or absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<CompletionStatus>,
    pub summary: CompletionSummary,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done: Option<bool>,
    #[serde(default)]
    pub comment: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompletionStatus {
    RequiresHumanIntervention,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionSummary {
    pub goal_achieved: bool,
    #[serde(default)]
    pub tasks_completed: u64,
    #[serde(default)]
    pub tasks_failed: u64,
    #[serde(default)]
    pub key_outcomes: Vec<String>,
    #[serde(default)]
    pub lessons_learned: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_attempts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_state: Option<String>,
    #[serde(default)]
    pub recommendations: Vec<String>,
}

/// Seed 003 §3.4 answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeEstimateOut {
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    pub complexity_score: u8,
    pub dependency_depth: u64,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default = "default_confidence")]
    pub confidence: f64,
}

fn default_confidence() -> f64 {
    0.5
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn subtask_schema() -> Value {
    json!({
        "type": "object",
        "required": ["id", "title", "intent", "target_paths", "depends_on", "complexity"],
        "properties": {
            "id": {"type": "string"},
            "title": {"type": "string"},
            "intent": {"type": "string"},
            "target_paths": strings(),
            "produces": strings(),
            "consumes": strings(),
            "boundaries": {"type": "object", "properties": {"in_scope": strings(), "out_of_scope": strings()}},
            "depends_on": strings(),
            "complexity": {"type": "integer", "minimum": 1, "maximum": 10},
            "estimated_lines": {"type": "integer", "minimum": 0},
            "links_to_ac": strings(),
            "success_criteria": strings(),
            "parent": {"type": "string"},
            "suggested_tools": strings(),
            "suggested_persona": {"type": "string"}
        }
    })
}

/// Schema of the planning answer (plan or §10.1 error). Which of the two is present
/// is checked by [`super::checks`], so the root stays a plain object (Anthropic
/// tool inputs must be).
pub fn planning_schema() -> Value {
    json!({
        "type": "object",
        "required": ["phase"],
        "properties": {
            "phase": {"const": "planning"},
            "goal_understanding": {
                "type": "object",
                "required": ["main_objective"],
                "properties": {
                    "main_objective": {"type": "string"},
                    "success_criteria": strings(),
                    "constraints": strings(),
                    "context": {"type": "string"}
                }
            },
            "task_decomposition": {
                "type": "object",
                "required": ["subtasks"],
                "properties": {
                    "reasoning": {"type": "string"},
                    "mode": {"enum": ["simple", "standard", "complex"]},
                    "complexity_score": {"type": "number", "minimum": 0, "maximum": 1},
                    "execution_strategy": {"enum": ["parallel", "sequential", "dag"]},
                    "subtasks": {"type": "array", "items": subtask_schema()}
                }
            },
            "action_plan": {
                "type": "object",
                "properties": {"execution_order": strings(), "actions": {"type": "array"}}
            },
            "acceptance_criteria": {"type": "array", "items": {
                "type": "object",
                "required": ["id", "given", "when", "then"],
                "properties": {
                    "id": {"type": "string"}, "given": {"type": "string"},
                    "when": {"type": "string"}, "then": {"type": "string"},
                    "type": {"enum": ["functional", "regression", "nonfunctional"]},
                    "check": {
                        "type": "object",
                        "properties": {"command": {"type": "string"}, "test": {"type": "string"}}
                    }
                }
            }},
            "assumptions": strings(),
            "risks": strings(),
            "selected_environment": {"type": "string"},
            "error": {
                "type": "object",
                "required": ["type", "message"],
                "properties": {
                    "type": {"enum": ["unclear_goal", "decomposition_failed"]},
                    "message": {"type": "string"},
                    "clarification_needed": strings(),
                    "partial_plan": {"type": "object", "properties": {
                        "feasible_subtasks": {"type": "array", "items": subtask_schema()},
                        "infeasible_subtasks": {"type": "array"},
                        "alternative_approaches": {"type": "array"}
                    }}
                }
            },
            "comment": {"type": "string"}
        }
    })
}

/// Seed 003 §3.4.
pub fn size_estimation_schema() -> Value {
    json!({
        "type": "object",
        "required": ["estimated_tokens", "estimated_file_count", "complexity_score", "dependency_depth"],
        "properties": {
            "estimated_tokens": {"type": "integer", "minimum": 0},
            "estimated_file_count": {"type": "integer", "minimum": 0},
            "complexity_score": {"type": "integer", "minimum": 1, "maximum": 10},
            "dependency_depth": {"type": "integer", "minimum": 0},
            "reasoning": {"type": "string"},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1}
        }
    })
}

pub fn execution_schema() -> Value {
    json!({
        "type": "object",
        "required": ["phase", "current_task", "function_call"],
        "properties": {
            "phase": {"const": "execution"},
            "current_task": {"type": "string"},
            "function_call": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}}},
            "comment": {"type": "string"}
        }
    })
}

pub fn reflection_schema() -> Value {
    json!({
        "type": "object",
        "required": ["phase", "reflection"],
        "properties": {
            "phase": {"const": "reflection"},
            "reflection": {"type": "object",
                "required": ["action_evaluated", "status", "plan_revision_needed"],
                "properties": {
                    "action_evaluated": {"type": "string"},
                    "status": {"enum": ["success", "failure", "partial"]},
                    "evaluation": {"type": "string"},
                    "error": {"type": "string"},
                    "root_cause_analysis": {"type": "string"},
                    "issues_identified": strings(),
                    "plan_revision_needed": {"type": "boolean"}
                }},
            "plan_revision": {"type": "object", "required": ["reason"],
                "properties": {"reason": {"type": "string"}, "changes": {"type": "array"},
                    "updated_action_plan": {"type": "object"}}},
            "comment": {"type": "string"}
        }
    })
}

pub fn completion_schema() -> Value {
    json!({
        "type": "object",
        "required": ["phase", "summary"],
        "properties": {
            "phase": {"const": "completion"},
            "status": {"enum": ["requires_human_intervention"]},
            "summary": {"type": "object", "required": ["goal_achieved"],
                "properties": {
                    "goal_achieved": {"type": "boolean"},
                    "tasks_completed": {"type": "integer", "minimum": 0},
                    "tasks_failed": {"type": "integer", "minimum": 0},
                    "key_outcomes": strings(),
                    "lessons_learned": strings(),
                    "revision_attempts": {"type": "integer", "minimum": 0},
                    "reason": {"type": "string"},
                    "current_state": {"type": "string"},
                    "recommendations": strings()
                }},
            "done": {"type": "boolean"},
            "comment": {"type": "string"}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn seed_examples_parse_and_validate() {
        // §10.1.1, §10.1.2, §10.2.1, §10.4 and the §JSON formats, verbatim shapes.
        let unclear = json!({"phase": "planning", "error": {"type": "unclear_goal",
            "message": "タスクの目標が明確ではありません",
            "clarification_needed": ["具体的な実装範囲を教えてください", "期待される動作を明確にしてください"]},
            "comment": "確認が必要です"});
        assert!(dandori_llm::structured::validate(&unclear, &planning_schema()).is_empty());
        let parsed: PhaseResponse = serde_json::from_value(unclear).unwrap();
        let PhaseResponse::Planning(p) = parsed else {
            panic!()
        };
        assert_eq!(
            p.error,
            Some(PlanningError::UnclearGoal {
                message: "タスクの目標が明確ではありません".into(),
                clarification_needed: vec![
                    "具体的な実装範囲を教えてください".into(),
                    "期待される動作を明確にしてください".into()
                ]
            })
        );

        let failed = json!({"phase": "planning", "error": {"type": "decomposition_failed",
            "message": "m", "partial_plan": {"feasible_subtasks": [{"id": "task_1", "title": "t",
            "intent": "i", "target_paths": ["src"], "depends_on": [], "complexity": 3}],
            "infeasible_subtasks": ["x"], "alternative_approaches": ["y"]}}, "comment": "c"});
        assert!(dandori_llm::structured::validate(&failed, &planning_schema()).is_empty());
        let PhaseResponse::Planning(p) = serde_json::from_value(failed).unwrap() else {
            panic!()
        };
        match p.error {
            Some(PlanningError::DecompositionFailed { partial_plan, .. }) => {
                assert_eq!(partial_plan.feasible_subtasks[0].id, "task_1")
            }
            other => panic!("{other:?}"),
        }

        let reflection = json!({"phase": "reflection", "reflection": {
            "action_evaluated": "github_get_file_contents", "status": "failure",
            "error": "ファイルが見つかりません", "root_cause_analysis": "パス", "plan_revision_needed": true},
            "plan_revision": {"reason": "r", "changes": [{"type": "add_action", "action": {
                "action_type": "tool_call", "tool": "github_list_files", "purpose": "p"}}]},
            "comment": "c"});
        assert!(dandori_llm::structured::validate(&reflection, &reflection_schema()).is_empty());
        assert!(matches!(
            serde_json::from_value(reflection).unwrap(),
            PhaseResponse::Reflection(_)
        ));

        let human = json!({"phase": "completion", "status": "requires_human_intervention",
            "summary": {"goal_achieved": false, "tasks_completed": 3, "tasks_failed": 2,
            "revision_attempts": 3, "reason": "上限", "current_state": "...",
            "recommendations": ["a", "b"]}, "comment": "c"});
        assert!(dandori_llm::structured::validate(&human, &completion_schema()).is_empty());
        let PhaseResponse::Completion(c) = serde_json::from_value(human).unwrap() else {
            panic!()
        };
        assert_eq!(c.status, Some(CompletionStatus::RequiresHumanIntervention));
        assert_eq!(c.summary.revision_attempts, Some(3));

        let done = json!({"phase": "completion", "summary": {"goal_achieved": true,
            "tasks_completed": 5, "tasks_failed": 0, "key_outcomes": ["a"], "lessons_learned": ["b"]},
            "done": true, "comment": "c"});
        assert!(dandori_llm::structured::validate(&done, &completion_schema()).is_empty());

        let exec = json!({"phase": "execution", "current_task": "task_1",
            "function_call": {"name": "github_get_file_contents", "arguments": {"path": "README.md"}},
            "comment": "c"});
        assert!(dandori_llm::structured::validate(&exec, &execution_schema()).is_empty());
        assert!(matches!(
            serde_json::from_value(exec).unwrap(),
            PhaseResponse::Execution(_)
        ));
    }
}
