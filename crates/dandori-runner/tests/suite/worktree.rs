//! The pool worktree's fast paths (staging and moving only what a step touched)
//! and their fallbacks to git's whole-tree operations, on real repositories.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use dandori_runner::git::Git;
use dandori_runner::worktree::{Moved, PoolWorktree, Staged};

use super::support::{Repo, git_in};

/// `main` with a tracked tree, an ignore file, and a second commit `next` that
/// changes, adds and deletes files: `(repo, A, B)`.
fn two_commits() -> (Repo, String, String) {
    let r = Repo::new();
    for d in 0..20 {
        let dir = r.path.join(format!("d{d}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..5 {
            std::fs::write(dir.join(format!("f{f}.txt")), format!("{d}/{f}\n")).unwrap();
        }
    }
    std::fs::write(r.path.join(".gitignore"), "*.log\nbuild/\n").unwrap();
    std::fs::write(r.path.join("a.txt"), "a\n").unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "A"]);
    let a = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    std::fs::write(r.path.join("d1/f1.txt"), "changed in B\n").unwrap();
    std::fs::write(r.path.join("b.txt"), "b\n").unwrap();
    std::fs::remove_file(r.path.join("d2/f2.txt")).unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "B"]);
    let b = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    r.git(&["checkout", "-q", "--detach", &a]);
    (r, a, b)
}

/// The worktree is exactly `rev`: HEAD, index and files, nothing untracked or
/// ignored, no empty directory the step made.
fn assert_exactly_at(wt: &Path, rev: &str) {
    assert_eq!(git_in(wt, &["rev-parse", "HEAD"]).trim(), rev);
    assert_eq!(
        git_in(
            wt,
            &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignored"
            ]
        ),
        "",
        "the worktree is not clean"
    );
    assert_eq!(git_in(wt, &["diff", "--cached", "--name-only", rev]), "");
    assert!(!wt.join("newdir").exists(), "an empty directory was left");
}

/// The next step's change is staged from the record again.
fn next_step_is_staged_fast(pool: &mut PoolWorktree, git: &Git, wt: &Path) {
    std::fs::write(wt.join("b.txt"), "b again\n").unwrap();
    let (_, files, _) = pool.stage(git).unwrap();
    assert_eq!(pool.last_stage, Some(Staged::Fast));
    assert_eq!(files, ["b.txt"]);
}

fn inode(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().ino()
}

#[test]
fn a_step_is_staged_and_the_worktree_moved_touching_only_what_changed() {
    let (r, a, b) = two_commits();
    let wt = r.path.join(".dandori/wt-1");
    let main = Git::new(&r.path).with_object_writer();
    let mut pool = PoolWorktree::new(&wt);
    assert_eq!(pool.prepare(&main, &a).unwrap(), Moved::Created);
    let untouched = inode(&wt.join("d7/f3.txt"));

    // The step: a change, a new file in a new directory, a deletion, ignored
    // files and an empty directory.
    std::fs::write(wt.join("a.txt"), "a changed\n").unwrap();
    std::fs::create_dir_all(wt.join("src/deep")).unwrap();
    std::fs::write(wt.join("src/deep/new.txt"), "new\n").unwrap();
    std::fs::remove_file(wt.join("d3/f0.txt")).unwrap();
    std::fs::write(wt.join("run.log"), "log\n").unwrap();
    std::fs::create_dir_all(wt.join("build/obj")).unwrap();
    std::fs::write(wt.join("build/obj/x.o"), "o\n").unwrap();
    std::fs::create_dir_all(wt.join("newdir/empty")).unwrap();

    let git = Git::new(&wt)
        .pool_worktree()
        .with_fixed_date("2026-01-01T00:00:00Z");
    let (lines, mut files, patch) = pool.stage(&git).unwrap();
    assert_eq!(pool.last_stage, Some(Staged::Fast));
    files.sort();
    assert_eq!(files, ["a.txt", "d3/f0.txt", "src/deep/new.txt"]);
    assert_eq!(lines, 4);
    assert!(patch.contains("+a changed"), "{patch}");
    let c = git.commit_index(&a, "step").unwrap();
    pool.committed(&c, false);
    let tree = git_in(&r.path, &["ls-tree", "-r", "--name-only", &c]);
    assert!(tree.lines().any(|l| l == "src/deep/new.txt"), "{tree}");
    assert!(
        !tree
            .lines()
            .any(|l| l == "d3/f0.txt" || l.ends_with(".log") || l.starts_with("build/")),
        "{tree}"
    );
    assert_eq!(
        git_in(&r.path, &["show", &format!("{c}:src/deep/new.txt")]),
        "new\n"
    );

    // After the commit (a unit command): a tracked file changed again, a
    // deleted one, an untracked file.
    std::fs::write(wt.join("src/deep/new.txt"), "changed after staging\n").unwrap();
    std::fs::remove_file(wt.join("d4/f4.txt")).unwrap();
    std::fs::write(wt.join("d5/junk.txt"), "junk\n").unwrap();

    assert_eq!(pool.prepare(&main, &b).unwrap(), Moved::Fast);
    assert_exactly_at(&wt, &b);
    assert_eq!(
        inode(&wt.join("d7/f3.txt")),
        untouched,
        "a file the step did not touch was rewritten"
    );
    assert_eq!(
        std::fs::read_to_string(wt.join("d1/f1.txt")).unwrap(),
        "changed in B\n"
    );

    // The next step starts from the clean record.
    next_step_is_staged_fast(&mut pool, &git, &wt);
}

