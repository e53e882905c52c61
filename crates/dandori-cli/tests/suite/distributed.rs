//! `dandori run --engine restate` against a real Restate server (installed by
//! `scripts/test.sh` into target/test-tools) and real `dandori worker` processes,
//! each in its own working directory, sharing a local bare git remote.
//!
//! The kill test runs a 12-step plan in four execution groups on three workers
//! behind one address (a TCP balancer of this test, as a Kubernetes Service would
//! be), SIGKILLs the worker running S06 in the middle of the step, and SIGKILLs the
//! server while S10 (second-to-last group) runs, restarting it on the same
//! directory. It asserts every step is committed exactly once (one proof commit per
//! step on the work branch and one step ref on the remote), the work branch is the
//! same, commit for commit, as a local run of the same plan with the same scripted
//! agent, and report.md lists every step done.

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use dandori_test_support::plans::planning;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const RUN_DIR: &str = ".dandori/runs/RQ-7/run-7";

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The restate-server binary on PATH (scripts/test.sh links it there).
fn restate_server() -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("restate-server"))
                .find(|c| c.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "`restate-server` is not on PATH: run the tests with ./scripts/test.sh, which installs @restatedev/restate-server into target/test-tools/node and links it into target/test-tools/restate/bin"
            )
        })
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn wait_for(what: &str, limit: Duration, mut ready: impl FnMut() -> bool) {
    let start = Instant::now();
    while !ready() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A Restate server on free ports with its own base directory; killed on drop.
struct Server {
    bin: PathBuf,
    base: PathBuf,
    ingress: u16,
    admin: u16,
    fabric: u16,
    child: Option<Child>,
    /// The request identity private key the server signs its requests with.
    identity: Option<PathBuf>,
}

impl Server {
    fn start(base: &Path) -> Server {
        Server::with_identity(base, None)
    }

    /// A server that signs every request to a deployment with `pem`.
    fn signing(base: &Path, pem: &Path) -> Server {
        Server::with_identity(base, Some(pem.to_path_buf()))
    }

    fn with_identity(base: &Path, identity: Option<PathBuf>) -> Server {
        let mut s = Server {
            bin: restate_server(),
            base: base.to_path_buf(),
            ingress: free_port(),
            admin: free_port(),
            fabric: free_port(),
            child: None,
            identity,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.base.with_extension("log"))
            .unwrap();
        let mut cmd = Command::new(&self.bin);
        if let Some(pem) = &self.identity {
            cmd.env("RESTATE_REQUEST_IDENTITY_PRIVATE_KEY_PEM_FILE", pem);
        }
        let child = cmd
            .arg("--base-dir")
            .arg(&self.base)
            .args(["--node-name", "n1"])
            .env("RESTATE_BIND_PORT", self.fabric.to_string())
            .env("RESTATE_INGRESS__BIND_PORT", self.ingress.to_string())
            .env("RESTATE_ADMIN__BIND_PORT", self.admin.to_string())
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.child = Some(child);
        let (admin, ingress) = (self.admin, self.ingress);
        wait_for("the restate server", Duration::from_secs(60), || {
            http_ok(admin, "/health") && http_ok(ingress, "/restate/health")
        });
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn ingress_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.ingress)
    }

    fn admin_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.admin)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}

/// `GET path` answers 200.
fn http_ok(port: u16, path: &str) -> bool {
    use std::io::Write;
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 12];
    s.read_exact(&mut buf).is_ok() && buf.starts_with(b"HTTP/1.1 200")
}

