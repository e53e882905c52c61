//! `planning.environment_setup:` of seed 002 §8.1.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvironmentSetupConfig {
    pub enabled: bool,
    pub execution: EnvExecutionConfig,
    pub verification: EnvVerificationConfig,
    pub regeneration: RegenerationConfig,
    pub analysis: AnalysisConfig,
    /// Seed 002 §11: the command policy.
    pub security: CommandPolicyConfig,
    /// Seed 002 §13.2: ecosystem plugins (docs/environment.md, "Plugins").
    pub plugins: PluginsConfig,
    /// Seed 002 §11.2: resource limits of setup and verification commands.
    pub resources: ResourcesConfig,
    /// Seed 002 §11.3: the hosts setup commands may reach.
    pub network: NetworkConfig,
}

/// `planning.environment_setup.plugins:` — where ecosystem plugins are found
/// besides the user's plugin directory (`$DANDORI_CONFIG_HOME/plugins`, else
/// `$XDG_CONFIG_HOME/dandori/plugins`, else `~/.config/dandori/plugins`) and a
/// trusted repository's `.dandori/plugins`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct PluginsConfig {
    /// `false`: no plugin runs, the built-in ecosystems alone.
    pub enabled: bool,
    /// Plugin executables, or directories searched for them (each
    /// `dandori-env-*` executable directly inside, or one directory down).
    pub paths: Vec<String>,
    /// Seconds one plugin call may take.
    pub timeout_seconds: u64,
}

impl Default for PluginsConfig {
    fn default() -> Self {
        PluginsConfig {
            enabled: true,
            paths: Vec::new(),
            timeout_seconds: 60,
        }
    }
}

impl EnvironmentSetupConfig {
    /// The wall-clock timeout of one setup or verification command:
    /// `resources.timeout_seconds` when set, else `execution.command_timeout_seconds`.
    pub fn command_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(
            self.resources
                .timeout_seconds
                .map(|t| t.get())
                .unwrap_or(self.execution.command_timeout_seconds),
        )
    }
}

