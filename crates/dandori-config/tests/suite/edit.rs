//! `dandori_config::edit`: one value written through the layering.

use dandori_config::edit::{resolve_key, set_value};
use dandori_config::{LoadOptions, load};
use pretty_assertions::assert_eq;
use serde_json::json;

fn opts(repo: &std::path::Path) -> LoadOptions {
    LoadOptions {
        repo: repo.to_path_buf(),
        ..LoadOptions::default()
    }
}

#[test]
fn short_keys_resolve_task_planning_first_and_ambiguity_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&opts(dir.path())).unwrap();
    let r = |k: &str| resolve_key(&loaded, k).map_err(|e| e.to_string());
    assert_eq!(
        r("auto_chunk_threshold").unwrap(),
        "task_planning.chunking.auto_chunk_threshold"
    );
    assert_eq!(
        r("max_parallel_workers").unwrap(),
        "task_planning.execution.max_parallel_workers"
    );
    assert_eq!(r("planning.max_subtasks").unwrap(), "planning.max_subtasks");
    assert_eq!(r("strategy").unwrap(), "planning.strategy");
    assert_eq!(
        r("nope").unwrap_err(),
        "-c nope: unknown configuration key; did you mean `runs.root`?"
    );
    assert_eq!(
        r("planning.max_subtask").unwrap_err(),
        "-c planning.max_subtask: unknown configuration key; did you mean `planning.max_subtasks`?"
    );
    assert_eq!(r("enabled").unwrap(), "task_planning.enabled");
    let e = r("max_retries").unwrap_err();
    assert!(
        e.contains("ambiguous key; say which: planning.environment_setup."),
        "{e}"
    );
}

#[test]
fn values_land_in_the_files_the_layering_reads_and_bad_ones_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("dandori.yaml"),
        "planning:\n  strategy: simple\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join(".claude")).unwrap();
    std::fs::write(
        dir.path().join(".claude/task-planning.json"),
        r#"{"enabled": true}"#,
    )
    .unwrap();
    let o = opts(dir.path());
    let out = set_value(&o, "max_parallel_workers", "5").unwrap();
    assert_eq!(out.file, dir.path().join(".claude/task-planning.json"));
    assert!(!out.created);
    // Written, but the repository is not trusted: its file may not raise a limit,
    // and the outcome says which value holds.
    assert_eq!(out.reloaded.task_planning.execution.max_parallel_workers, 3);
    assert_eq!(out.overridden_by_later_layer, Some(json!(3)));
    let out = set_value(&o, "max_parallel_workers", "2").unwrap();
    assert_eq!(out.reloaded.task_planning.execution.max_parallel_workers, 2);
    assert_eq!(out.overridden_by_later_layer, None);
    let out = set_value(&o, "planning.max_subtasks", "4").unwrap();
    assert_eq!(out.file, dir.path().join("dandori.yaml"));
    let yaml = std::fs::read_to_string(dir.path().join("dandori.yaml")).unwrap();
    assert!(
        yaml.contains("strategy: simple") && yaml.contains("max_subtasks: 4"),
        "{yaml}"
    );

    // Wrong type: the -c error, nothing written.
    let before = std::fs::read_to_string(dir.path().join(".claude/task-planning.json")).unwrap();
    let e = set_value(&o, "max_parallel_workers", "many").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("-c task_planning.execution.max_parallel_workers=many:"),
        "{e}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(".claude/task-planning.json")).unwrap(),
        before
    );

    // An environment variable still wins: said so.
    let mut o2 = o.clone();
    o2.env
        .insert("PLANNING_STRATEGY".into(), "hierarchical".into());
    let out = set_value(&o2, "strategy", "chain_of_thought").unwrap();
    assert_eq!(out.overridden_by_later_layer, Some(json!("hierarchical")));
}
