//! Agent CLI presets (`--agent claude|codex|gemini`, `runner.agent`): the agent
//! programs people already run, driven the way each one needs headless.
//!
//! A preset knows its CLI's invocation (prompt, structured output, model flag, a
//! permission mode that lets it edit: dandori's sandbox is the boundary, so the
//! CLI's own sandbox is switched off where it would fight bubblewrap), the
//! variables it needs from the caller's environment (its key and base URL, passed
//! explicitly like `runner.agent_env`), its state directory, and how to resume a
//! session. Its streamed JSON becomes one progress line per tool call, the session
//! id (kept in `logs/step.Sxx.agent-session.json` as soon as the CLI announces it,
//! so a killed run resumes the same session) and the usage of the step (tokens,
//! cost, turns) in the trace. See docs/agents.md.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use dandori_config::AgentPreset;
use serde_json::{Value, json};

use super::command::{CommandExecutor, last_line};
use super::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use crate::error::RunnerError;
use crate::{process, reason};

/// What dandori knows about one agent CLI.
#[derive(Debug, Clone, Copy)]
pub struct PresetInfo {
    pub preset: AgentPreset,
    /// The program on `PATH`.
    pub program: &'static str,
    /// How to install it.
    pub install: &'static str,
    /// Variables of the caller's environment the CLI gets (its credential, base
    /// URL): nothing else of the caller's secrets reaches it.
    pub credentials: &'static [&'static str],
    /// Its state directory under `HOME` (sessions live there).
    pub state_dir: &'static str,
    /// `gen_ai.provider.name` of its model API.
    pub provider_kind: &'static str,
}

pub fn info(preset: AgentPreset) -> PresetInfo {
    match preset {
        AgentPreset::Claude => PresetInfo {
            preset,
            program: "claude",
            install: "npm install -g @anthropic-ai/claude-code",
            credentials: &[
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN",
                "ANTHROPIC_BASE_URL",
            ],
            state_dir: ".claude",
            provider_kind: "anthropic",
        },
        AgentPreset::Codex => PresetInfo {
            preset,
            program: "codex",
            install: "npm install -g @openai/codex",
            credentials: &["OPENAI_API_KEY", "OPENAI_BASE_URL"],
            state_dir: ".codex",
            provider_kind: "openai",
        },
        AgentPreset::Gemini => PresetInfo {
            preset,
            program: "gemini",
            install: "npm install -g @google/gemini-cli",
            credentials: &["GEMINI_API_KEY", "GOOGLE_GEMINI_BASE_URL"],
            state_dir: ".gemini",
            provider_kind: "gcp.gemini",
        },
    }
}

/// The argv of one invocation: a new session, or `session` resumed with `prompt`
/// as its next message. `sandboxed`: dandori's sandbox confines the CLI, so its
/// own permission prompts and sandbox are off; unsandboxed (`sandbox.mode: off`)
/// the CLI keeps its own edit-only mode or sandbox.
pub fn argv(
    preset: AgentPreset,
    program: &str,
    prompt: &str,
    model: Option<&str>,
    session: Option<&str>,
    env: &BTreeMap<String, String>,
    sandboxed: bool,
) -> Vec<String> {
    let mut a: Vec<String> = vec![program.to_string()];
    let mut push = |words: &[&str]| a.extend(words.iter().map(|w| w.to_string()));
    match preset {
        AgentPreset::Claude => {
            push(&["-p", prompt, "--output-format", "stream-json", "--verbose"]);
            push(&[
                "--permission-mode",
                if sandboxed {
                    "bypassPermissions"
                } else {
                    "acceptEdits"
                },
            ]);
            if let Some(m) = model {
                push(&["--model", m]);
            }
            if let Some(s) = session {
                push(&["--resume", s]);
            }
        }
        AgentPreset::Codex => {
            push(&["exec", "--json", "--skip-git-repo-check"]);
            if sandboxed {
                // Codex's own Landlock sandbox cannot nest in bubblewrap's.
                push(&["--dangerously-bypass-approvals-and-sandbox"]);
            } else {
                push(&["--sandbox", "workspace-write"]);
            }
            if let Some(m) = model {
                push(&["-m", m]);
            }
            // The key is read from OPENAI_API_KEY, the endpoint is OPENAI_BASE_URL
            // (Codex does not read that variable itself).
            let base = env
                .get("OPENAI_BASE_URL")
                .map(String::as_str)
                .unwrap_or("https://api.openai.com/v1");
            let provider = format!(
                "model_providers.dandori={{name=\"dandori\", base_url={}, env_key=\"OPENAI_API_KEY\", wire_api=\"responses\"}}",
                toml_string(base)
            );
            push(&["-c", "model_provider=\"dandori\"", "-c", &provider]);
            // Its shell tool runs `bash -lc` by default: the login profile resets
            // PATH, and the project's tools (a venv's python, dandori's `gh`
            // shim) are gone. A plain `bash -c` keeps the PATH dandori gives it.
            push(&["-c", "allow_login_shell=false"]);
            if let Some(s) = session {
                push(&["resume", s]);
            }
            push(&["--", prompt]);
        }
        AgentPreset::Gemini => {
            push(&["-p", prompt, "--output-format", "stream-json"]);
            push(&[
                "--approval-mode",
                if sandboxed { "yolo" } else { "auto_edit" },
            ]);
            if let Some(m) = model {
                push(&["-m", m]);
            }
            if let Some(s) = session {
                push(&["--resume", s]);
            }
        }
    }
    a
}

fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Variables every invocation of the preset gets.
fn fixed_env(preset: AgentPreset, sandboxed: bool) -> Vec<(&'static str, &'static str)> {
    match preset {
        AgentPreset::Claude => {
            let mut v = vec![
                ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
                ("DISABLE_AUTOUPDATER", "1"),
            ];
            if sandboxed {
                // Claude Code refuses bypassPermissions as root outside a sandbox
                // it knows of; dandori's is one.
                v.push(("IS_SANDBOX", "1"));
            }
            v
        }
        AgentPreset::Codex => vec![],
        AgentPreset::Gemini => vec![],
    }
}

