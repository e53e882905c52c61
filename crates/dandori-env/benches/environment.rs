//! Benchmarks of the environment sub-phase:
//! * `detection/analyze_50k`: the analyser walking a generated 50 000-file tree;
//!   `detection/analyze_paths_50k`: the same tree given as a path list (the
//!   planner's scan reused).
//! * `setup/first` (a forced setup of a small npm project: `npm ci` and
//!   verification) against `setup/second_unchanged` (the same project, unchanged:
//!   a cache hit). The ratio of the two is the figure to report.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_config::AnalysisConfig;
use dandori_env::setup::{self, SetupOptions};
use dandori_env::{Toolchain, analyze, analyze_paths, select_environment_with};

fn generate_tree(root: &Path) -> Vec<String> {
    let mut paths = Vec::with_capacity(50_000);
    for a in 0..50 {
        for b in 0..10 {
            let dir = format!("pkg{a:02}/mod{b}");
            std::fs::create_dir_all(root.join(&dir)).unwrap();
            for c in 0..100 {
                let name = match (a, b, c) {
                    (0, 0, 0) => "package.json".to_string(),
                    (1, 0, 0) => "requirements.txt".to_string(),
                    (_, _, 0) if a % 10 == 2 && b == 0 => "go.mod".to_string(),
                    _ => format!("file{c:03}.{}", ["py", "ts", "go", "md"][c % 4]),
                };
                let content = match name.as_str() {
                    "package.json" => "{\"name\": \"x\", \"dependencies\": {\"a\": \"1\"}}",
                    "requirements.txt" => "requests\n",
                    "go.mod" => "module example.com/x\n\ngo 1.22\n",
                    _ => "x\n",
                };
                std::fs::write(root.join(&dir).join(&name), content).unwrap();
                paths.push(format!("{dir}/{name}"));
            }
        }
    }
    paths
}

fn detection(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let paths = generate_tree(dir.path());
    assert_eq!(paths.len(), 50_000);
    let cfg = AnalysisConfig::default();
    let a = analyze(dir.path(), &cfg);
    assert_eq!(a.files_scanned, 50_000);
    let mut g = c.benchmark_group("detection");
    g.sample_size(10);
    g.bench_function("analyze_50k", |b| b.iter(|| analyze(dir.path(), &cfg)));
    g.bench_function("analyze_paths_50k", |b| {
        b.iter(|| analyze_paths(dir.path(), &paths))
    });
    g.finish();
}

fn setup_reuse(c: &mut Criterion) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/real_node");
    let dir = tempfile::tempdir().unwrap();
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(src.join(f), dir.path().join(f)).unwrap();
    }
    let a = analyze(dir.path(), &AnalysisConfig::default());
    let sel = select_environment_with(&a, None, &Toolchain::from_process());
    let first = setup::run(&sel, &SetupOptions::new(dir.path())).unwrap();
    assert!(!first.setup_result.reused);
    let mut g = c.benchmark_group("setup");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("first", |b| {
        b.iter(|| {
            let mut o = SetupOptions::new(dir.path());
            o.force = true;
            let out = setup::run(&sel, &o).unwrap();
            assert!(!out.setup_result.reused);
        })
    });
    g.bench_function("second_unchanged", |b| {
        b.iter(|| {
            let out = setup::run(&sel, &SetupOptions::new(dir.path())).unwrap();
            assert!(out.setup_result.reused);
        })
    });
    g.finish();
}

criterion_group!(benches, detection, setup_reuse);
criterion_main!(benches);
