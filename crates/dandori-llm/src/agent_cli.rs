//! Agent CLIs as model providers (`kind: agent_cli`): Claude Code
//! (`claude -p --output-format json`), Codex CLI (`codex exec --json`), Gemini CLI
//! (`gemini --output-format json -p`) or a custom command. Users with a
//! subscription but no API key get the LLM planner.
//!
//! One call = one child process: the chat messages are rendered into one prompt
//! (passed as the last argument; the child's stdin is null), the command goes
//! through the command policy and the sandbox like every command dandori runs
//! (network on, a scratch directory as the working directory, the CLI's own state
//! directory writable), its environment is filtered by
//! `shell_environment_policy`, and what it prints is masked. The answer is taken
//! from the CLI's JSON envelope; a non-zero exit, a time-out, an envelope that is
//! not what the preset prints, or an error inside it are
//! [`LlmError::AgentCli`] with a reason code ([`codes`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_config::{
    AgentCliConfig, AgentCliOutput, AgentCliPreset, CommandPolicyConfig, Config, ProviderConfig,
    SandboxMode, ShellEnvironmentPolicy,
};
use dandori_exec::{CommandPolicy, CommandSpec, Origin, Sandbox, SandboxOptions, SandboxPolicy};
use serde_json::Value;

use crate::error::LlmError;
use crate::types::{ChatRequest, Role};
use crate::wire::Parsed;

/// Reason codes of agent-CLI failures.
pub mod codes {
    /// The CLI exited with a non-zero status (or was killed by a signal).
    pub const AGENT_CLI_EXIT: &str = "AGENT_CLI_EXIT";
    /// The CLI did not finish within `request_timeout_secs`.
    pub const AGENT_CLI_TIMEOUT: &str = "AGENT_CLI_TIMEOUT";
    /// stdout is not the preset's envelope (not JSON, no answer in it).
    pub const AGENT_CLI_BAD_OUTPUT: &str = "AGENT_CLI_BAD_OUTPUT";
    /// The envelope reports an error (`is_error`, `turn.failed`, `error`).
    pub const AGENT_CLI_ERROR: &str = "AGENT_CLI_ERROR";
    /// Not run: the program is missing, the command policy or the sandbox refused
    /// it, the prompt is too large for an argument, or the request needs tools.
    pub const AGENT_CLI_REFUSED: &str = "AGENT_CLI_REFUSED";
}

/// Largest prompt passed as one argument (Linux refuses single arguments over
/// 128 KiB).
pub const MAX_PROMPT_BYTES: usize = 120 * 1024;
/// Largest stdout read.
const MAX_OUTPUT_BYTES: usize = 8 << 20;

/// What an agent CLI runs with: the sandbox, the environment and the command
/// policy of the loaded configuration.
#[derive(Debug, Clone, Default)]
pub struct AgentRuntime {
    pub sandbox_mode: SandboxMode,
    pub env_policy: ShellEnvironmentPolicy,
    pub command_policy: CommandPolicyConfig,
    /// The parent environment, filtered by `env_policy` for the child.
    pub parent_env: BTreeMap<String, String>,
    /// Variables holding model API keys: never passed on.
    pub provider_keys: Vec<String>,
}

impl AgentRuntime {
    pub fn from_config(config: &Config, env: &BTreeMap<String, String>) -> AgentRuntime {
        AgentRuntime {
            sandbox_mode: config.sandbox.mode,
            env_policy: config.shell_environment_policy.clone(),
            command_policy: config.planning.environment_setup.security.clone(),
            parent_env: env.clone(),
            provider_keys: config
                .llm
                .providers
                .iter()
                .filter_map(|p| p.api_key_env.clone())
                .collect(),
        }
    }
}

/// `agent-cli:<preset>`, the "URL" of an agent CLI provider in messages.
pub fn endpoint(cfg: &ProviderConfig) -> String {
    let preset = cfg.agent_cli.as_ref().map(|a| a.preset).unwrap_or_default();
    format!("agent-cli:{}", preset.as_str())
}

/// The checked `agent_cli` section of a provider.
pub fn settings(cfg: &ProviderConfig) -> Result<AgentCliConfig, String> {
    let settings = cfg.agent_cli.clone().unwrap_or(AgentCliConfig {
        preset: AgentCliPreset::Claude,
        command: Vec::new(),
        extra_args: Vec::new(),
        output: None,
    });
    if settings.preset == AgentCliPreset::Custom && settings.command.is_empty() {
        return Err("agent_cli.preset custom needs agent_cli.command (the argv)".to_string());
    }
    if settings.preset != AgentCliPreset::Custom && settings.command.len() > 1 {
        return Err(format!(
            "agent_cli.command of the `{}` preset may only name the program (one word); use preset custom for a whole command",
            settings.preset.as_str()
        ));
    }
    if settings.command.iter().any(|w| w.is_empty()) {
        return Err("agent_cli.command has an empty word".to_string());
    }
    Ok(settings)
}

