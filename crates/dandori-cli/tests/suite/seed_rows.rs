//! Seed requirements of the planner, runner and trace, each end to end through the
//! binary: the model's own action plan kept (seed 000 §2.3), the time targets
//! checked (§13.4), suggested tools and persona reaching the executor (seed 001
//! §10.3), new files named in the request targeted (seed 003 §5), trace
//! visibility (§7), `size_estimation.llm_model` (§8.1); the automatic replan of
//! seed 004 §2 is in `seed_replan`.

use std::path::Path;
use std::process::Output;

use dandori_test_support::fixtures::size_answer;
use dandori_test_support::{FakeLlmServer, Reply, TempGitRepo};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run_files::{ok_json, read_json, trace, trace_events};
use super::run_llm::{calc_project, completion, dandori};

/// The step of `planning` with this title.
fn step_titled<'a>(planning: &'a Value, title: &str) -> &'a Value {
    planning["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["title"] == title)
        .unwrap_or_else(|| panic!("no step {title:?}: {:#}", planning["steps"]))
}

/// `dandori run RUN_DIR` with the scripted agent `script` as a command executor,
/// without a sandbox, plus `extra` arguments.
pub(super) fn run_with_agent(
    run_dir: &str,
    repo: &TempGitRepo,
    home: &Path,
    script: &str,
    extra: &[&str],
) -> Output {
    let agent = home.join("agent.sh");
    std::fs::write(&agent, script).unwrap();
    let agent_cmd = format!("sh {} {{step_id}} {{prompt_file}}", agent.display());
    let mut args = vec![
        "run",
        run_dir,
        "--executor",
        "command",
        "--agent-cmd",
        &agent_cmd,
        "--json",
        "--sandbox",
        "off",
    ];
    args.extend_from_slice(extra);
    dandori(&args, repo.path(), home, &[])
}

/// A one-step plan for calc: the model writes `subtract` with the given
/// `suggested_tools` / `suggested_persona` and its own action plan.
fn calc_plan_answer() -> Value {
    json!({"phase": "planning",
        "goal_understanding": {"main_objective": "subtract", "success_criteria": ["subtract works"],
            "constraints": [], "context": "calc.py"},
        "task_decomposition": {"reasoning": "one function", "subtasks": [
            {"id": "task_1", "title": "Add subtract", "intent": "subtract(a, b) in calc.py",
             "target_paths": ["calc.py"], "produces": [], "consumes": [], "depends_on": [],
             "complexity": 2, "estimated_lines": 10, "links_to_ac": ["AC-01", "AC-02", "AC-03"],
             "success_criteria": ["calc tests pass"],
             "suggested_tools": ["apply_patch", "run_command"],
             "suggested_persona": "a careful Python maintainer"}]},
        "action_plan": {"execution_order": ["task_1"], "actions": [
            {"task_id": "task_1", "action_type": "tool_call", "tool": "read_file",
             "purpose": "read calc.py", "expected_outcome": "the add function is known",
             "fallback_strategy": "search for calc"},
            {"task_id": "task_1", "action_type": "tool_call", "tool": "apply_patch",
             "purpose": "add subtract", "expected_outcome": "calc.py defines subtract"}]},
        "acceptance_criteria": [
            {"id": "AC-01", "given": "5 and 3", "when": "subtract is called", "then": "it returns 2"},
            {"id": "AC-02", "given": "calc", "when": "the tests run", "then": "they pass"},
            {"id": "AC-03", "given": "add", "when": "called", "then": "it still adds"}],
        "selected_environment": "python", "comment": "Planning completed."})
}

fn provider_config(home: &Path, servers: &[(&str, &FakeLlmServer, &str)]) -> String {
    let mut yaml = format!("llm:\n  default_provider: {}\n  providers:\n", servers[0].0);
    for (name, server, model) in servers {
        yaml.push_str(&format!(
            "    - name: {name}\n      kind: openai\n      base_url: {}\n      model: {model}\n      stream: false\n      max_retries: 0\n",
            server.base_url()
        ));
    }
    let path = home.join("config.yaml");
    std::fs::write(&path, yaml).unwrap();
    path.to_string_lossy().into_owned()
}

