//! The file `dandori init gitlab-ci` writes, run as GitLab would run it:
//! gitlab-ci-local (npm, installed by scripts/test.sh into
//! target/test-tools/gitlab-ci-local) with its shell executor, the job's own
//! script unchanged: `npm ci` of the committed lock file from an npm registry
//! on 127.0.0.1 (serving a `dandori` package whose command is this build),
//! then `dandori ci` against the fake GitLab and the bare remote behind it.
//! Two pipelines, as two webhooks would trigger them: the label plans the
//! issue; the maintainer's `/dandori approve` runs it and opens the merge
//! request.
//!
//! What gitlab-ci-local does not do as GitLab does, and the test sets: it
//! runs jobs whose `image:` it ignores on this machine's shell
//! (`--force-shell-executor`; the job needs node and npm, which the image
//! has), it leaves `GITLAB_CI` unset, and derives `CI_PROJECT_PATH` /
//! `CI_PROJECT_URL` from the remote's URL (here the fake forge's), so the
//! test passes the values GitLab would.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use dandori_test_support::PackageIndex;
use dandori_test_support::fake_forge::Api;
use dandori_test_support::git::git;
use serde_json::{Value, json};

use super::ci_bot::{BIN, Fx, GL_BOT, GL_TOKEN, agent, gitlab_fixture, label_hook, text};

fn tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
        .join("gitlab-ci-local")
}

/// `node [--import the Set methods] gitlab-ci-local.js`: Node before 22
/// lacks the Set methods gitlab-ci-local calls.
fn gitlab_ci_local() -> Command {
    let dir = tools();
    let js = dir.join("node_modules/gitlab-ci-local/dist/index.js");
    assert!(
        js.is_file(),
        "{} is missing: run the tests with ./scripts/test.sh, which installs gitlab-ci-local from npm into {}",
        js.display(),
        dir.display()
    );
    let modern = Command::new("node")
        .args([
            "-e",
            "process.exit(typeof new Set().union === 'function' ? 0 : 1)",
        ])
        .status()
        .is_ok_and(|s| s.success());
    let mut cmd = Command::new("node");
    if !modern {
        cmd.arg("--import")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/node-set-methods.mjs"));
    }
    cmd.arg(js);
    let rsync = dir.join("rsync/usr/bin");
    let path = std::env::var("PATH").unwrap_or_default();
    cmd.env("PATH", format!("{}:{path}", rsync.display()));
    cmd
}

/// An npm registry on 127.0.0.1 with one package, `dandori` at this
/// workspace's version, whose command is this build (as the released
/// package's is the released binary).
fn registry(f: &Fx) -> PackageIndex {
    let pkg = f.root.join("dandori-package");
    std::fs::create_dir_all(pkg.join("bin")).unwrap();
    std::fs::write(
        pkg.join("package.json"),
        json!({"name": "dandori", "version": env!("CARGO_PKG_VERSION"),
            "bin": {"dandori": "bin/dandori"}})
        .to_string(),
    )
    .unwrap();
    // The sandbox is off as in the other CI tests (their agent is a shell script).
    std::fs::write(
        pkg.join("bin/dandori"),
        format!("#!/bin/sh\nexec '{BIN}' --sandbox off \"$@\"\n"),
    )
    .unwrap();
    let tarballs = f.root.join("tarballs");
    std::fs::create_dir_all(&tarballs).unwrap();
    let o = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(&tarballs)
        .current_dir(&pkg)
        .output()
        .unwrap();
    assert!(o.status.success(), "npm pack: {}", text(&o));
    let index = PackageIndex::start(&f.root.join("registry"));
    index.add_npm_tarballs(&tarballs);
    index
}

