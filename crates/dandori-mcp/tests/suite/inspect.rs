//! Reading runs back: `--since` parsing, trace filters, listing.

use chrono::{TimeZone, Utc};
use dandori_mcp::inspect::{self, TraceFilter};
use dandori_trace::TraceEvent;
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn since_takes_times_and_durations() {
    let now = Utc.with_ymd_and_hms(2026, 1, 2, 12, 0, 0).unwrap();
    let at = |s: &str| inspect::parse_since(s, now).unwrap().to_rfc3339();
    assert_eq!(at("15m"), "2026-01-02T11:45:00+00:00");
    assert_eq!(at("2h"), "2026-01-02T10:00:00+00:00");
    assert_eq!(at("1d"), "2026-01-01T12:00:00+00:00");
    assert_eq!(at("2026-01-02T11:00:00Z"), "2026-01-02T11:00:00+00:00");
    for bad in ["", "m", "5y", "yesterday", "-5m"] {
        let e = inspect::parse_since(bad, now).unwrap_err();
        assert_eq!(e.code(), "ARGUMENT_INVALID", "{bad}");
    }
}

fn ev(event: &str, ts: &str, step: Option<&str>) -> TraceEvent {
    TraceEvent {
        event: event.to_string(),
        visibility: None,
        timestamp: ts.to_string(),
        session_id: "r".to_string(),
        task_id: "t".to_string(),
        data: match step {
            Some(s) => json!({"step_id": s}),
            None => json!({}),
        },
    }
}

#[test]
fn trace_filters_combine() {
    let events = [
        ev("STEP_START", "2026-01-01T00:00:00Z", Some("S01")),
        ev("UNIT_TEST", "2026-01-01T00:00:01Z", Some("S01")),
        ev("STEP_END", "2026-01-01T00:00:02Z", Some("S02")),
        ev("EXECUTION_END", "2026-01-01T00:00:03Z", None),
    ];
    let pick = |f: &TraceFilter| -> Vec<String> {
        events
            .iter()
            .filter(|e| f.matches(e))
            .map(|e| e.event.clone())
            .collect()
    };
    assert_eq!(pick(&TraceFilter::default()).len(), 4);
    let by_step = TraceFilter {
        step: Some("S01".into()),
        ..TraceFilter::default()
    };
    assert_eq!(pick(&by_step), ["STEP_START", "UNIT_TEST"]);
    let by_event = TraceFilter {
        events: vec!["step_end".into(), "unit_test".into()],
        ..TraceFilter::default()
    };
    assert_eq!(pick(&by_event), ["UNIT_TEST", "STEP_END"]);
    let since = TraceFilter {
        since: Some(Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 2).unwrap()),
        ..TraceFilter::default()
    };
    assert_eq!(pick(&since), ["STEP_END", "EXECUTION_END"]);
    let line = inspect::trace_line(&events[1]);
    assert!(line.contains("UNIT_TEST") && line.contains("S01"), "{line}");
}

#[test]
fn listing_skips_non_runs_and_marks_unreadable_ones() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    assert!(inspect::list_runs(&root.join("absent")).unwrap().is_empty());
    std::fs::create_dir_all(root.join("RQ-1/20260101-000000-aaaaaa")).unwrap();
    std::fs::write(
        root.join("RQ-1/20260101-000000-aaaaaa/planning.json"),
        "{broken",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("RQ-1/not-a-run")).unwrap();
    std::fs::write(root.join("stray.txt"), "x").unwrap();
    let runs = inspect::list_runs(root).unwrap();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].status, "unreadable");
    assert_eq!(runs[0].run_id, "20260101-000000-aaaaaa");
}
