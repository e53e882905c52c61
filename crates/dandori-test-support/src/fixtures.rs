//! Model answers for `examples/todo-api` (request RQ-001), shared by the planner
//! and CLI tests that script the fake LLM server.

use serde_json::{Value, json};

/// A seed 003 §3.4 size estimation answer.
pub fn size_answer() -> Value {
    json!({"estimated_tokens": 4000, "estimated_file_count": 5, "complexity_score": 5,
        "dependency_depth": 2, "reasoning": "model, store, API, tests and README", "confidence": 0.7})
}

/// A plan for examples/todo-api RQ-001 as a model would write it.
pub fn plan_answer() -> Value {
    json!({"phase": "planning",
        "goal_understanding": {"main_objective": "Task priorities with filtering and sorting",
            "success_criteria": ["priority filter and sort work"], "constraints": ["standard library only"],
            "context": "todo/ holds the model, store and HTTP API"},
        "task_decomposition": {"reasoning": "model first, then the API on top, then docs", "subtasks": [
            {"id": "task_1", "title": "Add Priority to the model and store", "intent": "Priority enum, Task.priority, store filter and sort",
             "target_paths": ["todo/models.py", "todo/store.py", "tests/test_store.py"], "produces": ["Priority", "Store.list(priority, sort)"],
             "consumes": [], "boundaries": {"in_scope": ["todo/models.py", "todo/store.py"], "out_of_scope": ["todo/api.py"]},
             "depends_on": [], "complexity": 4, "estimated_lines": 80, "links_to_ac": ["AC-01", "AC-02"],
             "success_criteria": ["store tests pass"]},
            {"id": "task_2", "title": "Expose priority in the API", "intent": "POST accepts priority, GET filters and sorts",
             "target_paths": ["todo/api.py", "tests/test_api.py"], "produces": ["GET /tasks?priority", "GET /tasks?sort=priority"],
             "consumes": ["Priority", "Store.list(priority, sort)"], "depends_on": ["task_1"], "complexity": 5,
             "estimated_lines": 90, "links_to_ac": ["AC-01", "AC-02", "AC-03"], "success_criteria": ["API tests pass"]},
            {"id": "task_3", "title": "Document the query parameters", "intent": "README section",
             "target_paths": ["README.md"], "produces": [], "consumes": ["GET /tasks?priority"], "depends_on": ["task_2"],
             "complexity": 1, "estimated_lines": 15, "links_to_ac": ["AC-01"]}
        ]},
        "action_plan": {"execution_order": ["task_1", "task_2", "task_3"], "actions": []},
        "acceptance_criteria": [
            {"id": "AC-01", "given": "a task created with priority high", "when": "GET /tasks?priority=high", "then": "only that task is returned", "type": "functional"},
            {"id": "AC-02", "given": "tasks of every priority", "when": "GET /tasks?sort=priority", "then": "the high ones come first", "type": "functional"},
            {"id": "AC-03", "given": "the API", "when": "POST /tasks has priority urgent", "then": "it returns 400", "type": "functional"}],
        "assumptions": ["priorities are stored as strings"], "risks": ["existing responses change shape"],
        "selected_environment": "python", "comment": "Planning completed."})
}
