//! The built-in LLM tool loop (seed 000 §4–5, §8.1.2–8.1.3): the step prompt and
//! the tool specs go to the model; its tool calls run through the tool registry of
//! the step's worktree (file, search, patch, command and git tools plus the tools of
//! the configured MCP servers, behind the tool policy, approvals and the sandbox);
//! results go back; the loop ends on the completion JSON.
//!
//! Models without native tool calls answer with the seed 000 JSON formats instead:
//! `{"phase": "execution", "function_call": {"name", "arguments"}}` for an action,
//! `{"phase": "reflection", …}` and `{"phase": "completion", …}`.
//!
//! Guardrails inside the loop: `max_iterations` model turns; the same call with the
//! same result three times is a loop (LOOP_DETECTED, never success);
//! `max_consecutive_failures` failed actions in a row stop the step; a reflection is
//! asked of the model after every failed action and every `trigger_interval`
//! actions, and its plan revisions are capped by `max_revisions`; the token budget
//! of the client stops the loop and keeps what the worktree holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use dandori_config::{
    CommandPolicyConfig, Config, McpServerConfig, ReflectionConfig, SecurityConfig,
};
use dandori_llm::{ChatRequest, Client, LlmError, Message, Phase};
use dandori_tools::{McpHub, McpStartOptions, ToolPolicy, ToolRegistry};
use serde_json::{Value, json};

use super::{ExecOutcome, ExecRequest, Executor, StepExecution, TokenUsage};
use crate::error::RunnerError;
use crate::reason;
use crate::reflection::{self, ReflectionStatus, Trigger};

/// The same call with the same result this many times is a loop.
const LOOP_REPEATS: u32 = 3;
/// Tool output longer than this is cut before it goes back to the model.
const MAX_RESULT_CHARS: usize = 12_000;

pub const SYSTEM_PROMPT: &str = "You are the implementer of one step of a plan, working in a git worktree through tools.\n\
## Execution rules\n\
1. Follow the plan in order.\n\
2. Evaluate the result after each action.\n\
3. Report results that differ from what you expected.\n\
4. Revise the plan when needed.\n\
## Reflection rules\n\
After each action compare the result with what you expected, identify problems, check consistency with the plan, and propose a revision when needed; always reflect after a failed tool call, an unexpected result, and every few actions.\n\
## Format\n\
Use the tools. If you cannot call tools natively, answer with exactly one JSON object per turn:\n\
{\"phase\": \"execution\", \"current_task\": \"<step id>\", \"function_call\": {\"name\": \"<tool>\", \"arguments\": {}}, \"comment\": \"...\"}\n\
When the step is finished, answer with:\n\
{\"phase\": \"completion\", \"summary\": {\"goal_achieved\": true, \"tasks_completed\": 1, \"tasks_failed\": 0, \"key_outcomes\": [], \"lessons_learned\": []}, \"done\": true, \"comment\": \"...\"}\n\
Never commit and never use gh: dandori commits the step after checking it.";

/// [`SYSTEM_PROMPT`] with the step's seed 001 §10.3 `suggested_persona` as the
/// role and its `suggested_tools` (those the registry has) named.
fn system_prompt(persona: Option<&str>, tools: &[&str]) -> String {
    let mut p = String::new();
    if let Some(persona) = persona.map(str::trim).filter(|p| !p.is_empty()) {
        p.push_str(&format!(
            "## Persona\nFor this step you work as: {persona}\n"
        ));
    }
    p.push_str(SYSTEM_PROMPT);
    if !tools.is_empty() {
        p.push_str(&format!(
            "\n## Suggested tools\nThe plan suggests these tools for this step: {}. Prefer them; the other tools stay available.",
            tools.join(", ")
        ));
    }
    p
}

#[derive(Debug, Clone)]
pub struct LlmLoopLimits {
    pub max_iterations: u32,
    pub action_timeout: Duration,
    pub reflection: ReflectionConfig,
    pub max_revisions: u32,
    pub max_consecutive_failures: u32,
}

