//! Finding plugins: the user's plugin directory, the configured paths, and a
//! trusted repository's `.dandori/plugins`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_config::PluginsConfig;

use super::executable::{ExecutablePlugin, PluginOrigin};
use super::protocol::ENV_PLUGIN_UNTRUSTED;
use super::{Registry, repository_plugin_dir};
use crate::analyzer::AnalysisWarning;

/// The prefix of a plugin executable's file name inside a plugin directory.
pub const PLUGIN_PREFIX: &str = "dandori-env-";

/// The user's plugin directory: `plugins` next to the user-level config
/// (`$DANDORI_CONFIG_HOME/plugins`, else `$XDG_CONFIG_HOME/dandori/plugins`,
/// else `~/.config/dandori/plugins`).
pub fn user_plugin_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    dandori_config::trust::user_config_path(env).and_then(|p| p.parent().map(|d| d.join("plugins")))
}

/// The plugins shipped with dandori: `share/dandori/plugins` beside the
/// binary's `bin/` directory, the layout of the npm platform package, the
/// Python wheel (its data files go under the environment's prefix) and a
/// `PREFIX/bin` + `PREFIX/share` install. `exe` is the running binary.
pub fn shipped_plugin_dir(exe: &Path) -> Option<PathBuf> {
    let exe = std::fs::canonicalize(exe).unwrap_or_else(|_| exe.to_path_buf());
    let prefix = exe.parent()?.parent()?;
    let dir = prefix.join("share").join("dandori").join("plugins");
    dir.is_dir().then_some(dir)
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The plugin executables of `dir`: `dandori-env-*` directly inside, or one
/// directory down (`ruby/dandori-env-ruby`), sorted by path.
fn in_dir(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return found;
    };
    for entry in entries.flatten() {
        let p = entry.path();
        let named = |p: &Path| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(PLUGIN_PREFIX))
        };
        if p.is_dir() {
            if let Ok(inner) = std::fs::read_dir(&p) {
                for e in inner.flatten() {
                    let q = e.path();
                    if named(&q) && is_executable(&q) {
                        found.push(q);
                    }
                }
            }
        } else if named(&p) && is_executable(&p) {
            found.push(p);
        }
    }
    found.sort();
    found
}

/// Whether the user trusts `repo` (`trusted_projects` of the user-level
/// config found from `env`; `dandori trust`).
pub fn repository_trusted(repo: &Path, env: &BTreeMap<String, String>) -> bool {
    dandori_config::trust::user_config_path(env)
        .and_then(|p| dandori_config::trust::list_trusted(&p).ok())
        .is_some_and(|list| dandori_config::trust::is_trusted(&list, repo))
}

/// The plugins for `repo`: the user's directory, `config.paths` (relative
/// paths against `repo`), the plugins shipped with dandori
/// ([`shipped_plugin_dir`]; one of the same file name found before replaces
/// a shipped one), and `repo/.dandori/plugins` when the user trusts
/// the repository (otherwise each is listed in `skipped` with
/// [`ENV_PLUGIN_UNTRUSTED`]). A configured path that is neither an executable
/// nor a directory is skipped with a warning. `env` is the plugins'
/// environment (and locates the user's config); `sandbox` confines them.
pub fn discover(
    config: &PluginsConfig,
    repo: &Path,
    env: &BTreeMap<String, String>,
    sandbox: Option<dandori_exec::Sandbox>,
) -> Registry {
    let repo_trusted = repository_trusted(repo, env);
    let mut registry = Registry::default();
    if !config.enabled {
        return registry;
    }
    let make = |path: PathBuf, origin: PluginOrigin| ExecutablePlugin {
        path: std::fs::canonicalize(&path).unwrap_or(path),
        origin,
        timeout: Duration::from_secs(config.timeout_seconds.max(1)),
        env: env.clone(),
        sandbox: sandbox.clone(),
    };
    let mut user: Vec<PathBuf> = user_plugin_dir(env).map(|d| in_dir(&d)).unwrap_or_default();
    for p in &config.paths {
        let path = if Path::new(p).is_absolute() {
            PathBuf::from(p)
        } else {
            repo.join(p)
        };
        if path.is_dir() {
            user.extend(in_dir(&path));
        } else if is_executable(&path) {
            user.push(path);
        } else {
            registry.skipped.push(AnalysisWarning {
                path: path.display().to_string(),
                message: format!(
                    "planning.environment_setup.plugins.paths: `{p}` is neither an executable nor a directory of plugins (ENV_PLUGIN_FAILED)"
                ),
            });
        }
    }
    for p in user {
        let plugin = make(p, PluginOrigin::User);
        if !registry.plugins.iter().any(|q| q.path == plugin.path) {
            registry.plugins.push(plugin);
        }
    }
    // The shipped plugins come last: a plugin of the same file name the user
    // or the repository provides takes their place.
    let shipped = std::env::current_exe()
        .ok()
        .and_then(|exe| shipped_plugin_dir(&exe))
        .map(|d| in_dir(&d))
        .unwrap_or_default();
    let repo_own = if repo_trusted {
        in_dir(&repository_plugin_dir(repo))
    } else {
        Vec::new()
    };
    for p in shipped {
        let name = p.file_name().map(|n| n.to_os_string());
        let replaced = registry
            .plugins
            .iter()
            .map(|q| &q.path)
            .chain(repo_own.iter())
            .any(|q| q.file_name().map(|n| n.to_os_string()) == name);
        if !replaced {
            registry.plugins.push(make(p, PluginOrigin::Shipped));
        }
    }
    for p in in_dir(&repository_plugin_dir(repo)) {
        if repo_trusted {
            let plugin = make(p, PluginOrigin::Repository);
            if !registry.plugins.iter().any(|q| q.path == plugin.path) {
                registry.plugins.push(plugin);
            }
        } else {
            registry.skipped.push(AnalysisWarning {
                path: p.display().to_string(),
                message: format!(
                    "the repository's own plugin was not run: the repository is not trusted (trust it with `dandori trust {}`) ({ENV_PLUGIN_UNTRUSTED})",
                    repo.display()
                ),
            });
        }
    }
    registry
}
