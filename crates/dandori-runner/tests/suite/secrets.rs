//! Secrets never leave: a step whose change holds a secret fails with
//! SECRET_DETECTED and commits nothing, and no secret reaches git history, the
//! run directory (trace, logs, report, errors, patches) or the model.

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;

use super::llm_loop::{completion, llm_options};
use super::support::*;
use dandori_test_support::{FakeLlmServer, Reply};

const CREDENTIAL: &str = "cred-7f3a9b2c4d5e6f70";
const DB_PASSWORD: &str = "Zx9vQ2mK7pL4wR8";

/// Credential shapes, assembled at run time so that no source file holds one.
fn planted() -> Vec<String> {
    let r = |prefix: &str, n: usize| format!("{prefix}{}", &"a1B2c3D4e5F6g7H8".repeat(6)[..n]);
    vec![
        format!("OPENAI = \"{}\"", r("sk-proj-", 40)),
        format!("ANTHROPIC = '{}'", r("sk-ant-api03-", 40)),
        format!("gh = \"{}\"", r("ghp_", 36)),
        format!("gl = \"{}\"", r("glpat-", 20)),
        format!("aws = \"AKIA{}\"", "Q3R4S5T6U7V8W9X2"),
        format!("slack = \"{}\"", r("xoxb-", 30)),
        format!("stripe = \"{}\"", r("sk_live_", 24)),
        format!("maps = \"AIza{}\"", r("", 35)),
        format!("jwt = \"eyJ{}.eyJ{}.{}\"", r("", 20), r("", 20), r("", 20)),
        "db_password = \"Tr0ub4dor9xQ9zLm\"".to_string(),
    ]
}

/// The secret part of each planted line (what must never be seen again).
fn secret_of(line: &str) -> &str {
    line.split(['"', '\'']).nth(1).unwrap()
}

fn secret_env() -> Vec<(&'static str, String)> {
    vec![
        ("MY_SERVICE_CREDENTIAL", CREDENTIAL.to_string()),
        (
            "DATABASE_URL",
            format!("postgres://app:{DB_PASSWORD}@db.internal:5432/app"),
        ),
    ]
}

/// Every file below `dir`, as text.
fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else if let Ok(bytes) = std::fs::read(&p) {
            out.push_str(&format!("\n== {}\n", p.display()));
            out.push_str(&String::from_utf8_lossy(&bytes));
        }
    }
    out
}

fn assert_nowhere(repo: &Repo, run_dir: &Path, secrets: &[String], extra: &str) {
    let history = repo.git(&["log", "--all", "-p", "--format=%H %s%n%b"]);
    let run = all_text(run_dir);
    for s in secrets {
        assert!(!history.contains(s.as_str()), "{s} in git history");
        assert!(
            !run.contains(s.as_str()),
            "{s} in the run directory:\n{run}"
        );
        assert!(!extra.contains(s.as_str()), "{s} sent to the model");
    }
}

