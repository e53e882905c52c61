//! `dandori plan` against a real language model (SmolLM2-135M on node-llama-cpp,
//! OpenAI-compatible, on 127.0.0.1; see dandori_test_support::local_model): what
//! a llama.cpp or Ollama user sees. A model this small cannot plan; these tests
//! hold how dandori treats a weak, slow model: progress while it waits, the
//! offline planner's whole plan with the cause on one line, limits that fit each
//! other, and every request the server saw counted by `dandori metrics`.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use dandori_test_support::local_model::MODEL;
use dandori_test_support::{LocalModel, TempGitRepo};
use pretty_assertions::assert_eq;
use serde_json::Value;

use super::plan_llm::dandori;

const REQUEST: &str = "Add a greet(name) function to hello.py that returns 'Hello, NAME!', with a test in test_hello.py.";

fn repo() -> TempGitRepo {
    TempGitRepo::with_files(&[
        ("hello.py", "def hello():\n    return 'hi'\n"),
        (
            "test_hello.py",
            "from hello import hello\n\n\ndef test_hello():\n    assert hello() == 'hi'\n",
        ),
        ("README.md", "# hello\n\nA tiny greeting module.\n"),
    ])
}

fn config(dir: &Path, model: &LocalModel, provider_extra: &str, budgets: &str) -> String {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "llm:\n  default_provider: local\n  providers:\n    - name: local\n      kind: openai\n      base_url: {}\n      model: {MODEL}\n      max_tokens: 48\n      max_retries: 0\n{provider_extra}  budgets:\n    planning_context: 200\n{budgets}",
            model.base_url()
        ),
    )
    .unwrap();
    path.to_string_lossy().into_owned()
}

struct Timed {
    /// stderr lines with the seconds since the binary started.
    stderr: Vec<(f64, String)>,
    /// When the first line starting with `model: ` arrived (ms since the epoch,
    /// the clock of the server's log).
    first_model_line_ms: Option<u64>,
    stdout: String,
    status: std::process::ExitStatus,
}

/// The binary, with each stderr line timed as it arrives.
fn plan_timed(args: &[&str], cwd: &Path) -> Timed {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        out.read_to_string(&mut s).unwrap();
        s
    });
    let mut stderr = Vec::new();
    let mut first_model_line_ms = None;
    for line in BufReader::new(child.stderr.take().unwrap()).lines() {
        let line = line.unwrap();
        if first_model_line_ms.is_none() && line.starts_with("model: ") {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap();
            first_model_line_ms = Some(now.as_millis() as u64);
        }
        stderr.push((started.elapsed().as_secs_f64(), line));
    }
    let status = child.wait().unwrap();
    Timed {
        stderr,
        first_model_line_ms,
        stdout: reader.join().unwrap(),
        status,
    }
}

fn run_dir(stdout: &str) -> std::path::PathBuf {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("Run directory: "))
        .unwrap_or_else(|| panic!("no run directory in {stdout}"));
    std::path::PathBuf::from(line.trim())
}

fn step_titles(run_dir: &Path) -> Vec<String> {
    let planning: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join("planning.json")).unwrap())
            .unwrap();
    planning["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap().to_string())
        .collect()
}

