//! GitHub's published webhook payloads: npm `@octokit/webhooks-examples` (an
//! example of every event and action, as GitHub sends them) and
//! `@octokit/webhooks-schemas` (their JSON schemas), both MIT, which
//! scripts/test.sh installs into target/test-tools/webhooks. The CI corpus
//! tests derive their events from these shapes.

use std::path::PathBuf;

use serde_json::Value;

use crate::openapi::test_tools;

/// Where scripts/test.sh installs the two packages.
pub fn packages_dir() -> PathBuf {
    test_tools().join("webhooks/node_modules/@octokit")
}

fn read(rel: &str) -> Result<Value, String> {
    let p = packages_dir().join(rel);
    let text = std::fs::read_to_string(&p).map_err(|e| {
        format!(
            "{}: {e}: run the tests with ./scripts/test.sh, which installs npm @octokit/webhooks-examples and @octokit/webhooks-schemas into target/test-tools/webhooks",
            p.display()
        )
    })?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", p.display()))
}

/// Every example payload of api.github.com: `(event name, payload)`.
pub fn github_examples() -> Result<Vec<(String, Value)>, String> {
    let index = read("webhooks-examples/api.github.com/index.json")?;
    let mut out = Vec::new();
    for event in index.as_array().ok_or("index.json: not an array")? {
        let name = event["name"]
            .as_str()
            .ok_or("index.json: an event without name")?;
        for example in event["examples"].as_array().into_iter().flatten() {
            out.push((name.to_string(), example.clone()));
        }
    }
    Ok(out)
}

/// The JSON schema document of every webhook payload (`definitions` has
/// `issue_comment$created` and the like).
pub fn github_schema() -> Result<Value, String> {
    read("webhooks-schemas/schema.json")
}
