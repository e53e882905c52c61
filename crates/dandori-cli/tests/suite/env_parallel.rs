//! Seed 002 §12.2 parallel setup, end to end with the real uv and npm: a
//! root Python project and a `web/` Node package are each set up (at the same
//! time), `env exec` runs both test suites, a second setup reuses both, a
//! changed manifest prepares only its ecosystem again, and a broken one is
//! reported by name without hiding the other.

use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../dandori-env/tests/fixtures")
        .join(name)
}

fn copy_into(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    let ok = Command::new("cp")
        .arg("-R")
        .arg(format!("{}/.", src.display()))
        .arg(dst)
        .status()
        .unwrap();
    assert!(ok.success());
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

/// The real_python project at the root, the real_node package in `web/`.
fn two_ecosystems() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_into(&fixture("real_python"), dir.path());
    copy_into(&fixture("real_node"), &dir.path().join("web"));
    git_init(dir.path());
    dir
}

fn dandori(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN)
        .args(args)
        // Never bootstrap into the user's cache from a test.
        .env("DANDORI_TOOLS_BOOTSTRAP", "0")
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn setup(repo: &Path) -> (i32, Value, String) {
    let r = repo.display().to_string();
    let (code, out, err) = dandori(&["env", "setup", "--repo", &r, "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v, err)
}

/// `(key, environment, root, reused)` of each ecosystem of `env setup --json`.
fn ecosystems(v: &Value) -> Vec<(String, String, String, bool)> {
    v["ecosystems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["key"].as_str().unwrap().to_string(),
                e["environment"].as_str().unwrap().to_string(),
                e["root"].as_str().unwrap().to_string(),
                e["reused"].as_bool().unwrap(),
            )
        })
        .collect()
}

fn state_dir(repo: &Path) -> PathBuf {
    repo.join(".git/dandori/environment")
}

