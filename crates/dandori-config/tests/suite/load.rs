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

/// Issue 25: a broken config file stops, naming the file, the line, the key and
/// the nearest valid key; it never falls back to the defaults (which would drop
/// the file's narrowing keys with the broken one).
#[test]
fn broken_file_is_an_error_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let err = |text: &str| {
        write(dir.path(), "config.yaml", text);
        load(&opts(dir.path())).unwrap_err().to_string()
    };
    let file = dir.path().join("config.yaml").display().to_string();

    let e = err("planning: [unclosed\n");
    assert!(e.starts_with(&format!("{file}:2: ")), "{e}");

    assert_eq!(
        err("planning:\n  max_subtasks: lots\n"),
        format!("{file}:2: planning.max_subtasks: invalid type: string \"lots\", expected u32")
    );
    // The issue's case: one bad value beside a permission key.
    assert_eq!(
        err(
            "planning:\n  permissions:\n    allowed_users: [bob]\n  logging:\n    level: VERBOSE\n"
        ),
        format!(
            "{file}:5: planning.logging.level: invalid value `VERBOSE`: expected one of DEBUG, INFO, WARNING, ERROR"
        )
    );
    assert_eq!(
        err("planning:\n  logging:\n    level: INF\n"),
        format!(
            "{file}:3: planning.logging.level: invalid value `INF`: expected one of DEBUG, INFO, WARNING, ERROR; did you mean `INFO`?"
        )
    );
    // Unknown keys, at any depth, with the nearest valid one.
    assert_eq!(
        err("planning:\n  max_subtask: 1\n"),
        format!(
            "{file}:2: planning.max_subtask: unknown key (valid keys here: enabled, strategy, max_subtasks, decomposition_level, auto_adjust_level, complexity_threshold, reflection, revision, cache, execution, security, logging, permissions, environment_setup, task_specific); did you mean `planning.max_subtasks`?"
        )
    );
    let e =
        err("llm:\n  providers:\n    - name: a\n      kind: openai\n      base_urll: http://x\n");
    assert!(
        e.starts_with(&format!(
            "{file}:5: llm.providers[0].base_urll: unknown key"
        )) && e.ends_with("did you mean `llm.providers[0].base_url`?"),
        "{e}"
    );
    let e = err("shell_environment_polcy:\n  inherit: none\n");
    assert!(
        e.starts_with(&format!("{file}:1: shell_environment_polcy: unknown key"))
            && e.ends_with("did you mean `shell_environment_policy`?"),
        "{e}"
    );
    // Inside a task-type entry, checked with the file (whatever the task type).
    let e = err("planning:\n  task_specific:\n    github_issue:\n      max_subtaks: 3\n");
    assert!(
        e.starts_with(&format!(
            "{file}:4: planning.task_specific.github_issue.max_subtaks: unknown key"
        )) && e.ends_with("did you mean `planning.task_specific.github_issue.max_subtasks`?"),
        "{e}"
    );
}

