//! The one installer decision: which package manager the commands of an
//! ecosystem use, at which version, and from where. `dandori plan`,
//! `env detect`, `env setup`, `env verify`, MCP `env_detect` and the runner's
//! environment phase all come through [`decide`], so the same repository gets
//! the same tools whoever asks.
//!
//! The rule: the user's own installation on `PATH` wins (a tool the user
//! installed is never shadowed); else dandori's tool cache, at the version the
//! repository pins (`packageManager: pnpm@10.18.3`) or dandori's own fixed
//! version; else the bootstrap installs that version into the cache. When the
//! bootstrap is off, a cached release of another version is used and the
//! decision says so ([`Decision::note`]), never silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::analyzer::{Ecosystem, NODE, PYTHON};
use crate::tools;

/// The uv dandori installs from PyPI (`pip install uv==…`).
pub const UV_VERSION: &str = "0.13.9";
/// The yarn 1 dandori installs from npm (it also runs a repository's own
/// `yarnPath` release).
pub const YARN_CLASSIC_VERSION: &str = "1.22.22";
/// The pnpm dandori installs when the repository pins none.
pub const PNPM_VERSION: &str = "10.34.9";

/// Where the tool the commands run comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The user's own installation on `PATH` (outside the tool cache).
    Path(PathBuf),
    /// In dandori's tool cache at the decided version.
    Cached(PathBuf),
    /// Not there yet: the bootstrap installs it into the tool cache.
    Bootstrap,
    /// In the tool cache, but not at the decided version, and the bootstrap
    /// is off: that release runs (said in [`Decision::note`]).
    CachedOtherVersion(PathBuf),
    /// Nowhere, and the bootstrap is off (or there is no tool cache): the
    /// commands fall back to what is on `PATH` (pip, npm, corepack).
    Unavailable(String),
}

/// The package manager of one ecosystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// `uv`, `pnpm` or `yarn`.
    pub tool: &'static str,
    /// The repository's pin, else dandori's own version.
    pub version: String,
    /// Where the pin comes from (`packageManager: pnpm@10.18.3` in package.json).
    pub pinned_by: Option<String>,
    pub source: Source,
}

impl Decision {
    /// Whether the generated commands may name the tool: it is, or will be
    /// after the bootstrap, on the commands' `PATH`.
    pub fn usable(&self) -> bool {
        !matches!(self.source, Source::Unavailable(_))
    }

    /// The plain sentence for a decision that does not honour the pin, or
    /// that falls back; `None` when the tool runs as decided.
    pub fn note(&self) -> Option<String> {
        let pin = self
            .pinned_by
            .as_deref()
            .map(|p| format!(" ({p})"))
            .unwrap_or_default();
        match &self.source {
            Source::CachedOtherVersion(p) => Some(format!(
                "{} {}{pin} is not in dandori's tool cache and the bootstrap is off ({}=0): the cached {} runs instead",
                self.tool,
                self.version,
                tools::TOOLS_BOOTSTRAP_VAR,
                p.display()
            )),
            Source::Unavailable(why) => Some(format!(
                "{} {}{pin} is not available ({why}): the setup uses {}",
                self.tool,
                self.version,
                fallback_of(self.tool)
            )),
            Source::Path(_) | Source::Cached(_) | Source::Bootstrap => None,
        }
    }
}

/// What the generated commands use when `tool` is missing.
pub fn fallback_of(tool: &str) -> &'static str {
    match tool {
        "uv" => "pip (`python3 -m venv` and the venv's pip)",
        "pnpm" | "yarn" => "corepack or npm, whichever is on PATH",
        _ => "the tools on PATH",
    }
}

