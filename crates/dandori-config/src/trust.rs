//! Trust: what a repository's own config file may set.
//!
//! A `dandori.yaml` / `config.yaml` / `.dandori/config.yaml` committed in a
//! repository was written by whoever wrote the repository. Unless the user trusted
//! that repository, every key that widens what runs or where data goes is ignored
//! (with a warning naming the key): provider endpoints, API-key variable names and
//! headers, MCP servers, the agent command, command and tool allowlist additions,
//! sandbox and network relaxations, turning masking off, run or cache directories
//! outside the repository. Lists that only narrow (forbidden patterns and tools,
//! approvals, sensitive patterns) are added to the trusted layers' lists instead of
//! replacing them.
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
    let text = serde_yaml::to_string(doc).map_err(|e| ConfigError::Internal(e.to_string()))?;
    if let Some(dir) = path.parent() {
        dandori_fs::create_dir_all(dir)?;
    }
    dandori_fs::write_atomic(path, text)?;
    Ok(())
}

/// Lists of an untrusted layer that only narrow: appended to the trusted layers'
/// lists instead of replacing them.
const NARROWING_LISTS: &[&[&str]] = &[
    &["planning", "security", "forbidden_tools"],
    &["planning", "security", "require_approval"],
    &["planning", "permissions", "always_require_approval"],
    &["planning", "logging", "sensitive_patterns"],
    &[
        "planning",
        "environment_setup",
        "security",
        "forbidden_patterns",
    ],
];

/// Sections ignored whole, with the sub-keys named in the warning.
const WHOLE_LISTS: &[(&[&str], &[&str])] = &[
    (
        &["llm", "providers"],
        &["base_url", "api_key_env", "headers", "agent_cli"],
    ),
    (&["mcp", "servers"], &["command", "args", "env"]),
];

/// Whether a key name (the last segment of a path) widens what runs or where data
/// goes, wherever it appears. Covers keys added later (a `sandbox: off`, a
/// `network: true`, an `extra_env`) without a change here.
fn widening_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("sandbox")
        || n.contains("network")
        || n.contains("writable")
        || n.contains("allow")
        || n.contains("trust")
        || n.contains("url")
        || n.contains("endpoint")
        || n.contains("header")
        || n.contains("proxy")
        || n.ends_with("api_key_env")
        || n == "env"
        || n.ends_with("_env")
        || n.starts_with("env_")
        || n == "cmd"
        || n.ends_with("_cmd")
        || n == "command"
        || n == "commands"
        || n.ends_with("_command")
        || n.ends_with("_commands")
        || n == "args"
        || n == "mcp"
        || n == "unsafe"
        || n.starts_with("no_")
        || n.starts_with("disable")
        || n.starts_with("skip_")
}

/// Whether a key name is a guard that `false` turns off (`require_human_approval`,
/// `mask_sensitive_data`, an `enforce_…` or `strict` switch added later).
fn guard_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    [
        "require", "approval", "mask", "enforce", "strict", "confine", "protect",
    ]
    .iter()
    .any(|w| n.contains(w))
}

/// Keys whose value is a path: ignored when the path leaves the repository.
const PATH_KEYS: &[&[&str]] = &[&["runs", "root"], &["planning", "cache", "dir"]];

/// Removes from `repo` (an untrusted repository's config file, as JSON) every key
/// that widens what runs or where data goes; narrowing lists are appended to those
/// of `base` (the trusted layers below). Returns the filtered value and the dotted
/// key of each ignored setting.
pub fn filter_untrusted(mut repo: Value, base: &Value) -> (Value, Vec<String>) {
    let mut ignored = Vec::new();
    filter_layer(&mut repo, base, "", &mut ignored);
    // `planning.task_specific.<type>` is merged over `planning` later: the same
    // rules apply inside each entry.
    if let Some(Value::Object(specific)) = repo
        .get_mut("planning")
        .and_then(|p| p.get_mut("task_specific"))
    {
        for (task, entry) in specific.iter_mut() {
            let mut wrapped = json_object([("planning", std::mem::take(entry))]);
            filter_layer(
                &mut wrapped,
                base,
                &format!("planning.task_specific.{task}."),
                &mut ignored,
            );
            *entry = wrapped
                .get_mut("planning")
                .map(std::mem::take)
                .unwrap_or(Value::Null);
        }
    }
    (repo, ignored)
}

