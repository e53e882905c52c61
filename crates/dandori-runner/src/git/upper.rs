//! A copy-on-write step workspace's change, read from the overlay's upper
//! directory (what the step wrote, nothing else), and the tree it makes of the
//! shared lower checkout's tree: no walk of the repository, no index.
//!
//! In the upper directory (overlayfs with `userxattr`) a regular file or a
//! symbolic link is a file the step made or changed, a `0:0` character device a
//! deletion (whiteout), a directory with `user.overlay.opaque=y` one whose lower
//! content is gone (it was deleted and made again), any other directory only
//! holds such entries.

use std::collections::BTreeMap;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::objects::{ObjectReader, TreeEntry};

/// One changed path of the upper layer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upper {
    /// A file (`executable`) or, `link`, a symbolic link the step wrote.
    File { executable: bool, link: bool },
    /// Removed (a whiteout).
    Removed,
    /// A directory whose lower content is hidden (opaque).
    Opaque,
}

/// The entries of `upper` (relative `/`-separated paths, sorted), the root's
/// `.git` left out. `None` when a name is not UTF-8 or the directory cannot be
/// read: the caller stages with git instead.
pub fn read_upper(upper: &Path) -> Option<BTreeMap<String, Upper>> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(PathBuf, String)> = vec![(upper.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        for entry in std::fs::read_dir(&dir).ok()? {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            if rel.is_empty() && name == ".git" {
                continue;
            }
            let path = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let meta = entry.metadata().ok()?;
            let ft = meta.file_type();
            if ft.is_char_device() && meta.rdev() == 0 {
                out.insert(path, Upper::Removed);
            } else if ft.is_dir() {
                if dandori_exec::overlay::is_opaque(&entry.path()) {
                    out.insert(path.clone(), Upper::Opaque);
                }
                stack.push((entry.path(), path));
            } else if ft.is_symlink() {
                out.insert(
                    path,
                    Upper::File {
                        executable: false,
                        link: true,
                    },
                );
            } else if ft.is_file() {
                let executable = meta.permissions().mode() & 0o100 != 0;
                out.insert(
                    path,
                    Upper::File {
                        executable,
                        link: false,
                    },
                );
            } else {
                // A socket or a fifo: git does not track them.
            }
        }
    }
    Some(out)
}

/// One change to apply to a tree: a blob (mode, id) or a removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Put {
    Blob { mode: &'static str, oid: String },
    Remove,
}

#[derive(Debug, Default)]
struct Node {
    put: Option<Put>,
    opaque: bool,
    children: BTreeMap<Vec<u8>, Node>,
}

/// The tree of `base` (a tree id) with `changes` applied (paths relative,
/// `/`-separated) and the directories of `opaque` emptied of what `base` had
/// there first; `None` when an object cannot be read or written (the caller
/// stages with git).
pub fn apply(
    reader: &ObjectReader,
    base: &str,
    changes: &BTreeMap<String, Put>,
    opaque: &[String],
) -> Option<String> {
    let mut root = Node::default();
    for d in opaque {
        root.at(d).opaque = true;
    }
    for (p, put) in changes {
        root.at(p).put = Some(put.clone());
    }
    build(reader, Some(base), &root)?
}

impl Node {
    fn at(&mut self, path: &str) -> &mut Node {
        path.split('/').fold(self, |n, part| {
            n.children.entry(part.as_bytes().to_vec()).or_default()
        })
    }
}

/// The tree for `node` over the tree `base`: `Some(None)` when it is empty.
fn build(reader: &ObjectReader, base: Option<&str>, node: &Node) -> Option<Option<String>> {
    let mut entries: BTreeMap<Vec<u8>, TreeEntry> = BTreeMap::new();
    if !node.opaque
        && let Some(b) = base
    {
        for e in reader.tree(b)?.iter() {
            entries.insert(e.name.clone(), e.clone());
        }
    }
    if node.children.is_empty() {
        // Unchanged (or, opaque, emptied).
        return Some(base.filter(|_| !node.opaque).map(str::to_string));
    }
    for (name, child) in &node.children {
        match &child.put {
            Some(Put::Blob { mode, oid }) => {
                entries.insert(
                    name.clone(),
                    TreeEntry {
                        mode: (*mode).to_string(),
                        name: name.clone(),
                        oid: oid.clone(),
                    },
                );
            }
            Some(Put::Remove) if child.children.is_empty() && !child.opaque => {
                entries.remove(name);
            }
            _ => {
                let sub_base = entries
                    .get(name)
                    .filter(|e| e.is_tree())
                    .map(|e| e.oid.clone());
                match build(reader, sub_base.as_deref(), child)? {
                    Some(oid) => {
                        entries.insert(
                            name.clone(),
                            TreeEntry {
                                mode: "40000".to_string(),
                                name: name.clone(),
                                oid,
                            },
                        );
                    }
                    None => {
                        entries.remove(name);
                    }
                }
            }
        }
    }
    if entries.is_empty() {
        return Some(None);
    }
    let list: Vec<TreeEntry> = entries.into_values().collect();
    Some(Some(reader.write_tree(&list)?))
}

