//! A copy-on-write workspace moved to another commit in the process: the
//! paths that differ are written through the overlay's view from the run's
//! object reader, and the step's index is rewritten with only their entries
//! replaced — no git process reads or writes the whole index (at 100 000
//! files, `git checkout --no-overlay <rev> -- <paths>` spent ≈ 50 ms of CPU
//! per step parsing and writing it).
//!
//! The index file format (`gitformat-index`): a header (`DIRC`, version 2, 3
//! or 4, the entry count), the entries sorted by name and stage, extensions,
//! and a trailing hash. The entries are read in every version, streamed; a
//! first move from the shared checkout's commit writes a split index over it
//! (`git::split_index`), any other move the whole index in version 2 (3 when
//! the old one was 3 or 4), without the extensions (caches git rebuilds: the
//! cache tree, the untracked cache, the resolve-undo record), and with a null
//! trailing hash, which git reads without checking since 2.40
//! (`index.skipHash`). An index this code does not know how to carry — a split
//! or sparse index, another hash than SHA-1, a git before 2.40, a submodule
//! among the paths — is left to git (`None`: the caller runs `git checkout`).

use std::io::{BufRead, Read, Seek, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use super::Git;
use super::objects::TreeEntry;

/// The fixed part of an entry: ten 32-bit stat fields, a SHA-1, the flags.
const FIXED: usize = 40 + 20 + 2;
const EXTENDED: u16 = 0x4000;

/// One index entry: its fixed part (stat data, object id, flags), its
/// extended flags (version 3 and later) and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) fixed: [u8; FIXED],
    pub(super) extended: Option<u16>,
    pub(super) name: Vec<u8>,
}

impl Entry {
    pub(super) fn stage(&self) -> u16 {
        (u16::from_be_bytes([self.fixed[60], self.fixed[61]]) >> 12) & 3
    }

    pub(super) fn empty() -> Entry {
        Entry {
            fixed: [0; FIXED],
            extended: None,
            name: Vec::new(),
        }
    }
}

/// An index file's entries read one at a time into one reused [`Entry`] (every
/// version; no allocation per entry): a 100 000-file index is read in a few
/// milliseconds and a buffer's worth of memory.
pub(super) struct Entries<R> {
    input: R,
    version: u32,
    left: usize,
    /// Bytes read so far.
    read: usize,
}

impl<R: BufRead> Entries<R> {
    /// After the header; `None` for a file that is not an index of version 2 to 4.
    pub(super) fn new(mut input: R) -> Option<Entries<R>> {
        let mut header = [0u8; 12];
        input.read_exact(&mut header).ok()?;
        let be32 = |at: usize| {
            u32::from_be_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
        };
        if &header[..4] != b"DIRC" || !(2..=4).contains(&be32(4)) {
            return None;
        }
        let count = be32(8) as usize;
        Some(Entries {
            input,
            version: be32(4),
            left: count,
            read: 12,
        })
    }

    /// The next entry into `e`: `Some(false)` after the last, `None` when malformed.
    pub(super) fn next(&mut self, e: &mut Entry) -> Option<bool> {
        if self.left == 0 {
            return Some(false);
        }
        self.left -= 1;
        self.input.read_exact(&mut e.fixed).ok()?;
        let mut len = FIXED;
        let flags = u16::from_be_bytes([e.fixed[60], e.fixed[61]]);
        e.extended = if flags & EXTENDED != 0 {
            if self.version < 3 {
                return None;
            }
            let mut x = [0u8; 2];
            self.input.read_exact(&mut x).ok()?;
            len += 2;
            Some(u16::from_be_bytes(x))
        } else {
            None
        };
        if self.version == 4 {
            // The name: how much of the previous one to drop, then the rest.
            let (strip, used) = self.varint()?;
            len += used;
            let keep = e.name.len().checked_sub(strip)?;
            e.name.truncate(keep);
            let n = self.input.read_until(0, &mut e.name).ok()?;
            if e.name.pop() != Some(0) {
                return None;
            }
            len += n;
        } else {
            e.name.clear();
            let n = self.input.read_until(0, &mut e.name).ok()?;
            if e.name.pop() != Some(0) {
                return None;
            }
            // Padded with 1 to 8 NULs to a multiple of eight bytes (one read).
            let padded = (len + n - 1 + 8) & !7;
            let pad = padded - len - n;
            let mut zeros = [0u8; 8];
            self.input.read_exact(&mut zeros[..pad]).ok()?;
            len = padded;
        }
        self.read += len;
        Some(true)
    }

