//! The journey matrix (issue 37): the first journeys a user takes, run on the
//! dandori binary as whoever runs the tests (root in CI), each from a fresh HOME
//! with an empty dandori tool cache and only the image's tools on `PATH` (no uv,
//! pnpm or yarn: dandori bootstraps them), for eight ecosystems under both sandbox
//! mechanisms. As root, half the checkouts are copied from a read-only tree
//! (dirs 0555, files 0444, as `cp -r` leaves them).
//!
//! - `env setup` then the repository's own tests through `env exec`: both exit 0;
//! - `plan` + `run` with a scripted agent that does the whole feature at its first
//!   step, as real agent CLIs do: exit 0, goal achieved, the feature on the run's
//!   branch, the user's checkout unchanged (HEAD, branch, `git status
//!   --porcelain --ignored` outside `.dandori/`, `.git/info/exclude`), the
//!   environment prepared in `.git/dandori/environment/tree`.
//!
//! No internet: wheels and npm tarballs that scripts/test.sh downloads are served
//! from 127.0.0.1 (`PIP_INDEX_URL`, `UV_DEFAULT_INDEX`, `npm_config_registry`).
//! Each cell's wall time and the CPU of dandori and its children (a shell's `times`) go to
//! stderr and to `target/tmp/journeys-<journey>.md` (docs/environment.md's table).
//! `DANDORI_JOURNEY_JOBS` cells run at once (default 2 per journey);
//! `DANDORI_JOURNEY_ONLY=<text>` keeps the ecosystems whose name holds it;
//! `DANDORI_JOURNEY_KEEP=1` keeps the directories of failed cells (`all`: of
//! every cell).

mod ecosystems;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dandori_test_support::PackageIndex;
use ecosystems::Ecosystem;
use pretty_assertions::assert_eq;

use super::end_to_end::{self, BIN, run_ok};
const MECHANISMS: [&str; 2] = ["bubblewrap", "landlock"];

/// `target/test-tools` (scripts/test.sh's `DANDORI_TEST_TOOLS`).
fn test_tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
}

/// The index every cell installs from, started once.
fn index() -> &'static PackageIndex {
    static INDEX: std::sync::OnceLock<(tempfile::TempDir, PackageIndex)> =
        std::sync::OnceLock::new();
    &INDEX
        .get_or_init(|| {
            let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let index = PackageIndex::start(dir.path());
            index.add_wheels(&test_tools().join("wheels"));
            index.add_npm_tarballs(&test_tools().join("npm-tarballs"));
            (dir, index)
        })
        .1
}

/// This process's `PATH` without the test tools (uv, pytest, pnpm, yarn, the MCP
/// servers) but with bubblewrap, which the image provides in CI.
fn image_path() -> String {
    let tools = test_tools();
    let tools = tools.canonicalize().unwrap_or(tools);
    let bwrap = tools.join("bubblewrap/usr/bin");
    let kept = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|d| !d.starts_with(&tools) && !d.starts_with(test_tools()))
        .collect::<Vec<_>>();
    let path = std::env::join_paths(std::iter::once(bwrap).chain(kept)).unwrap();
    let path = path.into_string().unwrap();
    for tool in ["uv", "pnpm", "yarn"] {
        assert!(
            !std::env::split_paths(&path).any(|d| d.join(tool).is_file()),
            "`{tool}` is on the image's PATH ({path}): the journeys start without it"
        );
    }
    path
}

/// Where the cells live: `DANDORI_JOURNEY_TMP`, else the system's temporary
/// directory, as a user's clone would; not under this workspace, whose
/// Cargo.toml cargo would take for the cargo fixture's workspace root (readable
/// or not: under Landlock it exists but cannot be read, and cargo stops).
fn cells_dir() -> PathBuf {
    std::env::var_os("DANDORI_JOURNEY_TMP")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir)
}

/// One cell's place: a fresh HOME (a git identity and nothing else) and the
/// repository, and the environment a user's shell in the image would have.
struct Cell {
    dir: PathBuf,
    repo: PathBuf,
    env: BTreeMap<String, String>,
}

