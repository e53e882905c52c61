//! [`LlmPlanner`]: the `DraftPlanner` that asks a model. It reuses the offline
//! planner's pre-planning information (scan, retrieval, environment) and its
//! request signals, asks the model (see [`super::engine`]), and maps the seed 000
//! answer onto a [`Draft`].
//!
//! * unclear goal → [`PlannerError::UnclearGoal`] with the clarification questions;
//! * decomposition failed → the feasible part of the plan, the rest as risks;
//! * size estimation timeout → the draft is marked not decomposable (seed 003 §9.1:
//!   category M, no chunking);
//! * any model failure → [`PlannerError::Draft`], on which the pipeline falls back
//!   to the offline planner and records `PLANNING_SKIPPED` (fail-closed);
//! * plan cache: a hit returns the cached draft without any model call.

use std::sync::Mutex;
use std::time::Duration;

use dandori_config::{ProviderConfig, Strategy, TokenBudgets};
use dandori_llm::{Client, LlmError};
use dandori_plan::{AcKind, AcceptanceCriterion, Boundaries, GoalUnderstanding};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::cache::{CacheKey, Lookup, PlanCache, RepoState};
use super::engine::{self, EngineInputs, EngineOutput, SizeOutcome};
use super::failure::{self, ModelFailure};
use super::prompt::{self, ContextFile, ContextSnippet, RepoContextInput};
use super::response::{CheckOut, PlanningError, PlanningResponse, SizeEstimateOut, SubtaskOut};
use crate::DraftPlanner;
use crate::context::PlanningContext;
use crate::draft::{Draft, DraftSubtask, SizeInputs};
use crate::error::PlannerError;
use crate::offline::SimplePlanner;

/// Trace events of the LLM planner (seed 003 §7 style).
pub mod events {
    /// One model call: purpose, provider, model, usage, attempts, retries.
    pub const LLM_CALL: &str = "LLM_CALL";
    /// Token usage per phase against the budgets, and prompt sizes.
    pub const LLM_USAGE: &str = "LLM_USAGE";
    /// The model could not plan; the offline planner takes over.
    pub const LLM_PLANNING_FAILED: &str = "LLM_PLANNING_FAILED";
    /// The model asked for clarification (seed 000 §10.1.1).
    pub const PLANNING_UNCLEAR_GOAL: &str = "PLANNING_UNCLEAR_GOAL";
    /// The model could only partly decompose the task (seed 000 §10.1.2).
    pub const DECOMPOSITION_FAILED: &str = "DECOMPOSITION_FAILED";
    pub const PLAN_CACHE_HIT: &str = "PLAN_CACHE_HIT";
    pub const PLAN_CACHE_MISS: &str = "PLAN_CACHE_MISS";
    pub const PLAN_CACHE_STORE: &str = "PLAN_CACHE_STORE";
    /// Expired, unreadable or clear-text entries removed when planning starts.
    pub const PLAN_CACHE_SWEEP: &str = "PLAN_CACHE_SWEEP";
}

/// Number of retrieved files offered as context.
const CONTEXT_FILES: usize = 8;

/// What the cache keeps: the draft and what produced it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct CachedPlan {
    planner: String,
    draft: Draft,
}

pub struct LlmPlanner {
    client: Client,
    /// Seed 003 §8.1 `size_estimation.llm_model` when it names another provider
    /// or model than the planning one ([`LlmPlanner::with_size_model`]).
    size_client: Option<Client>,
    budgets: TokenBudgets,
    events: Mutex<Vec<(String, Value)>>,
    /// The plan cache's key (outside the repository); None = no cache.
    cache_key_file: Option<std::path::PathBuf>,
    /// What counts as a secret a request or plan must not be cached with.
    masker: dandori_trace::Masker,
}

impl std::fmt::Debug for LlmPlanner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmPlanner")
            .field("client", &self.client)
            .finish()
    }
}

