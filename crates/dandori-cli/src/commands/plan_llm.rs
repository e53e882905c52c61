//! `dandori plan --provider …`: choosing the LLM planner. The provider comes from
//! the `llm:` config section (`--provider NAME`, or `llm.default_provider`) or from
//! the flags alone (`--provider openai|anthropic --base-url URL --model NAME
//! [--api-key-env VAR]`); without either, `plan` stays offline.

use std::path::Path;

use anyhow::Context;
use dandori_config::Config;
use dandori_planner::PlannerError;
use dandori_planner::llm::LlmPlanner;
use dandori_planner::llm::provider::{ProviderFlags, resolve};

use crate::cli::PlanArgs;

pub fn flags(args: &PlanArgs) -> ProviderFlags {
    ProviderFlags {
        provider: args.provider.clone(),
        base_url: args.base_url.clone(),
        model: args.model.clone(),
        api_key_env: args.api_key_env.clone(),
    }
}

/// The LLM planner and the config it plans with, or None for the offline planner.
/// Config errors are `anyhow` (exit 2 with the file named); provider errors are
/// `PlannerError::Provider`.
pub fn select(
    flags: &ProviderFlags,
    config_file: Option<&Path>,
    sets: &[String],
    repo: &Path,
) -> anyhow::Result<Result<Option<(LlmPlanner, Config)>, PlannerError>> {
    let file = config_file.map(Path::to_path_buf).or_else(|| {
        ["dandori.yaml", "config.yaml"]
            .iter()
            .map(|n| repo.join(n))
            .find(|p| p.is_file())
    });
    let wants_llm = flags.provider.is_some()
        || flags.base_url.is_some()
        || flags.model.is_some()
        || flags.api_key_env.is_some();
    if !wants_llm && file.is_none() && sets.is_empty() {
        return Ok(Ok(None));
    }
    let config = load(file.as_deref(), sets)?;
    let provider = match resolve(&config.llm, flags) {
        Ok(Some(p)) => p,
        Ok(None) => return Ok(Ok(None)),
        Err(e) => return Ok(Err(e)),
    };
    // The binary reads the process environment; tests pass their own to the library.
    let env = |name: &str| std::env::var(name).ok();
    Ok(LlmPlanner::new(&provider, &config.llm.budgets, &env).map(|p| Some((p, config))))
}

/// Defaults < the config file < `-c key=value` (dotted keys, YAML values).
fn load(file: Option<&Path>, sets: &[String]) -> anyhow::Result<Config> {
    let mut value = match file {
        Some(f) => {
            let text = dandori_fs::read_to_string(f)?;
            let v: serde_json::Value = serde_yaml::from_str(&text)
                .with_context(|| format!("CONFIG_INVALID: parsing {}", f.display()))?;
            if v.is_null() {
                serde_json::json!({})
            } else {
                v
            }
        }
        None => serde_json::json!({}),
    };
    for s in sets {
        let (key, raw) = s
            .split_once('=')
            .with_context(|| format!("CONFIG_INVALID: -c {s}: expected KEY=VALUE"))?;
        let parsed: serde_json::Value = serde_yaml::from_str(raw)
            .unwrap_or_else(|_| serde_json::Value::String(raw.to_string()));
        let mut cur = &mut value;
        let parts: Vec<&str> = key.split('.').collect();
        for (i, p) in parts.iter().enumerate() {
            let obj = cur.as_object_mut().with_context(|| {
                format!("CONFIG_INVALID: -c {key}: `{p}` is not inside a section")
            })?;
            if i + 1 == parts.len() {
                obj.insert(p.to_string(), parsed.clone());
                break;
            }
            cur = obj
                .entry(p.to_string())
                .or_insert_with(|| serde_json::json!({}));
        }
    }
    let origin = file.map_or_else(|| "-c overrides".to_string(), |f| f.display().to_string());
    serde_json::from_value(value).with_context(|| format!("CONFIG_INVALID: {origin}"))
}
