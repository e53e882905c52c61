//! A copy-on-write workspace moved to another commit in the process: the
//! paths that differ are written through the overlay's view from the run's
//! object reader, and the step's index is rewritten with only their entries
//! replaced — no git process reads or writes the whole index (at 100 000
//! files, `git checkout --no-overlay <rev> -- <paths>` spent ≈ 50 ms of CPU
//! per step parsing and writing it).
//!
//! The index file format (`gitformat-index`): a header (`DIRC`, version 2, 3
//! or 4, the entry count), the entries sorted by name and stage, extensions,
//! and a trailing hash. The entries are read in every version; the new index
//! is written in version 2 (3 when an entry has extended flags), without the
//! extensions (caches git rebuilds: the cache tree, the untracked cache, the
//! resolve-undo record), and with a null trailing hash, which git reads
//! without checking since 2.40 (`index.skipHash`). An index this code does
//! not know how to carry — a split or sparse index, another hash than SHA-1,
//! a git before 2.40, a submodule among the paths — is left to git
//! (`None`: the caller runs `git checkout`).

use std::collections::HashSet;
use std::io::Write;
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
struct Entry {
    fixed: [u8; FIXED],
    extended: Option<u16>,
    name: Vec<u8>,
}

impl Entry {
    fn stage(&self) -> u16 {
        (u16::from_be_bytes([self.fixed[60], self.fixed[61]]) >> 12) & 3
    }
}

/// The entries of an index file; `None` for what this module does not carry.
fn parse(bytes: &[u8]) -> Option<Vec<Entry>> {
    if bytes.len() < 12 + 20 || &bytes[..4] != b"DIRC" {
        return None;
    }
    let be32 = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let version = be32(4)?;
    let count = be32(8)? as usize;
    if !(2..=4).contains(&version) {
        return None;
    }
    let end = bytes.len() - 20;
    let mut at = 12;
    let mut entries = Vec::with_capacity(count);
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let fixed: [u8; FIXED] = bytes.get(at..at + FIXED)?.try_into().ok()?;
        at += FIXED;
        let flags = u16::from_be_bytes([fixed[60], fixed[61]]);
        let extended = if flags & EXTENDED != 0 {
            if version < 3 {
                return None;
            }
            let e = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
            at += 2;
            Some(e)
        } else {
            None
        };
        let name = if version == 4 {
            let (strip, used) = varint(bytes.get(at..end)?)?;
            at += used;
            let nul = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(strip)?;
            let mut name = previous[..keep].to_vec();
            name.extend_from_slice(&bytes[at..at + nul]);
            at += nul + 1;
            name
        } else {
            let nul = bytes.get(at..end)?.iter().position(|b| *b == 0)?;
            let name = bytes[at..at + nul].to_vec();
            // Padded with 1 to 8 NULs to a multiple of eight bytes.
            at = start + ((at - start + nul + 8) & !7);
            name
        };
        if at > end {
            return None;
        }
        previous.clone_from(&name);
        entries.push(Entry {
            fixed,
            extended,
            name,
        });
    }
    // Extensions: a split index (`link`) keeps entries elsewhere, a sparse one
    // (`sdir`) collapses directories; both are git's to handle.
    while at + 8 <= end {
        let sig = &bytes[at..at + 4];
        if sig == b"link" || sig == b"sdir" {
            return None;
        }
        let size = be32(at + 4)? as usize;
        at = at.checked_add(8 + size)?;
    }
    Some(entries)
}

/// git's offset varint (`varint.c`).
fn varint(buf: &[u8]) -> Option<(usize, usize)> {
    let mut i = 0;
    let mut c = *buf.first()?;
    i += 1;
    let mut val = usize::from(c & 127);
    while c & 128 != 0 {
        val = val.checked_add(1)?.checked_mul(128)?;
        c = *buf.get(i)?;
        i += 1;
        val = val.checked_add(usize::from(c & 127))?;
    }
    Some((val, i))
}

/// The index file of `entries` (sorted), version 2 or 3, null trailing hash.
fn write(entries: &[Entry]) -> Vec<u8> {
    let version: u32 = if entries.iter().any(|e| e.extended.is_some()) {
        3
    } else {
        2
    };
    let mut out = Vec::with_capacity(12 + entries.len() * 96 + 20);
    out.extend_from_slice(b"DIRC");
    out.extend_from_slice(&version.to_be_bytes());
    out.extend_from_slice(&(entries.len() as u32).to_be_bytes());
    for e in entries {
        let start = out.len();
        out.extend_from_slice(&e.fixed);
        if let Some(x) = e.extended {
            out.extend_from_slice(&x.to_be_bytes());
        }
        out.extend_from_slice(&e.name);
        let len = out.len() - start;
        let padded = (len + 8) & !7;
        out.resize(start + padded, 0);
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

/// Puts the workspace seen at `view` (its index at `index`) from its current
/// tree to `rev`'s for `paths` (the paths that differ): files written through
/// the view, the index rewritten with their entries (stat data of the written
/// files). `None` when it could not be done here: the caller runs `git
/// checkout --no-overlay <rev> -- <paths>`, which puts the same paths right
/// whatever this left.
pub fn move_paths(git: &Git, view: &Path, index: &Path, rev: &str, paths: &[String]) -> Option<()> {
    if !reads_unhashed_index(git) {
        return None;
    }
    let bytes = std::fs::read(index).ok()?;
    let entries = parse(&bytes)?;
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
    // Every entry at or under a changed path goes; rev's take their place.
    let changed: HashSet<&[u8]> = paths.iter().map(|p| p.as_bytes()).collect();
    let under = |name: &[u8]| {
        changed.contains(name)
            || name
                .iter()
                .enumerate()
                .any(|(i, b)| *b == b'/' && changed.contains(&name[..i]))
    };
    let mut kept: Vec<Entry> = entries.into_iter().filter(|e| !under(&e.name)).collect();
    kept.extend(fresh);
    kept.sort_by(|a, b| a.name.cmp(&b.name).then(a.stage().cmp(&b.stage())));
    let lock = index.with_extension("lock");
    let written = (|| -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&lock)?;
        f.write_all(&write(&kept))?;
        drop(f);
        // Renamed over the step's index (a hard link of the shared checkout's
        // until now): the shared one is never written.
        std::fs::rename(&lock, index)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&lock);
        return None;
    }
    Some(())
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
    fn a_split_index_is_left_to_git() {
        let d = tempfile::tempdir().unwrap();
        let bytes = index_of(d.path(), &["-c", "core.splitIndex=true"]);
        assert!(parse(&bytes).is_none());
    }

    #[test]
    fn varints_decode_as_git_encodes_them() {
        assert_eq!(varint(&[0x05]), Some((5, 1)));
        assert_eq!(varint(&[0x80, 0x00]), Some((128, 2)));
        assert_eq!(varint(&[0x80, 0x7f]), Some((255, 2)));
        assert_eq!(varint(&[0x81, 0x00]), Some((256, 2)));
    }
}