#[test]
fn a_scripted_agent_planting_secrets_commits_nothing() {
    let repo = Repo::new();
    let planted = planted();
    let body = planted.join("\n");
    let agent = repo.agent(&format!(
        r#"mkdir -p src
cat > src/settings.py <<'PLANTED'
{body}
PLANTED
echo "credential=$MY_SERVICE_CREDENTIAL" > src/env.txt
echo "db=$DATABASE_URL" >> src/env.txt
cat src/settings.py src/env.txt"#
    ));
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit("cat src/env.txt")],
        json!({}),
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    // The agent gets these secrets because the user listed them (runner.agent_env).
    for (k, v) in secret_env() {
        opts.base_env.insert(k.to_string(), v);
        opts.config.runner.agent_env.push(k.to_string());
    }
    let out = run(&opts).unwrap();
    assert_eq!(statuses(&run_dir), vec![("S01".into(), "failed".into())]);
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "SECRET_DETECTED"
    );
    assert_eq!(out.completion.exit_code, 1);
    assert_eq!(repo.commits("dandori/RQ-1/run-1"), vec![]);

    // Every planted secret is named by file and line, never shown.
    let events = trace_events(&run_dir, "SECRET_DETECTED");
    let found: Vec<(String, u64, String)> = events[0]["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["file"].as_str().unwrap().to_string(),
                f["line"].as_u64().unwrap(),
                f["kind"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let kinds = [
        "openai_key",
        "anthropic_key",
        "github_token",
        "gitlab_token",
        "aws_access_key_id",
        "slack_token",
        "stripe_key",
        "google_api_key",
        "jwt",
        "high_entropy_assignment",
    ];
    let mut want: Vec<(String, u64, String)> = kinds
        .iter()
        .enumerate()
        .map(|(i, k)| ("src/settings.py".to_string(), i as u64 + 1, k.to_string()))
        .collect();
    want.push((
        "src/env.txt".to_string(),
        1,
        "env_value:MY_SERVICE_CREDENTIAL".to_string(),
    ));
    want.push((
        "src/env.txt".to_string(),
        2,
        "env_value:DATABASE_URL".to_string(),
    ));
    want.sort();
    let mut found_sorted = found.clone();
    found_sorted.sort();
    assert_eq!(found_sorted, want);
    let errors = std::fs::read_to_string(run_dir.join("errors.json")).unwrap();
    assert!(errors.contains("SECRET_DETECTED"), "{errors}");
    assert!(
        errors.contains("src/settings.py:5 (aws_access_key_id)"),
        "{errors}"
    );
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("SECRET_DETECTED"), "{report}");

    // The change is discarded; the patch keeps it without the flagged lines.
    assert!(
        !run_dir
            .join(format!(
                "worktrees/pool-{}-1/src/settings.py",
                std::process::id()
            ))
            .exists()
    );
    let patch = std::fs::read_to_string(run_dir.join("patches/S01.patch")).unwrap();
    assert!(
        patch.contains("+[line removed by dandori: aws_access_key_id]"),
        "{patch}"
    );

    let mut secrets: Vec<String> = planted.iter().map(|l| secret_of(l).to_string()).collect();
    secrets.push(CREDENTIAL.to_string());
    secrets.push(DB_PASSWORD.to_string());
    assert_nowhere(&repo, &run_dir, &secrets, "");
}

#[test]
fn the_llm_executor_never_shows_the_model_a_secret_and_commits_none() {
    let repo = Repo::new();
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    // The model never writes a secret itself: a script it writes assembles one and
    // copies a secret variable, then prints both.
    let script = "printf 'AKIA%s\\n' Q3R4S5T6U7V8W9X2 > keys.txt\nprintf 'cred=%s\\n' \"$MY_SERVICE_CREDENTIAL\" >> keys.txt\ncat keys.txt\n";
    let server = FakeLlmServer::start(vec![
        Reply::openai_tool_call("write_file", &json!({"path": "gen.sh", "content": script})),
        Reply::openai_tool_call("run_command", &json!({"command": "sh gen.sh"})),
        Reply::openai_tool_call("read_file", &json!({"path": "keys.txt"})),
        completion(),
    ]);
    let mut opts = llm_options(&repo, &run_dir, &server);
    for (k, v) in secret_env() {
        opts.base_env.insert(k.to_string(), v);
    }
    dandori_runner::run(&opts).unwrap();
    server.assert_no_violations();
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "SECRET_DETECTED"
    );
    assert_eq!(repo.commits("dandori/RQ-1/run-1"), vec![]);
    let sent: String = server
        .requests()
        .iter()
        .map(|r| r.body.to_string())
        .collect();
    // The model did see the masked key; the credential never reached the child at
    // all (the child environment drops secret variables), so the script printed
    // an empty value.
    assert!(sent.contains("***\\ncred=\\n"), "{sent}");
    let aws = format!("AKIA{}", "Q3R4S5T6U7V8W9X2");
    assert_nowhere(&repo, &run_dir, &[aws, CREDENTIAL.to_string()], &sent);
}

/// Every object of the repository (loose and packed), contents included.
fn object_store(repo: &Repo) -> String {
    repo.git(&["cat-file", "--batch-all-objects", "--batch", "--unordered"])
}