/// What the CLI's streamed JSON said.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Transcript {
    pub session_id: Option<String>,
    pub model: Option<String>,
    /// One line per tool call: `Edit src/app.py`, `Bash pytest -q`.
    pub tool_calls: Vec<String>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_tokens: u64,
    pub cost_usd: Option<f64>,
    pub num_turns: Option<u64>,
    pub duration_ms: Option<u64>,
    /// The final answer, or the error the CLI reported.
    pub result: Option<String>,
    pub is_error: bool,
    /// A result event was seen (the CLI finished its turn).
    pub finished: bool,
    /// Each model response streamed before the result, by message id: its input
    /// (cache included), cache-read and output tokens (Claude Code's `assistant`
    /// events; one response may come as several events).
    pub streamed: BTreeMap<String, [u64; 3]>,
    /// Turns the CLI started (Codex's `turn.started`).
    pub turns_started: u64,
}

impl Transcript {
    /// Takes one line of the CLI's output; returns the progress line of a tool
    /// call it announces, if any.
    pub fn feed(&mut self, preset: AgentPreset, line: &str, workdir: &Path) -> Option<String> {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        let v: Value = serde_json::from_str(line).ok()?;
        let s = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_str).map(str::to_string);
        let u = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
        let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
        let mut tool = None;
        match (preset, kind) {
            (AgentPreset::Claude, "system") => {
                self.session_id = s(&v, "/session_id").or(self.session_id.take());
                self.model = s(&v, "/model").or(self.model.take());
            }
            (AgentPreset::Claude, "assistant") => {
                if let Some(id) = s(&v, "/message/id") {
                    let usage = [
                        u(&v, "/message/usage/input_tokens")
                            + u(&v, "/message/usage/cache_creation_input_tokens")
                            + u(&v, "/message/usage/cache_read_input_tokens"),
                        u(&v, "/message/usage/cache_read_input_tokens"),
                        u(&v, "/message/usage/output_tokens"),
                    ];
                    let seen = self.streamed.entry(id).or_default();
                    for (a, b) in seen.iter_mut().zip(usage) {
                        *a = (*a).max(b);
                    }
                }
                for b in v
                    .pointer("/message/content")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if b.get("type").and_then(Value::as_str) == Some("tool_use") {
                        let name = b.get("name").and_then(Value::as_str).unwrap_or("tool");
                        tool = Some(describe(name, b.get("input"), workdir));
                    }
                }
            }
            (AgentPreset::Claude, "result") => {
                self.finished = true;
                self.session_id = s(&v, "/session_id").or(self.session_id.take());
                self.is_error = v.get("is_error") == Some(&Value::Bool(true))
                    || s(&v, "/subtype").is_some_and(|t| t != "success");
                self.result = s(&v, "/result").or_else(|| s(&v, "/subtype"));
                self.input_tokens = u(&v, "/usage/input_tokens")
                    + u(&v, "/usage/cache_creation_input_tokens")
                    + u(&v, "/usage/cache_read_input_tokens");
                self.cache_read_tokens = u(&v, "/usage/cache_read_input_tokens");
                self.output_tokens = u(&v, "/usage/output_tokens");
                self.cost_usd = v.get("total_cost_usd").and_then(Value::as_f64);
                self.num_turns = v.get("num_turns").and_then(Value::as_u64);
                self.duration_ms = v.get("duration_ms").and_then(Value::as_u64);
                if let Some(m) = v
                    .get("modelUsage")
                    .and_then(Value::as_object)
                    .and_then(|m| m.keys().next())
                {
                    self.model = Some(m.clone());
                }
            }
            (AgentPreset::Codex, "thread.started") => {
                self.session_id = s(&v, "/thread_id");
            }
            (AgentPreset::Codex, "turn.started") => self.turns_started += 1,
            // A command is announced when it starts; a file change or an MCP
            // call (which newer Codex versions announce started and completed)
            // once, completed.
            (AgentPreset::Codex, "item.started")
                if s(&v, "/item/type").as_deref() == Some("command_execution") =>
            {
                tool = codex_item(&v, workdir);
            }
            (AgentPreset::Codex, "item.completed") => {
                // File changes and MCP calls are announced once, completed.
                if s(&v, "/item/type").as_deref() != Some("command_execution") {
                    tool = codex_item(&v, workdir);
                }
                if s(&v, "/item/type").as_deref() == Some("agent_message") {
                    self.result = s(&v, "/item/text");
                }
            }
            (AgentPreset::Codex, "turn.completed") => {
                self.finished = true;
                self.input_tokens += u(&v, "/usage/input_tokens");
                self.cache_read_tokens += u(&v, "/usage/cached_input_tokens");
                self.output_tokens += u(&v, "/usage/output_tokens");
                self.num_turns = Some(self.num_turns.unwrap_or(0) + 1);
            }
            (AgentPreset::Codex, "turn.failed") | (AgentPreset::Codex, "error") => {
                if kind == "turn.failed" {
                    self.finished = true;
                    self.is_error = true;
                }
                self.result = s(&v, "/error/message").or_else(|| s(&v, "/message"));
            }
            (AgentPreset::Gemini, "init") => {
                self.session_id = s(&v, "/session_id");
                self.model = s(&v, "/model");
            }
            (AgentPreset::Gemini, "tool_use") => {
                let name = v.get("tool_name").and_then(Value::as_str).unwrap_or("tool");
                tool = Some(describe(name, v.get("parameters"), workdir));
            }
            (AgentPreset::Gemini, "message") if s(&v, "/role").as_deref() == Some("assistant") => {
                let text = s(&v, "/content").unwrap_or_default();
                let joined = self.result.take().unwrap_or_default() + &text;
                self.result = Some(joined);
            }
            (AgentPreset::Gemini, "result") => {
                self.finished = true;
                self.is_error = s(&v, "/status").is_some_and(|st| st != "success");
                if self.is_error {
                    self.result = s(&v, "/error/message").or(self.result.take());
                }
                self.input_tokens = u(&v, "/stats/input_tokens");
                self.output_tokens = u(&v, "/stats/output_tokens");
                self.cache_read_tokens = u(&v, "/stats/cached");
                self.duration_ms = v.pointer("/stats/duration_ms").and_then(Value::as_u64);
            }
            _ => {}
        }
        if let Some(t) = &tool {
            self.tool_calls.push(t.clone());
        }
        tool
    }

    /// An invocation that ended before its result event (killed with dandori,
    /// or at its time limit) reported no usage: its turns and tokens are what
    /// its streamed output recorded (Claude Code: every model response's usage;
    /// Codex: the turns it started, its tokens come only with a finished turn;
    /// Gemini CLI: nothing before its result).
    pub fn settle_unfinished(&mut self) {
        if self.finished {
            return;
        }
        if !self.streamed.is_empty() {
            let sum = |i: usize| self.streamed.values().map(|u| u[i]).sum::<u64>();
            self.input_tokens = sum(0);
            self.cache_read_tokens = sum(1);
            self.output_tokens = sum(2);
            self.num_turns = Some(self.streamed.len() as u64);
        } else if self.turns_started > 0 {
            self.num_turns = Some(self.turns_started);
        }
    }
}

