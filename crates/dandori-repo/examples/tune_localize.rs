#![allow(clippy::print_stdout, clippy::unwrap_used)]
// Tuning harness (not committed): one index per instance, many weight sets.
use dandori_repo::eval::{load_dataset, ranking};
use dandori_repo::retrieval::{Index, QueryWeights, RankingWeights, analyze_with};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let insts = load_dataset(a[1].as_ref()).unwrap();
    let repos = std::path::PathBuf::from(&a[2]);
    let configs: Vec<(String, RankingWeights, QueryWeights)> =
        serde_json::from_str(&std::fs::read_to_string(&a[3]).unwrap()).unwrap();
    let mut sums = vec![[0f64; 4]; configs.len()];
    let mut n = 0;
    let mut misses: Vec<String> = Vec::new();
    for inst in &insts {
        let dir = repos.join(&inst.instance_id);
        if !dir.is_dir() {
            continue;
        }
        let scan = dandori_repo::scan(&dir, &Default::default()).unwrap();
        let mut index = Index::build(&scan);
        n += 1;
        for (ci, (_, w, qw)) in configs.iter().enumerate() {
            let q = analyze_with(&inst.problem_statement, qw);
            index.set_weights(*w);
            let hits = index.search_analyzed(&q, 10);
            let r = ranking(&hits, &inst.patched_files);
            let k = r.first_hit.unwrap_or(99);
            sums[ci][0] += (k <= 1) as u8 as f64;
            sums[ci][1] += (k <= 5) as u8 as f64;
            sums[ci][2] += (k <= 10) as u8 as f64;
            sums[ci][3] += r.target_recall;
            if ci == 0 && k != 1 {
                misses.push(format!(
                    "{} rank {:?} want {:?} got {:?}",
                    inst.instance_id,
                    r.first_hit,
                    inst.patched_files,
                    &r.ranked[..r.ranked.len().min(3)]
                ));
            }
        }
    }
    for (ci, (name, _, _)) in configs.iter().enumerate() {
        let s = sums[ci];
        println!(
            "{name:<24} n={n} h1={:.3} h5={:.3} h10={:.3} rec={:.3}",
            s[0] / n as f64,
            s[1] / n as f64,
            s[2] / n as f64,
            s[3] / n as f64
        );
    }
    if let Some(p) = a.get(4) {
        std::fs::write(p, misses.join("\n")).unwrap();
    }
}
