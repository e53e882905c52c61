//! Ecosystem plugins (seed 002 §13.2): one interface, [`EnvironmentPlugin`],
//! with the seed's three functions `detect_environment`, `generate_setup_code`
//! and `verify_environment`. dandori's built-in ecosystems implement it
//! ([`Builtin`]), and so does the adapter of an executable plugin that speaks
//! the JSON protocol of [`protocol`] ([`ExecutablePlugin`]); [`Registry`] holds
//! both and analyses a repository through them, a plugin's ecosystem taking the
//! place of a built-in one of the same `environment_type`.
//!
//! Plugins are found ([`discover`]) in the user's plugin directory, in
//! `planning.environment_setup.plugins.paths`, and in a repository's
//! `.dandori/plugins` when the user trusts the repository; each runs in the
//! command sandbox (no network; the repository read-only for `detect` and
//! `generate`), and every command it generates passes the command policy.

mod discover;
mod executable;
pub mod protocol;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

pub use discover::{
    PLUGIN_PREFIX, discover, repository_trusted, shipped_plugin_dir, user_plugin_dir,
};
pub use executable::{ExecutablePlugin, PluginOrigin};
use protocol::{Detection, Function, GeneratedSetup, PluginDependency, Verified};

use crate::EnvError;
use crate::analyzer::{
    self, AnalysisWarning, Dependency, DependencyKind, Ecosystem, EnvironmentAnalysis,
    RuntimeVersion,
};
use crate::records::VerificationResult;
use crate::selection::{Commands, Toolchain};

/// What a plugin detected and generated, kept on the [`Ecosystem`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginEcosystem {
    /// The plugin executable.
    pub path: String,
    /// Its answer to `generate_setup_code`.
    pub generated: GeneratedSetup,
    /// The registry hosts it reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registries: Vec<String>,
}

/// What `detect_environment` is given.
pub struct DetectRequest<'a> {
    pub repo: &'a Path,
    /// The repository's files (relative, `/`-separated), as the analyser walked them.
    pub files: &'a [String],
    pub max_file_size: u64,
    /// The built-in analysis of those files.
    pub builtin: &'a EnvironmentAnalysis,
}

/// What `verify_environment` is given.
pub struct VerifyRequest<'a> {
    pub repo: &'a Path,
    /// The selected environment (seed 002 §4.3), as JSON.
    pub environment: &'a Value,
    /// The environment's activation (`PATH` with its bin directories first).
    pub env: &'a BTreeMap<String, String>,
}

