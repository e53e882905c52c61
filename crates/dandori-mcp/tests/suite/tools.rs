//! The tool catalogue and the server's tool calls without a transport: sets,
//! schema sizes, and bad inputs that must come back as tool errors with reason
//! codes (never a dead server).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use dandori_config::{Config, Loaded};
use dandori_mcp::{DandoriServer, Host, ServiceOptions, ToolSet, tools};
use dandori_planner::{DraftPlanner, PlannerError};
use dandori_runner::environment::EnvironmentPhase;
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};

pub(super) struct OfflineHost;

impl Host for OfflineHost {
    fn config(&self, repo: &Path) -> Result<Loaded, String> {
        dandori_config::load(&dandori_config::LoadOptions {
            repo: repo.to_path_buf(),
            config_path: None,
            task_planning_path: None,
            env: BTreeMap::new(),
            overrides: Vec::new(),
            task_type: None,
            user_config_path: None,
        })
        .map_err(|e| e.to_string())
    }
    fn environment(&self, _config: &Config) -> Option<Arc<dyn EnvironmentPhase>> {
        None
    }
    fn environment_plugins(
        &self,
        _config: &Config,
        _repo: &Path,
    ) -> dandori_env::plugins::Registry {
        dandori_env::plugins::Registry::builtin()
    }
    fn planner(&self, _loaded: &Loaded) -> Result<Option<Box<dyn DraftPlanner>>, PlannerError> {
        Ok(None)
    }
}

pub(super) fn server(set: ToolSet, cwd: &Path) -> DandoriServer {
    server_with_env(set, cwd, BTreeMap::new())
}

fn server_with_env(set: ToolSet, cwd: &Path, base_env: BTreeMap<String, String>) -> DandoriServer {
    DandoriServer::new(
        set,
        ServiceOptions {
            cwd: cwd.to_path_buf(),
            base_env,
            host: Arc::new(OfflineHost),
        },
    )
}