impl LlmLoopLimits {
    pub fn from_config(config: &Config) -> Self {
        let p = &config.planning;
        LlmLoopLimits {
            max_iterations: 40,
            action_timeout: Duration::from_secs(p.execution.action_timeout.max(1)),
            reflection: p.reflection.clone(),
            max_revisions: p.revision.max_revisions,
            max_consecutive_failures: if p.execution.early_termination.enabled {
                p.execution
                    .early_termination
                    .max_consecutive_failures
                    .max(1)
            } else {
                u32::MAX
            },
        }
    }
}

pub struct LlmExecutor {
    client: Client,
    runtime: Arc<tokio::runtime::Runtime>,
    security: SecurityConfig,
    /// Seed 002 §11 command policy (`planning.environment_setup.security`), applied
    /// by `run_command`.
    command_policy: CommandPolicyConfig,
    mcp: Vec<McpServerConfig>,
    approve: bool,
    limits: LlmLoopLimits,
    /// Tokens per reflection call (`llm.budgets.reflection`, seed 000 §13.4).
    reflection_budget: u64,
    /// The conversation resent with each execution call, compressed past it
    /// (`llm.budgets.conversation`, seed 000 §11.3.2).
    conversation_budget: u64,
    /// The run's sandbox (detected once); `None`: the registry detects its own.
    sandbox: Option<dandori_tools::Sandbox>,
}

impl std::fmt::Debug for LlmExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmExecutor")
            .field("client", &self.client)
            .field("limits", &self.limits)
            .finish()
    }
}

