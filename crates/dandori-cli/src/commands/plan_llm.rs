//! `dandori plan --provider …`: choosing the LLM planner. The provider comes from
//! the `llm:` config section (`--provider NAME`, or `llm.default_provider`) or from
//! the flags alone (`--provider openai|anthropic --base-url URL --model NAME
//! [--api-key-env VAR]`); without either, `plan` stays offline.

use std::collections::BTreeMap;

use dandori_config::Loaded;
use dandori_planner::PlannerError;
use dandori_planner::llm::LlmPlanner;
use dandori_planner::llm::provider::{ProviderFlags, resolve};

use crate::cli::ProviderArgs;

/// The provider flags of `plan` / `revise`.
pub fn flags(args: &ProviderArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider.clone(),
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
    }
}

/// The LLM planner for the loaded configuration (defaults < config file <
/// environment < `-c`), or None for the offline planner. Errors are
/// `PlannerError::Provider` (unknown provider, missing flags, missing key
/// variable): exit 2.
pub fn select(
    flags: &ProviderFlags,
    loaded: &Loaded,
    env: &BTreeMap<String, String>,
) -> Result<Option<LlmPlanner>, PlannerError> {
    let Some(provider) = resolve(&loaded.config.llm, flags)? else {
        return Ok(None);
    };
    let lookup = |name: &str| env.get(name).cloned();
    let planner = LlmPlanner::new(&provider, &loaded.config.llm.budgets, &lookup)?
        .with_size_model(
            &loaded.task_planning.size_estimation.llm_model,
            &loaded.config.llm,
            &lookup,
        )?;
    Ok(Some(
        planner
            .with_agent_runtime(dandori_llm::AgentRuntime::from_config(&loaded.config, env))
            .with_secret_env(env),
    ))
}
