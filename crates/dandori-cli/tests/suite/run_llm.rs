//! `dandori plan` then `dandori run --executor llm` end to end: the real binary, a
//! real git repository (a tiny Python project with a unit test), the offline
//! planner, and the LLM tool loop against the fake model server over real HTTP,
//! with default token budgets and the key passed only through the child's env.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dandori_test_support::{FakeLlmServer, Reply, TempGitRepo};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const KEY: &str = "sk-test-runllm0123456789abcdefFAKE";

/// The binary with an explicit environment (the test process env is never touched).
pub fn dandori(args: &[&str], cwd: &Path, home: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dandori"));
    cmd.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn json_out(o: &Output) -> Value {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// A tiny Python project. `pytest.py` stands in for pytest (not installed here):
/// the planner's `python -m pytest -q` runs unittest discovery through it.
pub fn calc_project() -> TempGitRepo {
    TempGitRepo::with_files(&[
        ("README.md", "# calc\n"),
        ("calc.py", "def add(a, b):\n    return a + b\n"),
        ("tests/__init__.py", ""),
        (
            "tests/test_calc.py",
            "import unittest\n\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        ),
        (
            "pytest.py",
            "\"\"\"Runs unittest discovery (pytest is not installed in this test project).\"\"\"\nimport sys\nimport unittest\n\nresult = unittest.main(module=None, argv=[\"pytest\", \"discover\", \"-s\", \"tests\", \"-t\", \".\"], exit=False, verbosity=2).result\nsys.exit(0 if result.wasSuccessful() else 1)\n",
        ),
        (
            "requests/RQ-7.md",
            // Two steps the request asks for by name (a function with its test is
            // otherwise one unit of work, issue 36).
            "---\nid: RQ-7\ntitle: Subtract\n---\n# Subtract\n\n1. Add a `subtract(a, b)` function to `calc.py`\n2. Add a unit test `test_subtract` in `tests/test_calc.py`\n\n## Acceptance criteria\n\n- Given 5 and 3, when subtract is called, then it returns 2\n",
        ),
    ])
}

pub fn completion(outcome: &str) -> Reply {
    Reply::openai_text(
        &json!({"phase": "completion", "summary": {"goal_achieved": true, "tasks_completed": 1,
            "tasks_failed": 0, "key_outcomes": [outcome], "lessons_learned": []},
            "done": true, "comment": "finished"})
        .to_string(),
    )
}

/// The model's side of the calc run: S01 writes `subtract` and runs the tests (3
/// actions: a periodic reflection), S02 adds its unit test.
pub fn calc_script() -> Vec<Reply> {
    vec![
        // S01: write the function, run the tests (3 actions: a periodic reflection)
        Reply::openai_tool_call("read_file", &json!({"path": "calc.py"})),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a - b\n"}),
        ),
        Reply::openai_tool_call("run_command", &json!({"command": "python -m pytest -q"})),
        Reply::openai_text(
            &json!({"phase": "reflection", "reflection": {"action_evaluated": "run_command",
            "status": "success", "evaluation": "the tests pass", "issues_identified": [],
            "plan_revision_needed": false}, "comment": "on track"})
            .to_string(),
        ),
        completion("subtract added"),
        // S02: the unit test
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "tests/test_calc.py", "content": "import unittest\n\nfrom calc import add, subtract\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_subtract(self):\n        self.assertEqual(subtract(5, 3), 2)\n"}),
        ),
        Reply::openai_tool_call("run_command", &json!({"command": "python -m pytest -q"})),
        completion("test added"),
    ]
}

/// `dandori plan requests/RQ-7.md --json` (the offline planner).
fn plan_rq7(repo: &TempGitRepo, home: &Path) -> Value {
    json_out(&dandori(
        &["plan", "requests/RQ-7.md", "--json"],
        repo.path(),
        home,
        &[],
    ))
}

