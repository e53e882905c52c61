//! The client as executor: a step `next` offered is still there when the client
//! reads it, however long it queued behind other steps, while a step the client
//! took, or a client that went silent, still times out (`limits.timeout_sec`).
//! Tool calls go through the server without a transport; the run is real (git
//! worktrees, unit commands, commits).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dandori_mcp::inspect::RunFiles;
use dandori_mcp::{DandoriServer, ToolSet};
use dandori_plan::StepStatus;
use dandori_test_support::git::TempGitRepo;
use dandori_test_support::plans::{planning, step, write_plan};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::tools::{args, rt, server};

/// A repository with a plan of two independent steps, each writing
/// `src/<id>/main.txt`, with `timeout_sec` for the client to answer.
fn two_step_plan(timeout_sec: u64) -> (TempGitRepo, PathBuf) {
    let repo = TempGitRepo::with_files(&[("README.md", "# r\n")]);
    let steps = ["S01", "S02"]
        .iter()
        .map(|id| step(id, &format!("test -f src/{id}/main.txt"), &[]))
        .collect();
    let run_dir = write_plan(repo.path(), &planning("RQ-9", "run-9", steps, timeout_sec));
    (repo, run_dir)
}

struct Client {
    rt: tokio::runtime::Runtime,
    server: DandoriServer,
    run_dir: String,
}

impl Client {
    fn new(repo: &Path, run_dir: &Path) -> Client {
        Client {
            rt: rt(),
            server: server(ToolSet::All, repo),
            run_dir: run_dir.to_str().unwrap().to_string(),
        }
    }

    fn call(&self, tool: &str, mut a: Value) -> Value {
        a["run_dir"] = json!(self.run_dir);
        let r = self.rt.block_on(self.server.call(tool, args(a)));
        r.structured_content.unwrap_or(Value::Null)
    }

    /// Calls `next` until both steps are offered.
    fn both_offered(&self) -> Vec<Value> {
        for _ in 0..300 {
            let next = self.call("next", json!({"wait_sec": 5}));
            let ready = next["ready"].as_array().cloned().unwrap_or_default();
            if ready.len() == 2 {
                return ready;
            }
            assert_eq!(next["status"], json!("running"), "{next}");
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the two independent steps were never offered together");
    }
}

/// (step, status, reason code) of every step in stage.json, read as the
/// server reads it.
fn stage_steps(run_dir: &Path) -> Vec<(String, StepStatus, Option<String>)> {
    let files = RunFiles::open(run_dir).unwrap();
    let stage = files.stage.expect("stage.json");
    stage
        .steps
        .into_iter()
        .map(|s| (s.step_id, s.status, s.reason_code))
        .collect()
}

/// The client keeps calling (here `next`, as a client polling for work does)
/// for well over the steps' timeout without taking S02: S02 must still wait for
/// it, with its workdir, when it finally reads it.
#[test]
fn a_step_offered_by_next_waits_while_the_client_works_on_others() {
    let timeout = 2;
    let (repo, run_dir) = two_step_plan(timeout);
    let client = Client::new(repo.path(), &run_dir);
    let ready = client.both_offered();
    let offered = Instant::now();
    assert!(ready.iter().all(|r| r["workdir"].is_string()), "{ready:?}");
    while offered.elapsed() < Duration::from_secs(3 * timeout) {
        std::thread::sleep(Duration::from_millis(500));
        let next = client.call("next", json!({"wait_sec": 0}));
        assert_eq!(next["status"], json!("running"), "{next}");
    }
    for id in ["S02", "S01"] {
        let step = client.call("step", json!({"step_id": id}));
        let workdir = step["workdir"]
            .as_str()
            .unwrap_or_else(|| panic!("{id} offered by next is no longer waiting: {step}"));
        let dir = Path::new(workdir).join(format!("src/{id}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.txt"), format!("work of {id}\n")).unwrap();
        let v = client.call(
            "step_update",
            json!({"step_id": id, "status": "done", "summary": "written"}),
        );
        assert!(
            ["done", "committed", "checking"].contains(&v["status"].as_str().unwrap_or("")),
            "{v}"
        );
    }
    let completion = loop {
        let next = client.call("next", json!({"wait_sec": 5}));
        if next["status"] == json!("finished") {
            break next["completion"].clone();
        }
        assert_eq!(next["ready"], json!([]), "{next}");
    };
    assert_eq!(completion["status"], json!("completed"), "{completion}");
    let log = repo.git(&["log", "--format=%B", "main..dandori/RQ-9/run-9"]);
    for id in ["S01", "S02"] {
        assert!(log.contains(&format!("Dandori-Step: {id}")), "{log}");
    }
}

/// A step the client read must be answered within the timeout; a step it never
/// took times out once the client has been silent that long (a client that went
/// away does not hold the run forever). Neither can be answered afterwards.
#[test]
fn a_taken_step_and_a_silent_client_still_time_out() {
    let timeout = 2;
    let (repo, run_dir) = two_step_plan(timeout);
    let client = Client::new(repo.path(), &run_dir);
    client.both_offered();
    let step = client.call("step", json!({"step_id": "S01"}));
    assert!(step["workdir"].is_string(), "{step}");
    // Silence: no tool call at all, stage.json is read from the disk.
    let silent = Instant::now();
    let ended = loop {
        let steps = stage_steps(&run_dir);
        if steps
            .iter()
            .all(|(_, status, _)| !matches!(status, StepStatus::Pending | StepStatus::Running))
        {
            break steps;
        }
        assert!(
            silent.elapsed() < Duration::from_secs(60),
            "the steps never timed out: {steps:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        silent.elapsed() >= Duration::from_secs(timeout),
        "{ended:?}"
    );
    for (id, status, reason) in &ended {
        assert_eq!(
            (*status, reason.as_deref()),
            (StepStatus::Failed, Some("AGENT_TIMEOUT")),
            "{id}: {ended:?}"
        );
    }
    let late = client.rt.block_on(client.server.call(
        "step_update",
        args(json!({"run_dir": client.run_dir, "step_id": "S01", "status": "done"})),
    ));
    assert_eq!(late.is_error, Some(true), "{late:?}");
    assert_eq!(
        late.structured_content.unwrap()["error"]["code"],
        json!("STEP_NOT_READY")
    );
}
