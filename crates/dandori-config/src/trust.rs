//! Trust: what a repository's own config file may set.
//!
//! A `dandori.yaml` / `config.yaml` / `.dandori/config.yaml` (and a
//! `task-planning.json`) committed in a repository was written by whoever wrote the
//! repository: it can only narrow. Unless the user trusted that repository, each
//! key is applied by its class ([`KEY_CLASSES`]): neutral planning knobs as they
//! are; narrowing keys only when they narrow (a limit not above the trusted one, a
//! guard at its safe value, an allowlist that is a subset, a narrowing list added
//! to the trusted one); widening keys (provider endpoints and key variables, MCP
//! servers, the agent command, allowed commands, the sandbox, the children's
//! environment, forge and telemetry endpoints) never. Each refused key is named in
//! a warning ([`UNTRUSTED_CONFIG_KEY`]) with a `dandori trust` hint.
//!
//! The user trusts a repository in the user-level config
//! (`$DANDORI_CONFIG_HOME/config.yaml`, else `$XDG_CONFIG_HOME/dandori/config.yaml`,
//! else `$HOME/.config/dandori/config.yaml`), key `trusted_projects`, usually
//! written by `dandori trust DIR`. A trusted entry trusts exactly that directory
//! (after resolving symlinks), not the directories below it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value};

use crate::ConfigError;

/// The user-level config directory override (tests, CI, several profiles).
pub const DANDORI_CONFIG_HOME: &str = "DANDORI_CONFIG_HOME";
/// The key of the user-level config listing trusted repositories.
pub const TRUSTED_PROJECTS: &str = "trusted_projects";

/// The user-level `config.yaml`, from the environment given (never the process's
/// own unless the caller passes it): `$DANDORI_CONFIG_HOME/config.yaml`, else
/// `$XDG_CONFIG_HOME/dandori/config.yaml`, else `$HOME/.config/dandori/config.yaml`.
/// `None` when none of the variables is set to an absolute path.
pub fn user_config_path(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let abs = |var: &str| env.get(var).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(dir) = abs(DANDORI_CONFIG_HOME) {
        return Some(dir.join("config.yaml"));
    }
    if let Some(dir) = abs("XDG_CONFIG_HOME") {
        return Some(dir.join("dandori").join("config.yaml"));
    }
    abs("HOME").map(|h| h.join(".config").join("dandori").join("config.yaml"))
}

/// The `trusted_projects` of a user-level config value (absent = none).
pub fn trusted_projects(user_config: &Value) -> Vec<PathBuf> {
    user_config
        .get(TRUSTED_PROJECTS)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(PathBuf::from)
                .collect()
        })
        .unwrap_or_default()
}

