//! `dandori runs | status | report | trace` on a run executed by
//! `dandori run --executor command`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::mcp::{fixture, planned_repo};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn dandori(args: &[&str], extra: &[&Path]) -> Output {
    Command::new(BIN).args(args).args(extra).output().unwrap()
}

pub(super) fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub(super) fn finished_run(root: &Path) -> (PathBuf, PathBuf) {
    let (repo, run_dir) = planned_repo(root, "repo");
    let agent_cmd = format!(
        "python3 {} {{step_id}} {{workdir}} {{prompt_file}}",
        fixture("edit.py").display()
    );
    let out = Command::new(BIN)
        .arg("run")
        .arg(&run_dir)
        .arg("--repo")
        .arg(&repo)
        .args(["--executor", "command", "--agent-cmd", &agent_cmd, "--json"])
        .output()
        .unwrap();
    ok(&out);
    (repo, run_dir)
}

#[test]
fn runs_status_report_and_trace_read_a_finished_run() {
    let dir = tempfile::tempdir().unwrap();
    let (repo, run_dir) = finished_run(&dir.path().canonicalize().unwrap());

    // runs: one run, done.
    let runs: Value =
        serde_json::from_str(&ok(&dandori(&["runs", "--json", "--repo"], &[&repo]))).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(
        json!([
            runs[0]["request_id"],
            runs[0]["run_id"],
            runs[0]["status"],
            runs[0]["total"],
            runs[0]["done"]
        ]),
        json!(["RQ-7", "run-7", "done", 3, 3])
    );
    let text = ok(&dandori(&["runs", "--repo"], &[&repo]));
    assert!(
        text.contains("run-7") && text.contains("3/3 done"),
        "{text}"
    );

    // status: steps, groups, no current step.
    let st: Value =
        serde_json::from_str(&ok(&dandori(&["status", "--json"], &[&run_dir]))).unwrap();
    assert_eq!(st["status"], json!("done"));
    assert_eq!(st["current_step"], Value::Null);
    assert_eq!(st["groups"], json!([["S01", "S03"], ["S02"]]));
    let steps: Vec<Value> = st["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            json!([
                s["step_id"],
                s["status"],
                s["group"],
                s["commit"].is_string()
            ])
        })
        .collect();
    assert_eq!(
        steps,
        vec![
            json!(["S01", "done", 0, true]),
            json!(["S02", "done", 1, true]),
            json!(["S03", "done", 0, true])
        ]
    );
    let text = ok(&dandori(&["status"], &[&run_dir]));
    assert!(text.contains("3/3 steps done"), "{text}");

    // report: re-rendered from the records, identical to what the run wrote.
    let written = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    std::fs::remove_file(run_dir.join("report.md")).unwrap();
    let printed = ok(&dandori(&["report"], &[&run_dir]));
    assert_eq!(printed.trim_end(), written.trim_end());
    assert_eq!(
        std::fs::read_to_string(run_dir.join("report.md")).unwrap(),
        written
    );

    // trace: filters by event and step; JSON lines or readable lines.
    let lines = ok(&dandori(
        &[
            "trace",
            "--json",
            "--event",
            "STEP_END,UNIT_TEST",
            "--step",
            "S02",
        ],
        &[&run_dir],
    ));
    let events: Vec<String> = lines
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(events, ["UNIT_TEST", "UNIT_TEST", "STEP_END"]);
    let text = ok(&dandori(&["trace", "--event", "step_end"], &[&run_dir]));
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.lines()
            .all(|l| l.contains("STEP_END") && l.contains("status=done"))
    );
    // --since in the future: nothing; a bad --since: exit 2 with a reason code.
    let none = ok(&dandori(
        &["trace", "--since", "2999-01-01T00:00:00Z"],
        &[&run_dir],
    ));
    assert_eq!(none, "");
    let bad = dandori(&["trace", "--since", "yesterday"], &[&run_dir]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ARGUMENT_INVALID"));
    // --follow on a finished run prints everything and returns.
    let all = ok(&dandori(&["trace", "--follow", "--json"], &[&run_dir]));
    assert!(all.lines().last().unwrap().contains("EXECUTION_END"));
}

#[test]
fn inspection_commands_name_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let out = dandori(&["status"], &[dir.path()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RUN_DIR_INVALID"));
    // A planned run that has not finished has no report to render.
    let (_repo, run_dir) = planned_repo(&dir.path().canonicalize().unwrap(), "repo");
    let out = dandori(&["report"], &[&run_dir]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has not finished"));
    let st: Value =
        serde_json::from_str(&ok(&dandori(&["status", "--json"], &[&run_dir]))).unwrap();
    assert_eq!(st["status"], json!("planned"));
    assert_eq!(st["current_step"], json!("S01"));
    // An empty runs root lists nothing.
    let text = ok(&dandori(&["runs", "--repo"], &[dir.path()]));
    assert!(text.starts_with("no runs under"), "{text}");
}

/// `trace --follow` on a run still being written: it prints what is there, then
/// each event as it is appended (a half-written line waits for its end), and
/// returns at `EXECUTION_END`.
#[test]
fn trace_follow_streams_appended_events_until_the_run_ends() {
    use std::io::{BufRead, BufReader, Write};

    let dir = tempfile::tempdir().unwrap();
    let (_repo, run_dir) = finished_run(&dir.path().canonicalize().unwrap());
    let full = std::fs::read_to_string(run_dir.join("trace.jsonl")).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert!(lines.len() > 4);
    let live = dir.path().join("live");
    std::fs::create_dir_all(&live).unwrap();
    let trace = live.join("trace.jsonl");
    let head = lines.len() - 3;
    std::fs::write(&trace, lines[..head].join("\n") + "\n").unwrap();

    let mut child = Command::new(BIN)
        .args(["trace", "--follow", "--json"])
        .arg(&live)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut got = Vec::new();
    let mut line = String::new();
    for _ in 0..head {
        line.clear();
        out.read_line(&mut line).unwrap();
        got.push(line.trim_end().to_string());
    }
    // The rest arrives in pieces, the last event split mid-line.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&trace)
        .unwrap();
    for l in &lines[head..lines.len() - 1] {
        writeln!(f, "{l}").unwrap();
        f.flush().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let last = lines[lines.len() - 1];
    let (a, b) = last.split_at(last.len() / 2);
    write!(f, "{a}").unwrap();
    f.flush().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "--follow returned before EXECUTION_END"
    );
    writeln!(f, "{b}").unwrap();
    f.flush().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    got.extend(rest.lines().map(str::to_string));
    let parse = |l: &str| serde_json::from_str::<Value>(l).unwrap();
    assert_eq!(
        got.iter().map(|l| parse(l)).collect::<Vec<_>>(),
        lines.iter().map(|l| parse(l)).collect::<Vec<_>>()
    );
    assert_eq!(parse(got.last().unwrap())["event"], json!("EXECUTION_END"));
}
