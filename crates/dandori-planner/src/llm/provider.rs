//! Which provider `dandori plan` uses: `--provider NAME` from config
//! (`llm.providers[].name`), an ad-hoc endpoint (`--provider openai|anthropic
//! --base-url URL --model NAME [--api-key-env VAR]`, no config file needed), or
//! `llm.default_provider`; none of them → the offline planner. An installed agent
//! CLI needs no config either: `--provider claude-cli|codex-cli|gemini-cli
//! [--model NAME]`.

use dandori_config::{AgentCliConfig, AgentCliPreset, LlmConfig, ProviderConfig, ProviderKind};

use crate::error::PlannerError;

/// The `dandori plan` flags about providers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProviderFlags {
    pub provider: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
}

/// Default key variable of an ad-hoc Anthropic endpoint (Anthropic always needs
/// one); ad-hoc OpenAI-compatible endpoints (Ollama, vLLM, llama.cpp) get none
/// unless `--api-key-env` says so.
pub const ANTHROPIC_DEFAULT_KEY_ENV: &str = "ANTHROPIC_API_KEY";

pub fn resolve(
    llm: &LlmConfig,
    flags: &ProviderFlags,
) -> Result<Option<ProviderConfig>, PlannerError> {
    let err = |message: String| PlannerError::Provider { message };
    let name = match (&flags.provider, &llm.default_provider) {
        (Some(n), _) => n.clone(),
        (None, Some(n)) if flags.base_url.is_none() && flags.model.is_none() => n.clone(),
        (None, _) => {
            if flags.base_url.is_some() || flags.model.is_some() || flags.api_key_env.is_some() {
                return Err(err(
                    "--base-url / --model / --api-key-env need --provider (a configured name, or openai / anthropic)"
                        .to_string(),
                ));
            }
            return Ok(None);
        }
    };
    let mut provider = match llm.providers.iter().find(|p| p.name == name) {
        Some(p) => p.clone(),
        None if agent_cli_preset(&name).is_some() => {
            if flags.base_url.is_some() || flags.api_key_env.is_some() {
                return Err(err(format!(
                    "the agent CLI provider `{name}` takes no --base-url / --api-key-env (the CLI signs in by itself)"
                )));
            }
            let mut p = ProviderConfig::new(&name, ProviderKind::AgentCli, "", "");
            p.agent_cli = Some(AgentCliConfig {
                preset: agent_cli_preset(&name).unwrap_or_default(),
                command: Vec::new(),
                extra_args: Vec::new(),
                output: None,
            });
            // One attempt and a long limit: an agent CLI call takes minutes.
            p.request_timeout_secs = 600;
            p.max_retries = 1;
            p
        }
        None => {
            let kind = match name.as_str() {
                "openai" => ProviderKind::Openai,
                "anthropic" => ProviderKind::Anthropic,
                _ => {
                    let known: Vec<&str> = llm.providers.iter().map(|p| p.name.as_str()).collect();
                    return Err(err(format!(
                        "`{name}` is not a provider in config (llm.providers: {}) nor `openai` / `anthropic` / `claude-cli` / `codex-cli` / `gemini-cli`",
                        if known.is_empty() {
                            "none".to_string()
                        } else {
                            known.join(", ")
                        }
                    )));
                }
            };
            let (Some(base_url), Some(model)) = (&flags.base_url, &flags.model) else {
                return Err(err(format!(
                    "the ad-hoc provider `{name}` needs --base-url URL and --model NAME"
                )));
            };
            let mut p = ProviderConfig::new(&name, kind, base_url, model);
            p.api_key_env = match kind {
                ProviderKind::Anthropic => Some(ANTHROPIC_DEFAULT_KEY_ENV.to_string()),
                ProviderKind::Openai | ProviderKind::AgentCli => None,
            };
            p
        }
    };
    if let Some(url) = &flags.base_url {
        provider.base_url = url.clone();
    }
    if let Some(model) = &flags.model {
        provider.model = model.clone();
    }
    if let Some(var) = &flags.api_key_env {
        provider.api_key_env = Some(var.clone());
    }
    Ok(Some(provider))
}

/// The preset of an ad-hoc agent CLI provider name.
pub fn agent_cli_preset(name: &str) -> Option<AgentCliPreset> {
    match name {
        "claude-cli" => Some(AgentCliPreset::Claude),
        "codex-cli" => Some(AgentCliPreset::Codex),
        "gemini-cli" => Some(AgentCliPreset::Gemini),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn flags(provider: Option<&str>, url: Option<&str>, model: Option<&str>) -> ProviderFlags {
        ProviderFlags {
            provider: provider.map(str::to_string),
            base_url: url.map(str::to_string),
            model: model.map(str::to_string),
            api_key_env: None,
        }
    }

    #[test]
    fn configured_ad_hoc_default_and_errors() {
        let mut llm = LlmConfig::default();
        assert_eq!(resolve(&llm, &flags(None, None, None)).unwrap(), None);
        let mut local = ProviderConfig::new(
            "local",
            ProviderKind::Openai,
            "http://localhost:11434/v1",
            "qwen2.5-coder",
        );
        local.api_key_env = None;
        llm.providers.push(local.clone());
        assert_eq!(
            resolve(&llm, &flags(Some("local"), None, None)).unwrap(),
            Some(local.clone())
        );
        let mut overridden = local.clone();
        overridden.model = "llama3.1".into();
        assert_eq!(
            resolve(&llm, &flags(Some("local"), None, Some("llama3.1"))).unwrap(),
            Some(overridden)
        );
        llm.default_provider = Some("local".into());
        assert_eq!(
            resolve(&llm, &flags(None, None, None)).unwrap(),
            Some(local)
        );

        let adhoc = resolve(
            &llm,
            &flags(
                Some("anthropic"),
                Some("https://api.anthropic.com/v1"),
                Some("claude-sonnet-4-5"),
            ),
        )
        .unwrap()
        .unwrap();
        assert_eq!(adhoc.kind, ProviderKind::Anthropic);
        assert_eq!(adhoc.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
        let mut with_key = flags(Some("openai"), Some("http://127.0.0.1:8000/v1"), Some("m"));
        with_key.api_key_env = Some("VLLM_KEY".into());
        assert_eq!(
            resolve(&llm, &with_key)
                .unwrap()
                .unwrap()
                .api_key_env
                .as_deref(),
            Some("VLLM_KEY")
        );

        let e = resolve(&llm, &flags(Some("openai"), None, Some("m"))).unwrap_err();
        assert_eq!(
            e.to_string(),
            "LLM provider: the ad-hoc provider `openai` needs --base-url URL and --model NAME"
        );
        let e = resolve(&llm, &flags(Some("nope"), None, None)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "LLM provider: `nope` is not a provider in config (llm.providers: local) nor `openai` / `anthropic` / `claude-cli` / `codex-cli` / `gemini-cli`"
        );
        assert_eq!(e.code(), "LLM_PROVIDER_INVALID");
        let e = resolve(&LlmConfig::default(), &flags(None, Some("http://x"), None)).unwrap_err();
        assert!(e.to_string().contains("need --provider"));
    }
}
