//! Commit objects written by one long-lived `git hash-object -t commit -w
//! --stdin-paths` per run instead of a `git commit-tree` process per commit: a
//! run creates two or three commits per step (its base when it has several
//! predecessors, its own, the merge onto the work branch), and starting a git
//! process costs more than writing the object.
//!
//! The object is the one `commit-tree` would write (the same tree, parents,
//! author and committer identities from `git var` with the run's fixed date, the
//! message ending in a newline), and `hash-object` checks its format as
//! `commit-tree` does. Whenever the writer is unavailable or answers anything but
//! an object id, the caller falls back to `commit-tree`.
//!
//! Branch updates go the same way through one long-lived `git update-ref
//! --stdin` ([`RefWriter`]).

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{Git, is_full_hash};

/// Shared by every clone of a run's [`Git`] handles (the repository and its
/// worktrees share one object store). The child ends when this is dropped.
#[derive(Debug, Default)]
pub struct ObjectWriter {
    state: Mutex<Option<WriterState>>,
    /// Set once the writer failed: every later commit uses `commit-tree`.
    broken: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct WriterState {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// `(author, committer)` identities for the fixed date.
    idents: (String, String),
    fixed_date: String,
}

impl Drop for WriterState {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

static SEQ: AtomicU64 = AtomicU64::new(0);

impl ObjectWriter {
    /// The id of the commit object of `tree` with `parents` and `message`, or
    /// `None` when the writer cannot give it (the caller uses `commit-tree`).
    pub fn commit(&self, git: &Git, tree: &str, parents: &[&str], message: &str) -> Option<String> {
        let date = git.fixed_date.as_deref()?;
        if self.broken.load(Ordering::SeqCst) {
            return None;
        }
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if guard.as_ref().is_some_and(|s| s.fixed_date != date) {
            *guard = None;
        }
        if guard.is_none() {
            *guard = start(git, date);
        }
        let out = guard
            .as_mut()
            .and_then(|s| write(s, tree, parents, message));
        if out.is_none() {
            *guard = None;
            self.broken.store(true, Ordering::SeqCst);
        }
        out
    }
}

fn start(git: &Git, date: &str) -> Option<WriterState> {
    let author = git.run(&["var", "GIT_AUTHOR_IDENT"]).ok()?;
    let committer = git.run(&["var", "GIT_COMMITTER_IDENT"]).ok()?;
    let mut cmd = git.command(&["hash-object", "-t", "commit", "-w", "--stdin-paths"]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let stdin = child.stdin.take()?;
    let stdout = BufReader::new(child.stdout.take()?);
    Some(WriterState {
        child,
        stdin,
        stdout,
        idents: (author.trim().to_string(), committer.trim().to_string()),
        fixed_date: date.to_string(),
    })
}

fn write(s: &mut WriterState, tree: &str, parents: &[&str], message: &str) -> Option<String> {
    if !is_full_hash(tree) || !parents.iter().all(|p| is_full_hash(p)) {
        return None;
    }
    let mut text = format!("tree {tree}\n");
    for p in parents {
        text.push_str(&format!("parent {p}\n"));
    }
    text.push_str(&format!(
        "author {}\ncommitter {}\n\n{message}",
        s.idents.0, s.idents.1
    ));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    // A file of our own (never an existing one: no symlink is followed).
    let path: PathBuf = std::env::temp_dir().join(format!(
        "dandori-commit-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::SeqCst)
    ));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    let id = written.ok().and_then(|()| {
        let p = path.to_str()?;
        if p.contains('\n') {
            return None;
        }
        s.stdin.write_all(format!("{p}\n").as_bytes()).ok()?;
        s.stdin.flush().ok()?;
        let mut line = String::new();
        s.stdout.read_line(&mut line).ok()?;
        let id = line.trim().to_string();
        is_full_hash(&id).then_some(id)
    });
    let _ = std::fs::remove_file(&path);
    id
}

/// Branch updates through one long-lived `git update-ref --stdin` per run: each
/// update is its own transaction (`start`, `update`, `commit`), answered before
/// the next is sent. Anything but the expected answers ends the writer and the
/// caller runs `git update-ref` itself (which reports the real error).
#[derive(Debug, Default)]
pub struct RefWriter {
    state: Mutex<Option<RefState>>,
    broken: std::sync::atomic::AtomicBool,
}

#[derive(Debug)]
struct RefState {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for RefState {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl RefWriter {
    /// Points `refname` at `commit`; false when the caller must do it.
    pub fn update(&self, git: &Git, refname: &str, commit: &str) -> bool {
        if self.broken.load(Ordering::SeqCst)
            || !is_full_hash(commit)
            || refname.chars().any(|c| c.is_whitespace() || c.is_control())
        {
            return false;
        }
        let mut guard = match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if guard.is_none() {
            let mut cmd = git.command(&["update-ref", "--stdin"]);
            let started = cmd
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .ok()
                .and_then(|mut child| {
                    let stdin = child.stdin.take()?;
                    let stdout = BufReader::new(child.stdout.take()?);
                    Some(RefState {
                        child,
                        stdin,
                        stdout,
                    })
                });
            *guard = started;
        }
        let ok = guard.as_mut().is_some_and(|s| {
            let sent = s
                .stdin
                .write_all(format!("start\nupdate {refname} {commit}\ncommit\n").as_bytes())
                .and_then(|()| s.stdin.flush());
            let mut answer = |want: &str| {
                let mut line = String::new();
                s.stdout.read_line(&mut line).is_ok() && line.trim_end() == want
            };
            sent.is_ok() && answer("start: ok") && answer("commit: ok")
        });
        if !ok {
            *guard = None;
            self.broken.store(true, Ordering::SeqCst);
        }
        ok
    }
}
