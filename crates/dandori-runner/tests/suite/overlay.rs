//! Copy-on-write step workspaces (`runner.step_workspace: overlay`): the change
//! read from the upper layer gives the tree `git add -A` gives, git works inside
//! the workspace as in a worktree, and a whole run uses them.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use dandori_runner::CompletionStatus;
use dandori_runner::git::Git;
use dandori_runner::workspace::StepWorkspace;
use dandori_runner::workspace::overlay::{MountPoints, OverlayWorkspace, SharedBase};
use serde_json::json;

use super::support::{Repo, S, git_in, options, planning, run, trace_events};

/// `main` at A (a tracked tree, an ignore file) and a commit B that changes,
/// adds and deletes files: `(repo, A, B)`.
fn two_commits() -> (Repo, String, String) {
    let r = Repo::new();
    for d in 0..6 {
        let dir = r.path.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..4 {
            std::fs::write(dir.join(format!("f{f}.txt")), format!("{d}/{f}\n")).unwrap();
        }
    }
    std::fs::write(r.path.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    std::fs::write(r.path.join("run.sh"), "#!/bin/sh\n").unwrap();
    // A directory that becomes a file, a file that becomes a directory.
    std::fs::create_dir_all(r.path.join("e")).unwrap();
    std::fs::write(r.path.join("e/x.txt"), "x\n").unwrap();
    std::fs::write(r.path.join("g"), "g\n").unwrap();
    r.git(&["add", "-A"]);
    r.git(&["update-index", "--chmod=+x", "run.sh"]);
    r.git(&["commit", "-q", "-m", "A"]);
    let a = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    r.git(&["checkout", "-q", "-b", "next"]);
    std::fs::write(r.path.join("d1/f1.txt"), "changed in B\n").unwrap();
    std::fs::write(r.path.join("b.txt"), "b\n").unwrap();
    std::fs::remove_file(r.path.join("d2/f2.txt")).unwrap();
    std::fs::remove_dir_all(r.path.join("e")).unwrap();
    std::fs::write(r.path.join("e"), "e is a file\n").unwrap();
    std::fs::remove_file(r.path.join("g")).unwrap();
    std::fs::create_dir_all(r.path.join("g")).unwrap();
    std::fs::write(r.path.join("g/h.txt"), "h\n").unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "B"]);
    let b = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    r.git(&["checkout", "-q", "main"]);
    (r, a, b)
}

/// What an agent does: a change, a new file in a new directory, a deletion, a
/// directory removed and made again, a mode change, a link, ignored files.
const STEP: &str = "set -e
echo changed > d0/f0.txt
mkdir -p newdir/sub && echo new > newdir/sub/n.txt
rm d4/f1.txt
rm -r d5 && mkdir d5 && echo again > d5/only.txt
chmod +x d3/f3.txt
ln -s d0/f0.txt link
echo noise > x.log && mkdir -p build && echo o > build/o.bin
git status --porcelain --untracked-files=all > /dev/null";