/// One address in front of the workers (their ports, changeable while it runs):
/// each new connection goes to the next worker that accepts it (a dead one is
/// skipped), as a Service would.
fn balancer(workers: Arc<Mutex<Vec<u16>>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let next = Arc::new(AtomicUsize::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(client) = conn else { continue };
            let start = next.fetch_add(1, Ordering::SeqCst);
            let ports = workers.lock().unwrap().clone();
            let upstream = (0..ports.len()).find_map(|k| {
                let port = ports[(start + k) % ports.len()];
                TcpStream::connect(("127.0.0.1", port)).ok()
            });
            let Some(upstream) = upstream else { continue };
            for (mut from, mut to) in [
                (client.try_clone().unwrap(), upstream.try_clone().unwrap()),
                (upstream, client),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    port
}

fn step(id: &str, deps: &[&str]) -> Value {
    json!({
        "step_id": id, "title": format!("Write {id}"), "role": "implementer",
        "intent": format!("Write the files of {id}"),
        "scope": {"target_paths": [format!("src/{id}")], "max_diff_lines": 50},
        "inputs": {"request_path": "requests/RQ-7.md"},
        "depends_on": deps,
        "commands": {"unit": [format!("test -f src/{id}/main.txt")]},
        "success_criteria": ["the file exists"],
        "links_to_ac": ["AC-01", "AC-02", "AC-03"],
        "expected_diff": {"lines_max": 50, "files_max": 5, "risk_level": "low"},
        "outputs": {"patch_path": format!("patches/{id}.patch"), "log_prefix": format!("logs/step.{id}")}
    })
}

/// Twelve steps in four execution groups: S01–S04; S05–S08 (each on one of the
/// first); S09–S11 (each on two of the second); S12 on S09–S11.
fn twelve_steps() -> Vec<Value> {
    vec![
        step("S01", &[]),
        step("S02", &[]),
        step("S03", &[]),
        step("S04", &[]),
        step("S05", &["S01"]),
        step("S06", &["S02"]),
        step("S07", &["S03"]),
        step("S08", &["S04"]),
        step("S09", &["S05", "S06"]),
        step("S10", &["S06", "S07"]),
        step("S11", &["S07", "S08"]),
        step("S12", &["S09", "S10", "S11"]),
    ]
}

fn plan(run_id: &str, steps: Vec<Value>) -> Value {
    let mut plan = planning("RQ-7", run_id, steps, 120);
    plan["limits"]["max_diff_lines"] = json!(50);
    plan["limits"]["max_steps_per_run"] = json!(30);
    plan
}

/// The scripted agent: writes `src/<step>/main.txt`. A step with `ctl/hold.<step>`
/// stops on its first execution (recording where it runs and its process group in
/// `ctl/`) until `ctl/release.<step>` appears. Every execution is logged in
/// `ctl/started`.
fn agent(ctl: &Path) -> String {
    agent_with_latency(ctl, "0.3")
}

fn agent_with_latency(ctl: &Path, seconds: &str) -> String {
    let c = ctl.display();
    std::fs::write(
        ctl.join("agent.sh"),
        format!(
            r#"#!/bin/sh
set -e
s="$1"
echo "$s $(pwd)" >> "{c}/started"
if [ -f "{c}/hold.$s" ] && mkdir "{c}/held.$s" 2>/dev/null; then
  pwd > "{c}/where.$s"
  ps -o pgid= -p $$ | tr -d ' ' > "{c}/pgid.$s"
  echo $$ > "{c}/pid.$s"
  touch "{c}/reached.$s"
  i=0
  while [ ! -f "{c}/release.$s" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done
fi
mkdir -p "src/$s"
echo "content of $s" > "src/$s/main.txt"
sleep {seconds}
"#
        ),
    )
    .unwrap();
    format!("sh {c}/agent.sh {{step_id}}")
}

struct Setup {
    _dir: tempfile::TempDir,
    root: PathBuf,
    remote: PathBuf,
    /// HOME of every process: its .gitconfig gives all repositories (the run's and
    /// the workers') the same commit identity.
    home: PathBuf,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join(".gitconfig"),
        "[user]\n\tname = Test\n\temail = test@example.invalid\n[init]\n\tdefaultBranch = main\n",
    )
    .unwrap();
    let seed = root.join("seed");
    std::fs::create_dir_all(&seed).unwrap();
    let g = |dir: &Path, args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("HOME", &home)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}");
    };
    g(&seed, &["init", "-q", "-b", "main"]);
    std::fs::write(seed.join("README.md"), "# demo\n").unwrap();
    g(&seed, &["add", "-A"]);
    g(&seed, &["commit", "-q", "-m", "initial"]);
    let remote = root.join("remote.git");
    g(&root, &["clone", "-q", "--bare", "seed", "remote.git"]);
    Setup {
        _dir: dir,
        root,
        remote,
        home,
    }
}