/// Whether `repo` is one of `trusted` (both compared after resolving symlinks when
/// they exist).
pub fn is_trusted(trusted: &[PathBuf], repo: &Path) -> bool {
    let repo = canonical(repo);
    trusted.iter().any(|t| canonical(t) == repo)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Adds `dir` (made absolute, symlinks resolved) to `trusted_projects` of the user
/// config at `path`, creating the file; other keys are kept. Returns the entry and
/// whether it was new.
pub fn add_trusted(path: &Path, dir: &Path) -> Result<(PathBuf, bool), ConfigError> {
    let dir = dandori_fs::canonicalize(dir)?;
    let mut doc = read_user_doc(path)?;
    let mut list = trusted_projects(&doc);
    if list.iter().any(|t| canonical(t) == dir) {
        return Ok((dir, false));
    }
    list.push(dir.clone());
    set_trusted(&mut doc, &list);
    write_user_doc(path, &doc)?;
    Ok((dir, true))
}

/// Removes `dir` from `trusted_projects`; returns whether it was there.
pub fn remove_trusted(path: &Path, dir: &Path) -> Result<bool, ConfigError> {
    if !path.is_file() {
        return Ok(false);
    }
    let target = canonical(dir);
    let mut doc = read_user_doc(path)?;
    let list = trusted_projects(&doc);
    let kept: Vec<PathBuf> = list
        .iter()
        .filter(|t| canonical(t) != target && t.as_path() != dir)
        .cloned()
        .collect();
    if kept.len() == list.len() {
        return Ok(false);
    }
    set_trusted(&mut doc, &kept);
    write_user_doc(path, &doc)?;
    Ok(true)
}

/// The trusted repositories listed in the user config at `path` (none when the file
/// does not exist).
pub fn list_trusted(path: &Path) -> Result<Vec<PathBuf>, ConfigError> {
    if !path.is_file() {
        return Ok(Vec::new());
    }
    Ok(trusted_projects(&read_user_doc(path)?))
}

fn set_trusted(doc: &mut Value, list: &[PathBuf]) {
    if !doc.is_object() {
        *doc = Value::Object(Map::new());
    }
    if let Value::Object(m) = doc {
        m.insert(
            TRUSTED_PROJECTS.to_string(),
            Value::Array(
                list.iter()
                    .map(|p| Value::String(p.display().to_string()))
                    .collect(),
            ),
        );
    }
}

fn read_user_doc(path: &Path) -> Result<Value, ConfigError> {
    if !path.is_file() {
        return Ok(Value::Object(Map::new()));
    }
    crate::load::read_yaml(path).map_err(|reason| ConfigError::UserConfig {
        path: path.to_path_buf(),
        reason,
    })
}

fn write_user_doc(path: &Path, doc: &Value) -> Result<(), ConfigError> {
    let text = serde_norway::to_string(doc).map_err(|e| ConfigError::Internal(e.to_string()))?;
    if let Some(dir) = path.parent() {
        dandori_fs::create_dir_all(dir)?;
    }
    dandori_fs::write_atomic(path, text)?;
    Ok(())
}

/// The reason code of the warning for a refused key.
pub const UNTRUSTED_CONFIG_KEY: &str = "UNTRUSTED_CONFIG_KEY";

/// What a key of an untrusted repository's config file may do (docs/config.md
/// § Trust). Every key of [`crate::Config`] and [`crate::TaskPlanningConfig`] is in
/// [`KEY_CLASSES`]; a key that is not (added later without a decision) is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyClass {
    /// A planning knob: taken as it is.
    Neutral,
    /// A list that only narrows (forbidden patterns, approvals): added to the trusted
    /// layers' list.
    NarrowingList,
    /// An allowlist where empty means everything: kept when it allows nothing the
    /// trusted layers do not (a non-empty subset of theirs, or any non-empty list
    /// when they set none).
    Allowlist,
    /// A limit (workers, budgets, timeouts): kept when not above the trusted value.
    Limit,
    /// A guard: kept only at its safe value.
    Guard(bool),
    /// A choice, widest first: kept when not wider than the trusted choice.
    Ordered(&'static [&'static str]),
    /// A directory: kept when it stays inside the repository.
    RepositoryPath,
    /// `llm.default_provider`: kept when it names a trusted provider.
    TrustedProvider,
    /// Widens what runs, what children inherit or where data goes: refused.
    Widening,
}

impl KeyClass {
    /// The three kinds of docs/config.md: `narrowing` (kept only when it narrows),
    /// `neutral`, `widening`.
    pub fn kind(self) -> &'static str {
        match self {
            KeyClass::Neutral => "neutral",
            KeyClass::Widening => "widening",
            KeyClass::NarrowingList
            | KeyClass::Allowlist
            | KeyClass::Limit
            | KeyClass::Guard(_)
            | KeyClass::Ordered(_)
            | KeyClass::RepositoryPath
            | KeyClass::TrustedProvider => "narrowing",
        }
    }

    /// The rule, as the warning and the docs word it.
    pub fn rule(self) -> String {
        match self {
            KeyClass::Neutral => "taken as is".to_string(),
            KeyClass::NarrowingList => "added to the trusted list".to_string(),
            KeyClass::Allowlist => "only a subset of the trusted allowlist".to_string(),
            KeyClass::Limit => "only lower than the trusted value".to_string(),
            KeyClass::Guard(safe) => format!("only `{safe}`"),
            KeyClass::Ordered(order) => format!("only narrower ({})", order.join(" > ")),
            KeyClass::RepositoryPath => "only inside the repository".to_string(),
            KeyClass::TrustedProvider => "only a provider of the user config".to_string(),
            KeyClass::Widening => {
                "widening: user config, -c or a trusted repository only".to_string()
            }
        }
    }
}

