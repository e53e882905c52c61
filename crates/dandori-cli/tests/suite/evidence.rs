//! Proven completion (issue 20), end to end with real child processes and real
//! test runners (python unittest, node:test): the baseline on the base commit,
//! pre-existing failures, regressions, red → green evidence per acceptance
//! criterion, ALREADY_SATISFIED.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::git::git;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

struct Project {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    run_dir: PathBuf,
    agent: PathBuf,
}

/// A git repository holding `files`, and a run directory with a plan of `steps`
/// (id, target, linked ACs) over `acs`, every step running `unit`.
fn project(
    files: &[(&str, &str)],
    steps: &[(&str, &str, &[&str])],
    acs: Value,
    unit: &str,
) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    for (path, text) in files {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::write(repo.join(".gitignore"), "__pycache__/\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let steps: Vec<Value> = steps
        .iter()
        .map(|(id, target, links)| {
            json!({
                "step_id": id, "title": format!("Step {id}"), "role": "implementer",
                "intent": format!("Do {id}"),
                "scope": {"target_paths": [target], "max_diff_lines": 200},
                "inputs": {"request_path": "requests/RQ-20.md"},
                "commands": {"unit": [unit]},
                "success_criteria": ["done"],
                "links_to_ac": links,
                "expected_diff": {"lines_max": 200, "files_max": 5, "risk_level": "low"},
                "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
            })
        })
        .collect();
    let depends: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            if i > 0 {
                s["depends_on"] = json!([steps[i - 1]["step_id"]]);
            }
            s
        })
        .collect();
    let plan = json!({
        "version": "1.0", "request_id": "RQ-20", "run_id": "run-20",
        "created_at": "2026-01-01T00:00:00Z", "base_branch": "main",
        "work_branch": "dandori/RQ-20/run-20",
        "limits": {"max_diff_lines": 400, "timeout_sec": 120, "max_steps_per_run": 10, "max_autofix_cycles": 2},
        "context": {"summary": "issue 20 scenario", "constraints": [],
                    "acceptance_criteria": acs, "test_instructions": {"unit": unit}},
        "steps": depends,
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
                  "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 1},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    });
    let run_dir = repo.join(".dandori/runs/RQ-20/run-20");
    std::fs::create_dir_all(&run_dir).unwrap();
    std::fs::write(
        run_dir.join("planning.json"),
        serde_json::to_string_pretty(&plan).unwrap(),
    )
    .unwrap();
    let agent = root.join("agent.sh");
    Project {
        _dir: dir,
        repo,
        run_dir,
        agent,
    }
}

/// Runs the plan with `agent` (a shell script body; `$1` is the step id) and
/// returns the exit code and the `--json` completion record.
fn run(p: &Project, agent: &str) -> (i32, Value, String) {
    let (code, stdout, stderr) = run_with(p, agent, &["--json"]);
    let v: Value =
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, v, stderr)
}

/// Runs the plan with `agent` and `extra` arguments: exit code, stdout, stderr.
fn run_with(p: &Project, agent: &str, extra: &[&str]) -> (i32, String, String) {
    std::fs::write(&p.agent, format!("#!/bin/sh\nset -e\n{agent}\n")).unwrap();
    let out = Command::new(BIN)
        .args([
            "run",
            p.run_dir.to_str().unwrap(),
            "--repo",
            p.repo.to_str().unwrap(),
        ])
        .args(["--executor", "command", "--agent-cmd"])
        .arg(format!("sh {} {{step_id}}", p.agent.display()))
        .args(extra)
        .args(["--sandbox", "off"])
        .current_dir(&p.repo)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", p.run_dir.parent().unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn report(p: &Project) -> String {
    std::fs::read_to_string(p.run_dir.join("report.md")).unwrap()
}

/// The report's section from `## title` to the next section.
fn section(md: &str, title: &str) -> String {
    let start = md
        .find(&format!("## {title}"))
        .unwrap_or_else(|| panic!("no {title}: {md}"));
    let rest = &md[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |i| i + 4);
    rest[..end].trim_end().to_string()
}

fn ac_status(v: &Value, ac: &str) -> Value {
    v["evidence"]["acceptance_criteria"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["ac"] == ac)
        .unwrap_or_else(|| panic!("no {ac}: {v:#}"))
        .clone()
}

