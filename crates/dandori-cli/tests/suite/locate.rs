//! `dandori locate`: ranked files with scores and reasons, text or JSON.

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../dandori-planner/tests/fixtures/repos/rs-ratelimit")
}

fn dandori(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap()
}

#[test]
fn a_quoted_message_finds_the_file_that_emits_it() {
    let repo = repo();
    let repo = repo.to_str().unwrap();
    let out = dandori(&[
        "locate",
        "--repo",
        repo,
        "--json",
        "error: requested 5 tokens but the capacity is 2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hits"][0]["path"], "src/error.rs", "{v}");
    let reasons = v["hits"][0]["reasons"].to_string();
    assert!(reasons.contains("contains"), "{reasons}");
    // The literal index: the format string `"requested {requested} tokens but
    // the capacity is {capacity}"` holds the message's words between values.
    assert!(
        reasons.contains(r#"emits \"tokens but the capacity is"#),
        "{reasons}"
    );
    assert_eq!(v["target_paths"][0], "src/error.rs");

    let text = dandori(&["locate", "--repo", repo, "-n", "2", "トークンの補充"]);
    assert!(text.status.success());
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(stdout.contains("src/bucket.rs"), "{stdout}");

    let missing = dandori(&["locate", "--repo", "/nonexistent/dir", "x"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("REPO_NOT_FOUND"));
}
