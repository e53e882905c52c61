//! `dandori metrics` over generated run histories whose every figure is known:
//! the real binary, text and JSON, `--since`, prices from the config, an unpriced
//! model, a broken run directory, and a missing runs root.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::run_llm::dandori;

/// One trace event line.
fn ev(event: &str, ts: &str, data: Value) -> String {
    json!({"event": event, "timestamp": ts, "session_id": "run", "task_id": "RQ",
        "data": data})
    .to_string()
}

/// Writes `<root>/<request>/<run>/{planning,stage}.json` and `trace.jsonl`.
fn write_run(
    root: &Path,
    run: &str,
    created: &str,
    steps: &[&str],
    stage: Option<Value>,
    events: &[String],
) {
    let dir = root.join("RQ").join(run);
    std::fs::create_dir_all(&dir).unwrap();
    let planning = json!({"version": "1.0", "request_id": "RQ", "run_id": run,
        "created_at": created,
        "steps": steps.iter().map(|s| json!({"id": s})).collect::<Vec<_>>()});
    std::fs::write(dir.join("planning.json"), planning.to_string()).unwrap();
    if let Some(stage) = stage {
        std::fs::write(dir.join("stage.json"), stage.to_string()).unwrap();
    }
    std::fs::write(dir.join("trace.jsonl"), events.join("\n") + "\n").unwrap();
}

fn stage(steps: &[(&str, &str, u32)], revisions: Option<u32>) -> Value {
    let mut v = json!({"version": "1.0", "request_id": "RQ", "run_id": "x",
        "current_step_index": 0, "status": "done", "created_at": "", "updated_at": "",
        "steps": steps.iter().map(|(id, st, attempts)|
            json!({"step_id": id, "status": st, "attempts": attempts})).collect::<Vec<_>>()});
    if let Some(r) = revisions {
        v["revisions"] = json!(r);
    }
    v
}

fn llm_call(
    ts: &str,
    step: Option<&str>,
    purpose: &str,
    model: &str,
    io: (u64, u64),
    ms: u64,
) -> String {
    let mut d = json!({"purpose": purpose, "model": model, "started_at": ts, "duration_ms": ms,
        "ok": true, "usage": {"prompt_tokens": io.0, "completion_tokens": io.1}});
    if let Some(s) = step {
        d["step_id"] = json!(s);
    }
    ev("LLM_CALL", ts, d)
}

fn step_end(ts: &str, step: &str, status: &str, diff: u64, splits: u64, autofix: u64) -> String {
    ev(
        "STEP_END",
        ts,
        json!({"step_id": step, "status": status, "diff_lines": diff, "splits": splits,
            "autofix_cycles": autofix}),
    )
}