fn output_format(settings: &AgentCliConfig) -> AgentCliOutput {
    settings.output.unwrap_or(match settings.preset {
        AgentCliPreset::Claude => AgentCliOutput::ClaudeJson,
        AgentCliPreset::Codex => AgentCliOutput::CodexJsonl,
        AgentCliPreset::Gemini => AgentCliOutput::GeminiJson,
        AgentCliPreset::Custom => AgentCliOutput::Text,
    })
}

/// The argv for one prompt.
pub fn argv(settings: &AgentCliConfig, model: &str, prompt: &str) -> Vec<String> {
    let program = |default: &str| {
        settings
            .command
            .first()
            .cloned()
            .unwrap_or_else(|| default.to_string())
    };
    let model_args = |flag: &str| -> Vec<String> {
        if model.trim().is_empty() {
            Vec::new()
        } else {
            vec![flag.to_string(), model.to_string()]
        }
    };
    let mut out: Vec<String> = Vec::new();
    match settings.preset {
        AgentCliPreset::Claude => {
            out.push(program("claude"));
            out.extend(["-p", "--output-format", "json"].map(String::from));
            out.extend(model_args("--model"));
            out.extend(settings.extra_args.iter().cloned());
            out.push(prompt.to_string());
        }
        AgentCliPreset::Codex => {
            out.push(program("codex"));
            out.extend(["exec", "--json", "--skip-git-repo-check"].map(String::from));
            out.extend(model_args("--model"));
            out.extend(settings.extra_args.iter().cloned());
            out.push(prompt.to_string());
        }
        AgentCliPreset::Gemini => {
            out.push(program("gemini"));
            out.extend(["--output-format", "json"].map(String::from));
            out.extend(model_args("--model"));
            out.extend(settings.extra_args.iter().cloned());
            out.push("-p".to_string());
            out.push(prompt.to_string());
        }
        AgentCliPreset::Custom => {
            let mut placed = false;
            for (i, word) in settings.command.iter().enumerate() {
                if word.contains("{prompt}") {
                    placed = true;
                    out.push(word.replace("{prompt}", prompt));
                } else {
                    out.push(word.replace("{model}", model));
                }
                if i == 0 {
                    out.extend(settings.extra_args.iter().cloned());
                }
            }
            if !placed {
                out.push(prompt.to_string());
            }
        }
    }
    out
}

/// The chat messages as one prompt: the system text first, then the turns, and
/// the answer format when a schema is asked for (agent CLIs have no JSON mode).
pub fn render_prompt(request: &ChatRequest) -> String {
    let mut out = String::new();
    let several_turns = request
        .messages
        .iter()
        .filter(|m| m.role != Role::System)
        .count()
        > 1;
    for m in &request.messages {
        if !out.is_empty() {
            out.push_str("\n\n");
        }
        match (m.role, several_turns) {
            (Role::System, _) | (Role::User, false) => {}
            (Role::User, true) => out.push_str("[user]\n"),
            (Role::Assistant, _) => out.push_str("[your previous answer]\n"),
            (Role::Tool, _) => out.push_str("[tool result]\n"),
        }
        out.push_str(m.content.trim_end());
    }
    if let Some(schema) = &request.response_schema {
        let compact = schema.schema.to_string();
        out.push_str("\n\nAnswer with exactly one JSON object and nothing else: no prose, no code fence, no tool use.");
        if !out.contains(&compact) && !out.contains(&format!("\"{}\"", schema.name)) {
            out.push_str(&format!(
                " It must follow the JSON schema `{}`: {compact}",
                schema.name
            ));
        }
    }
    out
}

