//! Issue 26: decomposition and AC ↔ step linking on requests written from real
//! issues (`tests/fixtures/requests/decomposition.jsonl`). A feature written as
//! prose is one coherent step (or implement + test + export), a real
//! enumeration is one step per item, every acceptance criterion the request
//! states links a step that targets the file that makes it true, and the files
//! a request implies (`targets`: the package's `__init__.py` when something is
//! exported, the new `__main__.py` of `python -m pkg`, the failing test file a
//! request names) are targeted by some step.

use dandori_planner::{PlanOptions, RequestSource};
use serde_json::Value;

use super::corpus::fixtures;

fn requests() -> Vec<Value> {
    let text = std::fs::read_to_string(fixtures().join("requests/decomposition.jsonl")).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn features_stay_whole_enumerations_split_and_criteria_link_their_step() {
    let requests = requests();
    assert!(requests.len() >= 40, "{} requests", requests.len());
    let runs = tempfile::tempdir().unwrap();
    let mut failures: Vec<String> = Vec::new();
    let mut checks = 0usize;
    for entry in &requests {
        let id = entry["id"].as_str().unwrap();
        let repo = entry["repo"].as_str().unwrap();
        let mut opts = PlanOptions::new(
            fixtures().join("repos").join(repo),
            RequestSource::Text(entry["text"].as_str().unwrap().to_string()),
        );
        opts.runs_root = Some(runs.path().to_path_buf());
        let o = match dandori_planner::plan(&opts) {
            Ok(o) => o,
            Err(e) => {
                failures.push(format!("{id}: {e}"));
                continue;
            }
        };
        let steps = &o.planning.steps;
        let titles: Vec<&str> = steps.iter().map(|s| s.title.as_str()).collect();
        if let Some(max) = entry["max_steps"].as_u64() {
            checks += 1;
            if steps.len() > max as usize {
                failures.push(format!("{id}: one feature became {titles:?}"));
            }
        }
        if let Some(min) = entry["min_steps"].as_u64() {
            checks += 1;
            if steps.len() < min as usize {
                failures.push(format!("{id}: {min} items became {titles:?}"));
            }
        }
        for file in entry["targets"].as_array().into_iter().flatten() {
            checks += 1;
            let file = file.as_str().unwrap();
            if !steps
                .iter()
                .any(|s| s.scope.target_paths.iter().any(|p| p == file))
            {
                let all: Vec<&Vec<String>> = steps.iter().map(|s| &s.scope.target_paths).collect();
                failures.push(format!("{id}: no step targets {file} (targets {all:?})"));
            }
        }
        let criteria = &o.planning.context.acceptance_criteria;
        // A derived scope criterion allows what the steps target, the test
        // directory of a test-first step included.
        let mut targets: Vec<&str> = Vec::new();
        for p in steps.iter().flat_map(|s| &s.scope.target_paths) {
            if !targets.contains(&p.as_str()) && p != "." {
                targets.push(p);
            }
        }
        for ac in criteria
            .iter()
            .filter(|a| a.then.starts_with("no file outside "))
        {
            checks += 1;
            if targets.len() <= 5
                && let Some(t) = targets
                    .iter()
                    .find(|t| !ac.then.contains(&format!("`{t}`")))
            {
                failures.push(format!(
                    "{id}: {} forbids {t}, which a step targets: {:?}",
                    ac.id, ac.then
                ));
            }
        }
        // Every criterion the request states is made true by a step that changes
        // something: linked by a step other than the test-first one, which only
        // writes the failing tests.
        let stated = dandori_planner::Request::from_text(entry["text"].as_str().unwrap())
            .unwrap()
            .acceptance_criteria;
        for (n, c) in stated.iter().enumerate() {
            checks += 1;
            let Some(ac) = criteria.iter().find(|ac| ac.then == c.then) else {
                failures.push(format!(
                    "{id}: criterion {n} ({:?}) is not in the plan",
                    c.then
                ));
                continue;
            };
            let makers: Vec<&str> = steps
                .iter()
                .filter(|s| s.links_to_ac.contains(&ac.id) && s.extra.get("tdd_phase").is_none())
                .map(|s| s.step_id.as_str())
                .collect();
            if makers.is_empty() {
                failures.push(format!(
                    "{id}: {} ({:?}) is linked by no step that changes code",
                    ac.id, c.then
                ));
            }
        }
        for (fragment, file) in entry["links"].as_object().unwrap() {
            checks += 1;
            let fragment = fragment.to_lowercase();
            let Some(ac) = criteria.iter().find(|ac| {
                format!("{} {} {}", ac.given, ac.when, ac.then)
                    .to_lowercase()
                    .contains(&fragment)
            }) else {
                failures.push(format!("{id}: no criterion says {fragment:?}"));
                continue;
            };
            let file = file.as_str().unwrap();
            let linked: Vec<(&str, &Vec<String>)> = steps
                .iter()
                .filter(|s| s.links_to_ac.contains(&ac.id))
                .map(|s| (s.title.as_str(), &s.scope.target_paths))
                .collect();
            if !linked.iter().any(|(_, t)| t.iter().any(|p| p == file)) {
                failures.push(format!(
                    "{id}: {} ({fragment:?}) links {linked:?}, none targets {file}",
                    ac.id
                ));
            }
        }
    }
    eprintln!(
        "decomposition corpus: {} requests, {} of {checks} checks passed",
        requests.len(),
        checks - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