fn sh(dir: &Path, script: &str) -> String {
    let out = Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A copy-on-write workspace named `name` over the user's checkout of `r`
/// (at A), moved to `b`, with the run's git handle: `None` where overlayfs
/// cannot be mounted (the run test below checks the reported fallback).
fn workspace_at(r: &Repo, b: &str, name: &str) -> Option<(Git, OverlayWorkspace)> {
    let dir = r.path.parent().unwrap();
    dandori_exec::overlay::available(&dir.join("probe")).ok()?;
    let main = Git::new(&r.path).with_object_writer();
    let base = Arc::new(SharedBase::user_checkout(&main, Vec::new(), dir).unwrap());
    let points = MountPoints::new(dir.to_path_buf());
    let mut ws = OverlayWorkspace::new(base, dir.join(name), points.take().unwrap());
    ws.prepare(&main, b).unwrap();
    Some((main, ws))
}

#[test]
fn the_upper_layer_stages_what_git_add_all_stages_and_git_works_inside() {
    let (r, a, b) = two_commits();
    let Some((main, mut ws)) = workspace_at(&r, &b, "ovl-1") else {
        return;
    };
    let root = ws.root().to_path_buf();
    let view = ws.path().to_path_buf();

    // The workspace is B, for the runner's reads and for git inside it.
    assert_eq!(std::fs::read_to_string(view.join("b.txt")).unwrap(), "b\n");
    assert!(!view.join("d2/f2.txt").exists());
    let git = Git::new(&view)
        .with_fixed_date("2026-01-01T00:00:00Z")
        .sharing_objects(&main);
    assert_eq!(git.run(&["rev-parse", "HEAD"]).unwrap().trim(), b);
    assert_eq!(
        git.run(&["status", "--porcelain", "--untracked-files=all"])
            .unwrap(),
        ""
    );
    // Moved from A to B in the process (no git process read the whole index):
    // the step's index is B's tree, as git lists it, written as a split index
    // over the shared checkout's (only what changed, and a link to it).
    assert!(!ws.moved_by_git);
    let dotgit = std::fs::read_to_string(view.join(".git")).unwrap();
    let admin = Path::new(dotgit.trim().strip_prefix("gitdir: ").unwrap());
    let index = std::fs::read(admin.join("index")).unwrap();
    assert!(index.windows(4).any(|w| w == b"link"), "a split index");
    assert!(index.len() < std::fs::read(r.path.join(".git/index")).unwrap().len());
    assert!(std::fs::read_dir(admin).unwrap().any(|e| {
        e.unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("sharedindex.")
    }));
    assert_eq!(
        std::fs::read_to_string(view.join("e")).unwrap(),
        "e is a file\n"
    );
    assert_eq!(
        std::fs::read_to_string(view.join("g/h.txt")).unwrap(),
        "h\n"
    );
    assert_eq!(
        git.run(&["ls-files", "-s"]).unwrap(),
        main.run(&[
            "ls-tree",
            "-r",
            "--format=%(objectmode) %(objectname) 0\t%(path)",
            &b
        ])
        .unwrap()
    );

    // A process started in the workspace sees it (the namespace is entered).
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(STEP).current_dir(&view);
    dandori_exec::overlay::enter(&mut cmd, &view);
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An agent's usual git commands, as git itself answers them.
    let status = git
        .run(&["status", "--porcelain", "--untracked-files=all"])
        .unwrap();
    for line in [
        " M d0/f0.txt",
        " D d4/f1.txt",
        "?? newdir/sub/n.txt",
        "?? link",
    ] {
        assert!(status.lines().any(|l| l == line), "{line} not in\n{status}");
    }
    assert!(!status.contains("x.log"), "{status}");
    let diff = git.run(&["diff", "--stat"]).unwrap();
    assert!(diff.contains("d0/f0.txt"), "{diff}");

    // Staged from the upper layer: the tree `git add -A` makes in a worktree.
    let (_, files, patch) = ws.stage(&git).unwrap();
    assert!(!ws.staged_by_git, "the upper layer was not read");
    let tree = ws.staged_tree().unwrap().to_string();
    let check = r.path.parent().unwrap().join("check");
    r.git(&[
        "worktree",
        "add",
        "-q",
        "--detach",
        check.to_str().unwrap(),
        &b,
    ]);
    sh(&check, STEP);
    git_in(&check, &["add", "-A"]);
    assert_eq!(tree, git_in(&check, &["write-tree"]).trim());
    let mut expected = git_in(&check, &["diff", "--cached", "--name-only", "HEAD"])
        .lines()
        .map(str::to_string)
        .collect::<Vec<_>>();
    expected.sort();
    let mut files = files;
    files.sort();
    assert_eq!(files, expected);
    assert!(patch.contains("+changed"), "{patch}");

    // The upper layer holds the step's files only; the checkout is untouched.
    let upper_files = walk(&root.join("upper"));
    assert!(upper_files < 30, "{upper_files} entries in the upper layer");
    assert_eq!(r.git(&["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(r.path.join("d0/f0.txt")).unwrap(),
        "0/0\n"
    );

    // Committing moves nothing in the checkout; dropping unmounts and deletes.
    let c = git.commit_written_tree(&tree, &b, "step").unwrap();
    ws.committed(&c, false);
    drop(ws);
    dandori_runner::git::wait_for_removals();
    assert!(!root.exists());
    assert_eq!(
        git_in(&r.path, &["rev-parse", &format!("{c}^{{tree}}")]).trim(),
        tree
    );
    let _ = a;
}

/// An import root on `PYTHONPATH` is named as the step's commands see the
/// workspace (the mount point), not through the runner's
/// `/proc/<holder>/root` view: a sandbox mounts a `/proc` of its own, where
/// that path does not exist, and Python would import the environment's copy
/// of the package (the base commit's code) instead of the step's.
#[test]
fn import_roots_are_named_as_the_workspace_s_commands_see_it() {
    let (r, _a, b) = two_commits();
    let Some((_main, ws)) = workspace_at(&r, &b, "ovl-py") else {
        return;
    };
    let view = ws.path().to_path_buf();
    let roots = dandori_runner::pythonpath::ImportRoots {
        roots: vec!["d1".into()],
        source: r.path.clone(),
        generated: Vec::new(),
    };
    let mut env = std::collections::BTreeMap::new();
    dandori_runner::pythonpath::apply(&mut env, &view, &roots);
    let python_path = env["PYTHONPATH"].clone();
    assert_eq!(Path::new(&python_path), ws.mount_point().join("d1"));
    assert!(!python_path.starts_with("/proc"), "{python_path}");
    // In the workspace's namespace, that path holds the step's files (B's).
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(r#"cat "$PYTHONPATH/f1.txt""#)
        .env("PYTHONPATH", &python_path)
        .current_dir(&view);
    dandori_exec::overlay::enter(&mut cmd, &view);
    let out = cmd.output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "changed in B\n");
}

fn walk(dir: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        n += 1;
        if e.file_type().unwrap().is_dir() {
            n += walk(&e.path());
        }
    }
    n
}

#[test]
fn a_run_in_overlay_workspaces_commits_each_steps_change() {
    let repo = Repo::new();
    let mountable =
        dandori_exec::overlay::available(&repo.path.parent().unwrap().join("probe")).is_ok();
    let ctl = repo.ctl();
    let agent = repo.agent(&format!(
        r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt"
ls src > "src/$1/seen.txt"
git status --porcelain --untracked-files=all > "{ctl}/$1.status"
git diff HEAD --stat >> "{ctl}/$1.status"
pwd > "{ctl}/$1.pwd""#,
        ctl = ctl.display()
    ));
    let run_dir = repo.write_plan(&planning(
        vec![
            S::new("S01").deps(&[]),
            S::new("S02").deps(&[]),
            S::new("S03")
                .deps(&["S01", "S02"])
                .unit("test -f src/S01/out.txt && test -f src/S02/out.txt"),
        ],
        json!({}),
    ));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.runner.max_parallel_workers = 2;
    opts.config.runner.step_workspace = dandori_config::StepWorkspaceKind::Overlay;
    let out = run(&opts).unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    let ws = trace_events(&run_dir, "STEP_WORKSPACE");
    if !mountable {
        // The fallback, reported: the pool ran the steps.
        assert_eq!(ws[0]["data"]["mechanism"], "pool", "{ws:?}");
        assert!(ws[0]["data"]["fallback_reason"].is_string(), "{ws:?}");
        return;
    }
    assert_eq!(ws[0]["data"]["mechanism"], "overlay", "{ws:?}");
    // S03 saw both predecessors' work; the run directory was hidden from it.
    let seen = repo.git(&["show", "dandori/RQ-1/run-1:src/S03/seen.txt"]);
    assert_eq!(seen, "S01\nS02\nS03\n");
    let status = std::fs::read_to_string(ctl.join("S03.status")).unwrap();
    assert_eq!(
        status.lines().next(),
        Some("?? src/S03/out.txt"),
        "{status}"
    );
    assert!(!status.contains(".dandori"), "{status}");
    // The agent's working directory is an ordinary path (not /proc/…).
    let pwd = std::fs::read_to_string(ctl.join("S03.pwd")).unwrap();
    assert!(pwd.starts_with(run_dir.to_str().unwrap()), "{pwd}");
    // ... and a worker's: the same directory from step to step (as a pool
    // worktree's), which the trace names. Two workers, three steps.
    let pwds: std::collections::BTreeSet<String> = ["S01", "S02", "S03"]
        .iter()
        .map(|s| {
            std::fs::read_to_string(ctl.join(format!("{s}.pwd")))
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    assert!(pwds.len() <= 2, "{pwds:?}");
    let started: std::collections::BTreeSet<String> = trace_events(&run_dir, "STEP_START")
        .iter()
        .map(|e| e["data"]["worktree"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(started, pwds);
    // One commit per step, holding exactly its file(s).
    let files = repo.git(&["show", "--name-only", "--format=", "dandori/RQ-1/run-1"]);
    assert_eq!(files, "src/S03/out.txt\nsrc/S03/seen.txt\n");
    // The user's checkout was never written, and nothing of the run is left mounted.
    assert_eq!(
        repo.git(&["status", "--porcelain", "--", ".", ":(exclude).dandori"]),
        ""
    );
    dandori_runner::git::wait_for_removals();
    let left: Vec<_> = std::fs::read_dir(run_dir.join("worktrees"))
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        repo.git(&["worktree", "list", "--porcelain"])
            .matches("worktree ")
            .count(),
        1
    );
}
