//! The adapter of an executable plugin: runs `<plugin> detect|generate|verify`
//! with the request on stdin, in the command sandbox, and reads its answer.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_exec::{CommandSpec, Origin, SandboxPolicy, run_command};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::protocol::{self, ENV_PLUGIN_FAILED, ENV_PLUGIN_INVALID, Function, PROTOCOL};
use crate::EnvError;

/// Answers larger than this are refused (a plugin sends file contents bounded
/// by `max_file_size`, not whole trees).
const MAX_ANSWER: usize = 8 << 20;

/// Where a plugin was found, which decides how far it is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PluginOrigin {
    /// The user's plugin directory or `planning.environment_setup.plugins.paths`
    /// of a trusted config layer: the user chose it.
    User,
    /// The repository's `.dandori/plugins`: run only when the repository is
    /// trusted (`dandori trust`), like any command the repository issues.
    Repository,
    /// Shipped with dandori (`share/dandori/plugins` beside its `bin/`): part
    /// of the installation, judged as the user's own.
    Shipped,
}

/// One plugin executable and how to run it.
#[derive(Debug, Clone)]
pub struct ExecutablePlugin {
    pub path: PathBuf,
    pub origin: PluginOrigin,
    pub timeout: Duration,
    /// The child's environment (secrets removed).
    pub env: BTreeMap<String, String>,
    /// `None`: unconfined (library callers that confine the whole process).
    pub sandbox: Option<dandori_exec::Sandbox>,
}

impl ExecutablePlugin {
    /// Runs one function with `env`; `prepared`: in the prepared environment
    /// (`verify`: dandori's tool cache shown too).
    pub(crate) fn call(
        &self,
        function: Function,
        repo: &Path,
        mut request: serde_json::Map<String, Value>,
        env: &BTreeMap<String, String>,
        prepared: bool,
    ) -> Result<Value, EnvError> {
        request.insert("protocol".into(), json!(PROTOCOL));
        request.insert("function".into(), json!(function.name()));
        request.insert("repository".into(), json!(repo.display().to_string()));
        let body = serde_json::to_vec(&Value::Object(request))
            .map_err(|e| self.invalid(function, format!("encoding the request: {e}")))?;
        let program = self.path.display().to_string();
        let mut spec = CommandSpec::program(&program, [function.word()], repo)
            .env(env.clone())
            .timeout(self.timeout)
            .stdin(body)
            .tail_bytes(MAX_ANSWER + 1);
        if let Some(s) = &self.sandbox {
            let argv = vec![program.clone()];
            // The repository read-only for every call: a plugin reads files
            // and asks the package manager what is installed.
            let base = SandboxPolicy::default().readable(repo);
            let base = if prepared {
                crate::tools::with_tools_read_only(base, env)
            } else {
                base
            };
            let mut policy = base
                .with_network(false)
                .with_program(&argv, env.get("HOME").map(Path::new));
            // The plugin's own directory (a repository's `.dandori/plugins`,
            // hidden from other commands), read-only.
            if let Some(dir) = self.path.parent() {
                policy = policy.readable(dir);
            }
            let origin = match self.origin {
                PluginOrigin::User | PluginOrigin::Shipped => Origin::User,
                PluginOrigin::Repository => Origin::Issued,
            };
            spec = spec.sandbox(s.clone(), policy, origin);
        }
        let out = run_command(&spec).map_err(|e| self.failed(function, e.to_string()))?;
        if out.timed_out {
            return Err(self.failed(
                function,
                format!("timed out after {} s", self.timeout.as_secs()),
            ));
        }
        if !out.success() {
            let stderr = out.stderr_tail.trim();
            return Err(self.failed(
                function,
                format!(
                    "exit code {}{}",
                    out.exit_code
                        .map_or_else(|| "none (killed)".to_string(), |c| c.to_string()),
                    if stderr.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", tail(stderr, 600))
                    }
                ),
            ));
        }
        if out.stdout_tail.len() > MAX_ANSWER {
            return Err(self.invalid(function, format!("answer larger than {MAX_ANSWER} bytes")));
        }
        protocol::parse::<Value>(&out.stdout_tail).map_err(|e| self.invalid(function, e))
    }

    /// Reads `value` as the answer type `T` of `function`.
    pub(crate) fn read<T: serde::de::DeserializeOwned>(
        &self,
        function: Function,
        value: Value,
    ) -> Result<T, EnvError> {
        let text = value.to_string();
        protocol::parse::<T>(&text).map_err(|e| self.invalid(function, e))
    }

    pub(crate) fn invalid(&self, function: Function, message: String) -> EnvError {
        EnvError::Plugin {
            plugin: self.path.display().to_string(),
            function: function.name(),
            code: ENV_PLUGIN_INVALID,
            message,
        }
    }

    fn failed(&self, function: Function, message: String) -> EnvError {
        EnvError::Plugin {
            plugin: self.path.display().to_string(),
            function: function.name(),
            code: ENV_PLUGIN_FAILED,
            message,
        }
    }
}

fn tail(s: &str, max: usize) -> String {
    let chars: Vec<char> = s.chars().collect();
    if chars.len() <= max {
        s.to_string()
    } else {
        format!("…{}", chars[chars.len() - max..].iter().collect::<String>())
    }
}