/// `dandori plan` of the subtract request with the config file `config`.
fn plan_subtract(repo: &TempGitRepo, home: &Path, config: &str) -> Value {
    ok_json(&dandori(
        &[
            "plan",
            "--text",
            "Add subtract(a, b) to calc.py",
            "--json",
            "--config",
            config,
        ],
        repo.path(),
        home,
        &[],
    ))
}

fn plan_with_model(repo: &TempGitRepo, home: &Path, server: &FakeLlmServer) -> Value {
    let config = provider_config(home, &[("fake", server, "fake-planner")]);
    plan_subtract(repo, home, &config)
}

#[test]
fn the_models_action_plan_is_kept_with_its_tools() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let server = FakeLlmServer::start(vec![
        Reply::openai_text(&size_answer().to_string()),
        Reply::openai_text(&calc_plan_answer().to_string()),
    ]);
    let out = plan_with_model(&repo, home.path(), &server);
    let planning = read_json(Path::new(out["planning_json"].as_str().unwrap()));
    let id = step_titled(&planning, "Add subtract")["step_id"].clone();
    let actions: Vec<&Value> = planning["action_plan"]["actions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["task_id"] == id)
        .collect();
    // The model's two actions, as written, now for the step they became.
    assert_eq!(actions.len(), 2, "{actions:#?}");
    assert_eq!(actions[0]["action_type"], "tool_call");
    assert_eq!(actions[0]["tool"], "read_file");
    assert_eq!(actions[0]["fallback_strategy"], "search for calc");
    assert_eq!(actions[1]["tool"], "apply_patch");
    assert_eq!(actions[1]["purpose"], "add subtract");
    // Every action of the plan names its tool; none is a bare "step".
    for a in planning["action_plan"]["actions"].as_array().unwrap() {
        assert!(a["tool"].is_string(), "{a}");
        assert_ne!(a["action_type"], "step", "{a}");
    }
    server.assert_no_violations();
}

#[test]
fn the_offline_plan_derives_each_action_with_its_tool() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let out = ok_json(&dandori(
        &["plan", "requests/RQ-7.md", "--json"],
        repo.path(),
        home.path(),
        &[],
    ));
    let planning = read_json(Path::new(out["planning_json"].as_str().unwrap()));
    for s in planning["steps"].as_array().unwrap() {
        let tools: Vec<&Value> = planning["action_plan"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|a| a["task_id"] == s["step_id"])
            .map(|a| &a["tool"])
            .collect();
        let suggested: Vec<&Value> = s["suggested_tools"].as_array().unwrap().iter().collect();
        assert_eq!(tools, suggested, "{s:#}");
    }
}