impl Setup {
    /// A clone of the remote with `plan` in its run directory
    /// (`.dandori/runs/RQ-7/<run_id>`).
    fn checkout(&self, name: &str, plan: &Value) -> PathBuf {
        let out = Command::new("git")
            .args(["clone", "-q"])
            .arg(&self.remote)
            .arg(name)
            .current_dir(&self.root)
            .env("HOME", &self.home)
            .output()
            .unwrap();
        assert!(out.status.success());
        let repo = self.root.join(name);
        let run_dir = repo
            .join(".dandori/runs/RQ-7")
            .join(plan["run_id"].as_str().unwrap());
        std::fs::create_dir_all(&run_dir).unwrap();
        std::fs::write(
            run_dir.join("planning.json"),
            serde_json::to_string_pretty(plan).unwrap(),
        )
        .unwrap();
        std::fs::write(repo.join(".git/info/exclude"), ".dandori/\n").unwrap();
        repo
    }

    fn dandori(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("--sandbox")
            .arg("off")
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .stdin(Stdio::null());
        c
    }

    /// Workers `w<i>` for each `i`, each in its own directory, listening.
    fn workers(
        &self,
        ids: std::ops::RangeInclusive<usize>,
        agent_cmd: &str,
    ) -> (Vec<(String, Child)>, Vec<u16>) {
        let mut workers = Vec::new();
        let mut ports = Vec::new();
        for i in ids {
            let port = free_port();
            let name = format!("w{i}");
            workers.push((name.clone(), self.worker(&name, port, agent_cmd)));
            ports.push(port);
        }
        for p in &ports {
            wait_for("a worker", Duration::from_secs(30), || {
                TcpStream::connect(("127.0.0.1", *p)).is_ok()
            });
        }
        (workers, ports)
    }