fn cell(root: &Path, eco: &Ecosystem, readonly: bool) -> Cell {
    let dir = root.to_path_buf();
    let mut env = end_to_end::fresh_home(&dir, "Journey");
    env.insert("PATH".into(), image_path());
    let index = index();
    for var in ["PIP_INDEX_URL", "UV_INDEX_URL", "UV_DEFAULT_INDEX"] {
        env.insert(var.into(), index.simple_url());
    }
    env.insert("npm_config_registry".into(), index.npm_url());
    // Whatever would still reach for the internet meets a closed port.
    for var in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"] {
        env.insert(var.into(), "http://127.0.0.1:9".into());
    }
    for var in ["NO_PROXY", "no_proxy"] {
        env.insert(var.into(), "127.0.0.1,localhost".into());
    }

    // The package as its author committed it, then copied as a user copies it.
    let src = dir.join("src");
    for (path, text) in &eco.files {
        let p = src.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
    if readonly {
        chmod_read_only(&src);
    }
    let repo = dir.join("repo");
    run_ok(&env, &dir, &["cp", "-r", "src", "repo"]);
    end_to_end::commit_all(&env, &repo, "calc: add");
    Cell { dir, repo, env }
}

fn chmod_read_only(dir: &Path) {
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            chmod_read_only(&path);
        } else {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        }
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
}

/// One dandori invocation: exit code, stdout, stderr, wall time and the CPU
/// time of dandori and every child it waited for.
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
    wall: Duration,
    /// None where it cannot be measured (bubblewrap without a cgroup).
    cpu: Option<Duration>,
}

impl Ran {
    fn tail(&self) -> String {
        let lines: Vec<&str> = self.stderr.lines().collect();
        lines[lines.len().saturating_sub(4)..].join(" | ")
    }
}

/// Runs dandori under `timeout`, in a shell whose `times` then reports the CPU
/// of its children: dandori and every process it waited for. bubblewrap's
/// sandboxed processes never reach that sum (its PID namespace's init is not
/// waited for), so with `DANDORI_JOURNEY_CGROUP` (a cgroup directory: v1
/// `cpuacct` or v2) the shell first moves into a cgroup of its own there and
/// reports the cgroup's CPU usage too.
const TIMED: &str = r#"out=$JOURNEY_TIMES; cg=$JOURNEY_CGROUP; unset JOURNEY_TIMES JOURNEY_CGROUP
if [ -n "$cg" ]; then cg="$cg/journey-$$"; mkdir "$cg" && echo $$ > "$cg/cgroup.procs" || cg=; fi
timeout "$0" "$@"; rc=$?
times > "$out"
if [ -n "$cg" ]; then
  if [ -f "$cg/cpuacct.usage" ]; then echo "ns $(cat "$cg/cpuacct.usage")" >> "$out"
  else echo "us $(sed -n 's/^usage_usec //p' "$cg/cpu.stat")" >> "$out"; fi
  echo $$ > "${cg%/*}/cgroup.procs"; rmdir "$cg" 2>/dev/null
fi
exit $rc"#;

fn dandori(c: &Cell, name: &str, args: &[&str], timeout: Duration) -> Ran {
    let file = |ext: &str| c.dir.join(format!("{name}.{ext}"));
    let start = Instant::now();
    let status = Command::new("sh")
        .args(["-c", TIMED])
        .arg(format!("{}s", timeout.as_secs()))
        .arg(BIN)
        .args(args)
        .current_dir(&c.repo)
        .env_clear()
        .envs(&c.env)
        .env("JOURNEY_TIMES", file("times"))
        .env(
            "JOURNEY_CGROUP",
            std::env::var("DANDORI_JOURNEY_CGROUP").unwrap_or_default(),
        )
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(file("out")).unwrap())
        .stderr(std::fs::File::create(file("err")).unwrap())
        .status()
        .unwrap();
    let wall = start.elapsed();
    // `times`: the shell's user and system time, then its children's
    // (`0m1.230000s 0m0.450000s`); then the cgroup's usage when measured.
    let times = std::fs::read_to_string(file("times")).unwrap_or_default();
    let seconds = |t: &str| -> f64 {
        let (m, s) = t
            .trim_end_matches('s')
            .split_once('m')
            .unwrap_or(("0", "0"));
        m.parse::<f64>().unwrap_or(0.0) * 60.0 + s.parse::<f64>().unwrap_or(0.0)
    };
    let mut cpu = times
        .lines()
        .nth(1)
        .map(|l| l.split_whitespace().map(seconds).sum::<f64>())
        .map(Duration::from_secs_f64);
    let cgroup = times.lines().find_map(|l| match l.split_once(' ')? {
        ("ns", n) => n.trim().parse().ok().map(Duration::from_nanos),
        ("us", n) => n.trim().parse().ok().map(Duration::from_micros),
        _ => None,
    });
    if cgroup.is_some() {
        cpu = cgroup;
    } else if args.contains(&"bubblewrap") {
        cpu = None;
    }
    Ran {
        // 124: `timeout` ended it.
        code: status.code().unwrap_or(-1),
        stdout: std::fs::read_to_string(file("out")).unwrap_or_default(),
        stderr: std::fs::read_to_string(file("err")).unwrap_or_default(),
        wall,
        cpu,
    }
}

