//! Scan + index + one query over a generated 20 000-file repository.
//! Target: well under 1 s on a 2-core machine. Prints the index size and the
//! process's peak RSS.
#![allow(clippy::print_stdout, clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_repo::{Index, ScanOptions, scan};

const FILES: usize = 20_000;
const QUERY: &str = "InvoiceLedger.reconcile_entries fails with KeyError when a payment \
    is refunded twice; see billing/ledger/module_0123.py and the traceback in \
    `reconcile_entries`. 請求の照合でエラーが発生する";

const WORDS: &[&str] = &[
    "invoice",
    "ledger",
    "payment",
    "refund",
    "customer",
    "order",
    "shipment",
    "account",
    "balance",
    "report",
    "schedule",
    "session",
    "token",
    "user",
    "profile",
    "cache",
    "queue",
    "render",
    "parse",
    "validate",
    "reconcile",
    "entry",
    "export",
    "import",
    "config",
];

/// A deterministic pseudo-random sequence (no dependency needed).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }
    fn word(&mut self) -> &'static str {
        WORDS[self.next() % WORDS.len()]
    }
}

fn camel(a: &str, b: &str) -> String {
    let mut s = String::new();
    for w in [a, b] {
        let mut c = w.chars();
        if let Some(f) = c.next() {
            s.extend(f.to_uppercase());
            s.push_str(c.as_str());
        }
    }
    s
}

/// 20 000 files: 200 packages × 100 files, Python, TypeScript, Go and Markdown,
/// 1–3 KB each, plus a .gitignore'd build tree the scan must skip.
fn generate(root: &Path) {
    let mut rng = Lcg(42);
    let areas = ["billing", "shipping", "accounts", "reports", "platform"];
    std::fs::write(root.join(".gitignore"), "build/\n").unwrap();
    std::fs::write(root.join("README.md"), "# generated\n").unwrap();
    let mut n = 0;
    'outer: for pkg in 0..200 {
        let area = areas[pkg % areas.len()];
        let dir = root.join(area).join(format!("{}_{pkg}", rng.word()));
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..100 {
            if n == FILES {
                break 'outer;
            }
            let (name, body) = match i % 10 {
                0..=5 => {
                    let mut b = String::new();
                    for _ in 0..4 {
                        let class = camel(rng.word(), rng.word());
                        let _ = writeln!(
                            b,
                            "class {class}:\n    \"\"\"{} the {} of a {}.\"\"\"\n",
                            rng.word(),
                            rng.word(),
                            rng.word()
                        );
                        for _ in 0..3 {
                            let f = format!("{}_{}", rng.word(), rng.word());
                            let _ = writeln!(
                                b,
                                "    def {f}(self, {}):\n        return self.{}.get({:?})\n",
                                rng.word(),
                                rng.word(),
                                rng.word()
                            );
                        }
                    }
                    (format!("module_{:04}.py", n % 10_000), b)
                }
                6 | 7 => {
                    let mut b = String::new();
                    for _ in 0..6 {
                        let f = camel(rng.word(), rng.word());
                        let _ = writeln!(
                            b,
                            "export function load{f}(id: string): Promise<{f}> {{\n  return api.get(`/{}/${{id}}`);\n}}\n",
                            rng.word()
                        );
                    }
                    (format!("view_{n}.ts"), b)
                }
                8 => {
                    let mut b = String::from("package main\n\n");
                    for _ in 0..5 {
                        let f = camel(rng.word(), rng.word());
                        let _ = writeln!(
                            b,
                            "func {f}(ctx context.Context) error {{\n\treturn {}(ctx)\n}}\n",
                            rng.word()
                        );
                    }
                    (format!("svc_{n}.go"), b)
                }
                _ => {
                    let mut b = String::from("# Notes\n\n");
                    for _ in 0..20 {
                        let _ = write!(b, "{} ", rng.word());
                    }
                    b.push_str("\n請求と支払いの照合について説明する。\n");
                    (format!("notes_{n}.md"), b)
                }
            };
            std::fs::write(dir.join(name), body).unwrap();
            n += 1;
        }
    }
    // The ledger the query names.
    let ledger = root.join("billing/ledger");
    std::fs::create_dir_all(&ledger).unwrap();
    std::fs::write(
        ledger.join("module_0123.py"),
        "class InvoiceLedger:\n    def reconcile_entries(self, entries):\n        return {e.key: e for e in entries}\n",
    )
    .unwrap();
    let build = root.join("build");
    std::fs::create_dir_all(&build).unwrap();
    for i in 0..500 {
        std::fs::write(build.join(format!("gen_{i}.py")), "x = 1\n").unwrap();
    }
}

fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU seconds of this process so far (Linux), to tell work from
/// waiting on a shared machine.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let after = stat.rsplit_once(')')?.1;
    let f: Vec<&str> = after.split_whitespace().collect();
    let utime: f64 = f.get(11)?.parse().ok()?;
    let stime: f64 = f.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path());
    let opts = ScanOptions::default();

    // Runs outside the timing loop for the figures printed below.
    let _ = scan(dir.path(), &opts).unwrap();
    let cpu0 = cpu_seconds().unwrap_or(0.0);
    let t0 = std::time::Instant::now();
    let s = scan(dir.path(), &opts).unwrap();
    let index = Index::build(&s);
    let hits = index.search(QUERY, 10);
    let wall = t0.elapsed().as_secs_f64();
    let cpu = cpu_seconds().unwrap_or(0.0) - cpu0;
    assert_eq!(
        s.files.len(),
        FILES + 2,
        "generated files + README + .gitignore'd build skipped"
    );
    assert_eq!(hits[0].path, "billing/ledger/module_0123.py");
    println!(
        "scan_retrieve: one scan+index+query: wall {wall:.3} s, CPU {cpu:.2} s ({} threads)",
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "scan_retrieve: {} files ({:.1} MiB), {} indexed, index ≈ {:.1} MiB, peak RSS {:.1} MiB",
        s.files.len(),
        s.summary.total_bytes as f64 / (1024.0 * 1024.0),
        index.len(),
        index.heap_bytes() as f64 / (1024.0 * 1024.0),
        peak_rss_kib().unwrap_or(0) as f64 / 1024.0
    );

    let mut g = c.benchmark_group("repo_20k");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("scan", |b| b.iter(|| scan(dir.path(), &opts).unwrap()));
    g.bench_function("index_build", |b| b.iter(|| Index::build(&s)));
    g.bench_function("query", |b| b.iter(|| index.search(QUERY, 10)));
    g.bench_function("scan_index_query", |b| {
        b.iter(|| {
            let s = scan(dir.path(), &opts).unwrap();
            let index = Index::build(&s);
            index.search(QUERY, 10)
        })
    });
    g.finish();
    println!(
        "scan_retrieve: peak RSS after the runs {:.1} MiB",
        peak_rss_kib().unwrap_or(0) as f64 / 1024.0
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