/// Runs the CLI once for `request` (blocking; the client calls it on a blocking
/// thread).
pub fn call(
    cfg: &ProviderConfig,
    runtime: &AgentRuntime,
    request: &ChatRequest,
) -> Result<Parsed, LlmError> {
    let fail = |code: &'static str, message: String, transient: bool| LlmError::AgentCli {
        provider: cfg.name.clone(),
        code,
        message,
        transient,
    };
    let refused = |message: String| fail(codes::AGENT_CLI_REFUSED, message, false);
    if !request.tools.is_empty() {
        return Err(refused(
            "agent CLI providers answer prompts only; calls with tools (the LLM executor) need an HTTP provider".to_string(),
        ));
    }
    let settings = settings(cfg).map_err(&refused)?;
    let prompt = render_prompt(request);
    if prompt.len() > MAX_PROMPT_BYTES {
        return Err(refused(format!(
            "the prompt is {} bytes, more than the {MAX_PROMPT_BYTES} an argument may hold",
            prompt.len()
        )));
    }
    let argv = argv(&settings, &cfg.model, &prompt);
    // The policy sees the command without the prompt (data, not a command); the
    // program the user configured is allowed on top of the allowlist.
    let shown: Vec<String> = argv
        .iter()
        .map(|w| {
            if w.contains(&prompt) {
                "PROMPT".to_string()
            } else {
                w.clone()
            }
        })
        .collect();
    let line = shell_join(&shown);
    let mut policy_cfg = runtime.command_policy.clone();
    if let Some(program) = argv.first() {
        let base = Path::new(program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| program.clone());
        policy_cfg.allowed_commands.push(base);
        policy_cfg.allowed_commands.push(program.clone());
    }
    let policy = CommandPolicy::new(&policy_cfg).map_err(|e| refused(e.to_string()))?;
    policy
        .check(&line)
        .map_err(|v| refused(format!("`{line}` refused by the command policy: {v}")))?;

    let child = dandori_exec::child_env::filter(
        &runtime.parent_env,
        &runtime.env_policy,
        &runtime.provider_keys,
    );
    // Said before anything runs, in words the user acts on: the sandbox would
    // only report an exit status 127.
    if let Some(program) = argv.first()
        && !program.contains('/')
        && !on_path(program, child.env.get("PATH").map(String::as_str))
    {
        return Err(refused(format!(
            "`{program}` is not on PATH: install the {} CLI, or name its program in llm.providers[].agent_cli.command",
            settings.preset.as_str()
        )));
    }
    let scratch = tempfile::Builder::new()
        .prefix("dandori-agent-cli-")
        .tempdir()
        .map_err(|e| refused(format!("creating a scratch directory: {e}")))?;
    let home = child.env.get("HOME").map(PathBuf::from);
    let sandbox = Sandbox::detect(&SandboxOptions::new(runtime.sandbox_mode).env(&child.env));
    // The CLI's credential files are copied into the sandbox's fresh home; its
    // sessions there are thrown away with it (a planning call resumes nothing).
    let mut sandbox_policy = SandboxPolicy::worktree(scratch.path(), &[]).with_network(true);
    if let Some(h) = &home {
        sandbox_policy = sandbox_policy.with_agent_credentials(h);
    }
    let masker = dandori_trace::Masker::new(true, Vec::new())
        .with_literal_secrets(child.secret_values.iter().cloned());
    let limit = Duration::from_secs(cfg.request_timeout_secs.max(1));
    let mut spec = CommandSpec::program(argv[0].clone(), argv[1..].to_vec(), scratch.path())
        .env(child.env.clone())
        .timeout(limit)
        .masker(masker)
        .sandbox(sandbox, sandbox_policy, Origin::Issued);
    spec.tail_bytes = MAX_OUTPUT_BYTES;
    let outcome = dandori_exec::run_command(&spec).map_err(|e| refused(e.to_string()))?;
    if outcome.timed_out {
        return Err(fail(
            codes::AGENT_CLI_TIMEOUT,
            format!("`{line}` did not finish within {}s", limit.as_secs()),
            true,
        ));
    }
    let stdout = outcome.stdout_tail.as_str();
    if !outcome.success() {
        // An envelope on stdout says more than the exit status (Claude Code and
        // Gemini CLI print their error there).
        let detail = envelope_error(output_format(&settings), stdout)
            .unwrap_or_else(|| tail(&outcome.stderr_tail, 400));
        let status = match (outcome.exit_code, outcome.signal) {
            (Some(c), _) => format!("exit status {c}"),
            (None, Some(s)) => format!("signal {s}"),
            (None, None) => "no exit status".to_string(),
        };
        // A CLI that is not signed in says so the same way every time: another
        // attempt only doubles the wait.
        let lower = detail.to_lowercase();
        let signed_out = [
            "not logged in",
            "/login",
            "invalid api key",
            "please log in",
        ]
        .iter()
        .any(|w| lower.contains(w));
        return Err(fail(
            codes::AGENT_CLI_EXIT,
            format!("`{line}` failed ({status}): {detail}"),
            !signed_out,
        ));
    }
    parse_output(output_format(&settings), stdout).map_err(|(code, message)| {
        fail(
            code,
            format!("`{line}`: {message}"),
            code != codes::AGENT_CLI_REFUSED,
        )
    })
}