impl LlmExecutor {
    /// The provider named by `llm.default_provider`; its key is looked up in `env`.
    pub fn from_config(
        config: &Config,
        env: &BTreeMap<String, String>,
        approve: bool,
    ) -> Result<Self, RunnerError> {
        let name = config.llm.default_provider.as_deref().ok_or_else(|| {
            RunnerError::Executor("--executor llm needs llm.default_provider in config".to_string())
        })?;
        let provider = config
            .llm
            .providers
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                RunnerError::Executor(format!(
                    "llm.default_provider {name:?} is not among llm.providers"
                ))
            })?;
        let client = Client::from_config(provider, &config.llm.budgets, &|k: &str| {
            env.get(k).cloned()
        })
        .map_err(|e| RunnerError::Executor(e.to_string()))?
        .with_agent_runtime(dandori_llm::AgentRuntime::from_config(config, env));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("dandori-llm")
            .enable_all()
            .build()
            .map_err(|e| RunnerError::Executor(format!("starting the async runtime: {e}")))?;
        Ok(LlmExecutor {
            client,
            runtime: Arc::new(runtime),
            security: config.planning.security.clone(),
            command_policy: config.planning.environment_setup.security.clone(),
            mcp: config.mcp.servers.clone(),
            approve,
            limits: LlmLoopLimits::from_config(config),
            reflection_budget: config.llm.budgets.reflection,
            conversation_budget: config.llm.budgets.conversation,
            sandbox: None,
        })
    }

    /// Runs `run_command` and the MCP servers inside this sandbox.
    pub fn with_sandbox(mut self, sandbox: dandori_tools::Sandbox) -> Self {
        self.sandbox = Some(sandbox);
        self
    }

    pub fn with_limits(mut self, limits: LlmLoopLimits) -> Self {
        self.limits = limits;
        self
    }

    fn registry(&self, req: &ExecRequest<'_>) -> Result<ToolRegistry, RunnerError> {
        let tools_err = |e: dandori_tools::ToolsError| RunnerError::Executor(e.to_string());
        let mut commands = dandori_tools::tool_command_policy(&self.command_policy)
            .map_err(|e| RunnerError::Executor(format!("command policy: {e}")))?
            .with_root(req.workdir);
        if let Some(home) = req.env.get("HOME") {
            commands = commands.with_home(std::path::Path::new(home));
        }
        let mut b = ToolRegistry::builder(req.workdir)
            .policy(ToolPolicy::from_config(&self.security, true).map_err(tools_err)?)
            .command_policy(Arc::new(commands))
            .approver(Arc::from(dandori_tools::session_approver(self.approve)))
            .env(req.env.clone())
            .command_timeout(self.limits.action_timeout);
        if let Some(s) = &self.sandbox {
            b = b.sandbox(s.clone());
        }
        if !self.mcp.is_empty() {
            let mut options = McpStartOptions::new(req.workdir, req.env.clone());
            options.sandbox = self.sandbox.clone();
            let hub = McpHub::start(&self.mcp, &options).map_err(tools_err)?;
            b = b.mcp(Arc::new(hub));
        }
        b.build().map_err(tools_err)
    }

    /// One model call, recorded in `st.calls` as an `LLM_CALL` (timing, model,
    /// usage; never the messages).
    fn chat(
        &self,
        st: &mut LoopState,
        step_id: &str,
        purpose: &str,
        request: &ChatRequest,
    ) -> Result<dandori_llm::ChatResponse, LlmError> {
        let started_at = dandori_trace::now_rfc3339();
        let clock = std::time::Instant::now();
        let out = self.runtime.block_on(self.client.chat(request));
        let config = self.client.config();
        // The client's own record of the call, whatever its outcome: attempts,
        // retries, first token, and the usage a failed call still spent
        // (reported, else estimated).
        let mut data = match self
            .client
            .take_calls()
            .pop()
            .and_then(|r| serde_json::to_value(r).ok())
        {
            Some(record @ Value::Object(_)) => record,
            _ => json!({}),
        };
        for (key, value) in [
            ("step_id", json!(step_id)),
            ("purpose", json!(purpose)),
            ("provider", json!(config.name)),
            ("provider_kind", json!(config.kind)),
            ("request_model", json!(config.model)),
            ("started_at", json!(started_at)),
            ("duration_ms", json!(clock.elapsed().as_millis() as u64)),
            ("ok", json!(out.is_ok())),
        ] {
            data[key] = value;
        }
        match &out {
            Ok(r) => {
                data["model"] = json!(r.model);
                data["usage"] = json!({"prompt_tokens": r.usage.prompt_tokens,
                    "completion_tokens": r.usage.completion_tokens});
                data["attempts"] = json!(r.attempts);
                data["finish_reason"] = json!(r.finish_reason);
            }
            Err(e) => {
                data["model"] = json!(config.model);
                data["error"] = json!(cut(&e.to_string()));
            }
        }
        st.calls.push((crate::events::LLM_CALL, data));
        out
    }
}

/// What one model turn asked for.
enum Turn {
    Calls(Vec<(Option<String>, String, Value, bool)>),
    Completion(Value),
    Reflection(Value),
    Text,
}

fn classify(resp: &dandori_llm::ChatResponse) -> Turn {
    if !resp.tool_calls.is_empty() {
        return Turn::Calls(
            resp.tool_calls
                .iter()
                .map(|c| {
                    let (args, ok) = match serde_json::from_str::<Value>(&c.arguments) {
                        Ok(v) => (v, true),
                        Err(_) if c.arguments.trim().is_empty() => (json!({}), true),
                        Err(_) => (Value::String(c.arguments.clone()), false),
                    };
                    (Some(c.id.clone()), c.name.clone(), args, ok)
                })
                .collect(),
        );
    }
    let Ok(v) = dandori_llm::structured::parse_lenient(&resp.text) else {
        return Turn::Text;
    };
    match v.get("phase").and_then(Value::as_str) {
        Some("execution") => match v.get("function_call") {
            Some(fc) => {
                let name = fc
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let args = fc.get("arguments").cloned().unwrap_or(json!({}));
                let args = match args {
                    Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                    other => other,
                };
                Turn::Calls(vec![(None, name, args, true)])
            }
            None => Turn::Text,
        },
        Some("completion") => Turn::Completion(v),
        Some("reflection") => Turn::Reflection(v),
        _ => Turn::Text,
    }
}

