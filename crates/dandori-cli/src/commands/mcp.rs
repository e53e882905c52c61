//! `dandori mcp [--tools core|standard|all] [--http ADDR [--allow-remote]]`: a thin adapter over
//! `dandori_mcp::DandoriServer`. The host gives the server the same environment
//! phase as `dandori run` and the same planner choice as `dandori plan`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use dandori_config::{Config, Loaded};
use dandori_env::plugins::Registry;
use dandori_mcp::{DandoriServer, Host, ServiceOptions, ToolSet};
use dandori_planner::llm::provider::ProviderFlags;
use dandori_planner::{DraftPlanner, PlannerError};
use dandori_runner::environment::EnvironmentPhase;

use crate::cli::{McpArgs, McpToolSet};
use crate::output;

struct CliHost {
    config: Option<PathBuf>,
    sets: Vec<String>,
    base_env: BTreeMap<String, String>,
}

impl Host for CliHost {
    fn config(&self, repo: &Path) -> Result<Loaded, String> {
        super::load_config(self.config.as_deref(), &self.sets, repo, &self.base_env)
            .map_err(|e| format!("{e:#}"))
    }

    fn environment(&self, config: &Config) -> Option<Arc<dyn EnvironmentPhase>> {
        Some(Arc::new(super::env::EnvPhase::new(config, &self.base_env)))
    }

    fn environment_plugins(&self, config: &Config, repo: &Path) -> Registry {
        super::env::plugins(config, repo)
    }

    fn planner(&self, loaded: &Loaded) -> Result<Option<Box<dyn DraftPlanner>>, PlannerError> {
        Ok(
            super::plan_llm::select(&ProviderFlags::default(), loaded, &self.base_env)?
                .map(|p| Box::new(p) as Box<dyn DraftPlanner>),
        )
    }
}

pub fn mcp(config: Option<&Path>, sets: &[String], args: &McpArgs) -> anyhow::Result<ExitCode> {
    let set = match args.tools {
        McpToolSet::Core => ToolSet::Core,
        McpToolSet::Standard => ToolSet::Standard,
        McpToolSet::All => ToolSet::All,
    };
    if args.list {
        for t in dandori_mcp::tools::tools(set) {
            output::line(&format!(
                "{:<12} {}",
                t.name,
                t.description.as_deref().unwrap_or("")
            ));
        }
        output::line(&format!(
            "{} tools, {} characters of schemas",
            dandori_mcp::tools::tools(set).len(),
            dandori_mcp::tools::schema_chars(set)
        ));
        return Ok(ExitCode::SUCCESS);
    }
    // Model calls report on stderr (the log of an MCP client), and through the
    // server's `notifications/progress` to a client that asked for them.
    super::model_progress::install(false);
    let base_env: BTreeMap<String, String> = std::env::vars().collect();
    // The bearer token stays in base_env on purpose: a secret by its name, children
    // never get it and the runner masks its value wherever it would be written.
    let token = base_env
        .get(dandori_mcp::http::TOKEN_ENV)
        .filter(|t| !t.is_empty())
        .cloned();
    let http = match &args.http {
        Some(addr) => {
            let opts = dandori_mcp::http::parse_addr(addr)
                .and_then(|addr| {
                    dandori_mcp::http::check_bind(addr, args.allow_remote, token.as_deref())
                        .map(|()| addr)
                })
                .map(|addr| dandori_mcp::http::HttpOptions {
                    addr,
                    token,
                    allow_remote: args.allow_remote,
                });
            match opts {
                Ok(o) => Some(o),
                Err(e) => {
                    output::error(&e.to_string());
                    return Ok(ExitCode::from(2));
                }
            }
        }
        None => None,
    };
    let server = DandoriServer::new(
        set,
        ServiceOptions {
            cwd: std::env::current_dir()?,
            base_env: base_env.clone(),
            host: Arc::new(CliHost {
                config: config.map(Path::to_path_buf),
                sets: sets.to_vec(),
                base_env,
            }),
        },
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    match http {
        None => rt
            .block_on(server.serve_stdio())
            .map_err(|e| anyhow::anyhow!("{e}"))?,
        Some(opts) => {
            let served = rt.block_on(server.serve_http(opts, |bound| {
                output::progress(&format!(
                    "dandori mcp: listening on http://{bound}{}",
                    dandori_mcp::http::ENDPOINT
                ))
            }));
            if let Err(e) = served {
                output::error(&e.to_string());
                rt.shutdown_background();
                return Ok(ExitCode::from(2));
            }
        }
    }
    // Runs still waiting for this client stay resumable from stage.json.
    rt.shutdown_background();
    Ok(ExitCode::SUCCESS)
}
