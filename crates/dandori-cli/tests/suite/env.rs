//! `dandori env detect | setup | verify | exec` end to end.

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn fixture_copy(name: &str) -> tempfile::TempDir {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../dandori-env/tests/fixtures")
        .join(name);
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("cp")
        .arg("-R")
        .arg(format!("{}/.", src.display()))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(ok.success());
    dir
}

fn dandori(args: &[&str], path: Option<&str>) -> (i32, String, String) {
    let mut c = Command::new(BIN);
    c.args(args);
    // Never bootstrap into the user's cache from a test.
    c.env("DANDORI_TOOLS_BOOTSTRAP", "0");
    if let Some(p) = path {
        c.env("PATH", p);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn repo_arg(p: &Path) -> String {
    p.display().to_string()
}

#[test]
fn detect_reports_every_ecosystem_and_the_selection() {
    let repo = fixture_copy("mixed_python_node");
    let r = repo_arg(repo.path());
    let (code, out, err) = dandori(&["env", "detect", "--repo", &r, "--json"], None);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = v["analysis"]["ecosystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["node", "python"]);
    assert_eq!(v["selected_environment"]["name"], "node");
    let (code, out, _) = dandori(
        &["env", "detect", "--repo", &r, "--language", "python"],
        None,
    );
    assert_eq!(code, 0);
    assert!(
        out.contains("selected: python (the task targets python"),
        "{out}"
    );
}

#[test]
fn blocked_environment_exits_3_with_a_report() {
    let repo = fixture_copy("blocked_go");
    let r = repo_arg(repo.path());
    let (path, _bin) = dandori_test_support::tool_cache::path_without("go");
    let (code, out, _) = dandori(&["env", "setup", "--repo", &r, "--json"], Some(&path));
    assert_eq!(code, 3);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["overall_status"], "blocked");
    assert_eq!(v["setup_result"]["overall_status"], "blocked");
    assert_eq!(v["handover"]["environment_ready"], false);
    assert_eq!(v["setup_result"]["blocked"]["code"], "ENV_TOOL_MISSING");
    assert!(
        repo.path()
            .join(".dandori/environment/error_report.md")
            .exists()
    );
}

#[test]
fn node_setup_reuse_verify_and_exec() {
    let repo = fixture_copy("real_node");
    let r = repo_arg(repo.path());
    let (code, out, err) = dandori(&["env", "setup", "--repo", &r, "--json"], None);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["overall_status"], "success");
    assert_eq!(v["setup_result"]["reused"], false);

    let (code, out, _) = dandori(&["env", "setup", "--repo", &r, "--json"], None);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["setup_result"]["reused"], true);

    let (code, out, _) = dandori(&["env", "setup", "--repo", &r, "--json", "--force"], None);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["setup_result"]["reused"], false);

    let (code, out, err) = dandori(&["env", "verify", "--repo", &r], None);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.lines().last().unwrap().contains("success"), "{out}");

    let (code, out, _) = dandori(&["env", "exec", "--repo", &r, "--", "npm", "test"], None);
    assert_eq!(code, 0);
    assert!(out.contains("# pass 1"), "{out}");
    let (code, _, _) = dandori(
        &["env", "exec", "--repo", &r, "--", "sh", "-c", "exit 7"],
        None,
    );
    assert_eq!(code, 7);
    let stats: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo.path()
                .join(".dandori/environment/environment_stats.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(stats["environment_setup_stats"]["total_attempts"], 2);
    assert_eq!(stats["environment_setup_stats"]["reused"], 1);
}

#[test]
fn config_overrides_reach_the_setup() {
    let repo = fixture_copy("real_node");
    let r = repo_arg(repo.path());
    let (code, out, _) = dandori(
        &[
            "env",
            "setup",
            "--repo",
            &r,
            "--json",
            "-c",
            "planning.environment_setup.enabled=false",
        ],
        None,
    );
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        v["setup_result"]["commands_executed"],
        serde_json::json!([])
    );
    assert!(!repo.path().join("node_modules").exists());
}

