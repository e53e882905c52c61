//! Loading the configuration: defaults < user config < file < environment <
//! `-c key=value`.
//!
//! 1. **Defaults**: the `Default` of every section.
//! 2. **User config**: the user-level `config.yaml` ([`crate::trust::user_config_path`]:
//!    `$DANDORI_CONFIG_HOME`, `$XDG_CONFIG_HOME/dandori`, `~/.config/dandori`), trusted;
//!    its `trusted_projects` say which repositories are trusted.
//! 3. **File**: `config.yaml` (seed 000 §9.1, seed 002 §8.1), deep-merged over the
//!    defaults; then, when a task type is given, `planning.task_specific.<type>`
//!    merged over `planning` (seed 000 §9.3). Config files fail closed: one that is
//!    not YAML, has an unknown key or a wrong value (there or in any task-type entry)
//!    is a [`ConfigError::File`] naming the file, the line, the key and the nearest
//!    valid key — never the defaults, which would drop the file's narrowing keys with
//!    the broken one. A file named with `--config` that does not exist is an error.
//!    A file found in the repository of an untrusted repository can only narrow: it
//!    is filtered by [`crate::trust::filter_untrusted`] (a warning per refused key);
//!    a file named with `--config` is the user's own and is not filtered.
//! 4. **Environment**: the variables of [`crate::env_vars`], each applied on its own;
//!    a value of the wrong type is ignored with a warning.
//! 5. **`-c key=value`**: a dotted key and a YAML value
//!    (`-c planning.max_subtasks=5`, `-c 'planning.security.forbidden_tools=[git_push]'`).
//!    Keys starting with `task_planning.` set `task-planning.json` values. A
//!    malformed argument, an unknown key or a wrong type is an error: it was typed
//!    by the user just now.
//!
//! `task-planning.json` (seed 003 §8.1) is read the same way (defaults < file <
//! `-c task_planning.…`), from the first of `task-planning.json`,
//! `.dandori/task-planning.json`, `.claude/task-planning.json` in the repository.
//! It fails closed like `config.yaml`: JSON that cannot be read, an unknown key or
//! a wrong value is a [`ConfigError::File`] naming the file, the line and the key
//! (the CLI's `CONFIG_INVALID`, exit 2). An untrusted repository's copy can only
//! narrow too.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::{Config, ConfigError, TaskPlanningConfig, diagnostic, env_vars, trust};

/// Config files looked for in the repository when `--config` is not given.
pub const DEFAULT_CONFIG_FILES: &[&str] = &["dandori.yaml", "config.yaml", ".dandori/config.yaml"];
/// `task-planning.json` locations looked for in the repository.
pub const DEFAULT_TASK_PLANNING_FILES: &[&str] = &[
    "task-planning.json",
    ".dandori/task-planning.json",
    ".claude/task-planning.json",
];
/// Keys under these prefixes are free-form maps: `-c` may create new entries.
const MAP_PREFIXES: &[&str] = &[
    "planning.task_specific.",
    "planning.environment_setup.analysis.file_patterns.",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// The repository whose default config files are looked for.
    pub repo: PathBuf,
    /// `--config FILE`.
    pub config_path: Option<PathBuf>,
    /// An explicit `task-planning.json`.
    pub task_planning_path: Option<PathBuf>,
    /// The environment, passed explicitly (usually `std::env::vars()` collected).
    pub env: BTreeMap<String, String>,
    /// `-c key=value` arguments, in order.
    pub overrides: Vec<String>,
    /// Task type for `planning.task_specific` (`github_issue`, `github_pr`, …).
    pub task_type: Option<String>,
    /// The user-level config file; `None` = found from `env`
    /// ([`crate::trust::user_config_path`]). Tests point it into a temporary
    /// directory (or leave `env` without `HOME`) so the real one is never read.
    pub user_config_path: Option<PathBuf>,
}

/// Something ignored while loading: the run goes on with the previous layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConfigWarning {
    /// The file path or the variable name.
    pub source: String,
    pub message: String,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.source, self.message)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub config: Config,
    pub task_planning: TaskPlanningConfig,
    pub warnings: Vec<ConfigWarning>,
    /// The config file used, if any.
    pub config_file: Option<PathBuf>,
    /// The task-planning file used, if any.
    pub task_planning_file: Option<PathBuf>,
    /// The user-level config file read, if any.
    pub user_config_file: Option<PathBuf>,
    /// Whether the repository's own config file was taken whole: the repository is
    /// trusted, or the file was named with `--config`, or there was none.
    pub repo_trusted: bool,
}

