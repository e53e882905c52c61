//! Python lock files read as pins: `poetry.lock`, `pdm.lock` and `uv.lock` are
//! TOML with one `[[package]]` table per locked distribution. Where the
//! project's own tool is not installed, setup installs the project's
//! requirements with the lock's versions as constraints (`-c`): every
//! distribution that gets installed has exactly the version the lock names, and
//! distributions the lock keeps for other platforms (`pywin32`) are not
//! installed, since a constraint does not ask for a package.

use std::collections::BTreeMap;
use std::path::Path;

use crate::EnvError;

/// `SelectedEnvironment.extra` key: `{ "lock": "poetry.lock", "file":
/// ".venv/dandori-lock-constraints.txt" }` (paths relative to the environment's
/// root). Setup writes the constraints file from the lock before its commands run.
pub const LOCK_CONSTRAINTS_KEY: &str = "lock_constraints";

/// Where the constraints go, relative to the environment's root: inside the
/// virtual environment, which setup creates and git ignores.
pub const CONSTRAINTS_FILE: &str = ".venv/dandori-lock-constraints.txt";

/// The Python lock files, in the order a project's tool prefers them.
pub const PYTHON_LOCKS: &[&str] = &["uv.lock", "poetry.lock", "pdm.lock"];

/// One locked distribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    /// Normalized (PEP 503: lower case, runs of `-_.` as `-`).
    pub name: String,
    pub version: String,
}

/// PEP 503 name normalization.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut dash = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The pins of a lock file's text. `file` names it in errors, which give the
/// line and column. Distributions from git, a path or the project itself
/// (`source = { editable = "." }`) are left out, and so is a name the lock
/// holds at several versions (one per Python or platform): no single pin fits.
pub fn parse(file: &str, text: &str) -> Result<Vec<Pin>, String> {
    let doc: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| syntax_error(file, text, &e))?;
    let Some(packages) = doc.get("package").and_then(|p| p.as_array()) else {
        return Ok(Vec::new());
    };
    let mut versions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in packages {
        let (Some(name), Some(version)) = (
            p.get("name").and_then(|v| v.as_str()),
            p.get("version").and_then(|v| v.as_str()),
        ) else {
            continue;
        };
        if !from_registry(p) {
            continue;
        }
        let list = versions.entry(normalize(name)).or_default();
        if !list.iter().any(|v| v == version) {
            list.push(version.to_string());
        }
    }
    Ok(versions
        .into_iter()
        .filter(|(_, v)| v.len() == 1)
        .map(|(name, mut v)| Pin {
            name,
            version: v.remove(0),
        })
        .collect())
}

/// Whether a `[[package]]` comes from a package index (not git, a directory,
/// a URL, or the project itself).
fn from_registry(p: &toml::Value) -> bool {
    match p.get("source") {
        None => true,
        // uv: `source = { registry = "https://pypi.org/simple" }`.
        Some(toml::Value::Table(t)) => {
            if t.contains_key("registry") {
                return true;
            }
            // poetry: `[package.source] type = "legacy"` is an index too.
            matches!(
                t.get("type").and_then(|v| v.as_str()),
                Some("legacy") | Some("pypi")
            )
        }
        Some(_) => false,
    }
}

/// `file:LINE:COLUMN: TOML parse error: …` for a lock or manifest that does not parse.
pub fn syntax_error(file: &str, text: &str, e: &toml::de::Error) -> String {
    let message = e.message().trim().to_string();
    match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            format!("{file}:{line}:{column}: TOML parse error: {message}")
        }
        None => format!("{file}: TOML parse error: {message}"),
    }
}

/// A constraints file (`name==version` per line) for the pins.
pub fn constraints(pins: &[Pin], lock: &str) -> String {
    let mut s = format!("# Written by dandori from {lock}: the locked versions as constraints.\n");
    for p in pins {
        s.push_str(&format!("{}=={}\n", p.name, p.version));
    }
    s
}

/// Writes `root/file` from `root/lock` (the [`LOCK_CONSTRAINTS_KEY`] entry of a
/// selected environment). A lock that does not parse is an error naming the
/// file, line and column.
pub fn write_constraints(root: &Path, lock: &str, file: &str) -> Result<usize, EnvError> {
    let lock_path = root.join(lock);
    let text = std::fs::read_to_string(&lock_path).map_err(|e| EnvError::Record {
        path: lock_path.display().to_string(),
        message: format!("reading the lock file: {e}"),
    })?;
    let pins = parse(lock, &text).map_err(|message| EnvError::Record {
        path: lock_path.display().to_string(),
        message,
    })?;
    let dest = root.join(file);
    if let Some(parent) = dest.parent() {
        dandori_fs::create_dir_all(parent)?;
    }
    dandori_fs::write_atomic(&dest, constraints(&pins, lock).as_bytes())?;
    Ok(pins.len())
}

/// Installed distributions of a virtual environment (`<venv>/lib/python*/
/// site-packages/*.dist-info/METADATA`), normalized name → version.
pub fn installed_in_venv(venv: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(libs) = std::fs::read_dir(venv.join("lib")) else {
        return out;
    };
    for lib in libs.flatten() {
        let Ok(entries) = std::fs::read_dir(lib.path().join("site-packages")) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !name.ends_with(".dist-info") {
                continue;
            }
            let Ok(meta) = std::fs::read_to_string(entry.path().join("METADATA")) else {
                continue;
            };
            let field = |k: &str| {
                meta.lines()
                    .take_while(|l| !l.is_empty())
                    .find_map(|l| l.strip_prefix(k).map(|v| v.trim().to_string()))
            };
            if let (Some(n), Some(v)) = (field("Name:"), field("Version:")) {
                out.insert(normalize(&n), v);
            }
        }
    }
    out
}

/// The installed distributions whose version differs from the lock's:
/// `(name, locked, installed)`. Distributions the lock has and the environment
/// does not (other platforms, groups not installed) are not differences.
pub fn mismatches(
    pins: &[Pin],
    installed: &BTreeMap<String, String>,
) -> Vec<(String, String, String)> {
    pins.iter()
        .filter_map(|p| {
            let got = installed.get(&p.name)?;
            (!same_version(got, &p.version))
                .then(|| (p.name.clone(), p.version.clone(), got.clone()))
        })
        .collect()
}

/// `1.0` and `1.0.0` are the same release (PEP 440 zero padding).
fn same_version(a: &str, b: &str) -> bool {
    let trim = |v: &str| {
        let mut parts: Vec<&str> = v.split('.').collect();
        while parts.len() > 1 && parts.last() == Some(&"0") {
            parts.pop();
        }
        parts.join(".")
    };
    a == b || trim(a) == trim(b)
}
