//! A run of five steps and four acceptance criteria with every step status the
//! report shows: done (with tokens), failed, skipped, needs_input, and a follow-up
//! step that covered an unplanned criterion.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use dandori_plan::{Planning, StepStatus};
use dandori_report::{
    Completion, CompletionStatus, CoverageResult, FollowUp, StepMetrics, StepSummary, StepTiming,
    Summary, TokenUsage,
};
use serde_json::json;

pub struct Fixture {
    pub planning: Planning,
    pub completion: Completion,
    pub metrics: BTreeMap<String, StepMetrics>,
    pub timings: BTreeMap<String, StepTiming>,
    pub preds: Vec<BTreeSet<usize>>,
}

impl Fixture {
    pub fn input(&self) -> dandori_report::ReportInput<'_> {
        dandori_report::ReportInput {
            planning: &self.planning,
            completion: &self.completion,
            metrics: &self.metrics,
            timings: &self.timings,
            preds: &self.preds,
        }
    }
}

fn step_json(id: &str, title: &str, acs: &[&str], deps: &[&str]) -> serde_json::Value {
    json!({
        "step_id": id,
        "title": title,
        "role": "implementer",
        "intent": format!("do {id}"),
        "scope": {"target_paths": [format!("src/{id}")], "max_diff_lines": 100},
        "inputs": {"request_path": "requests/RQ-7.md"},
        "commands": {"unit": ["cargo test"]},
        "success_criteria": [format!("{id} works")],
        "links_to_ac": acs,
        "depends_on": deps,
        "expected_diff": {"lines_max": 100, "files_max": 5, "risk_level": "low"},
        "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
    })
}

pub fn planning() -> Planning {
    let v = json!({
        "version": "1.0",
        "request_id": "RQ-7",
        "run_id": "run-7",
        "created_at": "2026-01-01T00:00:00Z",
        "base_branch": "main",
        "work_branch": "dandori/RQ-7/run-7",
        "limits": {"max_diff_lines": 400, "timeout_sec": 60, "max_steps_per_run": 100, "max_autofix_cycles": 2},
        "context": {
            "summary": "Add a CSV export",
            "constraints": ["local_only"],
            "acceptance_criteria": [
                {"id": "AC-01", "given": "data", "when": "exported", "then": "a CSV file | with a header"},
                {"id": "AC-02", "given": "data", "when": "exported", "then": "tests pass"},
                {"id": "AC-03", "given": "a CSV", "when": "imported", "then": "rows round-trip"},
                {"id": "AC-04", "given": "docs", "when": "read", "then": "the export is documented"}
            ],
            "test_instructions": {"unit": "cargo test"}
        },
        "steps": [
            step_json("S01", "Write the \"csv\" module", &["AC-01"], &[]),
            step_json("S02", "Test the export", &["AC-02"], &["S01"]),
            step_json("S03", "Import rows", &["AC-03"], &["S02"]),
            step_json("S04", "Ask about the delimiter", &["AC-01"], &[]),
            step_json("S05", "Wire the CLI flag", &["AC-01"], &["S01"])
        ],
        "gates": {
            "require_clean_worktree": true,
            "require_work_branch": true,
            "require_unit_pass": true,
            "require_e2e_for_regression_ac": false,
            "forbid_gh": true,
            "max_step_too_large_retries": 1
        },
        "outputs": {"planning_json": "planning.json", "stage_json": "stage.json", "report_md": "report.md"}
    });
    match serde_json::from_value(v) {
        Ok(p) => p,
        Err(e) => panic!("fixture planning.json does not parse: {e}"),
    }
}

fn step(
    id: &str,
    title: &str,
    status: StepStatus,
    attempts: u32,
    commit: Option<&str>,
    reason: Option<(&str, &str)>,
    acs: &[&str],
) -> StepSummary {
    StepSummary {
        step_id: id.to_string(),
        title: title.to_string(),
        status,
        attempts,
        commit: commit.map(str::to_string),
        reason_code: reason.map(|r| r.0.to_string()),
        message: reason.map(|r| r.1.to_string()),
        links_to_ac: acs.iter().map(|s| s.to_string()).collect(),
    }
}

fn tokens(prompt: u64, completion: u64) -> TokenUsage {
    TokenUsage {
        prompt_tokens: prompt,
        completion_tokens: completion,
    }
}

fn timing(started_ms: u64, finished_ms: Option<u64>) -> StepTiming {
    StepTiming {
        started_at: format!("2026-01-01T00:00:{:02}Z", started_ms / 1000),
        finished_at: finished_ms.map(|f| format!("2026-01-01T00:00:{:02}Z", f / 1000)),
        started_ms,
        finished_ms,
    }
}