/// Every key and its class. A key applies to what is below it; `planning.`
/// keys apply inside `planning.task_specific.<type>` too. `task_planning.` keys
/// are those of `task-planning.json`.
pub const KEY_CLASSES: &[(&str, KeyClass)] = {
    use KeyClass::*;
    &[
        ("planning.enabled", Neutral),
        ("planning.strategy", Neutral),
        ("planning.max_subtasks", Neutral),
        ("planning.decomposition_level", Neutral),
        ("planning.auto_adjust_level", Neutral),
        ("planning.complexity_threshold", Neutral),
        ("planning.reflection", Neutral),
        ("planning.revision.max_revisions", Neutral),
        ("planning.revision.require_human_approval", Guard(true)),
        ("planning.revision.approval_timeout", Neutral),
        ("planning.revision.max_history_in_memory", Neutral),
        ("planning.revision.max_history_on_disk", Neutral),
        ("planning.revision.auto_summarize", Neutral),
        ("planning.cache.enabled", Neutral),
        ("planning.cache.ttl", Neutral),
        ("planning.cache.similarity_threshold", Neutral),
        ("planning.cache.dir", RepositoryPath),
        ("planning.execution.action_timeout", Limit),
        ("planning.execution.total_timeout", Limit),
        ("planning.execution.early_termination.enabled", Guard(true)),
        (
            "planning.execution.early_termination.max_consecutive_failures",
            Limit,
        ),
        ("planning.security.allowed_tools", Allowlist),
        ("planning.security.forbidden_tools", NarrowingList),
        ("planning.security.require_approval", NarrowingList),
        ("planning.logging.level", Neutral),
        ("planning.logging.mask_sensitive_data", Guard(true)),
        ("planning.logging.sensitive_patterns", NarrowingList),
        ("planning.permissions.allowed_users", Allowlist),
        ("planning.permissions.auto_execution_allowed", Widening),
        (
            "planning.permissions.always_require_approval",
            NarrowingList,
        ),
        ("planning.environment_setup.enabled", Neutral),
        (
            "planning.environment_setup.execution.command_timeout_seconds",
            Limit,
        ),
        ("planning.environment_setup.execution.max_retries", Limit),
        (
            "planning.environment_setup.execution.resolve_as_of",
            Neutral,
        ),
        ("planning.environment_setup.execution.max_parallel", Limit),
        ("planning.environment_setup.verification", Neutral),
        ("planning.environment_setup.regeneration", Neutral),
        ("planning.environment_setup.analysis", Neutral),
        (
            "planning.environment_setup.security.allowed_commands",
            Widening,
        ),
        (
            "planning.environment_setup.security.forbidden_patterns",
            NarrowingList,
        ),
        ("planning.environment_setup.plugins.enabled", Guard(false)),
        ("planning.environment_setup.resources.cpu_limit", Limit),
        ("planning.environment_setup.resources.memory_limit", Limit),
        (
            "planning.environment_setup.resources.timeout_seconds",
            Limit,
        ),
        ("planning.environment_setup.resources.disk_limit", Limit),
        (
            "planning.environment_setup.network.allowed_domains",
            Widening,
        ),
        ("planning.environment_setup.plugins.paths", Widening),
        ("planning.environment_setup.plugins.timeout_seconds", Limit),
        ("planning.task_specific", Neutral),
        ("llm.default_provider", TrustedProvider),
        ("llm.providers", Widening),
        ("llm.budgets.planning", Limit),
        ("llm.budgets.planning_context", Limit),
        ("llm.budgets.reflection", Limit),
        ("llm.budgets.task", Limit),
        ("llm.budgets.conversation", Limit),
        ("llm.budgets.agent_step_cost_usd", Limit),
        ("llm.budgets.agent_step_turns", Limit),
        ("llm.pricing", Neutral),
        ("runs.root", RepositoryPath),
        ("runner.max_parallel_workers", Limit),
        ("runner.agent_cmd", Widening),
        ("runner.agent", Widening),
        ("runner.agent_model", Neutral),
        ("runner.agent_env", Widening),
        ("runner.agent_state", Widening),
        ("runner.step_workspace", Neutral),
        ("mcp.servers", Widening),
        ("sandbox.mode", Widening),
        (
            "shell_environment_policy.inherit",
            Ordered(&["all", "toolchain", "core", "none"]),
        ),
        (
            "shell_environment_policy.ignore_default_excludes",
            Guard(false),
        ),
        ("shell_environment_policy.exclude", NarrowingList),
        ("shell_environment_policy.keep", Widening),
        ("shell_environment_policy.set", Widening),
        ("forges.github", Widening),
        ("forges.gitlab", Widening),
        ("forges.comment", Widening),
        ("forges.operations", Allowlist),
        ("forges.rate_limit_wait", Limit),
        ("telemetry.otlp_endpoint", Widening),
        ("telemetry.otlp_protocol", Neutral),
        ("telemetry.service_name", Neutral),
        ("task_planning.enabled", Neutral),
        ("task_planning.size_estimation", Neutral),
        ("task_planning.chunking", Neutral),
        ("task_planning.execution.max_parallel_workers", Limit),
        ("task_planning.execution.worker_timeout_ms", Limit),
        ("task_planning.execution.default_strategy", Neutral),
    ]
};