#[test]
fn a_change_the_record_missed_is_overwritten_where_the_next_base_differs() {
    let (r, a, b) = two_commits();
    let wt = r.path.join(".dandori/wt-1");
    let main = Git::new(&r.path).with_object_writer();
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    // Written through a hard link from outside the worktree: no event for the
    // worktree's directory, so the record does not know; `d1/f1.txt` differs
    // between A and B, so the move writes B's version over it.
    let outside = r.path.join(".dandori/outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::hard_link(wt.join("d1/f1.txt"), outside.join("link")).unwrap();
    std::fs::write(outside.join("link"), "written behind the record's back\n").unwrap();
    let git = Git::new(&wt)
        .pool_worktree()
        .with_fixed_date("2026-01-01T00:00:00Z");
    std::fs::write(wt.join("a.txt"), "a changed\n").unwrap();
    let (_, files, _) = pool.stage(&git).unwrap();
    assert_eq!(files, ["a.txt"], "only the recorded change is staged");
    let c = git.commit_index(&a, "step").unwrap();
    pool.committed(&c, false);

    assert_eq!(pool.prepare(&main, &b).unwrap(), Moved::Fast);
    assert_exactly_at(&wt, &b);
    assert_eq!(
        std::fs::read_to_string(wt.join("d1/f1.txt")).unwrap(),
        "changed in B\n"
    );
    next_step_is_staged_fast(&mut pool, &git, &wt);
}

#[test]
fn more_changes_than_the_kernel_queues_fall_back_to_the_whole_tree() {
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(16384);
    let (r, a, b) = two_commits();
    let wt = r.path.join(".dandori/wt-1");
    let main = Git::new(&r.path).with_object_writer();
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    // Alternating writes are never merged into one event: the queue overflows.
    for i in 0..=max {
        let f = if i % 2 == 0 { "a.txt" } else { "d0/f0.txt" };
        std::fs::write(wt.join(f), format!("{i}\n")).unwrap();
    }
    std::fs::write(wt.join("build.log"), "ignored\n").unwrap();
    let git = Git::new(&wt)
        .pool_worktree()
        .with_fixed_date("2026-01-01T00:00:00Z");
    let (_, mut files, _) = pool.stage(&git).unwrap();
    assert_eq!(pool.last_stage, Some(Staged::Full));
    files.sort();
    assert_eq!(files, ["a.txt", "d0/f0.txt"]);
    let c = git.commit_index(&a, "step").unwrap();
    pool.committed(&c, false);
    assert_eq!(pool.prepare(&main, &b).unwrap(), Moved::Full);
    assert_exactly_at(&wt, &b);
    next_step_is_staged_fast(&mut pool, &git, &wt);
}

#[test]
fn without_the_run_s_object_reader_the_move_goes_over_the_whole_tree() {
    let (r, a, b) = two_commits();
    let wt = r.path.join(".dandori/wt-1");
    // A handle without the run's long-lived reader cannot compare the trees.
    let main = Git::new(&r.path);
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    let git = Git::new(&wt)
        .pool_worktree()
        .with_fixed_date("2026-01-01T00:00:00Z");
    std::fs::write(wt.join("a.txt"), "a changed\n").unwrap();
    std::fs::write(wt.join("untracked.txt"), "u\n").unwrap();
    pool.stage(&git).unwrap();
    let c = git.commit_index(&a, "step").unwrap();
    pool.committed(&c, false);
    std::fs::write(wt.join("later.txt"), "after the commit\n").unwrap();

    assert_eq!(pool.prepare(&main, &b).unwrap(), Moved::Full);
    assert_exactly_at(&wt, &b);
    next_step_is_staged_fast(&mut pool, &git, &wt);
}

#[test]
fn a_file_that_becomes_a_directory_and_back_is_moved_fast() {
    let (r, a, _) = two_commits();
    // C: `a.txt` is a directory.
    r.git(&["rm", "-q", "a.txt"]);
    std::fs::create_dir_all(r.path.join("a.txt")).unwrap();
    std::fs::write(r.path.join("a.txt/inner.txt"), "inner\n").unwrap();
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "C"]);
    let c = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    let wt = r.path.join(".dandori/wt-1");
    let main = Git::new(&r.path).with_object_writer();
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    assert_eq!(pool.prepare(&main, &c).unwrap(), Moved::Fast);
    assert_exactly_at(&wt, &c);
    assert_eq!(
        std::fs::read_to_string(wt.join("a.txt/inner.txt")).unwrap(),
        "inner\n"
    );
    assert_eq!(pool.prepare(&main, &a).unwrap(), Moved::Fast);
    assert_exactly_at(&wt, &a);
    assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "a\n");
}