    fn worker(&self, name: &str, port: u16, agent_cmd: &str) -> Child {
        let log = std::fs::File::create(self.root.join(format!("{name}.log"))).unwrap();
        self.worker_command(name, port, agent_cmd, &[])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    /// `dandori worker` `name` in its own directory, on `port`, with `extra` flags.
    fn worker_command(&self, name: &str, port: u16, agent_cmd: &str, extra: &[&str]) -> Command {
        let dir = self.root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        let listen = format!("127.0.0.1:{port}");
        let work_dir = dir.to_string_lossy().into_owned();
        let mut args = vec![
            "worker",
            "--listen",
            &listen,
            "--work-dir",
            &work_dir,
            "--agent-cmd",
            agent_cmd,
        ];
        args.extend_from_slice(extra);
        self.dandori(&dir, &args)
    }
}

/// The work branch, oldest first: (subject, hash, tree) of every commit.
fn history(repo: &Path, branch: &str) -> Vec<(String, String, String)> {
    git(
        repo,
        &[
            "log",
            "--reverse",
            "--topo-order",
            "--format=%s%x1f%H%x1f%T",
            branch,
        ],
    )
    .lines()
    .map(|l| {
        let mut p = l.split('\x1f').map(str::to_string);
        (
            p.next().unwrap_or_default(),
            p.next().unwrap_or_default(),
            p.next().unwrap_or_default(),
        )
    })
    .collect()
}

fn step_trailers(repo: &Path, branch: &str) -> Vec<String> {
    let mut steps: Vec<String> = git(
        repo,
        &[
            "log",
            "--format=%(trailers:key=Dandori-Step,valueonly)",
            branch,
        ],
    )
    .lines()
    .map(str::trim)
    .filter(|l| !l.is_empty())
    .map(str::to_string)
    .collect();
    steps.sort();
    steps
}

fn started(ctl: &Path, step: &str) -> Vec<String> {
    std::fs::read_to_string(ctl.join("started"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.strip_prefix(&format!("{step} ")).map(str::to_string))
        .collect()
}

/// The reference: the plan of run-7 and the scripted agent on the local engine.
fn local_reference(s: &Setup) -> PathBuf {
    let local = s.checkout("local", &plan("run-7", twelve_steps()));
    let ctl_local = s.root.join("ctl-local");
    std::fs::create_dir_all(&ctl_local).unwrap();
    let out = s
        .dandori(
            &local,
            &[
                "run",
                RUN_DIR,
                "--executor",
                "command",
                "--agent-cmd",
                &agent(&ctl_local),
                "--json",
            ],
        )
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "local run: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    local
}

/// Every step of run-7 done exactly once (one proof commit per step on the work
/// branch, one ref each on the remote), the work branch the same as the local
/// run's commit for commit, report.md and status complete.
/// `log`: the progress lines of the coordinator(s).
fn same_outcome_as_local(s: &Setup, repo: &Path, local: &Path, log: &str) {
    let all: Vec<String> = (1..=12).map(|i| format!("S{i:02}")).collect();
    let branch = "dandori/RQ-7/run-7";
    assert_eq!(step_trailers(repo, branch), all);
    let refs = git(
        &s.remote,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/dandori/runs/run-7/steps",
        ],
    );
    let refs: Vec<&str> = refs.lines().collect();
    assert_eq!(
        refs,
        all.iter()
            .map(|id| format!("refs/dandori/runs/run-7/steps/{id}"))
            .collect::<Vec<_>>()
    );
    assert_eq!(history(repo, branch), history(local, branch));
    let report = std::fs::read_to_string(repo.join(RUN_DIR).join("report.md")).unwrap();
    for id in &all {
        let row = report
            .lines()
            .find(|l| l.starts_with(&format!("| {id} |")))
            .unwrap_or_else(|| panic!("report.md has no row for {id}:\n{report}"));
        assert!(row.contains("| done |"), "{row}");
    }
    assert!(report.contains("**Executor:** restate"), "{report}");
    // The steps' logs and patches came back from the workers: the run directory
    // has the same files as the local run's.
    let files = |repo: &Path, sub: &str| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(repo.join(RUN_DIR).join(sub))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    // (A step recovered from the remote by another worker than the one that ran
    // it comes back without them.)
    for sub in ["logs", "patches"] {
        let (here, there) = (files(repo, sub), files(local, sub));
        assert!(!there.is_empty(), "the local run wrote no {sub}");
        assert!(here.iter().all(|f| there.contains(f)), "{sub}: {here:?}");
        for id in &all {
            let recovered = log.lines().any(|l| {
                l.starts_with(&format!("{id}: ran on worker"))
                    && l.contains("already on the remote")
            });
            assert!(
                recovered || here.iter().any(|f| f.contains(&format!("{id}."))),
                "{sub}: nothing of {id}: {here:?}"
            );
        }
    }
    let status = s.dandori(repo, &["status", RUN_DIR]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(status.contains("12/12 steps done"), "{status}");
    // status reads the run's workflow too.
    assert!(
        status.contains("restate workflow DandoriRun/run-7: finished — 12/12 done, 0 failed"),
        "{status}"
    );
}

/// `dandori run RUN_DIR --engine restate` on `server`, registering `worker`;
/// stdout piped, stderr to `log`.
fn restate_run(s: &Setup, repo: &Path, server: &Server, worker: &str, log: &Path) -> Child {
    s.dandori(
        repo,
        &[
            "run",
            RUN_DIR,
            "--engine",
            "restate",
            "--restate-url",
            &server.ingress_url(),
            "--restate-admin-url",
            &server.admin_url(),
            "--register-worker",
            worker,
        ],
    )
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(log).unwrap())
    .spawn()
    .unwrap()
}

/// Waits for `child` (a run or resume, up to 4 minutes) and asserts it completed
/// every step; its stderr (`log`).
fn completes(child: &mut Child, log: &Path) -> String {
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(240),
            "the distributed run did not end: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut stdout)
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert_eq!(status.code(), Some(0), "{stdout}\n{log}");
    assert!(
        stdout.contains("completed: All steps are done."),
        "{stdout}"
    );
    log
}

#[test]
fn twelve_steps_on_three_workers_survive_a_killed_worker_and_a_killed_server() {
    let s = setup();
    let local = local_reference(&s);

    // The server, three workers behind one address, the distributed run.
    let mut server = Server::start(&s.root.join("restate"));
    let ctl = s.root.join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::write(ctl.join("hold.S06"), "").unwrap();
    std::fs::write(ctl.join("hold.S10"), "").unwrap();
    let agent_cmd = agent(&ctl);
    let (mut workers, ports) = s.workers(1..=3, &agent_cmd);
    let front = balancer(Arc::new(Mutex::new(ports)));
    let repo = s.checkout("repo", &plan("run-7", twelve_steps()));
    let run_log = s.root.join("run.log");
    let mut run = restate_run(
        &s,
        &repo,
        &server,
        &format!("http://127.0.0.1:{front}"),
        &run_log,
    );

    // SIGKILL the worker running S06, in the middle of the step (and its agent).
    wait_for("S06 to start", Duration::from_secs(120), || {
        ctl.join("reached.S06").exists()
    });
    let where_s06 = std::fs::read_to_string(ctl.join("where.S06")).unwrap();
    let victim = workers
        .iter()
        .position(|(name, _)| where_s06.contains(&format!("/{name}/")))
        .unwrap_or_else(|| panic!("S06 runs in no worker directory: {where_s06}"));
    let (victim_name, mut victim_child) = workers.remove(victim);
    victim_child.kill().unwrap();
    victim_child.wait().unwrap();
    // End the victim's agent: every process whose working directory is the step's
    // worktree. (A pid or process group read by the agent itself may be an id of
    // the sandbox's PID namespace, naming an unrelated process on the host.)
    let agent_dir = PathBuf::from(where_s06.trim());
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&agent_dir))
        {
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
        }
    }

    // SIGKILL the server while S10 (third group) runs; restart it on its directory.
    wait_for("S10 to start", Duration::from_secs(120), || {
        ctl.join("reached.S10").exists()
    });
    server.kill();
    std::thread::sleep(Duration::from_millis(500));
    server.spawn();
    std::fs::write(ctl.join("release.S10"), "").unwrap();

    let log = completes(&mut run, &run_log);

    // S06 ran again after its worker died, on another worker; the server
    // restart during S10 lost nothing.
    let s06 = started(&ctl, "S06");
    assert!(s06.len() >= 2, "S06 executions: {s06:?}");
    assert!(
        !s06[1].contains(&format!("/{victim_name}/")),
        "S06 ran again on the killed worker: {s06:?}"
    );
    // The coordinator noticed the dead server and sent again: on the promise of
    // whichever step it was waiting for then (S10 or another of its group).
    assert!(log.contains(": restate unreachable ("), "{log}");
    // The run's scheduling was its workflow's, keyed by the run id.
    assert!(
        log.contains("restate: started the run's workflow DandoriRun/run-7"),
        "{log}"
    );

    same_outcome_as_local(&s, &repo, &local, &log);

    for (_, mut w) in workers {
        let _ = w.kill();
        let _ = w.wait();
    }
}

