//! report.md: the whole document as a snapshot, and its parts checked line by line.

use dandori_plan::StepStatus;
use dandori_report::{StepTiming, TokenUsage, render};
use pretty_assertions::assert_eq;

use super::fixture::fixture;

fn section<'a>(report: &'a str, heading: &str) -> Vec<&'a str> {
    report
        .lines()
        .skip_while(|l| *l != heading)
        .skip(1)
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn whole_report_snapshot() {
    let f = fixture();
    insta::assert_snapshot!("report_md", render(&f.input()));
}

#[test]
fn rendering_is_pure_and_deterministic() {
    let f = fixture();
    assert_eq!(render(&f.input()), render(&f.input()));
}

#[test]
fn header_has_status_exit_code_tokens_and_coverage() {
    let f = fixture();
    let r = render(&f.input());
    let header: Vec<&str> = r.lines().filter(|l| l.starts_with("- **")).collect();
    assert_eq!(
        header,
        vec![
            "- **Status:** failed (exit code 1)",
            "- **Goal achieved:** false",
            "- **Steps:** 2 done, 1 failed of 5",
            "- **Executor:** llm",
            "- **Branches:** `main` → `dandori/RQ-7/run-7`",
            "- **Tokens:** 1500 prompt + 300 completion",
            "- **AC coverage:** 50% (confidence high)",
            "- **Reason:** 1 step(s) failed",
        ]
    );
}

#[test]
fn acceptance_criteria_link_steps_and_commits() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Acceptance criteria"),
        vec![
            "| AC | Then | Steps | Commits | Covered |",
            "|---|---|---|---|---|",
            // a `|` in a cell is escaped; only done steps contribute commits
            "| AC-01 | a CSV file \\| with a header | S01 (done), S04 (needs_input), S05 (done) | `0123456789`, `fedcba9876` | yes |",
            "| AC-02 | tests pass | S02 (failed) | — | **no** |",
            "| AC-03 | rows round-trip | S03 (skipped) | — | **no** |",
            // covered by a follow-up step created for an unplanned criterion,
            // with its priority (seed 001 §10.6)
            "| AC-04 | the export is documented | S06 (done, high priority) | `aaaaaaaaaa` | yes |",
        ]
    );
}

/// Issue 36: a done step linking a criterion is not evidence of it. With the
/// runner's per-criterion evidence, the table says what that evidence says,
/// and why a criterion is not covered.
#[test]
fn criteria_are_covered_only_by_their_own_evidence() {
    let mut f = fixture();
    f.completion.evidence = serde_json::json!({"acceptance_criteria": [
        {"ac": "AC-01", "status": "covered", "check": "command `grep -q csv x.py`",
         "base_result": "exit 1", "after_result": "exit 0"},
        {"ac": "AC-02", "status": "unverified",
         "check": "none named; `pytest` passed at the base already",
         "base_result": "pass", "after_result": "pass"},
        {"ac": "AC-03", "status": "not_covered", "check": "test test_roundtrip",
         "base_result": "absent", "after_result": "fail"},
        {"ac": "AC-04", "status": "unverified", "check": "",
         "base_result": "", "after_result": ""}
    ]});
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Acceptance criteria"),
        vec![
            "| AC | Then | Steps | Commits | Covered |",
            "|---|---|---|---|---|",
            "| AC-01 | a CSV file \\| with a header | S01 (done), S04 (needs_input), S05 (done) | `0123456789`, `fedcba9876` | yes |",
            "| AC-02 | tests pass | S02 (failed) | — | **no**: unverified (none named; `pytest` passed at the base already) |",
            "| AC-03 | rows round-trip | S03 (skipped) | — | **no**: not covered (test test_roundtrip: fail) |",
            // Its follow-up is done, but nothing of its own proves it.
            "| AC-04 | the export is documented | S06 (done, high priority) | `aaaaaaaaaa` | **no**: unverified (no check of its own) |",
        ]
    );
}

