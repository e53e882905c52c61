//! Run directory placement and naming.

use dandori_planner::{PlanOptions, RequestSource};

use super::support::example_repo;

#[test]
fn runs_root_flag_outside_repo_gives_absolute_outputs() {
    let repo = example_repo("todo-api");
    let runs = tempfile::tempdir().unwrap();
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-003.md")),
    );
    opts.runs_root = Some(runs.path().to_path_buf());
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.run_dir.starts_with(runs.path()));
    assert!(o.planning.outputs.planning_json.starts_with('/'));
    assert!(!repo.path().join(".dandori").exists());
}

#[test]
fn text_request_is_saved_in_the_run_dir() {
    let repo = example_repo("todo-api");
    let opts = PlanOptions::new(
        repo.path(),
        RequestSource::Text("Add a `GET /tasks/count` endpoint and a `--port` option".into()),
    );
    let o = dandori_planner::plan(&opts).unwrap();
    assert!(o.request_id.starts_with("text-"), "{}", o.request_id);
    let rp = &o.planning.steps[0].inputs.request_path;
    assert!(rp.ends_with("/request.md"), "{rp}");
    assert!(repo.path().join(rp).exists());
}

#[test]
fn non_git_directory_plans_with_main() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), "def main():\n    return 1\n").unwrap();
    let opts = PlanOptions::new(
        dir.path(),
        RequestSource::Text("Make `main` return 2".into()),
    );
    let o = dandori_planner::plan(&opts).unwrap();
    assert_eq!(o.planning.base_branch, "main");
    assert!(o.validation.ok);
}

#[test]
fn progress_is_reported_through_the_callback() {
    let repo = example_repo("todo-api");
    let seen = std::sync::Mutex::new(Vec::new());
    let cb = |p: &dandori_planner::Progress| seen.lock().unwrap().push(format!("{p:?}"));
    let mut opts = PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/RQ-001.md")),
    );
    opts.progress = Some(&cb);
    dandori_planner::plan(&opts).unwrap();
    let seen = seen.into_inner().unwrap();
    assert!(seen.iter().any(|s| s.starts_with("Scanned")), "{seen:?}");
    assert!(seen.iter().any(|s| s.starts_with("Writing")), "{seen:?}");
}

#[test]
fn missing_repo_and_unreadable_request() {
    let e = dandori_planner::plan(&PlanOptions::new(
        "/nonexistent/repo",
        RequestSource::Text("x".into()),
    ))
    .unwrap_err();
    assert_eq!(e.code(), "REPO_NOT_FOUND");
    let repo = example_repo("todo-api");
    let e = dandori_planner::plan(&PlanOptions::new(
        repo.path(),
        RequestSource::File(repo.path().join("requests/nope.md")),
    ))
    .unwrap_err();
    assert_eq!(e.code(), "REQUEST_UNREADABLE");
    assert!(e.to_string().contains("nope.md"), "{e}");
}

#[test]
fn secrets_in_the_request_never_reach_the_run_directory() {
    let repo = example_repo("todo-api");
    let key = "sk-ant-abcdefghijklmnopqrstuvwxyz0123";
    let text = format!(
        "# Connect the store\n\nUse password=hunter22xyz and the key {key} when connecting.\n\n- Add a `connect` method to the store\n- Add a `--db` option to the server\n"
    );
    let o =
        dandori_planner::plan(&PlanOptions::new(repo.path(), RequestSource::Text(text))).unwrap();
    for name in ["planning.json", "stage.json", "trace.jsonl", "request.md"] {
        let content = std::fs::read_to_string(o.run_dir.join(name)).unwrap();
        assert!(!content.contains(key), "{name} leaks the key");
        assert!(
            !content.contains("hunter22xyz"),
            "{name} leaks the password"
        );
    }
    assert!(!serde_json::to_string(&o.planning).unwrap().contains(key));
}
