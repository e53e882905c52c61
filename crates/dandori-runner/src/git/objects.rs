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
use std::path::{Path, PathBuf};
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
    git: Piped,
    /// `(author, committer)` identities for the fixed date.
    idents: (String, String),
    fixed_date: String,
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
        let mut guard = lock(&self.state);
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
    Some(WriterState {
        git: Piped::spawn(git.command(&["hash-object", "-t", "commit", "-w", "--stdin-paths"]))?,
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
        s.git.stdin.write_all(format!("{p}\n").as_bytes()).ok()?;
        s.git.stdin.flush().ok()?;
        let mut line = String::new();
        s.git.stdout.read_line(&mut line).ok()?;
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
    state: Mutex<Option<Piped>>,
    broken: std::sync::atomic::AtomicBool,
}

/// A long-lived git process spoken to through its stdin and stdout; it ends
/// when this is dropped.
#[derive(Debug)]
struct Piped {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Piped {
    /// Sends one command line and reads the first line of the answer (without its
    /// newline).
    fn ask(&mut self, command: &str) -> Option<String> {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .ok()?;
        self.stdin.flush().ok()?;
        let mut line = String::new();
        self.stdout.read_line(&mut line).ok()?;
        Some(line.trim_end_matches('\n').to_string())
    }

    /// Starts `cmd` with piped stdin and stdout (stderr discarded).
    fn spawn(mut cmd: std::process::Command) -> Option<Piped> {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdin = child.stdin.take()?;
        let stdout = BufReader::new(child.stdout.take()?);
        Some(Piped {
            child,
            stdin,
            stdout,
        })
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
        let mut guard = lock(&self.state);
        if guard.is_none() {
            *guard = Piped::spawn(git.command(&["update-ref", "--stdin"]));
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

/// Reads objects through one long-lived `git cat-file --batch-command` per run
/// (started in the repository itself, shared by the worktrees' handles): what a
/// pool worktree's move needs to know of two trees — which paths differ, whether
/// a path is in a tree — without a git process per question. Anything
/// unexpected ends the reader; the caller then does without (`None`).
///
/// A second long-lived child, `git diff-tree --stdin`, gives the numstat and
/// binary patch between two trees ([`ObjectReader::diff`]); a third, `git mktree
/// --batch -z`, writes the trees of a merge made in the process
/// ([`ObjectReader::write_tree`], `git/merge.rs`).
#[derive(Debug)]
pub struct ObjectReader {
    /// `git cat-file --batch-command`.
    batch: LongLived,
    /// `git diff-tree --stdin -r --numstat --patch --binary --no-renames`.
    diff: LongLived,
    /// `git mktree --batch -z`.
    mktree: LongLived,
    /// `git hash-object -w --no-filters --stdin-paths`: the blobs of a copy-on-write
    /// workspace's change (`git/upper.rs`).
    blobs: LongLived,
    /// The parents of each commit the run wrote (`git/merge.rs` walks them to
    /// find merge bases without git).
    parents: Mutex<std::collections::HashMap<String, Vec<String>>>,
    /// Trees read so far (objects never change): a move reads each at most once.
    trees: Mutex<std::collections::HashMap<String, std::sync::Arc<Vec<TreeEntry>>>>,
    /// The tree of each commit the run wrote or asked about.
    commit_trees: Mutex<std::collections::HashMap<String, String>>,
    /// The line that ends each answer of `diff-tree` (it echoes a line that is
    /// not an object id, then flushes): never a line of a diff.
    end: String,
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// The mode as git writes it (`40000` for a tree).
    pub mode: String,
    pub name: Vec<u8>,
    /// Hexadecimal object id.
    pub oid: String,
}

impl TreeEntry {
    pub fn is_tree(&self) -> bool {
        self.mode == "40000"
    }
}

/// What an object name resolves to: `(object id, type)`, `None` when missing.
pub type ObjectInfo = Option<(String, String)>;

impl ObjectReader {
    /// A reader for the repository at `dir` (started on first use).
    pub fn new(dir: impl Into<PathBuf>) -> ObjectReader {
        let dir: PathBuf = dir.into();
        let nonce = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        ObjectReader {
            batch: LongLived::new(&dir, &["cat-file", "--batch-command"]),
            diff: LongLived::new(
                &dir,
                &[
                    "diff-tree",
                    "--stdin",
                    "-r",
                    "--numstat",
                    "--patch",
                    "--binary",
                    "--no-renames",
                ],
            ),
            mktree: LongLived::new(&dir, &["mktree", "--batch", "-z"]),
            blobs: LongLived::new(
                &dir,
                &["hash-object", "-w", "--no-filters", "--stdin-paths"],
            ),
            parents: Mutex::new(std::collections::HashMap::new()),
            trees: Mutex::new(std::collections::HashMap::new()),
            commit_trees: Mutex::new(std::collections::HashMap::new()),
            end: format!(
                "~ dandori end of diff {} {nonce} {}",
                std::process::id(),
                SEQ.fetch_add(1, Ordering::SeqCst)
            ),
        }
    }

    /// `git diff --numstat --patch --binary --no-renames` between the trees `a`
    /// and `b` (full ids), as `git diff-tree -r` prints it: numstat lines, a
    /// blank line, the patch. `None` when the child fails (it ends; the caller
    /// asks git itself). Attributes (a path forced binary) come from the
    /// repository's own worktree, which the run never changes.
    pub fn diff(&self, a: &str, b: &str) -> Option<String> {
        if !is_full_hash(a) || !is_full_hash(b) {
            return None;
        }
        self.diff.with(|s| {
            s.stdin
                .write_all(format!("{a} {b}\n{}\n", self.end).as_bytes())
                .ok()?;
            s.stdin.flush().ok()?;
            let mut header = Vec::new();
            s.stdout.read_until(b'\n', &mut header).ok()?;
            if header != format!("{a} {b}\n").as_bytes() {
                return None;
            }
            let end = format!("{}\n", self.end);
            let mut body = Vec::new();
            loop {
                let mut line = Vec::new();
                if s.stdout.read_until(b'\n', &mut line).ok()? == 0 {
                    return None;
                }
                if line == end.as_bytes() {
                    break;
                }
                body.extend_from_slice(&line);
            }
            Some(String::from_utf8_lossy(&body).into_owned())
        })
    }

    /// The object `name` (`<rev>`, `<rev>^{tree}`, `<rev>:<path>`) names.
    /// Outer `None`: the reader failed or the name cannot be asked (a newline).
    pub fn info(&self, name: &str) -> Option<ObjectInfo> {
        if name.contains('\n') {
            return None;
        }
        self.batch.with(|s| {
            let line = s.ask(&format!("info {name}"))?;
            let line = line.as_str();
            if line.ends_with(" missing") || line.ends_with(" ambiguous") {
                return Some(None);
            }
            let mut it = line.split(' ');
            let (oid, kind) = (it.next()?, it.next()?);
            is_full_hash(oid).then(|| Some((oid.to_string(), kind.to_string())))
        })
    }

    /// Notes that `commit` (written by the run) has the tree `tree`.
    pub fn note_commit(&self, commit: &str, tree: &str) {
        let mut map = lock(&self.commit_trees);
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(commit.to_string(), tree.to_string());
    }

    /// Notes that `commit` (written by the run) has `parents`.
    pub fn note_parents(&self, commit: &str, parents: &[&str]) {
        let mut map = lock(&self.parents);
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(
            commit.to_string(),
            parents.iter().map(|p| p.to_string()).collect(),
        );
    }

    /// The parents of `commit` when the run wrote it (`None` for any other
    /// commit: the caller does not walk below it).
    pub fn noted_parents(&self, commit: &str) -> Option<Vec<String>> {
        lock(&self.parents).get(commit).cloned()
    }

    /// Writes a tree of `entries` (names without `/`, no submodules) and returns
    /// its id; `None` when `git mktree` refuses or fails (it ends; the caller asks
    /// git to merge instead). Git sorts the entries and checks that every object
    /// exists with the type its mode says.
    pub fn write_tree(&self, entries: &[TreeEntry]) -> Option<String> {
        let mut input = Vec::new();
        for e in entries {
            let kind = match e.mode.as_str() {
                "40000" => "tree",
                "100644" | "100755" | "120000" => "blob",
                _ => return None,
            };
            if !is_full_hash(&e.oid)
                || e.name.is_empty()
                || e.name.iter().any(|b| *b == b'/' || *b == 0)
            {
                return None;
            }
            input.extend_from_slice(format!("{} {kind} {}\t", e.mode, e.oid).as_bytes());
            input.extend_from_slice(&e.name);
            input.push(0);
        }
        // An empty record ends the tree.
        input.push(0);
        self.mktree.with(|s| {
            s.stdin.write_all(&input).ok()?;
            s.stdin.flush().ok()?;
            let mut line = String::new();
            s.stdout.read_line(&mut line).ok()?;
            let id = line.trim_end().to_string();
            is_full_hash(&id).then_some(id)
        })
    }

    /// Writes the content of each file of `paths` (absolute, regular files) as a
    /// blob, unfiltered, and returns their ids in order; `None` when git fails.
    pub fn write_blobs(&self, paths: &[PathBuf]) -> Option<Vec<String>> {
        if paths.is_empty() {
            return Some(Vec::new());
        }
        let mut input = Vec::new();
        for p in paths {
            let s = p.to_str()?;
            if s.contains('\n') {
                return None;
            }
            input.extend_from_slice(s.as_bytes());
            input.push(b'\n');
        }
        self.blobs.with(|s| {
            // Answers are read while paths are still written: a long list would
            // otherwise fill both pipes.
            let mut ids = Vec::with_capacity(paths.len());
            let stdin = &mut s.stdin;
            std::thread::scope(|scope| {
                let writer = scope.spawn(move || {
                    stdin.write_all(&input).ok()?;
                    stdin.flush().ok()
                });
                for _ in 0..paths.len() {
                    let mut line = String::new();
                    s.stdout.read_line(&mut line).ok()?;
                    let id = line.trim_end().to_string();
                    if !is_full_hash(&id) {
                        return None;
                    }
                    ids.push(id);
                }
                writer.join().ok()?
            })?;
            Some(ids)
        })
    }

    /// The tree of the commit (or tree) `rev`.
    pub fn tree_of(&self, rev: &str) -> Option<String> {
        if let Some(t) = lock(&self.commit_trees).get(rev) {
            return Some(t.clone());
        }
        match self.info(&format!("{rev}^{{tree}}"))? {
            Some((oid, kind)) if kind == "tree" => {
                if is_full_hash(rev) {
                    self.note_commit(rev, &oid);
                }
                Some(oid)
            }
            _ => None,
        }
    }

    /// The entries of the tree `oid` (a full id), in the tree's order.
    pub fn tree(&self, oid: &str) -> Option<std::sync::Arc<Vec<TreeEntry>>> {
        if let Some(t) = lock(&self.trees).get(oid) {
            return Some(t.clone());
        }
        let entries = std::sync::Arc::new(self.read_tree(oid)?);
        let mut map = lock(&self.trees);
        if map.len() >= CACHE_MAX {
            map.clear();
        }
        map.insert(oid.to_string(), entries.clone());
        Some(entries)
    }

    /// Whether `path` (`/`-separated, relative) is an entry of the tree `root`,
    /// walking down from it through the trees read so far.
    pub fn contains(&self, root: &str, path: &str) -> Option<bool> {
        let mut tree = root.to_string();
        let mut parts = path.split('/').peekable();
        while let Some(name) = parts.next() {
            let entries = self.tree(&tree)?;
            let Some(e) = entries.iter().find(|e| e.name == name.as_bytes()) else {
                return Some(false);
            };
            if parts.peek().is_none() {
                return Some(true);
            }
            if !e.is_tree() {
                return Some(false);
            }
            tree = e.oid.clone();
        }
        Some(false)
    }

    /// The content of the blob `oid` (a full id).
    pub fn blob(&self, oid: &str) -> Option<Vec<u8>> {
        self.object(oid, "blob", Some)
    }

    fn read_tree(&self, oid: &str) -> Option<Vec<TreeEntry>> {
        self.object(oid, "tree", |body| parse_tree(&body, oid.len() / 2))
    }

    /// The content of the object `oid` (a full id) of `kind`, read through the
    /// long-lived `cat-file` and given to `read` there (a `None` from it ends
    /// that process, as a failed read does).
    fn object<T>(
        &self,
        oid: &str,
        kind: &str,
        read: impl FnOnce(Vec<u8>) -> Option<T>,
    ) -> Option<T> {
        if !is_full_hash(oid) {
            return None;
        }
        self.batch.with(|s| {
            let header = s.ask(&format!("contents {oid}"))?;
            let mut it = header.split(' ');
            let (got, got_kind, size) = (it.next()?, it.next()?, it.next()?);
            if got != oid || got_kind != kind {
                return None;
            }
            let size: usize = size.trim().parse().ok()?;
            let mut body = vec![0u8; size + 1];
            std::io::Read::read_exact(&mut s.stdout, &mut body).ok()?;
            if body.pop() != Some(b'\n') {
                return None;
            }
            read(body)
        })
    }
}

/// A git child started on first use and kept for the run; once a question to it
/// fails it ends and is not started again (the callers then ask git directly).
#[derive(Debug)]
struct LongLived {
    dir: PathBuf,
    args: Vec<String>,
    state: Mutex<Option<Piped>>,
    broken: std::sync::atomic::AtomicBool,
}

impl LongLived {
    fn new(dir: &Path, args: &[&str]) -> Self {
        LongLived {
            dir: dir.to_path_buf(),
            args: args.iter().map(|a| a.to_string()).collect(),
            state: Mutex::new(None),
            broken: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Runs `f` on the running child; `None` (and the child ends) when it fails.
    fn with<T>(&self, f: impl FnOnce(&mut Piped) -> Option<T>) -> Option<T> {
        if self.broken.load(Ordering::SeqCst) {
            return None;
        }
        let mut guard = lock(&self.state);
        if guard.is_none() {
            let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
            *guard = Piped::spawn(Git::new(&self.dir).command(&args));
        }
        let out = guard.as_mut().and_then(f);
        if out.is_none() {
            *guard = None;
            self.broken.store(true, Ordering::SeqCst);
        }
        out
    }
}

/// How many trees (or commits) the reader remembers before starting afresh.
const CACHE_MAX: usize = 65536;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// The entries of a tree object's content (`<mode> <name>\0<raw id>`…).
fn parse_tree(mut body: &[u8], id_len: usize) -> Option<Vec<TreeEntry>> {
    let mut entries = Vec::new();
    while !body.is_empty() {
        let sp = body.iter().position(|b| *b == b' ')?;
        let nul = sp + body[sp..].iter().position(|b| *b == 0)?;
        let mode = std::str::from_utf8(&body[..sp]).ok()?.to_string();
        let name = body[sp + 1..nul].to_vec();
        let raw = body.get(nul + 1..nul + 1 + id_len)?;
        let oid = raw.iter().map(|b| format!("{b:02x}")).collect();
        entries.push(TreeEntry { mode, name, oid });
        body = &body[nul + 1 + id_len..];
    }
    Some(entries)
}

/// The paths (files, links, submodules, or whole directories present on one
/// side only or replaced by a file) that differ between the trees `a` and `b`,
/// reading only the subtrees whose ids differ. `None` when the reader fails or a
/// name is not UTF-8.
pub fn changed_paths(reader: &ObjectReader, a: &str, b: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![(String::new(), a.to_string(), b.to_string())];
    while let Some((prefix, ta, tb)) = stack.pop() {
        if ta == tb {
            continue;
        }
        let (ea, eb) = (reader.tree(&ta)?, reader.tree(&tb)?);
        let mut by_name: std::collections::BTreeMap<
            &[u8],
            (Option<&TreeEntry>, Option<&TreeEntry>),
        > = std::collections::BTreeMap::new();
        for e in ea.iter() {
            by_name.entry(&e.name).or_default().0 = Some(e);
        }
        for e in eb.iter() {
            by_name.entry(&e.name).or_default().1 = Some(e);
        }
        for (name, sides) in by_name {
            let name = std::str::from_utf8(name).ok()?;
            let path = format!("{prefix}{name}");
            match sides {
                (Some(x), Some(y)) if x.oid == y.oid && x.mode == y.mode => {}
                (Some(x), Some(y)) if x.is_tree() && y.is_tree() => {
                    stack.push((format!("{path}/"), x.oid.clone(), y.oid.clone()));
                }
                _ => out.push(path),
            }
        }
    }
    Some(out)
}
