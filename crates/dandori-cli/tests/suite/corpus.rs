//! The end-to-end corpus (issue 36): 47 requests of every shape (prose feature,
//! enumeration, inline enumeration, bug report with a traceback or a session,
//! rename, refactor, docs only, Japanese, multi-file feature; seven of them real
//! issue texts of SWE-bench Verified adapted to these packages) on four small real
//! repositories (`tests/fixtures/corpus/`: `textkit`, Python with unittest;
//! `shop`, Python with pytest; `units`, Node with `node --test`; `tally`, Rust
//! with cargo), each run from the dandori binary (`plan`, then `run` with the
//! offline planner's plan and the sandbox on: bubblewrap and Landlock in turn)
//! by three scripted agents:
//!
//! * `whole` does the whole request at its first step, as Claude Code or Codex
//!   do: exit 0, goal achieved, every acceptance criterion covered;
//! * `steps` does only what each step's targets ask (the solution's hunks of
//!   the files the prompt's "change only:" names): exit 0;
//! * `comment` appends a comment to the step's first target: exit 1.
//!
//! Each corpus entry (`<repo>.corpus`) carries its request (criteria included)
//! and its solution as hunks; the agent (`tests/fixtures/corpus/agent.py`) is
//! one general mechanism that applies them, nothing in dandori knows the
//! corpus. The table (shape × agent → exit, goal, criteria covered) goes to
//! stderr and `target/tmp/corpus.md` (docs/planner.md carries it).
//!
//! Each cell is `end_to_end::plan_then_run` (the journeys' cell too), the cells
//! run through `end_to_end::pool`.
//!
//! `DANDORI_CORPUS_JOBS` cells run at once (default 3); `DANDORI_CORPUS_ONLY`
//! keeps the entries whose id holds it (`tk-`, `sh-04`); `DANDORI_CORPUS_KEEP=1`
//! keeps the directories of failed cells (`all`: of every cell).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;

use super::end_to_end::{self, BIN, RunResult};
const REPOS: [&str; 4] = ["textkit", "shop", "units", "tally"];
const AGENTS: [&str; 3] = ["whole", "steps", "comment"];
const MECHANISMS: [&str; 2] = ["bubblewrap", "landlock"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus")
}

/// One request of the corpus.
#[derive(Debug, Clone)]
struct Entry {
    repo: &'static str,
    id: String,
    shape: String,
    request: String,
    /// The `@@@` hunks agent.py applies.
    solution: String,
}

