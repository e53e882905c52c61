//! The committed schemas match the types. Regenerate with
//! `UPDATE_SCHEMAS=1 cargo test -p dandori-config --test all schema`.

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
        "{} is out of date with the types; regenerate it with\n  UPDATE_SCHEMAS=1 cargo test -p dandori-config --test all schema\nand commit the result",
        path.display()
    );
}

#[test]
fn schema_config_is_committed() {
    check("config.schema.json", dandori_config::schema::config());
}

#[test]
fn schema_task_planning_is_committed() {
    check(
        "task-planning.schema.json",
        dandori_config::schema::task_planning(),
    );
}