#[test]
fn override_typos_suggest_the_nearest_key() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = opts(dir.path());
    o.overrides = vec!["planning.max_subtask=1".to_string()];
    assert_eq!(
        load(&o).unwrap_err().to_string(),
        "-c planning.max_subtask: unknown configuration key; did you mean `planning.max_subtasks`?"
    );
    o.overrides = vec!["task_planning.chunking.max_subtask=1".to_string()];
    assert!(
        load(&o)
            .unwrap_err()
            .to_string()
            .ends_with("did you mean `task_planning.chunking.max_subtasks`?")
    );
    o.overrides = vec!["planning.logging.level=VERBOSE".to_string()];
    let e = load(&o).unwrap_err().to_string();
    assert!(
        e.starts_with(
            "-c planning.logging.level=VERBOSE: planning.logging.level: invalid value `VERBOSE`"
        ),
        "{e}"
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

    // Fails closed like config.yaml: not JSON, an unknown key, a wrong type are
    // errors naming the file, the line and the key (the nearest valid one too).
    write(dir.path(), ".claude/task-planning.json", "{ broken");
    let err = load(&opts(dir.path())).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, ConfigError::File { line: Some(1), .. }),
        "{msg}"
    );
    assert!(msg.contains("task-planning.json:1: not JSON"), "{msg}");
    write(
        dir.path(),
        ".claude/task-planning.json",
        "{\n  \"chunking\": {\n    \"max_subtask\": 3\n  }\n}\n",
    );
    let msg = load(&opts(dir.path())).unwrap_err().to_string();
    assert!(
        msg.contains("task-planning.json:3: chunking.max_subtask: unknown key")
            && msg.contains("did you mean `chunking.max_subtasks`?"),
        "{msg}"
    );
    write(
        dir.path(),
        ".claude/task-planning.json",
        "{\n  \"execution\": {\n    \"max_parallel_workers\": \"four\"\n  }\n}\n",
    );
    let msg = load(&opts(dir.path())).unwrap_err().to_string();
    assert!(
        msg.contains("task-planning.json:3: execution.max_parallel_workers: invalid type"),
        "{msg}"
    );
}

#[test]
fn overrides_are_checked_without_a_file() {
    assert!(dandori_config::check_overrides(&["planning.max_subtasks=5".into()]).is_ok());
    assert!(
        dandori_config::check_overrides(&["task_planning.chunking.max_subtasks=4".into()]).is_ok()
    );
    let err = dandori_config::check_overrides(&["planning.max_subtask=5".into()]).unwrap_err();
    assert!(
        err.to_string()
            .contains("did you mean `planning.max_subtasks`?"),
        "{err}"
    );
    assert!(matches!(
        dandori_config::check_overrides(&["planning.max_subtasks=many".into()]).unwrap_err(),
        ConfigError::InvalidOverride { .. }
    ));
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
    use dandori_config::load;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// Any config file text either loads without a warning or is an error
        /// naming the file; never a panic, never a silent fallback.
        #[test]
        fn any_config_text_loads_or_is_refused(text in "(planning|llm|runner|reflection|max_subtasks|enabled|[a-z_]{1,8}|:|\n|  |- |\\[|\\]|\\{|\\}|,|\"|[0-9]{1,3}|true|null|&a|\\*a){0,40}") {
            let dir = tempfile::tempdir().unwrap();
            write(dir.path(), "config.yaml", &text);
            match load(&opts(dir.path())) {
                Ok(loaded) => prop_assert_eq!(loaded.warnings, vec![]),
                Err(e) => prop_assert!(e.to_string().contains("config.yaml"), "{}", e),
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
    let err = load(&opts(dir.path())).unwrap_err().to_string();
    assert!(err.contains("CONFIG_TOO_DEEP: line 1"), "{err}");
    // Brackets inside quotes and comments do not count.
    write(
        dir.path(),
        "config.yaml",
        &format!(
            "# {}\nplanning:\n  max_subtasks: 4\nruns:\n  root: \"{}\"\n",
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

/// Billion laughs: nine levels of aliases, each repeating the one before ten
/// times, would expand to 10^9 scalars. The parser's repetition limit refuses it:
/// an error naming the file, quickly, never an expansion.
#[test]
fn alias_bombs_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("a0: &a0 [lol]\n");
    for i in 1..10 {
        let prev = format!("*a{}", i - 1);
        text.push_str(&format!(
            "a{i}: &a{i} [{}]\n",
            [prev.as_str(); 10].join(", ")
        ));
    }
    text.push_str("planning:\n  task_specific:\n    local: *a9\n");
    write(dir.path(), "config.yaml", &text);
    let started = std::time::Instant::now();
    let err = load(&opts(dir.path())).unwrap_err().to_string();
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    assert!(err.contains("config.yaml"), "{err}");
}