/// Splits `<repo>.corpus`: `@@@ entry ID | SHAPE`, then `@@@ request` and its
/// text, then the solution's hunks up to the next entry.
fn entries(repo: &'static str) -> Vec<Entry> {
    let path = fixtures().join(format!("{repo}.corpus"));
    let text = std::fs::read_to_string(&path).unwrap();
    text.split("@@@ entry ")
        .skip(1)
        .map(|chunk| {
            let (head, rest) = chunk.split_once('\n').unwrap();
            let (id, shape) = head.split_once('|').unwrap();
            let rest = rest
                .strip_prefix("@@@ request\n")
                .unwrap_or_else(|| panic!("{}: {id}: no `@@@ request`", path.display()));
            let at = rest
                .find("\n@@@ ")
                .unwrap_or_else(|| panic!("{}: {id}: no solution", path.display()));
            Entry {
                repo,
                id: id.trim().to_string(),
                shape: shape.trim().to_string(),
                request: rest[..=at].to_string(),
                solution: rest[at + 1..].to_string(),
            }
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        if matches!(
            name.to_str(),
            Some("__pycache__" | ".pytest_cache" | "target" | "node_modules")
        ) {
            continue;
        }
        let (src, dst) = (entry.path(), to.join(&name));
        if src.is_dir() {
            copy_dir(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The environment of a user's shell here, from a fresh HOME: the test tools
/// stay on `PATH` (pytest comes from them).
fn environment(dir: &Path) -> BTreeMap<String, String> {
    let mut env = end_to_end::fresh_home(dir, "Corpus");
    if let Ok(path) = std::env::var("PATH") {
        env.insert("PATH".into(), path);
    }
    env
}

/// `argv` under `timeout`, its stdout and stderr in `log`.{out,err}.
fn run(
    env: &BTreeMap<String, String>,
    cwd: &Path,
    limit: Duration,
    argv: &[&str],
    log: &Path,
) -> (i32, String) {
    let status = Command::new("timeout")
        .arg(format!("{}s", limit.as_secs()))
        .args(argv)
        .current_dir(cwd)
        .env_clear()
        .envs(env)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(log.with_extension("out")).unwrap())
        .stderr(std::fs::File::create(log.with_extension("err")).unwrap())
        .status()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(log.with_extension("out")).unwrap_or_default(),
    )
}

/// What one cell (entry × agent) ended with.
#[derive(Debug, Clone, Default)]
struct Outcome {
    run: RunResult,
    wall: Duration,
}

impl Outcome {
    fn expected(&self, agent: &str) -> bool {
        let r = &self.run;
        match agent {
            "whole" => r.exit == 0 && r.goal && r.covered == r.criteria,
            "steps" => r.exit == 0,
            _ => r.exit == 1 && !r.goal,
        }
    }
}

fn cell(dir: &Path, entry: &Entry, agent: &str, mech: &str) -> Outcome {
    let start = Instant::now();
    let env = environment(dir);
    let repo = dir.join("repo");
    copy_dir(&fixtures().join(entry.repo), &repo);
    end_to_end::commit_all(&env, &repo, "initial commit");
    let request = dir.join("request.md");
    std::fs::write(&request, &entry.request).unwrap();
    // The sandbox shows the agent its script and nothing else outside the
    // worktree: the solution goes into the cell's copy of the script.
    let script = std::fs::read_to_string(fixtures().join("agent.py")).unwrap();
    let agent_py = dir.join("agent.py");
    std::fs::write(
        &agent_py,
        format!(
            "SOLUTION = {}\n{script}",
            serde_json::to_string(&entry.solution).unwrap()
        ),
    )
    .unwrap();
    let agent_cmd = format!("python3 {} --mode {agent} {{prompt}}", agent_py.display());
    let mut invoke = |name: &'static str, args: &[&str]| {
        let limit = Duration::from_secs(if name == "run" { 300 } else { 120 });
        let argv = [&[BIN][..], args].concat();
        run(&env, &repo, limit, &argv, &dir.join(format!("{name}.log")))
    };
    let run = end_to_end::plan_then_run(
        &mut invoke,
        &request.display().to_string(),
        mech,
        &agent_cmd,
        // The environment gate's setup has its own matrix (journeys.rs);
        // these repositories need nothing installed.
        &["-c", "planning.environment_setup.enabled=false"],
    );
    Outcome {
        run,
        wall: start.elapsed(),
    }
}

/// Rows of the summary table: per shape and agent, how many cells ended as
/// expected, their exits, goals and criteria covered.
fn table(results: &[(Entry, &str, Outcome)]) -> String {
    let mut shapes: BTreeMap<&str, BTreeMap<&str, Vec<&Outcome>>> = BTreeMap::new();
    for (entry, agent, outcome) in results {
        shapes
            .entry(entry.shape.as_str())
            .or_default()
            .entry(agent)
            .or_default()
            .push(outcome);
    }
    let mut t = "| shape | requests | agent | as expected | exit 0 / 1 / other | goal achieved | criteria covered | steps (mean) |\n\
                 |---|---|---|---|---|---|---|---|\n"
        .to_string();
    let mut row = |shape: &str, agent: &str, cells: &[&Outcome]| {
        let n = cells.len();
        let exits = |c: i32| cells.iter().filter(|o| o.run.exit == c).count();
        t.push_str(&format!(
            "| {shape} | {n} | {agent} | {}/{n} | {} / {} / {} | {}/{n} | {}/{} | {:.1} |\n",
            cells.iter().filter(|o| o.expected(agent)).count(),
            exits(0),
            exits(1),
            n - exits(0) - exits(1),
            cells.iter().filter(|o| o.run.goal).count(),
            cells.iter().map(|o| o.run.covered).sum::<usize>(),
            cells.iter().map(|o| o.run.criteria).sum::<usize>(),
            cells.iter().map(|o| o.run.steps).sum::<usize>() as f64 / n.max(1) as f64,
        ));
    };
    for (shape, agents) in &shapes {
        for agent in AGENTS {
            if let Some(cells) = agents.get(agent) {
                row(shape, agent, cells);
            }
        }
    }
    for agent in AGENTS {
        let cells: Vec<&Outcome> = results
            .iter()
            .filter(|(_, a, _)| *a == agent)
            .map(|(_, _, o)| o)
            .collect();
        row("**all**", agent, &cells);
    }
    t
}

/// 141 runs: about 8 minutes on an idle 2-core machine, more than half an hour
/// on a busy one. Run with `cargo test -p dandori --test all corpus_forty -- --ignored`
/// (the table in docs/planner.md comes from it).
#[test]
#[ignore = "141 end-to-end runs; run with --ignored"]
#[allow(clippy::print_stderr)] // the corpus's table and verdicts are the test's report
fn corpus_forty_requests_end_to_end_with_three_scripted_agents() {
    let only = std::env::var("DANDORI_CORPUS_ONLY").unwrap_or_default();
    let all: Vec<Entry> = REPOS.into_iter().flat_map(entries).collect();
    assert!(all.len() >= 40, "the corpus has {} requests", all.len());
    let mut cells = Vec::new();
    for entry in all.into_iter().filter(|e| e.id.contains(only.as_str())) {
        for agent in AGENTS {
            let mech = MECHANISMS[cells.len() % MECHANISMS.len()];
            cells.push((entry.clone(), agent, mech));
        }
    }
    let jobs: usize = std::env::var("DANDORI_CORPUS_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(3);
    let keep = std::env::var("DANDORI_CORPUS_KEEP").unwrap_or_default();
    let start = Instant::now();
    let outcomes = end_to_end::pool(
        &cells,
        jobs,
        &std::env::temp_dir(),
        "corpus-",
        |dir, (entry, agent, mech)| cell(dir, entry, agent, mech),
        |panic| Outcome {
            run: RunResult {
                exit: -1,
                short: vec![panic],
                ..RunResult::default()
            },
            wall: Duration::ZERO,
        },
        |(entry, agent, mech), outcome, _| {
            let ok = outcome.expected(agent);
            let r = &outcome.run;
            eprintln!(
                "corpus {:<6} {:<24} {:<8} {:<10} exit {:>2} goal {:<5} criteria {}/{} {:>5.1}s {}{}",
                entry.id,
                entry.shape,
                agent,
                mech,
                r.exit,
                r.goal,
                r.covered,
                r.criteria,
                outcome.wall.as_secs_f64(),
                if ok { "ok" } else { "UNEXPECTED" },
                if ok || r.short.is_empty() {
                    String::new()
                } else {
                    format!(": {}", r.short.join("; "))
                }
            );
            keep == "all" || (!keep.is_empty() && !ok)
        },
    );
    let wall = start.elapsed();
    let rows: Vec<(Entry, &str, Outcome)> = cells
        .iter()
        .zip(outcomes)
        .map(|((e, a, _), o)| (e.clone(), *a, o))
        .collect();
    let mut report = table(&rows);
    report.push_str(&format!(
        "\n{} cells ({} requests × {} agents) in {:.0} s wall with {jobs} at once; {:.1} s per cell (mean)\n",
        rows.len(),
        rows.len() / AGENTS.len(),
        AGENTS.len(),
        wall.as_secs_f64(),
        rows.iter().map(|(_, _, o)| o.wall.as_secs_f64()).sum::<f64>() / rows.len().max(1) as f64
    ));
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("corpus.md");
    std::fs::write(&out, &report).unwrap();
    eprintln!("{report}(also in {})", out.display());
    let unexpected: Vec<String> = rows
        .iter()
        .filter(|(_, a, o)| !o.expected(a))
        .map(|(e, a, o)| {
            format!(
                "{} {a}: exit {} goal {}: {}",
                e.id,
                o.run.exit,
                o.run.goal,
                o.run.short.join("; ")
            )
        })
        .collect();
    assert_eq!(unexpected, Vec::<String>::new());
}