fn cut(s: &str) -> String {
    if s.chars().count() <= MAX_RESULT_CHARS {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX_RESULT_CHARS).collect();
    format!("{head}\n… [output cut at {MAX_RESULT_CHARS} characters]")
}

/// One tool call and its result, as a reflection sees it.
struct Action<'a> {
    name: &'a str,
    arguments: &'a str,
    result: &'a str,
    is_error: bool,
}

struct LoopState {
    tokens: TokenUsage,
    actions: u32,
    reflections: Vec<Value>,
    revisions: u32,
    consecutive_failures: u32,
    seen: HashMap<String, u32>,
    calls: Vec<(&'static str, Value)>,
}

impl Executor for LlmExecutor {
    fn name(&self) -> &'static str {
        "llm"
    }

    /// The tool loop's file tools confine paths by resolving them in the
    /// runner's own mount namespace, where a copy-on-write workspace is not
    /// mounted (its path reaches it through `/proc/<holder>/root`).
    fn works_in_overlay(&self) -> bool {
        false
    }

    fn execute(&self, req: &ExecRequest<'_>) -> Result<StepExecution, RunnerError> {
        let registry = self.registry(req)?;
        let sandbox = serde_json::to_value(registry.sandbox_status()).unwrap_or(Value::Null);
        let mut specs: Vec<dandori_llm::ToolSpec> = registry
            .specs()
            .into_iter()
            .map(|s| dandori_llm::ToolSpec {
                name: s.name,
                description: s.description,
                input_schema: s.input_schema,
            })
            .collect();
        // Seed 001 §10.3: the step's suggested tools come first (stable, so the
        // rest keep their order); every tool stays available.
        specs.sort_by_key(|s| !req.suggested_tools.contains(&s.name));
        let suggested: Vec<&str> = req
            .suggested_tools
            .iter()
            .filter(|t| specs.iter().any(|s| &&s.name == t))
            .map(String::as_str)
            .collect();
        let mut st = LoopState {
            tokens: TokenUsage::default(),
            actions: 0,
            reflections: Vec::new(),
            revisions: 0,
            consecutive_failures: 0,
            seen: HashMap::new(),
            calls: Vec::new(),
        };
        let tooling = json!({"sandbox": sandbox,
            "tools": specs.iter().map(|s| s.name.clone()).collect::<Vec<_>>()});
        let mut messages = vec![
            Message::system(
                req.masker
                    .mask_str(&system_prompt(req.suggested_persona, &suggested)),
            ),
            Message::user(req.masker.mask_str(req.prompt)),
        ];
        let mut nudged = false;
        let finish = |st: LoopState, outcome: ExecOutcome, summary: String| StepExecution {
            outcome,
            tokens: st.tokens,
            actions: st.actions,
            reflections: st.reflections,
            summary,
            tooling: Some(tooling.clone()),
            calls: st.calls,
        };
        for iteration in 1..=self.limits.max_iterations {
            let compression =
                super::conversation::compress(&mut messages, self.conversation_budget);
            let mut request = ChatRequest::new(Phase::Execution, messages.clone());
            request.tools = specs.clone();
            let resp = self.chat(&mut st, req.step_id, "execution", &request);
            if let Some(c) = &compression
                && let Some((_, data)) = st.calls.last_mut()
            {
                data["conversation_compressed"] = json!({
                    "before_tokens": c.before_tokens,
                    "after_tokens": c.after_tokens,
                    "turns_summarised": c.turns_summarised,
                    "budget": self.conversation_budget,
                });
            }
            let resp = match resp {
                Ok(r) => r,
                Err(e) => {
                    return Ok(finish(
                        st,
                        model_failure(&e),
                        format!("model error at turn {iteration}"),
                    ));
                }
            };
            st.tokens.add(TokenUsage {
                prompt_tokens: resp.usage.prompt_tokens,
                completion_tokens: resp.usage.completion_tokens,
            });
            match classify(&resp) {
                Turn::Completion(v) => {
                    let human = v.get("status").and_then(Value::as_str)
                        == Some("requires_human_intervention");
                    let achieved = v
                        .pointer("/summary/goal_achieved")
                        .and_then(Value::as_bool)
                        .unwrap_or_else(|| v.get("done").and_then(Value::as_bool).unwrap_or(false));
                    let comment = v
                        .get("comment")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let outcome = if human {
                        ExecOutcome::NeedsInput {
                            reason_code: reason::REQUIRES_HUMAN_INTERVENTION,
                            message: format!("the model asks for a human: {comment}"),
                        }
                    } else if achieved {
                        ExecOutcome::Completed
                    } else {
                        ExecOutcome::Failed {
                            reason_code: reason::AGENT_FAILED,
                            message: format!("the model reports the step not achieved: {comment}"),
                        }
                    };
                    return Ok(finish(
                        st,
                        outcome,
                        format!("completion after {iteration} turn(s)"),
                    ));
                }
                Turn::Reflection(v) => {
                    messages.push(Message::assistant(resp.text.clone()));
                    if let Some(r) = self.take_revision(&mut st, v) {
                        return Ok(finish(st, r, "plan revisions exhausted".to_string()));
                    }
                    messages.push(Message::user("Continue with the next action."));
                }
                Turn::Text => {
                    if nudged {
                        return Ok(finish(
                            st,
                            ExecOutcome::Failed {
                                reason_code: reason::MODEL_ERROR,
                                message: "the model answered twice with neither a tool call nor the completion JSON".to_string(),
                            },
                            format!("no action at turn {iteration}"),
                        ));
                    }
                    nudged = true;
                    messages.push(Message::assistant(resp.text.clone()));
                    messages.push(Message::user(
                        "Call a tool, or answer with the completion JSON if the step is done.",
                    ));
                }
                Turn::Calls(calls) => {
                    let native = calls.iter().all(|c| c.0.is_some());
                    let mut assistant = Message::assistant(resp.text.clone());
                    if native {
                        assistant.tool_calls = resp.tool_calls.clone();
                    }
                    messages.push(assistant);
                    for (id, name, args, args_ok) in calls {
                        let started_at = dandori_trace::now_rfc3339();
                        let clock = std::time::Instant::now();
                        let result = if args_ok {
                            registry.call(&dandori_tools::ToolCall {
                                id: id.clone(),
                                name: name.clone(),
                                arguments: args.clone(),
                            })
                        } else {
                            dandori_tools::ToolResult::err(
                                &dandori_tools::ToolCall::new(name.clone(), args.clone()),
                                dandori_tools::ToolError::new(
                                    dandori_tools::ReasonCode::InvalidArguments,
                                    "the arguments are not valid JSON",
                                ),
                            )
                        };
                        st.actions += 1;
                        st.calls.push((
                            crate::events::TOOL_CALL,
                            json!({"step_id": req.step_id, "tool": name,
                                "started_at": started_at,
                                "duration_ms": clock.elapsed().as_millis() as u64,
                                "ok": !result.is_error(),
                                "reason_code": result.error.as_ref().map(|e| e.code)}),
                        ));
                        // Secrets never reach the model, the trace or the reflection.
                        let result = dandori_tools::ToolResult {
                            content: req.masker.mask_str(&result.content),
                            ..result
                        };
                        let content = cut(&result.content);
                        let key = format!("{name}\u{1f}{args}\u{1f}{}", result.content);
                        let n = st.seen.entry(key).or_insert(0);
                        *n += 1;
                        if *n >= LOOP_REPEATS {
                            return Ok(finish(
                                st,
                                ExecOutcome::Failed {
                                    reason_code: reason::LOOP_DETECTED,
                                    message: format!(
                                        "`{name}` was called {LOOP_REPEATS} times with the same arguments and the same result"
                                    ),
                                },
                                format!("loop at turn {iteration}"),
                            ));
                        }
                        match &id {
                            Some(id) => messages.push(Message::tool_result(id.clone(), content)),
                            None => messages.push(Message::user(format!(
                                "Result of {name} ({}):\n{content}",
                                if result.is_error() { "error" } else { "ok" }
                            ))),
                        }
                        if result.is_error() {
                            st.consecutive_failures += 1;
                            if st.consecutive_failures >= self.limits.max_consecutive_failures {
                                return Ok(finish(
                                    st,
                                    ExecOutcome::Failed {
                                        reason_code: reason::EARLY_TERMINATION,
                                        message: format!(
                                            "{} failed actions in a row (last: `{name}`: {})",
                                            self.limits.max_consecutive_failures,
                                            result.content.lines().next().unwrap_or("")
                                        ),
                                    },
                                    format!("stopped at turn {iteration}"),
                                ));
                            }
                        } else {
                            st.consecutive_failures = 0;
                        }
                        let trigger = if result.is_error() {
                            (self.limits.reflection.enabled
                                && self.limits.reflection.trigger_on_error)
                                .then_some(Trigger::Error)
                        } else {
                            (self.limits.reflection.enabled
                                && reflection::interval_due(st.actions, req.reflection_interval))
                            .then_some(Trigger::Interval)
                        };
                        let action = Action {
                            name: &name,
                            arguments: &args.to_string(),
                            result: &result.content,
                            is_error: result.is_error(),
                        };
                        if let Some(trigger) = trigger
                            && let Some(r) =
                                self.reflect(&mut st, &mut messages, trigger, req, &action)?
                        {
                            return Ok(finish(st, r, "plan revisions exhausted".to_string()));
                        }
                    }
                }
            }
        }
        let max = self.limits.max_iterations;
        Ok(finish(
            st,
            ExecOutcome::Failed {
                reason_code: reason::MAX_ITERATIONS,
                message: format!("no completion after {max} model turns"),
            },
            format!("{max} turns"),
        ))
    }
}