/// A change staged from an upper layer: the tree of the workspace and the blob
/// written for each file.
#[derive(Debug, Clone, Default)]
pub struct Staged {
    pub tree: String,
    pub blobs: BTreeMap<String, String>,
}

/// Stages the change of the workspace `ws` (a handle in it, for `check-ignore`)
/// whose upper layer is `upper` over a checkout of `lower_tree`, like `git add
/// -A` would against `head_tree`: files the step wrote or changed (new ones
/// unless ignored or never committed), removals, hidden directories. Blobs are
/// written from the upper layer's files through the run's long-lived
/// `hash-object`. Paths under `hidden` are not the step's. `None` when anything
/// cannot be vouched for (the caller stages with git).
pub fn stage(
    ws: &super::Git,
    upper: &Path,
    lower_tree: &str,
    head_tree: &str,
    hidden: &[String],
) -> Option<Staged> {
    let reader = ws.reader.as_deref()?;
    let mut entries = read_upper(upper)?;
    entries.retain(|p, _| {
        !hidden.iter().any(|h| {
            p == h
                || p.strip_prefix(h.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        })
    });
    let mut untracked: Vec<&str> = Vec::new();
    for (p, e) in &entries {
        if matches!(e, Upper::File { .. }) && !reader.contains(head_tree, p)? {
            untracked.push(p);
        }
    }
    let ignored: std::collections::HashSet<String> = if untracked.is_empty() {
        Default::default()
    } else {
        let mut input = Vec::new();
        for p in &untracked {
            input.extend_from_slice(p.as_bytes());
            input.push(0);
        }
        // Exit 1: nothing ignored.
        let out = ws
            .run_input_allowing(
                &["check-ignore", "--no-index", "-z", "--stdin"],
                &input,
                &[0, 1],
            )
            .ok()?;
        out.split('\0')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    };
    let skip = |p: &str| {
        ignored.contains(p)
            || (untracked.binary_search(&p).is_ok()
                && super::never_committed::is_never_committed(p))
    };
    let mut changes: BTreeMap<String, Put> = BTreeMap::new();
    let mut opaque: Vec<String> = Vec::new();
    let mut files: Vec<(String, bool)> = Vec::new();
    let mut links: Vec<String> = Vec::new();
    for (p, e) in &entries {
        match e {
            Upper::File { .. } if skip(p) => {}
            Upper::File { link: true, .. } => links.push(p.clone()),
            Upper::File { executable, .. } => files.push((p.clone(), *executable)),
            Upper::Removed => {
                changes.insert(p.clone(), Put::Remove);
            }
            Upper::Opaque => opaque.push(p.clone()),
        }
    }
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| upper.join(p)).collect();
    let ids = reader.write_blobs(&paths)?;
    let mut blobs = BTreeMap::new();
    for ((p, executable), oid) in files.into_iter().zip(ids) {
        let mode = if executable { "100755" } else { "100644" };
        blobs.insert(p.clone(), oid.clone());
        changes.insert(p, Put::Blob { mode, oid });
    }
    for p in links {
        use std::os::unix::ffi::OsStrExt;
        let target = std::fs::read_link(upper.join(&p)).ok()?;
        let oid = ws
            .run_input(
                &["hash-object", "-w", "--stdin"],
                target.as_os_str().as_bytes(),
            )
            .ok()?
            .trim()
            .to_string();
        blobs.insert(p.clone(), oid.clone());
        changes.insert(
            p,
            Put::Blob {
                mode: "120000",
                oid,
            },
        );
    }
    let tree = apply(reader, lower_tree, &changes, &opaque)?;
    Some(Staged { tree, blobs })
}