/// Seed 002 §13.2's plugin interface.
pub trait EnvironmentPlugin {
    /// Who answers: `builtin:<name>` or the plugin's path.
    fn id(&self) -> String;
    /// The ecosystems of this kind in the repository (none when it does not apply).
    fn detect_environment(&self, req: &DetectRequest<'_>) -> Result<Vec<Ecosystem>, EnvError>;
    /// The setup and verification commands of one detected ecosystem.
    fn generate_setup_code(&self, eco: &Ecosystem, tools: &Toolchain)
    -> Result<Commands, EnvError>;
    /// Checks of the prepared environment beyond its verification commands
    /// (which dandori runs itself): seed 002 §5.4.3 results.
    fn verify_environment(
        &self,
        req: &VerifyRequest<'_>,
    ) -> Result<Vec<VerificationResult>, EnvError>;
}

/// A built-in ecosystem: detection by the analyser, commands by
/// [`crate::selection::builtin_commands`], verification by its commands alone.
pub struct Builtin(pub &'static str);

/// The built-in ecosystems, in the analyser's terms.
pub const BUILTINS: &[&str] = &[
    analyzer::PYTHON,
    analyzer::MINIFORGE,
    analyzer::NODE,
    analyzer::JAVA,
    analyzer::GO,
    analyzer::RUST,
    analyzer::RUBY,
    analyzer::PHP,
    analyzer::DOTNET,
    analyzer::DENO,
];

impl EnvironmentPlugin for Builtin {
    fn id(&self) -> String {
        format!("builtin:{}", self.0)
    }

    fn detect_environment(&self, req: &DetectRequest<'_>) -> Result<Vec<Ecosystem>, EnvError> {
        Ok(req
            .builtin
            .ecosystems
            .iter()
            .filter(|e| e.name == self.0)
            .cloned()
            .collect())
    }

    fn generate_setup_code(
        &self,
        eco: &Ecosystem,
        tools: &Toolchain,
    ) -> Result<Commands, EnvError> {
        Ok(crate::selection::builtin_commands(eco, tools))
    }

    fn verify_environment(
        &self,
        _req: &VerifyRequest<'_>,
    ) -> Result<Vec<VerificationResult>, EnvError> {
        Ok(Vec::new())
    }
}

impl EnvironmentPlugin for ExecutablePlugin {
    fn id(&self) -> String {
        self.path.display().to_string()
    }

    fn detect_environment(&self, req: &DetectRequest<'_>) -> Result<Vec<Ecosystem>, EnvError> {
        let mut request = serde_json::Map::new();
        request.insert("files".into(), json!(req.files));
        request.insert("max_file_size".into(), json!(req.max_file_size));
        let answer = self.call(Function::Detect, req.repo, request, &self.env, false)?;
        let d: Detection = self.read(Function::Detect, answer.clone())?;
        if !d.detected {
            return Ok(Vec::new());
        }
        let Some(name) = d.environment_type.clone().filter(|n| valid_name(n)) else {
            return Err(self.invalid(
                Function::Detect,
                "at `$.environment_type`: required when `detected` is true, lowercase letters, digits, `-` or `_`".into(),
            ));
        };
        let dir = d.root.clone().unwrap_or_else(|| ".".to_string());
        if dir.starts_with('/') || dir.split('/').any(|p| p == "..") {
            return Err(self.invalid(
                Function::Detect,
                format!("at `$.root`: `{dir}` is not a directory inside the repository"),
            ));
        }
        let mut e = Ecosystem::new(&name, &dir);
        e.files = d.detected_files.keys().cloned().collect();
        e.package_manager = d.package_manager.clone().unwrap_or_default();
        e.package_manager_reason = format!("reported by the plugin {}", self.id());
        e.runtime_version = d.runtime_version.clone().map(|value| RuntimeVersion {
            value,
            source: format!("plugin {}", self.id()),
        });
        e.test_command = d.test_command.clone();
        let source = e.files.first().cloned().unwrap_or_default();
        e.dependencies = d
            .dependencies
            .iter()
            .map(|dep| dependency(dep, &source))
            .collect();
        let mut gen_req = serde_json::Map::new();
        gen_req.insert("environment".into(), answer);
        let generated = self.call(Function::Generate, req.repo, gen_req, &self.env, false)?;
        let generated: GeneratedSetup = self.read(Function::Generate, generated)?;
        e.plugin = Some(PluginEcosystem {
            path: self.id(),
            generated,
            registries: d.registries.clone(),
        });
        Ok(vec![e])
    }

    fn generate_setup_code(
        &self,
        eco: &Ecosystem,
        _tools: &Toolchain,
    ) -> Result<Commands, EnvError> {
        let g = eco
            .plugin
            .as_ref()
            .map(|p| p.generated.clone())
            .unwrap_or_default();
        Ok(commands_of(&g, &eco.dir))
    }

    fn verify_environment(
        &self,
        req: &VerifyRequest<'_>,
    ) -> Result<Vec<VerificationResult>, EnvError> {
        let mut request = serde_json::Map::new();
        request.insert("environment".into(), req.environment.clone());
        let answer = self.call(Function::Verify, req.repo, request, req.env, true)?;
        let v: Verified = self.read(Function::Verify, answer)?;
        Ok(v.verification_results
            .into_iter()
            .map(|r| VerificationResult {
                command: r.command,
                expected: r.expected,
                actual: r.actual,
                status: if r.status == "success" {
                    "success".to_string()
                } else {
                    "failed".to_string()
                },
                required: r.required,
                exit_code: None,
                duration_ms: 0,
                reason: r.reason.or_else(|| {
                    (r.status != "success").then(|| format!("reported by the plugin {}", self.id()))
                }),
            })
            .collect())
    }
}

fn valid_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 40
        && n.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn dependency(d: &PluginDependency, source: &str) -> Dependency {
    let (name, version_spec, kind) = match d {
        PluginDependency::Name(n) => (n.clone(), None, None),
        PluginDependency::Full {
            name,
            version_spec,
            kind,
        } => (name.clone(), version_spec.clone(), kind.clone()),
    };
    Dependency {
        name,
        version_spec,
        kind: match kind.as_deref() {
            Some("dev") => DependencyKind::Dev,
            Some("build") => DependencyKind::Build,
            Some("peer") => DependencyKind::Peer,
            _ => DependencyKind::Prod,
        },
        optional: false,
        group: None,
        source: source.to_string(),
        marker: None,
    }
}

/// A plugin's generated code as [`Commands`]: its commands run from the
/// ecosystem's directory, as the built-ins' do.
fn commands_of(g: &GeneratedSetup, dir: &str) -> Commands {
    let at = |c: &String| {
        if dir == "." || dir.is_empty() {
            c.clone()
        } else {
            format!("cd {} && {c}", shell_words::quote(dir))
        }
    };
    let mut c = Commands {
        setup: g.setup_commands.iter().map(at).collect(),
        ..Commands::default()
    };
    for v in &g.verification_commands {
        let cmd = at(v);
        if let Some(x) = g.expected_results.get(v) {
            c.expected.insert(cmd.clone(), x.clone());
        }
        if g.optional_verification_commands.contains(v) {
            c.optional.push(cmd.clone());
        }
        c.verification.push(cmd);
    }
    c
}

/// The built-in ecosystems and the plugins found, one interface.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    pub plugins: Vec<ExecutablePlugin>,
    /// Plugins found but not run, and why (an untrusted repository's).
    pub skipped: Vec<AnalysisWarning>,
}

impl Registry {
    /// Built-ins only.
    pub fn builtin() -> Self {
        Registry::default()
    }

