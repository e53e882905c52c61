//! `dandori locate`: the files the planner would look at for a request, ranked
//! with their scores and the reasons (for users, and for diagnosing misses).

use std::process::ExitCode;

use dandori_repo::{Index, ScanOptions, target_paths_for};
use serde_json::json;

use crate::cli::LocateArgs;
use crate::output;

pub fn locate(args: &LocateArgs) -> anyhow::Result<ExitCode> {
    let text = match (&args.text, &args.file) {
        (Some(t), None) => t.clone(),
        (None, Some(f)) => match dandori_fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                output::error(&format!("REQUEST_UNREADABLE: {e}"));
                return Ok(ExitCode::from(2));
            }
        },
        _ => {
            output::error("REQUEST_INVALID: give the text or --file FILE");
            return Ok(ExitCode::from(2));
        }
    };
    if text.trim().is_empty() {
        output::error("REQUEST_EMPTY: the text is empty");
        return Ok(ExitCode::from(2));
    }
    if !args.repo.is_dir() {
        output::error(&format!(
            "REPO_NOT_FOUND: {} does not exist or is not a directory",
            args.repo.display()
        ));
        return Ok(ExitCode::from(2));
    }
    let scan = match dandori_repo::scan(&args.repo, &ScanOptions::default()) {
        Ok(s) => s,
        Err(e) => {
            output::error(&format!("{e}"));
            return Ok(ExitCode::from(1));
        }
    };
    let index = Index::build(&scan);
    let hits = index.search(&text, args.limit);
    let targets = target_paths_for(&hits);
    if args.json {
        output::json(&json!({
            "repo": args.repo.display().to_string(),
            "files": scan.files.len(),
            "hits": hits,
            "target_paths": targets,
        }));
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        output::line(&format!("no file of {} matches the text", scan.files.len()));
        return Ok(ExitCode::SUCCESS);
    }
    for (i, h) in hits.iter().enumerate() {
        let mark = if targets.contains(&h.path) { "*" } else { " " };
        let reasons = if h.reasons.is_empty() {
            "words in common".to_string()
        } else {
            h.reasons.join("; ")
        };
        output::line(&format!(
            "{:>2}{mark} {:>6.3}  {}  ({reasons})",
            i + 1,
            h.score,
            h.path
        ));
    }
    output::line(&format!(
        "* = target paths a step would get ({} of {} files searched)",
        targets.len(),
        scan.files.len()
    ));
    Ok(ExitCode::SUCCESS)
}