/// Three runs with known answers (see the comments), plus a broken one.
fn history(root: &Path) {
    // Run A (M, 4 steps): planning 2 s, env 5 s, execution 100 s; S1 first try; S2
    // retried after a failed tool call; S3 revised by a reflection (3 s reflection
    // call); S4 failed its unit test. stage.json: 1 revision.
    let a = [
        ev(
            "PLANNING_START",
            "2026-01-10T09:59:00.000Z",
            json!({"planner": "llm"}),
        ),
        ev(
            "SIZE_ESTIMATION",
            "2026-01-10T09:59:00.500Z",
            json!({"size_category": "M"}),
        ),
        llm_call(
            "2026-01-10T09:59:00.100Z",
            None,
            "planning",
            "m1",
            (1000, 200),
            1500,
        ),
        ev(
            "DEPENDENCY_ANALYSIS",
            "2026-01-10T09:59:01.000Z",
            json!({"subtasks": []}),
        ),
        ev(
            "PLANNING_END",
            "2026-01-10T09:59:02.000Z",
            json!({"duration_ms": 2000}),
        ),
        ev(
            "EXECUTION_START",
            "2026-01-10T10:00:00.000Z",
            json!({"steps": 4}),
        ),
        ev(
            "GATE_CHECK",
            "2026-01-10T10:00:01.000Z",
            json!({"gate": "g", "passed": true}),
        ),
        ev(
            "ENVIRONMENT_SETUP",
            "2026-01-10T10:00:06.000Z",
            json!({"status": "success"}),
        ),
        ev(
            "STEP_START",
            "2026-01-10T10:00:07.000Z",
            json!({"step_id": "S1", "attempt": 1}),
        ),
        llm_call(
            "2026-01-10T10:00:08.000Z",
            Some("S1"),
            "execution",
            "m1",
            (100, 50),
            1000,
        ),
        ev(
            "TOOL_CALL",
            "2026-01-10T10:00:09.000Z",
            json!({"step_id": "S1", "tool": "read_file", "ok": true}),
        ),
        ev(
            "STEP_ACTION",
            "2026-01-10T10:00:10.000Z",
            json!({"step_id": "S1", "executor": "llm", "ok": true}),
        ),
        step_end("2026-01-10T10:00:11.000Z", "S1", "done", 10, 0, 0),
        ev(
            "TOOL_CALL",
            "2026-01-10T10:00:12.000Z",
            json!({"step_id": "S2", "tool": "write_file", "ok": false}),
        ),
        step_end("2026-01-10T10:00:20.000Z", "S2", "done", 30, 0, 0),
        llm_call(
            "2026-01-10T10:00:21.000Z",
            Some("S3"),
            "reflection",
            "m1",
            (200, 20),
            3000,
        ),
        ev(
            "REFLECTION",
            "2026-01-10T10:00:25.000Z",
            json!({"step_id": "S3",
            "reflection": {"status": "partial_success", "plan_revision_needed": true}}),
        ),
        step_end("2026-01-10T10:00:30.000Z", "S3", "done", 20, 0, 0),
        ev(
            "UNIT_TEST",
            "2026-01-10T10:00:40.000Z",
            json!({"step_id": "S4", "exit_code": 1, "timed_out": false}),
        ),
        step_end("2026-01-10T10:00:50.000Z", "S4", "failed", 0, 0, 0),
        ev(
            "EXECUTION_END",
            "2026-01-10T10:01:40.000Z",
            json!({"status": "partial"}),
        ),
    ];
    write_run(
        root,
        "run-a",
        "2026-01-10T09:59:00.000Z",
        &["S1", "S2", "S3", "S4"],
        Some(stage(
            &[
                ("S1", "done", 1),
                ("S2", "done", 2),
                ("S3", "done", 1),
                ("S4", "failed", 1),
            ],
            Some(1),
        )),
        &a,
    );
    // Run B (S, 2 steps): planning 4 s, execution 50 s (resumed once: 20 s + 30 s); S1
    // split (and a reflection asking for a revision); S2 needed one autofix after a
    // failed unit test. stage.json without `revisions`: the reflection counts.
    let b = [
        ev(
            "PLANNING_START",
            "2026-02-01T10:59:00.000Z",
            json!({"planner": "offline"}),
        ),
        ev(
            "SIZE_ESTIMATION",
            "2026-02-01T10:59:01.000Z",
            json!({"size_category": "S"}),
        ),
        ev(
            "PLANNING_END",
            "2026-02-01T10:59:04.000Z",
            json!({"duration_ms": 4000}),
        ),
        ev(
            "EXECUTION_START",
            "2026-02-01T11:00:00.000Z",
            json!({"steps": 2}),
        ),
        ev(
            "EXECUTION_END",
            "2026-02-01T11:00:20.000Z",
            json!({"status": "interrupted"}),
        ),
        ev(
            "EXECUTION_RESUME",
            "2026-02-01T12:00:00.000Z",
            json!({"steps": 2}),
        ),
        llm_call(
            "2026-02-01T12:00:01.000Z",
            Some("S1"),
            "execution",
            "m2",
            (300, 100),
            2000,
        ),
        ev(
            "REFLECTION",
            "2026-02-01T12:00:02.000Z",
            json!({"step_id": "S1",
            "plan_revision": {"add": ["S1b"]}}),
        ),
        step_end("2026-02-01T12:00:05.000Z", "S1", "done", 5, 1, 0),
        ev(
            "UNIT_TEST",
            "2026-02-01T12:00:10.000Z",
            json!({"step_id": "S2", "exit_code": 1}),
        ),
        ev(
            "UNIT_TEST",
            "2026-02-01T12:00:15.000Z",
            json!({"step_id": "S2", "exit_code": 0}),
        ),
        step_end("2026-02-01T12:00:20.000Z", "S2", "done", 15, 0, 1),
        ev(
            "EXECUTION_END",
            "2026-02-01T12:00:30.000Z",
            json!({"status": "completed"}),
        ),
    ];
    write_run(
        root,
        "run-b",
        "2026-02-01T10:59:00.000Z",
        &["S1", "S2"],
        Some(stage(&[("S1", "done", 1), ("S2", "done", 1)], None)),
        &b,
    );
    // Run C (L, 3 steps): planned only, 1 s.
    let c = [
        ev(
            "PLANNING_START",
            "2026-03-01T08:00:00.000Z",
            json!({"planner": "offline"}),
        ),
        ev(
            "SIZE_ESTIMATION",
            "2026-03-01T08:00:00.100Z",
            json!({"size_category": "L"}),
        ),
        ev(
            "PLANNING_END",
            "2026-03-01T08:00:01.000Z",
            json!({"duration_ms": 1000}),
        ),
    ];
    write_run(
        root,
        "run-c",
        "2026-03-01T08:00:00.000Z",
        &["S1", "S2", "S3"],
        Some(stage(
            &[
                ("S1", "pending", 0),
                ("S2", "pending", 0),
                ("S3", "pending", 0),
            ],
            None,
        )),
        &c,
    );
    // A broken run directory: reported, not fatal.
    let d = root.join("RQ").join("run-d");
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("planning.json"), "{not json").unwrap();
}

