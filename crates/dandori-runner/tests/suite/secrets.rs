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