fn steps(v: &Value) -> Vec<(String, String, Value)> {
    v["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["step_id"].as_str().unwrap().to_string(),
                s["status"].as_str().unwrap().to_string(),
                s["reason_code"].clone(),
            )
        })
        .collect()
}

fn trace_count(run_dir: &Path, event: &str) -> usize {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(&format!("\"event\":\"{event}\"")))
        .count()
}

const SLUG_PY: &str = "def existing(text):\n    return text.strip()\n";
const TEST_SLUG_PY: &str = "import unittest\n\nimport slug\n\n\nclass TestExisting(unittest.TestCase):\n    def test_existing(self):\n        self.assertEqual(slug.existing(' a '), 'a')\n";

fn slug_acs() -> Value {
    json!([
        {"id": "AC-01", "given": "a title 'Hello World'", "when": "`slugify(title)` is called",
         "then": "it returns 'hello-world'", "type": "functional"},
        {"id": "AC-02", "given": "an empty title", "when": "`slugify('')` is called",
         "then": "it returns ''", "type": "functional",
         "check": "test_slug.TestSlugify.test_empty"},
        {"id": "AC-03", "given": "the existing helpers", "when": "the change lands",
         "then": "they still work", "type": "regression"}
    ])
}

#[test]
fn an_agent_that_only_adds_comments_achieves_nothing() {
    let p = project(
        &[("slug.py", SLUG_PY), ("test_slug.py", TEST_SLUG_PY)],
        &[
            ("S01", "slug.py", &["AC-01", "AC-02"]),
            ("S02", "test_slug.py", &["AC-01", "AC-02", "AC-03"]),
        ],
        slug_acs(),
        "python3 -m unittest -v",
    );
    let (code, v, stderr) = run(
        &p,
        "case \"$1\" in S02) f=test_slug.py ;; *) f=slug.py ;; esac\necho \"# slugify: handled\" >> \"$f\"",
    );
    assert_eq!(code, 1, "{v:#}\n{stderr}");
    assert_eq!(v["summary"]["goal_achieved"], false);
    // The steps ran and their suite passes, which proves nothing.
    assert_eq!(
        steps(&v),
        [
            ("S01".to_string(), "done".to_string(), Value::Null),
            ("S02".to_string(), "done".to_string(), Value::Null)
        ]
    );
    assert_eq!(ac_status(&v, "AC-01")["status"], "unverified");
    assert_eq!(ac_status(&v, "AC-02")["status"], "not_covered");
    assert_eq!(ac_status(&v, "AC-02")["base_result"], "absent");
    assert_eq!(ac_status(&v, "AC-02")["after_result"], "absent");
    // Nothing that passed was broken.
    assert_eq!(ac_status(&v, "AC-03")["status"], "covered");
    assert_eq!(v["coverage"]["critical_gaps"], json!(["AC-01", "AC-02"]));
    let md = report(&p);
    let ev = section(&md, "Acceptance criteria evidence");
    assert!(ev.contains("| AC-01 | **unverified** | none named; 'python3 -m unittest -v' passed at the base already | pass | pass | — |"), "{ev}");
    assert!(ev.contains("| AC-02 | **not covered** | test test_slug.TestSlugify.test_empty | absent | absent | — |"), "{ev}");
    println!(
        "--- comment-only agent ---\n{ev}\n\n{}",
        section(&md, "Pre-existing failures")
    );
}

const SLUG_JS: &str = "exports.trim = (s) => s.trim();\n";
const UTIL_TEST_JS: &str = "const test = require('node:test');\nconst assert = require('node:assert');\nconst { trim } = require('./slug.js');\ntest('trim strips', () => assert.equal(trim(' a '), 'a'));\n";

