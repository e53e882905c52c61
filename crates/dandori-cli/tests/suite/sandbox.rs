//! The command sandbox end to end, through `dandori env exec`, with each
//! mechanism forced by `--sandbox`: bubblewrap and the built-in fallback
//! (namespaces + Landlock, the `dandori __sandbox-exec` helper). Hostile
//! commands try to write and read outside the repository with a fake `HOME`,
//! and to reach a TCP listener of the test.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;

use pretty_assertions::assert_eq;

const BIN: &str = env!("CARGO_BIN_EXE_dandori");
const SECRET: &str = "ssh-private-key-material-0123456789";

struct World {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    outside: PathBuf,
    home: PathBuf,
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// Not under /tmp: bubblewrap's private /tmp would hide the outside files anyway,
/// which would prove nothing about the read-only root.
fn world() -> World {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let repo = dir.path().join("work").join("repo");
    let outside = dir.path().join("outside");
    let home = dir.path().join("home");
    for d in [&repo, &outside, &home.join(".ssh")] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join(".ssh/id_rsa"), SECRET).unwrap();
    std::fs::write(home.join(".profile"), "# profile\n").unwrap();
    std::fs::write(outside.join("secret.txt"), "outside\n").unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "# r\n").unwrap();
    std::fs::write(
        repo.join("Makefile"),
        format!("all:\n\techo make > {}/make.txt\n", outside.display()),
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("tests")).unwrap();
    std::fs::write(
        repo.join("tests/conftest.py"),
        format!(
            "import os\nopen({:?}, 'w').write('conftest')\nprint('SSH:', open(os.path.expanduser('~/.ssh/id_rsa')).read())\n",
            outside.join("conftest.txt").display().to_string()
        ),
    )
    .unwrap();
    std::fs::write(repo.join("tests/test_x.py"), "def test_x():\n    pass\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "init"]);
    World {
        _dir: dir,
        repo,
        outside,
        home,
    }
}

fn on_path(name: &str) -> PathBuf {
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "`{name}` is not on PATH: run the tests with ./scripts/test.sh, which installs it into target/test-tools"
            )
        })
}

/// `dandori env exec --sandbox MODE -- sh -c LINE` with the fake HOME.
fn exec(w: &World, mode: &str, line: &str) -> (i32, String) {
    let out = Command::new(BIN)
        .args(["env", "exec", "--sandbox", mode, "--repo"])
        .arg(&w.repo)
        .args(["--", "sh", "-c", line])
        .env("HOME", &w.home)
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code().unwrap_or(-1), text)
}

fn contained(mode: &str) {
    let w = world();
    let out = w.outside.display().to_string();
    let python = on_path("python3").display().to_string();
    let pytest = on_path("pytest").display().to_string();
    let node = on_path("node").display().to_string();
    let cases: Vec<(&str, String, PathBuf)> = vec![
        (
            "python -c",
            format!("{python} -c \"open('{out}/py.txt', 'w').write('x')\""),
            w.outside.join("py.txt"),
        ),
        (
            "conftest.py run by pytest",
            format!("{pytest} -q -p no:cacheprovider tests"),
            w.outside.join("conftest.txt"),
        ),
        ("make", "make".to_string(), w.outside.join("make.txt")),
        (
            "node -e",
            format!("{node} -e \"require('fs').writeFileSync('{out}/node.txt', 'x')\""),
            w.outside.join("node.txt"),
        ),
        (
            "cp ../..",
            "cp ../../outside/secret.txt ../../outside/copy.txt".to_string(),
            w.outside.join("copy.txt"),
        ),
    ];
    for (name, line, target) in &cases {
        let (_, text) = exec(&w, mode, line);
        assert!(
            !target.exists(),
            "[{mode}] {name} wrote outside the repository: {text}"
        );
        assert!(
            !text.contains(SECRET),
            "[{mode}] {name} read ~/.ssh: {text}"
        );
    }
    // Persistence in the user's profile.
    let (_, text) = exec(&w, mode, "echo pwned | tee -a ~/.profile");
    assert_eq!(
        std::fs::read_to_string(w.home.join(".profile")).unwrap(),
        "# profile\n",
        "[{mode}] {text}"
    );
    // Credential stores are unreadable.
    let (code, text) = exec(&w, mode, "cat ~/.ssh/id_rsa");
    assert_ne!(code, 0, "[{mode}] {text}");
    assert!(!text.contains(SECRET), "[{mode}] {text}");
    // The repository's .git is read-only: no hook path can be planted.
    let before = std::fs::read_to_string(w.repo.join(".git/config")).unwrap();
    let (_, text) = exec(&w, mode, "git config core.hooksPath /tmp/evil-hooks");
    assert_eq!(
        std::fs::read_to_string(w.repo.join(".git/config")).unwrap(),
        before,
        "[{mode}] {text}"
    );
    // Network: a listener of the test is unreachable from inside.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(true).unwrap();
    let (code, text) = exec(
        &w,
        mode,
        &format!(
            "{python} -c \"import socket; s = socket.create_connection(('127.0.0.1', {port}), timeout=3); s.sendall(b'leak')\""
        ),
    );
    assert_ne!(code, 0, "[{mode}] connected: {text}");
    if let Ok((mut s, _)) = listener.accept() {
        let mut buf = String::new();
        let _ = s.read_to_string(&mut buf);
        panic!("[{mode}] the sandboxed command reached the listener: {buf:?}");
    }
    // What is allowed still works: writing in the repository, temp files.
    let (code, text) = exec(
        &w,
        mode,
        &format!(
            "echo ok > built.txt && {python} -c \"import tempfile; tempfile.NamedTemporaryFile().write(b'x')\""
        ),
    );
    assert_eq!(code, 0, "[{mode}] {text}");
    assert_eq!(
        std::fs::read_to_string(w.repo.join("built.txt")).unwrap(),
        "ok\n"
    );
}