/// The coordinator (`dandori run`) is SIGKILLed while S06 runs. Without it the
/// run's workflow goes on: S06 ends, the third group runs. `dandori resume`
/// (no engine flags: stage.json records the engine and the workflow) attaches to
/// the same workflow, and the run ends as a local one does, no step run twice.
#[test]
fn a_killed_coordinator_resumes_on_the_same_workflow_and_no_step_runs_twice() {
    let s = setup();
    let local = local_reference(&s);
    let server = Server::start(&s.root.join("restate"));
    let ctl = s.root.join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    std::fs::write(ctl.join("hold.S06"), "").unwrap();
    std::fs::write(ctl.join("hold.S12"), "").unwrap();
    let (mut workers, ports) = s.workers(1..=2, &agent(&ctl));
    let repo = s.checkout("repo", &plan("run-7", twelve_steps()));
    let run_log = s.root.join("run.log");
    let mut run = restate_run(
        &s,
        &repo,
        &server,
        &format!("http://127.0.0.1:{}", ports[0]),
        &run_log,
    );
    wait_for("S06 to start", Duration::from_secs(120), || {
        ctl.join("reached.S06").exists()
    });
    run.kill().unwrap();
    run.wait().unwrap();

    // Nobody coordinates: the workflow still runs S06 to its end and starts the
    // steps that build on it.
    std::fs::write(ctl.join("release.S06"), "").unwrap();
    wait_for(
        "S12 to start without a coordinator",
        Duration::from_secs(120),
        || ctl.join("reached.S12").exists(),
    );

    // status reads the live workflow while nobody coordinates.
    let status = s.dandori(&repo, &["status", RUN_DIR]).output().unwrap();
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("restate workflow DandoriRun/run-7: running")
            && status.contains("running: S12"),
        "{status}"
    );

    let resume_log = s.root.join("resume.log");
    let mut resume = s
        .dandori(&repo, &["resume", RUN_DIR])
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&resume_log).unwrap())
        .spawn()
        .unwrap();
    wait_for("resume to attach", Duration::from_secs(120), || {
        std::fs::read_to_string(&resume_log)
            .unwrap_or_default()
            .contains("attached to the run's workflow DandoriRun/run-7")
    });
    std::fs::write(ctl.join("release.S12"), "").unwrap();
    let log = completes(&mut resume, &resume_log)
        + &std::fs::read_to_string(&run_log).unwrap_or_default();
    for i in 1..=12 {
        let id = format!("S{i:02}");
        assert_eq!(started(&ctl, &id).len(), 1, "{id} ran more than once");
    }
    same_outcome_as_local(&s, &repo, &local, &log);
    for (_, w) in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
}