fn measure<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["measures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == json!(name))
        .unwrap_or_else(|| panic!("no measure {name} in {m:#}"))
}

fn close(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - want).abs() < 1e-6, "got {got}, want {want}");
}

fn phase<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["phase"] == json!(name))
        .unwrap()
}

fn run_metrics(root: &Path, home: &Path, extra: &[&str]) -> (Value, String) {
    let root_s = root.to_str().unwrap();
    let mut args = vec!["metrics", "--runs-root", root_s];
    args.extend_from_slice(extra);
    let mut json_args = args.clone();
    json_args.push("--json");
    let out = dandori(&json_args, home, home, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = dandori(&args, home, home, &[]);
    assert!(
        text.status.success(),
        "{}",
        String::from_utf8_lossy(&text.stderr)
    );
    (
        serde_json::from_slice(&out.stdout).unwrap(),
        String::from_utf8(text.stdout).unwrap(),
    )
}

#[test]
fn metrics_over_generated_histories_match_the_known_answers() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("runs");
    history(&root);
    let config = home.path().join("prices.yaml");
    std::fs::write(
        &config,
        "llm:\n  pricing:\n    m1: {input_usd_per_mtok: 2.0, output_usd_per_mtok: 10.0}\n    m2: {input_usd_per_mtok: 1.0, output_usd_per_mtok: 4.0}\n",
    )
    .unwrap();
    let (m, text) = run_metrics(&root, home.path(), &["--config", config.to_str().unwrap()]);

    assert_eq!(m["runs"], json!(3));
    assert_eq!(m["executed_runs"], json!(2));
    assert_eq!(m["tasks"], json!(6));
    assert_eq!(m["skipped"].as_array().unwrap().len(), 1, "{m:#}");
    // (name, value, numerator, denominator, met)
    let ratios: [(&str, f64, f64, f64, Option<bool>); 6] = [
        ("planning_accuracy", 0.5, 3.0, 6.0, Some(false)),
        ("revision_rate", 2.0 / 6.0, 2.0, 6.0, Some(false)),
        ("task_completion_rate", 5.0 / 6.0, 5.0, 6.0, Some(false)),
        ("first_try_success_rate", 1.0 / 6.0, 1.0, 6.0, Some(false)),
        ("error_recovery_rate", 2.0 / 3.0, 2.0, 3.0, Some(false)),
        ("subtask_count_fit", 1.0 / 3.0, 1.0, 3.0, None),
    ];
    for (name, value, num, den, met) in ratios {
        let x = measure(&m, name);
        close(&x["value"], value);
        close(&x["numerator"], num);
        close(&x["denominator"], den);
        assert_eq!(x["met"], json!(met), "{name}");
        assert_eq!(x["status"], json!("ok"), "{name}");
    }
    let targets = [
        ("planning_accuracy", "80%"),
        ("revision_rate", "<30%"),
        ("avg_revisions", "<1.5"),
        ("task_completion_rate", ">90%"),
        ("first_try_success_rate", ">70%"),
        ("error_recovery_rate", ">80%"),
    ];
    for (name, t) in targets {
        assert_eq!(measure(&m, name)["target"], json!(t), "{name}");
    }
    let avg = measure(&m, "avg_revisions");
    close(&avg["value"], 1.0);
    assert_eq!(avg["met"], json!(true));
    // CV of [10, 30, 20] and of [5, 15], averaged.
    let cv_a = (200.0f64 / 3.0).sqrt() / 20.0;
    close(
        &measure(&m, "subtask_granularity_cv")["value"],
        (cv_a + 0.5) / 2.0,
    );
    close(&measure(&m, "planning_time")["value"], 7.0 / 3.0);
    close(&measure(&m, "execution_time")["value"], 75.0);
    close(&measure(&m, "reflection_time")["value"], 1.5);
    close(&measure(&m, "total_time")["value"], 78.0);
    close(&measure(&m, "llm_calls")["value"], 4.0);
    close(&measure(&m, "tokens_used")["value"], 1970.0);
    close(&measure(&m, "api_cost")["value"], 0.006);
    for name in [
        "dependency_accuracy",
        "syntax_error_rate",
        "test_coverage",
        "review_findings",
    ] {
        let x = measure(&m, name);
        assert_eq!(x["status"], json!("not_recorded"), "{name}");
        assert_eq!(x["value"], Value::Null, "{name}");
    }
    // Per-phase breakdowns.
    let p = phase(&m, "planning");
    assert_eq!(
        (p["runs"].clone(), p["llm_calls"].clone()),
        (json!(3), json!(1))
    );
    assert_eq!(
        (p["input_tokens"].clone(), p["output_tokens"].clone()),
        (json!(1000), json!(200))
    );
    close(&p["total_seconds"], 7.0);
    close(&p["cost_usd"], 0.004);
    let e = phase(&m, "execution");
    assert_eq!(
        (
            e["llm_calls"].clone(),
            e["input_tokens"].clone(),
            e["output_tokens"].clone()
        ),
        (json!(2), json!(400), json!(150))
    );
    close(&e["total_seconds"], 150.0);
    close(&e["cost_usd"], 0.0014);
    let r = phase(&m, "reflection");
    assert_eq!(
        (r["llm_calls"].clone(), r["input_tokens"].clone()),
        (json!(1), json!(200))
    );
    close(&r["total_seconds"], 3.0);
    close(&r["cost_usd"], 0.0006);
    let env = phase(&m, "environment_setup");
    assert_eq!(env["runs"], json!(1));
    close(&env["total_seconds"], 5.0);
    assert_eq!(m["models"]["m2"]["llm_calls"], json!(1));

    // The same figures in the text form.
    for line in [
        "3 run(s) under",
        "(2 executed, 6 task(s))",
        "planning_accuracy        50.0% (3/6)",
        "target 80%: NOT met",
        "revision_rate            33.3% (2/6)",
        "avg_revisions            1.00                 target <1.5: met",
        "task_completion_rate     83.3% (5/6)",
        "first_try_success_rate   16.7% (1/6)",
        "error_recovery_rate      66.7% (2/3)",
        "planning_time            2.3 s",
        "execution_time           75.0 s",
        "reflection_time          1.5 s",
        "total_time               78.0 s",
        "llm_calls                4",
        "tokens_used              1970",
        "input 1600, output 370",
        "api_cost                 $0.0060",
        "dependency_accuracy      not recorded",
        "test_coverage            not recorded",
        "skipped ",
        "Planning accuracy",
        "Success rate",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // Group headings are titles, not seed section numbers (those stay in JSON).
    assert!(!text.contains('§'), "{text}");
    assert_eq!(m["measures"][0]["section"], json!("16.1.1"));
    assert!(
        text.lines().any(|l| l.trim_start().starts_with("planning ")
            && l.contains("7.0 s total")
            && l.contains("1000 in")
            && l.contains("$0.0040")),
        "{text}"
    );
}

#[test]
fn since_filters_runs_and_a_missing_price_is_not_a_made_up_cost() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("runs");
    history(&root);
    let config = home.path().join("prices.yaml");
    std::fs::write(
        &config,
        "llm:\n  pricing:\n    m1: {input_usd_per_mtok: 2.0, output_usd_per_mtok: 10.0}\n",
    )
    .unwrap();
    let cfg = config.to_str().unwrap();
    let (m, text) = run_metrics(
        &root,
        home.path(),
        &["--since", "2026-01-15", "--config", cfg],
    );
    assert_eq!(m["runs"], json!(2), "runs B and C");
    assert_eq!(m["tasks"], json!(2));
    close(&measure(&m, "task_completion_rate")["value"], 1.0);
    assert_eq!(measure(&m, "task_completion_rate")["met"], json!(true));
    close(&measure(&m, "planning_accuracy")["value"], 0.5);
    let cost = measure(&m, "api_cost");
    assert_eq!(cost["status"], json!("not_recorded"));
    assert!(cost["note"].as_str().unwrap().contains("m2"), "{cost}");
    assert!(
        text.contains("api_cost                 not recorded"),
        "{text}"
    );

    // Without prices: not recorded either; RFC 3339 --since works too.
    let (m, _) = run_metrics(&root, home.path(), &["--since", "2026-02-15T00:00:00Z"]);
    assert_eq!(m["runs"], json!(1));
    assert_eq!(m["executed_runs"], json!(0));
    assert_eq!(measure(&m, "planning_accuracy")["status"], json!("no_data"));
    assert_eq!(measure(&m, "api_cost")["status"], json!("not_recorded"));
}

#[test]
fn bad_since_and_missing_root_are_clear_errors() {
    let home = tempfile::tempdir().unwrap();
    let root = home.path().join("runs");
    history(&root);
    let out = dandori(
        &[
            "metrics",
            "--runs-root",
            root.to_str().unwrap(),
            "--since",
            "last tuesday",
        ],
        home.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SINCE_INVALID"));
    let missing = home.path().join("nowhere");
    let out = dandori(
        &["metrics", "--runs-root", missing.to_str().unwrap()],
        home.path(),
        home.path(),
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("RUNS_ROOT_MISSING") && err.contains("nowhere"),
        "{err}"
    );
}