/// Loads the configuration (see the module docs for precedence).
pub fn load(opts: &LoadOptions) -> Result<Loaded, ConfigError> {
    let mut warnings = Vec::new();

    // ---- user config ----
    let mut config = to_json(&Config::default())?;
    let user_config_file = opts
        .user_config_path
        .clone()
        .or_else(|| trust::user_config_path(&opts.env))
        .filter(|p| p.is_file());
    let mut trusted = Vec::new();
    if let Some(path) = &user_config_file {
        let (text, file) = read_config_file(path)?;
        let (file, listed) = take_trusted_projects(file);
        validate_config_file(path, &text, &file)?;
        trusted = listed;
        config = merge_file(&config, file, path, &text)?;
    }

    // ---- config.yaml ----
    let config_file = match &opts.config_path {
        Some(p) => {
            dandori_fs::metadata(p)?;
            Some(p.clone())
        }
        None => first_existing(&opts.repo, DEFAULT_CONFIG_FILES),
    };
    let listed = trust::is_trusted(&trusted, &opts.repo);
    let repo_trusted = opts.config_path.is_some() || config_file.is_none() || listed;
    let untrusted_warning = |path: &Path, refused: trust::Refused| ConfigWarning {
        source: path.display().to_string(),
        message: format!(
            "`{}` ignored ({}, {}): the repository is not trusted (trust it with `dandori trust {}`)",
            refused.key,
            trust::UNTRUSTED_CONFIG_KEY,
            refused.rule,
            opts.repo.display()
        ),
    };
    if let Some(path) = &config_file {
        let (text, file) = read_config_file(path)?;
        // Trust is the user's to give, never the repository's.
        let (mut file, _) = take_trusted_projects(file);
        validate_config_file(path, &text, &file)?;
        if !repo_trusted {
            let (kept, refused) = trust::filter_untrusted(file, &config);
            file = kept;
            warnings.extend(refused.into_iter().map(|r| untrusted_warning(path, r)));
        }
        config = merge_file(&config, file, path, &text)?;
    }
    if let Some(task_type) = &opts.task_type {
        let specific = config
            .pointer(&format!(
                "/planning/task_specific/{}",
                escape_pointer(task_type)
            ))
            .cloned();
        if let Some(specific) = specific {
            let mut merged = config.clone();
            if let Some(planning) = merged.get_mut("planning") {
                merge(planning, specific);
            }
            // Each entry was checked with its file; this only fails on a `-c` entry.
            diagnostic::check::<Config>(&merged).map_err(|invalid| {
                ConfigError::InvalidOverride {
                    arg: format!("planning.task_specific.{task_type}"),
                    reason: invalid.to_string(),
                }
            })?;
            config = merged;
        }
    }

    // ---- environment ----
    for (var, key) in env_vars::OVERRIDES {
        let Some(raw) = opts.env.get(*var) else {
            continue;
        };
        let mut merged = config.clone();
        let value = yaml_scalar(raw);
        let applied = set_path(&mut merged, key, value).and_then(|()| check::<Config>(&merged));
        match applied {
            Ok(()) => config = merged,
            Err(message) => warnings.push(ConfigWarning {
                source: (*var).to_string(),
                message: format!("`{raw}` is not valid for {key}: {message}; ignored"),
            }),
        }
    }

    // ---- task-planning.json ----
    // Fails closed like config.yaml: a file that is not JSON, has an unknown key or a
    // wrong value is an error naming the file, the line and the key. Seed 003 §9.1's
    // "broken file → defaults" would drop the file's narrowing keys with the broken one.
    let mut task_planning = to_json(&TaskPlanningConfig::default())?;
    let task_planning_file = match &opts.task_planning_path {
        Some(p) => {
            dandori_fs::metadata(p)?;
            Some(p.clone())
        }
        None => first_existing(&opts.repo, DEFAULT_TASK_PLANNING_FILES),
    };
    if let Some(path) = &task_planning_file {
        let file = read_task_planning_file(path)?;
        // Only the repository's own file is filtered: `--task-planning` is the user's.
        let file = if listed || opts.task_planning_path.is_some() {
            file
        } else {
            let (kept, refused) = trust::filter_untrusted_task_planning(file, &task_planning);
            warnings.extend(refused.into_iter().map(|r| untrusted_warning(path, r)));
            kept
        };
        merge(&mut task_planning, file);
    }

    // ---- -c key=value ----
    apply_overrides(&mut config, &mut task_planning, &opts.overrides)?;

    Ok(Loaded {
        config: from_json(config)?,
        task_planning: from_json(task_planning)?,
        warnings,
        config_file,
        task_planning_file,
        user_config_file,
        repo_trusted,
    })
}