/// `dandori run RUN_DIR --executor llm --json` with the fake server as the
/// provider; `extra` is YAML appended after the `llm:` provider list (an
/// indented `  budgets:` block continues `llm:`).
fn run_with_fake(
    repo: &TempGitRepo,
    home: &Path,
    run_dir: &Path,
    server: &FakeLlmServer,
    extra: &str,
) -> Output {
    let config = home.join("llm.yaml");
    std::fs::write(
        &config,
        format!(
            "llm:\n  default_provider: fake\n  providers:\n    - name: fake\n      kind: openai\n      base_url: {}\n      api_key_env: TEST_RUN_LLM_KEY\n      model: fake-coder\n      stream: false\n      max_retries: 0\n{extra}",
            server.base_url()
        ),
    )
    .unwrap();
    let run_dir_s = run_dir.to_string_lossy().into_owned();
    dandori(
        &[
            "run",
            &run_dir_s,
            "--executor",
            "llm",
            "--json",
            "--config",
            config.to_str().unwrap(),
        ],
        repo.path(),
        home,
        &[("TEST_RUN_LLM_KEY", KEY)],
    )
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

#[test]
fn plan_then_run_with_the_llm_executor_commits_each_step() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let plan = plan_rq7(&repo, home.path());
    assert_eq!(plan["planner"], json!("offline"));
    assert_eq!(plan["steps"], json!(2));
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let work_branch = planning["work_branch"].as_str().unwrap().to_string();
    let targets: Vec<&str> = planning["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["scope"]["target_paths"][0].as_str().unwrap())
        .collect();
    assert_eq!(targets, vec!["calc.py", "tests/test_calc.py"]);

    let server = FakeLlmServer::start(calc_script()).expect_api_key(KEY);
    let out = run_with_fake(
        &repo,
        home.path(),
        &run_dir,
        &server,
        // an interval reflection whatever the steps' complexity (seed 000
        // §11.1.3 default: by complexity)
        "planning:\n  reflection:\n    trigger_interval: 3\n",
    );
    let summary = json_out(&out);
    assert_eq!(summary["status"], json!("completed"), "{summary:#}");
    assert_eq!(server.remaining(), 0, "the whole script was used");
    server.assert_no_violations();

    // One commit per step on the work branch, with the trailers.
    let log = repo.git(&["log", "--format=%B%x1e", &format!("main..{work_branch}")]);
    let commits: Vec<&str> = log
        .split('\x1e')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(commits.len(), 2, "{log}");
    for (commit, step) in commits.iter().rev().zip(["S01", "S02"]) {
        assert!(
            commit.contains(&format!("Dandori-Step: {step}")),
            "{commit}"
        );
        assert!(commit.contains("Dandori-Run: "), "{commit}");
    }
    assert_eq!(
        repo.git(&["show", &format!("{work_branch}:calc.py")]),
        "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a - b\n"
    );
    assert!(
        repo.git(&["show", &format!("{work_branch}:tests/test_calc.py")])
            .contains("subtract(5, 3)")
    );

    // stage.json: every step done; report.md written.
    let stage: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("stage.json")).unwrap())
            .unwrap();
    let statuses: Vec<(String, String)> = stage["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            ("S01".to_string(), "done".to_string()),
            ("S02".to_string(), "done".to_string())
        ]
    );
    assert!(run_dir.join("report.md").is_file());

    // The trace has the execution and the model's reflection, within its budget.
    let trace: Vec<Value> = std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let names: Vec<&str> = trace.iter().map(|e| e["event"].as_str().unwrap()).collect();
    // `dandori plan` wrote the stage, so the run picks it up (EXECUTION_RESUME).
    assert!(
        names.contains(&"EXECUTION_START") || names.contains(&"EXECUTION_RESUME"),
        "{names:?}"
    );
    for n in [
        "ENVIRONMENT_SETUP",
        "STEP_START",
        "TOOLING",
        "STEP_ACTION",
        "REFLECTION",
        "UNIT_TEST",
        "STEP_END",
        "EXECUTION_END",
    ] {
        assert!(names.contains(&n), "{n} missing from {names:?}");
    }
    let reflection = trace
        .iter()
        .find(|e| {
            e["event"] == "REFLECTION" && e["data"]["reflection"]["evaluation"] == "the tests pass"
        })
        .unwrap_or_else(|| panic!("no model reflection in {names:?}"));
    assert_eq!(reflection["data"]["trigger"], json!("interval"));
    assert!(
        reflection["data"]["tokens"]["prompt_estimate"]
            .as_u64()
            .unwrap()
            <= 500
    );
    let reflection_request = &server.requests()[3].body;
    assert!(reflection_request.get("tools").is_none());

    // The key went to the provider (checked by the server) and nowhere else.
    let mut files = Vec::new();
    files_under(&repo.path().join(".dandori"), &mut files);
    assert!(files.len() > 3, "{files:?}");
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        assert!(
            !String::from_utf8_lossy(&bytes).contains(KEY),
            "the key is in {}",
            f.display()
        );
    }
    assert!(!String::from_utf8_lossy(&out.stdout).contains(KEY));
    assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
}