/// Whether `program` is an executable file in one of `path`'s directories.
fn on_path(program: &str, path: Option<&str>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path.unwrap_or_default()).any(|dir| {
        std::fs::metadata(dir.join(program))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn tail(text: &str, max: usize) -> String {
    let t = text.trim();
    if t.is_empty() {
        return "nothing on stderr".to_string();
    }
    let start = t.len().saturating_sub(max);
    let start = (start..=t.len())
        .find(|i| t.is_char_boundary(*i))
        .unwrap_or(t.len());
    t[start..].to_string()
}

/// The error an envelope reports, if stdout holds one.
fn envelope_error(format: AgentCliOutput, stdout: &str) -> Option<String> {
    match parse_output(format, stdout) {
        Err((code, message)) if code == codes::AGENT_CLI_ERROR => Some(message),
        _ => None,
    }
}

type OutputError = (&'static str, String);

/// The answer in stdout, per format.
pub fn parse_output(format: AgentCliOutput, stdout: &str) -> Result<Parsed, OutputError> {
    let bad = |m: String| (codes::AGENT_CLI_BAD_OUTPUT, m);
    let answer = |text: String, usage: Option<(u64, u64)>, model: Option<String>| Parsed {
        text,
        tool_calls: Vec::new(),
        usage,
        finish_reason: Some("stop".to_string()),
        model,
    };
    match format {
        AgentCliOutput::Text => {
            let text = stdout.trim();
            if text.is_empty() {
                return Err(bad("printed nothing on stdout".to_string()));
            }
            Ok(answer(text.to_string(), None, None))
        }
        AgentCliOutput::ClaudeJson => {
            let v = last_json_object(stdout, |v| {
                v.get("type").is_some() || v.get("result").is_some()
            })
            .ok_or_else(|| {
                bad(format!(
                    "stdout is not Claude Code's JSON result: `{}`",
                    preview(stdout)
                ))
            })?;
            if v.get("is_error").and_then(Value::as_bool) == Some(true)
                || v.get("subtype")
                    .and_then(Value::as_str)
                    .is_some_and(|s| s.starts_with("error"))
            {
                let what = v
                    .get("result")
                    .and_then(Value::as_str)
                    .or_else(|| v.get("subtype").and_then(Value::as_str))
                    .unwrap_or("is_error");
                return Err((
                    codes::AGENT_CLI_ERROR,
                    format!("Claude Code reported an error: {}", preview(what)),
                ));
            }
            let text = v
                .get("result")
                .and_then(Value::as_str)
                .ok_or_else(|| bad("Claude Code's JSON result has no `result` text".to_string()))?;
            let usage = v.get("usage").map(|u| {
                let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                (
                    n("input_tokens")
                        + n("cache_creation_input_tokens")
                        + n("cache_read_input_tokens"),
                    n("output_tokens"),
                )
            });
            let model = v
                .get("modelUsage")
                .and_then(Value::as_object)
                .and_then(|m| m.keys().next().cloned());
            Ok(answer(text.to_string(), usage, model))
        }
        AgentCliOutput::CodexJsonl => {
            let mut text: Option<String> = None;
            let mut usage: Option<(u64, u64)> = None;
            let mut any = false;
            for line in stdout.lines().map(str::trim).filter(|l| l.starts_with('{')) {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                any = true;
                match v.get("type").and_then(Value::as_str).unwrap_or("") {
                    "item.completed" => {
                        let item = v.get("item").unwrap_or(&Value::Null);
                        let kind = item.get("type").or_else(|| item.get("item_type"));
                        if kind.and_then(Value::as_str) == Some("agent_message")
                            && let Some(t) = item.get("text").and_then(Value::as_str)
                        {
                            text = Some(t.to_string());
                        }
                    }
                    "turn.completed" => {
                        if let Some(u) = v.get("usage") {
                            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                            usage = Some((n("input_tokens"), n("output_tokens")));
                        }
                    }
                    "turn.failed" | "error" => {
                        let message = v
                            .pointer("/error/message")
                            .or_else(|| v.get("message"))
                            .and_then(Value::as_str)
                            .unwrap_or("unknown error");
                        return Err((
                            codes::AGENT_CLI_ERROR,
                            format!("Codex reported an error: {}", preview(message)),
                        ));
                    }
                    _ => {}
                }
            }
            if !any {
                return Err(bad(format!(
                    "stdout has no Codex JSON events: `{}`",
                    preview(stdout)
                )));
            }
            let text =
                text.ok_or_else(|| bad("Codex's events have no agent_message".to_string()))?;
            Ok(answer(text, usage, None))
        }
        AgentCliOutput::GeminiJson => {
            let v = last_json_object(stdout, |v| {
                v.get("response").is_some() || v.get("error").is_some()
            })
            .ok_or_else(|| {
                bad(format!(
                    "stdout is not Gemini CLI's JSON output: `{}`",
                    preview(stdout)
                ))
            })?;
            if let Some(e) = v.get("error").filter(|e| !e.is_null()) {
                let message = e
                    .get("message")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .unwrap_or_else(|| e.to_string());
                return Err((
                    codes::AGENT_CLI_ERROR,
                    format!("Gemini CLI reported an error: {}", preview(&message)),
                ));
            }
            let text = v.get("response").and_then(Value::as_str).ok_or_else(|| {
                bad("Gemini CLI's JSON output has no `response` text".to_string())
            })?;
            let mut usage = None;
            let mut model = None;
            if let Some(models) = v.pointer("/stats/models").and_then(Value::as_object) {
                let (mut p, mut c) = (0, 0);
                for (name, m) in models {
                    model.get_or_insert_with(|| name.clone());
                    p += m
                        .pointer("/tokens/prompt")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                    c += m
                        .pointer("/tokens/candidates")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                }
                usage = Some((p, c));
            }
            Ok(answer(text.to_string(), usage, model))
        }
    }
}

/// The whole of stdout as one JSON object, else its last line that is one and
/// satisfies `wanted` (CLIs may print notices before their result).
fn last_json_object(stdout: &str, wanted: impl Fn(&Value) -> bool) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(stdout.trim())
        && v.is_object()
        && wanted(&v)
    {
        return Some(v);
    }
    stdout
        .lines()
        .rev()
        .map(str::trim)
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v.is_object() && wanted(v))
}

fn preview(text: &str) -> String {
    let t = text.trim();
    let mut out: String = t.chars().take(200).collect();
    if out.len() < t.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes() {
        let p = parse_output(
            AgentCliOutput::ClaudeJson,
            r#"{"type":"result","subtype":"success","is_error":false,"result":"{\"a\":1}","usage":{"input_tokens":10,"cache_read_input_tokens":5,"output_tokens":3}}"#,
        )
        .unwrap();
        assert_eq!(p.text, "{\"a\":1}");
        assert_eq!(p.usage, Some((15, 3)));
        let e = parse_output(
            AgentCliOutput::ClaudeJson,
            r#"{"type":"result","subtype":"error_max_turns","is_error":true}"#,
        )
        .unwrap_err();
        assert_eq!(e.0, codes::AGENT_CLI_ERROR);
        let p = parse_output(
            AgentCliOutput::CodexJsonl,
            "{\"type\":\"thread.started\",\"thread_id\":\"t\"}\n{\"type\":\"item.completed\",\"item\":{\"id\":\"i\",\"type\":\"agent_message\",\"text\":\"hi\"}}\n{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":7,\"output_tokens\":2}}\n",
        )
        .unwrap();
        assert_eq!((p.text.as_str(), p.usage), ("hi", Some((7, 2))));
        let e = parse_output(
            AgentCliOutput::CodexJsonl,
            "{\"type\":\"turn.failed\",\"error\":{\"message\":\"quota\"}}",
        )
        .unwrap_err();
        assert_eq!(e.0, codes::AGENT_CLI_ERROR);
        let p = parse_output(
            AgentCliOutput::GeminiJson,
            r#"{"response":"ok","stats":{"models":{"gemini-2.5-pro":{"tokens":{"prompt":4,"candidates":1}}}}}"#,
        )
        .unwrap();
        assert_eq!(
            (p.text.as_str(), p.usage, p.model.as_deref()),
            ("ok", Some((4, 1)), Some("gemini-2.5-pro"))
        );
        let e = parse_output(
            AgentCliOutput::GeminiJson,
            "Loaded cached credentials.\nnot json",
        )
        .unwrap_err();
        assert_eq!(e.0, codes::AGENT_CLI_BAD_OUTPUT);
    }

    #[test]
    fn custom_argv_places_prompt_and_model() {
        let s = AgentCliConfig {
            preset: AgentCliPreset::Custom,
            command: vec![
                "agent".into(),
                "--model={model}".into(),
                "--ask".into(),
                "{prompt}".into(),
            ],
            extra_args: vec!["-q".into()],
            output: None,
        };
        assert_eq!(
            argv(&s, "m1", "P"),
            ["agent", "-q", "--model=m1", "--ask", "P"]
        );
    }
}