#[test]
fn an_early_finisher_completes_and_later_steps_are_already_satisfied() {
    let acs = json!([
        {"id": "AC-01", "given": "'Hello World'", "when": "`slugify` is called", "then": "'hello-world'",
         "check": "slugify lowercases and joins words"},
        {"id": "AC-02", "given": "''", "when": "`slugify('')` is called", "then": "''",
         "check": {"test": "slugify keeps the empty string"}},
        {"id": "AC-03", "given": "the README", "when": "read", "then": "it documents slugify",
         "check": {"command": "grep -q slugify README.md"}}
    ]);
    let p = project(
        &[
            ("slug.js", SLUG_JS),
            ("slug.test.js", UTIL_TEST_JS),
            ("README.md", "# slug\n"),
        ],
        &[
            ("S01", "slug.js", &["AC-01"]),
            ("S02", "slug.test.js", &["AC-02"]),
            ("S03", "README.md", &["AC-03"]),
        ],
        acs,
        "node --test",
    );
    // S01 does the whole feature: function, export, tests, docs. Later steps find
    // nothing to do.
    let agent = r#"[ "$1" = S01 ] || exit 0
cat >> slug.js <<'JS'
exports.slugify = (s) => s.trim().toLowerCase().split(/\s+/).filter(Boolean).join('-');
JS
cat >> slug.test.js <<'JS'
const { slugify } = require('./slug.js');
test('slugify lowercases and joins words', () => assert.equal(slugify('Hello World'), 'hello-world'));
test('slugify keeps the empty string', () => assert.equal(slugify(''), ''));
JS
echo 'Use `slugify(title)`.' >> README.md"#;
    let (code, v, stderr) = run(&p, agent);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(v["summary"]["goal_achieved"], true);
    assert_eq!(
        steps(&v),
        [
            ("S01".to_string(), "done".to_string(), Value::Null),
            (
                "S02".to_string(),
                "done".to_string(),
                json!("ALREADY_SATISFIED")
            ),
            (
                "S03".to_string(),
                "done".to_string(),
                json!("ALREADY_SATISFIED")
            )
        ]
    );
    let s01 = v["steps"][0]["commit"].as_str().unwrap().to_string();
    for ac in ["AC-01", "AC-02", "AC-03"] {
        let e = ac_status(&v, ac);
        assert_eq!(e["status"], "covered", "{ac}: {e:#}");
        // Credited to the commit that made it green.
        assert_eq!(e["green_step"], "S01", "{ac}");
        assert_eq!(e["green_commit"], s01, "{ac}");
    }
    assert_eq!(ac_status(&v, "AC-01")["base_result"], "absent");
    assert_eq!(ac_status(&v, "AC-03")["base_result"], "fail");
    let md = report(&p);
    let ev = section(&md, "Acceptance criteria evidence");
    println!(
        "--- early finisher ---\n{ev}\n\n{}",
        section(&md, "Pre-existing failures")
    );
    assert!(
        ev.contains(
            "| AC-02 | covered | test slugify keeps the empty string | absent | pass | S01 `"
        ),
        "{ev}"
    );
}

const CALC_PY: &str = "def add(a, b):\n    return a + b\n\n\ndef half(a):\n    return a // 2\n";
const TEST_CALC_PY: &str = "import unittest\n\nimport calc\n\n\nclass TestCalc(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(calc.add(1, 2), 3)\n\n    def test_half(self):\n        self.assertEqual(calc.half(3), 1.5)\n";

#[test]
fn a_red_baseline_is_not_blamed_on_a_readme_only_step() {
    let acs = json!([
        {"id": "AC-01", "given": "the README", "when": "read", "then": "it explains usage",
         "check": {"command": "grep -q Usage README.md"}},
        {"id": "AC-02", "given": "the README", "when": "read", "then": "it names add",
         "check": {"command": "grep -q 'add(a, b)' README.md"}},
        {"id": "AC-03", "given": "the tests", "when": "the change lands", "then": "nothing breaks",
         "type": "regression"}
    ]);
    let p = project(
        &[
            ("calc.py", CALC_PY),
            ("test_calc.py", TEST_CALC_PY),
            ("README.md", "# calc\n"),
        ],
        &[("S01", "README.md", &["AC-01", "AC-02", "AC-03"])],
        acs,
        "python3 -m unittest -v",
    );
    let (code, v, stderr) = run(
        &p,
        "printf '\\n## Usage\\n\\n`add(a, b)` adds.\\n' >> README.md",
    );
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(
        steps(&v),
        [("S01".to_string(), "done".to_string(), Value::Null)]
    );
    // No fix cycle: the failing test was already failing.
    assert_eq!(trace_count(&p.run_dir, "AUTOFIX"), 0);
    assert_eq!(
        v["evidence"]["preexisting_failures"],
        json!([{"command": "python3 -m unittest -v", "test": "test_calc.TestCalc.test_half"}])
    );
    for ac in ["AC-01", "AC-02", "AC-03"] {
        assert_eq!(ac_status(&v, ac)["status"], "covered", "{ac}");
    }
    let msg = git(
        &p.repo,
        &["log", "-1", "--format=%B", "dandori/RQ-20/run-20"],
    );
    assert!(
        msg.contains("Dandori-Check: unit exit=1 preexisting=1 python3 -m unittest -v"),
        "{msg}"
    );
    let md = report(&p);
    let pre = section(&md, "Pre-existing failures");
    assert!(
        pre.contains("| `test_calc.TestCalc.test_half` | `python3 -m unittest -v` |"),
        "{pre}"
    );
    println!(
        "--- red baseline, README-only ---\n{}\n\n{pre}",
        section(&md, "Acceptance criteria evidence")
    );
}