/// Whether `overrides` (`-c key=value`) apply to the defaults: a malformed
/// argument, an unknown key or a wrong type is the error [`load`] gives. For the
/// commands that read no configuration file (`validate`, `graph`, `status`,
/// `trust --list`, …): a mistyped `-c` is refused there too, never ignored.
pub fn check_overrides(overrides: &[String]) -> Result<(), ConfigError> {
    let mut config = to_json(&Config::default())?;
    let mut task_planning = to_json(&TaskPlanningConfig::default())?;
    apply_overrides(&mut config, &mut task_planning, overrides)
}

/// Applies `-c key=value` arguments over `config` and `task_planning` (keys
/// starting with `task_planning.`), each checked as it is applied.
fn apply_overrides(
    config: &mut Value,
    task_planning: &mut Value,
    overrides: &[String],
) -> Result<(), ConfigError> {
    for arg in overrides {
        let (key, raw) = arg
            .split_once('=')
            .map(|(k, v)| (k.trim(), v))
            .filter(|(k, _)| !k.is_empty())
            .ok_or_else(|| ConfigError::InvalidOverride {
                arg: arg.clone(),
                reason: "expected KEY=VALUE, e.g. planning.max_subtasks=5".to_string(),
            })?;
        let value = serde_norway::from_str::<serde_norway::Value>(raw)
            .map_err(|e| e.to_string())
            .and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()))
            .map_err(|reason| ConfigError::InvalidOverride {
                arg: arg.clone(),
                reason,
            })?;
        let known = {
            let (target, rel) = match key.strip_prefix("task_planning.") {
                Some(rel) => (&*task_planning, rel),
                None => (&*config, key),
            };
            path_exists(target, rel)
                || MAP_PREFIXES
                    .iter()
                    .any(|p| key.starts_with(p) && key.len() > p.len())
        };
        if !known {
            let mut keys = Vec::new();
            crate::edit::leaf_keys(config, "", &mut keys);
            crate::edit::leaf_keys(task_planning, "task_planning", &mut keys);
            return Err(ConfigError::UnknownKey {
                key: key.to_string(),
                suggestion: diagnostic::nearest(key, keys.iter().map(String::as_str), usize::MAX)
                    .map(str::to_string),
            });
        }
        let (target, rel) = match key.strip_prefix("task_planning.") {
            Some(rel) => (&mut *task_planning, rel),
            None => (&mut *config, key),
        };
        let mut merged = target.clone();
        set_path(&mut merged, rel, value)
            .and_then(|()| {
                let checked = if key.starts_with("task_planning.") {
                    diagnostic::check::<TaskPlanningConfig>(&merged)
                } else {
                    diagnostic::check::<Config>(&merged)
                };
                checked.map_err(|invalid| invalid.to_string())
            })
            .map_err(|reason| ConfigError::InvalidOverride {
                arg: arg.clone(),
                reason,
            })?;
        *target = merged;
    }
    Ok(())
}

/// `task-planning.json` as a value that reads as a [`TaskPlanningConfig`]: JSON
/// that cannot be read, an unknown key or a wrong value is a [`ConfigError::File`]
/// naming the file, the line and the JSON path of the key.
fn read_task_planning_file(path: &Path) -> Result<Value, ConfigError> {
    let text = dandori_fs::read_to_string(path)?;
    let error = |line: Option<usize>, invalid: diagnostic::Invalid| ConfigError::File {
        path: path.to_path_buf(),
        line,
        invalid,
    };
    if text.len() > MAX_CONFIG_BYTES {
        return Err(error(
            None,
            diagnostic::Invalid {
                key: String::new(),
                reason: format!(
                    "CONFIG_TOO_LARGE: {} bytes exceeds the limit of {MAX_CONFIG_BYTES}",
                    text.len()
                ),
                suggestion: None,
            },
        ));
    }
    let file = serde_json::from_str::<Value>(&text).map_err(|e| {
        error(
            Some(e.line()),
            diagnostic::Invalid {
                key: String::new(),
                reason: format!("not JSON: {e}"),
                suggestion: None,
            },
        )
    })?;
    diagnostic::check::<TaskPlanningConfig>(&file)
        .map_err(|invalid| error(diagnostic::line_of(&text, &invalid.key), invalid))?;
    Ok(file)
}

