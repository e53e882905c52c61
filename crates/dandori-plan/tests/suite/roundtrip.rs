use dandori_plan::{Planning, Stage};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::sample;

#[test]
fn sample_round_trips_exactly() {
    let original: Value = serde_json::from_str(&sample()).unwrap();
    let planning: Planning = serde_json::from_value(original.clone()).unwrap();
    assert_eq!(serde_json::to_value(&planning).unwrap(), original);
}

#[test]
fn unknown_keys_survive_read_write() {
    let mut doc: Value = serde_json::from_str(&sample()).unwrap();
    doc["x_team"] = json!({"owner": "core", "tags": ["a", "b"]});
    doc["limits"]["x_budget_usd"] = json!(3.5);
    doc["context"]["acceptance_criteria"][0]["x_priority"] = json!("must");
    doc["context"]["test_instructions"]["x_lint"] = json!("cargo clippy");
    doc["steps"][0]["x_reviewer"] = json!("alice");
    doc["steps"][0]["scope"]["x_note"] = json!(null);
    doc["steps"][0]["expected_diff"]["x_tests"] = json!(3);
    doc["gates"]["x_require_signoff"] = json!(true);
    doc["outputs"]["x_dashboard"] = json!("runs/x.html");
    doc["steps"][0]["depends_on"] = json!([]);
    doc["steps"][0]["boundaries"] = json!({"in_scope": ["cli"], "out_of_scope": ["db"]});
    doc["steps"][0]["estimated_complexity"] = json!("medium");
    let planning: Planning = serde_json::from_value(doc.clone()).unwrap();
    let written = serde_json::to_string_pretty(&planning).unwrap();
    let reread: Value = serde_json::from_str(&written).unwrap();
    assert_eq!(reread, doc);
    // Also through the validating reader.
    let validated = dandori_plan::validation::parse(&written).unwrap();
    assert_eq!(serde_json::to_value(&validated.planning).unwrap(), doc);

    let mut stage =
        serde_json::to_value(Stage::for_planning(&planning, "2026-01-01T00:00:00Z")).unwrap();
    stage["x_host"] = json!("ci-7");
    stage["steps"][0]["x_worker"] = json!(2);
    let typed: Stage = serde_json::from_value(stage.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), stage);
}