/// The class of a dotted key (`planning.task_specific.<type>.x` as `planning.x`):
/// the entry of [`KEY_CLASSES`] for it or its nearest parent; `None` when there is
/// none (then the key is refused).
pub fn class_of(key: &str) -> Option<KeyClass> {
    let key = match key.strip_prefix("planning.task_specific.") {
        Some(rest) => match rest.split_once('.') {
            Some((_, inner)) => format!("planning.{inner}"),
            None => return Some(KeyClass::Neutral),
        },
        None => key.to_string(),
    };
    let mut cur = key.as_str();
    loop {
        if let Some((_, class)) = KEY_CLASSES.iter().find(|(k, _)| *k == cur) {
            return Some(*class);
        }
        cur = cur.rsplit_once('.')?.0;
    }
}

/// A key of an untrusted repository's file that was not applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// Dotted (`shell_environment_policy.keep`, `llm.providers[0].base_url`).
    pub key: String,
    /// Why: the rule of its class ([`KeyClass::rule`]).
    pub rule: String,
}

/// Sections ignored whole, with the sub-keys named in the warning.
const WHOLE_LISTS: &[(&str, &[&str])] = &[
    (
        "llm.providers",
        &["base_url", "api_key_env", "headers", "agent_cli"],
    ),
    ("mcp.servers", &["command", "args", "env"]),
];

/// Removes from `repo` (an untrusted repository's config file, as JSON, already
/// validated) every key that would widen the trusted layers `base` (defaults and
/// user config), by its [`KeyClass`]; narrowing lists are added to those of `base`.
/// Returns the filtered value and each refused key.
pub fn filter_untrusted(mut repo: Value, base: &Value) -> (Value, Vec<Refused>) {
    let mut refused = Vec::new();
    filter_object(&mut repo, base, base, "", &mut refused);
    // `planning.task_specific.<type>` is merged over `planning` later: the same
    // rules apply inside each entry, against the trusted `planning`.
    if let Some(Value::Object(specific)) = repo
        .get_mut("planning")
        .and_then(|p| p.get_mut("task_specific"))
    {
        for (task, entry) in specific.iter_mut() {
            let mut wrapped = json_object([("planning", std::mem::take(entry))]);
            let mut inner = Vec::new();
            filter_object(&mut wrapped, base, base, "", &mut inner);
            refused.extend(inner.into_iter().map(|r| {
                Refused {
                    key: r
                        .key
                        .strip_prefix("planning.")
                        .map(|rest| format!("planning.task_specific.{task}.{rest}"))
                        .unwrap_or(r.key),
                    rule: r.rule,
                }
            }));
            *entry = wrapped
                .get_mut("planning")
                .map(std::mem::take)
                .unwrap_or(Value::Null);
        }
    }
    (repo, refused)
}

/// [`filter_untrusted`] for an untrusted repository's `task-planning.json` (its keys
/// are classified as `task_planning.…`); `base` is the default task-planning value.
pub fn filter_untrusted_task_planning(repo: Value, base: &Value) -> (Value, Vec<Refused>) {
    let mut wrapped = json_object([("task_planning", repo)]);
    let base = json_object([("task_planning", base.clone())]);
    let mut refused = Vec::new();
    filter_object(&mut wrapped, &base, &base, "", &mut refused);
    let kept = wrapped
        .get_mut("task_planning")
        .map(std::mem::take)
        .unwrap_or(Value::Null);
    (kept, refused)
}

fn json_object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// Applies the classes to each key of the object `repo` at `at` (dotted).
fn filter_object(
    repo: &mut Value,
    base: &Value,
    root: &Value,
    at: &str,
    refused: &mut Vec<Refused>,
) {
    let Value::Object(map) = repo else {
        return;
    };
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        let path = if at.is_empty() {
            k.clone()
        } else {
            format!("{at}.{k}")
        };
        if path == "planning.task_specific" {
            continue; // filtered entry by entry by the caller
        }
        let base_v = base.get(&k).unwrap_or(&Value::Null);
        let exact = KEY_CLASSES.iter().any(|(key, _)| *key == path);
        let below = KEY_CLASSES
            .iter()
            .any(|(key, _)| key.starts_with(&format!("{path}.")));
        if !exact && below && map.get(&k).is_some_and(Value::is_object) {
            if let Some(child) = map.get_mut(&k) {
                filter_object(child, base_v, root, &path, refused);
                // A section emptied by the rules is no setting of its own.
                if child.as_object().is_some_and(|m| m.is_empty()) {
                    map.remove(&k);
                }
            }
            continue;
        }
        let class = class_of(&path).unwrap_or(KeyClass::Widening);
        let Some(value) = map.remove(&k) else {
            continue;
        };
        match apply(class, value, base_v, root) {
            Ok(kept) => {
                map.insert(k, kept);
            }
            Err(value) => {
                let rule = class.rule();
                refused.extend(refused_names(&path, &value).into_iter().map(|key| Refused {
                    key,
                    rule: rule.clone(),
                }));
            }
        }
    }
}