/// Seed 000 §11.3.2: past `llm.budgets.conversation` the tool loop sends the
/// oldest turns as one summary message; the fake server receives the
/// compressed conversation (the step prompt and the newest call whole, the
/// earlier reads as one line each, their contents gone).
#[test]
fn the_tool_loop_conversation_is_compressed_past_its_budget() {
    let repo = calc_project();
    let home = tempfile::tempdir().unwrap();
    let plan = plan_rq7(&repo, home.path());
    let run_dir = PathBuf::from(plan["run_dir"].as_str().unwrap());
    let script = vec![
        // S01: two reads, the change, the tests, done.
        Reply::openai_tool_call("read_file", &json!({"path": "pytest.py"})),
        Reply::openai_tool_call("read_file", &json!({"path": "README.md"})),
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "calc.py", "content": "def add(a, b):\n    return a + b\n\n\ndef subtract(a, b):\n    return a - b\n"}),
        ),
        Reply::openai_tool_call("run_command", &json!({"command": "python -m pytest -q"})),
        completion("subtract added"),
        // S02: the unit test.
        Reply::openai_tool_call(
            "write_file",
            &json!({"path": "tests/test_calc.py", "content": "import unittest\n\nfrom calc import add, subtract\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n\n    def test_subtract(self):\n        self.assertEqual(subtract(5, 3), 2)\n"}),
        ),
        completion("test added"),
    ];
    let server = FakeLlmServer::start(script).expect_api_key(KEY);
    let out = run_with_fake(
        &repo,
        home.path(),
        &run_dir,
        &server,
        "  budgets:\n    task: 100000\n    conversation: 100\nplanning:\n  reflection:\n    enabled: false\n",
    );
    let summary = json_out(&out);
    assert_eq!(summary["status"], json!("completed"), "{summary:#}");
    assert_eq!(server.remaining(), 0, "the whole script was used");

    let requests = server.requests();
    // The first two turns are under any compression (one turn is always kept).
    let first = requests[0].body["messages"].as_array().unwrap();
    assert_eq!(first.len(), 2);
    // The first compressed call of S01 (the reads outgrow 100 tokens): the
    // system prompt, the step prompt, the summary of the earlier reads, then the
    // newest turn whole, a call paired with its result.
    let is_summary = |m: &Value| {
        m["role"] == "user"
            && m["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Earlier actions of this step, compressed"))
    };
    let i = requests
        .iter()
        .position(|r| {
            r.body["messages"]
                .as_array()
                .unwrap()
                .iter()
                .any(is_summary)
        })
        .expect("no compressed request");
    assert!((2..=4).contains(&i), "first compressed request: {i}");
    let messages = requests[i].body["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles[..3], ["system", "user", "user"], "{messages:#?}");
    assert_eq!(
        roles[roles.len() - 2..],
        ["assistant", "tool"],
        "{messages:#?}"
    );
    let summary_text = messages[2]["content"].as_str().unwrap();
    assert!(
        summary_text.contains("- read_file pytest.py → \"\"\"Runs unittest discovery"),
        "{summary_text}"
    );
    let n = messages.len();
    assert_eq!(
        messages[n - 1]["tool_call_id"],
        messages[n - 2]["tool_calls"][0]["id"],
        "the kept call and its result stay paired"
    );
    // What the first read returned went to the model once, then not again.
    assert!(requests[1].raw_body.contains("unittest.main(module=None"));
    for r in &requests[i..] {
        assert!(!r.raw_body.contains("unittest.main(module=None"));
    }
    // Later compressions fold the earlier summary in: one summary per request.
    for r in &requests[i..] {
        let count = r.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| is_summary(m))
            .count();
        assert!(count <= 1);
    }

    // The trace's LLM_CALL records say what was compressed.
    let trace: Vec<Value> = std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let compressed: Vec<&Value> = trace
        .iter()
        .filter(|e| e["event"] == "LLM_CALL")
        .filter_map(|e| e["data"].get("conversation_compressed"))
        .collect();
    assert!(!compressed.is_empty());
    for c in &compressed {
        assert_eq!(c["budget"], json!(100));
        assert!(c["before_tokens"].as_u64().unwrap() > 100, "{c}");
        // Smaller, though not always within the budget: the newest turn and
        // one summary line are always sent.
        assert!(
            c["after_tokens"].as_u64().unwrap() < c["before_tokens"].as_u64().unwrap(),
            "{c}"
        );
    }
}
