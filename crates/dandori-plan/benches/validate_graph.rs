//! validate + graph on plans of 10, 1 000 and 10 000 steps.
//!
//! The plan is shaped like a large real one: steps grouped ten to a module, each
//! changing one file; every tenth step takes the whole module directory, every
//! fiftieth a glob over it; steps depend on the previous step of their module and
//! consume an artefact produced three steps earlier; all touch a shared README.

// A benchmark aborts on a broken fixture; that is the right failure here.
#![allow(clippy::expect_used)]

use criterion::measurement::{Measurement, ValueFormatter};
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use dandori_plan::{Planning, graph, validation};
use serde_json::{Value, json};

fn plan(n: usize) -> String {
    let sample = include_str!("../tests/fixtures/seed004_sample.json");
    let mut doc: Value = serde_json::from_str(sample).expect("sample");
    let template = doc["steps"][0].clone();
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let id = format!("S{:02}", i + 1);
            let module = i / 10;
            let mut s = template.clone();
            s["step_id"] = json!(id);
            let target = if i % 50 == 49 {
                format!("crates/m{module}/**/*.rs")
            } else if i % 10 == 9 {
                format!("crates/m{module}")
            } else {
                format!("crates/m{module}/src/f{i}.rs")
            };
            let mut targets = vec![json!(target)];
            if i % 100 == 0 {
                targets.push(json!("README.md"));
            }
            s["scope"]["target_paths"] = json!(targets);
            if i % 10 != 0 {
                s["depends_on"] = json!([format!("S{:02}", i)]);
            }
            s["produces"] = json!([format!("api{i}")]);
            if i >= 3 {
                s["consumes"] = json!([format!("api{}", i - 3)]);
            }
            s["estimated_complexity"] = json!(1 + i % 10);
            s
        })
        .collect();
    doc["steps"] = Value::Array(steps);
    serde_json::to_string(&doc).expect("serialise")
}

fn bench(c: &mut Criterion) {
    run(c.benchmark_group("validate_graph"));
}

/// The same entries measured in CPU time of the benchmark thread: on a shared,
/// overloaded machine wall time mostly measures waiting for a core.
fn bench_cpu(c: &mut Criterion<CpuTime>) {
    run(c.benchmark_group("validate_graph_cpu"));
}

fn run<M: Measurement>(mut group: BenchmarkGroup<'_, M>) {
    group.sample_size(20);
    for n in [10usize, 1_000, 10_000] {
        let text = plan(n);
        group.throughput(Throughput::Elements(n as u64));
        // The whole pipeline: text → findings → typed plan → graph analysis. Step
        // ids past S99 draw STEP_ID_INVALID (seed 004 allows S\d\d only), so the
        // large plans also exercise finding creation.
        group.bench_with_input(BenchmarkId::new("validate+graph", n), &text, |b, text| {
            b.iter(|| {
                let checked = validation::check(text);
                let planning = checked.planning.expect("plan");
                (
                    checked.report,
                    graph::analyze(&planning.steps).expect("acyclic"),
                )
            })
        });
        // Baseline: only parsing the text into a serde_json::Value, which
        // validation must do first; the ratio to it is the cost of the rules.
        group.bench_with_input(BenchmarkId::new("parse_value", n), &text, |b, text| {
            b.iter(|| serde_json::from_str::<Value>(text).expect("json"))
        });
        // Floor of any pipeline that returns the typed plan: reading the text
        // straight into `Planning` (no findings).
        group.bench_with_input(BenchmarkId::new("parse_typed", n), &text, |b, text| {
            b.iter(|| serde_json::from_str::<Planning>(text).expect("plan"))
        });
        group.bench_with_input(BenchmarkId::new("validate_str", n), &text, |b, text| {
            b.iter(|| validation::validate_str(text))
        });
        let planning: Planning = serde_json::from_str(&text).expect("plan");
        group.bench_with_input(
            BenchmarkId::new("graph::analyze", n),
            &planning.steps,
            |b, steps| b.iter(|| graph::analyze(steps).expect("acyclic")),
        );
    }
    // Hostile plans (issue 9, point 10): 10 000 steps of globs over one directory
    // plus plain files below it, and one step with 60 000 unknown dependency ids.
    let overlaps = hostile_overlaps(10_000);
    group.throughput(Throughput::Elements(10_000));
    group.bench_with_input(
        BenchmarkId::new("hostile_overlaps_validate+graph", 10_000),
        &overlaps,
        |b, text| {
            b.iter(|| {
                let checked = validation::check(text);
                let planning = checked.planning.expect("plan");
                graph::analyze(&planning.steps).expect("acyclic")
            })
        },
    );
    let unknown = hostile_unknown(60_000);
    group.bench_with_input(
        BenchmarkId::new("hostile_unknown_validate", 60_000),
        &unknown,
        |b, text| b.iter(|| validation::validate_str(text)),
    );
    group.finish();
}

fn hostile_overlaps(n: usize) -> String {
    let sample = include_str!("../tests/fixtures/seed004_sample.json");
    let mut doc: Value = serde_json::from_str(sample).expect("sample");
    let template = doc["steps"][0].clone();
    let steps: Vec<Value> = (0..n)
        .map(|i| {
            let mut s = template.clone();
            s["step_id"] = json!(format!("S{:02}", i + 1));
            s["scope"]["target_paths"] = json!([
                format!("src/**/m{}/*.py", i % 7),
                format!("src/pkg/f{i}.py")
            ]);
            s
        })
        .collect();
    doc["steps"] = Value::Array(steps);
    serde_json::to_string(&doc).expect("serialise")
}

fn hostile_unknown(n: usize) -> String {
    let sample = include_str!("../tests/fixtures/seed004_sample.json");
    let mut doc: Value = serde_json::from_str(sample).expect("sample");
    let deps: Vec<String> = (0..n).map(|i| format!("X{i:06}")).collect();
    doc["steps"][0]["depends_on"] = json!(deps);
    serde_json::to_string(&doc).expect("serialise")
}

/// CPU time of the current thread, from `/proc/thread-self/schedstat` (Linux).
struct CpuTime;

fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat (Linux only)")
}

impl Measurement for CpuTime {
    type Intermediate = u64;
    type Value = u64;
    fn start(&self) -> u64 {
        thread_cpu_ns()
    }
    fn end(&self, start: u64) -> u64 {
        thread_cpu_ns().saturating_sub(start)
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn zero(&self) -> u64 {
        0
    }
    fn to_f64(&self, v: &u64) -> f64 {
        *v as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &CpuFormatter
    }
}

struct CpuFormatter;

impl ValueFormatter for CpuFormatter {
    fn scale_values(&self, typical_ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if typical_ns < 1e3 {
            (1.0, "ns cpu")
        } else if typical_ns < 1e6 {
            (1e-3, "µs cpu")
        } else if typical_ns < 1e9 {
            (1e-6, "ms cpu")
        } else {
            (1e-9, "s cpu")
        };
        for v in values {
            *v *= factor;
        }
        unit
    }
    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let per = match throughput {
            Throughput::Elements(n)
            | Throughput::Bytes(n)
            | Throughput::BytesDecimal(n)
            | Throughput::Bits(n) => *n as f64,
        };
        for v in values {
            *v = per * 1e9 / *v;
        }
        "elem/cpu-s"
    }
    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

criterion_group!(benches, bench);
criterion_group! {
    name = benches_cpu;
    config = Criterion::default().with_measurement(CpuTime);
    targets = bench_cpu
}
criterion_main!(benches, benches_cpu);
