//! `dandori plan` end to end: the real binary on a real git repository.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dandori_test_support::TempGitRepo;
use pretty_assertions::assert_eq;

fn example_files(dir: &Path, rel: &str, out: &mut Vec<(String, String)>) {
    for entry in std::fs::read_dir(dir.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == ".dandori" || name == "__pycache__" || name == ".pytest_cache" {
            continue;
        }
        let path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        if entry.file_type().unwrap().is_dir() {
            example_files(dir, &path, out);
        } else {
            out.push((path.clone(), std::fs::read_to_string(entry.path()).unwrap()));
        }
    }
}

fn todo_api() -> TempGitRepo {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/todo-api");
    let mut files = Vec::new();
    example_files(&root, "", &mut files);
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(p, t)| (p.as_str(), t.as_str()))
        .collect();
    TempGitRepo::with_files(&refs)
}

fn dandori(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn plan_json_points_at_a_valid_run_directory() {
    let repo = todo_api();
    let out = dandori(&["plan", "requests/RQ-001.md", "--json"], repo.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    for key in ["run_dir", "planning_json", "stage_json"] {
        let p = PathBuf::from(v[key].as_str().unwrap());
        assert!(p.exists(), "{key}: {}", p.display());
    }
    assert_eq!(v["validation"]["ok"], true);
    assert_eq!(v["validation"]["fail"], 0);
    assert_eq!(v["request_id"], "RQ-001");
    assert_eq!(v["planner"], "offline");
    assert!(
        v["run_dir"]
            .as_str()
            .unwrap()
            .contains("/.dandori/runs/RQ-001/")
    );
    // The plan validates clean with the core validator, read back from disk.
    let text = std::fs::read_to_string(v["planning_json"].as_str().unwrap()).unwrap();
    let report = dandori_plan::validation::validate_str(&text);
    assert!(!report.has_fail(), "{report:?}");
    // Runs never dirty the worktree.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[test]
fn human_summary() {
    let repo = todo_api();
    let out = dandori(&["plan", "requests/RQ-002.md", "--repo", "."], repo.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"\d{8}-\d{6}-[0-9a-f]{6}", "[RUN_ID]");
    settings.add_filter(r"/[^\s]*/\.dandori/runs", "[REPO]/.dandori/runs");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("plan_human_rq002", text));
}

/// `plan --text <text> --runs-root <a new directory> --json` in the todo API
/// example: the repository, the runs root and the printed JSON.
fn plan_text(text: &str) -> (TempGitRepo, tempfile::TempDir, serde_json::Value) {
    let repo = todo_api();
    let runs = tempfile::tempdir().unwrap();
    let out = dandori(
        &[
            "plan",
            "--text",
            text,
            "--runs-root",
            runs.path().to_str().unwrap(),
            "--json",
        ],
        repo.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v = serde_json::from_slice(&out.stdout).unwrap();
    (repo, runs, v)
}

#[test]
fn text_request_and_runs_root_flag() {
    let (repo, runs, v) = plan_text("Add a `GET /tasks/count` endpoint and a `--port` option");
    assert!(
        v["run_dir"]
            .as_str()
            .unwrap()
            .starts_with(runs.path().to_str().unwrap())
    );
    assert!(v["request_id"].as_str().unwrap().starts_with("text-"));
    assert!(!repo.path().join(".dandori").exists());
}

/// A pasted bullet (`- add …`) is the request, not an unknown flag.
#[test]
fn text_that_starts_with_a_dash_is_the_request() {
    let (_repo, _runs, v) = plan_text("- add a `GET /tasks/count` endpoint");
    let planning: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(v["planning_json"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert!(
        planning.to_string().contains("tasks/count"),
        "the request text did not reach the plan: {planning}"
    );
}

#[test]
fn works_on_a_directory_that_is_not_a_git_repository() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), "def main():\n    return 1\n").unwrap();
    std::fs::create_dir(dir.path().join("requests")).unwrap();
    std::fs::write(dir.path().join("requests/fix.md"), "# Make main return 2\n").unwrap();
    let out = dandori(&["plan", "requests/fix.md", "--json"], dir.path());
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let planning: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(v["planning_json"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    assert_eq!(planning["base_branch"], "main");
    assert_eq!(planning["request_id"], "fix");
}

#[test]
fn input_errors_exit_2_with_a_reason() {
    let repo = todo_api();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "plan",
                "requests/RQ-001.md",
                "--repo",
                "/nonexistent/dandori-repo",
            ],
            "REPO_NOT_FOUND",
        ),
        (vec!["plan", "requests/missing.md"], "REQUEST_UNREADABLE"),
        (vec!["plan"], "REQUEST_INVALID"),
        (
            vec!["plan", "requests/RQ-001.md", "--text", "x"],
            "REQUEST_INVALID",
        ),
    ];
    for (args, code) in cases {
        let out = dandori(&args, repo.path());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(code), "{args:?}: {}", stderr(&out));
    }
    repo.write("requests/empty.md", "\n   \n");
    let out = dandori(&["plan", "requests/empty.md"], repo.path());
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("REQUEST_EMPTY") && err.contains("empty.md"),
        "{err}"
    );
    let out = dandori(&["plan", "requests/missing.md"], repo.path());
    assert!(stderr(&out).contains("missing.md"), "{}", stderr(&out));
}

