use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::{
    Config, ConfigError, LoadOptions, OnFailure, ReflectionDepth, Strategy, TaskPlanningConfig,
    env_vars, load,
};
use pretty_assertions::assert_eq;

fn opts(repo: &Path) -> LoadOptions {
    LoadOptions {
        repo: repo.to_path_buf(),
        ..LoadOptions::default()
    }
}

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn write(repo: &Path, name: &str, text: &str) {
    let p = repo.join(name);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

#[test]
fn defaults_without_files() {
    let dir = tempfile::tempdir().unwrap();
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.task_planning, TaskPlanningConfig::default());
    assert_eq!(loaded.warnings, vec![]);
    assert_eq!(loaded.config_file, None);
}

#[test]
fn file_is_merged_over_defaults() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config.yaml",
        "planning:\n  max_subtasks: 7\n  reflection:\n    depth: deep\n",
    );
    let loaded = load(&opts(dir.path())).unwrap();
    let mut expected = Config::default();
    expected.planning.max_subtasks = 7;
    expected.planning.reflection.depth = ReflectionDepth::Deep;
    assert_eq!(loaded.config, expected);
    assert_eq!(loaded.config_file, Some(dir.path().join("config.yaml")));
}

#[test]
fn precedence_defaults_file_env_flag() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "dandori.yaml", "planning:\n  max_subtasks: 7\n");
    let mut o = opts(dir.path());
    assert_eq!(load(&o).unwrap().config.planning.max_subtasks, 7);
    o.env = env(&[(env_vars::PLANNING_MAX_SUBTASKS, "9")]);
    assert_eq!(load(&o).unwrap().config.planning.max_subtasks, 9);
    o.overrides = vec!["planning.max_subtasks=11".into()];
    assert_eq!(load(&o).unwrap().config.planning.max_subtasks, 11);
}

#[test]
fn every_seed_env_var_applies() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[
        ("PLANNING_ENABLED", "false"),
        ("PLANNING_STRATEGY", "hierarchical"),
        ("PLANNING_MAX_SUBTASKS", "4"),
        ("REFLECTION_ENABLED", "false"),
        ("REFLECTION_INTERVAL", "6"),
        ("MAX_PLAN_REVISIONS", "1"),
        ("ENVIRONMENT_SETUP_ENABLED", "false"),
        ("ENVIRONMENT_SETUP_COMMAND_TIMEOUT", "600"),
        ("ENVIRONMENT_SETUP_VERIFICATION_ON_FAILURE", "fail"),
        ("ENVIRONMENT_SETUP_REGENERATION_ENABLED", "false"),
        ("UNRELATED", "x"),
    ]);
    let loaded = load(&o).unwrap();
    let mut e = Config::default();
    e.planning.enabled = false;
    e.planning.strategy = Strategy::Hierarchical;
    e.planning.max_subtasks = 4;
    e.planning.reflection.enabled = false;
    e.planning.reflection.trigger_interval = Some(6);
    e.planning.revision.max_revisions = 1;
    e.planning.environment_setup.enabled = false;
    e.planning
        .environment_setup
        .execution
        .command_timeout_seconds = 600;
    e.planning.environment_setup.verification.on_failure = Some(OnFailure::Fail);
    e.planning.environment_setup.regeneration.enabled = false;
    assert_eq!(loaded.config, e);
    assert_eq!(loaded.warnings, vec![]);
    let names: Vec<&str> = env_vars::OVERRIDES.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        names,
        vec![
            "PLANNING_ENABLED",
            "PLANNING_STRATEGY",
            "PLANNING_MAX_SUBTASKS",
            "REFLECTION_ENABLED",
            "REFLECTION_INTERVAL",
            "MAX_PLAN_REVISIONS",
            "ENVIRONMENT_SETUP_ENABLED",
            "ENVIRONMENT_SETUP_COMMAND_TIMEOUT",
            "ENVIRONMENT_SETUP_VERIFICATION_ON_FAILURE",
            "ENVIRONMENT_SETUP_REGENERATION_ENABLED",
        ]
    );
}

#[test]
fn bad_env_value_is_ignored_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.env = env(&[
        ("PLANNING_MAX_SUBTASKS", "many"),
        ("REFLECTION_INTERVAL", "2"),
    ]);
    let loaded = load(&o).unwrap();
    assert_eq!(loaded.config.planning.max_subtasks, 10);
    assert_eq!(loaded.config.planning.reflection.trigger_interval, Some(2));
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(loaded.warnings[0].source, "PLANNING_MAX_SUBTASKS");
    assert!(loaded.warnings[0].message.contains("planning.max_subtasks"));
}

#[test]
fn broken_file_falls_back_to_defaults_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "config.yaml", "planning: [unclosed\n");
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].source.ends_with("config.yaml"));
    assert!(
        loaded.warnings[0]
            .message
            .contains("using the default configuration")
    );

    write(
        dir.path(),
        "config.yaml",
        "planning:\n  max_subtasks: lots\n",
    );
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(
        loaded.warnings[0].message.contains("planning.max_subtasks"),
        "{}",
        loaded.warnings[0]
    );
}