pub(super) fn args(v: Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn names(set: ToolSet) -> Vec<String> {
    tools::tools(set)
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

#[test]
fn tool_sets_nest_and_the_core_set_stays_small() {
    assert_eq!(
        names(ToolSet::Core),
        ["plan", "next", "step", "step_update", "report"]
    );
    assert_eq!(
        names(ToolSet::Standard),
        [
            "plan",
            "next",
            "step",
            "step_update",
            "report",
            "validate",
            "graph",
            "status",
            "runs",
            "env_detect",
            "locate"
        ]
    );
    assert_eq!(names(ToolSet::All).len(), 14);
    assert!(tools::schema_chars(ToolSet::Core) <= 4000);
    for t in tools::tools(ToolSet::All) {
        assert!(t.output_schema.is_some(), "{} has no output schema", t.name);
        assert_eq!(t.input_schema.get("type"), Some(&json!("object")));
    }
    assert_eq!(ToolSet::parse("standard"), Some(ToolSet::Standard));
    assert_eq!(ToolSet::parse("everything"), None);
}

fn error_code(r: &rmcp::model::CallToolResult) -> String {
    assert_eq!(r.is_error, Some(true), "{r:?}");
    r.structured_content.as_ref().unwrap()["error"]["code"]
        .as_str()
        .unwrap()
        .to_string()
}

pub(super) fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn bad_inputs_are_tool_errors_with_reason_codes() {
    let dir = tempfile::tempdir().unwrap();
    let cycle = json!({"version": "1.0", "steps": [
        {"step_id": "S01", "depends_on": ["S02"]}, {"step_id": "S02", "depends_on": ["S01"]}]});
    std::fs::write(dir.path().join("cycle.json"), cycle.to_string()).unwrap();
    std::fs::write(dir.path().join("broken.json"), "{not json").unwrap();
    let rt = rt();
    let s = server(ToolSet::All, dir.path());
    let call = |name: &str, a: Value| rt.block_on(s.call(name, args(a)));
    assert_eq!(error_code(&call("next", json!({}))), "ARGUMENT_INVALID");
    assert_eq!(
        error_code(&call("next", json!({"run_dir": "nowhere"}))),
        "RUN_DIR_INVALID"
    );
    assert_eq!(
        error_code(&call("status", json!({"run_dir": 5}))),
        "ARGUMENT_INVALID"
    );
    assert_eq!(
        error_code(&call("graph", json!({"path": "broken.json"}))),
        "PLAN_INVALID"
    );
    assert_eq!(
        error_code(&call("graph", json!({"path": "missing.json"}))),
        "IO_ERROR"
    );
    assert_eq!(
        error_code(&call("plan", json!({"text": "x", "request": "y"}))),
        "ARGUMENT_INVALID"
    );
    assert_eq!(
        error_code(&call("trace", json!({"run_dir": "nowhere"}))),
        "RUN_DIR_INVALID"
    );
    assert_eq!(
        error_code(&call("locate", json!({"repo": "nowhere", "query": "x"}))),
        "REPO_NOT_FOUND"
    );
    // A cycle is reported, not a success and not a crash.
    let v = call("validate", json!({"path": "cycle.json"}));
    assert_eq!(v.is_error, Some(false));
    let out = v.structured_content.unwrap();
    assert_eq!(out["ok"], json!(false));
    let codes: Vec<&str> = out["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"DEPENDENCY_CYCLE"), "{codes:?}");
    // Tools outside the set are unknown to a smaller server.
    let core = server(ToolSet::Core, dir.path());
    let r = rt.block_on(core.call("validate", args(json!({"path": "cycle.json"}))));
    assert_eq!(error_code(&r), "TOOL_UNKNOWN");
    // The server still answers after all of that.
    assert_eq!(
        error_code(&call(
            "step",
            json!({"run_dir": "nowhere", "step_id": "S01"})
        )),
        "RUN_DIR_INVALID"
    );
}

#[test]
fn graph_and_locate_answer_small_structured_results() {
    let repo = dandori_test_support::TempGitRepo::with_files(&[
        (
            "src/parser.py",
            "def parse_config(text):\n    return text.split()\n",
        ),
        ("src/other.py", "x = 1\n"),
    ]);
    let step = |id: &str, deps: &[&str]| {
        json!({
            "step_id": id, "title": id, "role": "implementer", "intent": id,
            "scope": {"target_paths": [format!("src/{id}")], "max_diff_lines": 100},
            "inputs": {"request_path": "requests/RQ-1.md"}, "commands": {"unit": []},
            "success_criteria": ["ok"], "links_to_ac": ["AC-01"], "depends_on": deps,
            "expected_diff": {"lines_max": 100, "files_max": 5, "risk_level": "low"},
            "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
        })
    };
    let ac = |id: &str| json!({"id": id, "given": "g", "when": "w", "then": "t"});
    let plan = json!({
        "version": "1.0", "request_id": "RQ-1", "run_id": "r1", "created_at": "2026-01-01T00:00:00Z",
        "base_branch": "main", "work_branch": "dandori/RQ-1/r1",
        "limits": {"max_diff_lines": 100, "timeout_sec": 60, "max_steps_per_run": 10, "max_autofix_cycles": 1},
        "context": {"summary": "s", "constraints": [], "acceptance_criteria": [ac("AC-01"), ac("AC-02"), ac("AC-03")], "test_instructions": {}},
        "steps": [step("S01", &[]), step("S02", &["S01"]), step("S03", &[])],
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
                  "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 1},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    });
    std::fs::write(repo.path().join("plan.json"), plan.to_string()).unwrap();
    let rt = rt();
    let s = server(ToolSet::Standard, repo.path());
    let v = rt.block_on(s.call("validate", args(json!({"path": "plan.json"}))));
    assert_eq!(v.structured_content.unwrap()["ok"], json!(true));
    let g = rt.block_on(s.call("graph", args(json!({"path": "plan.json"}))));
    let g = g.structured_content.unwrap();
    assert_eq!(g["groups"], json!([["S01", "S03"], ["S02"]]));
    assert_eq!(g["critical_path"], json!(["S01", "S02"]));
    let l = rt.block_on(s.call("locate", args(json!({"query": "parse_config", "k": 1}))));
    let l = l.structured_content.unwrap();
    assert_eq!(l["files"][0]["path"], json!("src/parser.py"));
    assert_eq!(l["files"].as_array().unwrap().len(), 1);
}

#[test]
fn revise_applies_explicit_feedback_to_a_planned_run() {
    let repo = dandori_test_support::TempGitRepo::with_files(&[
        ("app/main.py", "def main():\n    return 1\n"),
        ("README.md", "# app\n"),
    ]);
    let rt = rt();
    let s = server(ToolSet::All, repo.path());
    let p = rt.block_on(s.call(
        "plan",
        args(json!({"text": "Add a --verbose flag to app/main.py"})),
    ));
    let run_dir = p.structured_content.unwrap()["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    let before: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&run_dir).join("planning.json")).unwrap(),
    )
    .unwrap();
    let steps_before = before["steps"].as_array().unwrap().len();
    let r = rt.block_on(s.call(
        "revise",
        args(json!({"run_dir": run_dir, "feedback": "add step: document the flag in `README.md`"})),
    ));
    let r = r.structured_content.unwrap();
    assert_eq!(r["status"], json!("revised"), "{r}");
    assert_eq!(r["revision"], json!(1));
    let after: Value = serde_json::from_str(
        &std::fs::read_to_string(Path::new(&run_dir).join("planning.json")).unwrap(),
    )
    .unwrap();
    let steps = after["steps"].as_array().unwrap();
    assert_eq!(steps.len(), steps_before + 1);
    assert_eq!(
        steps.last().unwrap()["scope"]["target_paths"],
        json!(["README.md"])
    );
    assert_eq!(after["revision_attempts"], json!(1));
    let trace = std::fs::read_to_string(Path::new(&run_dir).join("trace.jsonl")).unwrap();
    assert!(trace.contains("\"PLAN_REVISION\""), "{trace}");
    // Feedback with no edit dandori can apply is a tool error with its reason code.
    let none = rt.block_on(s.call(
        "revise",
        args(json!({"run_dir": run_dir, "feedback": "looks fine to me"})),
    ));
    assert_eq!(error_code(&none), "REVISION_NO_CHANGES");
}

/// `env_detect` shows the commands setup will run with the tools setup runs them
/// with — the server's `PATH` and dandori's tool cache — as `dandori env detect`
/// does, not with whatever is on the `PATH` of the process that serves.
#[test]
fn env_detect_sees_the_tool_cache_like_setup() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("requirements.txt"), "").unwrap();
    std::fs::write(repo.path().join("app.py"), "print('hi')\n").unwrap();
    let home = tempfile::tempdir().unwrap();
    let cache = dandori_test_support::tool_cache::with_program("uv");
    let empty_cache = tempfile::tempdir().unwrap();
    let rt = rt();
    let detect = |cache: &Path| -> Vec<String> {
        let env: BTreeMap<String, String> = [
            ("PATH", "/usr/local/bin:/usr/bin:/bin".to_string()),
            ("HOME", home.path().display().to_string()),
            ("DANDORI_TOOLS_BOOTSTRAP", "0".to_string()),
            ("DANDORI_TOOLS_DIR", cache.display().to_string()),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let s = server_with_env(ToolSet::All, repo.path(), env);
        let r = rt.block_on(s.call("env_detect", args(json!({}))));
        assert_eq!(r.is_error, Some(false), "{r:?}");
        let v = r.structured_content.unwrap();
        assert_eq!(v["selected"]["name"], json!("python"), "{v}");
        v["selected"]["setup_commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_str().unwrap().to_string())
            .collect()
    };
    let with_uv = detect(cache.path());
    assert!(
        with_uv
            .iter()
            .any(|c| c == "uv venv .venv --allow-existing"),
        "{with_uv:?}"
    );
    // Without it in the cache (and no bootstrap), setup would not use uv: the
    // uv on the test's own PATH does not count.
    let without = detect(empty_cache.path());
    assert!(!without.iter().any(|c| c.starts_with("uv ")), "{without:?}");
}

/// Issue 39: what a tool answers is masked with the server's secrets, in every
/// form: here a trace holding them (written by hand, or by an older dandori),
/// read back through the `trace` tool.
#[test]
fn answers_are_masked_in_every_form() {
    use dandori_test_support::secret_forms::{SECRET, SECRET_VAR, forms};
    let repo = dandori_test_support::TempGitRepo::with_files(&[(
        "src/app.py",
        "def add(a, b):\n    return a + b\n",
    )]);
    let env = BTreeMap::from([(SECRET_VAR.to_string(), SECRET.to_string())]);
    let masker = dandori_trace::Masker::default().with_env_secrets(&env);
    let rt = rt();
    let s = server_with_env(ToolSet::All, repo.path(), env);
    let planned = rt.block_on(s.call(
        "plan",
        args(json!({"text": "Add a sub function to src/app.py"})),
    ));
    let run_dir = planned.structured_content.unwrap()["run_dir"]
        .as_str()
        .unwrap()
        .to_string();
    let mut trace = std::fs::OpenOptions::new()
        .append(true)
        .open(Path::new(&run_dir).join("trace.jsonl"))
        .unwrap();
    for (name, text) in forms(SECRET) {
        let event = json!({"event": "NOTE", "timestamp": "2026-01-01T00:00:00Z",
            "session_id": "s", "task_id": "t", "data": {"form": name, "text": text}});
        use std::io::Write;
        writeln!(trace, "{event}").unwrap();
    }
    drop(trace);
    let answer = rt.block_on(s.call(
        "trace",
        args(json!({"run_dir": run_dir, "event": "NOTE", "limit": 100})),
    ));
    let v = answer.structured_content.unwrap();
    let events = v["events"].as_array().unwrap();
    assert_eq!(events.len(), forms(SECRET).len(), "{v}");
    for e in events {
        let text = e["data"]["text"].as_str().unwrap();
        assert!(!masker.holds_secret(text), "{}: {text}", e["data"]["form"]);
        assert!(text.contains("***"), "{text}");
    }
    // The text form of the answer too.
    let shown = serde_json::to_string(&answer.content).unwrap();
    assert!(!masker.holds_secret(&shown), "{shown}");
}