#[test]
fn config_overrides_apply() {
    let repo = todo_api();
    // -c runs.root moves the run directory; -c planning.max_subtasks caps the steps.
    let out = dandori(
        &[
            "plan",
            "requests/RQ-001.md",
            "-c",
            "runs.root=elsewhere",
            "-c",
            "planning.max_subtasks=2",
            "--json",
        ],
        repo.path(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        v["run_dir"]
            .as_str()
            .unwrap()
            .contains("/elsewhere/RQ-001/"),
        "{v}"
    );
    assert_eq!(v["steps"], 2);
    // A runs root inside the repository ignores itself.
    assert_eq!(
        std::fs::read_to_string(repo.path().join("elsewhere/.gitignore"))
            .unwrap()
            .lines()
            .last(),
        Some("*")
    );
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

/// Issue 25: a broken config stops `plan` (exit 2) naming the file, the line and
/// the key; it never plans with the defaults (which would drop the file's
/// `allowed_users` with its broken `level`).
#[test]
fn broken_config_stops_plan_naming_file_line_and_key() {
    let repo = todo_api();
    repo.write("broken.yaml", "planning: [not, a, map\n");
    let out = dandori(
        &["plan", "requests/RQ-003.md", "--config", "broken.yaml"],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("CONFIG_INVALID: broken.yaml:2: "),
        "{}",
        stderr(&out)
    );

    repo.write(
        "dandori.yaml",
        "planning:\n  permissions:\n    allowed_users: [bob]\n  logging:\n    level: VERBOSE\n",
    );
    let out = dandori(&["plan", "requests/RQ-003.md"], repo.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("dandori.yaml:5: planning.logging.level: invalid value `VERBOSE`"),
        "{err}"
    );
    assert!(!repo.path().join(".dandori/runs").exists());

    repo.write("dandori.yaml", "planning:\n  max_subtask: 1\n");
    let out = dandori(&["plan", "requests/RQ-003.md"], repo.path());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("dandori.yaml:2: planning.max_subtask: unknown key")
            && stderr(&out).contains("did you mean `planning.max_subtasks`?"),
        "{}",
        stderr(&out)
    );
}

/// Issue 25: a typo in `-c` stops `plan` as it stops `run`, with the nearest key.
#[test]
fn override_typo_stops_plan_with_a_suggestion() {
    let repo = todo_api();
    let out = dandori(
        &["plan", "requests/RQ-003.md", "-c", "planning.max_subtask=1"],
        repo.path(),
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "CONFIG_INVALID: -c planning.max_subtask: unknown configuration key; did you mean `planning.max_subtasks`?"
        ),
        "{}",
        stderr(&out)
    );
}

/// Issue 10: one-line requests plan (exit 0, a valid planning.json with three
/// criteria), never `AC_TOO_FEW`.
#[test]
fn one_line_requests_exit_0() {
    let repo = todo_api();
    for text in [
        "Update the README",
        "Fix the typo in the docstring of todo/api.py",
        "Add a CHANGELOG.md file",
        "Document the DELETE endpoint in the README",
    ] {
        let out = dandori(&["plan", "--text", text, "--json"], repo.path());
        assert!(out.status.success(), "{text}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["validation"]["ok"], serde_json::json!(true), "{text}");
        let planning: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(v["planning_json"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            planning["context"]["acceptance_criteria"]
                .as_array()
                .unwrap()
                .len(),
            3,
            "{text}"
        );
    }
}