#[test]
fn task_specific_overrides_merge_for_the_task_type() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "config.yaml",
        "planning:\n  strategy: chain_of_thought\n  task_specific:\n    github_issue:\n      max_subtasks: 15\n      reflection:\n        trigger_interval: 5\n    github_pr:\n      strategy: hierarchical\n      reflection:\n        depth: deep\n",
    );
    let mut o = opts(dir.path());
    let plain = load(&o).unwrap().config;
    assert_eq!(plain.planning.max_subtasks, 10);
    o.task_type = Some("github_issue".into());
    let issue = load(&o).unwrap().config;
    assert_eq!(issue.planning.max_subtasks, 15);
    assert_eq!(issue.planning.reflection.trigger_interval, Some(5));
    assert_eq!(issue.planning.reflection.depth, ReflectionDepth::Moderate);
    o.task_type = Some("github_pr".into());
    let pr = load(&o).unwrap().config;
    assert_eq!(pr.planning.strategy, Strategy::Hierarchical);
    assert_eq!(pr.planning.reflection.depth, ReflectionDepth::Deep);
    // Env still beats the task-type override.
    o.task_type = Some("github_issue".into());
    o.env = env(&[("PLANNING_MAX_SUBTASKS", "3")]);
    assert_eq!(load(&o).unwrap().config.planning.max_subtasks, 3);
}

#[test]
fn flag_overrides() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.overrides = vec![
        "planning.security.forbidden_tools=[git_push, \"shell*\"]".into(),
        "llm.default_provider=local".into(),
        "planning.task_specific.local={max_subtasks: 2}".into(),
        "runner.max_parallel_workers=1".into(),
    ];
    let c = load(&o).unwrap().config;
    assert_eq!(
        c.planning.security.forbidden_tools,
        vec!["git_push", "shell*"]
    );
    assert_eq!(c.llm.default_provider.as_deref(), Some("local"));
    assert_eq!(c.runner.max_parallel_workers, 1);
    assert!(c.planning.task_specific.contains_key("local"));

    for (arg, want) in [
        ("planning.max_subtasks", "expected KEY=VALUE"),
        ("=5", "expected KEY=VALUE"),
        ("planning.max_subtasks=-3", "planning.max_subtasks"),
    ] {
        o.overrides = vec![arg.into()];
        let err = load(&o).unwrap_err();
        assert!(
            matches!(err, ConfigError::InvalidOverride { .. }),
            "{arg}: {err}"
        );
        assert!(err.to_string().contains(want), "{arg}: {err}");
    }
    o.overrides = vec!["planning.max_subtask=3".into()];
    assert!(matches!(
        load(&o).unwrap_err(),
        ConfigError::UnknownKey { .. }
    ));
}

#[test]
fn task_planning_json() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        ".claude/task-planning.json",
        r#"{"enabled": true, "chunking": {"auto_chunk_threshold": "L", "max_subtasks": 6}}"#,
    );
    let mut o = opts(dir.path());
    let t = load(&o).unwrap().task_planning;
    assert_eq!(t.chunking.auto_chunk_threshold, "L");
    assert_eq!(t.chunking.max_subtasks, 6);
    assert_eq!(t.chunking.min_subtasks, 2);
    o.overrides = vec!["task_planning.execution.max_parallel_workers=5".into()];
    assert_eq!(
        load(&o)
            .unwrap()
            .task_planning
            .execution
            .max_parallel_workers,
        5
    );

    write(dir.path(), ".claude/task-planning.json", "{ broken");
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(loaded.task_planning, TaskPlanningConfig::default());
    assert!(loaded.warnings[0].source.ends_with("task-planning.json"));
}

#[test]
fn explicit_missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.config_path = Some(dir.path().join("nope.yaml"));
    let err = load(&o).unwrap_err();
    assert!(err.to_string().contains("nope.yaml"), "{err}");
}

mod fuzz {
    use proptest::prelude::*;

    use super::{opts, write};
    use dandori_config::{Config, load};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Any config file text loads: either its values or the defaults with a
        /// warning, never a panic or an error.
        #[test]
        fn any_config_text_loads(text in "(planning|llm|runner|reflection|max_subtasks|enabled|[a-z_]{1,8}|:|\n|  |- |\\[|\\]|\\{|\\}|,|\"|[0-9]{1,3}|true|null|&a|\\*a){0,40}") {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "config.yaml", &text);
            let loaded = load(&opts(dir.path())).unwrap();
            if !loaded.warnings.is_empty() {
                prop_assert_eq!(loaded.config, Config::default());
            }
        }

        #[test]
        fn any_override_never_panics(arg in "[a-z_.=\\[\\]{}:, 0-9\"-]{0,30}") {
            let dir = tempfile::tempdir().unwrap();
            let mut o = opts(dir.path());
            o.overrides = vec![arg];
            let _ = load(&o);
        }
    }
}

#[test]
fn deeply_nested_config_is_refused_before_parsing() {
    let dir = tempfile::tempdir().unwrap();
    // 100 KB of unclosed `[`: the YAML scanner alone did not finish on this.
    write(
        dir.path(),
        "config.yaml",
        &format!("planning: {}", "[".repeat(100_000)),
    );
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(loaded.config, Config::default());
    assert!(
        loaded.warnings[0]
            .message
            .contains("CONFIG_TOO_DEEP: line 1"),
        "{}",
        loaded.warnings[0]
    );
    // Brackets inside quotes and comments do not count.
    write(
        dir.path(),
        "config.yaml",
        &format!(
            "# {}\nplanning:\n  max_subtasks: 4\n  x: \"{}\"\n",
            "[".repeat(100),
            "{".repeat(100)
        ),
    );
    let loaded = load(&opts(dir.path())).unwrap();
    assert_eq!(
        loaded.config.planning.max_subtasks, 4,
        "{:?}",
        loaded.warnings
    );
}