/// `Edit src/app.py`, `Bash pytest -q`, `Grep TODO`: a tool call in one line.
fn describe(name: &str, input: Option<&Value>, workdir: &Path) -> String {
    let field = |k: &str| input.and_then(|i| i.get(k)).and_then(Value::as_str);
    let detail = field("file_path")
        .or_else(|| field("absolute_path"))
        .or_else(|| field("path"))
        .map(|p| relative(p, workdir))
        .or_else(|| field("command").map(str::to_string))
        .or_else(|| field("pattern").map(str::to_string))
        .or_else(|| field("url").map(str::to_string));
    let line = match detail {
        Some(d) => format!("{name} {d}"),
        None => name.to_string(),
    };
    one_line(&line)
}

fn codex_item(v: &Value, workdir: &Path) -> Option<String> {
    let item = v.get("item")?;
    let text = |k: &str| item.get(k).and_then(Value::as_str);
    let line = match text("type")? {
        "command_execution" => format!("Bash {}", unwrap_shell(text("command")?)),
        "file_change" => {
            let paths: Vec<String> = item
                .get("changes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|c| c.get("path").and_then(Value::as_str))
                .map(|p| relative(p, workdir))
                .collect();
            format!("Edit {}", paths.join(" "))
        }
        "mcp_tool_call" => format!(
            "{}.{}",
            text("server").unwrap_or("mcp"),
            text("tool").unwrap_or("tool")
        ),
        "web_search" => format!("WebSearch {}", text("query").unwrap_or("")),
        _ => return None,
    };
    Some(one_line(&line))
}

/// Codex runs `bash -lc '<command>'`: the command itself.
fn unwrap_shell(command: &str) -> String {
    match shell_words::split(command) {
        Ok(w) if w.len() == 3 && w[0].ends_with("sh") && (w[1] == "-lc" || w[1] == "-c") => {
            w[2].clone()
        }
        _ => command.to_string(),
    }
}

fn relative(p: &str, workdir: &Path) -> String {
    Path::new(p)
        .strip_prefix(workdir)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| p.to_string())
}

fn one_line(s: &str) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 120 {
        format!("{}…", flat.chars().take(119).collect::<String>())
    } else {
        flat
    }
}

/// The step's working directory as the agent sees it: its `getcwd`, the paths
/// its tools report and the key of Claude Code's per-directory project. A
/// copy-on-write workspace is reached by the runner through its mount holder's
/// root (`/proc/<pid>/root/<dir>`) and seen by the agent at `<dir>`, the
/// worker's fixed directory.
fn agent_dir(req: &ExecRequest<'_>) -> PathBuf {
    dandori_exec::overlay::inner(req.workdir)
}

/// Where a step's agent session is kept: beside its prompt in the run's logs.
pub fn session_file(req: &ExecRequest<'_>) -> PathBuf {
    req.prompt_file
        .parent()
        .unwrap_or(Path::new("."))
        .join(format!("step.{}.agent-session.json", req.step_id))
}

/// The session of this step's earlier invocation by the same preset.
/// The marker of the step's running CLI invocation
/// ([`super::interrupted_call`]).
fn invocation_file(req: &ExecRequest<'_>) -> PathBuf {
    session_file(req).with_file_name(format!("step.{}.agent-invocation.json", req.step_id))
}

pub fn load_session(path: &Path, preset: AgentPreset) -> Option<String> {
    let v: Value = serde_json::from_str(&dandori_fs::read_to_string(path).ok()?).ok()?;
    (v.get("agent").and_then(Value::as_str) == Some(preset.name()))
        .then(|| v.get("session_id")?.as_str().map(str::to_string))
        .flatten()
        .filter(|s| !s.is_empty() && !s.starts_with('-'))
}

/// Whether the session was last used by another dandori process: the run was
/// killed and resumed, and the step's worktree was made afresh from its base.
fn used_before_a_restart(path: &Path) -> bool {
    let pid = dandori_fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
        .and_then(|v| v.get("pid").and_then(Value::as_u64));
    pid != Some(u64::from(std::process::id()))
}

fn store_session(path: &Path, preset: AgentPreset, session: &str) -> Option<String> {
    let text = json!({"agent": preset.name(), "session_id": session, "pid": std::process::id()})
        .to_string()
        + "\n";
    dandori_fs::write_atomic(path, text)
        .err()
        .map(|e| format!("the agent session id could not be kept: {e}"))
}

/// Claude Code keeps a session under `~/.claude/projects/<its cwd, every
/// character but letters and digits as '-'>/<id>.jsonl` and resumes only from
/// the directory it ran in. A step resumed after a kill runs in another pool
/// worktree: the session's transcript is copied to that worktree's project.
fn adopt_claude_session(home: &Path, workdir: &Path, session: &str) {
    let projects = home.join(".claude/projects");
    let slug: String = workdir
        .to_string_lossy()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let file = format!("{session}.jsonl");
    let target = projects.join(&slug).join(&file);
    if target.is_file() {
        return;
    }
    let found = std::fs::read_dir(&projects)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(&file))
        .find(|p| p.is_file());
    if let Some(source) = found {
        let _ = dandori_fs::create_dir_all(projects.join(&slug));
        let _ = std::fs::copy(source, target);
    }
}

