//! Hand-written plans (`planning.json`) for tests that run a plan without a
//! planner: steps writing under `src/<id>`, checked by a unit command.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// A step that writes the files of `src/<id>`, checked by `unit`, after `deps`;
/// it links the three criteria of [`planning`].
pub fn step(id: &str, unit: &str, deps: &[&str]) -> Value {
    json!({
        "step_id": id, "title": format!("Write {id}"), "role": "implementer",
        "intent": format!("Write the files of {id}"),
        "scope": {"target_paths": [format!("src/{id}")], "max_diff_lines": 100},
        "inputs": {"request_path": "requests/request.md"},
        "commands": {"unit": [unit]},
        "success_criteria": ["files exist"],
        "links_to_ac": ["AC-01", "AC-02", "AC-03"],
        "depends_on": deps,
        "expected_diff": {"lines_max": 100, "files_max": 5, "risk_level": "low"},
        "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
    })
}

/// Plan `request_id` / `run_id` (work branch `dandori/<request>/<run>`) of
/// `steps`, with three acceptance criteria, one fix attempt per step and
/// `timeout_sec` for the agent of each step.
pub fn planning(request_id: &str, run_id: &str, steps: Vec<Value>, timeout_sec: u64) -> Value {
    json!({
        "version": "1.0", "request_id": request_id, "run_id": run_id,
        "created_at": "2026-01-01T00:00:00Z", "base_branch": "main",
        "work_branch": format!("dandori/{request_id}/{run_id}"),
        "limits": {"max_diff_lines": 100, "timeout_sec": timeout_sec, "max_steps_per_run": 10, "max_autofix_cycles": 1},
        "context": {
            "summary": "Write files", "constraints": [],
            "acceptance_criteria": [
                {"id": "AC-01", "given": "g", "when": "w", "then": "t1"},
                {"id": "AC-02", "given": "g", "when": "w", "then": "t2"},
                {"id": "AC-03", "given": "g", "when": "w", "then": "t3"}
            ],
            "test_instructions": {}
        },
        "steps": steps,
        "gates": {"require_clean_worktree": true, "require_work_branch": true, "require_unit_pass": true,
                  "require_e2e_for_regression_ac": false, "forbid_gh": true, "max_step_too_large_retries": 1},
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    })
}

/// Writes `plan` into its run directory of `repo` (`.dandori/runs/<request>/<run>`,
/// ignored by git) and returns the directory.
pub fn write_plan(repo: &Path, plan: &Value) -> PathBuf {
    let id = |k: &str| {
        plan[k]
            .as_str()
            .unwrap_or_else(|| panic!("the plan has no {k}"))
    };
    let run_dir = repo.join(format!(
        ".dandori/runs/{}/{}",
        id("request_id"),
        id("run_id")
    ));
    let write = |p: &Path, text: &str| {
        if let Some(d) = p.parent() {
            std::fs::create_dir_all(d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
        }
        std::fs::write(p, text).unwrap_or_else(|e| panic!("writing {}: {e}", p.display()));
    };
    write(&repo.join(".dandori/.gitignore"), "*\n");
    let text = serde_json::to_string_pretty(plan).unwrap_or_else(|e| panic!("the plan: {e}"));
    write(&run_dir.join("planning.json"), &text);
    run_dir
}