    /// git's offset varint (`varint.c`), read from the input: (value, bytes).
    fn varint(&mut self) -> Option<(usize, usize)> {
        let mut byte = [0u8; 1];
        self.input.read_exact(&mut byte).ok()?;
        let mut used = 1;
        let mut c = byte[0];
        let mut val = usize::from(c & 127);
        while c & 128 != 0 {
            val = val.checked_add(1)?.checked_mul(128)?;
            self.input.read_exact(&mut byte).ok()?;
            used += 1;
            c = byte[0];
            val = val.checked_add(usize::from(c & 127))?;
        }
        Some((val, used))
    }

    /// Reads the extensions of a file of `total` bytes: `None` when one
    /// keeps entries elsewhere (a split index, `link`) or collapses
    /// directories (a sparse one, `sdir`), both git's to handle, or when the
    /// entries ran into the trailing hash.
    pub(super) fn finish(mut self, total: usize) -> Option<()> {
        let end = total.checked_sub(20)?;
        if self.read > end {
            return None;
        }
        while self.read + 8 <= end {
            let mut head = [0u8; 8];
            self.input.read_exact(&mut head).ok()?;
            if &head[..4] == b"link" || &head[..4] == b"sdir" {
                return None;
            }
            let size = u32::from_be_bytes([head[4], head[5], head[6], head[7]]) as u64;
            let skipped =
                std::io::copy(&mut (&mut self.input).take(size), &mut std::io::sink()).ok()?;
            if skipped != size {
                return None;
            }
            self.read = self.read.checked_add(8 + size as usize)?;
        }
        Some(())
    }
}

/// Writes `e` as version 2 or 3 has it (padded with NULs to eight bytes).
pub(super) fn put(out: &mut impl Write, e: &Entry) -> std::io::Result<()> {
    out.write_all(&e.fixed)?;
    let mut len = FIXED;
    if let Some(x) = e.extended {
        out.write_all(&x.to_be_bytes())?;
        len += 2;
    }
    out.write_all(&e.name)?;
    len += e.name.len();
    let padded = (len + 8) & !7;
    out.write_all(&[0u8; 8][..padded - len])
}

/// The entries of an index file; `None` for what this module does not carry.
#[cfg(test)]
fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    let mut entries = Entries::new(bytes)?;
    let mut out = Vec::with_capacity(entries.left);
    let mut e = Entry::empty();
    while entries.next(&mut e)? {
        out.push(e.clone());
    }
    entries.finish(bytes.len())?;
    Some(out)
}

/// The index file of `entries` (sorted), version 2 or 3, null trailing hash.
#[cfg(test)]
fn write(entries: &[Entry]) -> Vec<u8> {
    let version: u32 = if entries.iter().any(|e| e.extended.is_some()) {
        3
    } else {
        2
    };
    let mut out = Vec::new();
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    for e in entries {
        put(&mut out, e).unwrap_or_default();
    }
    out.extend_from_slice(&[0u8; 20]);
    out
}

/// Whether this git reads an index with a null trailing hash (2.40 or later).
fn reads_unhashed_index(git: &Git) -> bool {
    static ANSWER: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ANSWER.get_or_init(|| {
        let Ok(v) = git.run(&["version"]) else {
            return false;
        };
        let mut nums = v
            .trim()
            .trim_start_matches("git version ")
            .split('.')
            .map(|n| n.parse::<u32>().unwrap_or(0));
        let (major, minor) = (nums.next().unwrap_or(0), nums.next().unwrap_or(0));
        (major, minor) >= (2, 40)
    })
}

/// One file of `rev` to write: its path, mode (`100644`, `100755`, `120000`)
/// and blob id.
struct Wanted {
    path: String,
    mode: u32,
    oid: String,
}

