//! Per-test results from a test command as the user wrote it: dandori never
//! rewrites the command, it sets the environment each common runner reads so
//! that it names every test it runs, in its output or in a report written into a
//! directory of the run ([`TEST_REPORT_DIR`]). Per runner:
//!
//! | runner | what dandori does |
//! |---|---|
//! | unittest (`python -m unittest`, any `TestResult`) | a `sitecustomize.py` in the run directory, first on `PYTHONPATH` (then the project's or venv's own `sitecustomize`), records each test's outcome and writes a JUnit report into [`TEST_REPORT_DIR`] |
//! | pytest | `PYTEST_ADDOPTS=-rA`: the short summary names every test |
//! | go test | `GOFLAGS=-v` (added to the user's `GOFLAGS`): `--- PASS:` / `--- FAIL:` lines |
//! | cargo test | nothing: libtest prints `test name ... ok` unless `-q` |
//! | node --test | nothing: its TAP (no terminal) or spec output names every test |
//! | jest, vitest | a `node-test-hook.cjs` in the run directory, preloaded by `NODE_OPTIONS=--require` (after the user's own options): in a jest or vitest main process it wraps the end-of-run call of the runner's own reporters (jest's `SummaryReporter`, vitest's built-in reporters) and writes a JUnit report into [`TEST_REPORT_DIR`], tests named `file > suite > test` |
//! | Maven Surefire / Gradle | nothing: they write `TEST-*.xml`, read from `target/` and `build/` |
//!
//! Whatever names no test still counts: [`TestCount`] from the runners'
//! summaries (`Ran 2 tests`, `Tests: 1 failed, 2 passed`), so a run is never
//! reported as "0 pass, 0 fail" when tests ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use super::junit::Collected;
use crate::error::RunnerError;

/// The directory a test command's runners write their reports into (one per
/// command run, under the run directory).
pub const TEST_REPORT_DIR: &str = "DANDORI_TEST_REPORT_DIR";
/// Python's module search path: the hook directory goes first.
pub const PYTHONPATH: &str = "PYTHONPATH";
/// pytest's extra options: `-rA` unless the user asks for another `-r`.
pub const PYTEST_ADDOPTS: &str = "PYTEST_ADDOPTS";
/// Python writes no bytecode cache: a fix made within the same second that keeps
/// a module's size would run the stale bytecode, and `__pycache__` stays out of
/// the worktree.
pub const PYTHONDONTWRITEBYTECODE: &str = "PYTHONDONTWRITEBYTECODE";
/// Go's default flags: `-v` so `go test` names each test.
pub const GOFLAGS: &str = "GOFLAGS";
/// Node's extra options: the jest / vitest hook is preloaded with `--require`.
pub const NODE_OPTIONS: &str = "NODE_OPTIONS";

const SITECUSTOMIZE: &str = include_str!("hooks/sitecustomize.py");
const NODE_HOOK: &str = include_str!("hooks/node-test-hook.cjs");
const NODE_HOOK_FILE: &str = "dandori-test-hook.cjs";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A test command run's report directory, made and read by dandori.
pub struct Hooks {
    report_dir: PathBuf,
}