/// The names a refused value is reported under (the sub-keys of a whole list).
fn refused_names(path: &str, value: &Value) -> Vec<String> {
    let mut named = Vec::new();
    if let Some((_, children)) = WHOLE_LISTS.iter().find(|(p, _)| *p == path)
        && let Value::Array(items) = value
    {
        for (i, item) in items.iter().enumerate() {
            for c in *children {
                if item.get(c).is_some() {
                    named.push(format!("{path}[{i}].{c}"));
                }
            }
        }
    }
    if named.is_empty() {
        named.push(path.to_string());
    }
    named
}

/// The value kept for a key of class `class` (`Err` with the value when refused);
/// `trusted` is the trusted layers' value of the same key, `root` their whole value.
fn apply(class: KeyClass, value: Value, trusted: &Value, root: &Value) -> Result<Value, Value> {
    // Saying what the trusted layers already say widens nothing.
    if value == *trusted && class != KeyClass::NarrowingList {
        return Ok(value);
    }
    let keep = match class {
        KeyClass::Neutral => true,
        KeyClass::Widening => false,
        KeyClass::NarrowingList => {
            let Value::Array(extra) = &value else {
                return Err(value);
            };
            let mut union: Vec<Value> = trusted.as_array().cloned().unwrap_or_default();
            for v in extra {
                if !union.contains(v) {
                    union.push(v.clone());
                }
            }
            return Ok(Value::Array(union));
        }
        KeyClass::Allowlist => match (&value, trusted.as_array()) {
            (Value::Array(list), Some(t)) if !t.is_empty() => {
                !list.is_empty() && list.iter().all(|v| t.contains(v))
            }
            (Value::Array(list), _) => !list.is_empty(),
            _ => false,
        },
        KeyClass::Limit => limit_not_above(&value, trusted),
        KeyClass::Guard(safe) => value == Value::Bool(safe),
        KeyClass::Ordered(order) => {
            let rank = |v: &Value| v.as_str().and_then(|s| order.iter().position(|o| *o == s));
            match (rank(&value), rank(trusted)) {
                (Some(r), Some(t)) => r >= t,
                _ => false,
            }
        }
        KeyClass::RepositoryPath => value.as_str().is_some_and(|p| !leaves_repository(p)),
        KeyClass::TrustedProvider => value.as_str().is_some_and(|want| {
            get(root, &["llm", "providers"])
                .and_then(Value::as_array)
                .is_some_and(|ps| {
                    ps.iter()
                        .any(|p| p.get("name").and_then(Value::as_str) == Some(want))
                })
        }),
    };
    if keep { Ok(value) } else { Err(value) }
}

/// A number not above the trusted one; a section of limits, each of them.
fn limit_not_above(value: &Value, trusted: &Value) -> bool {
    match (value, trusted) {
        (Value::Number(v), Value::Number(t)) => match (v.as_f64(), t.as_f64()) {
            (Some(v), Some(t)) => v <= t,
            _ => false,
        },
        (Value::Object(v), Value::Object(t)) => v
            .iter()
            .all(|(k, v)| t.get(k).is_some_and(|t| limit_not_above(v, t))),
        // Sizes (`resources.memory_limit: 2g` under a trusted `4g`).
        (Value::String(_) | Value::Number(_), Value::String(_) | Value::Number(_)) => {
            let size = |x: &Value| match x {
                Value::String(s) => crate::ByteSize::parse(s).ok(),
                Value::Number(n) => n
                    .as_u64()
                    .and_then(|n| crate::ByteSize::parse(&n.to_string()).ok()),
                _ => None,
            };
            matches!((size(value), size(trusted)), (Some(v), Some(t)) if v.0 <= t.0)
        }
        _ => false,
    }
}

fn leaves_repository(p: &str) -> bool {
    let path = Path::new(p);
    p.starts_with('~')
        || path.is_absolute()
        || path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
}

fn get<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |cur, seg| cur.get(seg))
}