/// `base` with every leaf of `ours` set (objects merged key by key).
fn merge_json(mut base: Value, ours: &Value) -> Value {
    match (base.as_object_mut(), ours.as_object()) {
        (Some(b), Some(o)) => {
            for (k, v) in o {
                let merged = merge_json(b.remove(k).unwrap_or(Value::Null), v);
                b.insert(k.clone(), merged);
            }
            base
        }
        _ => ours.clone(),
    }
}

/// Progress lines of the run (the terminal, MCP progress).
pub type Progress = std::sync::Arc<dyn Fn(&str) + Send + Sync>;

/// The executor of a preset: the command executor's sandbox and secrets, the
/// preset's invocation, sessions, progress and usage.
pub struct AgentExecutor {
    info: PresetInfo,
    model: Option<String>,
    inner: CommandExecutor,
    progress: Option<Progress>,
    /// `PATH` and `HOME` of the caller, for the preflight.
    caller: BTreeMap<String, String>,
    version: OnceLock<String>,
}

impl AgentExecutor {
    /// `inner` carries the sandbox, the `runner.agent_env` secrets and state paths.
    pub fn new(preset: AgentPreset, model: Option<String>, inner: CommandExecutor) -> Self {
        AgentExecutor {
            info: info(preset),
            model,
            inner,
            progress: None,
            caller: BTreeMap::new(),
            version: OnceLock::new(),
        }
    }

    pub fn with_progress(mut self, progress: Option<Progress>) -> Self {
        self.progress = progress;
        self
    }

