//! Writing one value into a config file (`/planning set KEY VALUE` in
//! `dandori repl`): the key is resolved and the value checked exactly as a
//! `-c KEY=VALUE` would be ([`crate::load`]), then the file the layering reads is
//! rewritten atomically, keeping its other keys (comments are not kept).
//!
//! * `task_planning.…` keys go to the `task-planning.json` in use, else
//!   `.dandori/task-planning.json` (JSON);
//! * other keys go to the `--config` file, else the config file found in the
//!   repository, else `.dandori/config.yaml` (YAML).

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::{ConfigError, LoadOptions, Loaded, load};

/// What [`set_value`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct SetOutcome {
    /// The full dotted key (`task_planning.chunking.auto_chunk_threshold`).
    pub key: String,
    /// The value written.
    pub value: Value,
    /// The file written.
    pub file: PathBuf,
    /// Whether the file was created.
    pub created: bool,
    /// The configuration as loaded again afterwards (with the same options).
    pub reloaded: Loaded,
    /// The effective value after the reload, when it differs from `value` (an
    /// environment variable or a `-c` wins, or the repository is not trusted).
    pub overridden_by_later_layer: Option<Value>,
}

/// Every dotted leaf key of the configuration (`planning.max_subtasks`, …) and of
/// `task-planning.json` (prefixed `task_planning.`), sorted. Free-form maps
/// (`planning.task_specific`) are listed as their prefix only.
pub fn known_keys(loaded: &Loaded) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(v) = serde_json::to_value(&loaded.config) {
        leaf_keys(&v, "", &mut out);
    }
    if let Ok(v) = serde_json::to_value(&loaded.task_planning) {
        leaf_keys(&v, "task_planning", &mut out);
    }
    out.sort();
    out.dedup();
    out
}

/// The dotted leaf keys of a configuration value, under `prefix`.
pub(crate) fn leaf_keys(v: &Value, prefix: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) if !m.is_empty() && !prefix.ends_with("task_specific") => {
            for (k, child) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                leaf_keys(child, &key, out);
            }
        }
        _ if !prefix.is_empty() => out.push(prefix.to_string()),
        _ => {}
    }
}

/// The full key a short name means: a full dotted key as it is, else the one key
/// whose last segments are `name` (`auto_chunk_threshold` →
/// `task_planning.chunking.auto_chunk_threshold`), a `task-planning.json` key
/// winning over a config.yaml one (`max_subtasks` →
/// `task_planning.chunking.max_subtasks`). Unknown and ambiguous names
/// are [`ConfigError::UnknownKey`] / [`ConfigError::InvalidOverride`].
pub fn resolve_key(loaded: &Loaded, name: &str) -> Result<String, ConfigError> {
    let keys = known_keys(loaded);
    if keys.iter().any(|k| k == name) || name.starts_with("planning.task_specific.") {
        return Ok(name.to_string());
    }
    let suffix = format!(".{name}");
    let mut matches: Vec<&String> = keys.iter().filter(|k| k.ends_with(&suffix)).collect();
    // The REPL's `/planning` is about task-planning.json first (seed 003 §8.1–8.2:
    // `/planning set max_parallel_workers 5`): one match there wins.
    let task: Vec<&String> = matches
        .iter()
        .copied()
        .filter(|k| k.starts_with("task_planning."))
        .collect();
    if task.len() == 1 {
        matches = task;
    }
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ConfigError::UnknownKey {
            key: name.to_string(),
            suggestion: crate::diagnostic::nearest(
                name,
                keys.iter().map(String::as_str),
                usize::MAX,
            )
            .map(str::to_string),
        }),
        many => Err(ConfigError::InvalidOverride {
            arg: name.to_string(),
            reason: format!(
                "ambiguous key; say which: {}",
                many.iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }),
    }
}

/// Sets `name` (full or short key) to `raw` (read as YAML, like `-c`) in the file
/// the layering of `opts` reads, after checking it as `-c` would.
pub fn set_value(opts: &LoadOptions, name: &str, raw: &str) -> Result<SetOutcome, ConfigError> {
    let before = load(opts)?;
    let key = resolve_key(&before, name)?;
    // The same checks as `-c KEY=VALUE`: known key, right type.
    let mut checked = opts.clone();
    checked.overrides.push(format!("{key}={raw}"));
    load(&checked)?;
    let value = serde_norway::from_str::<serde_norway::Value>(raw)
        .map_err(|e| e.to_string())
        .and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
        .map_err(|reason| ConfigError::InvalidOverride {
            arg: format!("{key}={raw}"),
            reason,
        })?;
    let file = target_file(opts, &before, &key);
    let (rel, json) = match key.strip_prefix("task_planning.") {
        Some(rel) => (rel.to_string(), true),
        None => (key.clone(), false),
    };
    let created = !file.is_file();
    let unreadable = |reason: String| ConfigError::UserConfig {
        path: file.clone(),
        reason: format!("{reason}; not rewritten (fix the file first)"),
    };
    let mut doc = if created {
        Value::Object(Map::new())
    } else if json {
        let text = dandori_fs::read_to_string(&file)?;
        if text.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str::<Value>(&text).map_err(|e| unreadable(e.to_string()))?
        }
    } else {
        crate::load::read_yaml(&file).map_err(unreadable)?
    };
    if !doc.is_object() {
        return Err(unreadable("not a mapping".to_string()));
    }
    crate::load::set_path(&mut doc, &rel, value.clone()).map_err(unreadable)?;
    let text = if json {
        serde_json::to_string_pretty(&doc)
            .map(|s| s + "\n")
            .map_err(|e| ConfigError::Internal(e.to_string()))?
    } else {
        serde_norway::to_string(&doc).map_err(|e| ConfigError::Internal(e.to_string()))?
    };
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        dandori_fs::create_dir_all(dir)?;
    }
    dandori_fs::write_atomic(&file, text)?;
    let reloaded = load(opts)?;
    let effective = effective_value(&reloaded, &key);
    let overridden_by_later_layer = effective.filter(|v| *v != value);
    Ok(SetOutcome {
        key,
        value,
        file,
        created,
        reloaded,
        overridden_by_later_layer,
    })
}

/// The effective value of a full key.
pub fn effective_value(loaded: &Loaded, key: &str) -> Option<Value> {
    let (root, rel) = match key.strip_prefix("task_planning.") {
        Some(rel) => (serde_json::to_value(&loaded.task_planning).ok()?, rel),
        None => (serde_json::to_value(&loaded.config).ok()?, key),
    };
    let mut cur = &root;
    for seg in rel.split('.') {
        cur = cur.get(seg)?;
    }
    Some(cur.clone())
}

/// The file a full key is written to.
pub fn target_file(opts: &LoadOptions, loaded: &Loaded, key: &str) -> PathBuf {
    if key.starts_with("task_planning.") {
        opts.task_planning_path
            .clone()
            .or_else(|| loaded.task_planning_file.clone())
            .unwrap_or_else(|| opts.repo.join(".dandori/task-planning.json"))
    } else {
        opts.config_path
            .clone()
            .or_else(|| loaded.config_file.clone())
            .unwrap_or_else(|| opts.repo.join(".dandori/config.yaml"))
    }
}