/// A cell's outcome: "ok" or what fell short, with its times.
#[derive(Debug, Clone)]
struct Outcome {
    verdict: String,
    phases: Vec<Phase>,
}

/// A timed phase: its wall time and the CPU of dandori and its children
/// (`None`: not measurable here); a `part` of the phase before it has none.
#[derive(Debug, Clone)]
struct Phase {
    name: &'static str,
    wall: Duration,
    cpu: Option<Duration>,
    part: bool,
}

impl Phase {
    fn of(name: &'static str, ran: &Ran) -> Phase {
        Phase {
            name,
            wall: ran.wall,
            cpu: ran.cpu,
            part: false,
        }
    }
}

fn setup_then_tests(c: &Cell, eco: &Ecosystem, mech: &str) -> Outcome {
    let repo = c.repo.display().to_string();
    let setup = dandori(
        c,
        "setup",
        &["env", "setup", "--repo", &repo, "--sandbox", mech],
        Duration::from_secs(600),
    );
    let mut phases = vec![Phase::of("env setup", &setup)];
    // What setup.json measured (install and verification); the rest of the
    // setup's time is dandori bootstrapping its tools (and analysing).
    // setup.json: in the git directory, or `.dandori/` for older builds.
    let recorded = [".git/dandori/environment", ".dandori/environment"]
        .iter()
        .find_map(|d| std::fs::read_to_string(c.repo.join(d).join("setup.json")).ok())
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|v| v["duration_ms"].as_u64());
    if let Some(ms) = recorded {
        phases.push(Phase {
            name: "of which install + verify",
            wall: Duration::from_millis(ms),
            cpu: None,
            part: true,
        });
    }
    if setup.code != 0 {
        let verdict = format!("env setup exit {}: {}", setup.code, setup.tail());
        return Outcome { verdict, phases };
    }
    let mut args = vec!["env", "exec", "--repo", &repo, "--sandbox", mech, "--"];
    args.extend(eco.test);
    let tests = dandori(c, "tests", &args, Duration::from_secs(300));
    phases.push(Phase::of("tests", &tests));
    if tests.code != 0 {
        let verdict = format!(
            "`{}` exit {}: {}",
            eco.test.join(" "),
            tests.code,
            tests.tail()
        );
        return Outcome { verdict, phases };
    }
    // The scripted agent's feature passes the same tests (so a plan + run that
    // falls short does not fall short on the fixture).
    let agent = c.dir.join("agent.py");
    std::fs::write(&agent, ecosystems::agent_script(eco)).unwrap();
    run_ok(&c.env, &c.repo, &["python3", &agent.display().to_string()]);
    let feature = dandori(c, "feature", &args, Duration::from_secs(300));
    let output = format!("{}{}", feature.stdout, feature.stderr);
    let verdict = if feature.code != 0 || !output.contains(eco.feature_test) {
        format!(
            "with the agent's feature, `{}` exit {} (test `{}` ran: {}): {}",
            eco.test.join(" "),
            feature.code,
            eco.feature_test,
            output.contains(eco.feature_test),
            feature.tail()
        )
    } else {
        "ok".to_string()
    };
    Outcome { verdict, phases }
}