#[test]
fn bubblewrap_contains_hostile_commands() {
    on_path("bwrap");
    contained("bubblewrap");
}

#[test]
fn the_builtin_fallback_contains_hostile_commands() {
    contained("landlock");
}

#[test]
fn no_sandbox_runs_the_users_command_unconfined() {
    let w = world();
    let target = w.outside.join("free.txt");
    let out = Command::new(BIN)
        .args(["env", "exec", "--no-sandbox", "--repo"])
        .arg(&w.repo)
        .args(["--", "sh", "-c"])
        .arg(format!("echo free > {}", target.display()))
        .env("HOME", &w.home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "free\n");
}

#[test]
fn children_inherit_the_environment_minus_secrets() {
    let w = world();
    let out = Command::new(BIN)
        .args(["env", "exec", "--sandbox", "landlock", "--repo"])
        .arg(&w.repo)
        .args(["--", "env"])
        .env("HOME", &w.home)
        .env("RUSTUP_AUTO_INSTALL", "0")
        .env("PIP_INDEX_URL", "https://pypi.org/simple")
        .env("MY_SERVICE_CREDENTIAL", "cred-value-123456")
        .env("OPENAI_API_KEY", "sk-test-0123456789")
        .env("DATABASE_URL", "postgres://app:hunter2hunter2@db/x")
        .env("HTTPS_PROXY", "http://proxy.invalid:3128")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for kept in [
        "RUSTUP_AUTO_INSTALL=0",
        "PIP_INDEX_URL=https://pypi.org/simple",
        "HTTPS_PROXY=http://proxy.invalid:3128",
    ] {
        assert!(text.lines().any(|l| l == kept), "{kept} missing: {text}");
    }
    for secret in ["cred-value-123456", "sk-test-0123456789", "hunter2hunter2"] {
        assert!(!text.contains(secret), "{secret} leaked: {text}");
    }
}

/// A package manager's user configuration (`~/.npmrc`) is hidden, yet a
/// sandboxed command reads a copy without its credentials: yarn 1 stops on an
/// unreadable `~/.npmrc`, and a registry mirror configured there must still apply.
fn user_config_without_credentials(mode: &str) {
    let w = world();
    let token = "npm_TOKEN_0123456789abcdef";
    let npmrc = format!(
        "# mirror\nregistry=http://mirror.invalid/npm/\n//mirror.invalid/npm/:_authToken={token}\n_auth=dXNlcjpwYXNz\nstrict-ssl=false\n"
    );
    std::fs::write(w.home.join(".npmrc"), &npmrc).unwrap();
    let npm = on_path("npm").display().to_string();
    let (code, text) = exec(
        &w,
        mode,
        &format!(
            "{npm} config get registry && {npm} config get strict-ssl; cat ~/.npmrc; cat \"${{npm_config_userconfig:-/dev/null}}\""
        ),
    );
    assert_eq!(code, 0, "[{mode}] {text}");
    assert!(
        text.contains("http://mirror.invalid/npm/\nfalse\n"),
        "[{mode}] the mirror was lost: {text}"
    );
    assert!(!text.contains(token), "[{mode}] token leaked: {text}");
    assert!(
        !text.contains("dXNlcjpwYXNz"),
        "[{mode}] _auth leaked: {text}"
    );
    // The user's file is untouched.
    assert_eq!(
        std::fs::read_to_string(w.home.join(".npmrc")).unwrap(),
        npmrc
    );
}

#[test]
fn the_builtin_fallback_replaces_user_config_with_a_credential_free_copy() {
    user_config_without_credentials("landlock");
}

#[test]
fn bubblewrap_replaces_user_config_with_a_credential_free_copy() {
    on_path("bwrap");
    user_config_without_credentials("bubblewrap");
}
