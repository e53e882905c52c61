//! dandori's tool cache (`DANDORI_TOOLS_DIR`) holding a real program, laid out as
//! the bootstrap lays it out: the program inside the cache, linked from `bin`.

use std::path::PathBuf;

/// The first `program` on this process's `PATH`; panics, naming the script that
/// installs the test tools, when there is none.
pub fn program_on_path(program: &str) -> PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("`{program}` is not on PATH: run the tests through ./scripts/test.sh")
        })
}

/// A new tool cache with a copy of `program` (from `PATH`) at
/// `<cache>/<program>/bin/<program>`, linked from `<cache>/bin`.
pub fn with_program(program: &str) -> tempfile::TempDir {
    let found = program_on_path(program);
    let cache = tempfile::Builder::new()
        .prefix("dandori-tools-")
        .tempdir()
        .unwrap_or_else(|e| panic!("creating a tool cache: {e}"));
    let dir = cache.path().join(program).join("bin");
    for d in [cache.path().join("bin"), dir.clone()] {
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("creating {}: {e}", d.display()));
    }
    let copy = dir.join(program);
    std::fs::copy(&found, &copy)
        .unwrap_or_else(|e| panic!("copying {} into the cache: {e}", found.display()));
    std::os::unix::fs::symlink(&copy, cache.path().join("bin").join(program))
        .unwrap_or_else(|e| panic!("linking {program} in the cache: {e}"));
    cache
}

/// A PATH of the system's programs without `tool`, whatever this machine has
/// installed (CI installs go for the `go test` runner tests, say): a directory
/// of links to everything in /usr/local/bin, /usr/bin and /bin but `tool`,
/// alive as long as the returned guard.
pub fn path_without(tool: &str) -> (String, tempfile::TempDir) {
    let bin = tempfile::tempdir().unwrap_or_else(|e| panic!("a temporary directory: {e}"));
    for dir in ["/usr/local/bin", "/usr/bin", "/bin"] {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let link = bin.path().join(&name);
            if name != tool && !link.exists() {
                let _ = std::os::unix::fs::symlink(e.path(), link);
            }
        }
    }
    (bin.path().display().to_string(), bin)
}