impl Default for EnvironmentSetupConfig {
    fn default() -> Self {
        EnvironmentSetupConfig {
            enabled: true,
            execution: EnvExecutionConfig::default(),
            verification: EnvVerificationConfig::default(),
            regeneration: RegenerationConfig::default(),
            analysis: AnalysisConfig::default(),
            security: CommandPolicyConfig::default(),
            plugins: PluginsConfig::default(),
            resources: ResourcesConfig::default(),
            network: NetworkConfig::default(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvExecutionConfig {
    pub command_timeout_seconds: u64,
    pub max_retries: u32,
    /// Which index an install without a lock resolves against: `base_commit`
    /// (the default), the packages published by the base commit's date, the
    /// versions the project was developed and tested with; `now`, today's.
    pub resolve_as_of: ResolveAsOf,
    /// Seed 002 §12.2: how many independent ecosystems (a root Python
    /// project and a `web/` Node package) are set up at the same time; 1 sets
    /// them up one after the other.
    pub max_parallel: std::num::NonZeroU32,
}

/// `planning.environment_setup.execution.resolve_as_of`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolveAsOf {
    #[default]
    BaseCommit,
    Now,
}

impl Default for EnvExecutionConfig {
    fn default() -> Self {
        EnvExecutionConfig {
            command_timeout_seconds: 1800,
            max_retries: 2,
            resolve_as_of: ResolveAsOf::BaseCommit,
            max_parallel: std::num::NonZeroU32::MIN.saturating_add(1),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct EnvVerificationConfig {
    pub enabled: bool,
    /// `fail | warn | ignore`; unset (`null`, the default) is `warn` for the
    /// verification status (seed 002 §8.1) but stops `dandori run` on a failed
    /// environment: only an explicit `warn` or `ignore` lets a run go on.
    pub on_failure: Option<OnFailure>,
}

impl EnvVerificationConfig {
    /// The behaviour of a failed verification: the configured one, else `warn`.
    pub fn on_failure(&self) -> OnFailure {
        self.on_failure.unwrap_or(OnFailure::Warn)
    }
}

impl Default for EnvVerificationConfig {
    fn default() -> Self {
        EnvVerificationConfig {
            enabled: true,
            on_failure: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnFailure {
    Fail,
    Warn,
    Ignore,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct RegenerationConfig {
    pub enabled: bool,
    pub max_retries: u32,
}

impl Default for RegenerationConfig {
    fn default() -> Self {
        RegenerationConfig {
            enabled: true,
            max_retries: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct AnalysisConfig {
    /// Ecosystem → file names searched for.
    pub file_patterns: BTreeMap<String, Vec<String>>,
    /// Bytes.
    pub max_file_size: u64,
    pub max_search_depth: u32,
}

impl Default for AnalysisConfig {
    fn default() -> Self {
        let pats = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut file_patterns = BTreeMap::new();
        file_patterns.insert(
            "python".to_string(),
            pats(&[
                "requirements.txt",
                "pyproject.toml",
                "setup.py",
                "Pipfile",
                "poetry.lock",
                "environment.yml",
                "condaenv.yaml",
            ]),
        );
        file_patterns.insert(
            "node".to_string(),
            pats(&[
                "package.json",
                "package-lock.json",
                "yarn.lock",
                "pnpm-lock.yaml",
            ]),
        );
        file_patterns.insert(
            "java".to_string(),
            pats(&["pom.xml", "build.gradle", "build.gradle.kts"]),
        );
        file_patterns.insert("go".to_string(), pats(&["go.mod", "go.sum"]));
        file_patterns.insert(
            "common".to_string(),
            pats(&["Dockerfile", "docker-compose.yml", "Makefile"]),
        );
        AnalysisConfig {
            file_patterns,
            max_file_size: 102_400,
            max_search_depth: 5,
        }
    }
}

/// Seed 002 §11.1: extra allowed executables and forbidden patterns, on top of the
/// built-in policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct CommandPolicyConfig {
    pub allowed_commands: Vec<String>,
    pub forbidden_patterns: Vec<String>,
}

/// Seed 002 §11.2 `resources:` — the limits of each setup and verification
/// command (applied as `setrlimit` soft limits, docs/environment.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct ResourcesConfig {
    /// CPUs: a command may use `cpu_limit` × its timeout of CPU time (`RLIMIT_CPU`).
    pub cpu_limit: std::num::NonZeroU32,
    /// `RLIMIT_DATA` (heap and private writable mappings): `4g`, `512m`, bytes.
    pub memory_limit: ByteSize,
    /// Wall-clock seconds of one command; unset: `execution.command_timeout_seconds`.
    pub timeout_seconds: Option<std::num::NonZeroU64>,
    /// `RLIMIT_FSIZE`, the largest file a command may write: `10g`, bytes.
    pub disk_limit: ByteSize,
}

impl Default for ResourcesConfig {
    fn default() -> Self {
        ResourcesConfig {
            cpu_limit: std::num::NonZeroU32::MIN.saturating_add(1),
            memory_limit: ByteSize::gib(4),
            timeout_seconds: None,
            disk_limit: ByteSize::gib(10),
        }
    }
}

/// A size as the seed writes it (`"4g"`, `"512m"`, `"100k"`, or a number of
/// bytes); anything else is a config error naming the value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub const fn gib(n: u64) -> Self {
        ByteSize(n << 30)
    }

    /// Parses `4g`, `4G`, `4gb`, `4GiB`, `512m`, `100k`, `123` (bytes); `0` and
    /// overflows are refused.
    pub fn parse(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (num, unit) = t.split_at(digits);
        let n: u64 = num
            .parse()
            .map_err(|_| format!("`{text}`: expected a size such as `4g`, `512m` or bytes"))?;
        let shift = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 0,
            "k" | "kb" | "kib" => 10,
            "m" | "mb" | "mib" => 20,
            "g" | "gb" | "gib" => 30,
            "t" | "tb" | "tib" => 40,
            _ => {
                return Err(format!("`{text}`: unknown unit `{unit}` (k, m, g or t)"));
            }
        };
        let bytes = n
            .checked_mul(1u64 << shift)
            .ok_or_else(|| format!("`{text}`: too large"))?;
        if bytes == 0 {
            return Err(format!("`{text}`: a limit must be above zero"));
        }
        Ok(ByteSize(bytes))
    }
}

impl Serialize for ByteSize {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let text = [(40, "t"), (30, "g"), (20, "m"), (10, "k")]
            .iter()
            .find(|(shift, _)| b.is_multiple_of(1u64 << shift))
            .map(|(shift, u)| format!("{}{u}", b >> shift))
            .unwrap_or_else(|| b.to_string());
        s.serialize_str(&text)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Text(String),
            Bytes(u64),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Text(t) => t,
            Raw::Bytes(n) => n.to_string(),
        };
        ByteSize::parse(&text).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for ByteSize {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ByteSize".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A size: `4g`, `512m`, `100k` (binary units) or a number of bytes; above zero.",
            "anyOf": [
                {"type": "string", "pattern": "^\\s*[0-9]+\\s*([kKmMgGtT]([iI]?[bB])?|[bB])?\\s*$"},
                {"type": "integer", "minimum": 1}
            ]
        })
    }
}

/// Seed 002 §11.3 `network:` — the hosts setup commands may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct NetworkConfig {
    /// Empty (the default): no filtering. Otherwise setup commands go through
    /// dandori's proxy on 127.0.0.1, which allows these hosts (and their
    /// subdomains) plus the registries of the detected ecosystems, and refuses
    /// the rest (`ENV_NETWORK_DOMAIN_REFUSED`).
    pub allowed_domains: Vec<String>,
}