#[test]
fn steps_table_shows_status_timings_and_measurements() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Steps"),
        vec![
            "| Step | Title | Status | Attempts | Commit | Diff lines | Unit | Fix cycles | Duration | Reason |",
            "|---|---|---|---|---|---|---|---|---|---|",
            "| S01 | Write the \"csv\" module | done | 1 | `0123456789` | 42 | pass | 0 | 2.5 s |  |",
            "| S02 | Test the export | failed | 2 | — | 17 | fail | 2 | 7.2 s | UNIT_TEST_FAILED |",
            "| S03 | Import rows | skipped | 0 | — | — | — | — | — | DEPENDENCY_FAILED |",
            "| S04 | Ask about the delimiter | needs_input | 1 | — | 0 | — | 0 | 0.0 s | APPROVAL_REQUIRED |",
            "| S05 | Wire the CLI flag | done | 1 | `fedcba9876` | 3 | — | 0 | 1.4 s |  |",
        ]
    );
}

#[test]
fn tokens_by_step_list_the_steps_that_used_a_model() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Tokens"),
        vec![
            "| Step | Prompt | Completion | Total |",
            "|---|---|---|---|",
            "| S01 | 1000 | 200 | 1200 |",
            "| S02 | 500 | 100 | 600 |",
            "| run | 1500 | 300 | 1800 |",
        ]
    );
}

#[test]
fn no_tokens_section_when_no_step_used_a_model() {
    let mut f = fixture();
    for m in f.metrics.values_mut() {
        m.tokens = TokenUsage::default();
    }
    f.completion.tokens = TokenUsage::default();
    let r = render(&f.input());
    assert!(!r.contains("## Tokens"), "{r}");
    assert!(r.contains("- **Tokens:** 0 prompt + 0 completion"), "{r}");
}

#[test]
fn mermaid_dag_has_every_step_with_its_status_and_every_edge() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Dependency graph"),
        vec![
            "```mermaid",
            "graph TD",
            "    S01[\"S01: Write the 'csv' module\"]:::done",
            "    S02[\"S02: Test the export\"]:::failed",
            "    S03[\"S03: Import rows\"]:::skipped",
            "    S04[\"S04: Ask about the delimiter\"]:::needs_input",
            "    S05[\"S05: Wire the CLI flag\"]:::done",
            "    S01 --> S02",
            "    S02 --> S03",
            "    S01 --> S05",
            "    classDef done fill:#d4edda;",
            "    classDef failed fill:#f8d7da;",
            "    classDef skipped fill:#eeeeee;",
            "    classDef needs_input fill:#fff3cd;",
            "    classDef pending fill:#ffffff;",
            "    classDef running fill:#cce5ff;",
            "```",
        ]
    );
}

#[test]
fn gantt_uses_the_real_timings_and_skips_steps_that_never_started() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Timeline"),
        vec![
            "```mermaid",
            "gantt",
            "    dateFormat x",
            "    axisFormat %M:%S",
            "    title Steps as they ran (time since the run started)",
            "    S01 : done, S01, 120, 2620",
            "    S02 : crit, S02, 2700, 9950",
            // a zero-length span is drawn one millisecond long
            "    S04 : S04, 150, 151",
            "    S05 : done, S05, 2650, 4000",
            "```",
            "Patches: `patches/Sxx.patch`. Logs: `logs/step.Sxx.*`. Trace: `trace.jsonl`.",
        ]
    );
}

#[test]
fn a_running_step_without_an_end_is_active_in_the_gantt() {
    let mut f = fixture();
    f.completion.steps[2].status = StepStatus::Running;
    f.timings.insert(
        "S03".to_string(),
        StepTiming {
            started_at: "2026-01-01T00:00:10Z".to_string(),
            finished_at: None,
            started_ms: 10_000,
            finished_ms: None,
        },
    );
    let r = render(&f.input());
    assert!(r.contains("\n    S03 : active, S03, 10000, 10001\n"), "{r}");
    assert!(
        r.contains("| S03 | Import rows | running | 0 | — | — | — | — | — |"),
        "{r}"
    );
}

#[test]
fn next_actions_and_lessons_are_listed() {
    let f = fixture();
    let r = render(&f.input());
    assert_eq!(
        section(&r, "## Next actions"),
        vec!["- S02: read logs/step.S02.unit.log"]
    );
    assert_eq!(
        section(&r, "## Lessons learned"),
        vec!["- S02 used 2 fix cycle(s) and its unit commands still fail"]
    );
}