/// A new Ed25519 key pair (openssl): the private key's PEM file and the public
/// key as Restate writes it (`publickeyv1_` and the base58 of its 32 bytes).
fn identity_key(dir: &Path, name: &str) -> (PathBuf, String) {
    let pem = dir.join(format!("{name}.pem"));
    let ok = Command::new("openssl")
        .args(["genpkey", "-algorithm", "ed25519", "-out"])
        .arg(&pem)
        .status()
        .unwrap();
    assert!(ok.success());
    let der = Command::new("openssl")
        .args(["pkey", "-pubout", "-outform", "DER", "-in"])
        .arg(&pem)
        .output()
        .unwrap();
    assert!(der.status.success());
    let raw = &der.stdout[der.stdout.len() - 32..];
    (
        pem,
        format!("publickeyv1_{}", bs58::encode(raw).into_string()),
    )
}

/// Restate's request identity: a worker given the server's public key answers its
/// signed requests (registration, the run's workflow and steps); a worker given
/// another server's key refuses them (registration fails), and an unsigned request
/// is refused (401).
#[test]
fn workers_answer_only_the_restate_server_of_their_identity_key() {
    let s = setup();
    let (pem, public) = identity_key(&s.root, "server");
    let (_, other) = identity_key(&s.root, "other");
    let server = Server::signing(&s.root.join("restate"), &pem);
    let ctl = s.root.join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    let agent_cmd = agent(&ctl);

    // The worker of another server: registering it fails, the worker says so.
    let out = s
        .worker_command(
            "w-other",
            free_port(),
            &agent_cmd,
            &["--register", &server.admin_url()],
        )
        .env("DANDORI_RESTATE_IDENTITY_KEYS", &other)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("registering"), "{err}");
    assert!(err.contains("identity key"), "{err}");

    // A bad key is refused before anything is served.
    let out = s
        .dandori(
            &s.root,
            &[
                "worker",
                "--listen",
                "127.0.0.1:0",
                "--identity-key",
                "nope",
            ],
        )
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("RESTATE_IDENTITY_INVALID"), "{err}");

    // The server's own worker: unsigned requests are refused, the run goes through.
    let port = free_port();
    let mut worker = s
        .worker_command("w1", port, &agent_cmd, &["--identity-key", &public])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the worker", Duration::from_secs(30), || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let unsigned = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--http2-prior-knowledge",
        ])
        .arg(format!("http://127.0.0.1:{port}/discover"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&unsigned.stdout), "401");

    let steps = vec![step("S01", &[]), step("S02", &["S01"])];
    let repo = s.checkout("repo", &plan("run-7", steps));
    let run_log = s.root.join("run.log");
    let mut run = restate_run(
        &s,
        &repo,
        &server,
        &format!("http://127.0.0.1:{port}"),
        &run_log,
    );
    completes(&mut run, &run_log);
    let _ = worker.kill();
    let _ = worker.wait();
}