#[test]
fn two_independent_ecosystems_are_set_up_together_reused_apart_and_activated_together() {
    let repo = two_ecosystems();
    let r = repo.path().display().to_string();

    let (code, v, err) = setup(repo.path());
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(v["overall_status"], "success", "{v:#}");
    assert_eq!(
        ecosystems(&v),
        vec![
            ("primary".into(), "python".into(), ".".into(), false),
            ("node@web".into(), "node".into(), "web".into(), false),
        ]
    );
    // The schedule in the record: two directories, two chains, two workers,
    // and the two setups overlapped in time.
    let rec: Value = serde_json::from_str(
        &std::fs::read_to_string(state_dir(repo.path()).join("ecosystems.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["max_parallel"], 2);
    assert_eq!(rec["workers"], 2);
    assert_eq!(
        rec["chains"],
        serde_json::json!([["primary"], ["node@web"]])
    );
    let e = rec["ecosystems"].as_array().unwrap();
    assert_eq!(
        (e[0]["worker"].as_u64(), e[1]["worker"].as_u64()),
        (Some(0), Some(1))
    );
    let at = |i: usize, k: &str| e[i][k].as_str().unwrap().to_string();
    assert!(
        at(0, "started_at") < at(1, "finished_at") && at(1, "started_at") < at(0, "finished_at"),
        "the two setups did not overlap: {rec:#}"
    );
    // Each ecosystem's own records, logs and state.
    let node_dir = state_dir(repo.path()).join("ecosystems/node@web");
    let node_setup: Value =
        serde_json::from_str(&std::fs::read_to_string(node_dir.join("setup.json")).unwrap())
            .unwrap();
    assert_eq!(node_setup["environment"], "node");
    assert_eq!(node_setup["root"], "web");
    assert!(node_dir.join("logs").is_dir());
    assert!(node_dir.join("state.json").is_file());
    let py_setup: Value = serde_json::from_str(
        &std::fs::read_to_string(state_dir(repo.path()).join("setup.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(py_setup["environment"], "python");

    // Both test suites run in the combined environment.
    let (code, out, err) = dandori(&[
        "env",
        "exec",
        "--repo",
        &r,
        "--",
        "sh",
        "-c",
        "python -m pytest -q -p no:cacheprovider && cd web && npm test",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}");
    assert!(out.contains("# pass 1"), "{out}");
    // PATH: the primary environment's bin directory first, NODE_PATH has the
    // web package's node_modules.
    let (code, out, err) = dandori(&[
        "env",
        "exec",
        "--repo",
        &r,
        "--",
        "sh",
        "-c",
        "echo \"$PATH\"; echo \"$NODE_PATH\"",
    ]);
    assert_eq!(code, 0, "{err}");
    let mut lines = out.lines();
    let path = lines.next().unwrap();
    let canon = dandori_fs::canonicalize(repo.path()).unwrap();
    assert!(
        path.starts_with(&format!("{}/.venv/bin:", canon.display())),
        "{path}"
    );
    assert_eq!(
        lines.next().unwrap(),
        format!("{}/web/node_modules", canon.display())
    );

    // A second setup reuses both.
    let (code, v, err) = setup(repo.path());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        ecosystems(&v).iter().map(|e| e.3).collect::<Vec<_>>(),
        vec![true, true],
        "{v:#}"
    );

    // A changed web manifest prepares only the Node package again.
    let manifest = repo.path().join("web/package.json");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replace(
            "\"private\": true",
            "\"private\": true,\n  \"description\": \"web\"",
        ),
    )
    .unwrap();
    let (code, v, err) = setup(repo.path());
    assert_eq!(code, 0, "{v:#}\n{err}");
    assert_eq!(
        ecosystems(&v)
            .iter()
            .map(|e| (e.0.as_str(), e.3))
            .collect::<Vec<_>>(),
        vec![("primary", true), ("node@web", false)]
    );
}

#[test]
fn a_broken_ecosystem_is_named_and_does_not_hide_the_other() {
    let repo = two_ecosystems();
    std::fs::write(
        repo.path().join("web/package.json"),
        "{ \"name\": \"web\",\n",
    )
    .unwrap();
    let (code, v, err) = setup(repo.path());
    // The primary is ready: a partial success, the Node package named.
    assert_eq!(v["overall_status"], "partial_success", "{v:#}\n{err}");
    assert_eq!(code, 4, "{v:#}");
    assert_eq!(v["handover"]["environment_ready"], true);
    let e = v["ecosystems"].as_array().unwrap();
    assert_eq!(e[0]["overall_status"], "success");
    assert_eq!(e[1]["key"], "node@web");
    assert_eq!(e[1]["overall_status"], "failed");
    let errors: Vec<&str> = v["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(
        errors.iter().any(
            |x| x.starts_with("node environment in web/ is not ready (failed)")
                && x.contains("package.json")
        ),
        "{errors:?}"
    );
    let r = repo.path().display().to_string();
    let (code, out, err) = dandori(&[
        "env",
        "exec",
        "--repo",
        &r,
        "--",
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("1 passed"), "{out}");
}

#[test]
fn max_parallel_one_sets_them_up_one_after_the_other() {
    let repo = two_ecosystems();
    let r = repo.path().display().to_string();
    let (code, out, err) = dandori(&[
        "env",
        "setup",
        "--repo",
        &r,
        "--json",
        "-c",
        "planning.environment_setup.execution.max_parallel=1",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    let rec: Value = serde_json::from_str(
        &std::fs::read_to_string(state_dir(repo.path()).join("ecosystems.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(rec["workers"], 1);
    let e = rec["ecosystems"].as_array().unwrap();
    assert_eq!(
        (e[0]["worker"].as_u64(), e[1]["worker"].as_u64()),
        (Some(0), Some(0))
    );
    // One worker: the Node package starts after the Python project finished.
    assert!(
        e[0]["finished_at"].as_str().unwrap() <= e[1]["started_at"].as_str().unwrap(),
        "{rec:#}"
    );
}