fn json_object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// `prefix` renames `planning.` in reported keys (task_specific entries).
fn filter_layer(repo: &mut Value, base: &Value, prefix: &str, ignored: &mut Vec<String>) {
    let name = |path: &str| match prefix {
        "" => path.to_string(),
        p => format!("{p}{}", path.strip_prefix("planning.").unwrap_or(path)),
    };
    for (path, children) in WHOLE_LISTS {
        if let Some(v) = take(repo, path) {
            let dotted = path.join(".");
            let mut named = Vec::new();
            if let Value::Array(items) = &v {
                for (i, item) in items.iter().enumerate() {
                    for c in *children {
                        if item.get(c).is_some() {
                            named.push(name(&format!("{dotted}[{i}].{c}")));
                        }
                    }
                }
            }
            if named.is_empty() {
                named.push(name(&dotted));
            }
            ignored.extend(named);
        }
    }
    // The default provider may only pick one of the trusted providers.
    if let Some(v) = get(repo, &["llm", "default_provider"]) {
        let known = v.as_str().is_some_and(|want| {
            get(base, &["llm", "providers"])
                .and_then(Value::as_array)
                .is_some_and(|ps| {
                    ps.iter()
                        .any(|p| p.get("name").and_then(Value::as_str) == Some(want))
                })
        });
        if !known && !v.is_null() {
            take(repo, &["llm", "default_provider"]);
            ignored.push(name("llm.default_provider"));
        }
    }
    // An allowlist of tools narrows when nothing trusted set one; otherwise it may
    // only keep tools the trusted list already allows.
    if let Some(Value::Array(tools)) = get(repo, &["planning", "security", "allowed_tools"]) {
        let trusted: Vec<&Value> = get(base, &["planning", "security", "allowed_tools"])
            .and_then(Value::as_array)
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let widens = tools.is_empty() && !trusted.is_empty()
            || !trusted.is_empty() && tools.iter().any(|t| !trusted.contains(&t));
        if widens {
            take(repo, &["planning", "security", "allowed_tools"]);
            ignored.push(name("planning.security.allowed_tools"));
        }
    }
    for path in PATH_KEYS {
        if let Some(Value::String(p)) = get(repo, path)
            && leaves_repository(p)
        {
            take(repo, path);
            ignored.push(name(&path.join(".")));
        }
    }
    for path in NARROWING_LISTS {
        if let Some(Value::Array(extra)) = get(repo, path) {
            let mut union: Vec<Value> = get(base, path)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for v in extra {
                if !union.contains(v) {
                    union.push(v.clone());
                }
            }
            set(repo, path, Value::Array(union));
        }
    }
    let mut at = Vec::new();
    let mut stripped = Vec::new();
    strip_widening(repo, &mut at, &mut stripped);
    ignored.extend(stripped.iter().map(|p| name(p)));
}

/// Paths [`strip_widening`] leaves to their own rules.
const STRIP_EXEMPT: &[&[&str]] = &[
    &["planning", "task_specific"],
    &["planning", "environment_setup", "analysis"],
    &["planning", "security", "allowed_tools"],
];

/// Removes every key whose name widens (see [`widening_name`]) and every guard
/// set to `false` (see [`guard_name`]), at any depth, except the [`STRIP_EXEMPT`]
/// paths.
fn strip_widening(v: &mut Value, at: &mut Vec<String>, report: &mut Vec<String>) {
    let Value::Object(m) = v else {
        return;
    };
    let keys: Vec<String> = m.keys().cloned().collect();
    for k in keys {
        at.push(k.clone());
        let path: Vec<&str> = at.iter().map(String::as_str).collect();
        if STRIP_EXEMPT.contains(&path.as_slice()) {
            at.pop();
            continue;
        }
        let relaxes = m.get(&k) == Some(&Value::Bool(false)) && guard_name(&k);
        if widening_name(&k) || relaxes {
            // A section emptied by the rules above is no setting of its own.
            if m.remove(&k).is_some_and(|v| v != Value::Object(Map::new())) {
                report.push(at.join("."));
            }
        } else if let Some(child) = m.get_mut(&k) {
            strip_widening(child, at, report);
        }
        at.pop();
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

fn take(v: &mut Value, path: &[&str]) -> Option<Value> {
    let (last, parents) = path.split_last()?;
    let mut cur = v;
    for seg in parents {
        cur = cur.get_mut(seg)?;
    }
    cur.as_object_mut()?.remove(*last)
}

fn set(v: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut cur = v;
    for seg in parents {
        match cur.get_mut(seg) {
            Some(next) => cur = next,
            None => return,
        }
    }
    if let Some(m) = cur.as_object_mut() {
        m.insert(last.to_string(), value);
    }
}
