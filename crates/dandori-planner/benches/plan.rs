#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

//! Planning a generated 20 000-file repository end to end (`plan()`: scan,
//! retrieval index, offline draft, assembly, validation, writing the run
//! directory). Target: under 1 s. Peak RSS is printed from /proc/self/status.

use std::path::Path;
use std::time::Instant;

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_planner::{PlanOptions, Progress, RequestSource};

const PACKAGES: usize = 100;
const MODULES: usize = 180;
const TESTS_PER_PACKAGE: usize = 20;

/// 100 packages × (180 modules + 20 tests) = 20 000 Python files, plus manifests.
fn generate(root: &Path) {
    let domains = [
        "billing", "invoice", "customer", "order", "shipping", "payment", "catalog", "report",
        "auth", "session",
    ];
    for p in 0..PACKAGES {
        let pkg = format!("{}_{p:03}", domains[p % domains.len()]);
        let dir = root.join("src").join(&pkg);
        std::fs::create_dir_all(&dir).unwrap();
        for m in 0..MODULES {
            let name = format!(
                "{}_{m:03}",
                [
                    "model",
                    "service",
                    "handler",
                    "util",
                    "schema",
                    "repository"
                ][m % 6]
            );
            let body = format!(
                "\"\"\"{pkg}.{name}\"\"\"\n\nclass {cls}{m}:\n    def __init__(self, store):\n        self.store = store\n\n    def load_{pkg}(self, key):\n        return self.store.get(key)\n\n    def save_{pkg}(self, key, value):\n        self.store[key] = value\n        return value\n",
                cls = pkg.replace('_', "").to_uppercase()
            );
            std::fs::write(dir.join(format!("{name}.py")), body).unwrap();
        }
        let tdir = root.join("tests").join(&pkg);
        std::fs::create_dir_all(&tdir).unwrap();
        for t in 0..TESTS_PER_PACKAGE {
            let name = format!(
                "{}_{t:03}",
                [
                    "model",
                    "service",
                    "handler",
                    "util",
                    "schema",
                    "repository"
                ][t % 6]
            );
            std::fs::write(
                tdir.join(format!("test_{name}.py")),
                format!("def test_{name}():\n    assert True\n"),
            )
            .unwrap();
        }
    }
    std::fs::write(
        root.join("README.md"),
        "# shop\n\nA generated shop backend.\n",
    )
    .unwrap();
    std::fs::write(
        root.join("pyproject.toml"),
        "[project]\nname = \"shop\"\nversion = \"0.1.0\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(root.join("requests")).unwrap();
    std::fs::write(
        root.join("requests/RQ-BENCH.md"),
        "---\nid: RQ-BENCH\n---\n# Invoice discounts\n\nCustomers get discounts on invoices.\n\n## Requirements\n- Define a `Discount` model in the billing schema\n- Apply discounts when saving an invoice in the invoice service\n- Show discounts in the customer report handler\n- Add tests for the invoice service\n- Document discounts in the README\n\n## Acceptance criteria\n- Given a customer with a 10% discount, when an invoice is saved, then its total is reduced by 10%\n",
    )
    .unwrap();
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn bench(c: &mut Criterion) {
    let repo = tempfile::tempdir().unwrap();
    let t = Instant::now();
    generate(repo.path());
    eprintln!("generated 20 000-file repository in {:?}", t.elapsed());
    let runs = tempfile::tempdir().unwrap();
    let request = repo.path().join("requests/RQ-BENCH.md");

    // One run with the stage timings, from the library's progress callback.
    let marks = std::sync::Mutex::new(Vec::<(&'static str, Instant)>::new());
    let cb = |p: &Progress| {
        let name = match p {
            Progress::Scanning { .. } => "start",
            Progress::Scanned { .. } => "scan",
            Progress::Indexed { .. } => "index",
            Progress::Drafting { .. } => "gather (request hits, environment, run dir)",
            Progress::Assembling { .. } => "draft (offline planner)",
            Progress::Writing { .. } => "assemble (order, size, chunking, graph, validation)",
        };
        marks.lock().unwrap().push((name, Instant::now()));
    };
    let mut opts = PlanOptions::new(repo.path(), RequestSource::File(request.clone()));
    opts.runs_root = Some(runs.path().to_path_buf());
    opts.progress = Some(&cb);
    let t0 = Instant::now();
    let outcome = dandori_planner::plan(&opts).unwrap();
    let end = Instant::now();
    assert!(outcome.validation.ok);
    let marks = marks.into_inner().unwrap();
    let total = end - t0;
    let mut prev = t0;
    let mut parts = Vec::new();
    for (name, at) in marks.iter().skip(1).chain(std::iter::once(&(
        "write planning.json, stage.json, trace",
        end,
    ))) {
        let d = *at - prev;
        parts.push(format!(
            "{name}: {} ms ({:.0}%)",
            d.as_millis(),
            100.0 * d.as_secs_f64() / total.as_secs_f64()
        ));
        prev = *at;
    }
    eprintln!(
        "one plan: {} ms, {} steps\n  {}",
        total.as_millis(),
        outcome.planning.steps.len(),
        parts.join("\n  ")
    );

    let mut opts = PlanOptions::new(repo.path(), RequestSource::File(request));
    opts.runs_root = Some(runs.path().to_path_buf());
    let mut group = c.benchmark_group("plan");
    group.sample_size(10);
    group.bench_function("plan_20k_files", |b| {
        b.iter(|| dandori_planner::plan(&opts).unwrap())
    });
    group.finish();
    if let Some(kib) = peak_rss_kib() {
        eprintln!("peak RSS (VmHWM): {:.1} MiB", kib as f64 / 1024.0);
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