#[test]
fn a_worktree_removed_in_the_background_is_unregistered_at_once() {
    let (r, a, _) = two_commits();
    let wt = r.path.join(".dandori/pool-1");
    let main = Git::new(&r.path).with_object_writer();
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    main.remove_worktree_in_background(&wt).unwrap();
    assert!(!wt.exists(), "the worktree's directory is still in place");
    let list = git_in(&r.path, &["worktree", "list", "--porcelain"]);
    assert_eq!(list.matches("worktree ").count(), 1, "{list}");
    dandori_runner::git::wait_for_removals();
    assert!(
        !r.path.join(".dandori/.removed-pool-1").exists(),
        "the files were not deleted"
    );
}

#[test]
fn the_diff_from_the_run_s_diff_tree_is_the_one_git_diff_cached_gives() {
    let (r, a, _) = two_commits();
    let main = Git::new(&r.path).with_object_writer();
    let mut out = Vec::new();
    for (name, shared) in [("wt-reader", true), ("wt-plain", false)] {
        let wt = r.path.join(".dandori").join(name);
        let mut pool = PoolWorktree::new(&wt);
        pool.prepare(&main, &a).unwrap();
        std::fs::write(wt.join("a.txt"), "a changed\nand more\n").unwrap();
        std::fs::create_dir_all(wt.join("src")).unwrap();
        std::fs::write(wt.join("src/bin.dat"), [0u8, 1, 2, 255, 0, 7]).unwrap();
        std::fs::remove_file(wt.join("d3/f0.txt")).unwrap();
        let mut git = Git::new(&wt)
            .pool_worktree()
            .with_fixed_date("2026-01-01T00:00:00Z");
        if shared {
            git = git.sharing_objects(&main);
        }
        let staged = pool.stage(&git).unwrap();
        assert_eq!(pool.staged_tree().is_some(), shared);
        let c = match pool.staged_tree() {
            Some(t) => git.commit_written_tree(t, &a, "step").unwrap(),
            None => git.commit_index(&a, "step").unwrap(),
        };
        out.push((
            staged,
            git_in(&r.path, &["rev-parse", &format!("{c}^{{tree}}")]),
        ));
    }
    assert_eq!(out[0], out[1]);
    let ((lines, files, patch), _) = &out[0];
    assert_eq!(*lines, 5, "{patch}");
    assert_eq!(files, &["a.txt", "d3/f0.txt", "src/bin.dat"]);
    assert!(patch.contains("GIT binary patch"), "{patch}");
}

#[test]
fn a_changed_gitattributes_is_diffed_by_git_in_the_worktree() {
    let (r, a, _) = two_commits();
    let main = Git::new(&r.path).with_object_writer();
    let wt = r.path.join(".dandori/wt-1");
    let mut pool = PoolWorktree::new(&wt);
    pool.prepare(&main, &a).unwrap();
    std::fs::write(wt.join(".gitattributes"), "*.txt binary\n").unwrap();
    std::fs::write(wt.join("a.txt"), "a changed\n").unwrap();
    let git = Git::new(&wt)
        .pool_worktree()
        .with_fixed_date("2026-01-01T00:00:00Z")
        .sharing_objects(&main);
    let (lines, files, patch) = pool.stage(&git).unwrap();
    assert_eq!(pool.last_stage, Some(Staged::Fast));
    assert!(pool.staged_tree().is_none());
    assert_eq!(files, [".gitattributes", "a.txt"]);
    // `a.txt` is binary by the new attributes: one line, a binary patch.
    assert_eq!(lines, 2, "{patch}");
    assert!(patch.contains("GIT binary patch"), "{patch}");
}
