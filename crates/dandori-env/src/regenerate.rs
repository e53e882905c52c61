//! Regeneration of failed setup commands by a model (seed 002 §5.2, §9.2.2): the
//! failed command, its output and the error analysis go to the configured
//! provider (`llm.default_provider`), which answers with replacement commands.
//! The caller (`setup::run`) applies the command policy to every proposed
//! command and the `regeneration.max_retries` budget, and records each attempt.

use dandori_config::LlmConfig;
use dandori_llm::{ChatRequest, Client, Message, Phase};
use dandori_trace::Masker;

use crate::EnvError;
use crate::setup::{CommandRegenerator, RegeneratedCommands, RegenerationRequest};

const SYSTEM: &str = "You repair the environment setup commands of a software repository. \
You are given a setup command that failed, the end of its output, an analysis of the error and \
the planned commands. Answer with one JSON object only: \
{\"setup_commands\": [...], \"verification_commands\": [...], \"expected_results\": {...}}. \
The commands run with a POSIX shell from the repository root, one command per entry, and each \
is checked by a command policy: no sudo, no system package managers, no writes outside the \
repository, no global or user-level installs, no downloads piped into a shell, no background \
processes. Prefer the project's own package manager and its virtual environment \
(.venv, node_modules).";

/// A [`CommandRegenerator`] backed by a model provider.
pub struct LlmRegenerator {
    client: Client,
    masker: Masker,
}

impl std::fmt::Debug for LlmRegenerator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmRegenerator")
            .field("client", &self.client)
            .finish()
    }
}

impl LlmRegenerator {
    /// The regenerator of `llm.default_provider`; `Ok(None)` when no provider is
    /// configured. `env` looks up the API key variable.
    pub fn from_config(
        llm: &LlmConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<LlmRegenerator>, EnvError> {
        let Some(name) = llm.default_provider.as_deref() else {
            return Ok(None);
        };
        let provider = llm
            .providers
            .iter()
            .find(|p| p.name == name)
            .ok_or_else(|| EnvError::Regeneration {
                message: format!("llm.default_provider {name:?} is not among llm.providers"),
            })?;
        let client = Client::from_config(provider, &llm.budgets, env).map_err(|e| {
            EnvError::Regeneration {
                message: e.to_string(),
            }
        })?;
        let mut masker = Masker::default();
        if let Some(k) = client.secret() {
            masker = masker.with_literal_secrets([k.expose().to_string()]);
        }
        Ok(Some(LlmRegenerator { client, masker }))
    }

    /// Also hide these secrets from what is sent to the model.
    pub fn with_masker(mut self, masker: Masker) -> Self {
        if let Some(k) = self.client.secret() {
            self.masker = masker.with_literal_secrets([k.expose().to_string()]);
        } else {
            self.masker = masker;
        }
        self
    }
}

impl CommandRegenerator for LlmRegenerator {
    fn name(&self) -> String {
        let c = self.client.config();
        format!("llm:{}/{}", c.name, c.model)
    }

    fn regenerate(&self, request: &RegenerationRequest) -> Result<RegeneratedCommands, EnvError> {
        let prompt = self.masker.mask_str(&request.prompt());
        let chat = ChatRequest::new(
            Phase::Planning,
            vec![Message::system(SYSTEM), Message::user(prompt)],
        );
        let response = dandori_llm::block_on(self.client.chat(&chat))
            .map_err(|e| EnvError::Regeneration {
                message: format!("calling the model: {e}"),
            })?
            .map_err(|e| EnvError::Regeneration {
                message: format!("the model call failed: {e}"),
            })?;
        let mut parsed = RegeneratedCommands::parse(response.answer_text())?;
        parsed.source = self.name();
        Ok(parsed)
    }
}