    /// The caller's environment (its `PATH` finds the CLI; its `HOME` keeps the
    /// CLI's sessions).
    pub fn with_caller_env(mut self, env: &BTreeMap<String, String>) -> Self {
        self.caller = env
            .iter()
            .filter(|(k, _)| matches!(k.as_str(), "PATH" | "HOME"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        self
    }

    fn resolve(&self) -> Option<PathBuf> {
        let path = self.caller.get("PATH")?;
        std::env::split_paths(path)
            .map(|d| d.join(self.info.program))
            .find(|p| p.is_file())
    }

    fn say(&self, line: &str) {
        if let Some(p) = &self.progress {
            p(line);
        }
    }

    /// One run of the CLI; the transcript and the process outcome.
    fn invoke(
        &self,
        req: &ExecRequest<'_>,
        session: Option<&str>,
    ) -> Result<(Transcript, process::ProcOutcome), RunnerError> {
        let sandboxed = self.inner.sandboxed();
        let mut env = self.inner.agent_env(req);
        for (k, v) in fixed_env(self.info.preset, sandboxed) {
            env.insert(k.to_string(), v.to_string());
        }
        if self.info.preset == AgentPreset::Gemini {
            // Gemini CLI needs its auth type chosen (else "Invalid auth method
            // selected"), and folder trust off (else yolo falls back to asking).
            // Inside the sandbox: the user settings of the run's own home (the
            // user's own, copied, with those two set). Gemini skips a system
            // settings file that is not root's or whose directory others may
            // write (a run directory under /tmp or /var/tmp, a umask of 0).
            // Without a sandbox: system settings in the run directory, never
            // the user's ~/.gemini.
            let ours = json!({"security": {"auth": {"selectedType": "gemini-api-key"},
                                           "folderTrust": {"enabled": false}}});
            match self.inner.sandbox().and_then(|s| s.home_dir()) {
                Some(home) => {
                    let settings = home.join(".gemini/settings.json");
                    let theirs = req
                        .env
                        .get("HOME")
                        .map(|h| Path::new(h).join(".gemini/settings.json"));
                    let base = [Some(settings.clone()), theirs]
                        .into_iter()
                        .flatten()
                        .find_map(|p| {
                            serde_json::from_str::<Value>(&std::fs::read_to_string(p).ok()?)
                                .ok()
                                .filter(Value::is_object)
                        })
                        .unwrap_or_else(|| json!({}));
                    dandori_fs::create_dir_all(home.join(".gemini"))?;
                    dandori_fs::write_atomic_unsynced(
                        &settings,
                        merge_json(base, &ours).to_string(),
                    )?;
                }
                None => {
                    let settings = session_file(req).with_file_name("gemini-settings.json");
                    dandori_fs::write_atomic_unsynced(&settings, ours.to_string())?;
                    env.insert(
                        "GEMINI_CLI_SYSTEM_SETTINGS_PATH".to_string(),
                        settings.to_string_lossy().into_owned(),
                    );
                }
            }
        }
        let argv = argv(
            self.info.preset,
            self.info.program,
            req.prompt,
            self.model.as_deref(),
            session,
            &env,
            sandboxed,
        );
        let argv = self.inner.confined(argv, req)?;
        let start = std::fs::metadata(req.log).map(|m| m.len()).unwrap_or(0);
        // Removed when the invocation ends: left behind, it is a kill's trace.
        let marker = super::interrupted_call::Marker::begin(
            &invocation_file(req),
            start,
            &chrono::Utc::now().to_rfc3339(),
            session.is_some(),
        )?;
        let done = AtomicBool::new(false);
        let drained = AtomicBool::new(false);
        let session_path = session_file(req);
        let (out, transcript) = std::thread::scope(|scope| {
            // Follows the log while the CLI runs: progress per tool call, and the
            // session id kept the moment it is announced. It reads the last lines
            // before the log is masked (masking may rewrite JSON it parses).
            let follower = scope.spawn(|| {
                let mut t = Transcript::default();
                let mut pos = start;
                let mut pending = String::new();
                let mut kept: Option<String> = session.map(str::to_string);
                let seen = agent_dir(req);
                loop {
                    let finished = done.load(Ordering::SeqCst);
                    if let Some(chunk) = read_from(req.log, &mut pos, finished) {
                        pending.push_str(&chunk);
                        while let Some(i) = pending.find('\n') {
                            let line: String = pending.drain(..=i).collect();
                            if let Some(tool) = t.feed(self.info.preset, &line, &seen) {
                                self.say(&req.masker.mask_str(&format!("{}: {tool}", req.step_id)));
                            }
                            if t.session_id.is_some() && t.session_id != kept {
                                kept = t.session_id.clone();
                                if let Some(problem) = kept
                                    .as_deref()
                                    .and_then(|s| store_session(&session_path, self.info.preset, s))
                                {
                                    self.say(&format!("{}: {problem}", req.step_id));
                                }
                            }
                        }
                    }
                    if finished {
                        if !pending.trim().is_empty() {
                            t.feed(self.info.preset, &pending, &seen);
                        }
                        drained.store(true, Ordering::SeqCst);
                        return t;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            let wait_drained = || {
                done.store(true, Ordering::SeqCst);
                while !drained.load(Ordering::SeqCst) && !follower.is_finished() {
                    std::thread::sleep(Duration::from_millis(5));
                }
            };
            let out = process::run_hooked(
                &process::ProcSpec {
                    argv: &argv,
                    cwd: req.workdir,
                    env: &env,
                    timeout: req.timeout,
                    log: req.log,
                    masker: Some(req.masker),
                    heartbeat: req.heartbeat,
                },
                Some(&wait_drained),
            );
            done.store(true, Ordering::SeqCst);
            let t = follower.join().unwrap_or_default();
            (out, t)
        });
        marker.end();
        let out = out?;
        if let Some(problem) = transcript
            .session_id
            .as_deref()
            .and_then(|s| store_session(&session_path, self.info.preset, s))
        {
            self.say(&format!("{}: {problem}", req.step_id));
        }
        Ok((transcript, out))
    }
}

/// The complete lines appended to `path` since `pos` (with `all`, the last
/// incomplete one too).
fn read_from(path: &Path, pos: &mut u64, all: bool) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    if len < *pos {
        // The log was rewritten (masked) in place: nothing new to follow.
        *pos = len;
        return None;
    }
    if len == *pos {
        return None;
    }
    f.seek(SeekFrom::Start(*pos)).ok()?;
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).ok()?;
    // Up to the last complete line; the rest is read again next time.
    let end = if all {
        buf.len()
    } else {
        buf.iter().rposition(|b| *b == b'\n').map(|i| i + 1)?
    };
    *pos += end as u64;
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

impl Executor for AgentExecutor {
    fn name(&self) -> &'static str {
        "command"
    }

    fn agent(&self) -> Option<(&'static str, Option<String>)> {
        Some((self.info.preset.name(), self.version.get().cloned()))
    }

    /// The CLI is on `PATH` (instant), and `CLI --version` answers inside the
    /// sandbox; its version is kept for the trace and the report.
    fn preflight(&self) -> Option<String> {
        let Some(program) = self.resolve() else {
            return Some(format!(
                "the {} agent CLI `{}` is not installed (not on PATH); install it with `{}`, or choose another agent (--agent, runner.agent)",
                self.info.preset.name(),
                self.info.program,
                self.info.install
            ));
        };
        let dir = std::env::temp_dir().join(format!(
            "dandori-agent-preflight-{}-{}",
            std::process::id(),
            self.info.program
        ));
        let _ = dandori_fs::create_dir_all(&dir);
        let argv = vec![self.info.program.to_string(), "--version".to_string()];
        let argv = match self.inner.sandbox() {
            Some(sandbox) => {
                let policy = dandori_exec::SandboxPolicy::worktree(&dir, &[]);
                match sandbox.wrap(argv, &policy, &dir, dandori_exec::Origin::Issued) {
                    Ok(a) => a,
                    Err(e) => return Some(format!("the {} agent CLI: {e}", self.info.program)),
                }
            }
            None => argv,
        };
        let out = process::run(&process::ProcSpec {
            argv: &argv,
            cwd: &dir,
            env: &self.caller,
            timeout: Duration::from_secs(30),
            log: &dir.join("version.log"),
            masker: None,
            heartbeat: None,
        });
        let _ = std::fs::remove_dir_all(&dir);
        match out {
            Ok(o) if o.success() => {
                let v = last_line(&o.tail);
                let _ = self
                    .version
                    .set(format!("{} ({})", v.trim(), program.display()));
                None
            }
            Ok(o) => Some(format!(
                "`{} --version` failed inside the sandbox ({}): {}; reinstall it with `{}`",
                program.display(),
                o.exit_code
                    .map(|c| format!("exit {c}"))
                    .unwrap_or_else(|| "killed".to_string()),
                last_line(&o.tail),
                self.info.install
            )),
            Err(e) => Some(format!("`{} --version`: {e}", program.display())),
        }
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        dandori_fs::write_atomic_unsynced(req.prompt_file, req.masker.mask_str(req.prompt))?;
        // The CLI's state directory (its sessions) in the home it sees: the run's
        // own home inside the sandbox (`<run dir>/home`, kept for a resume; the
        // host's `~/.claude` is never shown), else the caller's.
        let home: Option<PathBuf> = match self.inner.sandbox().and_then(|s| s.home_dir()) {
            Some(h) => Some(h.to_path_buf()),
            None => req.env.get("HOME").map(PathBuf::from),
        };
        if let Some(home) = &home {
            let _ = dandori_fs::create_dir_all(home.join(self.info.state_dir));
        }
        let started_at = chrono::Utc::now().to_rfc3339();
        let clock = Instant::now();
        let session_path = session_file(req);
        let mut resumed = load_session(&session_path, self.info.preset);
        // The resumed session remembers edits that are gone and, maybe, another
        // worktree: say so plainly before anything else.
        let restarted_prompt;
        let restarted_req;
        // The step's prompt says where the agent is when the run kept the
        // interrupted work (`crate::interrupted`); else the tree was reset.
        let told = req
            .prompt
            .contains(&format!("## {}", crate::interrupted::HEADING));
        let req = if resumed.is_some() && used_before_a_restart(&session_path) && !told {
            restarted_prompt = format!(
                "dandori was interrupted and has restarted this step. The working tree was reset to the step's starting commit: none of the edits you made before exist any more. You are now working in {}; work only there and make your changes again.\n\n{}",
                agent_dir(req).display(),
                req.prompt
            );
            dandori_fs::write_atomic_unsynced(
                req.prompt_file,
                req.masker.mask_str(&restarted_prompt),
            )?;
            restarted_req = ExecRequest {
                prompt: &restarted_prompt,
                ..req.clone()
            };
            &restarted_req
        } else {
            req
        };
        if let (Some(s), Some(home)) = (&resumed, &home)
            && self.info.preset == AgentPreset::Claude
        {
            adopt_claude_session(home, &agent_dir(req), s);
        }
        // The call a kill cut short (dandori killed while the CLI ran): recorded
        // first, as far as its stream says.
        let interrupted = super::interrupted_call::recover(
            &invocation_file(req),
            req.log,
            self.info.preset,
            &agent_dir(req),
            req.masker,
        );
        let (mut t, mut out) = self.invoke(req, resumed.as_deref())?;
        if resumed.is_some()
            && !out.success()
            && !out.timed_out
            && t.tool_calls.is_empty()
            && t.num_turns.unwrap_or(0) == 0
        {
            // The session is gone (another machine, a cleaned home): start afresh.
            self.say(&format!(
                "{}: the agent session could not be resumed; starting a new one",
                req.step_id
            ));
            let _ = std::fs::remove_file(&session_path);
            resumed = None;
            (t, out) = self.invoke(req, None)?;
        }
        // Killed at its time limit: what it streamed is its usage.
        t.settle_unfinished();
        // A resumed session reports what the whole session used (Claude Code's
        // cost, Codex's thread tokens): only the increase is this call's.
        let usage_path =
            session_path.with_file_name(format!("step.{}.agent-usage.json", req.step_id));
        let reported = Cumulative::of(&t);
        if let Some(prev) = resumed
            .as_deref()
            .and_then(|s| Cumulative::load(&usage_path, s))
        {
            prev.subtract_from(self.info.preset, &mut t);
        }
        if let Some(s) = &t.session_id {
            let _ = reported.store(&usage_path, s);
        }
        let name = self.info.preset.name();
        let outcome = if out.timed_out {
            ExecOutcome::Failed {
                reason_code: reason::AGENT_TIMEOUT,
                message: format!(
                    "agent {name} killed after {} s (limits.timeout_sec)",
                    req.timeout.as_secs()
                ),
            }
        } else if out.exit_code == Some(0) && !t.is_error {
            ExecOutcome::Completed
        } else {
            ExecOutcome::Failed {
                reason_code: reason::AGENT_FAILED,
                message: format!(
                    "agent {name} {}: {}",
                    match out.exit_code {
                        Some(0) => "reported an error".to_string(),
                        Some(c) => format!("exited with {c}"),
                        None => "was killed by a signal".to_string(),
                    },
                    t.result
                        .as_deref()
                        .map(one_line)
                        .unwrap_or_else(|| last_line(&out.tail))
                ),
            }
        };
        let duration_ms = clock.elapsed().as_millis() as u64;
        let ok = outcome == ExecOutcome::Completed;
        let mut calls = Vec::new();
        let mut tokens = TokenUsage::default();
        if let Some(i) = &interrupted {
            self.say(&format!(
                "{}: the agent's invocation cut short by the kill made {} turn(s), {} tool call(s): recorded",
                req.step_id,
                i.transcript.num_turns.unwrap_or(0),
                i.transcript.tool_calls.len()
            ));
            calls.extend(self.call_events(
                req,
                &i.transcript,
                Call {
                    resumed: i.resumed,
                    started_at: &i.started_at,
                    duration_ms: i.duration_ms,
                    ok: false,
                    interrupted: true,
                },
            ));
            tokens.prompt_tokens += i.transcript.input_tokens;
            tokens.completion_tokens += i.transcript.output_tokens;
        }
        calls.extend(self.call_events(
            req,
            &t,
            Call {
                resumed: resumed.is_some(),
                started_at: &started_at,
                duration_ms,
                ok,
                interrupted: false,
            },
        ));
        tokens.prompt_tokens += t.input_tokens;
        tokens.completion_tokens += t.output_tokens;
        let cost = t.cost_usd.map(|c| format!(", ${c:.4}")).unwrap_or_default();
        Ok(StepExecution {
            outcome,
            tokens,
            actions: (t.tool_calls.len() as u32).max(1),
            reflections: Vec::new(),
            summary: format!(
                "agent {name}{} ran {} ms: {} turn(s), {} tool call(s), {} tokens{cost}",
                if resumed.is_some() {
                    " (resumed session)"
                } else {
                    ""
                },
                out.duration.as_millis(),
                t.num_turns.unwrap_or(0),
                t.tool_calls.len(),
                t.input_tokens + t.output_tokens,
            ),
            tooling: None,
            calls,
        })
    }
}

/// How one invocation went, for its trace events.
struct Call<'a> {
    resumed: bool,
    started_at: &'a str,
    duration_ms: u64,
    ok: bool,
    /// Cut short by a kill of dandori, read back from its stream.
    interrupted: bool,
}

impl AgentExecutor {
    /// The `LLM_CALL` of one invocation and a `TOOL_CALL` per tool call it made.
    fn call_events(
        &self,
        req: &ExecRequest<'_>,
        t: &Transcript,
        c: Call<'_>,
    ) -> Vec<(&'static str, Value)> {
        let name = self.info.preset.name();
        let mut call = json!({
            "step_id": req.step_id,
            "purpose": "agent",
            "agent": name,
            "agent_version": self.version.get(),
            "provider": name,
            "provider_kind": self.info.provider_kind,
            "request_model": self.model.clone().or(t.model.clone()),
            "model": t.model.clone().or(self.model.clone()).unwrap_or_else(|| name.to_string()),
            "usage": {"prompt_tokens": t.input_tokens, "completion_tokens": t.output_tokens,
                      "cache_read_tokens": t.cache_read_tokens},
            "cost_usd": t.cost_usd,
            "num_turns": t.num_turns,
            "session_id": t.session_id,
            "resumed": c.resumed,
            "tool_calls": t.tool_calls.len(),
            "agent_duration_ms": t.duration_ms,
            "started_at": c.started_at,
            "duration_ms": c.duration_ms,
            "ok": c.ok,
        });
        if c.interrupted {
            call["interrupted"] = json!(true);
        }
        let mut calls = vec![(crate::events::LLM_CALL, call)];
        for tool in &t.tool_calls {
            calls.push((
                crate::events::TOOL_CALL,
                json!({"step_id": req.step_id, "tool": tool.split(' ').next().unwrap_or(tool),
                       "call": tool, "agent": name, "started_at": c.started_at,
                       "duration_ms": 0, "ok": true}),
            ));
        }
        calls
    }
}

/// The figures a session's last invocation reported, kept beside its session
/// id: a resumed invocation of the same session reports them again, added to.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Cumulative {
    cost_usd: Option<f64>,
    input_tokens: u64,
    cache_read_tokens: u64,
    output_tokens: u64,
}

impl Cumulative {
    fn of(t: &Transcript) -> Cumulative {
        Cumulative {
            cost_usd: t.cost_usd,
            input_tokens: t.input_tokens,
            cache_read_tokens: t.cache_read_tokens,
            output_tokens: t.output_tokens,
        }
    }

    fn load(path: &Path, session: &str) -> Option<Cumulative> {
        let v: Value = serde_json::from_str(&dandori_fs::read_to_string(path).ok()?).ok()?;
        if v.get("session_id").and_then(Value::as_str) != Some(session) {
            return None;
        }
        serde_json::from_value(v.get("reported")?.clone()).ok()
    }

    fn store(&self, path: &Path, session: &str) -> Result<(), dandori_fs::FsError> {
        let text = json!({"session_id": session, "reported": self}).to_string() + "\n";
        dandori_fs::write_atomic_unsynced(path, text)
    }

    /// `t`'s cumulative figures made this invocation's: Claude Code's
    /// `total_cost_usd` is the session's, Codex's `turn.completed` usage the
    /// thread's. A figure smaller than before was not cumulative and stays.
    fn subtract_from(&self, preset: AgentPreset, t: &mut Transcript) {
        let less = |now: u64, before: u64| if now >= before { now - before } else { now };
        match preset {
            AgentPreset::Claude => {
                // Its tokens are the call's own; its cost is the session's when
                // it restored the session's cost state, the call's otherwise.
                // Which one: the call's own cost is about the earlier call's
                // priced at this call's tokens (cache reads at a tenth of an
                // input token, output at five); the nearer reading wins.
                if let (Some(now), Some(before)) = (t.cost_usd, self.cost_usd)
                    && now >= before
                {
                    let weight = |input: u64, cached: u64, output: u64| {
                        input.saturating_sub(cached) as f64
                            + cached as f64 / 10.0
                            + output as f64 * 5.0
                    };
                    let then = weight(
                        self.input_tokens,
                        self.cache_read_tokens,
                        self.output_tokens,
                    );
                    let own = if then > 0.0 {
                        before * weight(t.input_tokens, t.cache_read_tokens, t.output_tokens) / then
                    } else {
                        now
                    };
                    if (now - (before + own)).abs() < (now - own).abs() {
                        t.cost_usd = Some(now - before);
                    }
                }
            }
            AgentPreset::Codex => {
                t.input_tokens = less(t.input_tokens, self.input_tokens);
                t.cache_read_tokens = less(t.cache_read_tokens, self.cache_read_tokens);
                t.output_tokens = less(t.output_tokens, self.output_tokens);
            }
            AgentPreset::Gemini => {}
        }
    }
}

/// report.md's section on the agent CLIs' invocations, from the run's trace: per
/// invocation the step, agent, session, turns, tool calls, tokens and cost. Empty
/// when no preset ran.
pub fn report_section(run_dir: &Path) -> String {
    let Ok(text) = dandori_fs::read_to_string(run_dir.join("trace.jsonl")) else {
        return String::new();
    };
    let rows: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.get("event").and_then(Value::as_str) == Some(crate::events::LLM_CALL))
        .filter_map(|e| {
            let d = e.get("data")?;
            let agent = d.get("agent")?.as_str()?;
            let text = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("–").to_string();
            let num = |p: &str| d.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            Some(format!(
                "| {} | {agent} | {}{} | {} | {} | {} / {} | {} |",
                text("step_id"),
                text("session_id"),
                if d.get("resumed") == Some(&Value::Bool(true)) {
                    " (resumed)"
                } else {
                    ""
                },
                num("/num_turns"),
                num("/tool_calls"),
                num("/usage/prompt_tokens"),
                num("/usage/completion_tokens"),
                d.get("cost_usd")
                    .and_then(Value::as_f64)
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "–".to_string()),
            ))
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    format!(
        "\n## Agent usage\n\n| Step | Agent | Session | Turns | Tool calls | Tokens in / out | Cost |\n|---|---|---|---|---|---|---|\n{}\n",
        rows.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_settings_keep_the_users_and_set_ours() {
        let users = json!({"ui": {"theme": "dark"}, "security": {"auth": {"selectedType": "oauth-personal"}, "x": 1}});
        let ours = json!({"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}}});
        assert_eq!(
            merge_json(users, &ours),
            json!({"ui": {"theme": "dark"}, "security": {"auth": {"selectedType": "gemini-api-key"}, "x": 1, "folderTrust": {"enabled": false}}})
        );
        assert_eq!(merge_json(json!("not an object"), &ours), ours);
    }

    #[test]
    fn claude_stream_json_gives_session_tools_and_usage() {
        let mut t = Transcript::default();
        let wd = Path::new("/w");
        let lines = [
            r#"{"type":"system","subtype":"init","session_id":"s-1","model":"claude-sonnet-4-5"}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Edit","input":{"file_path":"/w/src/a.py"}}]}}"#,
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"pytest  -q"}}]}}"#,
            r#"{"type":"result","subtype":"success","is_error":false,"duration_ms":10,"num_turns":3,"session_id":"s-1","total_cost_usd":0.5,"usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":7},"modelUsage":{"claude-sonnet-4-5":{}}}"#,
        ];
        let tools: Vec<_> = lines
            .iter()
            .filter_map(|l| t.feed(AgentPreset::Claude, l, wd))
            .collect();
        assert_eq!(tools, ["Edit src/a.py", "Bash pytest -q"]);
        assert_eq!(t.session_id.as_deref(), Some("s-1"));
        assert_eq!((t.input_tokens, t.output_tokens), (15, 7));
        assert_eq!(t.cost_usd, Some(0.5));
        assert_eq!(t.num_turns, Some(3));
        assert!(t.finished && !t.is_error);
    }