/// One pipeline: the job of `.gitlab/dandori.gitlab-ci.yml`, triggered with
/// `payload` (a project webhook's JSON) as GitLab's trigger would.
fn pipeline(f: &Fx, index: &PackageIndex, payload: &Value) -> Output {
    let url = f.forge.git_url(Api::GitLab, "grp/app");
    let project_url = url.trim_end_matches(".git");
    let vars = [
        "GITLAB_CI=true".to_string(),
        "CI_PIPELINE_SOURCE=trigger".to_string(),
        format!("TRIGGER_PAYLOAD={payload}"),
        "CI_PROJECT_PATH=grp/app".to_string(),
        format!("CI_PROJECT_URL={project_url}"),
        format!("CI_API_V4_URL={}", f.forge.gitlab_api_url()),
        format!("DANDORI_GITLAB_TOKEN={GL_TOKEN}"),
        format!("npm_config_registry={}", index.npm_url()),
    ];
    let mut cmd = gitlab_ci_local();
    cmd.args([
        "--force-shell-executor",
        "--file",
        ".gitlab/dandori.gitlab-ci.yml",
        "--ignore-predefined-vars",
        "CI_PIPELINE_SOURCE,CI_PROJECT_PATH,CI_PROJECT_URL,CI_API_V4_URL",
    ])
    .arg("--home")
    .arg(f.home.join("gitlab-ci-local"));
    for v in &vars {
        cmd.arg("--variable").arg(v);
    }
    cmd.current_dir(&f.repo)
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        // The job's `mktemp -d` and npm's cache stay in the test's directory.
        .env("TMPDIR", f.root.join("tmp"))
        .env("npm_config_cache", f.root.join("npm-cache"))
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn the_generated_gitlab_ci_file_runs_in_gitlab_ci_local_from_label_to_merge_request() {
    let f = gitlab_fixture();
    std::fs::create_dir_all(f.root.join("tmp")).unwrap();
    let index = registry(&f);
    // The maintainer's set-up: `dandori init gitlab-ci`, the lock file the
    // next steps name, both committed and pushed.
    let agent_cmd = format!("sh {} {{step_id}}", agent(&f).display());
    let o = Command::new(BIN)
        .args(["init", "gitlab-ci", "--agent-cmd", &agent_cmd, "--repo"])
        .arg(&f.repo)
        .env("HOME", &f.home)
        .env("DANDORI_CONFIG_HOME", f.home.join("cfg"))
        .output()
        .unwrap();
    assert!(o.status.success(), "init: {}", text(&o));
    let o = Command::new("npm")
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--prefix",
        ])
        .arg(f.repo.join(".gitlab/dandori"))
        .env("npm_config_registry", index.npm_url())
        .env("npm_config_cache", f.root.join("npm-cache"))
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "npm install --package-lock-only: {}",
        text(&o)
    );
    // gitlab-ci-local's state, as its README says: ignored.
    std::fs::write(f.repo.join(".gitignore"), ".gitlab-ci-local/\n").unwrap();
    git(&f.repo, &["add", "-A"]);
    git(&f.repo, &["commit", "-q", "-m", "dandori on GitLab CI"]);
    git(&f.repo, &["push", "-q", f.remote.to_str().unwrap(), "main"]);

    // Pipeline 1, the label: the plan and status notes by the project bot.
    let o = pipeline(&f, &index, &label_hook());
    assert!(o.status.success(), "pipeline 1: {}", text(&o));
    let out = text(&o);
    assert!(out.contains("npm ci --no-audit --no-fund"), "{out}");
    let item = f.forge.item(Api::GitLab, "grp/app", 3);
    let notes: Vec<_> = item
        .comments
        .iter()
        .filter(|c| c.author == GL_BOT)
        .collect();
    assert_eq!(notes.len(), 2, "{:#?}", item.comments);
    assert!(
        notes.iter().any(|c| c.body.contains("`/dandori approve`")),
        "{notes:#?}"
    );

    // Pipeline 2, the maintainer's note: the run, the push, the merge request.
    f.forge
        .add_comment(Api::GitLab, "grp/app", 3, "alice", "/dandori approve");
    let approve = json!({"object_kind": "note", "user": {"username": "alice"},
        "project": {"path_with_namespace": "grp/app"},
        "object_attributes": {"note": "/dandori approve", "noteable_type": "Issue"},
        "issue": {"iid": 3}});
    let o = pipeline(&f, &index, &approve);
    assert!(o.status.success(), "pipeline 2: {}", text(&o));
    let mrs = f.forge.change_requests(Api::GitLab, "grp/app");
    assert_eq!(mrs.len(), 1, "{}", text(&o));
    let mr = &mrs[0].1;
    let head = mr.pr.as_ref().unwrap();
    assert!(mr.body.contains("Closes #3"), "{}", mr.body);
    assert!(!head.draft, "the goal is achieved: ready");
    assert_eq!(
        git(&f.remote, &["rev-parse", &head.head]).trim(),
        head.head_sha
    );
    assert!(
        f.forge
            .git_requests()
            .iter()
            .any(|r| r.service == "git-receive-pack" && r.user.as_deref() == Some(GL_BOT)),
        "the push went to the remote as the project bot"
    );
    assert!(!text(&o).contains(GL_TOKEN), "the token is in the job log");
}
