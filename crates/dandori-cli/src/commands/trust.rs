//! `dandori trust [DIR]`, `--list`, `--remove`: the user-level config's
//! `trusted_projects` (see `dandori_config::trust`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use serde_json::json;

use crate::cli::TrustArgs;
use crate::output;

pub fn trust(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let Some(file) = dandori_config::trust::user_config_path(&env) else {
        output::error(&format!(
            "CONFIG_INVALID: no user config location: set {}, XDG_CONFIG_HOME or HOME to an absolute path",
            dandori_config::trust::DANDORI_CONFIG_HOME
        ));
        return Ok(ExitCode::from(2));
    };
    let config_err = |e: dandori_config::ConfigError| anyhow::anyhow!("CONFIG_INVALID: {e}");
    if args.list {
        let list = dandori_config::trust::list_trusted(&file).map_err(config_err)?;
        if args.json {
            output::json(&json!({"user_config": file, "trusted_projects": list}));
        } else {
            for p in &list {
                output::line(&p.display().to_string());
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let dir: PathBuf = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    if args.remove {
        let removed = dandori_config::trust::remove_trusted(&file, &dir).map_err(config_err)?;
        report(args.json, &file, &dir, "removed", removed);
        return Ok(if removed {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    let (entry, new) = dandori_config::trust::add_trusted(&file, &dir).map_err(config_err)?;
    report(args.json, &file, &entry, "trusted", new);
    Ok(ExitCode::SUCCESS)
}

fn report(json: bool, file: &Path, dir: &Path, action: &str, changed: bool) {
    if json {
        output::json(&json!({"user_config": file, "directory": dir,
                             "action": action, "changed": changed}));
        return;
    }
    let what = match (action, changed) {
        ("trusted", true) => "trusted",
        ("trusted", false) => "already trusted",
        (_, true) => "no longer trusted",
        (_, false) => "was not trusted",
    };
    output::line(&format!("{what}: {} ({})", dir.display(), file.display()));
}