/// HEAD, branch, `git status --porcelain --ignored` outside `.dandori/` (the
/// runs root) and `.git/info/exclude` of the user's checkout: a run prepares
/// its environment in dandori's environment tree, so nothing of it — `.venv`,
/// `node_modules`, `*.egg-info`, an exclude line that hides them — appears here.
fn checkout(c: &Cell) -> String {
    let git = |args: &[&str]| run_ok(&c.env, &c.repo, &[&["git"], args].concat());
    let status: String = git(&["status", "--porcelain", "--ignored"])
        .lines()
        .filter(|l| !l.get(3..).unwrap_or("").starts_with(".dandori/"))
        .map(|l| format!("{l}\n"))
        .collect();
    let exclude = std::fs::read_to_string(c.repo.join(".git/info/exclude")).unwrap_or_default();
    format!(
        "{}{}{status}--- .git/info/exclude\n{exclude}",
        git(&["rev-parse", "HEAD"]),
        git(&["branch", "--show-current"]),
    )
}

/// Where the run prepared its environment: setup.json's `repo`, which must be
/// the environment tree in the clone's git directory, never the clone.
fn prepared_in_tree(c: &Cell) -> Result<(), String> {
    let tree = c.repo.join(".git/dandori/environment/tree");
    let runs = c.repo.join(".dandori/runs");
    let setup = walk_for(&runs, "setup.json").ok_or("no setup.json under .dandori/runs")?;
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&setup).unwrap_or_default())
            .unwrap_or_default();
    let repo = v["repo"].as_str().unwrap_or_default();
    let tree = tree.canonicalize().unwrap_or(tree);
    if Path::new(repo) != tree {
        return Err(format!("set up in {repo}, not in {}", tree.display()));
    }
    Ok(())
}

fn walk_for(dir: &Path, name: &str) -> Option<PathBuf> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.file_name().is_some_and(|n| n == name) {
            return Some(p);
        }
        if p.is_dir()
            && p.file_name().is_some_and(|n| n != "worktrees")
            && let Some(found) = walk_for(&p, name)
        {
            return Some(found);
        }
    }
    None
}

fn plan_then_run(c: &Cell, eco: &Ecosystem, mech: &str) -> Outcome {
    let agent = c.dir.join("agent.py");
    std::fs::write(&agent, ecosystems::agent_script(eco)).unwrap();
    let before = checkout(c);
    let agent_cmd = format!("python3 {} {{prompt}}", agent.display());
    let mut phases = Vec::new();
    let mut tail = String::new();
    let mut invoke = |name: &'static str, args: &[&str]| {
        let limit = Duration::from_secs(if name == "run" { 600 } else { 120 });
        let ran = dandori(c, name, args, limit);
        phases.push(Phase::of(name, &ran));
        tail = ran.tail();
        (ran.code, ran.stdout)
    };
    let run = end_to_end::plan_then_run(&mut invoke, "requests/mul.md", mech, &agent_cmd, &[]);
    let mut short = Vec::new();
    if !run.planned {
        let verdict = format!("plan exit {}: {tail}", run.exit);
        return Outcome { verdict, phases };
    }
    if run.exit != 0 || !run.goal {
        let why = if run.short.is_empty() {
            tail.clone()
        } else {
            run.short.join("; ")
        };
        short.push(format!(
            "run exit {}, goal_achieved {}: {why}",
            run.exit, run.goal
        ));
    } else {
        // The feature is on the run's branch.
        let branches = run_ok(
            &c.env,
            &c.repo,
            &[
                "git",
                "for-each-ref",
                "--format=%(refname:short)",
                "refs/heads/dandori/",
            ],
        );
        let (file, text) = eco.landed;
        let landed = branches.lines().any(|b| {
            Command::new("git")
                .args(["show", &format!("{b}:{file}")])
                .current_dir(&c.repo)
                .env_clear()
                .envs(&c.env)
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(text))
        });
        if !landed {
            short.push(format!(
                "no dandori/ branch holds `{text}` in {file} ({branches:?})"
            ));
        }
    }
    let after = checkout(c);
    if after != before {
        short.push(format!(
            "the user's checkout changed: before {before:?}, after {after:?}"
        ));
    }
    if run.planned
        && let Err(e) = prepared_in_tree(c)
    {
        short.push(e);
    }
    let verdict = if short.is_empty() {
        "ok".to_string()
    } else {
        short.join("; ")
    };
    Outcome { verdict, phases }
}