#[test]
fn a_step_that_breaks_a_base_passing_test_is_sent_to_autofix_for_its_regression() {
    let acs = json!([
        {"id": "AC-01", "given": "3", "when": "`half(3)` is called", "then": "it returns 1.5",
         "check": "test_calc.TestCalc.test_half"},
        {"id": "AC-02", "given": "1 and 2", "when": "`add(1, 2)` is called", "then": "3",
         "check": "test_calc.TestCalc.test_add_many"},
        {"id": "AC-03", "given": "the tests", "when": "the change lands", "then": "nothing breaks",
         "type": "regression"}
    ]);
    let p = project(
        &[("calc.py", CALC_PY), ("test_calc.py", TEST_CALC_PY)],
        &[("S01", "calc.py", &["AC-01", "AC-02", "AC-03"])],
        acs,
        "python3 -m unittest -v",
    );
    // The first attempt fixes half() but breaks add(); the fix attempt (its prompt
    // names the regression) repairs add() and adds the missing test.
    let agent = r#"if grep -q 'a - b' calc.py; then
  sed -i 's/a - b/a + b/' calc.py
  cat >> test_calc.py <<'PY'

    def test_add_many(self):
        self.assertEqual(calc.add(2, 2), 4)
PY
else
  sed -i 's|a // 2|a / 2|; s/a + b/a - b/' calc.py
fi"#;
    let (code, v, stderr) = run(&p, agent);
    assert_eq!(code, 0, "{v:#}\n{stderr}");
    assert_eq!(
        steps(&v),
        [("S01".to_string(), "done".to_string(), Value::Null)]
    );
    assert_eq!(trace_count(&p.run_dir, "AUTOFIX"), 1);
    let prompt = std::fs::read_to_string(p.run_dir.join("logs/step.S01.prompt.md")).unwrap();
    assert!(
        prompt.contains("Regressions (these tests passed on the base commit and fail after this step): test_calc.TestCalc.test_add"),
        "{prompt}"
    );
    assert!(
        prompt.contains("Already failing on the base commit (not yours, leave them): test_calc.TestCalc.test_half"),
        "{prompt}"
    );
    for ac in ["AC-01", "AC-02", "AC-03"] {
        assert_eq!(ac_status(&v, ac)["status"], "covered", "{ac}");
    }
    assert_eq!(ac_status(&v, "AC-01")["base_result"], "fail");
    let md = report(&p);
    println!(
        "--- regression, autofix ---\n{}\n\n{}",
        section(&md, "Acceptance criteria evidence"),
        section(&md, "Pre-existing failures")
    );
}

#[test]
fn a_working_agent_gives_a_heartbeat_with_its_last_line() {
    let p = project(
        &[("calc.py", CALC_PY), ("test_calc.py", TEST_CALC_PY)],
        &[("S01", "calc.py", &["AC-01", "AC-02", "AC-03"])],
        json!([
            {"id": "AC-01", "given": "3", "when": "`half(3)`", "then": "1.5", "check": "test_half"},
            {"id": "AC-02", "given": "g", "when": "w", "then": "t", "type": "regression"},
            {"id": "AC-03", "given": "g", "when": "w", "then": "t", "type": "nonfunctional"}
        ]),
        "python3 -m unittest -v",
    );
    // Progress lines go to stderr when the output is not --json.
    let (code, stdout, stderr) = run_with(
        &p,
        "echo \"thinking about $1\"\nsleep 11\nsed -i 's|a // 2|a / 2|' calc.py",
        &[],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("S01: agent working, 10s elapsed; last output: thinking about S01"),
        "{stderr}"
    );
}