/// A config file's text and value; YAML that cannot be read is an error naming
/// the line.
fn read_config_file(path: &Path) -> Result<(String, Value), ConfigError> {
    let text = dandori_fs::read_to_string(path)?;
    let file = parse_yaml(&text).map_err(|(line, reason)| ConfigError::File {
        path: path.to_path_buf(),
        line,
        invalid: diagnostic::Invalid {
            key: String::new(),
            reason,
            suggestion: None,
        },
    })?;
    Ok((text, file))
}

/// A config file (without `trusted_projects`) must read as a [`Config`] on its own,
/// and so must each of its `planning.task_specific` entries merged over `planning`:
/// an unknown key or a wrong value is an error naming the file, the line, the key
/// and the nearest valid one. Nothing falls back to defaults — with a security key
/// beside the broken one, the defaults would be a wider configuration than the file.
fn validate_config_file(path: &Path, text: &str, file: &Value) -> Result<(), ConfigError> {
    let located = |invalid: diagnostic::Invalid| ConfigError::File {
        path: path.to_path_buf(),
        line: diagnostic::line_of(text, &invalid.key),
        invalid,
    };
    diagnostic::check::<Config>(file).map_err(located)?;
    let specific = file
        .pointer("/planning/task_specific")
        .and_then(Value::as_object);
    for (task, entry) in specific.into_iter().flatten() {
        let wrapped = serde_json::json!({ "planning": entry });
        diagnostic::check::<Config>(&wrapped).map_err(|mut invalid| {
            invalid.key = match invalid.key.strip_prefix("planning") {
                Some(rest) => format!("planning.task_specific.{task}{rest}"),
                None => invalid.key,
            };
            if let Some(s) = &invalid.suggestion {
                invalid.suggestion = s
                    .strip_prefix("planning.")
                    .map(|rest| format!("planning.task_specific.{task}.{rest}"));
            }
            located(invalid)
        })?;
    }
    Ok(())
}

/// `file` deep-merged over `config`; it was validated alone, so a failure here is a
/// type the merge produced (a section replaced by a scalar).
fn merge_file(config: &Value, file: Value, path: &Path, text: &str) -> Result<Value, ConfigError> {
    let mut merged = config.clone();
    merge(&mut merged, file);
    diagnostic::check::<Config>(&merged).map_err(|invalid| ConfigError::File {
        path: path.to_path_buf(),
        line: diagnostic::line_of(text, &invalid.key),
        invalid,
    })?;
    Ok(merged)
}

/// A config file without its `trusted_projects`, and what they listed.
fn take_trusted_projects(mut file: Value) -> (Value, Vec<PathBuf>) {
    let listed = trust::trusted_projects(&file);
    if let Some(m) = file.as_object_mut() {
        m.remove(trust::TRUSTED_PROJECTS);
    }
    (file, listed)
}

fn first_existing(repo: &Path, names: &[&str]) -> Option<PathBuf> {
    names.iter().map(|n| repo.join(n)).find(|p| p.is_file())
}

fn to_json<T: Serialize>(value: &T) -> Result<Value, ConfigError> {
    serde_json::to_value(value).map_err(|e| ConfigError::Internal(e.to_string()))
}

fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ConfigError> {
    serde_json::from_value(value).map_err(|e| ConfigError::Internal(e.to_string()))
}

/// Whether `value` reads as a `T`; the error names the key path.
fn check<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(value, &mut track);
    match T::deserialize(de) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("{}: {e}", track.path())),
    }
}

pub(crate) fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = dandori_fs::read_to_string(path).map_err(|e| e.to_string())?;
    parse_yaml(&text).map_err(|(line, reason)| match line {
        Some(line) => format!("line {line}: {reason}"),
        None => reason,
    })
}

