//! The tool specs are a contract with the models: any change shows up here.

use super::Repo;

#[test]
fn builtin_tool_specs() {
    let repo = Repo::new();
    let specs = repo.registry().specs();
    insta::assert_json_snapshot!("builtin_tool_specs", specs);
}