impl Hooks {
    /// Writes the hooks under `run_dir` (once) and sets `env` so the command's
    /// runners use them.
    pub fn prepare(
        run_dir: &Path,
        env: &mut BTreeMap<String, String>,
    ) -> Result<Hooks, RunnerError> {
        let python = run_dir.join("test-hooks").join("python");
        write_hook(&python.join("sitecustomize.py"), SITECUSTOMIZE)?;
        let node_hook = run_dir.join("test-hooks").join("node").join(NODE_HOOK_FILE);
        write_hook(&node_hook, NODE_HOOK)?;
        let report_dir = run_dir.join("test-reports").join(format!(
            "{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        if report_dir.exists() {
            std::fs::remove_dir_all(&report_dir)
                .map_err(|e| dandori_fs::FsError::new("removing", &report_dir, e))?;
        }
        dandori_fs::create_dir_all(&report_dir)?;
        crate::pythonpath::prepend(env, &[python.to_string_lossy().into_owned()]);
        env.insert(
            TEST_REPORT_DIR.to_string(),
            report_dir.to_string_lossy().into_owned(),
        );
        let addopts = env.get(PYTEST_ADDOPTS).cloned().unwrap_or_default();
        if !addopts.split_whitespace().any(|o| o.starts_with("-r")) {
            env.insert(
                PYTEST_ADDOPTS.to_string(),
                format!("{addopts} -rA").trim().to_string(),
            );
        }
        let goflags = env.get(GOFLAGS).cloned().unwrap_or_default();
        if !goflags
            .split_whitespace()
            .any(|f| f == "-v" || f == "-json" || f.starts_with("-v=") || f.starts_with("-json="))
        {
            env.insert(
                GOFLAGS.to_string(),
                format!("{goflags} -v").trim().to_string(),
            );
        }
        env.entry(PYTHONDONTWRITEBYTECODE.to_string())
            .or_insert_with(|| "1".to_string());
        let node = env.get(NODE_OPTIONS).cloned().unwrap_or_default();
        if !node.contains(NODE_HOOK_FILE) {
            // Node reads NODE_OPTIONS' words with double quotes and backslash escapes.
            let quoted = node_hook
                .to_string_lossy()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            env.insert(
                NODE_OPTIONS.to_string(),
                format!("{node} --require \"{quoted}\"").trim().to_string(),
            );
        }
        Ok(Hooks { report_dir })
    }

    /// The reports the command's runners wrote, read (test ids resolved against
    /// `dir`, where the command ran); the report directory is removed.
    pub fn collect(self, dir: &Path) -> Collected {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&self.report_dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "xml"))
                    .collect()
            })
            .unwrap_or_default();
        files.sort();
        let c = super::junit::read_files(dir, &self.report_dir, &files);
        let _ = std::fs::remove_dir_all(&self.report_dir);
        c
    }
}

/// Writes a hook file unless it already holds `text`.
fn write_hook(path: &Path, text: &str) -> Result<(), RunnerError> {
    if dandori_fs::read_to_string(path).ok().as_deref() != Some(text) {
        if let Some(dir) = path.parent() {
            dandori_fs::create_dir_all(dir)?;
        }
        dandori_fs::write_atomic_readable(path, text)?;
    }
    Ok(())
}

/// How many tests a runner's summary says ran and failed, for output that
/// names no test.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestCount {
    pub ran: u64,
    pub failed: u64,
}