/// What one batch of runs measured.
struct Figures {
    wall: Duration,
    steps: usize,
    /// Mean per step: the coordinator's time from start to done, and the step
    /// pipeline's own time (on the worker, or in the pool worktree).
    step_ms: f64,
    pipeline_ms: f64,
}

/// `key` anywhere in `v`.
fn find<'v>(v: &'v Value, key: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| find(x, key))),
        Value::Array(a) => a.iter().find_map(|x| find(x, key)),
        _ => None,
    }
}

/// Starts every run at once, waits for all, and reads their step timings.
fn batch(s: &Setup, label: &str, runs: usize, steps: &[Value], args: &[&str]) -> Figures {
    let repos: Vec<(PathBuf, String)> = (0..runs)
        .map(|r| {
            let run_id = format!("{label}-r{r}");
            let repo = s.checkout(&run_id, &plan(&run_id, steps.to_vec()));
            (repo, format!(".dandori/runs/RQ-7/{run_id}"))
        })
        .collect();
    let start = Instant::now();
    let children: Vec<Child> = repos
        .iter()
        .map(|(repo, run_dir)| {
            let mut a = vec!["run", run_dir.as_str()];
            a.extend_from_slice(args);
            s.dandori(repo, &a)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert_eq!(c.wait().unwrap().code(), Some(0), "{label}: a run failed");
    }
    let wall = start.elapsed();
    let (mut n, mut step_ms, mut pipeline_ms) = (0usize, 0f64, 0f64);
    for (repo, run_dir) in &repos {
        let dir = repo.join(run_dir);
        let stage: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("stage.json")).unwrap())
                .unwrap();
        let trace = std::fs::read_to_string(dir.join("trace.jsonl")).unwrap();
        for line in trace.lines().filter(|l| l.contains("STEP_END")) {
            let ev: Value = serde_json::from_str(line).unwrap();
            let id = find(&ev, "step_id").and_then(Value::as_str).unwrap();
            let t = &stage["timings"][id];
            let coordinator =
                t["finished_ms"].as_f64().unwrap() - t["started_ms"].as_f64().unwrap();
            step_ms += coordinator;
            pipeline_ms += find(&ev, "duration_ms").and_then(Value::as_f64).unwrap();
            n += 1;
        }
    }
    assert_eq!(n, runs * steps.len(), "{label}: every step ends once");
    Figures {
        wall,
        steps: n,
        step_ms: step_ms / n as f64,
        pipeline_ms: pipeline_ms / n as f64,
    }
}