/// Issue 25: an agent that writes a known secret base64-encoded or reversed is
/// refused like one that writes it plainly, and the blobs staging wrote for it are
/// not left in the object store.
#[test]
fn an_encoded_secret_is_refused_and_leaves_no_object() {
    let repo = Repo::new();
    let agent = repo.agent(
        r#"mkdir -p src
printf '%s' "$MY_SERVICE_CREDENTIAL" | base64 > src/blob.txt
printf 'x=%s\n' "$MY_SERVICE_CREDENTIAL" | base64 >> src/blob.txt
printf '%s\n' "$MY_SERVICE_CREDENTIAL" | rev > src/rev.txt
echo harmless > src/ok.txt"#,
    );
    let run_dir = repo.write_plan(&planning(vec![S::new("S01")], json!({})));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    // The agent gets the credential because the user listed it (runner.agent_env).
    for (k, v) in secret_env() {
        opts.base_env.insert(k.to_string(), v);
        opts.config.runner.agent_env.push(k.to_string());
    }
    run(&opts).unwrap();
    assert_eq!(
        stage(&run_dir)["steps"][0]["reason_code"],
        "SECRET_DETECTED"
    );
    assert_eq!(repo.commits("dandori/RQ-1/run-1"), vec![]);
    let events = trace_events(&run_dir, "SECRET_DETECTED");
    let mut kinds: Vec<String> = events[0]["data"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            format!(
                "{}:{} {}",
                f["file"].as_str().unwrap(),
                f["line"],
                f["kind"].as_str().unwrap()
            )
        })
        .collect();
    kinds.sort();
    assert_eq!(
        kinds,
        vec![
            "src/blob.txt:1 env_value:MY_SERVICE_CREDENTIAL:base64",
            "src/blob.txt:2 env_value:MY_SERVICE_CREDENTIAL:base64",
            "src/rev.txt:1 env_value:MY_SERVICE_CREDENTIAL:reversed",
        ]
    );
    let reversed: String = CREDENTIAL.chars().rev().collect();
    let objects = object_store(&repo);
    assert!(
        !objects.contains(&reversed),
        "the reversed secret is in the object store"
    );
    assert!(!objects.contains(CREDENTIAL));
    // Nor in the run directory (the patch is masked in every form).
    let patch = std::fs::read_to_string(run_dir.join("patches/S01.patch")).unwrap();
    assert!(!patch.contains(&reversed), "{patch}");
    assert!(!all_text(&run_dir).contains(&reversed));
}

/// Issue 25: a secret in a plan's unit command is masked in report.md,
/// stage.json and errors.json, as it is in the unit log.
#[test]
fn a_secret_in_a_unit_command_is_masked_in_every_artefact() {
    let repo = Repo::new();
    let agent = repo.agent("mkdir -p src && echo done > src/S01");
    let run_dir = repo.write_plan(&planning(
        vec![S::new("S01").unit(&format!("test {CREDENTIAL} != nope"))],
        json!({}),
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    for (k, v) in secret_env() {
        opts.base_env.insert(k.to_string(), v);
    }
    run(&opts).unwrap();
    for file in ["report.md", "stage.json", "errors.json"] {
        let text = std::fs::read_to_string(run_dir.join(file)).unwrap_or_default();
        assert!(!text.contains(CREDENTIAL), "{file}:\n{text}");
    }
    let stage = std::fs::read_to_string(run_dir.join("stage.json")).unwrap();
    let report = std::fs::read_to_string(run_dir.join("report.md")).unwrap();
    assert!(report.contains("test *** != nope"), "{report}\n{stage}");
    // stage.json still reads back as the stage.
    let _: serde_json::Value = serde_json::from_str(&stage).unwrap();
}

/// A command's log is masked when the command ends; a dandori killed before
/// that leaves the secret in the log (a test command, a setup command). The
/// resume masks what it finds before anything else reads the run.
#[test]
fn a_resume_masks_the_logs_a_killed_run_left_unmasked() {
    let repo = Repo::new();
    let agent = repo.agent("mkdir -p src && echo done > src/S01");
    let run_dir = repo.write_plan(&planning(vec![S::new("S01").unit("true")], json!({})));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    for (k, v) in secret_env() {
        opts.base_env.insert(k.to_string(), v);
    }
    run(&opts).unwrap();
    // What a kill in the middle of a command leaves: its output, unmasked.
    let left = [
        run_dir.join("logs/step.S01.unit.log"),
        run_dir.join("environment/logs/setup.01.stdout.log"),
    ];
    for log in &left {
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        std::fs::write(log, format!("connecting with {CREDENTIAL}\n")).unwrap();
    }
    opts.resume = true;
    run(&opts).unwrap();
    for log in &left {
        let text = std::fs::read_to_string(log).unwrap();
        assert!(!text.contains(CREDENTIAL), "{}:\n{text}", log.display());
        assert!(
            text.contains("connecting with ***"),
            "{}:\n{text}",
            log.display()
        );
    }
}