    #[test]
    fn codex_json_gives_thread_commands_and_usage() {
        let mut t = Transcript::default();
        let wd = Path::new("/w");
        let lines = [
            r#"{"type":"thread.started","thread_id":"th-1"}"#,
            r#"{"type":"item.started","item":{"id":"i","type":"command_execution","command":"bash -lc 'pytest -q'","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"i","type":"command_execution","command":"bash -lc 'pytest -q'","exit_code":0}}"#,
            r#"{"type":"item.completed","item":{"id":"j","type":"file_change","changes":[{"path":"/w/a.py","kind":"update"}]}}"#,
            r#"{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":40,"output_tokens":9}}"#,
        ];
        let tools: Vec<_> = lines
            .iter()
            .filter_map(|l| t.feed(AgentPreset::Codex, l, wd))
            .collect();
        assert_eq!(tools, ["Bash pytest -q", "Edit a.py"]);
        assert_eq!(t.session_id.as_deref(), Some("th-1"));
        assert_eq!((t.input_tokens, t.output_tokens), (100, 9));
        assert_eq!(t.num_turns, Some(1));
    }

    #[test]
    fn codex_argv_points_its_provider_at_the_base_url_and_resumes() {
        let env = BTreeMap::from([(
            "OPENAI_BASE_URL".to_string(),
            "http://127.0.0.1:9/v1".to_string(),
        )]);
        let a = argv(
            AgentPreset::Codex,
            "codex",
            "-fix it",
            Some("gpt-5"),
            Some("th-1"),
            &env,
            true,
        );
        let joined = a.join(" ");
        assert!(joined.contains("--dangerously-bypass-approvals-and-sandbox"));
        // A plain `bash -c`: the login profile would reset PATH.
        assert!(joined.contains("allow_login_shell=false"));
        assert!(joined.contains("base_url=\"http://127.0.0.1:9/v1\""));
        assert_eq!(a[a.len() - 4..], ["resume", "th-1", "--", "-fix it"]);
    }