/// The throughput benchmark of docs/distributed.md (minutes; run by hand):
/// `./scripts/test.sh -p dandori --test all -- --ignored throughput --nocapture`.
/// Many runs at once (`DANDORI_BENCH_RUNS`, 20) of `DANDORI_BENCH_STEPS` steps (10,
/// two dependency chains) with an agent of fixed latency (`DANDORI_BENCH_LATENCY`
/// seconds, 1), on the local engine and on Restate with one and three workers.
/// It prints runs per minute, the mean time a step takes beyond its own pipeline
/// (the engine's per-step overhead) and that overhead's share of the step time.
#[test]
#[ignore]
#[allow(clippy::print_stderr)]
fn throughput_many_runs_on_the_local_engine_and_on_one_and_three_workers() {
    let var = |k: &str, d: &str| std::env::var(k).unwrap_or_else(|_| d.to_string());
    let runs: usize = var("DANDORI_BENCH_RUNS", "20").parse().unwrap();
    let n: usize = var("DANDORI_BENCH_STEPS", "10").parse().unwrap();
    let latency = var("DANDORI_BENCH_LATENCY", "1");
    let steps: Vec<Value> = (1..=n)
        .map(|i| {
            let id = format!("S{i:02}");
            if i > 2 {
                step(&id, &[&format!("S{:02}", i - 2)])
            } else {
                step(&id, &[])
            }
        })
        .collect();
    let s = setup();
    let ctl = s.root.join("ctl");
    std::fs::create_dir_all(&ctl).unwrap();
    let agent_cmd = agent_with_latency(&ctl, &latency);
    let local = batch(
        &s,
        "local",
        runs,
        &steps,
        &["--executor", "command", "--agent-cmd", &agent_cmd],
    );
    let mut server = Server::start(&s.root.join("restate"));
    let (mut workers, ports) = s.workers(1..=3, &agent_cmd);
    let backends = Arc::new(Mutex::new(vec![ports[0]]));
    let front = format!("http://127.0.0.1:{}", balancer(backends.clone()));
    let (ingress, admin) = (server.ingress_url(), server.admin_url());
    let restate = [
        "--engine",
        "restate",
        "--restate-url",
        &ingress,
        "--restate-admin-url",
        &admin,
        "--register-worker",
        &front,
    ];
    let one = batch(&s, "one", runs, &steps, &restate);
    // Restate keeps its HTTP/2 connections to the deployment: a restart makes it
    // connect again, through the balancer that now leads to three workers.
    *backends.lock().unwrap() = ports.clone();
    server.kill();
    server.spawn();
    let three = batch(&s, "three", runs, &steps, &restate);
    eprintln!(
        "\n{runs} runs x {n} steps at once, agent latency {latency} s\n\
         | engine | wall s | runs/min | mean step ms | mean pipeline ms | overhead ms/step | overhead share |\n|---|---|---|---|---|---|---|"
    );
    for (name, f) in [
        ("local", &local),
        ("restate, 1 worker", &one),
        ("restate, 3 workers", &three),
    ] {
        let wall = f.wall.as_secs_f64();
        eprintln!(
            "| {name} | {wall:.1} | {:.1} | {:.0} | {:.0} | {:.0} | {:.1}% |",
            runs as f64 * 60.0 / wall,
            f.step_ms,
            f.pipeline_ms,
            f.step_ms - f.pipeline_ms,
            100.0 * (f.step_ms - f.pipeline_ms) / f.step_ms,
        );
        assert_eq!(f.steps, runs * n);
    }
    for (_, w) in &mut workers {
        let _ = w.kill();
        let _ = w.wait();
    }
}