/// Test-first through the real planner (issues 20 and 36): a behavioural
/// criterion with no test is proven by the step that makes it true, which
/// writes the criterion's test (named after it) with the change; not by a step
/// of its own, which an agent writing the whole feature at once would leave
/// with nothing to do. The test turning green credits the step; an agent that
/// only adds a comment proves nothing.
#[test]
fn the_step_writes_its_criterions_test_first_and_turns_it_green() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().canonicalize().unwrap().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "Test"]);
    git(&repo, &["config", "user.email", "test@example.invalid"]);
    for (path, text) in [
        ("calc/__init__.py", ""),
        ("calc/core.py", "def add(a, b):\n    return a + b\n"),
        ("tests/__init__.py", ""),
        (
            "tests/test_core.py",
            "import unittest\n\nfrom calc.core import add\n\n\nclass AddTest(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        ),
        (".gitignore", "__pycache__/\n.venv/\n"),
        (
            "requests/RQ-21.md",
            "# Double\n\nAdd a `double(x)` function to `calc/core.py`.\n\n## Acceptance criteria\n\n- Given 2, when `double(2)` is called, then it returns 4\n",
        ),
    ] {
        let p = repo.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let dandori = |args: &[&str]| {
        Command::new(BIN)
            .args(args)
            .current_dir(&repo)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let plan_once = || {
        let out = dandori(&["plan", "requests/RQ-21.md", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        PathBuf::from(v["run_dir"].as_str().unwrap())
    };
    let run_dir = plan_once();
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    let steps_v = planning["steps"].as_array().unwrap();
    assert_eq!(steps_v.len(), 1, "{planning:#}");
    assert_eq!(steps_v[0]["tdd_phase"], Value::Null);
    assert_eq!(
        steps_v[0]["links_to_ac"],
        json!(["AC-01", "AC-02", "AC-03"])
    );
    assert!(
        steps_v[0]["intent"]
            .as_str()
            .unwrap()
            .contains("`test_ac01_…` for AC-01"),
        "{}",
        steps_v[0]["intent"]
    );
    let targets = &steps_v[0]["scope"]["target_paths"];
    assert!(
        targets
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t == "calc/core.py")
            && targets
                .as_array()
                .unwrap()
                .iter()
                .any(|t| t.as_str().unwrap().starts_with("tests/")),
        "{targets}"
    );

    let agent = dir.path().join("agent.sh");
    let run = |run_dir: &Path, body: &str| {
        std::fs::write(&agent, format!("#!/bin/sh\nset -e\n{body}\n")).unwrap();
        let out = dandori(&[
            "run",
            run_dir.to_str().unwrap(),
            "--json",
            "--sandbox",
            "off",
            // pytest comes from the test tools on PATH; nothing to install.
            "-c",
            "planning.environment_setup.enabled=false",
            "--agent-cmd",
            &format!("sh {} {{step_id}}", agent.display()),
        ]);
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code().unwrap_or(-1), v)
    };
    let test_file = "cat > tests/test_double.py <<'PY'\nimport unittest\n\nfrom calc import core\n\n\nclass DoubleTest(unittest.TestCase):\n    def test_ac01_double_of_two(self):\n        self.assertEqual(core.double(2), 4)\nPY";
    let implement = "printf '\\n\\ndef double(x):\\n    return 2 * x\\n' >> calc/core.py";
    // An agent that writes the whole feature, its test included, at once.
    let (code, v) = run(&run_dir, &format!("{test_file}\n{implement}"));
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["summary"]["goal_achieved"], json!(true), "{v:#}");
    let ac = ac_status(&v, "AC-01");
    assert_eq!(ac["status"], json!("covered"), "{ac:#}");
    assert_eq!(ac["green_step"], json!("S01"), "{ac:#}");
    assert!(
        ac["check"]
            .as_str()
            .unwrap()
            .contains("test_ac01_double_of_two"),
        "{ac:#}"
    );
    assert_eq!(trace_count(&run_dir, "AUTOFIX"), 0);

    // An agent that only adds a comment: nothing proves AC-01.
    let run_dir = plan_once();
    let (code, v) = run(&run_dir, "echo '# tests to come' >> tests/test_core.py");
    assert_ne!(code, 0, "{v:#}");
    assert_eq!(v["summary"]["goal_achieved"], json!(false), "{v:#}");
    assert_ne!(ac_status(&v, "AC-01")["status"], json!("covered"), "{v:#}");
}
