//! What a step's commit never holds, whatever the project's `.gitignore` says:
//! the bytecode and tool caches that running the tests leaves in the worktree
//! (the agent's own `pytest` run writes `tests/__pycache__/*.pyc`). One table,
//! read by both ways a step's change is staged.

/// A directory of this name, at any depth, and everything in it.
const CACHE_DIRS: &[&str] = &[
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    ".tox",
    ".nox",
];
/// A directory at this path below any directory, and everything in it.
const NESTED_CACHE_DIRS: &[&str] = &["node_modules/.cache", "node_modules/.vite"];
/// Files whose name ends so.
const SUFFIXES: &[&str] = &[".pyc", ".pyo"];

/// Whether `path` (repository-relative, `/`-separated) is never committed.
pub fn is_never_committed(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let Some((file, dirs)) = parts.split_last() else {
        return false;
    };
    dirs.iter().any(|d| CACHE_DIRS.contains(d))
        || SUFFIXES.iter().any(|s| file.ends_with(s))
        || NESTED_CACHE_DIRS.iter().any(|n| {
            let n: Vec<&str> = n.split('/').collect();
            dirs.windows(n.len()).any(|w| w == n.as_slice())
        })
}

/// The same table as `git add` pathspecs that leave those paths out.
pub fn exclude_pathspecs() -> Vec<String> {
    CACHE_DIRS
        .iter()
        .chain(NESTED_CACHE_DIRS)
        .map(|d| format!(":(exclude,glob)**/{d}/**"))
        .chain(SUFFIXES.iter().map(|s| format!(":(exclude,glob)**/*{s}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caches_and_bytecode_only() {
        for p in [
            "tests/__pycache__/test_core.cpython-312.pyc",
            "__pycache__/x.pyc",
            "pkg/mod.pyc",
            ".pytest_cache/v/cache/lastfailed",
            "web/node_modules/.cache/babel/x.json",
        ] {
            assert!(is_never_committed(p), "{p}");
        }
        for p in [
            "calc/core.py",
            "pycache.md",
            "docs/__pycache__.md",
            "node_modules/cache/x.js",
            ".github/workflows/ci.yml",
        ] {
            assert!(!is_never_committed(p), "{p}");
        }
    }
}