impl LlmExecutor {
    /// Asks the model for the reflection JSON after `action`, with a compact prompt
    /// built to fit `llm.budgets.reflection` (seed 000 §13.4): the action, its result
    /// cut to fit, the step's intent and success criteria and the issues so far, not
    /// the whole conversation. A failed or unreadable reflection counts as a problem
    /// (seed 000 §10.3: conservative).
    fn reflect(
        &self,
        st: &mut LoopState,
        messages: &mut Vec<Message>,
        trigger: Trigger,
        req: &ExecRequest<'_>,
        action: &Action<'_>,
    ) -> Result<Option<ExecOutcome>, RunnerError> {
        let issues: Vec<String> = st
            .reflections
            .iter()
            .filter_map(|r| r.pointer("/reflection/issues_identified"))
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect();
        let input = reflection::ReflectionInput {
            step_id: req.step_id,
            intent: crate::prompt::section(req.prompt, "Intent"),
            success_criteria: crate::prompt::section(req.prompt, "Success criteria"),
            action: action.name,
            arguments: action.arguments,
            result: action.result,
            result_is_error: action.is_error,
            trigger,
            issues: &issues,
            depth: self.limits.reflection.depth,
        };
        let status = if action.is_error {
            ReflectionStatus::Failure
        } else {
            ReflectionStatus::Success
        };
        let Some(prompt) = reflection::prompt(&input, self.reflection_budget) else {
            st.reflections.push(reflection::record(
                action.name,
                trigger,
                status,
                &format!(
                    "llm.budgets.reflection ({} tokens) leaves no room for a reflection prompt; judged from the result alone",
                    self.reflection_budget
                ),
                &[],
                false,
            ));
            return Ok(None);
        };
        let mut request = ChatRequest::new(
            Phase::Reflection,
            vec![
                Message::system(prompt.system.clone()),
                Message::user(prompt.user.clone()),
            ],
        );
        request.max_tokens = Some(prompt.max_tokens);
        let resp = match self.chat(st, req.step_id, "reflection", &request) {
            Ok(r) => r,
            Err(e) => {
                st.reflections.push(reflection::record(
                    action.name,
                    trigger,
                    ReflectionStatus::Failure,
                    &format!("the reflection call failed: {e}"),
                    &[],
                    false,
                ));
                return Ok(match e {
                    LlmError::BudgetExceeded { .. } => Some(model_failure(&e)),
                    _ => None,
                });
            }
        };
        st.tokens.add(TokenUsage {
            prompt_tokens: resp.usage.prompt_tokens,
            completion_tokens: resp.usage.completion_tokens,
        });
        match dandori_llm::structured::parse_lenient(&resp.text) {
            Ok(mut v) => {
                if let Some(obj) = v.as_object_mut() {
                    obj.insert("trigger".to_string(), json!(trigger.as_str()));
                    obj.insert(
                        "tokens".to_string(),
                        json!({
                            "prompt_estimate": prompt.estimated_tokens,
                            "max_tokens": prompt.max_tokens,
                            "prompt_tokens": resp.usage.prompt_tokens,
                            "completion_tokens": resp.usage.completion_tokens,
                            "budget": self.reflection_budget,
                        }),
                    );
                }
                // Only a revision the reflection asked for is one to follow: a
                // `plan_revision` beside `plan_revision_needed: false` (or an
                // empty one) revises nothing.
                let asked = v
                    .pointer("/reflection/plan_revision_needed")
                    .and_then(Value::as_bool)
                    == Some(true);
                let revision = v.get("plan_revision").cloned().filter(|r| {
                    asked
                        && !r.is_null()
                        && r.as_object().is_none_or(|o| !o.is_empty())
                        && r.as_array().is_none_or(|a| !a.is_empty())
                        && r.as_str().is_none_or(|s| !s.trim().is_empty())
                });
                let out = self.take_revision(st, v);
                if out.is_none()
                    && let Some(rev) = revision
                {
                    messages.push(Message::user(format!(
                        "Your reflection revised the plan; follow it: {rev}"
                    )));
                }
                Ok(out)
            }
            Err(e) => {
                st.reflections.push(reflection::record(
                    action.name,
                    trigger,
                    ReflectionStatus::Failure,
                    &format!("the reflection could not be read ({e}); treated as a problem"),
                    &[],
                    false,
                ));
                Ok(None)
            }
        }
    }

