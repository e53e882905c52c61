//! The committed schemas match the types. Regenerate with
//! `UPDATE_SCHEMAS=1 cargo test -p dandori-plan --test all schema`.

use std::path::PathBuf;

fn check(name: &str, schema: serde_json::Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../schemas")
        .join(name);
    let text = format!("{}\n", serde_json::to_string_pretty(&schema).unwrap());
    if std::env::var_os("UPDATE_SCHEMAS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &text).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "{} is out of date with the types; regenerate it with\n  UPDATE_SCHEMAS=1 cargo test -p dandori-plan --test all schema\nand commit the result",
        path.display()
    );
}

#[test]
fn schema_planning_is_committed() {
    check("planning.schema.json", dandori_plan::schema::planning());
}

#[test]
fn schema_stage_is_committed() {
    check("stage.schema.json", dandori_plan::schema::stage());
}

#[test]
fn schema_requires_the_seed004_keys() {
    let s = dandori_plan::schema::planning();
    let required: Vec<&str> = s["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for key in [
        "version",
        "request_id",
        "run_id",
        "created_at",
        "base_branch",
        "work_branch",
        "limits",
        "context",
        "steps",
        "gates",
        "outputs",
    ] {
        assert!(required.contains(&key), "{key} not required");
    }
    assert!(!required.contains(&"assumptions"));
}
