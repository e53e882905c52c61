//! `dandori graph` against the built binary.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::validate::{dandori, plan_fixture};

/// Seed 003 §6.3 as a planning.json: 1, 2 independent; 3 after 1 (depends_on);
/// 4 consumes what 2 produces; 5 after 3 and 4.
fn hybrid_plan(dir: &Path) -> std::path::PathBuf {
    let text = std::fs::read_to_string(plan_fixture("seed004_sample.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    let template = doc["steps"][0].clone();
    let mk = |id: &str, title: &str, target: &str| {
        let mut s = template.clone();
        s["step_id"] = json!(id);
        s["title"] = json!(title);
        s["scope"]["target_paths"] = json!([target]);
        s
    };
    let mut steps = vec![
        mk("S01", "Define User interface", "src/user.ts"),
        mk("S02", "Define Auth interface", "src/auth.ts"),
        mk("S03", "Implement User service", "src/services/user.ts"),
        mk("S04", "Implement Auth service", "src/services/auth.ts"),
        mk("S05", "Integration tests", "tests/"),
    ];
    steps[2]["depends_on"] = json!(["S01"]);
    steps[1]["produces"] = json!(["AuthInterface"]);
    steps[3]["consumes"] = json!(["AuthInterface"]);
    steps[4]["depends_on"] = json!(["S03", "S04"]);
    steps[4]["estimated_complexity"] = json!(4);
    doc["steps"] = json!(steps);
    let f = dir.join("planning.json");
    std::fs::write(&f, serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    f
}

#[test]
fn json_format() {
    let dir = tempfile::tempdir().unwrap();
    let f = hybrid_plan(dir.path());
    let o = dandori(&["graph", f.to_str().unwrap(), "--format", "json"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        json!({
            "execution_mode": "hybrid",
            "execution_groups": [
                {"group_index": 0, "mode": "parallel", "step_ids": ["S01", "S02"], "depends_on_groups": []},
                {"group_index": 1, "mode": "parallel", "step_ids": ["S03", "S04"], "depends_on_groups": [0]},
                {"group_index": 2, "mode": "sequential", "step_ids": ["S05"], "depends_on_groups": [1]}
            ],
            "edges": [
                {"from": "S01", "to": "S03", "type": "logical"},
                {"from": "S02", "to": "S04", "type": "data"},
                {"from": "S03", "to": "S05", "type": "logical"},
                {"from": "S04", "to": "S05", "type": "logical"}
            ],
            "critical_path": ["S01", "S03", "S05"]
        })
    );
}

#[test]
fn text_and_mermaid_formats() {
    let dir = tempfile::tempdir().unwrap();
    let f = hybrid_plan(dir.path());
    let text = dandori(&["graph", f.to_str().unwrap()]);
    assert_eq!(text.status.code(), Some(0));
    insta::assert_snapshot!("graph_text", String::from_utf8_lossy(&text.stdout));
    let mermaid = dandori(&["graph", f.to_str().unwrap(), "--format", "mermaid"]);
    assert_eq!(mermaid.status.code(), Some(0));
    insta::assert_snapshot!("graph_mermaid", String::from_utf8_lossy(&mermaid.stdout));
}

#[test]
fn broken_plans_exit_1_and_say_why() {
    let f = plan_fixture("codes/DEPENDENCY_CYCLE.json");
    let o = dandori(&["graph", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("dependency cycle: S01 -> S02 -> S03 -> S01"),
        "{err}"
    );

    let f = plan_fixture("codes/MISSING_REQUIRED_KEY.json");
    let o = dandori(&["graph", f.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("MISSING_REQUIRED_KEY run_id"), "{err}");

    let o = dandori(&["graph", "/no/such/planning.json"]);
    assert_eq!(o.status.code(), Some(2));
    let o = dandori(&["graph", f.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(o.status.code(), Some(2));
}