/// A path that is a file is a usage error (exit 2), said once, before anything
/// is analysed or set up.
#[test]
fn a_file_path_is_a_usage_error_said_once() {
    let repo = fixture_copy("real_node");
    let file = repo.path().join("package.json");
    let f = repo_arg(&file);
    for cmd in ["detect", "setup", "verify"] {
        let (code, out, err) = dandori(&["env", cmd, "--repo", &f], None);
        assert_eq!(code, 2, "{cmd}: {out}\n{err}");
        assert_eq!(err.matches("not a directory").count(), 1, "{cmd}: {err}");
        assert!(err.contains("USAGE_ERROR"), "{cmd}: {err}");
        assert!(out.is_empty(), "{cmd}: {out}");
    }
    assert!(!repo.path().join(".dandori").exists());
}

/// uv only in dandori's tool cache (not on PATH): setup makes the virtual
/// environment with it (no pip inside), and `env verify` checks with the same
/// uv — green, not a `pip list` that cannot work there.
#[test]
fn verify_is_green_after_a_setup_with_the_cached_uv() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("requirements.txt"), "").unwrap();
    std::fs::write(repo.path().join("app.py"), "print('hi')\n").unwrap();
    let cache = dandori_test_support::tool_cache::with_program("uv");
    let r = repo_arg(repo.path());
    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(args)
            .env("DANDORI_TOOLS_BOOTSTRAP", "0")
            .env("DANDORI_TOOLS_DIR", cache.path())
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(&["env", "detect", "--repo", &r]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("$ uv venv .venv --allow-existing"), "{out}");
    let (code, out, err) = run(&["env", "setup", "--repo", &r, "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!repo.path().join(".venv/bin/pip").exists());
    let (code, out, err) = run(&["env", "verify", "--repo", &r, "--json"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["overall_status"], "success", "{v:#}");
    let commands: Vec<&str> = v["verification_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert!(
        commands.contains(&"uv pip list --python .venv/bin/python"),
        "{commands:?}"
    );
    // A shell line in `env exec` finds the cached tool too (the tool cache is
    // readable inside the sandbox, not only a program named directly).
    let (code, out, err) = run(&[
        "env",
        "exec",
        "--repo",
        &r,
        "--",
        "sh",
        "-c",
        "uv --version",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("uv "), "{out}");
}

/// `dandori` with `envs` set (a fresh HOME, a tool cache) and the system PATH.
fn dandori_with(args: &[&str], envs: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("DANDORI_TOOLS_BOOTSTRAP", "0");
    for (k, v) in envs {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn git_init(dir: &Path) {
    for args in [
        &["init", "-q"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "init",
        ],
    ] {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(ok.success(), "git {args:?}");
    }
}

/// Every command with `--repo` names a missing path, where relative paths are
/// read from, and a reason code; nothing runs.
#[test]
fn a_missing_repo_path_is_named_with_a_reason_code_by_every_command() {
    let gone = tempfile::tempdir().unwrap().path().join("no-such-repo");
    let g = gone.display().to_string();
    for args in [
        vec!["env", "detect", "--repo", &g],
        vec!["env", "setup", "--repo", &g, "--json"],
        vec!["env", "verify", "--repo", &g],
        vec!["env", "exec", "--repo", &g, "--", "true"],
        vec!["runs", "--repo", &g],
        vec!["metrics", "--repo", &g],
    ] {
        let (code, out, err) = dandori(&args, None);
        assert_eq!(code, 2, "{args:?}: {out}\n{err}");
        assert!(err.contains(&g), "{args:?}: {err}");
        assert!(err.contains("REPO_NOT_FOUND"), "{args:?}: {err}");
        assert!(err.contains("current directory"), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: {out}");
    }
    assert!(!gone.exists());
}

/// A blocked setup (go is not installed): `env verify` does not call the
/// environment working, it exits 3 with the setup's reason code.
#[test]
fn verify_fails_after_a_blocked_setup() {
    let repo = fixture_copy("blocked_go");
    let r = repo_arg(repo.path());
    let (path, _bin) = dandori_test_support::tool_cache::path_without("go");
    let path = Some(path.as_str());
    let (code, _, _) = dandori(&["env", "setup", "--repo", &r, "--json"], path);
    assert_eq!(code, 3);
    let (code, out, err) = dandori(&["env", "verify", "--repo", &r, "--json"], path);
    assert_eq!(code, 3, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["reason_code"], "ENV_TOOL_MISSING", "{v:#}");
    assert!(err.contains("ENV_TOOL_MISSING"), "{err}");
}

/// A failed setup (a requirements line pip cannot read): `env verify` exits 1
/// with ENVIRONMENT_FAILED even though `python3 --version` would pass.
#[test]
fn verify_fails_after_a_failed_setup() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        repo.path().join("requirements.txt"),
        "this is !! not a requirement\n",
    )
    .unwrap();
    std::fs::write(repo.path().join("app.py"), "print(1)\n").unwrap();
    git_init(repo.path());
    let home = tempfile::tempdir().unwrap();
    let h = home.path().display().to_string();
    let r = repo_arg(repo.path());
    let envs = [("HOME", h.as_str())];
    let (code, out, err) = dandori_with(
        &["env", "setup", "--repo", &r, "--json", "--sandbox", "off"],
        &envs,
    );
    assert_eq!(code, 1, "{out}\n{err}");
    let (code, out, err) =
        dandori_with(&["env", "verify", "--repo", &r, "--sandbox", "off"], &envs);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("ENVIRONMENT_FAILED"), "{err}");
    assert!(err.contains("failed"), "{err}");
}

/// From a fresh HOME whose tool cache cannot be written, `env setup --json`
/// says the uv bootstrap failed and that pip was used instead, in its output
/// and in setup.json; the setup still works, and `.dandori/` is ignored by git.
#[test]
fn a_failed_uv_bootstrap_is_reported_in_the_json_and_setup_json() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(repo.path().join("requirements.txt"), "").unwrap();
    std::fs::write(repo.path().join("app.py"), "print(1)\n").unwrap();
    git_init(repo.path());
    let home = tempfile::tempdir().unwrap();
    // `~/.cache` is a file: no tool cache can be made under it.
    std::fs::write(home.path().join(".cache"), "").unwrap();
    let h = home.path().display().to_string();
    let r = repo_arg(repo.path());
    let (code, out, err) = dandori_with(
        &["env", "setup", "--repo", &r, "--json", "--sandbox", "off"],
        &[("HOME", &h), ("DANDORI_TOOLS_BOOTSTRAP", "1")],
    );
    assert_eq!(code, 0, "{out}\n{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let b = &v["setup_result"]["tool_bootstrap"];
    assert_eq!(b["tool"], "uv", "{v:#}");
    assert_eq!(b["status"], "failed", "{b:#}");
    assert!(b["fallback"].as_str().unwrap().contains("pip"), "{b:#}");
    assert!(b["error"].as_str().unwrap().contains(".cache"), "{b:#}");
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join(".git/dandori/environment/setup.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["tool_bootstrap"], *b);
    // In a git repository the records live in the git directory, which
    // prettier, eslint and pytest never walk; nothing of dandori's is in the tree.
    assert!(!repo.path().join(".dandori").exists());
    let exclude = std::fs::read_to_string(repo.path().join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/.dandori/"), "{exclude}");
    let (code, out, err) = dandori_with(
        &["env", "verify", "--repo", &r, "--sandbox", "off"],
        &[("HOME", &h)],
    );
    assert_eq!(code, 0, "{out}\n{err}");
}