fn trace(run_dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(run_dir.join("trace.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn planning_metrics(repo: &Path, config: &str) -> Value {
    let out = dandori(&["--config", config, "metrics", "--json"], repo, &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let m: Value = serde_json::from_slice(&out.stdout).unwrap();
    m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == "planning")
        .unwrap()
        .clone()
}

/// The journey of the issue: progress within a second and at least every 5 s,
/// the offline planner's whole plan with a one-line cause, and `dandori
/// metrics` counting every request the server saw. Also: a stream-idle limit
/// shorter than the model's prompt reading does not cut it (prompt processing
/// is not idleness).
#[test]
fn local_model_plan_shows_progress_and_falls_back_to_the_offline_plan() {
    let model = LocalModel::start();
    // examples/todo-api's RQ-001: the offline planner makes several steps of it.
    let repo = super::plan_llm::todo_api();
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        &model,
        "      stream_idle_timeout_secs: 3\n",
        "",
    );
    let clock = Instant::now();
    let t = plan_timed(
        &[
            "--config",
            &config,
            "plan",
            "requests/RQ-001.md",
            "--repo",
            ".",
        ],
        repo.path(),
    );
    let wall = clock.elapsed().as_secs_f64();
    let stderr: String = t
        .stderr
        .iter()
        .map(|(at, l)| format!("{at:7.2}s {l}\n"))
        .collect();
    assert!(t.status.success(), "{stderr}\n{}", t.stdout);

    // Progress: the first model line within a second of the first request
    // reaching the server, then never 5 s of silence while a call is in flight.
    let model_lines: Vec<&(f64, String)> = t
        .stderr
        .iter()
        .filter(|(_, l)| l.starts_with("model: "))
        .collect();
    assert!(!model_lines.is_empty(), "{stderr}");
    let first_request_ms = model
        .wait_for_requests(1, Duration::from_secs(60))
        .iter()
        .filter_map(|r| r["started"].as_u64())
        .min()
        .unwrap();
    let first_line_ms = t.first_model_line_ms.unwrap();
    assert!(
        first_line_ms < first_request_ms + 1000,
        "first model line {} ms after the first request reached the server:\n{stderr}",
        first_line_ms.saturating_sub(first_request_ms)
    );
    assert!(
        model_lines[0]
            .1
            .contains("size_estimation call to local/smollm2-135m sent")
    );
    for pair in model_lines.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 <= 6.0,
            "{:.1}s of silence before {:?}:\n{stderr}",
            pair[1].0 - pair[0].0,
            pair[1].1
        );
    }

    // The offline planner's whole plan, and the cause on one line of stderr.
    let offline = dandori(
        &["plan", "requests/RQ-001.md", "--repo", ".", "--json"],
        repo.path(),
        &[],
    );
    assert!(offline.status.success());
    let offline: Value = serde_json::from_slice(&offline.stdout).unwrap();
    let offline_dir = std::path::PathBuf::from(offline["run_dir"].as_str().unwrap());
    let dir_of_model_run = run_dir(&t.stdout);
    assert_eq!(step_titles(&dir_of_model_run), step_titles(&offline_dir));
    assert!(step_titles(&offline_dir).len() > 1);
    let warnings: Vec<&String> = t
        .stderr
        .iter()
        .map(|(_, l)| l)
        .filter(|l| l.starts_with("warning: planner llm:local/smollm2-135m failed"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("using the offline planner's plan")
            && warnings[0].contains("LLM_ANSWER_TRUNCATED")
            && warnings[0].contains("(change llm.providers[].max_tokens)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("stream_idle_timeout"),
        "the prompt reading was taken for idleness:\n{stderr}"
    );

    // The trace: every call, with the server's own token counts.
    let events = trace(&dir_of_model_run);
    let calls: Vec<&Value> = events.iter().filter(|e| e["event"] == "LLM_CALL").collect();
    let fallback = events
        .iter()
        .find(|e| e["event"] == "PLANNING_FALLBACK")
        .expect("PLANNING_FALLBACK");
    assert_eq!(fallback["data"]["reason_code"], "LLM_ANSWER_TRUNCATED");
    let requests = model.wait_for_requests(calls.len(), Duration::from_secs(60));
    assert_eq!(requests.len(), calls.len(), "{requests:?}");
    let served_prompt: u64 = requests
        .iter()
        .filter(|r| r["outcome"] == "completed")
        .map(|r| r["prompt_tokens"].as_u64().unwrap())
        .sum();
    let traced_prompt: u64 = calls
        .iter()
        .filter(|c| c["data"]["outcome"] == "ok")
        .map(|c| c["data"]["usage"]["prompt_tokens"].as_u64().unwrap())
        .sum();
    assert_eq!(traced_prompt, served_prompt);
    assert!(
        calls
            .iter()
            .any(|c| c["data"]["purpose"] == "corrective_reask")
    );

    // `dandori metrics` counts every request the server saw.
    let p = planning_metrics(repo.path(), &config);
    assert_eq!(p["llm_requests"], requests.len() as u64, "{p}");
    assert_eq!(p["llm_calls"], calls.len() as u64, "{p}");
    eprintln!(
        "local model plan: {wall:.1}s wall, {} requests, first token after {:?} ms",
        requests.len(),
        requests
            .iter()
            .map(|r| r["first_token_ms"].clone())
            .collect::<Vec<_>>()
    );
}

/// Limits that fit each other, against the real model: a first-token limit
/// shorter than the prompt reading ends each call with `LLM_TIMEOUT` naming its
/// key (and the server's abandoned requests are counted), and a planning budget
/// too small for the first prompt sends nothing and says which budget.
#[test]
fn local_model_time_limits_and_budgets_say_which_key() {
    let model = LocalModel::start();
    let repo = repo();
    let dir = tempfile::tempdir().unwrap();
    let config = config(
        dir.path(),
        &model,
        "      first_token_timeout_secs: 1\n",
        "",
    );
    let out = dandori(
        &[
            "--config", &config, "plan", "--text", REQUEST, "--repo", ".", "--json",
        ],
        repo.path(),
        &[],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fallback"]["reason_code"], "LLM_TIMEOUT", "{v}");
    assert_eq!(
        v["fallback"]["config_key"],
        "llm.providers[].first_token_timeout_secs"
    );
    assert_eq!(v["fallback"]["fallback"], "offline");
    // `--json`: the progress reports are JSON lines on stderr.
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("{\"event\":\"model_progress\"")
                && l.contains("\"state\":\"started\"")),
        "{stderr}"
    );
    let requests = model.wait_for_requests(2, Duration::from_secs(120));
    assert_eq!(requests.len(), 2, "{requests:?}");
    let p = planning_metrics(repo.path(), &config);
    assert_eq!(p["llm_requests"], 2, "{p}");
    assert_eq!(p["failed_calls"], 2, "{p}");

    // A budget that cannot hold the first prompt: nothing is sent.
    let config = config_with_budget(dir.path(), &model);
    let out = dandori(
        &[
            "--config", &config, "plan", "--text", REQUEST, "--repo", ".", "--json",
        ],
        repo.path(),
        &[],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["fallback"]["reason_code"], "TOKEN_BUDGET_EXCEEDED", "{v}");
    assert_eq!(v["fallback"]["config_key"], "llm.budgets.planning");
    assert!(
        v["fallback"]["cause"].as_str().unwrap().contains("used +"),
        "{v}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(model.requests().len(), 2);
}

/// planning 20 + planning_context 200: less than the size-estimation prompt.
fn config_with_budget(dir: &Path, model: &LocalModel) -> String {
    config(dir, model, "", "    planning: 20\n")
}
