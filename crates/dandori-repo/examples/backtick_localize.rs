//! First-stage localisation (`rerank = 0`) with `QueryWeights::double_backtick_spans`
//! off and on, on one checkout and one index per instance: hit@1/5/10 of each
//! and the first hit of every instance. Used for docs/retrieval.md (issue 26
//! session 3).
//!
//! `cargo run --release -p dandori-repo --example backtick_localize -- DATASET REPOS [tune|held-out|all] [LIMIT]`

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::path::PathBuf;

use dandori_repo::eval::{Checkout, Split, load_dataset, ranking};
use dandori_repo::retrieval::{Index, QueryWeights, RankingWeights, analyze_with};
use dandori_repo::{ScanOptions, scan};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(dataset), Some(repos)) = (args.first(), args.get(1)) else {
        eprintln!("usage: backtick_localize DATASET REPOS [tune|held-out|all] [LIMIT]");
        return std::process::ExitCode::from(2);
    };
    let split = match args.get(2).map(String::as_str) {
        None | Some("tune") => Split::Tune,
        Some("held-out") => Split::HeldOut,
        Some(_) => Split::All,
    };
    let limit = args.get(3).and_then(|l| l.parse::<usize>().ok());
    let mut instances = match load_dataset(&PathBuf::from(dataset)) {
        Ok(i) => split.select(i),
        Err(e) => {
            eprintln!("{e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    if let Some(l) = limit {
        instances.truncate(l);
    }
    let off = QueryWeights::default();
    let on = QueryWeights {
        double_backtick_spans: 1.0,
        ..QueryWeights::default()
    };
    let mut hits = [[0usize; 3]; 2];
    let mut n = 0usize;
    let total = instances.len();
    for (i, inst) in instances.iter().enumerate() {
        eprintln!("[{}/{total}] {}", i + 1, inst.instance_id);
        let checkout = match Checkout::prepare(&PathBuf::from(repos), inst) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipped {}: {e}", inst.instance_id);
                continue;
            }
        };
        let repo_scan = match scan(checkout.path(), &ScanOptions::default()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("skipped {}: {e}", inst.instance_id);
                continue;
            }
        };
        let mut index = Index::build(&repo_scan);
        index.set_weights(RankingWeights {
            rerank: 0.0,
            ..RankingWeights::default()
        });
        n += 1;
        let mut first = [None; 2];
        for (k, qw) in [&off, &on].into_iter().enumerate() {
            let q = analyze_with(&inst.problem_statement, qw);
            let r = ranking(&index.search_analyzed(&q, 10), &inst.patched_files);
            first[k] = r.first_hit;
            for (j, cut) in [1, 5, 10].into_iter().enumerate() {
                if r.first_hit.is_some_and(|h| h <= cut) {
                    hits[k][j] += 1;
                }
            }
        }
        let show = |h: Option<usize>| h.map_or("-".to_string(), |h| h.to_string());
        println!(
            "{}\t{}\toff={}\ton={}",
            inst.instance_id,
            inst.repo,
            show(first[0]),
            show(first[1])
        );
    }
    let d = n.max(1) as f64;
    for (k, name) in ["off", "on"].into_iter().enumerate() {
        println!(
            "{name}: n={n} hit@1={:.3} hit@5={:.3} hit@10={:.3}",
            hits[k][0] as f64 / d,
            hits[k][1] as f64 / d,
            hits[k][2] as f64 / d
        );
    }
    std::process::ExitCode::SUCCESS
}
