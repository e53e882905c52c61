//! How many files (and directories) a step creates under the run directory —
//! run state, logs, patches, evidence and its workspace — counted by the kernel
//! (inotify `IN_CREATE`, every directory watched as soon as it appears): a small
//! number, the same on a repository of 10 files and of 3 000. File creation is
//! the dearest thing a step does on a busy file system (docs/runner.md).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use dandori_runner::CompletionStatus;
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify, WatchDescriptor};

use super::support::{Repo, S, options, planning, run, trace_events};

/// Counts the entries created under `root` until `stop` is set: by kind of
/// path (step ids and process-specific names folded), and in all.
fn count_creations(root: PathBuf, stop: Arc<AtomicBool>) -> BTreeMap<String, usize> {
    let fold = |p: &Path| -> String {
        let rel = p.strip_prefix(&root).unwrap_or(p).to_string_lossy();
        let mut out = String::new();
        let mut chars = rel.chars().peekable();
        // Digits folded to one `N`; temporary names to `tmp`.
        while let Some(c) = chars.next() {
            if c.is_ascii_digit() {
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
                out.push('N');
            } else {
                out.push(c);
            }
        }
        match out.find(".dandori-tmp-") {
            Some(i) => format!("{}.dandori-tmp-*", &out[..i]),
            None => out,
        }
    };
    let ino = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC).unwrap();
    let mut dirs: BTreeMap<WatchDescriptor, PathBuf> = BTreeMap::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    // Watches `dir` and everything under it; what is already there was created
    // after its parent's watch (or is the root's, not counted).
    fn watch(
        ino: &Inotify,
        dir: &Path,
        dirs: &mut BTreeMap<WatchDescriptor, PathBuf>,
        counts: &mut BTreeMap<String, usize>,
        fold: &dyn Fn(&Path) -> String,
        count_existing: bool,
    ) {
        let Ok(wd) = ino.add_watch(dir, AddWatchFlags::IN_CREATE) else {
            return;
        };
        dirs.insert(wd, dir.to_path_buf());
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if count_existing {
                *counts.entry(fold(&p)).or_default() += 1;
            }
            if p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                watch(ino, &p, dirs, counts, fold, count_existing);
            }
        }
    }
    watch(&ino, &root, &mut dirs, &mut counts, &fold, false);
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let events = ino.read_events().unwrap_or_default();
        if events.is_empty() {
            if stopping {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
            continue;
        }
        for ev in events {
            let (Some(dir), Some(name)) = (dirs.get(&ev.wd).cloned(), ev.name) else {
                continue;
            };
            let p = dir.join(name);
            *counts.entry(fold(&p)).or_default() += 1;
            if ev.mask.contains(AddWatchFlags::IN_ISDIR) {
                watch(&ino, &p, &mut dirs, &mut counts, &fold, true);
            }
        }
    }
    counts
}

/// A run of `steps` independent steps (one worker), each writing one file, on a
/// repository of `files` tracked files: the entries it created under its run
/// directory. (A step built on other steps' commits also gets the files they
/// changed written into its upper layer: proportional to the run's changes,
/// not to the repository.)
fn creations(files: usize, steps: usize) -> (usize, BTreeMap<String, usize>, String) {
    let repo = Repo::new();
    for i in 0..files {
        let d = repo.path.join(format!("d{}", i % 50));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("f{i}.txt")), format!("{i}\n")).unwrap();
    }
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "files"]);
    let agent = repo.agent(r#"mkdir -p "src/$1"; echo "$1" > "src/$1/out.txt""#);
    const IDS: [&str; 6] = ["S01", "S02", "S03", "S04", "S05", "S06"];
    let plan: Vec<S> = IDS[..steps].iter().map(|id| S::new(id).deps(&[])).collect();
    let run_dir = repo.write_plan(&planning(plan, serde_json::json!({})));
    let mut opts = options(
        &repo,
        &run_dir,
        Some(format!("sh {} {{step_id}}", agent.display())),
    );
    opts.config.runner.max_parallel_workers = 1;
    opts.config.runner.step_workspace = dandori_config::StepWorkspaceKind::Auto;
    let stop = Arc::new(AtomicBool::new(false));
    let counter = {
        let (root, stop) = (run_dir.clone(), stop.clone());
        std::thread::spawn(move || count_creations(root, stop))
    };
    // The watch must be in place before the run starts.
    std::thread::sleep(std::time::Duration::from_millis(50));
    let out = run(&opts).unwrap();
    dandori_runner::git::wait_for_removals();
    stop.store(true, Ordering::SeqCst);
    let counts = counter.join().unwrap();
    assert_eq!(out.completion.status, CompletionStatus::Completed);
    let mechanism = trace_events(&run_dir, "STEP_WORKSPACE")[0]["data"]["mechanism"]
        .as_str()
        .unwrap()
        .to_string();
    (counts.values().sum(), counts, mechanism)
}

#[test]
fn a_step_creates_a_small_constant_number_of_files_under_the_run_directory() {
    let (two, _, mechanism) = creations(10, 2);
    let (six, detail, _) = creations(10, 6);
    let (six_big, detail_big, _) = creations(3000, 6);
    let per_step = (six - two) as f64 / 4.0;
    eprintln!(
        "{mechanism}: 2 steps {two}, 6 steps {six} ({per_step} per step), 6 steps on 3 000 files {six_big}\n{detail:#?}"
    );
    // Overlay: the workspace's directories (its root, `upper`, `work`,
    // overlayfs's `work/work`, `mnt`, the hidden run directory's two), the
    // `.git` file naming its administrative directory, what the agent wrote
    // (`src`, `src/Sxx`, its file); the run state: the prompt, the agent's and
    // the unit command's logs, the patch, the evidence, one `stage.json` save;
    // the unit command's test-report directory (made and removed).
    let limit = match mechanism.as_str() {
        "overlay" => 22.0,
        // Pool worktrees are made once per worker (not per step).
        _ => 12.0,
    };
    assert!(
        per_step <= limit,
        "{mechanism}: {per_step} entries created per step (limit {limit}):\n{detail:#?}"
    );
    // Independent of the repository's size for copy-on-write workspaces (a
    // pool worktree is a checkout of every file, once per worker: thousands
    // here). Temporary files and overlayfs's whiteouts vary by a few between
    // runs on a loaded machine (a save retried, a log reopened), so the bound
    // is a slack far below the 3 000 a checkout would create.
    if mechanism == "overlay" {
        assert!(
            six_big <= six + 30,
            "{six_big} against {six}: {detail:#?}\n{detail_big:#?}"
        );
    }
}