/// The tool, version and pin the commands of `eco` prefer, before looking
/// anywhere: uv for Python, pnpm and yarn for the Node projects that use them.
fn wanted(eco: &Ecosystem) -> Option<(&'static str, String, Option<String>)> {
    let pin = || {
        eco.package_manager_version
            .clone()
            .filter(|v| plain_version(v))
            .map(|v| (v, Some(eco.package_manager_reason.clone())))
    };
    match (eco.name.as_str(), eco.package_manager.as_str()) {
        (PYTHON, _) => Some(("uv", UV_VERSION.to_string(), None)),
        (NODE, "pnpm") => {
            let (v, by) = pin().unwrap_or_else(|| (PNPM_VERSION.to_string(), None));
            Some(("pnpm", v, by))
        }
        (NODE, "yarn") => {
            let (v, by) = pin().unwrap_or_else(|| (YARN_CLASSIC_VERSION.to_string(), None));
            Some(("yarn", v, by))
        }
        _ => None,
    }
}

/// A release number that can be handed to npm as it is (`10.18.3`,
/// `4.0.0-rc.1`): nothing a shell or npm would read as more than a version.
pub fn plain_version(v: &str) -> bool {
    v.chars().next().is_some_and(|c| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
}

/// `env`'s `PATH` without the tool cache's `bin`: where the user's own tools are.
fn user_path(env: &BTreeMap<String, String>) -> String {
    let bin = tools::bin_dir(env);
    env.get("PATH")
        .map(String::as_str)
        .unwrap_or("")
        .split(':')
        .filter(|p| !p.is_empty() && bin.as_deref() != Some(Path::new(p)))
        .collect::<Vec<_>>()
        .join(":")
}

/// The cached program of `tool` at `version`, when the cache holds it.
fn cached_release(dir: &Path, tool: &str, version: &str) -> Option<PathBuf> {
    let exe = match tool {
        // uv: one release per cache (dandori's own version).
        "uv" => dir.join("bin/uv"),
        "pnpm" => dir.join(format!("pnpm@{version}/node_modules/.bin/pnpm")),
        "yarn" if version.starts_with("1.") => dir.join("bin/yarn"),
        // A yarn ≥ 2 pin runs through the cache's launcher (which needs yarn 1).
        "yarn" if !dir.join("bin/yarn").exists() => return None,
        "yarn" => dir.join(format!(
            "{}@{version}/{}",
            tools::BERRY_PACKAGE.replace('/', "_"),
            tools::BERRY_ENTRY
        )),
        _ => return None,
    };
    exe.exists().then_some(exe)
}

/// The one decision for `eco` with the environment `env` (its `PATH`, `HOME`,
/// `DANDORI_TOOLS_DIR`, `DANDORI_TOOLS_BOOTSTRAP`). Looks at the file system
/// only: nothing is installed or run.
pub fn decide(eco: &Ecosystem, env: &BTreeMap<String, String>) -> Option<Decision> {
    let (tool, version, pinned_by) = wanted(eco)?;
    let decision = |source| Decision {
        tool,
        version: version.clone(),
        pinned_by: pinned_by.clone(),
        source,
    };
    let on_user_path = dandori_exec::run::find_program(tool, &user_path(env), Path::new("/"));
    if let Some(p) = on_user_path {
        return Some(decision(Source::Path(p)));
    }
    let Some(dir) = tools::tools_dir(env) else {
        return Some(decision(Source::Unavailable(
            "no tool cache: neither DANDORI_TOOLS_DIR, XDG_CACHE_HOME nor HOME is set".into(),
        )));
    };
    if let Some(p) = cached_release(&dir, tool, &version) {
        let linked = dir.join("bin").join(tool);
        return Some(decision(Source::Cached(if linked.exists() {
            linked
        } else {
            p
        })));
    }
    if tools::bootstrap_enabled(env) {
        return Some(decision(Source::Bootstrap));
    }
    let other = dir.join("bin").join(tool);
    Some(decision(if other.exists() {
        Source::CachedOtherVersion(other)
    } else {
        Source::Unavailable(format!(
            "not on PATH, not in the tool cache {}, and the bootstrap is off ({}=0)",
            dir.display(),
            tools::TOOLS_BOOTSTRAP_VAR
        ))
    }))
}
