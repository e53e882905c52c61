//! `dandori plan --provider …`: choosing the LLM planner. The provider comes from
//! the `llm:` config section (`--provider NAME`, or `llm.default_provider`) or from
//! the flags alone (`--provider openai|anthropic --base-url URL --model NAME
//! [--api-key-env VAR]`); without either, `plan` stays offline.

use std::collections::BTreeMap;
use std::path::Path;

use dandori_config::{LoadOptions, Loaded};
use dandori_planner::PlannerError;
use dandori_planner::llm::LlmPlanner;
use dandori_planner::llm::provider::{ProviderFlags, resolve};

use crate::cli::PlanArgs;
use crate::output;

pub fn flags(args: &PlanArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider.clone(),
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
    }
}

/// The LLM planner and the configuration it plans with (defaults < config file <
/// environment < `-c`), or None for the offline planner. Config errors are `anyhow`
/// (exit 2, naming the file); provider errors are `PlannerError::Provider` /
/// `PlannerError::Draft` (missing key variable).
pub fn select(
    flags: &ProviderFlags,
    config_file: Option<&Path>,
    sets: &[String],
    repo: &Path,
) -> anyhow::Result<Result<Option<(LlmPlanner, Loaded)>, PlannerError>> {
    // The binary reads the process environment; tests pass their own to the library.
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let loaded = dandori_config::load(&LoadOptions {
        repo: repo.to_path_buf(),
        config_path: config_file.map(Path::to_path_buf),
        task_planning_path: None,
        env: env.clone(),
        overrides: sets.to_vec(),
        task_type: None,
    })
    .map_err(|e| anyhow::anyhow!("CONFIG_INVALID: {e}"))?;
    let provider = match resolve(&loaded.config.llm, flags) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(Ok(None)),
        Err(e) => return Ok(Err(e)),
    };
    for w in &loaded.warnings {
        output::progress(&format!("warning: {w}"));
    }
    let lookup = |name: &str| env.get(name).cloned();
    Ok(LlmPlanner::new(&provider, &loaded.config.llm.budgets, &lookup).map(|p| Some((p, loaded))))
}
