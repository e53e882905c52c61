//! The sandbox view, one escape class per test, each under both mechanisms and
//! as whoever runs the tests (root in CI): nothing is shown because a command
//! names it, a `PATH` entry shows its own installation and never its parent, a
//! directory under `/tmp` shows only itself, `/dev` holds no host device, the
//! host's agent state is not shown, dandori's tool cache cannot be written, and
//! the worktree is writable whatever lies in it (a `.venv` on `PATH`, modes
//! copied from a read-only tree). The view's table in docs/security.md is the
//! code's.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::git::git;

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const MECHANISMS: [&str; 2] = ["bubblewrap", "landlock"];
const SECRET: &str = "view-test-secret-5f1c";

struct World {
    _dir: tempfile::TempDir,
    root: PathBuf,
    repo: PathBuf,
    home: PathBuf,
}

fn world_in(dir: tempfile::TempDir) -> World {
    let root = dir.path().canonicalize().unwrap();
    let repo = root.join("repo");
    let home = root.join("home");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(home.join(".ssh")).unwrap();
    std::fs::write(home.join(".ssh/id_ed25519"), format!("{SECRET}-key\n")).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# r\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(
        &repo,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.invalid",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    );
    World {
        _dir: dir,
        root,
        repo,
        home,
    }
}

/// Outside `/tmp` (bubblewrap's private `/tmp` hides all of it anyway).
fn world() -> World {
    world_in(tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap())
}

fn require_bwrap() {
    let path = std::env::var("PATH").unwrap_or_default();
    assert!(
        std::env::split_paths(&path).any(|d| d.join("bwrap").is_file()),
        "bwrap is not on PATH: run the tests with ./scripts/test.sh, which unpacks it into target/test-tools"
    );
}