/// A config document as JSON; the error has the line when the parser gives one.
fn parse_yaml(text: &str) -> Result<Value, (Option<usize>, String)> {
    if text.trim().is_empty() {
        return Ok(Value::Object(Map::new()));
    }
    check_nesting(text).map_err(|e| (None, e))?;
    let yaml: serde_norway::Value = serde_norway::from_str(text)
        .map_err(|e| (e.location().map(|l| l.line()), e.to_string()))?;
    let json = serde_json::to_value(yaml).map_err(|e| (None, e.to_string()))?;
    match json {
        Value::Object(_) => Ok(json),
        Value::Null => Ok(Value::Object(Map::new())),
        _ => Err((
            None,
            "CONFIG_INVALID: the file is not a mapping of config sections".to_string(),
        )),
    }
}

/// Deepest flow-collection nesting (`[`, `{`) a config file may have. The YAML
/// scanner's work grows with the square of the open flow collections (100 KB of
/// `[` did not finish), and no real config nests deeper than a few levels.
pub const MAX_CONFIG_NESTING: usize = 64;
/// Largest config file read.
pub const MAX_CONFIG_BYTES: usize = 1024 * 1024;

/// Refuses, in one linear pass and before the YAML parser sees it, a file that is
/// too large or nests flow collections deeper than [`MAX_CONFIG_NESTING`] (quoted
/// scalars and comments are skipped).
fn check_nesting(text: &str) -> Result<(), String> {
    if text.len() > MAX_CONFIG_BYTES {
        return Err(format!(
            "CONFIG_TOO_LARGE: {} bytes exceeds the limit of {MAX_CONFIG_BYTES}",
            text.len()
        ));
    }
    let mut depth = 0usize;
    let mut line = 1usize;
    let mut chars = text.chars().peekable();
    let mut quote: Option<char> = None;
    let mut prev = '\n';
    while let Some(c) = chars.next() {
        if c == '\n' {
            line += 1;
        }
        match quote {
            Some(q) => {
                if c == '\\' && q == '"' {
                    chars.next();
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '\'' | '"' if prev.is_whitespace() || "[{,:".contains(prev) => quote = Some(c),
                '#' if prev.is_whitespace() => {
                    for n in chars.by_ref() {
                        if n == '\n' {
                            line += 1;
                            break;
                        }
                    }
                }
                '[' | '{' => {
                    depth += 1;
                    if depth > MAX_CONFIG_NESTING {
                        return Err(format!(
                            "CONFIG_TOO_DEEP: line {line}: collections nested deeper than {MAX_CONFIG_NESTING}"
                        ));
                    }
                }
                ']' | '}' => depth = depth.saturating_sub(1),
                _ => {}
            },
        }
        prev = c;
    }
    Ok(())
}

/// An environment value read as a YAML scalar (`true`, `5`, `warn`).
fn yaml_scalar(raw: &str) -> Value {
    serde_norway::from_str::<serde_norway::Value>(raw)
        .ok()
        .and_then(|v| serde_json::to_value(v).ok())
        .filter(|v| !v.is_object() && !v.is_array())
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

/// Deep merge: objects key by key, anything else replaced.
pub(crate) fn merge(base: &mut Value, over: Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(&k) {
                    Some(slot) => merge(slot, v),
                    None => {
                        b.insert(k, v);
                    }
                }
            }
        }
        (slot, v) => *slot = v,
    }
}

fn path_exists(root: &Value, dotted: &str) -> bool {
    let mut cur = root;
    for seg in dotted.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return false,
        }
    }
    true
}

pub(crate) fn set_path(root: &mut Value, dotted: &str, value: Value) -> Result<(), String> {
    let segs: Vec<&str> = dotted.split('.').collect();
    if segs.iter().any(|s| s.is_empty()) {
        return Err(format!("`{dotted}` is not a dotted key"));
    }
    let mut cur = root;
    for seg in &segs[..segs.len() - 1] {
        let obj = cur.as_object_mut().ok_or_else(|| {
            format!("`{dotted}`: `{seg}` is inside a value that is not a section")
        })?;
        cur = obj
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let last = segs[segs.len() - 1];
    cur.as_object_mut()
        .ok_or_else(|| format!("`{dotted}`: the parent is not a section"))?
        .insert(last.to_string(), value);
    Ok(())
}

fn escape_pointer(s: &str) -> String {
    s.replace('~', "~0").replace('/', "~1")
}
