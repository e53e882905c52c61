//! Agent CLIs as model providers, end to end: `dandori plan --provider
//! claude-cli|codex-cli|gemini-cli` (and a `custom` one from config) against
//! scripted stand-ins on PATH that check their flags, refuse to run when a key
//! reached them, and print the envelope of the real CLI.

use std::path::Path;

use dandori_test_support::fixtures::{plan_answer, size_answer};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::plan_llm::{dandori, json_out, todo_api};

const KEY: &str = "sk-ant-fakefakefakefake0123456789";

/// A stand-in `name` in `dir`: checks that its leading arguments are `flags`,
/// that no API key reached it, then prints `size` or `plan` (files next to it)
/// depending on the prompt (its last argument).
fn stand_in(dir: &Path, name: &str, flags: &[&str], size: &str, plan: &str) {
    std::fs::write(dir.join(format!("{name}.size")), size).unwrap();
    std::fs::write(dir.join(format!("{name}.plan")), plan).unwrap();
    let mut checks = String::new();
    for (i, f) in flags.iter().enumerate() {
        checks.push_str(&format!(
            "[ \"${}\" = '{f}' ] || {{ echo \"bad flag {}: $*\" >&2; exit 64; }}\n",
            i + 1,
            i + 1
        ));
    }
    let script = format!(
        "#!/bin/sh\n{checks}[ -z \"$ANTHROPIC_API_KEY\" ] || {{ echo \"key leaked: $ANTHROPIC_API_KEY\" >&2; exit 65; }}\nfor last; do :; done\nhere=$(dirname \"$0\")\ncase \"$last\" in\n  *'Task Size Estimation'*) cat \"$here/{name}.size\" ;;\n  *) cat \"$here/{name}.plan\" ;;\nesac\n"
    );
    let path = dir.join(name);
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

fn path_with(dir: &Path) -> String {
    format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

fn claude_envelope(answer: &Value) -> String {
    json!({"type": "result", "subtype": "success", "is_error": false, "duration_ms": 12,
        "num_turns": 1, "session_id": "s-1", "total_cost_usd": 0.01,
        "result": answer.to_string(),
        "usage": {"input_tokens": 100, "cache_read_input_tokens": 20, "output_tokens": 50}})
    .to_string()
}

fn codex_events(answer: &Value) -> String {
    [
        json!({"type": "thread.started", "thread_id": "t-1"}),
        json!({"type": "turn.started"}),
        json!({"type": "item.completed", "item": {"id": "i-0", "type": "reasoning", "text": "thinking"}}),
        json!({"type": "item.completed", "item": {"id": "i-1", "type": "agent_message", "text": format!("Here is the plan:\n```json\n{answer}\n```")}}),
        json!({"type": "turn.completed", "usage": {"input_tokens": 90, "cached_input_tokens": 0, "output_tokens": 40}}),
    ]
    .iter()
    .map(|v| v.to_string() + "\n")
    .collect()
}

fn gemini_envelope(answer: &Value) -> String {
    format!(
        "Loaded cached credentials.\n{}",
        json!({"response": answer.to_string(), "stats": {"models": {"gemini-2.5-pro":
            {"api": {"totalRequests": 1}, "tokens": {"prompt": 80, "candidates": 30, "total": 110}}}}})
    )
}

/// `dandori plan requests/RQ-001.md --json --provider PROVIDER` with `bin` first
/// on PATH and `env`.
fn plan_with(
    provider: &str,
    repo: &Path,
    bin: &Path,
    extra: &[&str],
    env: &[(&str, &str)],
) -> std::process::Output {
    let path = path_with(bin);
    let mut env = env.to_vec();
    env.push(("PATH", path.as_str()));
    let mut args = vec![
        "plan",
        "requests/RQ-001.md",
        "--json",
        "--provider",
        provider,
        "-c",
        "planning.cache.enabled=false",
    ];
    args.extend_from_slice(extra);
    dandori(&args, repo, &env)
}

fn trace(v: &Value) -> (String, Vec<Value>) {
    let text = std::fs::read_to_string(v["trace_jsonl"].as_str().unwrap()).unwrap();
    let events = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .collect();
    (text, events)
}

#[test]
fn each_preset_plans_through_its_stand_in() {
    let repo = todo_api();
    let bin = tempfile::tempdir().unwrap();
    let (size, plan) = (size_answer(), plan_answer());
    stand_in(
        bin.path(),
        "claude",
        &["-p", "--output-format", "json"],
        &claude_envelope(&size),
        &claude_envelope(&plan),
    );
    stand_in(
        bin.path(),
        "codex",
        &["exec", "--json", "--skip-git-repo-check"],
        &codex_events(&size),
        &codex_events(&plan),
    );
    stand_in(
        bin.path(),
        "gemini",
        &["--output-format", "json", "--model", "gemini-2.5-pro", "-p"],
        &gemini_envelope(&size),
        &gemini_envelope(&plan),
    );
    for (provider, extra, planner, tokens) in [
        ("claude-cli", vec![], "llm:claude-cli/", 2 * 50),
        ("codex-cli", vec![], "llm:codex-cli/", 2 * 40),
        (
            "gemini-cli",
            vec!["--model", "gemini-2.5-pro"],
            "llm:gemini-cli/gemini-2.5-pro",
            2 * 30,
        ),
    ] {
        let out = plan_with(
            provider,
            repo.path(),
            bin.path(),
            &extra,
            &[("ANTHROPIC_API_KEY", KEY)],
        );
        let v = json_out(&out);
        assert!(
            v["planner"].as_str().unwrap().starts_with(planner),
            "{provider}: {}",
            v["planner"]
        );
        // The model's three steps; each writes its criteria's tests first (issue 36).
        assert_eq!(v["steps"], json!(3), "{provider}");
        assert_eq!(v["planning_skipped"], Value::Null, "{provider}");
        assert_eq!(v["validation"]["ok"], json!(true), "{provider}");
        assert_eq!(
            v["llm_usage"]["phases"]["planning"]["calls"],
            json!(2),
            "{provider}"
        );
        // The budgets count dandori's prompt (estimated) and the CLI's reported
        // answer tokens, not the CLI's own system prompt.
        let planning = &v["llm_usage"]["phases"]["planning"];
        assert_eq!(
            planning["completion_tokens"].as_u64().unwrap(),
            tokens,
            "{provider}: the CLI's own answer token counts: {planning}"
        );
        assert!(
            planning["prompt_tokens"].as_u64().unwrap() > 500,
            "{planning}"
        );
        assert_eq!(planning["estimated_calls"], json!(2), "{provider}");
        let planning = std::fs::read_to_string(v["planning_json"].as_str().unwrap()).unwrap();
        assert!(planning.contains("priority"), "{provider}");
        let (text, events) = trace(&v);
        assert!(!text.contains(KEY), "{provider}: the key reached the trace");
        let calls: Vec<&Value> = events.iter().filter(|e| e["event"] == "LLM_CALL").collect();
        assert_eq!(calls.len(), 2, "{provider}");
        assert!(!String::from_utf8_lossy(&out.stderr).contains(KEY));
    }
}

#[test]
fn malformed_failing_and_slow_clis_fall_back_with_reason_codes() {
    let repo = todo_api();
    let bin = tempfile::tempdir().unwrap();
    // Not an envelope at all.
    stand_in(
        bin.path(),
        "claude",
        &["-p"],
        "I cannot help with that.",
        "nope",
    );
    // The envelope says error, and the exit status is 1.
    let codex_fail =
        json!({"type": "turn.failed", "error": {"message": "usage limit reached"}}).to_string();
    std::fs::write(bin.path().join("codex.size"), &codex_fail).unwrap();
    std::fs::write(
        bin.path().join("codex"),
        "#!/bin/sh\ncat \"$(dirname \"$0\")/codex.size\"\necho 'stack trace' >&2\nexit 1\n",
    )
    .unwrap();
    // Too slow for its one-second limit.
    std::fs::write(
        bin.path().join("slow-agent"),
        "#!/bin/sh\nsleep 20\necho '{}'\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    for f in ["codex", "slow-agent"] {
        std::fs::set_permissions(bin.path().join(f), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    repo.write(
        ".dandori/config.yaml",
        "llm:\n  providers:\n    - name: slow\n      kind: agent_cli\n      request_timeout_secs: 1\n      max_retries: 0\n      agent_cli:\n        preset: custom\n        command: [slow-agent, --ask, '{prompt}']\n",
    );
    let home = tempfile::tempdir().unwrap();
    let home_env = ("DANDORI_CONFIG_HOME", home.path().to_str().unwrap());
    assert!(
        dandori(&["trust"], repo.path(), &[home_env])
            .status
            .success()
    );

    for (provider, code) in [
        ("claude-cli", "AGENT_CLI_BAD_OUTPUT"),
        ("codex-cli", "AGENT_CLI_EXIT"),
        ("slow", "AGENT_CLI_TIMEOUT"),
    ] {
        let started = std::time::Instant::now();
        let out = plan_with(provider, repo.path(), bin.path(), &[], &[home_env]);
        let v = json_out(&out);
        // Like an HTTP provider: the offline planner's plan, and why.
        assert!(v["steps"].as_u64().unwrap() > 1, "{provider}: {v}");
        assert_eq!(v["fallback"]["fallback"], "offline", "{provider}: {v}");
        let (text, _) = trace(&v);
        assert!(
            text.contains(code),
            "{provider}: {code} not in the trace:\n{text}"
        );
        if provider == "codex-cli" {
            assert!(text.contains("usage limit reached"), "{text}");
        }
        if provider == "slow" {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(15),
                "the time limit killed the CLI"
            );
        }
    }
}

#[test]
fn bad_agent_cli_config_and_policy_refusals() {
    let repo = todo_api();
    let bin = tempfile::tempdir().unwrap();
    let path = path_with(bin.path());
    let home = tempfile::tempdir().unwrap();
    let home_env = ("DANDORI_CONFIG_HOME", home.path().to_str().unwrap());
    repo.write(
        ".dandori/config.yaml",
        "llm:\n  providers:\n    - name: empty\n      kind: agent_cli\n      agent_cli: {preset: custom}\n    - name: sneaky\n      kind: agent_cli\n      max_retries: 0\n      agent_cli: {preset: custom, command: [sudo, agent]}\nplanning:\n  environment_setup:\n    security:\n      forbidden_patterns: ['^sudo']\n",
    );
    assert!(
        dandori(&["trust"], repo.path(), &[home_env])
            .status
            .success()
    );
    let out = dandori(
        &["plan", "requests/RQ-001.md", "--provider", "empty"],
        repo.path(),
        &[("PATH", path.as_str()), home_env],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("LLM_PROVIDER_INVALID") && err.contains("agent_cli.command"),
        "{err}"
    );
    let out = dandori(
        &[
            "plan",
            "requests/RQ-001.md",
            "--json",
            "--provider",
            "sneaky",
        ],
        repo.path(),
        &[("PATH", path.as_str()), home_env],
    );
    let v = json_out(&out);
    let (text, _) = trace(&v);
    assert!(text.contains("AGENT_CLI_REFUSED"), "{text}");
    assert!(text.contains("refused by the command policy"), "{text}");
}

/// `plan --provider claude-cli|codex-cli|gemini-cli` where the CLI is missing,
/// and with the real Claude Code from npm that is not signed in (a fresh HOME):
/// the offline planner's plan, exit 0 as for an HTTP provider that cannot plan,
/// and one line of stderr saying why, with the reason code and what to change.
#[test]
fn a_missing_or_signed_out_cli_falls_back_with_a_warning_naming_code_and_key() {
    let repo = todo_api();
    let home = tempfile::tempdir().unwrap();
    let home_s = home.path().to_str().unwrap();
    // PATH without any agent CLI.
    let bare = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter(|d| {
            !["claude", "codex", "gemini"]
                .iter()
                .any(|p| d.join(p).exists())
        })
        .collect::<Vec<_>>();
    let bare = std::env::join_paths(bare).unwrap().into_string().unwrap();
    let warning = |out: &std::process::Output| -> String {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("using the offline planner"))
            .collect();
        assert_eq!(lines.len(), 1, "one warning line: {err}");
        lines[0].to_string()
    };
    for (provider, program) in [
        ("claude-cli", "claude"),
        ("codex-cli", "codex"),
        ("gemini-cli", "gemini"),
    ] {
        let out = dandori(
            &[
                "plan",
                "requests/RQ-001.md",
                "--provider",
                provider,
                "-c",
                "planning.cache.enabled=false",
            ],
            repo.path(),
            &[("PATH", bare.as_str()), ("HOME", home_s)],
        );
        assert_eq!(out.status.code(), Some(0), "{provider}: {out:?}");
        let line = warning(&out);
        assert!(
            line.contains(&format!("AGENT_CLI_REFUSED: provider `{provider}`"))
                && line.contains(&format!("`{program}` is not on PATH"))
                && line.ends_with("(change llm.providers[].agent_cli.command)"),
            "{provider}: {line}"
        );
        // --json carries it too, and the plan is the offline planner's.
        let v = json_out(&dandori(
            &[
                "plan",
                "requests/RQ-001.md",
                "--json",
                "--provider",
                provider,
                "-c",
                "planning.cache.enabled=false",
            ],
            repo.path(),
            &[("PATH", bare.as_str()), ("HOME", home_s)],
        ));
        assert_eq!(v["fallback"]["fallback"], "offline", "{v}");
        assert_eq!(v["fallback"]["reason_code"], "AGENT_CLI_REFUSED", "{v}");
        assert_eq!(
            v["fallback"]["config_key"], "llm.providers[].agent_cli.command",
            "{v}"
        );
    }

    // The real Claude Code, not signed in: it answers "Not logged in" and exits 1.
    let Some(claude) = dandori_test_support::installed_cli("claude") else {
        return;
    };
    let path = format!("{}:{bare}", claude.parent().unwrap().display());
    let out = dandori(
        &[
            "plan",
            "requests/RQ-001.md",
            "--provider",
            "claude-cli",
            "-c",
            "planning.cache.enabled=false",
        ],
        repo.path(),
        &[("PATH", path.as_str()), ("HOME", home_s)],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let line = warning(&out);
    assert!(
        line.contains("AGENT_CLI_EXIT: provider `claude-cli`")
            && line.contains("Not logged in")
            && line.ends_with("(change --provider (or llm.default_provider))"),
        "{line}"
    );
}