    #[test]
    fn a_resumed_sessions_cumulative_figures_count_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step.S01.agent-usage.json");
        // Claude Code: the first call cost $0.0396, the resumed one reports the
        // session's $0.0634; its tokens are the call's own.
        let first = Transcript {
            cost_usd: Some(0.0396),
            input_tokens: 25_000,
            ..Transcript::default()
        };
        Cumulative::of(&first).store(&path, "s-1").unwrap();
        let mut resumed = Transcript {
            cost_usd: Some(0.0634),
            input_tokens: 15_000,
            ..Transcript::default()
        };
        let prev = Cumulative::load(&path, "s-1").unwrap();
        prev.subtract_from(AgentPreset::Claude, &mut resumed);
        assert!((resumed.cost_usd.unwrap() - 0.0238).abs() < 1e-9);
        assert_eq!(resumed.input_tokens, 15_000);
        // A resumed call that reports its own cost (no session cost state
        // restored) keeps it: as much as the first for as many tokens.
        let mut own = Transcript {
            cost_usd: Some(0.0396),
            input_tokens: 25_000,
            ..Transcript::default()
        };
        prev.subtract_from(AgentPreset::Claude, &mut own);
        assert_eq!(own.cost_usd, Some(0.0396));
        // Another session's figures are not this one's.
        assert!(Cumulative::load(&path, "s-2").is_none());
        // Codex: the resumed thread reports 19 200 tokens after 12 000.
        let mut codex = Transcript {
            input_tokens: 19_200,
            cache_read_tokens: 16_000,
            output_tokens: 300,
            ..Transcript::default()
        };
        Cumulative {
            cost_usd: None,
            input_tokens: 12_000,
            cache_read_tokens: 10_000,
            output_tokens: 200,
        }
        .subtract_from(AgentPreset::Codex, &mut codex);
        assert_eq!(
            (
                codex.input_tokens,
                codex.cache_read_tokens,
                codex.output_tokens
            ),
            (7_200, 6_000, 100)
        );
    }

    #[test]
    fn a_codex_file_change_announced_started_and_completed_counts_once() {
        let mut t = Transcript::default();
        let w = Path::new("/w");
        for line in [
            r#"{"type":"item.started","item":{"id":"f","type":"file_change","changes":[{"path":"/w/calc.py","kind":"update"}],"status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"f","type":"file_change","changes":[{"path":"/w/calc.py","kind":"update"}],"status":"completed"}}"#,
            r#"{"type":"item.started","item":{"id":"c","type":"command_execution","command":"bash -c 'pytest -q'","status":"in_progress"}}"#,
            r#"{"type":"item.completed","item":{"id":"c","type":"command_execution","command":"bash -c 'pytest -q'","exit_code":0}}"#,
        ] {
            t.feed(AgentPreset::Codex, line, w);
        }
        assert_eq!(t.tool_calls, ["Edit calc.py", "Bash pytest -q"]);
    }

    #[test]
    fn a_session_of_an_earlier_dandori_process_is_one_from_before_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("step.S01.agent-session.json");
        assert!(store_session(&path, AgentPreset::Claude, "s-1").is_none());
        assert!(!used_before_a_restart(&path));
        assert_eq!(
            load_session(&path, AgentPreset::Claude).as_deref(),
            Some("s-1")
        );
        std::fs::write(&path, r#"{"agent":"claude","session_id":"s-1","pid":1}"#).unwrap();
        assert!(used_before_a_restart(&path));
        // Written by a dandori that recorded no process: before a restart too.
        std::fs::write(&path, r#"{"agent":"claude","session_id":"s-1"}"#).unwrap();
        assert!(used_before_a_restart(&path));
    }
}