#[test]
fn suggested_tools_and_persona_reach_the_llm_executor_and_the_step_prompt() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let planner = FakeLlmServer::start(vec![
        Reply::openai_text(&size_answer().to_string()),
        Reply::openai_text(&calc_plan_answer().to_string()),
    ]);
    let out = plan_with_model(&repo, home.path(), &planner);
    let run_dir = out["run_dir"].as_str().unwrap().to_string();
    let planning = read_json(Path::new(out["planning_json"].as_str().unwrap()));
    let step_id = step_titled(&planning, "Add subtract")["step_id"]
        .as_str()
        .unwrap()
        .to_string();

    // MCP `step`: both fields, and the prompt with them.
    let step = super::mcp::inspector_call(
        repo.path(),
        &[env!("CARGO_BIN_EXE_dandori"), "mcp", "--tools", "all"],
        &[
            "tools/call",
            "--tool-name",
            "step",
            "--tool-arg",
            &format!("run_dir={run_dir}"),
            "--tool-arg",
            &format!("step_id={step_id}"),
        ],
    );
    let sc = &step["structuredContent"];
    assert_eq!(
        sc["suggested_tools"],
        json!(["apply_patch", "run_command"]),
        "{step:#}"
    );
    assert_eq!(sc["suggested_persona"], "a careful Python maintainer");
    assert!(
        sc["prompt"]
            .as_str()
            .unwrap()
            .contains("## Persona\nWork as: a careful Python maintainer")
    );

    let executor = FakeLlmServer::start((0..8).map(|_| completion("nothing to do")).collect());
    let config = provider_config(home.path(), &[("exec", &executor, "fake-coder")]);
    // The step ends without a change; what matters is what the model was sent.
    let run = dandori(
        &[
            "run",
            &run_dir,
            "--executor",
            "llm",
            "--json",
            "--config",
            &config,
        ],
        repo.path(),
        home.path(),
        &[],
    );
    let first = executor
        .requests()
        .into_iter()
        .find(|r| r.body["messages"].is_array())
        .unwrap_or_else(|| {
            panic!(
                "the executor never called the model ({:?}):\n{}\n{}",
                executor
                    .requests()
                    .iter()
                    .map(|r| (
                        r.path.clone(),
                        r.raw_body.chars().take(200).collect::<String>()
                    ))
                    .collect::<Vec<_>>(),
                String::from_utf8_lossy(&run.stdout),
                String::from_utf8_lossy(&run.stderr)
            )
        });
    let messages = first.body["messages"].as_array().unwrap();
    let system = messages[0]["content"].as_str().unwrap();
    assert!(
        system.contains("For this step you work as: a careful Python maintainer"),
        "{system}"
    );
    assert!(
        system.contains("suggests these tools for this step: apply_patch, run_command"),
        "{system}"
    );
    let user = messages[1]["content"].as_str().unwrap();
    assert!(
        user.contains("## Persona\nWork as: a careful Python maintainer"),
        "{user}"
    );
    assert!(user.contains("## Suggested tools"), "{user}");
    // The suggested tools are offered first.
    let tools: Vec<&str> = first.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(&tools[..2], ["apply_patch", "run_command"], "{tools:?}");
}

