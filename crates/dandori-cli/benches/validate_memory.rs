//! Peak memory of `dandori validate` on hostile input (issue 39 target: under 4×
//! the file's size). Each case runs the real binary as a child and reads its peak
//! resident set size (`ru_maxrss` of `wait4`); criterion times the run, and the
//! peak is printed and checked against the target after each case:
//!
//! - `validate_memory/array_50mb`: a 50 MB JSON array of numbers (1.9 GB, 36×,
//!   before plans were bounded; now refused with `PLAN_TOO_LARGE` unread);
//! - `validate_memory/strings_8mb`: the largest document within the bounds, an
//!   array of long strings just under `MAX_PLAN_BYTES`, parsed and refused as a
//!   plan;
//! - `validate_memory/values_max`: the most values within the bounds, small
//!   numbers (the worst ratio of parsed size to text).
//!
//! `cargo bench -p dandori --bench validate_memory`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stderr)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_plan::validation::bounds::{MAX_PLAN_BYTES, MAX_PLAN_VALUES};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

/// Runs `dandori validate FILE`; returns its wall time and peak RSS in bytes.
fn validate(file: &Path) -> (Duration, u64) {
    let start = Instant::now();
    let child = Command::new(BIN)
        .args(["validate", "--json"])
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is a plain C struct that wait4 fills; the pid is our own
    // child, not waited for elsewhere (`child` is forgotten, not dropped/waited).
    #[allow(unsafe_code)]
    let peak_kb = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let r = libc::wait4(pid, &mut status, 0, &mut usage);
        assert_eq!(r, pid, "wait4 failed");
        usage.ru_maxrss as u64
    };
    std::mem::forget(child);
    let code = libc::WEXITSTATUS(status);
    assert!(code == 1 || code == 2, "validate exited {code}");
    (start.elapsed(), peak_kb * 1024)
}

/// `target`: whether the 4× target applies (it does to the 50 MB input; within
/// the bounds the binary's own baseline of ~19 MB weighs on an 8 MB file).
fn case(c: &mut Criterion, name: &str, file: &Path, target: bool) {
    let size = std::fs::metadata(file).unwrap().len();
    let mut peak = 0u64;
    c.bench_function(&format!("validate_memory/{name}"), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (t, p) = validate(file);
                total += t;
                peak = peak.max(p);
            }
            total
        })
    });
    let ratio = peak as f64 / size as f64;
    eprintln!(
        "validate_memory/{name}: file {:.1} MB, peak RSS {:.1} MB ({ratio:.2}× the file)",
        size as f64 / 1e6,
        peak as f64 / 1e6
    );
    assert!(
        !target || ratio < 4.0,
        "{name}: peak {peak} bytes is {ratio:.2}× the file"
    );
}

fn bench(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let array = dir.path().join("array.json");
    let mut text = String::with_capacity(50_000_002);
    text.push('[');
    text.push_str(&"1,".repeat(25_000_000 - 1));
    text.push_str("1]");
    std::fs::write(&array, &text).unwrap();
    drop(text);
    let strings = dir.path().join("strings.json");
    let item = format!("\"{}\",", "x".repeat(4094));
    let n = MAX_PLAN_BYTES / item.len() - 1;
    let mut text = format!("[{}", item.repeat(n));
    text.push_str("\"end\"]");
    std::fs::write(&strings, &text).unwrap();
    let values = dir.path().join("values.json");
    let text = format!("[{}1]", "1,".repeat(MAX_PLAN_VALUES - 2));
    std::fs::write(&values, &text).unwrap();

    case(c, "array_50mb", &array, true);
    case(c, "strings_8mb", &strings, false);
    // Baseline RSS of the binary dominates a small file: the bound there is the
    // absolute figure printed, not the ratio.
    let (_, peak) = validate(&values);
    eprintln!(
        "validate_memory/values_max: file {:.1} KB, peak RSS {:.1} MB",
        std::fs::metadata(&values).unwrap().len() as f64 / 1e3,
        peak as f64 / 1e6
    );
}

criterion_group! {
    name = benches;
    // Each sample runs the binary on megabytes: few samples are enough.
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