/// `dandori env exec --sandbox MODE --repo REPO -- ARGV…` with the world's home
/// and `path` prepended to `PATH`; (exit code, stdout + stderr).
fn exec(w: &World, mode: &str, path: &[&Path], argv: &[&str]) -> (i32, String) {
    let mut dirs: Vec<PathBuf> = path.iter().map(|p| p.to_path_buf()).collect();
    dirs.extend(std::env::split_paths(
        &std::env::var("PATH").unwrap_or_default(),
    ));
    let out = Command::new(BIN)
        .args(["env", "exec", "--sandbox", mode, "--repo"])
        .arg(&w.repo)
        .arg("--")
        .args(argv)
        .env("HOME", &w.home)
        .env("XDG_CACHE_HOME", w.home.join(".cache"))
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn assert_hidden(w: &World, mode: &str, path: &[&Path], argv: &[&str]) {
    let (code, text) = exec(w, mode, path, argv);
    assert_ne!(code, 0, "[{mode}] {argv:?} succeeded: {text}");
    assert!(!text.contains(SECRET), "[{mode}] {argv:?} leaked: {text}");
}

#[test]
fn a_path_in_the_arguments_is_not_shown() {
    require_bwrap();
    let w = world();
    let sibling = w.root.join("other-project");
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    let key = w.home.join(".ssh/id_ed25519");
    let env = sibling.join(".env");
    for mode in MECHANISMS {
        // The program itself, not through a shell: its arguments name the files.
        assert_hidden(&w, mode, &[], &["cat", key.to_str().unwrap()]);
        assert_hidden(&w, mode, &[], &["cat", env.to_str().unwrap()]);
        assert_hidden(&w, mode, &[], &["ls", sibling.to_str().unwrap()]);
    }
}

#[test]
fn a_path_entry_shows_itself_never_its_parent() {
    require_bwrap();
    let w = world();
    let tool = w.root.join("opt-x");
    std::fs::create_dir_all(tool.join("bin")).unwrap();
    std::fs::write(tool.join("secret.txt"), SECRET).unwrap();
    let script = tool.join("bin/hello-view");
    std::fs::write(&script, "#!/bin/sh\necho hello from the tool\n").unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let secret = tool.join("secret.txt");
    let bin = tool.join("bin");
    for mode in MECHANISMS {
        let (code, text) = exec(&w, mode, &[&bin], &["hello-view"]);
        assert_eq!(code, 0, "[{mode}] the PATH tool does not run: {text}");
        assert!(text.contains("hello from the tool"), "[{mode}] {text}");
        assert_hidden(&w, mode, &[&bin], &["cat", secret.to_str().unwrap()]);
    }
}

#[test]
fn a_directory_under_tmp_shows_only_itself() {
    require_bwrap();
    // The repository and a tool both live under one directory of /tmp, as CI
    // jobs keep them; a sibling's `.env` there stays hidden.
    let w = world_in(tempfile::tempdir().unwrap());
    let bin = w.root.join("tools/bin");
    std::fs::create_dir_all(&bin).unwrap();
    let sibling = w.root.join("job-2");
    std::fs::create_dir_all(&sibling).unwrap();
    std::fs::write(sibling.join(".env"), format!("TOKEN={SECRET}\n")).unwrap();
    let env = sibling.join(".env");
    for mode in MECHANISMS {
        assert_hidden(&w, mode, &[&bin], &["cat", env.to_str().unwrap()]);
        let (code, text) = exec(&w, mode, &[&bin], &["sh", "-c", "echo ok > made.txt"]);
        assert_eq!(code, 0, "[{mode}] {text}");
    }
    assert!(w.repo.join("made.txt").is_file());
}

#[test]
fn dev_holds_no_host_device() {
    require_bwrap();
    let w = world();
    // Block devices and loop devices of the host, where there are any.
    let devices: Vec<String> = std::fs::read_dir("/dev")
        .unwrap()
        .flatten()
        .filter(|e| {
            use std::os::unix::fs::FileTypeExt;
            e.file_type().is_ok_and(|t| t.is_block_device())
        })
        .map(|e| e.path().display().to_string())
        .take(4)
        .collect();
    for mode in MECHANISMS {
        for d in &devices {
            let (code, text) = exec(&w, mode, &[], &["head", "-c", "16", d]);
            assert_ne!(code, 0, "[{mode}] read {d}: {text}");
        }
        let (code, text) = exec(
            &w,
            mode,
            &[],
            &[
                "sh",
                "-c",
                "head -c 4 /dev/urandom | wc -c && echo x > /dev/null && echo ok",
            ],
        );
        assert_eq!(code, 0, "[{mode}] {text}");
        assert!(text.contains("ok"), "[{mode}] {text}");
    }
}

#[test]
fn the_hosts_agent_state_and_dandoris_own_files_are_not_shown() {
    require_bwrap();
    let w = world();
    let transcript = w.home.join(".claude/projects/other/session.jsonl");
    std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
    std::fs::write(&transcript, SECRET).unwrap();
    std::fs::create_dir_all(w.repo.join(".dandori/environment")).unwrap();
    std::fs::write(
        w.repo.join(".dandori/environment/setup.json"),
        format!("{{\"s\": \"{SECRET}\"}}"),
    )
    .unwrap();
    for mode in MECHANISMS {
        assert_hidden(&w, mode, &[], &["cat", transcript.to_str().unwrap()]);
        assert_hidden(&w, mode, &[], &["cat", ".dandori/environment/setup.json"]);
        // The rest of the repository stays writable beside the hidden directory.
        let (code, text) = exec(
            &w,
            mode,
            &[],
            &["sh", "-c", "mkdir -p new/dir && echo x > top.txt"],
        );
        assert_eq!(code, 0, "[{mode}] {text}");
    }
}

#[test]
fn no_command_writes_dandoris_tool_cache() {
    require_bwrap();
    let w = world();
    let tools = w.home.join(".cache/dandori/tools");
    std::fs::create_dir_all(tools.join("bin")).unwrap();
    let planted = tools.join("bin/planted");
    for mode in MECHANISMS {
        let line = format!("echo x > {}", planted.display());
        let (code, text) = exec(&w, mode, &[], &["sh", "-c", &line]);
        assert_ne!(code, 0, "[{mode}] wrote the tool cache: {text}");
        assert!(!planted.exists(), "[{mode}] wrote the tool cache");
    }
}

#[test]
fn the_worktree_is_writable_whatever_lies_in_it() {
    require_bwrap();
    let w = world();
    // A virtual environment of the repository on PATH (what activation does).
    let venv_bin = w.repo.join(".venv/bin");
    std::fs::create_dir_all(&venv_bin).unwrap();
    std::fs::create_dir_all(w.repo.join(".venv/lib/site-packages")).unwrap();
    std::fs::write(w.repo.join(".venv/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
    // Directories whose modes came from a read-only tree (`cp -r` of one).
    std::fs::create_dir_all(w.repo.join("pkg")).unwrap();
    let ro = std::os::unix::fs::PermissionsExt::from_mode(0o555);
    std::fs::set_permissions(w.repo.join("pkg"), ro).unwrap();
    let root = super::running_as_root();
    for mode in MECHANISMS {
        let (code, text) = exec(
            &w,
            mode,
            &[&venv_bin],
            &[
                "sh",
                "-c",
                "echo x > .venv/lib/site-packages/mod.py && echo y > .venv/bin/tool",
            ],
        );
        assert_eq!(
            code, 0,
            "[{mode}] the .venv on PATH is not writable: {text}"
        );
        if root {
            // Root writes where its own modes say no, as it does outside.
            let (code, text) = exec(&w, mode, &[], &["sh", "-c", "echo x > pkg/new.py"]);
            assert_eq!(
                code, 0,
                "[{mode}] root cannot write a 0555 directory: {text}"
            );
        }
    }
    let rw = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(w.repo.join("pkg"), rw).unwrap();
}

#[test]
fn docs_security_carries_the_views_table() {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/security.md"),
    )
    .unwrap();
    let table = dandori_exec::sandbox::view::table_markdown();
    assert!(
        doc.contains(&table),
        "docs/security.md does not carry the view's table as the code builds it; put this between its view-table markers:\n{table}"
    );
}

#[test]
fn a_killed_runs_temporary_directories_are_removed() {
    require_bwrap();
    let w = world();
    let tmp = tempfile::tempdir().unwrap();
    // Left by a process that is gone (no pid is this large), and one of a live
    // process (this test's), which must stay.
    let gone = tmp.path().join("dandori-home-4294967-x1");
    let alive = tmp
        .path()
        .join(format!("dandori-seccomp-{}-x2", std::process::id()));
    for d in [&gone, &alive] {
        std::fs::create_dir_all(d).unwrap();
    }
    for mode in MECHANISMS {
        let out = Command::new(BIN)
            .args(["env", "exec", "--sandbox", mode, "--repo"])
            .arg(&w.repo)
            .args(["--", "true"])
            .env("HOME", &w.home)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "[{mode}] {out:?}");
        assert!(!gone.exists(), "[{mode}] a dead process's directory stayed");
        assert!(
            alive.exists(),
            "[{mode}] a live process's directory was removed"
        );
        let left: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("dandori-") && !n.contains(&std::process::id().to_string()))
            .collect();
        assert!(left.is_empty(), "[{mode}] left in TMPDIR: {left:?}");
    }
}