#[test]
fn size_estimation_llm_model_picks_the_model_or_the_provider() {
    // A model name: the size call asks for it, the planning call for the provider's.
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let server = FakeLlmServer::start(vec![
        Reply::openai_text(&size_answer().to_string()),
        Reply::openai_text(&calc_plan_answer().to_string()),
    ]);
    // Seed 003 §8.1's own location.
    let tp = repo.path().join(".claude/task-planning.json");
    std::fs::create_dir_all(tp.parent().unwrap()).unwrap();
    std::fs::write(&tp, r#"{"size_estimation": {"llm_model": "tiny-sizer"}}"#).unwrap();
    let config = provider_config(home.path(), &[("fake", &server, "fake-planner")]);
    let out = plan_subtract(&repo, home.path(), &config);
    let models: Vec<Value> = server
        .requests()
        .iter()
        .map(|r| r.body["model"].clone())
        .collect();
    assert_eq!(models, [json!("tiny-sizer"), json!("fake-planner")]);
    let calls: Vec<(Value, Value)> =
        trace_events(Path::new(out["run_dir"].as_str().unwrap()), "LLM_CALL")
            .into_iter()
            .map(|e| {
                (
                    e["data"]["purpose"].clone(),
                    e["data"]["request_model"].clone(),
                )
            })
            .collect();
    assert_eq!(
        calls,
        [
            (json!("size_estimation"), json!("tiny-sizer")),
            (json!("planning"), json!("fake-planner"))
        ]
    );

    // A provider name: the size call goes to that provider's server.
    let sizer = FakeLlmServer::start(vec![Reply::openai_text(&size_answer().to_string())]);
    let planner = FakeLlmServer::start(vec![Reply::openai_text(&calc_plan_answer().to_string())]);
    std::fs::write(&tp, r#"{"size_estimation": {"llm_model": "cheap-sizer"}}"#).unwrap();
    let config = provider_config(
        home.path(),
        &[
            ("main", &planner, "big-planner"),
            ("cheap-sizer", &sizer, "small"),
        ],
    );
    plan_subtract(&repo, home.path(), &config);
    assert_eq!(sizer.request_count(), 1);
    assert_eq!(sizer.requests()[0].body["model"], "small");
    assert_eq!(planner.request_count(), 1);
    assert_eq!(planner.requests()[0].body["model"], "big-planner");
}

#[test]
fn trace_events_carry_their_visibility_and_trace_filters_by_it() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let out = ok_json(&dandori(
        &["plan", "requests/RQ-7.md", "--json"],
        repo.path(),
        home.path(),
        &[],
    ));
    let run_dir = out["run_dir"].as_str().unwrap();
    let events = trace(Path::new(run_dir));
    let vis = |name: &str| {
        events
            .iter()
            .find(|e| e["event"] == name)
            .map(|e| e["visibility"].clone())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    // Seed 003 §7.1's table.
    assert_eq!(vis("PLANNING_START"), "summary");
    assert_eq!(vis("SIZE_ESTIMATION"), "full");
    assert_eq!(vis("CHUNKING_DECISION"), "summary");
    assert_eq!(vis("DEPENDENCY_ANALYSIS"), "full");
    assert_eq!(vis("EXECUTION_PLAN"), "summary");
    assert_eq!(vis("PLANNING_END"), "summary");

    let lines = |o: &Output| -> Vec<Value> {
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let summary = lines(&dandori(
        &["trace", run_dir, "--visibility", "summary", "--json"],
        repo.path(),
        home.path(),
        &[],
    ));
    let names: Vec<&str> = summary
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "PLANNING_START",
            "CHUNKING_DECISION",
            "EXECUTION_PLAN",
            "PLANNING_END"
        ]
    );
    let full = lines(&dandori(
        &["trace", run_dir, "--visibility", "full", "--json"],
        repo.path(),
        home.path(),
        &[],
    ));
    assert_eq!(full.len(), events.len());
    let bad = dandori(
        &["trace", run_dir, "--visibility", "some"],
        repo.path(),
        home.path(),
        &[],
    );
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("ARGUMENT_INVALID") && err.contains("summary"),
        "{err}"
    );
}

/// examples/todo-api without its packaging (no install during setup), with a
/// request naming a module that does not exist yet; `pytest.py` stands in for
/// pytest (unittest discovery), as in `calc_project`.
fn todo_storage_project() -> TempGitRepo {
    let repo = super::plan_llm::todo_api();
    std::fs::remove_file(repo.path().join("pyproject.toml")).unwrap();
    repo.write("pytest.py", &calc_project().read("pytest.py"));
    repo.write(
        "requests/RQ-010.md",
        "---\nid: RQ-010\ntitle: Persist tasks to disk\n---\n# Persist tasks to disk\n\nTasks are lost when the server restarts.\n\n## Requirements\n\n- Save and load the tasks as JSON in `todo/storage.py`\n- `TaskStore` uses it to keep tasks across restarts\n- Add tests for the storage\n\n## Acceptance criteria\n\n- Given a saved task, when the store is reloaded, then the task is still there\n- Given no file yet, when the store loads, then it starts empty\n- Given a corrupt file, when the store loads, then it raises a clear error\n",
    );
    repo.commit_all("storage request");
    repo
}

/// The scripted agent of the new-file test: the step targeting the new module
/// writes it; the other makes the store use it, with the criteria's tests.
const STORAGE_AGENT: &str = r#"#!/bin/sh
if grep -q "change only: todo/storage.py" "$2"; then
cat > todo/storage.py <<'EOF'
"""Tasks saved to and loaded from a JSON file."""

import json
import os
from typing import List

from todo.models import Task


class StorageError(ValueError):
    """The storage file cannot be read as tasks."""


