//! What the end-to-end matrices share (the corpus, `corpus.rs`, and the journey
//! matrix, `journeys.rs`): a cell's fresh HOME and committed repository, the one
//! `plan` → `run --executor command` cell with what its `--json` output says,
//! and the pool that runs the cells a few at a time.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_dandori");

/// A fresh HOME under `dir` holding only a git identity, and the variables a
/// user's shell has there: `USER`, `LANG`… from this process, the toolchains'
/// homes (`RUSTUP_HOME`, `CARGO_HOME`: a CI image sets them, a fresh HOME has
/// neither), `HOME` and the XDG directories. `PATH` is the caller's choice.
pub fn fresh_home(dir: &Path, name: &str) -> BTreeMap<String, String> {
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        format!(
            "[user]\n\tname = {name}\n\temail = {}@example.invalid\n",
            name.to_lowercase()
        ),
    )
    .unwrap();
    let mut env = BTreeMap::new();
    for var in [
        "USER",
        "LOGNAME",
        "LANG",
        "LC_ALL",
        "TZ",
        "SHELL",
        "PYENV_ROOT",
    ] {
        if let Ok(v) = std::env::var(var) {
            env.insert(var.to_string(), v);
        }
    }
    let real_home = std::env::var("HOME").unwrap_or_default();
    for (var, sub) in [("RUSTUP_HOME", ".rustup"), ("CARGO_HOME", ".cargo")] {
        let value = std::env::var(var)
            .ok()
            .or_else(|| Some(format!("{real_home}/{sub}")).filter(|p| Path::new(p).is_dir()));
        if let Some(value) = value {
            env.insert(var.to_string(), value);
        }
    }
    let h = home.display().to_string();
    env.insert("HOME".into(), h.clone());
    env.insert("XDG_CACHE_HOME".into(), format!("{h}/.cache"));
    env.insert("XDG_CONFIG_HOME".into(), format!("{h}/.config"));
    env
}

/// Runs `argv` in `cwd` with exactly `env`; panics unless it exits 0.
pub fn run_ok(env: &BTreeMap<String, String>, cwd: &Path, argv: &[&str]) -> String {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    assert!(
        out.status.success(),
        "{argv:?} in {}: {}",
        cwd.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `git init` on `main` and one commit of everything in `repo`.
pub fn commit_all(env: &BTreeMap<String, String>, repo: &Path, message: &str) {
    run_ok(env, repo, &["git", "init", "-q", "-b", "main"]);
    run_ok(env, repo, &["git", "add", "-A"]);
    run_ok(env, repo, &["git", "commit", "-q", "-m", message]);
}

/// One dandori invocation as a cell makes it: `(name, args)` → exit code and
/// stdout. The caller decides how (timeout, timing, where the logs go).
pub type Invoke<'a> = dyn FnMut(&'static str, &[&str]) -> (i32, String) + 'a;

/// What one `plan` + `run` cell ended with, from `run --json`.
#[derive(Debug, Clone, Default)]
pub struct RunResult {
    /// `run`'s exit code (the plan's when planning failed).
    pub exit: i32,
    pub planned: bool,
    pub goal: bool,
    pub covered: usize,
    pub criteria: usize,
    pub steps: usize,
    /// Steps not `done` (`S02 failed STEP_NO_CHANGE`), criteria not covered,
    /// and the run's reason; the plan's exit when it failed.
    pub short: Vec<String>,
}

impl RunResult {
    fn of(exit: i32, stdout: &str) -> RunResult {
        let v: Value = serde_json::from_str(stdout).unwrap_or_default();
        let acs = v["evidence"]["acceptance_criteria"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let steps = v["steps"].as_array().cloned().unwrap_or_default();
        let mut short: Vec<String> = steps
            .iter()
            .filter(|s| s["status"] != "done")
            .map(|s| {
                format!(
                    "{} {} {}",
                    s["step_id"].as_str().unwrap_or("?"),
                    s["status"].as_str().unwrap_or("?"),
                    s["reason_code"].as_str().unwrap_or("")
                )
            })
            .collect();
        short.extend(
            acs.iter()
                .filter(|a| a["status"] != "covered")
                .map(|a| format!("{} {}", a["ac"].as_str().unwrap_or("?"), a["status"])),
        );
        if let Some(reason) = v["summary"]["reason"].as_str() {
            short.push(reason.to_string());
        }
        RunResult {
            exit,
            planned: true,
            goal: v["summary"]["goal_achieved"] == Value::Bool(true),
            covered: acs.iter().filter(|a| a["status"] == "covered").count(),
            criteria: acs.len(),
            steps: steps.len(),
            short,
        }
    }
}

/// The end-to-end cell: `dandori plan REQUEST --repo . --json`, then
/// `dandori run RUN_DIR --sandbox MECH --executor command --agent-cmd AGENT
/// --json` plus `extra` (`-c` settings), each through `invoke`.
pub fn plan_then_run(
    invoke: &mut Invoke<'_>,
    request: &str,
    mech: &str,
    agent_cmd: &str,
    extra: &[&str],
) -> RunResult {
    let (code, out) = invoke("plan", &["plan", request, "--repo", ".", "--json"]);
    let plan: Value = serde_json::from_str(&out).unwrap_or_default();
    let Some(run_dir) = plan["run_dir"].as_str().filter(|_| code == 0) else {
        return RunResult {
            exit: code,
            short: vec![format!("plan exit {code}")],
            ..RunResult::default()
        };
    };
    let mut args = vec![
        "run",
        run_dir,
        "--sandbox",
        mech,
        "--executor",
        "command",
        "--agent-cmd",
        agent_cmd,
        "--json",
    ];
    args.extend(extra);
    let (exit, out) = invoke("run", &args);
    RunResult::of(exit, &out)
}

/// Runs `cell` over `cells`, `jobs` at once, each in a fresh temporary
/// directory under `root`; a panicking cell becomes `on_panic(message)`. Then
/// `done(cell, result, wall)` reports it and says whether to keep its directory
/// (announced on stderr). Results in the cells' order.
pub fn pool<C: Sync, R: Send>(
    cells: &[C],
    jobs: usize,
    root: &Path,
    prefix: &str,
    cell: impl Fn(&Path, &C) -> R + Sync,
    on_panic: impl Fn(String) -> R + Sync,
    done: impl Fn(&C, &R, Duration) -> bool + Sync,
) -> Vec<R> {
    let next = Mutex::new(0usize);
    let results: Mutex<BTreeMap<usize, R>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(c) = cells.get(i) else { break };
                    let dir = tempfile::Builder::new()
                        .prefix(prefix)
                        .tempdir_in(root)
                        .unwrap();
                    let start = Instant::now();
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        cell(dir.path(), c)
                    }))
                    .unwrap_or_else(|p| {
                        on_panic(format!(
                            "panicked: {}",
                            p.downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        ))
                    });
                    if done(c, &r, start.elapsed()) {
                        #[allow(clippy::print_stderr)] // where the kept cell is
                        {
                            eprintln!("    kept in {}", dir.keep().display());
                        }
                    }
                    results.lock().unwrap().insert(i, r);
                }
            });
        }
    });
    results.into_inner().unwrap().into_values().collect()
}