impl LlmPlanner {
    /// `env` resolves `api_key_env` (the process environment in the binary).
    pub fn new(
        provider: &ProviderConfig,
        budgets: &TokenBudgets,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<LlmPlanner, PlannerError> {
        let client =
            Client::from_config(provider, budgets, env).map_err(|e| PlannerError::Provider {
                message: e.to_string(),
            })?;
        let api_key = provider.api_key_env.as_deref().and_then(env);
        Ok(LlmPlanner {
            client,
            size_client: None,
            budgets: budgets.clone(),
            events: Mutex::new(Vec::new()),
            cache_key_file: crate::llm::cache_seal::key_path(env),
            masker: dandori_trace::Masker::default().with_literal_secrets(api_key),
        })
    }

    /// The secret variables of `env` count as secrets the plan cache never keeps
    /// a request or a plan with (the binary passes the process environment).
    pub fn with_secret_env(
        mut self,
        env: &std::collections::BTreeMap<String, String>,
    ) -> LlmPlanner {
        self.masker = self.masker.with_env_secrets(env);
        self
    }

    /// For an agent CLI provider: the sandbox, environment and command policy of
    /// the loaded configuration (see `dandori_llm::agent_cli`).
    pub fn with_agent_runtime(mut self, runtime: dandori_llm::AgentRuntime) -> LlmPlanner {
        self.client = self.client.with_agent_runtime(runtime.clone());
        self.size_client = self.size_client.map(|c| c.with_agent_runtime(runtime));
        self
    }

    /// Seed 003 §8.1 `size_estimation.llm_model`: the size estimation call goes
    /// to the provider of that name in `llm.providers`, or else to the planning
    /// provider with that model. `cheap` (the seed's default) and an empty value
    /// keep the planning provider and model.
    pub fn with_size_model(
        mut self,
        llm_model: &str,
        llm: &dandori_config::LlmConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<LlmPlanner, PlannerError> {
        let wanted = llm_model.trim();
        let provider = match llm.providers.iter().find(|p| p.name == wanted) {
            Some(p) => p.clone(),
            None if wanted.is_empty() || wanted == "cheap" => return Ok(self),
            None => ProviderConfig {
                model: wanted.to_string(),
                ..self.client.config().clone()
            },
        };
        if &provider == self.client.config() {
            return Ok(self);
        }
        let client = Client::from_config(&provider, &self.budgets, env).map_err(|e| {
            PlannerError::Provider {
                message: format!("task-planning.json size_estimation.llm_model `{wanted}`: {e}"),
            }
        })?;
        self.size_client = Some(client);
        Ok(self)
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    fn emit(&self, name: &str, data: Value) {
        let mut events = match self.events.lock() {
            Ok(e) => e,
            Err(poisoned) => poisoned.into_inner(),
        };
        events.push((name.to_string(), data));
    }

    /// Events recorded since the last call, oldest first.
    pub fn take_events(&self) -> Vec<(String, Value)> {
        let mut events = match self.events.lock() {
            Ok(e) => e,
            Err(poisoned) => poisoned.into_inner(),
        };
        std::mem::take(&mut *events)
    }

    fn settings(&self, ctx: &PlanningContext) -> String {
        let c = self.client.config();
        let mut h = Sha256::new();
        for template in [
            prompt::SYSTEM,
            prompt::PLANNING,
            prompt::SIZE_ESTIMATION,
            prompt::VALIDATION_CORRECTION,
        ] {
            h.update(template.as_bytes());
        }
        let prompts: String = h
            .finalize()
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect();
        let size = self
            .size_client
            .as_ref()
            .map(|s| format!("|size:{}/{}", s.config().name, s.config().model))
            .unwrap_or_default();
        format!(
            "{:?}|{}|{}{size}|{}|{:?}|{:?}|{}|{}",
            c.kind,
            c.base_url,
            c.model,
            self.name(),
            ctx.config.planning.strategy,
            ctx.decomposition_level(),
            ctx.max_subtasks(),
            prompts
        )
    }

    /// The plan cache and this request's key; None when the cache is off, when
    /// the user's key cannot be used (the cache is never written in clear), or
    /// when the request holds a secret (it is never cached). A bounded sweep of
    /// expired entries runs first.
    fn cache(&self, ctx: &PlanningContext) -> Option<(PlanCache, CacheKey)> {
        let cfg = &ctx.config.planning.cache;
        if !cfg.enabled {
            return None;
        }
        if self.masker.holds_secret(&ctx.request.raw) {
            self.emit(
                events::PLAN_CACHE_MISS,
                json!({"reason": "the request holds a secret: not cached"}),
            );
            return None;
        }
        let seal = match self
            .cache_key_file
            .as_deref()
            .map(|key| crate::llm::cache_seal::Seal::open_or_create(key, &ctx.repo_root))
        {
            Some(Ok(seal)) => seal,
            Some(Err(e)) => {
                self.emit(events::PLAN_CACHE_MISS, json!({"reason": e.to_string()}));
                return None;
            }
            None => {
                self.emit(
                    events::PLAN_CACHE_MISS,
                    json!({"reason": crate::llm::cache_seal::SealError::NoDataDir.to_string()}),
                );
                return None;
            }
        };
        let cache = PlanCache::new(
            crate::llm::cache::cache_dir(cfg, &ctx.repo_root),
            cfg.ttl,
            cfg.similarity_threshold,
            seal,
        );
        let swept = cache.sweep(crate::llm::cache::SWEEP_LIMIT);
        if swept.removed > 0 {
            self.emit(events::PLAN_CACHE_SWEEP, json!(swept));
        }
        let exclude = vec![".dandori".to_string(), ctx.config.runs.root.clone()];
        let state = RepoState::read(&ctx.repo_root, &exclude);
        let key = CacheKey::new(&ctx.request.raw, state, self.settings(ctx));
        Some((cache, key))
    }

    fn context_input(ctx: &PlanningContext) -> RepoContextInput {
        let env = &ctx.selected_environment;
        let mut environment = format!("selected: {} ({})", env.name, env.reason);
        // Seed 002 §3.5.2: each detected file with a summary of its contents.
        let info = dandori_env::analyzer::info::environment_info(
            &ctx.environment,
            env,
            &ctx.repo_root,
            dandori_env::analyzer::info::INFO_FILE_BYTES,
        );
        let summaries = dandori_env::analyzer::info::file_summaries(&info, 6, 100);
        if !summaries.is_empty() {
            environment.push_str("\ndetected files:");
            for line in summaries {
                environment.push_str(&format!("\n- {line}"));
            }
        }
        if !ctx.unit_commands.is_empty() {
            environment.push_str(&format!("\nunit tests: {}", ctx.unit_commands.join("; ")));
        }
        RepoContextInput {
            tree_summary: ctx.scan.tree.clone(),
            environment,
            files: ctx
                .hits
                .iter()
                .take(CONTEXT_FILES)
                .map(|h| ContextFile {
                    path: h.path.clone(),
                    // f64 in the interim scan, f32 in dandori-repo.
                    #[allow(clippy::useless_conversion)]
                    score: f64::from(h.score),
                    snippets: h
                        .snippets
                        .iter()
                        .map(|s| ContextSnippet {
                            start_line: s.start_line,
                            end_line: s.end_line,
                            text: s.text.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    fn fail(&self, message: String, failure: ModelFailure) -> PlannerError {
        self.emit(
            events::LLM_PLANNING_FAILED,
            json!({"planner": self.name(), "error": message, "fallback": "offline",
                "reason_code": failure.reason_code, "cause": failure.cause,
                "config_key": failure.config_key}),
        );
        PlannerError::Draft {
            planner: self.name(),
            message,
            failure: Some(failure),
        }
    }

    /// A failure of the model's answer that is no model error (its plan, its
    /// mapping onto a draft).
    fn fail_plan(&self, message: String) -> PlannerError {
        let failure = ModelFailure::new(failure::LLM_PLAN_INVALID, message.clone(), None);
        self.fail(message, failure)
    }

    /// `LLM_CALL` for every call the client made since the last time: answered,
    /// failed and abandoned alike, so the trace and `dandori metrics` count
    /// every request the server saw.
    fn call_events(&self) -> Vec<dandori_llm::CallRecord> {
        // Both clients' calls (the size estimation may have its own), in the
        // order they started.
        let mut all: Vec<(dandori_llm::CallRecord, &Client)> = Vec::new();
        for client in std::iter::once(&self.client).chain(self.size_client.as_ref()) {
            all.extend(client.take_calls().into_iter().map(|r| (r, client)));
        }
        all.sort_by(|a, b| a.0.started_at.cmp(&b.0.started_at));
        let mut calls = Vec::new();
        for (call, client) in all {
            self.call_event(&call, client);
            calls.push(call);
        }
        calls
    }

    fn call_event(&self, call: &dandori_llm::CallRecord, client: &Client) {
        let c = client.config();
        {
            let mut data = json!({"provider": c.name, "provider_kind": c.kind,
                "request_model": c.model, "ok": call.outcome == dandori_llm::CallOutcome::Ok});
            if let (Some(obj), Ok(serde_json::Value::Object(rec))) =
                (data.as_object_mut(), serde_json::to_value(call))
            {
                obj.extend(rec);
            }
            self.emit(events::LLM_CALL, data);
        }
    }

    fn usage_event(&self, out: Option<&EngineOutput>) {
        let usage = self.client.usage();
        self.emit(
            events::LLM_USAGE,
            json!({
                "provider": self.client.config().name,
                "model": self.client.config().model,
                "phases": usage.phases,
                "total_tokens": usage.total(),
                "budgets": self.budgets,
                "prompt_tokens": out.map(|o| o.prompt_tokens),
                "context": out.map(|o| &o.context),
            }),
        );
    }

    fn draft_uncached(&self, ctx: &PlanningContext, base: &Draft) -> Result<Draft, PlannerError> {
        let context = Self::context_input(ctx);
        let environments: Vec<String> = std::iter::once(ctx.selected_environment.name.clone())
            .filter(|n| !n.is_empty())
            .collect();
        let validate = |response: &PlanningResponse| -> Vec<String> {
            match to_draft(ctx, base, response, None) {
                Ok(d) => crate::assemble::validation_failures(ctx, &d),
                Err(message) => vec![message],
            }
        };
        let inputs = EngineInputs {
            request: &ctx.request.raw,
            strategy: ctx.config.planning.strategy,
            decomposition_level: ctx.decomposition_level(),
            max_subtasks: ctx.max_subtasks(),
            max_diff_lines: crate::assemble::MAX_DIFF_LINES,
            context: &context,
            context_budget: self.budgets.planning_context,
            environments: &environments,
            size_timeout: Duration::from_millis(ctx.task_planning.size_estimation.timeout_ms),
            fallback_category: &ctx.task_planning.size_estimation.fallback_category,
            validate: &validate,
        };
        let size_client = self.size_client.as_ref().unwrap_or(&self.client);
        let result =
            engine::block_on(engine::run(&self.client, size_client, &inputs)).map_err(|e| {
                let message = format!("cannot start the model call: {e}");
                self.fail(
                    message.clone(),
                    ModelFailure::new(failure::PLANNING_DRAFT_FAILED, message, None),
                )
            })?;
        let calls = self.call_events();
        let out = match result {
            Ok(out) => out,
            Err(e) => {
                self.usage_event(None);
                let failure = failure::of_error(&e, &calls, self.client.config());
                return Err(self.fail(describe(&e), failure));
            }
        };
        self.usage_event(Some(&out));
        if let Some(problems) = &out.reasked_for {
            self.emit(
                "LLM_REASK",
                json!({"reason": "the answer did not follow the schema", "problems": problems}),
            );
        }
        if let Some(findings) = &out.validation_corrected {
            self.emit(
                "LLM_VALIDATION_CORRECTION",
                json!({"findings": findings, "remaining": out.validation_remaining}),
            );
        }
        if !out.validation_remaining.is_empty() {
            return Err(self.fail_plan(format!(
                "the model's plan still fails validation after one correction: {}",
                out.validation_remaining.join("; ")
            )));
        }
        match &out.response.error {
            Some(PlanningError::UnclearGoal {
                message,
                clarification_needed,
            }) => {
                self.emit(
                    events::PLANNING_UNCLEAR_GOAL,
                    json!({"message": message, "clarification_needed": clarification_needed,
                        "comment": out.response.comment}),
                );
                Err(PlannerError::UnclearGoal {
                    planner: self.name(),
                    message: message.clone(),
                    questions: clarification_needed.clone(),
                })
            }
            Some(PlanningError::DecompositionFailed {
                message,
                partial_plan,
            }) => {
                self.emit(
                    events::DECOMPOSITION_FAILED,
                    json!({"message": message, "feasible": partial_plan.feasible_subtasks.len(),
                        "infeasible_subtasks": partial_plan.infeasible_subtasks,
                        "alternative_approaches": partial_plan.alternative_approaches}),
                );
                if partial_plan.feasible_subtasks.is_empty() {
                    return Err(self.fail_plan(format!(
                        "decomposition_failed with no feasible subtask: {message}"
                    )));
                }
                let mut partial = out.response.clone();
                partial.task_decomposition = Some(super::response::TaskDecomposition {
                    reasoning: message.clone(),
                    subtasks: partial_plan.feasible_subtasks.clone(),
                    ..Default::default()
                });
                for item in &partial_plan.infeasible_subtasks {
                    partial
                        .risks
                        .push(format!("not feasible: {}", value_text(item)));
                }
                for item in &partial_plan.alternative_approaches {
                    partial
                        .assumptions
                        .push(format!("alternative approach: {}", value_text(item)));
                }
                to_draft(ctx, base, &partial, size_of(&out.size)).map_err(|m| self.fail_plan(m))
            }
            None => {
                let mut draft = to_draft(ctx, base, &out.response, size_of(&out.size))
                    .map_err(|m| self.fail_plan(m))?;
                if let SizeOutcome::Fallback { reason, .. } = &out.size {
                    // Seed 003 §9.1: timeout → category M, no chunking.
                    draft.not_decomposable = Some(reason.clone());
                }
                Ok(draft)
            }
        }
    }
}

impl DraftPlanner for LlmPlanner {
    fn name(&self) -> String {
        let c = self.client.config();
        format!("llm:{}/{}", c.name, c.model)
    }

    fn draft(&self, ctx: &PlanningContext) -> Result<Draft, PlannerError> {
        let base = SimplePlanner.draft(ctx)?;
        let cache = self.cache(ctx);
        if let Some((cache, key)) = &cache {
            match cache.lookup(key) {
                Lookup::Hit {
                    payload,
                    entry,
                    similarity,
                    age_secs,
                } => match serde_json::from_value::<CachedPlan>(payload) {
                    Ok(cached) => {
                        self.emit(
                            events::PLAN_CACHE_HIT,
                            json!({"entry": entry, "similarity": similarity, "age_secs": age_secs,
                                "planner": cached.planner, "model_calls": 0}),
                        );
                        return Ok(cached.draft);
                    }
                    Err(e) => self.emit(
                        events::PLAN_CACHE_MISS,
                        json!({"entry": entry, "reason": format!("unreadable entry: {e}")}),
                    ),
                },
                Lookup::Miss { expired } => self.emit(
                    events::PLAN_CACHE_MISS,
                    json!({"key": key.digest(), "expired": expired}),
                ),
            }
        }
        let draft = self.draft_uncached(ctx, &base)?;
        // Only a complete plan is worth reusing; one that holds a secret (the
        // model's answer may quote one) is not kept.
        if let Some((cache, key)) = &cache
            && draft.not_decomposable.is_none()
        {
            let payload = json!(CachedPlan {
                planner: self.name(),
                draft: draft.clone(),
            });
            if self.masker.holds_secret(&payload.to_string()) {
                self.emit(
                    events::PLAN_CACHE_STORE,
                    json!({"entry": key.digest(), "skipped": "the plan holds a secret: not cached"}),
                );
                return Ok(draft);
            }
            match cache.store(key, &payload) {
                Ok(path) => self.emit(
                    events::PLAN_CACHE_STORE,
                    json!({"entry": key.digest(), "path": path}),
                ),
                // A cache that cannot be written only costs a model call next time.
                Err(e) => self.emit(
                    events::PLAN_CACHE_STORE,
                    json!({"entry": key.digest(), "error": e.to_string()}),
                ),
            }
        }
        Ok(draft)
    }

    fn trace_events(&self) -> Vec<(String, Value)> {
        self.take_events()
    }
}

/// The model's check as planning.json writes it (`{"command": …}` or
/// `{"test": …}`); the response checks have refused any other shape.
fn check_value(check: Option<&CheckOut>) -> Option<Value> {
    let c = check?;
    match (
        c.command.as_deref().map(str::trim),
        c.test.as_deref().map(str::trim),
    ) {
        (Some(cmd), None) if !cmd.is_empty() => Some(json!({ "command": cmd })),
        (None, Some(test)) if !test.is_empty() => Some(json!({ "test": test })),
        _ => None,
    }
}

fn describe(e: &LlmError) -> String {
    format!("{} ({})", e, e.kind())
}

fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn size_of(size: &SizeOutcome) -> Option<&SizeEstimateOut> {
    match size {
        SizeOutcome::Estimated(s) => Some(s),
        SizeOutcome::Fallback { .. } => None,
    }
}

/// Seed 003 §3.2 category → raw estimates that score inside it with the seed 003
/// §3.1 weights (used when the model gave no estimate).
fn inputs_for_category(category: &str) -> (u64, u64, u8, u64) {
    match category.trim().to_uppercase().as_str() {
        "XS" => (500, 1, 1, 0),
        "S" => (2000, 3, 3, 1),
        "L" => (8000, 7, 7, 3),
        "XL" => (10000, 10, 10, 5),
        _ => (5000, 5, 5, 2),
    }
}

/// Map the model's plan onto a draft. Errors name the JSON path.
fn to_draft(
    ctx: &PlanningContext,
    base: &Draft,
    response: &PlanningResponse,
    size: Option<&SizeEstimateOut>,
) -> Result<Draft, String> {
    let decomposition = response
        .task_decomposition
        .as_ref()
        .ok_or_else(|| "$.task_decomposition: missing".to_string())?;
    let goal = response.goal_understanding.clone().unwrap_or_default();
    let acceptance_criteria: Vec<AcceptanceCriterion> = response
        .acceptance_criteria
        .iter()
        .map(|a| AcceptanceCriterion {
            id: a.id.clone(),
            given: a.given.clone(),
            when: a.when.clone(),
            then: a.then.clone(),
            kind: match a.kind.as_deref() {
                Some("functional") => Some(AcKind::Functional),
                Some("regression") => Some(AcKind::Regression),
                Some("nonfunctional") => Some(AcKind::Nonfunctional),
                _ => None,
            },
            extra: check_value(a.check.as_ref())
                .map(|c| [("check".to_string(), c)].into_iter().collect())
                .unwrap_or_default(),
        })
        .collect();
    let subtasks: Vec<DraftSubtask> = decomposition
        .subtasks
        .iter()
        .map(|s| {
            let mut d = subtask(ctx, s);
            // Seed 000 §2.3: the model's own actions for this subtask, as given.
            d.actions = response
                .action_plan
                .iter()
                .flat_map(|p| p.actions.iter())
                .filter(|a| a.get("task_id").and_then(Value::as_str) == Some(s.id.as_str()))
                .cloned()
                .collect();
            d
        })
        .collect();
    let mut constraints = goal.constraints.clone();
    for c in &base.constraints {
        if !constraints.contains(c) {
            constraints.push(c.clone());
        }
    }
    let size = match size {
        Some(s) => SizeInputs {
            estimated_tokens: s.estimated_tokens,
            estimated_file_count: s.estimated_file_count,
            complexity_score: s.complexity_score.clamp(1, 10),
            dependency_depth: s.dependency_depth,
            reasoning: s.reasoning.clone(),
            confidence: s.confidence.clamp(0.0, 1.0),
        },
        None => {
            let category = &ctx.task_planning.size_estimation.fallback_category;
            let (t, f, c, d) = inputs_for_category(category);
            SizeInputs {
                estimated_tokens: t,
                estimated_file_count: f,
                complexity_score: c,
                dependency_depth: d,
                reasoning: format!("no model estimate: fallback category {category}"),
                confidence: 0.0,
            }
        }
    };
    let strategy = match ctx.config.planning.strategy {
        Strategy::ChainOfThought => "chain_of_thought",
        Strategy::Hierarchical => "hierarchical",
        Strategy::Simple => "simple",
    };
    Ok(Draft {
        strategy: strategy.to_string(),
        goal_understanding: GoalUnderstanding {
            main_objective: if goal.main_objective.is_empty() {
                base.goal_understanding.main_objective.clone()
            } else {
                goal.main_objective
            },
            success_criteria: goal.success_criteria,
            constraints: constraints.clone(),
            context: goal.context,
            extra: Default::default(),
        },
        summary: base.summary.clone(),
        constraints,
        subtasks,
        acceptance_criteria,
        assumptions: response.assumptions.clone(),
        risks: response.risks.clone(),
        size,
        chunking_signals: base.chunking_signals.clone(),
        reasoning: decomposition.reasoning.clone(),
        not_decomposable: None,
        mode: decomposition.mode.as_deref().and_then(|m| match m {
            "simple" => Some(dandori_plan::PlanMode::Simple),
            "standard" => Some(dandori_plan::PlanMode::Standard),
            "complex" => Some(dandori_plan::PlanMode::Complex),
            _ => None,
        }),
        complexity_score: decomposition
            .complexity_score
            .filter(|c| c.is_finite())
            .map(|c| c.clamp(0.0, 1.0)),
    })
}

fn subtask(ctx: &PlanningContext, s: &SubtaskOut) -> DraftSubtask {
    let query = format!("{} {}", s.title, s.intent);
    let hints: Vec<String> = ctx.search(&query, 3).into_iter().map(|h| h.path).collect();
    let mut success_criteria = s.success_criteria.clone();
    if success_criteria.is_empty() {
        success_criteria.push(format!("{} is done", s.title));
    }
    DraftSubtask {
        key: s.id.clone(),
        title: s.title.clone(),
        intent: {
            let intent = if s.intent.is_empty() {
                s.title.clone()
            } else {
                s.intent.clone()
            };
            // Hierarchical strategy: keep the goal the subtask serves.
            match &s.parent {
                Some(goal) if !goal.trim().is_empty() => format!("{intent} (goal: {goal})"),
                Some(_) | None => intent,
            }
        },
        target_paths: s.target_paths.clone(),
        code_files_hint: hints,
        context_files: ctx.scan.readme.iter().map(|r| r.path.clone()).collect(),
        produces: s.produces.clone(),
        consumes: s.consumes.clone(),
        boundaries: s.boundaries.as_ref().map(|b| Boundaries {
            in_scope: b.in_scope.clone(),
            out_of_scope: b.out_of_scope.clone(),
        }),
        depends_on: s.depends_on.clone(),
        complexity: s.complexity.clamp(1, 10),
        estimated_lines: if s.estimated_lines == 0 {
            40
        } else {
            s.estimated_lines
        },
        links_to_ac: s.links_to_ac.clone(),
        success_criteria,
        required_tools: Vec::new(),
        suggested_tools: s.suggested_tools.clone(),
        suggested_persona: s.suggested_persona.clone().filter(|p| !p.trim().is_empty()),
        test_first: false,
        actions: Vec::new(),
    }
}