def save_tasks(path: str, tasks: List[Task]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump([{"id": t.id, "title": t.title, "done": t.done} for t in tasks], f)


def load_tasks(path: str) -> List[Task]:
    if not os.path.exists(path):
        return []
    try:
        with open(path, encoding="utf-8") as f:
            rows = json.load(f)
        return [Task(id=r["id"], title=r["title"], done=r["done"]) for r in rows]
    except (ValueError, KeyError, TypeError) as e:
        raise StorageError(f"{path}: not a task file ({e})") from None
EOF
else
python3 - <<'EOF'
p = "todo/store.py"
s = open(p).read()
s = s.replace("from todo.models import Task\n", "from todo.models import Task\nfrom todo import storage\n")
s = s.replace('''    def __init__(self) -> None:
        self._tasks: Dict[int, Task] = {}
        self._next_id = 1
''', '''    def __init__(self, path: Optional[str] = None) -> None:
        self._tasks: Dict[int, Task] = {}
        self._next_id = 1
        self._path = path
        if path:
            for t in storage.load_tasks(path):
                self._tasks[t.id] = t
                self._next_id = max(self._next_id, t.id + 1)

    def save(self) -> None:
        if self._path:
            storage.save_tasks(self._path, self.list())
''')
open(p, "w").write(s)
EOF
cat > tests/test_persistence.py <<'EOF'
import os
import tempfile
import unittest

from todo.storage import StorageError
from todo.store import TaskStore


class PersistenceTest(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.mkdtemp()
        self.path = os.path.join(self.dir, "tasks.json")

    def test_ac01_saved_task_survives_reload(self) -> None:
        s = TaskStore(self.path)
        s.add("ship")
        s.save()
        self.assertEqual([t.title for t in TaskStore(self.path).list()], ["ship"])

    def test_ac02_no_file_starts_empty(self) -> None:
        self.assertEqual(TaskStore(self.path).list(), [])

    def test_ac03_corrupt_file_raises(self) -> None:
        with open(self.path, "w") as f:
            f.write("{nope")
        with self.assertRaises(StorageError):
            TaskStore(self.path)
EOF
fi
"#;

#[test]
fn a_new_file_the_request_names_is_targeted_and_its_users_wait_for_it() {
    let repo = todo_storage_project();
    let home = tempfile::tempdir().unwrap();
    let out = ok_json(&dandori(
        &["plan", "requests/RQ-010.md", "--json"],
        repo.path(),
        home.path(),
        &[],
    ));
    let run_dir = out["run_dir"].as_str().unwrap().to_string();
    let planning = read_json(&Path::new(&run_dir).join("planning.json"));
    let steps = planning["steps"].as_array().unwrap();
    let creator = steps
        .iter()
        .find(|s| s["title"].as_str().unwrap().contains("todo/storage.py"))
        .unwrap_or_else(|| panic!("{steps:#?}"));
    // The file that does not exist yet, not README.md or a retrieval guess.
    assert_eq!(creator["scope"]["target_paths"], json!(["todo/storage.py"]));
    let user = steps
        .iter()
        .find(|s| s["title"].as_str().unwrap().contains("uses it"))
        .unwrap_or_else(|| panic!("{steps:#?}"));
    // A data dependency on the new file (seed 003 §5), and no logical edge.
    let edges: Vec<(Value, Value, Value)> = planning["dependency_graph"]["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["from"].clone(), e["to"].clone(), e["type"].clone()))
        .collect();
    assert!(
        edges.contains(&(
            creator["step_id"].clone(),
            user["step_id"].clone(),
            json!("data")
        )),
        "{edges:?}"
    );
    assert!(!edges.iter().any(|e| e.2 == "logical"), "{edges:?}");

    let summary = ok_json(&run_with_agent(
        &run_dir,
        &repo,
        home.path(),
        STORAGE_AGENT,
        &[],
    ));
    assert_eq!(summary["status"], "completed", "{summary:#}");
    assert!(
        summary["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["status"] == "done"),
        "{summary:#}"
    );
}
