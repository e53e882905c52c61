//! The fake agent model against the real agent CLIs: Claude Code and Codex run
//! headless against it, do what the script asks (write a file, run a command) and
//! report what they did; every request they send passes the server's checks.

use std::path::Path;
use std::process::Command;

use dandori_test_support::{FakeAgentModel, Turn, Wire, installed_cli};
use serde_json::{Value, json};

fn run(cmd: &mut Command) -> (bool, String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("start the agent CLI: {e}"));
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn base_env(cmd: &mut Command, home: &Path) {
    cmd.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", home);
}

#[test]
fn claude_code_writes_the_file_the_fake_model_asks_for() {
    let Some(claude) = installed_cli("claude") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let target = work.join("hello.txt");
    let server = FakeAgentModel::start(
        Wire::Anthropic,
        vec![
            Turn::tool(
                "Write",
                json!({"file_path": target, "content": "hello from the fake model\n"}),
            ),
            Turn::text("Wrote hello.txt."),
        ],
    )
    .expect_api_key("sk-ant-test-key");
    let mut cmd = Command::new(&claude);
    base_env(&mut cmd, dir.path());
    cmd.current_dir(&work)
        .env("ANTHROPIC_BASE_URL", server.origin())
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .args(["-p", "write hello.txt", "--permission-mode", "acceptEdits"])
        .args([
            "--output-format",
            "stream-json",
            "--verbose",
            "--model",
            "claude-sonnet-4-5",
        ]);
    let (ok, stdout, stderr) = run(&mut cmd);
    assert!(ok, "claude failed:\n{stdout}\n{stderr}");
    server.assert_no_violations();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "hello from the fake model\n"
    );
    let events = json_lines(&stdout);
    let result = events
        .iter()
        .find(|e| e["type"] == "result")
        .expect("a result event");
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["num_turns"], 2, "{result}");
    assert_eq!(result["permission_denials"], json!([]));
    assert_eq!(result["usage"]["input_tokens"], 2400, "{result}");
    assert!(result["total_cost_usd"].as_f64().unwrap() > 0.0);
    assert_eq!(server.turns_served().len(), 2);
    assert_eq!(server.remaining(), 0);
}

#[test]
fn codex_runs_the_command_the_fake_model_asks_for() {
    let Some(codex) = installed_cli("codex") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let server = FakeAgentModel::start(
        Wire::Responses,
        vec![
            Turn::tool(
                "exec_command",
                json!({"cmd": "printf 'hello from codex\\n' > hello.txt"}),
            ),
            Turn::text("Wrote hello.txt."),
        ],
    )
    .expect_api_key("sk-openai-test-key");
    let base = server.base_url();
    let mut cmd = Command::new(&codex);
    base_env(&mut cmd, dir.path());
    cmd.current_dir(&work)
        .env("OPENAI_API_KEY", "sk-openai-test-key")
        .args(["exec", "--json", "--skip-git-repo-check"])
        .arg("--dangerously-bypass-approvals-and-sandbox")
        .args(["-m", "gpt-5-codex", "-c", "model_provider=\"fake\""])
        .args(["-c", &format!("model_providers.fake={{name=\"fake\", base_url=\"{base}\", env_key=\"OPENAI_API_KEY\", wire_api=\"responses\"}}")])
        .arg("write hello.txt");
    let (ok, stdout, stderr) = run(&mut cmd);
    assert!(ok, "codex failed:\n{stdout}\n{stderr}");
    server.assert_no_violations();
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hello from codex\n"
    );
    let events = json_lines(&stdout);
    assert!(events.iter().any(|e| e["type"] == "thread.started"));
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .expect("turn.completed");
    // Realistic usage: most of the prompt is read from the cache, as real
    // sessions report it (the fake model's 48 000 cache-read tokens a turn).
    assert_eq!(done["usage"]["input_tokens"], 50400, "{done}");
    assert_eq!(done["usage"]["cached_input_tokens"], 48000, "{done}");
    assert_eq!(server.remaining(), 0);
}

#[test]
fn gemini_cli_writes_the_file_the_fake_model_asks_for() {
    let Some(gemini) = installed_cli("gemini") else {
        return;
    };
    // Gemini CLI skips a settings file under a world-writable directory (/tmp).
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    // Gemini CLI needs its auth type chosen and, for yolo to hold, folder trust off.
    let settings = dir.path().join("system-settings.json");
    std::fs::write(
        &settings,
        json!({"security": {"auth": {"selectedType": "gemini-api-key"},
                            "folderTrust": {"enabled": false}}})
        .to_string(),
    )
    .unwrap();
    // Gemini also skips it when the file or its directory is writable by
    // others (a umask of 0 in a CI job): modes set, not inherited.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&settings, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = FakeAgentModel::start(
        Wire::Gemini,
        vec![
            Turn::tool(
                "write_file",
                json!({"file_path": "{cwd}/hello.txt", "content": "hello from gemini\n"}),
            ),
            Turn::text("Wrote hello.txt."),
        ],
    )
    .expect_api_key("gemini-test-key");
    let mut cmd = Command::new(&gemini);
    base_env(&mut cmd, dir.path());
    cmd.current_dir(&work)
        .env("GEMINI_API_KEY", "gemini-test-key")
        .env("GOOGLE_GEMINI_BASE_URL", server.origin())
        .env("GEMINI_CLI_SYSTEM_SETTINGS_PATH", &settings)
        .args(["-p", "write hello.txt", "--output-format", "stream-json"])
        .args(["--approval-mode", "yolo", "-m", "gemini-2.5-pro"]);
    let (ok, stdout, stderr) = run(&mut cmd);
    assert!(ok, "gemini failed:\n{stdout}\n{stderr}");
    server.assert_no_violations();
    assert_eq!(
        std::fs::read_to_string(work.join("hello.txt")).unwrap(),
        "hello from gemini\n"
    );
    let events = json_lines(&stdout);
    let result = events
        .iter()
        .find(|e| e["type"] == "result")
        .expect("a result event");
    assert_eq!(result["status"], "success", "{result}");
    assert_eq!(result["stats"]["input_tokens"], 50400, "{result}");
    assert_eq!(result["stats"]["cached"], 48000, "{result}");
    assert!(events.iter().any(|e| e["type"] == "tool_use"), "{stdout}");
    assert_eq!(server.remaining(), 0);
}
