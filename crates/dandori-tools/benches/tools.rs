//! Cost of the tool layer: a sandboxed command against the same command unsandboxed,
//! and a search over a worktree of 500 files.
#![allow(clippy::expect_used)]

use std::collections::BTreeMap;

use criterion::{Criterion, criterion_group, criterion_main};
use dandori_tools::{SandboxMode, ToolCall, ToolRegistry};
use serde_json::json;

fn worktree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..500 {
        let sub = dir.path().join(format!("src/m{}", i % 20));
        std::fs::create_dir_all(&sub).expect("mkdir");
        let text: String = (0..40)
            .map(|l| format!("fn f{i}_{l}() -> u32 {{ {l} }}\n"))
            .collect();
        std::fs::write(sub.join(format!("f{i}.rs")), text).expect("write");
    }
    dir
}

fn registry(dir: &tempfile::TempDir, mode: SandboxMode) -> ToolRegistry {
    let env: BTreeMap<String, String> = std::env::vars().collect();
    ToolRegistry::builder(dir.path())
        .env(env)
        .sandbox_mode(mode)
        .build()
        .expect("registry")
}

fn bench(c: &mut Criterion) {
    let dir = worktree();
    let sandboxed = registry(&dir, SandboxMode::Auto);
    let plain = registry(&dir, SandboxMode::Off);
    let run = ToolCall::new("run_command", json!({"command": "true"}));
    let mut group = c.benchmark_group("run_command");
    group.sample_size(30);
    group.bench_function(
        format!("sandbox={:?}", sandboxed.sandbox_status().kind),
        |b| b.iter(|| sandboxed.call(&run)),
    );
    group.bench_function("sandbox=off", |b| b.iter(|| plain.call(&run)));
    group.finish();

    let search = ToolCall::new("search", json!({"pattern": "f250_3\\(", "regex": true}));
    c.bench_function("search_500_files", |b| b.iter(|| plain.call(&search)));
}

criterion_group!(benches, bench);
criterion_main!(benches);
