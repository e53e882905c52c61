//! The environment tools: `env_detect` (seed 002 §3, through the ecosystem
//! registry of built-ins and plugins) and `env_setup` (the run's environment
//! sub-phase, as `dandori run` does it).

use serde_json::{Map, Value, json};

use super::{Service, file_uri, opt_str};
use crate::error::{McpError, reason};

impl Service {
    pub(super) fn env_detect(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let repo = dandori_fs::canonicalize(self.repo(args)?)?;
        let loaded = self.load(&repo)?;
        // Through the same registry as `dandori env detect` and `plan`: the
        // built-in ecosystems and the plugins found for the repository.
        let analysis = self
            .opts
            .host
            .environment_plugins(&loaded.config, &repo)
            .analyze(&repo, &loaded.config.planning.environment_setup.analysis);
        // The commands setup will run, with the tools it runs them with: this
        // server's PATH and dandori's tool cache, plus the package manager the
        // bootstrap installs (as `dandori env detect`).
        let selected = dandori_env::phase::select_expected(
            &analysis,
            opt_str(args, "language")?,
            &self.opts.base_env,
        );
        Ok(json!({
            "selected": selected,
            "ecosystems": analysis.ecosystem_names(),
        }))
    }

    /// The environment sub-phase of a planned run, as `dandori run` does it before
    /// the first step (same policy, sandbox and records under
    /// `<run>/environment/`); the run reuses the result when its fingerprint holds.
    pub(super) fn env_setup(&self, args: &Map<String, Value>) -> Result<Value, McpError> {
        let run_dir = self.stopped_run_dir(
            args,
            "the run is executing; its environment was prepared when it started",
        )?;
        let repo = dandori_fs::canonicalize(self.run_repo(args, &run_dir)?)?;
        let loaded = self.load(&repo)?;
        let Some(phase) = self.opts.host.environment(&loaded.config) else {
            return Err(McpError::invalid(
                reason::ENVIRONMENT_FAILED,
                "this server has no environment phase",
            ));
        };
        let r = phase
            .prepare(&repo, &run_dir)
            .map_err(|e| McpError::path(reason::ENVIRONMENT_FAILED, &run_dir, e))?;
        // As the runner does: the masked summary the step prompts carry.
        let summary = dandori_runner::environment::summary_path(&run_dir);
        let masker = dandori_runner::coordinator::masker_for(&loaded.config, &self.opts.base_env);
        dandori_fs::write_atomic(&summary, masker.mask_str(&r.summary))?;
        Ok(json!({
            "status": r.status,
            "message": r.message,
            "setup_record": r.setup_record.as_deref().map(file_uri),
            "summary": file_uri(&summary),
            "details": r.details,
        }))
    }
}