/// The test counts in `output`'s summaries, summed: unittest's `Ran N tests`
/// with its `OK` / `FAILED (failures=1, errors=2)`, jest's `Tests: 1 failed,
/// 2 passed, 3 total`, vitest's `Tests  1 failed | 2 passed (3)`. `None` when
/// there is none.
pub fn count(output: &str) -> Option<TestCount> {
    let mut total: Option<TestCount> = None;
    let mut add = |c: TestCount| {
        let t = total.get_or_insert_with(TestCount::default);
        t.ran += c.ran;
        t.failed += c.failed;
    };
    let output = super::parse::strip_ansi(output);
    let lines: Vec<&str> = output.lines().map(|l| l.trim()).collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(rest) = line.strip_prefix("Ran ")
            && let Some((n, tail)) = rest.split_once(' ')
            && (tail.starts_with("tests in") || tail.starts_with("test in"))
            && let Ok(ran) = n.parse::<u64>()
        {
            // The verdict follows after a blank line.
            let verdict = lines[i + 1..]
                .iter()
                .find(|l| !l.is_empty())
                .copied()
                .unwrap_or("");
            let failed = verdict
                .strip_prefix("FAILED (")
                .map(|r| {
                    r.trim_end_matches(')')
                        .split(", ")
                        .filter_map(|kv| kv.split_once('='))
                        .filter(|(k, _)| {
                            matches!(*k, "failures" | "errors" | "unexpected successes")
                        })
                        .filter_map(|(_, v)| v.parse::<u64>().ok())
                        .sum()
                })
                .unwrap_or(0);
            add(TestCount { ran, failed });
            continue;
        }
        if let Some(rest) = line
            .strip_prefix("Tests:")
            .or_else(|| line.strip_prefix("Tests "))
        {
            let mut c = TestCount::default();
            let mut seen = false;
            for part in rest.split([',', '|', '(']) {
                let words: Vec<&str> = part.split_whitespace().collect();
                let n = words
                    .first()
                    .and_then(|w| w.trim_end_matches(')').parse::<u64>().ok());
                match (n, words.get(1).copied()) {
                    (Some(n), Some("failed")) => {
                        c.failed += n;
                        c.ran += n;
                        seen = true;
                    }
                    (Some(n), Some("passed")) => {
                        c.ran += n;
                        seen = true;
                    }
                    _ => {}
                }
            }
            if seen {
                add(c);
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_from_summaries() {
        let unittest = "..\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n";
        assert_eq!(count(unittest), Some(TestCount { ran: 2, failed: 0 }));
        let failed = "Ran 5 tests in 0.010s\n\nFAILED (failures=1, errors=2, skipped=1)\n";
        assert_eq!(count(failed), Some(TestCount { ran: 5, failed: 3 }));
        let jest = "Test Suites: 1 failed, 1 total\nTests:       1 failed, 2 passed, 3 total\n";
        assert_eq!(count(jest), Some(TestCount { ran: 3, failed: 1 }));
        let vitest = "      Tests  1 failed | 2 passed (3)\n";
        assert_eq!(count(vitest), Some(TestCount { ran: 3, failed: 1 }));
        // vitest colours its summary without a terminal.
        let coloured = "\u{1b}[2m      Tests \u{1b}[22m \u{1b}[1m\u{1b}[31m1 failed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[1m\u{1b}[32m2 passed\u{1b}[39m\u{1b}[22m\u{1b}[2m | \u{1b}[22m\u{1b}[33m1 skipped\u{1b}[39m\u{1b}[90m (4)\u{1b}[39m\n";
        assert_eq!(count(coloured), Some(TestCount { ran: 3, failed: 1 }));
        assert_eq!(count("all good\n"), None);
    }

    #[test]
    fn env_keeps_the_users_settings() {
        let d = tempfile::tempdir().unwrap();
        let mut env = BTreeMap::from([
            (PYTHONPATH.to_string(), "/p/src".to_string()),
            (PYTEST_ADDOPTS.to_string(), "-rf -x".to_string()),
            (GOFLAGS.to_string(), "-mod=mod".to_string()),
            (
                NODE_OPTIONS.to_string(),
                "--max-old-space-size=512".to_string(),
            ),
        ]);
        let hooks = Hooks::prepare(d.path(), &mut env).unwrap();
        let hook_dir = d.path().join("test-hooks/python");
        assert_eq!(env[PYTHONPATH], format!("{}:/p/src", hook_dir.display()));
        assert_eq!(env[PYTEST_ADDOPTS], "-rf -x");
        assert_eq!(env[GOFLAGS], "-mod=mod -v");
        assert_eq!(env[PYTHONDONTWRITEBYTECODE], "1");
        let node_hook = d.path().join("test-hooks/node").join(NODE_HOOK_FILE);
        assert_eq!(
            env[NODE_OPTIONS],
            format!(
                "--max-old-space-size=512 --require \"{}\"",
                node_hook.display()
            )
        );
        assert!(node_hook.is_file());
        // Prepared again (the next command): the hook is not preloaded twice.
        let again = Hooks::prepare(d.path(), &mut env).unwrap();
        assert_eq!(env[NODE_OPTIONS].matches(NODE_HOOK_FILE).count(), 1);
        drop(again.collect(d.path()));
        assert!(hook_dir.join("sitecustomize.py").is_file());
        assert!(hooks.report_dir.is_dir());
        let dir = hooks.report_dir.clone();
        assert!(hooks.collect(d.path()).tests.is_empty());
        assert!(!dir.exists());
    }
}