/// The blobs of `rev`'s tree at `path` (itself, or every file under it when a
/// directory); `Some(empty)` when absent; `None` for a submodule or a failed read.
fn wanted(git: &Git, root: &str, path: &str, out: &mut Vec<Wanted>) -> Option<()> {
    let reader = git.reader.as_ref()?;
    let mut tree = root.to_string();
    let parts: Vec<&str> = path.split('/').collect();
    let mut found: Option<TreeEntry> = None;
    for (i, part) in parts.iter().enumerate() {
        let entries = reader.tree(&tree)?;
        let Some(e) = entries.iter().find(|e| e.name == part.as_bytes()) else {
            return Some(());
        };
        if i + 1 < parts.len() {
            if !e.is_tree() {
                return Some(());
            }
            tree = e.oid.clone();
        } else {
            found = Some(e.clone());
        }
    }
    let Some(e) = found else { return Some(()) };
    let mut stack = vec![(path.to_string(), e)];
    while let Some((p, e)) = stack.pop() {
        match e.mode.as_str() {
            "40000" => {
                for c in reader.tree(&e.oid)?.iter() {
                    let name = std::str::from_utf8(&c.name).ok()?;
                    stack.push((format!("{p}/{name}"), c.clone()));
                }
            }
            "100644" | "100755" | "120000" => out.push(Wanted {
                mode: u32::from_str_radix(&e.mode, 8).ok()?,
                path: p,
                oid: e.oid,
            }),
            _ => return None,
        }
    }
    Some(())
}

/// The stat data of `meta` as an index entry has it, with `mode` and `oid`.
fn entry(path: &str, mode: u32, oid: &str, meta: &std::fs::Metadata) -> Option<Entry> {
    let mut fixed = [0u8; FIXED];
    let fields: [u32; 10] = [
        meta.ctime() as u32,
        meta.ctime_nsec() as u32,
        meta.mtime() as u32,
        meta.mtime_nsec() as u32,
        meta.dev() as u32,
        meta.ino() as u32,
        mode,
        meta.uid(),
        meta.gid(),
        meta.size() as u32,
    ];
    for (i, f) in fields.iter().enumerate() {
        fixed[i * 4..i * 4 + 4].copy_from_slice(&f.to_be_bytes());
    }
    if oid.len() != 40 {
        return None;
    }
    for i in 0..20 {
        fixed[40 + i] = u8::from_str_radix(oid.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    let flags = path.len().min(0xFFF) as u16;
    fixed[60..62].copy_from_slice(&flags.to_be_bytes());
    Some(Entry {
        fixed,
        extended: None,
        name: path.as_bytes().to_vec(),
    })
}

/// Removes what `view/path` holds (through the overlay: whiteouts and opaque
/// directories record it in the upper layer).
fn clear(view: &Path, path: &str) -> Option<()> {
    let p = view.join(path);
    match std::fs::symlink_metadata(&p) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(&p).ok(),
        Ok(_) => std::fs::remove_file(&p).ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(()),
        Err(_) => None,
    }
}

/// Where a move from the shared checkout's commit may write the step's index
/// as a split index over the shared checkout's (`git::split_index`): that index
/// (read once per run) and the step's administrative directory.
#[derive(Debug, Clone, Copy)]
pub struct SplitOver<'a> {
    pub base: &'a super::split_index::BaseIndex,
    pub admin: &'a Path,
}

/// Puts the workspace seen at `view` (its index at `index`) from its current
/// tree to `rev`'s for `paths` (the paths that differ): files written through
/// the view, the index rewritten with their entries (stat data of the written
/// files). `None` when it could not be done here: the caller runs `git
/// checkout --no-overlay <rev> -- <paths>`, which puts the same paths right
/// whatever this left.
pub fn move_paths(
    git: &Git,
    view: &Path,
    index: &Path,
    rev: &str,
    paths: &[String],
    split: Option<SplitOver<'_>>,
) -> Option<()> {
    if !reads_unhashed_index(git) {
        return None;
    }
    let root = git.tree_of(rev)?;
    let mut files = Vec::new();
    for p in paths {
        wanted(git, &root, p, &mut files)?;
    }
    let reader = git.reader.as_ref()?;
    let mut fresh = Vec::with_capacity(files.len());
    for p in paths {
        clear(view, p)?;
    }
    for w in &files {
        let target = view.join(&w.path);
        if let Some(parent) = target.parent() {
            // A file of the lower layer where a directory now is: replaced.
            let mut at = parent;
            let mut blocked = None;
            while at.starts_with(view) && at != view {
                if std::fs::symlink_metadata(at).is_ok_and(|m| !m.is_dir()) {
                    blocked = Some(at.to_path_buf());
                }
                at = at.parent()?;
            }
            if let Some(b) = blocked {
                std::fs::remove_file(b).ok()?;
            }
            std::fs::create_dir_all(parent).ok()?;
        }
        let data = reader.blob(&w.oid)?;
        if w.mode == 0o120000 {
            let link = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(&data);
            std::os::unix::fs::symlink(link, &target).ok()?;
        } else {
            let mut f = std::fs::File::create(&target).ok()?;
            f.write_all(&data).ok()?;
            drop(f);
            let perm = if w.mode == 0o100755 { 0o755 } else { 0o644 };
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(perm)).ok()?;
        }
        let meta = std::fs::symlink_metadata(&target).ok()?;
        fresh.push(entry(&w.path, w.mode, &w.oid, &meta)?);
    }
    fresh.sort_by(|a, b| a.name.cmp(&b.name));
    if let Some(s) = split
        && super::split_index::write(s.base, s.admin, index, paths, &fresh).is_some()
    {
        return Some(());
    }
    rewrite(index, paths, &fresh)
}

