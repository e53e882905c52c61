//! The external agent executor: a command template such as `claude -p {prompt}`,
//! `codex exec {prompt}` or `aider --message {prompt}`.
//!
//! The template is split into words first (shell rules) and the placeholders are
//! then replaced inside each word, so a prompt full of quotes, `$` and newlines
//! reaches the agent as one intact argument and is never interpreted by a shell.
//! Placeholders: `{prompt}`, `{prompt_file}`, `{step_id}`, `{workdir}`.

use super::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use crate::error::RunnerError;
use crate::{process, reason};

#[derive(Debug, Clone)]
pub struct CommandExecutor {
    template: Vec<String>,
    sandbox: Option<dandori_exec::Sandbox>,
    /// The variables of `runner.agent_env` (its own API key), which the agent
    /// gets on top of the step environment; masked in its log like every secret.
    secrets: std::collections::BTreeMap<String, String>,
    /// More state paths under `HOME` (`runner.agent_state`).
    state: Vec<String>,
}

impl CommandExecutor {
    pub fn new(template: &str) -> Result<Self, RunnerError> {
        let words = shell_words::split(template).map_err(|e| {
            RunnerError::Executor(format!("agent command template {template:?}: {e}"))
        })?;
        if words.is_empty() {
            return Err(RunnerError::Executor(
                "agent command template is empty".to_string(),
            ));
        }
        Ok(CommandExecutor {
            template: words,
            sandbox: None,
            secrets: Default::default(),
            state: Vec::new(),
        })
    }

    /// Runs the agent inside `sandbox`: the worktree, the run directory and the
    /// agent's own state under `HOME` writable, the network on (the agent talks to
    /// its model), credential stores hidden.
    pub fn with_sandbox(mut self, sandbox: dandori_exec::Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    /// More writable state paths under `HOME` (relative; absolute paths and
    /// `..` are ignored: the agent's state stays in the home).
    pub fn with_state(mut self, state: Vec<String>) -> Self {
        self.state = state
            .into_iter()
            .filter(|p| {
                let p = std::path::Path::new(p);
                !p.as_os_str().is_empty()
                    && p.components()
                        .all(|c| matches!(c, std::path::Component::Normal(_)))
            })
            .collect();
        self
    }

    pub fn with_secrets(mut self, secrets: std::collections::BTreeMap<String, String>) -> Self {
        self.secrets = secrets;
        self
    }

    /// `argv` wrapped in the sandbox (when there is one): the worktree, the run
    /// directory's logs and the agent's own state under `HOME` writable, network on.
    pub(crate) fn confined(
        &self,
        argv: Vec<String>,
        req: &ExecRequest<'_>,
    ) -> Result<Vec<String>, RunnerError> {
        let Some(sandbox) = &self.sandbox else {
            return Ok(argv);
        };
        let mut extra: Vec<std::path::PathBuf> = req
            .prompt_file
            .parent()
            .into_iter()
            .chain(req.log.parent())
            .map(std::path::Path::to_path_buf)
            .collect();
        let home = req.env.get("HOME").map(std::path::Path::new);
        if let Some(home) = home {
            extra.extend(self.state.iter().map(|p| home.join(p)));
        }
        // The agent's state (sessions, transcripts, caches) lives in the run's
        // own home; of the host's home it gets its credential files, copied in.
        let mut policy = dandori_exec::SandboxPolicy::worktree(req.workdir, &extra)
            .with_network(true)
            .in_git_worktree(req.workdir)
            .with_program(&self.template, home);
        if let Some(home) = home {
            policy = policy.with_agent_credentials(home);
        }
        sandbox
            .wrap(argv, &policy, req.workdir, dandori_exec::Origin::Issued)
            .map_err(|e| RunnerError::Executor(e.to_string()))
    }

    /// The step environment plus the agent's own secrets (`runner.agent_env`).
    pub(crate) fn agent_env(
        &self,
        req: &ExecRequest<'_>,
    ) -> std::collections::BTreeMap<String, String> {
        let mut env = req.env.clone();
        for (k, v) in &self.secrets {
            env.entry(k.clone()).or_insert_with(|| v.clone());
        }
        env
    }

    /// Whether agents run inside a sandbox (not `sandbox.mode: off`).
    pub(crate) fn sandboxed(&self) -> bool {
        self.sandbox
            .as_ref()
            .is_some_and(|s| s.status().kind != dandori_exec::SandboxKind::None)
    }

    pub(crate) fn sandbox(&self) -> Option<&dandori_exec::Sandbox> {
        self.sandbox.as_ref()
    }

    /// The argv for one request.
    pub fn argv(&self, req: &ExecRequest<'_>) -> Vec<String> {
        let prompt_file = req.prompt_file.to_string_lossy();
        // As the command sees it (a copy-on-write workspace: its mount point).
        let workdir = dandori_exec::overlay::inner(req.workdir);
        let workdir = workdir.to_string_lossy();
        self.template
            .iter()
            .map(|w| {
                w.replace("{prompt_file}", &prompt_file)
                    .replace("{step_id}", req.step_id)
                    .replace("{workdir}", &workdir)
                    .replace("{prompt}", req.prompt)
            })
            .collect()
    }
}

impl Executor for CommandExecutor {
    fn name(&self) -> &'static str {
        "command"
    }

    /// The agent program (the template's first word) exists: a path, or a name
    /// found on `PATH`. A word with a placeholder is left to the run.
    fn preflight(&self) -> Option<String> {
        let program = self.template.first()?;
        if program.contains('{') {
            return None;
        }
        let found = if program.contains('/') {
            std::path::Path::new(program).is_file()
        } else {
            std::env::var_os("PATH")
                .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join(program).is_file()))
        };
        (!found).then(|| {
            format!(
                "the agent program {program:?} (the first word of the agent command) is not found{}; install it or fix runner.agent_cmd / --agent-cmd",
                if program.contains('/') { "" } else { " on PATH" }
            )
        })
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        // A log of what was asked: atomic, not synced (it is written again on resume).
        dandori_fs::write_atomic_unsynced(req.prompt_file, req.masker.mask_str(req.prompt))?;
        let argv = self.confined(self.argv(req), req)?;
        let env = self.agent_env(req);
        let out = process::run(&process::ProcSpec {
            argv: &argv,
            cwd: req.workdir,
            env: &env,
            timeout: req.timeout,
            log: req.log,
            masker: Some(req.masker),
            heartbeat: req.heartbeat,
        })?;
        let outcome = if out.timed_out {
            ExecOutcome::Failed {
                reason_code: reason::AGENT_TIMEOUT,
                message: format!(
                    "agent `{}` killed after {} s (limits.timeout_sec)",
                    self.template[0],
                    req.timeout.as_secs()
                ),
            }
        } else if out.exit_code == Some(0) {
            ExecOutcome::Completed
        } else {
            ExecOutcome::Failed {
                reason_code: reason::AGENT_FAILED,
                message: format!(
                    "agent `{}` exited with {}: {}",
                    self.template[0],
                    out.exit_code
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| "a signal".to_string()),
                    last_line(&out.tail)
                ),
            }
        };
        Ok(StepExecution {
            outcome,
            tokens: TokenUsage::default(),
            actions: 1,
            reflections: Vec::new(),
            summary: format!(
                "agent `{}` ran {} ms",
                self.template[0],
                out.duration.as_millis()
            ),
            tooling: None,
            calls: Vec::new(),
        })
    }
}

pub(crate) fn last_line(s: &str) -> String {
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}