    /// The plugin at `path`, if it is one of this registry's.
    pub fn plugin(&self, path: &str) -> Option<&ExecutablePlugin> {
        self.plugins
            .iter()
            .find(|p| p.path.display().to_string() == path)
    }

    /// Walks `repo` and asks every built-in ecosystem and every plugin
    /// `detect_environment` (plugins also `generate_setup_code`). A plugin's
    /// ecosystems replace the built-in ones of the same name; a plugin that
    /// fails is a warning (with its reason code), the others still count.
    pub fn analyze(
        &self,
        repo: &Path,
        config: &dandori_config::AnalysisConfig,
    ) -> EnvironmentAnalysis {
        let (files, walk_warnings) = analyzer::walk(repo, config);
        self.analyze_files(repo, &files, walk_warnings, config)
    }

    /// [`Registry::analyze`] over the relative (`/`-separated) paths a caller
    /// already scanned (the planner's repository scan): only the environment
    /// files are read, and the plugins are asked about the same files.
    pub fn analyze_paths<S: AsRef<str>>(
        &self,
        repo: &Path,
        paths: &[S],
        config: &dandori_config::AnalysisConfig,
    ) -> EnvironmentAnalysis {
        let files = analyzer::scanned_paths(paths, config);
        self.analyze_files(repo, &files, Vec::new(), config)
    }

