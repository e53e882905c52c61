//! `dandori repl` end to end: through a real pseudo-terminal (python3's stdlib
//! `pty`, `repl_pty.py`) for prompts, tab completion, the seed 003 §8.2 commands,
//! `plan` / `status` and history; and line by line from a pipe (scripts).

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::json;

use super::plan_llm::todo_api;

/// The transcript of a pty session: `steps` are `[keys, expected output]`.
fn pty_session(repo: &Path, env: &[(&str, &str)], steps: &serde_json::Value) -> String {
    let driver = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/suite/repl_pty.py");
    let mut cmd = Command::new("python3");
    cmd.arg(&driver)
        .arg(env!("CARGO_BIN_EXE_dandori"))
        .arg(repo)
        .arg(steps.to_string())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "xterm");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let transcript = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "driver failed:\n{transcript}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    transcript
}

#[test]
fn pty_session_completes_sets_plans_and_keeps_history() {
    let repo = todo_api();
    let data = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    let env = [
        ("XDG_DATA_HOME", data.path().to_str().unwrap()),
        ("DANDORI_CONFIG_HOME", home.path().to_str().unwrap()),
    ];
    let steps = json!([
        ["", "dandori> "],
        // Tab completion: the command, the subcommand and the config key are
        // typed incompletely; only completion makes this a valid command.
        ["/plan\t", "/planning "],
        ["se\t", "set "],
        ["auto_chunk\t", "auto_chunk_threshold "],
        [
            "L\r",
            "task_planning.chunking.auto_chunk_threshold = \"L\" → "
        ],
        ["", "dandori> "],
        // The seed's own example, verbatim.
        [
            "/planning set max_parallel_workers 5\r",
            "task_planning.execution.max_parallel_workers = 5 → "
        ],
        ["", "dandori> "],
        [
            "/planning set planning.max_subtasks 4\r",
            "planning.max_subtasks = 4 → "
        ],
        ["", "(created)"],
        ["", "dandori> "],
        [
            "/planning set max_parallel_workers many\r",
            "CONFIG_INVALID"
        ],
        ["", "dandori> "],
        [
            "/planning set no_such_key 1\r",
            "CONFIG_INVALID: -c no_such_key: unknown configuration key"
        ],
        ["", "dandori> "],
        ["/planning show\r", "chunking.auto_chunk_threshold = \"L\""],
        ["", "planning.max_subtasks = 4"],
        ["", "dandori> "],
        ["plan requests/RQ-001.md\r", "Validation: ok"],
        ["", "dandori> "],
        ["/planning result RQ-0\t", "RQ-001 "],
        ["\r", "group 0:"],
        ["", "dandori> "],
        ["status\r", "steps done"],
        ["", "dandori> "],
        ["bogus\r", "USAGE_ERROR"],
        ["", "dandori> "],
        ["help\r", "/planning set KEY VALUE"],
        ["", "dandori> "],
        ["exit\r", "exit"],
    ]);
    let transcript = pty_session(repo.path(), &env, &steps);
    assert!(transcript.ends_with("\nEXIT 0\n"), "{transcript}");
    // Written through the layering, to the files it reads.
    let tp: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".dandori/task-planning.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        tp,
        json!({"chunking": {"auto_chunk_threshold": "L"}, "execution": {"max_parallel_workers": 5}})
    );
    let config = std::fs::read_to_string(repo.path().join(".dandori/config.yaml")).unwrap();
    assert!(config.contains("max_subtasks: 4"), "{config}");
    let runs = repo.path().join(".dandori/runs/RQ-001");
    assert!(runs.is_dir(), "{transcript}");
    // History in the user's data directory, one line per command.
    let history =
        std::fs::read_to_string(data.path().join("dandori/repl_history")).unwrap_or_default();
    for line in [
        "/planning set auto_chunk_threshold L",
        "plan requests/RQ-001.md",
        "/planning result RQ-001",
    ] {
        assert!(history.contains(line), "history lacks {line:?}:\n{history}");
    }

    // A second session recalls the history with the up arrow.
    let steps = json!([
        ["", "dandori> "],
        ["\u{1b}[A", "exit"],
        ["\u{1b}[A", "help"],
        ["\r", "/planning show"],
        ["", "dandori> "],
        ["\u{4}", ""],
    ]);
    let transcript = pty_session(repo.path(), &env, &steps);
    assert!(transcript.ends_with("\nEXIT 0\n"), "{transcript}");
}

#[test]
fn piped_commands_run_line_by_line() {
    let repo = todo_api();
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(["repl", "--repo"])
        .arg(repo.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("DANDORI_CONFIG_HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(
            b"# a comment\n/planning set fallback_category XL\n/planning show --json\n/planning result nope\n",
        )
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stdout.contains("dandori> "),
        "no prompt without a terminal"
    );
    assert!(
        stdout.contains("task_planning.size_estimation.fallback_category = \"XL\""),
        "{stdout}"
    );
    let json_start = stdout.find('{').unwrap();
    let shown: serde_json::Value = serde_json::Deserializer::from_str(&stdout[json_start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        shown["task_planning"]["task_planning.size_estimation.fallback_category"],
        json!("XL")
    );
    assert!(
        stderr.contains("RUN_DIR_INVALID: no run of `nope`"),
        "{stderr}"
    );
    // The last failing command decides the exit status.
    assert_eq!(out.status.code(), Some(2));
}