pub fn fixture() -> Fixture {
    let planning = planning();
    let steps = vec![
        step(
            "S01",
            "Write the \"csv\" module",
            StepStatus::Done,
            1,
            Some("0123456789abcdef0123456789abcdef01234567"),
            None,
            &["AC-01"],
        ),
        step(
            "S02",
            "Test the export",
            StepStatus::Failed,
            2,
            None,
            Some((
                "UNIT_TEST_FAILED",
                "unit commands failed after 2 fix cycles",
            )),
            &["AC-02"],
        ),
        step(
            "S03",
            "Import rows",
            StepStatus::Skipped,
            0,
            None,
            Some((
                "DEPENDENCY_FAILED",
                "depends on S02, which did not complete",
            )),
            &["AC-03"],
        ),
        step(
            "S04",
            "Ask about the delimiter",
            StepStatus::NeedsInput,
            1,
            None,
            Some(("APPROVAL_REQUIRED", "run_command needs approval")),
            &["AC-01"],
        ),
        step(
            "S05",
            "Wire the CLI flag",
            StepStatus::Done,
            1,
            Some("fedcba9876543210fedcba9876543210fedcba98"),
            None,
            &["AC-01"],
        ),
    ];
    let completion = Completion {
        phase: "completion",
        status: CompletionStatus::Failed,
        summary: Summary {
            goal_achieved: false,
            tasks_completed: 2,
            tasks_failed: 1,
            key_outcomes: vec!["S01 Write the \"csv\" module (0123456789)".to_string()],
            lessons_learned: vec![
                "S02 used 2 fix cycle(s) and its unit commands still fail".to_string(),
            ],
            revision_attempts: None,
            reason: Some("1 step(s) failed".to_string()),
            current_state: Some(
                "2 done, 1 failed, 1 waiting, 1 skipped, 0 pending of 5".to_string(),
            ),
            recommendations: vec!["S02: read logs/step.S02.unit.log".to_string()],
        },
        done: false,
        comment: "The run stopped with failures; see report.md and errors.json.".to_string(),
        request_id: "RQ-7".to_string(),
        run_id: "run-7".to_string(),
        run_dir: PathBuf::from("runs/RQ-7/run-7"),
        executor: "llm".to_string(),
        steps,
        follow_ups: vec![FollowUp {
            step_id: "S06".to_string(),
            ac: "AC-04".to_string(),
            status: StepStatus::Done,
            commit: Some("aaaaaaaaaabbbbbbbbbb".to_string()),
            reason_code: None,
            priority: "high".to_string(),
            suggested_tools: vec![],
        }],
        coverage: CoverageResult {
            overall_coverage: 0.5,
            critical_gaps: vec!["AC-02".to_string(), "AC-03".to_string()],
            optional_gaps: vec![],
            should_continue: true,
            recommended_action: "continue".to_string(),
            confidence_level: "high".to_string(),
            rules_applied: vec![],
        },
        tokens: tokens(1500, 300),
        environment: json!({}),
        evidence: serde_json::Value::Null,
        exit_code: 1,
    };
    let mut metrics = BTreeMap::new();
    metrics.insert(
        "S01".to_string(),
        StepMetrics {
            diff_lines: 42,
            unit_passed: Some(true),
            autofix_cycles: 0,
            tokens: tokens(1000, 200),
        },
    );
    metrics.insert(
        "S02".to_string(),
        StepMetrics {
            diff_lines: 17,
            unit_passed: Some(false),
            autofix_cycles: 2,
            tokens: tokens(500, 100),
        },
    );
    metrics.insert(
        "S04".to_string(),
        StepMetrics {
            diff_lines: 0,
            unit_passed: None,
            autofix_cycles: 0,
            tokens: tokens(0, 0),
        },
    );
    metrics.insert(
        "S05".to_string(),
        StepMetrics {
            diff_lines: 3,
            unit_passed: None,
            autofix_cycles: 0,
            tokens: tokens(0, 0),
        },
    );
    let mut timings = BTreeMap::new();
    timings.insert("S01".to_string(), timing(120, Some(2_620)));
    timings.insert("S02".to_string(), timing(2_700, Some(9_950)));
    timings.insert("S04".to_string(), timing(150, Some(150)));
    timings.insert("S05".to_string(), timing(2_650, Some(4_000)));
    let preds = vec![
        BTreeSet::new(),
        BTreeSet::from([0]),
        BTreeSet::from([1]),
        BTreeSet::new(),
        BTreeSet::from([0]),
    ];
    Fixture {
        planning,
        completion,
        metrics,
        timings,
        preds,
    }
}
