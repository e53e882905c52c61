//! `dandori schema` prints the committed schemas.

use pretty_assertions::assert_eq;
use serde_json::Value;

use super::validate::dandori;

#[test]
fn schemas_match_the_committed_files() {
    for (kind, file) in [
        ("planning", "planning.schema.json"),
        ("stage", "stage.schema.json"),
        ("config", "config.schema.json"),
    ] {
        let o = dandori(&["schema", kind]);
        assert_eq!(o.status.code(), Some(0));
        let printed: Value = serde_json::from_slice(&o.stdout).unwrap();
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../schemas")
            .join(file);
        let committed: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(printed, committed, "{kind}");
    }
    assert_eq!(dandori(&["schema", "nope"]).status.code(), Some(2));
}