/// Writes `index` anew the way git replaces an index: through `<index>.lock`,
/// made exclusively (another writer's lock makes this fail and stays), renamed
/// over `index` when `write` succeeded and removed when it did not.
pub(super) fn replace(
    index: &Path,
    write: impl FnOnce(&mut std::fs::File) -> Option<()>,
) -> Option<()> {
    let lock = index.with_extension("lock");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&lock)
        .ok()?;
    let written = write(&mut file);
    drop(file);
    let done = written.and_then(|()| std::fs::rename(&lock, index).ok());
    if done.is_none() {
        let _ = std::fs::remove_file(&lock);
    }
    done
}

/// Replaces the index at `index` (a hard link of the shared checkout's until
/// the first move: the shared one is never written) by one with every entry at
/// or under one of `paths` replaced by `fresh` (sorted by name). One pass over
/// the index, streamed: the entries to drop are a few ranges of the sorted
/// names (`p` itself, and `p/` up to `p0`).
fn rewrite(index: &Path, paths: &[String], fresh: &[Entry]) -> Option<()> {
    let file = std::fs::File::open(index).ok()?;
    let total = file.metadata().ok()?.len() as usize;
    let mut entries = Entries::new(std::io::BufReader::with_capacity(1 << 18, file))?;
    let mut ranges: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(paths.len() * 2);
    for p in paths {
        let p = p.as_bytes();
        ranges.push((p.to_vec(), [p, b"\0"].concat()));
        ranges.push(([p, b"/"].concat(), [p, b"0"].concat()));
    }
    ranges.sort();
    // Disjoint and sorted: one cursor follows the sorted names.
    let mut merged: Vec<(Vec<u8>, Vec<u8>)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => {
                if end > last.1 {
                    last.1 = end;
                }
            }
            _ => merged.push((start, end)),
        }
    }
    let version: u32 = if entries.version >= 3 { 3 } else { 2 };
    replace(index, |file| {
        let mut out = std::io::BufWriter::with_capacity(1 << 18, file);
        out.write_all(b"DIRC").ok()?;
        out.write_all(&version.to_be_bytes()).ok()?;
        // The count is written once known.
        out.write_all(&[0u8; 4]).ok()?;
        let (mut count, mut cursor, mut next_fresh) = (0u32, 0usize, 0usize);
        let mut e = Entry::empty();
        while entries.next(&mut e)? {
            while cursor < merged.len() && merged[cursor].1.as_slice() <= e.name.as_slice() {
                cursor += 1;
            }
            if cursor < merged.len() && merged[cursor].0.as_slice() <= e.name.as_slice() {
                continue;
            }
            while let Some(f) = fresh.get(next_fresh).filter(|f| f.name < e.name) {
                put(&mut out, f).ok()?;
                count += 1;
                next_fresh += 1;
            }
            put(&mut out, &e).ok()?;
            count += 1;
        }
        entries.finish(total)?;
        for f in &fresh[next_fresh..] {
            put(&mut out, f).ok()?;
            count += 1;
        }
        out.write_all(&[0u8; 20]).ok()?;
        let file = out.into_inner().ok()?;
        file.seek(std::io::SeekFrom::Start(8)).ok()?;
        file.write_all(&count.to_be_bytes()).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_of(dir: &Path, extra: &[&str]) -> Vec<u8> {
        let run = |args: &[&str]| {
            let o = std::process::Command::new("git")
                .args(extra)
                .args(args)
                .current_dir(dir)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        run(&["init", "-q"]);
        for (p, t) in [
            ("a.txt", "a"),
            ("d/b.txt", "b"),
            ("d/e/c.txt", "c"),
            ("z", "z"),
        ] {
            let f = dir.join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, t).unwrap();
        }
        run(&["add", "-A"]);
        std::fs::read(dir.join(".git/index")).unwrap()
    }

    #[test]
    fn every_index_version_reads_the_same_entries_and_writes_back_as_git_reads() {
        let mut seen = Vec::new();
        for version in ["2", "3", "4"] {
            let d = tempfile::tempdir().unwrap();
            let bytes = index_of(d.path(), &["-c", &format!("index.version={version}")]);
            let entries = parse(&bytes).unwrap();
            let names: Vec<String> = entries
                .iter()
                .map(|e| String::from_utf8(e.name.clone()).unwrap())
                .collect();
            assert_eq!(names, ["a.txt", "d/b.txt", "d/e/c.txt", "z"], "v{version}");
            seen.push(entries.clone());
            let status = || {
                std::process::Command::new("git")
                    .args(["status", "--porcelain"])
                    .current_dir(d.path())
                    .output()
                    .unwrap()
                    .stdout
            };
            let before = status();
            // Written back (version 2, null hash), git lists the same index.
            std::fs::write(d.path().join(".git/index"), write(&entries)).unwrap();
            let o = std::process::Command::new("git")
                .args(["ls-files", "-s"])
                .current_dir(d.path())
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 4);
            assert_eq!(status(), before, "v{version}");
        }
        // The same modes, ids, flags and names (stat data differs: three checkouts).
        let key = |es: &Vec<Entry>| -> Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> {
            es.iter()
                .map(|e| {
                    (
                        e.name.clone(),
                        e.fixed[24..28].to_vec(),
                        e.fixed[40..62].to_vec(),
                    )
                })
                .collect()
        };
        assert_eq!(key(&seen[0]), key(&seen[1]));
        assert_eq!(key(&seen[0]), key(&seen[2]));
    }

    #[test]
    fn a_rewrite_drops_exactly_the_entries_at_and_under_the_changed_paths() {
        for version in ["2", "4"] {
            let d = tempfile::tempdir().unwrap();
            let run = |args: &[&str]| {
                let o = std::process::Command::new("git")
                    .args(args)
                    .current_dir(d.path())
                    .output()
                    .unwrap();
                assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                String::from_utf8(o.stdout).unwrap()
            };
            run(&["init", "-q"]);
            // `-`, `.` sort before `/`, `0` right after it: `a`'s directory is
            // not one contiguous run of names beginning with `a`.
            for p in ["a-b", "a.c", "a/x", "a/y/z", "a0", "b", "c/d"] {
                let f = d.path().join(p);
                std::fs::create_dir_all(f.parent().unwrap()).unwrap();
                std::fs::write(f, p).unwrap();
            }
            run(&["-c", &format!("index.version={version}"), "add", "-A"]);
            let index = d.path().join(".git/index");
            let new_a = entry(
                "a",
                0o100644,
                "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                &std::fs::metadata(d.path().join("b")).unwrap(),
            )
            .unwrap();
            let new_e = entry(
                "e",
                0o100755,
                "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
                &std::fs::metadata(d.path().join("b")).unwrap(),
            )
            .unwrap();
            let paths = ["a".to_string(), "b".to_string(), "e".to_string()];
            rewrite(&index, &paths, &[new_a, new_e]).unwrap();
            assert!(!index.with_extension("lock").exists());
            let listed = run(&["ls-files", "-s"]);
            let names: Vec<&str> = listed
                .lines()
                .map(|l| l.split('\t').nth(1).unwrap())
                .collect();
            assert_eq!(names, ["a", "a-b", "a.c", "a0", "c/d", "e"], "v{version}");
            assert!(listed.starts_with("100644 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\ta\n"));
            assert!(listed.ends_with("100755 e69de29bb2d1d6434b8b29ae775ad8c2e48c5391 0\te\n"));
        }
    }

    #[test]
    fn a_split_index_is_left_to_git() {
        let d = tempfile::tempdir().unwrap();
        let bytes = index_of(d.path(), &["-c", "core.splitIndex=true"]);
        assert!(parse(&bytes).is_none());
    }

    fn varint(buf: &[u8]) -> Option<(usize, usize)> {
        Entries {
            input: buf,
            version: 4,
            left: 0,
            read: 0,
        }
        .varint()
    }

    #[test]
    fn varints_decode_as_git_encodes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x80, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x80, 0x7f]), Some((255, 2)));
        assert_eq!(varint(&[0x81, 0x00]), Some((256, 2)));
    }
}