    /// Records a reflection; a revision beyond `max_revisions` ends the step.
    fn take_revision(&self, st: &mut LoopState, v: Value) -> Option<ExecOutcome> {
        let needed = v
            .pointer("/reflection/plan_revision_needed")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        st.reflections.push(v);
        if !needed {
            return None;
        }
        st.revisions += 1;
        (st.revisions > self.limits.max_revisions).then(|| ExecOutcome::Failed {
            reason_code: reason::MAX_REVISIONS_EXCEEDED,
            message: format!(
                "the model asked for plan revision {} (planning.revision.max_revisions {})",
                st.revisions, self.limits.max_revisions
            ),
        })
    }
}

fn model_failure(e: &LlmError) -> ExecOutcome {
    match e {
        LlmError::BudgetExceeded { .. } => ExecOutcome::Failed {
            reason_code: reason::TOKEN_BUDGET_EXCEEDED,
            message: e.to_string(),
        },
        LlmError::MissingApiKey { .. } | LlmError::InvalidConfig { .. } => {
            ExecOutcome::NeedsInput {
                reason_code: reason::MODEL_NOT_CONFIGURED,
                message: e.to_string(),
            }
        }
        LlmError::Http { .. }
        | LlmError::QuotaExhausted { .. }
        | LlmError::Connect { .. }
        | LlmError::Timeout { .. }
        | LlmError::FirstTokenTimeout { .. }
        | LlmError::AnswerTimeout { .. }
        | LlmError::IdleTimeout { .. }
        | LlmError::StreamIncomplete { .. }
        | LlmError::StreamError { .. }
        | LlmError::AgentCli { .. }
        | LlmError::Decode { .. }
        | LlmError::Cancelled { .. }
        | LlmError::InvalidStructuredOutput { .. }
        | LlmError::RetriesExhausted { .. } => ExecOutcome::Failed {
            reason_code: reason::MODEL_ERROR,
            message: e.to_string(),
        },
    }
}