type Journey = fn(&Cell, &Ecosystem, &str) -> Outcome;

/// Runs `journey` over ecosystems × mechanisms on a few threads; asserts every
/// cell says "ok" and writes the timings to `target/tmp/journeys-<name>.md`.
#[allow(clippy::print_stderr)] // the matrix's verdicts and timings are the test's report
fn matrix(name: &str, journey: Journey) {
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&path).any(|d| d.join("bwrap").is_file())
            || test_tools().join("bubblewrap/usr/bin/bwrap").is_file(),
        "bwrap not found: run the tests with ./scripts/test.sh, which unpacks it into target/test-tools"
    );
    index();
    let only = std::env::var("DANDORI_JOURNEY_ONLY").unwrap_or_default();
    let mut cells = Vec::new();
    for (e, eco) in ecosystems::all().into_iter().enumerate() {
        if !eco.name.contains(only.as_str()) {
            continue;
        }
        let eco = std::sync::Arc::new(eco);
        for (m, mech) in MECHANISMS.into_iter().enumerate() {
            // Read-only copies need root (a user cannot commit into a 0555 checkout).
            cells.push((
                eco.clone(),
                mech,
                super::running_as_root() && (e + m) % 2 == 1,
            ));
        }
    }
    let jobs: usize = std::env::var("DANDORI_JOURNEY_JOBS")
        .ok()
        .and_then(|j| j.parse().ok())
        .unwrap_or(2);
    let keep = std::env::var("DANDORI_JOURNEY_KEEP").unwrap_or_default();
    let results = end_to_end::pool(
        &cells,
        jobs,
        &cells_dir(),
        "journey-",
        |root, (eco, mech, readonly)| {
            let start = Instant::now();
            let c = cell(root, eco, *readonly);
            let outcome = journey(&c, eco, mech);
            (start.elapsed(), outcome)
        },
        |verdict| {
            (
                Duration::ZERO,
                Outcome {
                    verdict,
                    phases: Vec::new(),
                },
            )
        },
        |(eco, mech, readonly), (_, outcome), wall| {
            eprintln!(
                "journey {:<28} {:<10} {:<9} {:>5.1}s {}",
                eco.name,
                mech,
                if *readonly { "read-only" } else { "writable" },
                wall.as_secs_f64(),
                outcome.verdict
            );
            keep == "all" || (!keep.is_empty() && outcome.verdict != "ok")
        },
    );
    let mut table = "| ecosystem | sandbox | checkout | verdict | wall | phases (wall / CPU of dandori + children) |\n\
         |---|---|---|---|---|---|\n"
        .to_string();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    for (i, (eco, mech, readonly)) in cells.iter().enumerate() {
        let (wall, outcome) = &results[i];
        let phases: Vec<String> = outcome
            .phases
            .iter()
            .map(|p| {
                let cpu = match (p.part, p.cpu) {
                    (true, _) => String::new(),
                    (false, Some(c)) => format!(" / {:.1} s", c.as_secs_f64()),
                    (false, None) => " / n/a".to_string(),
                };
                format!("{} {:.1} s{cpu}", p.name, p.wall.as_secs_f64())
            })
            .collect();
        table.push_str(&format!(
            "| {} | {mech} | {} | {} | {:.1} s | {} |\n",
            eco.name,
            if *readonly { "read-only" } else { "writable" },
            if outcome.verdict == "ok" {
                "ok"
            } else {
                "**fails**"
            },
            wall.as_secs_f64(),
            phases.join(", ")
        ));
        got.push(format!("{} / {mech}: {}", eco.name, outcome.verdict));
        want.push(format!("{} / {mech}: ok", eco.name));
    }
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("journeys-{name}.md"));
    std::fs::write(&out, &table).unwrap();
    eprintln!("{table}(also in {})", out.display());
    assert_eq!(got, want);
}

#[test]
fn journeys_env_setup_then_the_repositorys_own_tests() {
    matrix("env-setup", setup_then_tests);
}

#[test]
fn journeys_plan_and_run_with_an_agent_that_does_the_whole_feature_at_once() {
    matrix("plan-run", plan_then_run);
}
