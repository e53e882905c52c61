//! `dandori cache list|clear`: the plan cache of a repository (seed 000 §12.2.2),
//! over `dandori_planner::llm::cache`.

use std::path::Path;
use std::process::ExitCode;

use dandori_planner::llm::cache::{self, PlanCache};
use dandori_planner::llm::cache_seal::{Seal, key_path};

use crate::cli::CacheCommand;
use crate::output;

pub fn cache(
    config: Option<&Path>,
    sets: &[String],
    cmd: CacheCommand,
) -> anyhow::Result<ExitCode> {
    let env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    let (args, expired_only) = match &cmd {
        CacheCommand::List(a) => (a, false),
        CacheCommand::Clear(a) => (&a.common, a.expired),
    };
    let loaded = super::load_config(config, sets, &args.repo, &env)?;
    let cfg = &loaded.config.planning.cache;
    let dir = cache::cache_dir(cfg, &args.repo);
    let open = || -> anyhow::Result<PlanCache> {
        let key = key_path(&|k| env.get(k).cloned())
            .ok_or(dandori_planner::llm::cache_seal::SealError::NoDataDir)?;
        let seal = Seal::open_or_create(&key, &args.repo)?;
        Ok(PlanCache::new(
            dir.clone(),
            cfg.ttl,
            cfg.similarity_threshold,
            seal,
        ))
    };
    match cmd {
        CacheCommand::List(_) => {
            let listed = open()?.list();
            if args.json {
                output::json(&serde_json::json!({"dir": dir, "ttl": cfg.ttl, "entries": listed}));
            } else if listed.is_empty() {
                output::line(&format!("no cached plans in {}", dir.display()));
            } else {
                for e in &listed {
                    let age = e
                        .age_secs
                        .map_or_else(|| "unreadable".to_string(), |a| format!("{a}s old"));
                    output::line(&format!(
                        "{}  {age}{}  {}  {}",
                        e.entry,
                        if e.expired { " (expired)" } else { "" },
                        e.planner.as_deref().unwrap_or("-"),
                        e.request.as_deref().unwrap_or("-"),
                    ));
                }
            }
        }
        CacheCommand::Clear(_) => {
            let value = if expired_only {
                serde_json::to_value(open()?.sweep(usize::MAX))?
            } else {
                serde_json::json!({"removed": cache::clear(&dir)?})
            };
            if args.json {
                output::json(&value);
            } else {
                output::line(&format!(
                    "removed {} cached plan(s) from {}",
                    value["removed"],
                    dir.display()
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
