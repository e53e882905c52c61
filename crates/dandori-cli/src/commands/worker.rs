//! `dandori worker --listen ADDR`: serves the step handler of distributed runs
//! (`dandori_distributed::worker`) until killed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::WorkerArgs;
use crate::output;

pub fn worker(
    config: Option<&Path>,
    sets: &[String],
    args: &WorkerArgs,
) -> anyhow::Result<ExitCode> {
    let base_env: BTreeMap<String, String> = std::env::vars().collect();
    dandori_fs::create_dir_all(&args.work_dir)?;
    let work_dir = dandori_fs::canonicalize(&args.work_dir)?;
    let loaded = super::load_config(config, sets, &work_dir, &base_env)?;
    for w in &loaded.warnings {
        output::progress(&format!("config: {w}"));
    }
    let executor =
        super::run::executor_choice(args.executor, args.agent_cmd.as_deref(), args.agent);
    let identity_keys = dandori_distributed::identity::keys(
        &args.identity_key,
        base_env
            .get(dandori_distributed::identity::IDENTITY_KEYS_ENV)
            .map(String::as_str),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let verified = !identity_keys.is_empty();
    let opts = dandori_distributed::WorkerOptions {
        work_dir,
        config: loaded.config,
        executor,
        approve: args.approve,
        base_env,
        progress: Some(Arc::new(|line: &str| output::progress(line))),
        identity_keys,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| anyhow::anyhow!("--listen {}: {e}", args.listen))?;
        let addr = listener.local_addr()?;
        let serving = tokio::spawn(dandori_distributed::serve(listener, opts));
        output::progress(&format!(
            "worker: serving DandoriStep and DandoriRun on {addr}{}",
            if verified {
                " (only requests signed by the Restate server of the identity keys)"
            } else {
                " (request identity not checked: expose it to the Restate server only)"
            }
        ));
        if let Some(admin) = &args.register {
            let url = args
                .advertise
                .clone()
                .unwrap_or_else(|| format!("http://{addr}"));
            let client =
                dandori_distributed::admin::client().map_err(|e| anyhow::anyhow!("{e}"))?;
            dandori_distributed::admin::register(&client, admin, &url)
                .await
                .map_err(|e| {
                    if verified {
                        anyhow::anyhow!(
                            "{e} (this worker answers only requests signed with its identity key: is the server's request-identity-private-key-pem-file the key's pair?)"
                        )
                    } else {
                        anyhow::anyhow!("{e}")
                    }
                })?;
            output::progress(&format!("worker: registered {url} with {admin}"));
        }
        serving.await?.map_err(|e| anyhow::anyhow!("{e}"))?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
