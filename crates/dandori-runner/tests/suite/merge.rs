//! Merges made in the process (`git/merge.rs`) against `git merge-tree` on
//! random histories shaped like runs: steps built on the merge of one or two
//! earlier steps, each integrated into a moving tip. Whenever the process
//! answers, its tree must be the one git writes; when git finds a conflict, the
//! process must not answer.

use std::path::Path;
use std::process::Command;

use dandori_runner::git::Git;

fn git(dir: &Path, args: &[&str]) -> String {
    dandori_test_support::git::git(dir, args).trim().to_string()
}

/// A small deterministic generator (the test needs no crate for it).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n.max(1)
    }
}

/// What `git merge-tree --write-tree` says of `a` and `b`: the tree, or `None`
/// on a conflict.
fn git_merge_tree(repo: &Path, a: &str, b: &str) -> Option<String> {
    let out = Command::new("git")
        .args(["merge-tree", "--write-tree", "--no-messages", a, b])
        .current_dir(repo)
        .output()
        .unwrap();
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap()
            .to_string()
    })
}

fn tree_of(repo: &Path, commit: &str) -> String {
    git(repo, &["rev-parse", &format!("{commit}^{{tree}}")])
}

/// One step's change in the scratch worktree: mostly a file of its own, some
/// times an edit of a shared file, a deletion, a moved directory, a mode change.
fn change(wt: &Path, rng: &mut Lcg, step: usize) {
    let own = wt.join(format!("src/m{}/step{step}.txt", step % 3));
    std::fs::create_dir_all(own.parent().unwrap()).unwrap();
    std::fs::write(&own, format!("step {step}\n")).unwrap();
    match rng.below(8) {
        0 => {
            let f = wt.join(format!("shared/s{}.txt", rng.below(3)));
            std::fs::write(&f, format!("edited by {step}\n")).unwrap();
        }
        1 => {
            let f = wt.join(format!("lib/l{}.txt", rng.below(6)));
            let _ = std::fs::remove_file(&f);
        }
        2 => {
            // A whole directory moved (what git's directory rename detection sees).
            let from = wt.join(format!("pkg/p{}", rng.below(2)));
            if from.exists() {
                let to = wt.join(format!("moved/p{step}"));
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::rename(&from, &to).unwrap();
            }
        }
        3 => {
            let f = wt.join(format!("pkg/p{}/new{step}.txt", rng.below(2)));
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(&f, "new\n").unwrap();
        }
        4 => {
            use std::os::unix::fs::PermissionsExt;
            let f = wt.join(format!("lib/l{}.txt", rng.below(6)));
            if f.exists() {
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        _ => {}
    }
}

#[test]
fn in_process_merges_match_git_merge_tree() {
    let (mut answered, mut asked) = (0, 0);
    for seed in [7, 19, 42, 1001] {
        let (a, n) = history(seed);
        answered += a;
        asked += n;
    }
    // Most merges of a run are of different paths: the process answers them.
    assert!(asked > 80, "only {asked} merges");
    assert!(
        answered * 2 > asked,
        "answered {answered} of {asked} merges"
    );
    assert!(answered < asked, "the hard cases must go to git");
}

/// One random history; `(merges answered in the process, merges asked)`.
fn history(seed: u64) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["config", "user.name", "T"]);
    git(&repo, &["config", "user.email", "t@example.invalid"]);
    for (i, path) in [
        "shared/s0.txt",
        "shared/s1.txt",
        "shared/s2.txt",
        "pkg/p0/a.txt",
        "pkg/p0/b.txt",
        "pkg/p1/c.txt",
    ]
    .iter()
    .enumerate()
    {
        let f = repo.join(path);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, format!("base {i}\n")).unwrap();
    }
    for i in 0..6 {
        std::fs::create_dir_all(repo.join("lib")).unwrap();
        std::fs::write(repo.join(format!("lib/l{i}.txt")), format!("lib {i}\n")).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "base"]);
    let start = git(&repo, &["rev-parse", "HEAD"]);
    let wt = dir.path().join("wt");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            wt.to_str().unwrap(),
            &start,
        ],
    );

    let run = Git::new(&repo)
        .with_object_writer()
        .with_fixed_date("2026-01-01T00:00:00Z");
    let mut rng = Lcg(seed);
    let mut steps: Vec<String> = Vec::new();
    let mut tip = start.clone();
    let (mut answered, mut asked, mut conflicts) = (0, 0, 0);
    let mut check = |a: &str, b: &str| -> Option<String> {
        let ours = run.merge_in_process(a, b);
        let theirs = git_merge_tree(&repo, a, b);
        asked += 1;
        if theirs.is_none() {
            conflicts += 1;
        }
        if let Some(t) = &ours {
            answered += 1;
            if Some(t) != theirs.as_ref() {
                let out = Command::new("git")
                    .args(["merge-tree", "--write-tree", a, b])
                    .current_dir(&repo)
                    .output()
                    .unwrap();
                let bases = Command::new("git")
                    .args(["merge-base", "--all", a, b])
                    .current_dir(&repo)
                    .output()
                    .unwrap();
                panic!(
                    "merge of {a} and {b}: in process {t}, git: {}\nmerge bases: {}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&bases.stdout)
                );
            }
        }
        theirs
    };
    for step in 0..40 {
        // Predecessors: none (the start), one or two earlier steps.
        let preds: Vec<String> = match (steps.len(), rng.below(3)) {
            (0, _) | (_, 0) => vec![start.clone()],
            (n, 1) => vec![steps[rng.below(n)].clone()],
            (n, _) => {
                let a = rng.below(n);
                let b = rng.below(n);
                vec![steps[a].clone(), steps[b].clone()]
            }
        };
        let mut base = preds[0].clone();
        let mut ok = true;
        for p in &preds[1..] {
            if *p == base || check(&base, p).is_none() {
                ok = *p == base;
                continue;
            }
            base = run
                .merge_commit(&base, p, &format!("base of {step}"))
                .unwrap()
                .unwrap();
        }
        if !ok {
            continue;
        }
        git(&wt, &["checkout", "-q", "--detach", "--force", &base]);
        git(&wt, &["clean", "-q", "-fdx"]);
        change(&wt, &mut rng, step);
        git(&wt, &["add", "-A"]);
        let tree = git(&wt, &["write-tree"]);
        let commit = run
            .commit_tree(&tree, &[&base], &format!("step {step}\n"))
            .unwrap();
        assert_eq!(tree_of(&repo, &commit), tree);
        steps.push(commit.clone());
        if base == tip {
            tip = commit;
        } else if check(&tip, &commit).is_some() {
            tip = run
                .merge_commit(&tip, &commit, &format!("integrate {step}"))
                .unwrap()
                .unwrap();
        }
    }
    assert!(conflicts < asked, "seed {seed}: every merge conflicted");
    (answered, asked)
}

#[test]
fn merges_of_commits_the_run_did_not_write_go_to_git() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["config", "user.name", "T"]);
    git(repo, &["config", "user.email", "t@example.invalid"]);
    std::fs::write(repo.join("a.txt"), "a\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "a"]);
    let a = git(repo, &["rev-parse", "HEAD"]);
    std::fs::write(repo.join("b.txt"), "b\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "b"]);
    let b = git(repo, &["rev-parse", "HEAD"]);
    git(repo, &["checkout", "-q", "-b", "side", &a]);
    std::fs::write(repo.join("c.txt"), "c\n").unwrap();
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", "c"]);
    let c = git(repo, &["rev-parse", "HEAD"]);
    let run = Git::new(repo).with_object_writer();
    // Neither commit was written by this handle: the base is unknown to it.
    assert_eq!(run.merge_in_process(&b, &c), None);
    // Git still merges them.
    let merged = run.merge_commit(&b, &c, "merge").unwrap().unwrap();
    assert_eq!(
        git(repo, &["ls-tree", "--name-only", &merged]),
        "a.txt\nb.txt\nc.txt"
    );
}