    fn analyze_files(
        &self,
        repo: &Path,
        files: &[String],
        walk_warnings: Vec<AnalysisWarning>,
        config: &dandori_config::AnalysisConfig,
    ) -> EnvironmentAnalysis {
        let mut builtin = analyzer::analyze_inner(repo, files, config);
        builtin.warnings.splice(0..0, walk_warnings);
        if self.plugins.is_empty() && self.skipped.is_empty() {
            return builtin;
        }
        let req = DetectRequest {
            repo,
            files,
            max_file_size: config.max_file_size,
            builtin: &builtin,
        };
        let mut ecosystems: Vec<Ecosystem> = Vec::new();
        for name in BUILTINS {
            if let Ok(found) = Builtin(name).detect_environment(&req) {
                ecosystems.extend(found);
            }
        }
        let mut warnings = builtin.warnings.clone();
        warnings.extend(self.skipped.iter().cloned());
        let mut detected_files = builtin.detected_files.clone();
        for p in &self.plugins {
            match p.detect_environment(&req) {
                Ok(found) => {
                    for e in found {
                        ecosystems.retain(|b| b.name != e.name || b.plugin.is_some());
                        detected_files.retain(|f| f.ecosystem != e.name);
                        for f in &e.files {
                            detected_files.push(analyzer::DetectedFile {
                                path: f.clone(),
                                ecosystem: e.name.clone(),
                                kind: analyzer::FileKind::Manifest,
                            });
                        }
                        ecosystems.push(e);
                    }
                }
                Err(e) => warnings.push(AnalysisWarning {
                    path: p.path.display().to_string(),
                    message: e.to_string(),
                }),
            }
        }
        ecosystems.sort_by(|a, b| (&a.name, &a.dir).cmp(&(&b.name, &b.dir)));
        detected_files.sort_by(|a, b| a.path.cmp(&b.path));
        detected_files.dedup_by(|a, b| a.path == b.path);
        EnvironmentAnalysis {
            ecosystems,
            detected_files,
            source_files: builtin.source_files,
            files_scanned: builtin.files_scanned,
            warnings,
        }
    }
}

/// The setup code of `eco` through the interface of whoever detected it.
pub fn generate(eco: &Ecosystem, tools: &Toolchain) -> Commands {
    let generated = match &eco.plugin {
        Some(p) => plugin_commands(p, eco),
        None => {
            let name = BUILTINS.iter().find(|n| **n == eco.name).copied();
            match name {
                Some(n) => Builtin(n).generate_setup_code(eco, tools),
                None => Ok(Commands::default()),
            }
        }
    };
    generated.unwrap_or_default()
}

fn plugin_commands(p: &PluginEcosystem, eco: &Ecosystem) -> Result<Commands, EnvError> {
    Ok(commands_of(&p.generated, &eco.dir))
}

/// Runs `verify_environment` of the plugin that detected `environment` (its
/// `extra.plugin`), when that plugin is one of `registry`'s: results, or one
/// failed result naming the plugin's error.
pub fn verify(
    registry: &Registry,
    environment: &dandori_plan::SelectedEnvironment,
    repo: &Path,
    env: &BTreeMap<String, String>,
) -> Vec<VerificationResult> {
    let Some(path) = environment.extra.get(PLUGIN_KEY).and_then(Value::as_str) else {
        return Vec::new();
    };
    let Some(plugin) = registry.plugin(path) else {
        return vec![VerificationResult {
            command: format!("{path} verify"),
            expected: String::new(),
            actual: String::new(),
            status: "failed".into(),
            required: true,
            exit_code: None,
            duration_ms: 0,
            reason: Some(format!(
                "the plugin is not among those found for this repository ({}): not run",
                protocol::ENV_PLUGIN_UNTRUSTED
            )),
        }];
    };
    let value = serde_json::to_value(environment).unwrap_or(Value::Null);
    let req = VerifyRequest {
        repo,
        environment: &value,
        env,
    };
    match plugin.verify_environment(&req) {
        Ok(r) => r,
        Err(e) => vec![VerificationResult {
            command: format!("{path} verify"),
            expected: String::new(),
            actual: String::new(),
            status: "failed".into(),
            required: true,
            exit_code: None,
            duration_ms: 0,
            reason: Some(e.to_string()),
        }],
    }
}

/// Key in `SelectedEnvironment.extra`: the plugin that detected the environment.
pub const PLUGIN_KEY: &str = "plugin";

/// Where a repository's own plugins live.
pub fn repository_plugin_dir(repo: &Path) -> PathBuf {
    repo.join(".dandori").join("plugins")
}
