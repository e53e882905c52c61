mod graph;
mod roundtrip;
mod schema;
mod sizing;
mod validation;

use std::path::PathBuf;

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

pub fn fixture(name: &str) -> String {
    let path = fixture_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn sample() -> String {
    fixture("seed004_sample.json")
}

/// A step like the seed 004 sample's, with the given id, targets and dependencies.
pub fn step(id: &str, targets: &[&str], depends_on: &[&str]) -> dandori_plan::Step {
    let planning: dandori_plan::Planning = serde_json::from_str(&sample()).unwrap();
    let mut s = planning.steps[0].clone();
    s.step_id = id.to_string();
    s.title = format!("step {id}");
    s.scope.target_paths = targets.iter().map(|t| t.to_string()).collect();
    s.depends_on = if depends_on.is_empty() {
        None
    } else {
        Some(depends_on.iter().map(|t| t.to_string()).collect())
    };
    s
}
