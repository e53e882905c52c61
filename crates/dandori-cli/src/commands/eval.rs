//! `dandori eval localize`: file-level localisation of SWE-bench-format instances
//! with the scan and retrieval the planner uses, beside an optional baseline.

use std::process::ExitCode;

use anyhow::Context;
use dandori_repo::ScanOptions;
use dandori_repo::eval::{self, LocalizeOptions, LocalizeReport, Metrics, Progress, Split};

use crate::cli::{LocalizeArgs, LocalizeBaseline, LocalizeSplit};
use crate::output;

pub fn localize(args: &LocalizeArgs) -> anyhow::Result<ExitCode> {
    let options = LocalizeOptions {
        dataset: args.dataset.clone(),
        repos: args.repos.clone(),
        baseline: matches!(args.baseline, Some(LocalizeBaseline::Bm25)),
        limit: args.limit,
        scan: ScanOptions::default(),
        split: match args.split {
            LocalizeSplit::All => Split::All,
            LocalizeSplit::Tune => Split::Tune,
            LocalizeSplit::HeldOut => Split::HeldOut,
        },
    };
    // Progress goes to stderr also with --json: a run takes minutes.
    let report = eval::run(&options, &mut |p| match p {
        Progress::Instance {
            index,
            total,
            instance_id,
        } => output::progress(&format!("[{}/{total}] {instance_id}", index + 1)),
        Progress::Skipped {
            instance_id,
            reason,
        } => output::progress(&format!("skipped {instance_id}: {reason}")),
    })
    .with_context(|| format!("evaluating {}", args.dataset.display()))?;

    if args.json {
        output::json(&report);
    } else {
        print_table(&report);
    }
    Ok(if report.evaluated == 0 {
        output::error("no instance could be evaluated");
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn print_table(report: &LocalizeReport) {
    let repos: Vec<String> = report
        .by_repo
        .iter()
        .map(|(r, n)| format!("{r} {n}"))
        .collect();
    output::line(&format!(
        "{}: {} instances evaluated, {} skipped ({})",
        report.dataset,
        report.evaluated,
        report.skipped,
        repos.join(", ")
    ));
    output::line(&format!(
        "{:<10} {:>7} {:>7} {:>7} {:>14} {:>12}",
        "method", "hit@1", "hit@5", "hit@10", "target recall", "avg targets"
    ));
    let row = |name: &str, m: &Metrics| {
        output::line(&format!(
            "{:<10} {:>7.3} {:>7.3} {:>7.3} {:>14.3} {:>12.2}",
            name, m.hit_at_1, m.hit_at_5, m.hit_at_10, m.target_recall, m.mean_target_paths
        ));
    };
    row("dandori", &report.dandori);
    if let Some(b) = &report.baseline {
        row("bm25", b);
    }
    let l = &report.latency;
    output::line(&format!(
        "per request: ranking p50 {:.1} ms, p95 {:.1} ms; scan + index + ranking p50 {:.0} ms, p95 {:.0} ms",
        l.query_p50_ms, l.query_p95_ms, l.request_p50_ms, l.request_p95_ms
    ));
    if report.per_repo.len() > 1 {
        for (repo, m) in &report.per_repo {
            output::line(&format!("{repo} ({})", m.dandori.instances));
            row("  dandori", &m.dandori);
            if let Some(b) = &m.baseline {
                row("  bm25", b);
            }
        }
    }
}
