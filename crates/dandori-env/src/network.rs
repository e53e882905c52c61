//! Seed 002 §11.3 network access control: the hosts setup commands may reach
//! when `planning.environment_setup.network.allowed_domains` is set — the
//! listed ones, the registries of the detected ecosystems, and the package
//! indexes the environment's variables name — through
//! [`dandori_exec::proxy::DomainProxy`].

use std::collections::BTreeMap;

use dandori_config::NetworkConfig;
use dandori_plan::SelectedEnvironment;

/// Key in `SelectedEnvironment.extra`: the registry hosts the environment
/// needs (a plugin's `registries`, else the built-in table).
pub const REGISTRIES_KEY: &str = "registries";

/// The public registries each ecosystem installs from.
pub fn registries(ecosystem: &str) -> &'static [&'static str] {
    match ecosystem {
        "python" => &["pypi.org", "files.pythonhosted.org"],
        "miniforge" => &[
            "conda.anaconda.org",
            "repo.anaconda.com",
            "pypi.org",
            "files.pythonhosted.org",
        ],
        "node" => &[
            "registry.npmjs.org",
            "registry.yarnpkg.com",
            "repo.yarnpkg.com",
        ],
        "java" => &[
            "repo.maven.apache.org",
            "repo1.maven.org",
            "plugins.gradle.org",
            "services.gradle.org",
        ],
        "go" => &["proxy.golang.org", "sum.golang.org"],
        "rust" => &["index.crates.io", "static.crates.io", "crates.io"],
        "ruby" => &["rubygems.org", "index.rubygems.org"],
        "php" => &["repo.packagist.org", "packagist.org"],
        "dotnet" => &["api.nuget.org"],
        "deno" => &["jsr.io", "registry.npmjs.org", "deno.land"],
        _ => &[],
    }
}

/// Variables that name a package index.
const INDEX_VARS: &[&str] = &[
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "npm_config_registry",
    "NPM_CONFIG_REGISTRY",
    "GOPROXY",
];

fn host_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let auth = rest.split(['/', '?', '#']).next()?;
    let auth = auth.rsplit('@').next()?;
    let host = if let Some(h) = auth.strip_prefix('[') {
        h.split(']').next()?
    } else {
        auth.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// The hosts allowed for `selected`'s setup: `config.allowed_domains`, the
/// registries of the environment and of the other environments detected,
/// and the hosts of the package indexes `env` names. `None`: no filtering
/// (`allowed_domains` is empty).
pub fn allowed_hosts(
    config: &NetworkConfig,
    selected: &SelectedEnvironment,
    env: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    if config.allowed_domains.is_empty() {
        return None;
    }
    let mut hosts: Vec<String> = config.allowed_domains.clone();
    let listed: Vec<String> = selected
        .extra
        .get(REGISTRIES_KEY)
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    if listed.is_empty() {
        hosts.extend(registries(&selected.name).iter().map(|s| s.to_string()));
    } else {
        hosts.extend(listed);
    }
    if let Some(others) = selected
        .extra
        .get("other_environments")
        .and_then(|v| v.as_array())
    {
        for o in others {
            if let Some(n) = o.get("name").and_then(|n| n.as_str()) {
                hosts.extend(registries(n).iter().map(|s| s.to_string()));
            }
        }
    }
    for var in INDEX_VARS {
        if let Some(v) = env.get(*var) {
            hosts.extend(v.split([' ', ',']).filter_map(host_of));
        }
    }
    hosts.sort();
    hosts.dedup();
    Some(hosts)
}
