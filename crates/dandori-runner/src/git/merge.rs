//! Merges of the run's own commits without a git process.
//!
//! A step costs two merges: its base (the merge of its predecessors' commits)
//! and its integration into the work branch's tip. Both used to be one `git
//! merge-tree --write-tree` each. Most such merges are of changes to different
//! paths (the plan gives steps different targets), and for those the merged tree
//! is decided by the trees alone: every path takes the side that changed it.
//! This module makes that tree from the objects the run's long-lived `cat-file`
//! reads and writes only the trees that are new through its long-lived `mktree`.
//!
//! It answers only when the answer is the one `git merge-tree` would give, and
//! says "ask git" (`None`) otherwise:
//!
//! * **Merge base.** The commits are walked through the parents the run noted
//!   when it wrote them ([`ObjectReader::note_parents`]); the walk stops at
//!   commits the run did not write. Both walks must stop at the same single
//!   commit (the run's starting point), so every common ancestor is known. One
//!   best common ancestor is the base; several (a step built on the merge of two
//!   predecessors, integrated into a tip that merged them separately) are
//!   replaced by a commit whose parents are exactly those bases — the merge git
//!   would compute as their virtual base, already made by the run — or, for two
//!   bases, by their merge made here the same way (git's virtual base when that
//!   merge is clean). Otherwise git.
//! * **Trees.** A path changed on one side only takes that side; changed the same
//!   way on both, that change; two directories changed on both sides are merged
//!   entry by entry. Any other path (changed differently on both sides, a file
//!   against a directory, a directory removed on one side and changed on the
//!   other — where git's rename detection could move the other side's new files,
//!   a path removed on both sides — which git reports as a rename/rename or
//!   rename/delete conflict when a side moved it) is left to git, which merges
//!   content and detects renames.

use std::collections::{BTreeMap, HashSet};

use super::objects::{ObjectReader, TreeEntry};

/// How many commits a walk may visit before it gives up (git then answers).
const WALK_MAX: usize = 100_000;

/// The commits reachable from `starts` (themselves included) through the parents
/// the run noted, and the commits where the walk stopped (not written by the
/// run). `None` past [`WALK_MAX`] commits.
fn walk(
    reader: &ObjectReader,
    starts: impl IntoIterator<Item = String>,
) -> Option<(HashSet<String>, HashSet<String>)> {
    let mut seen = HashSet::new();
    let mut boundary = HashSet::new();
    let mut stack: Vec<String> = starts.into_iter().collect();
    while let Some(c) = stack.pop() {
        if seen.len() > WALK_MAX {
            return None;
        }
        if !seen.insert(c.clone()) {
            continue;
        }
        match reader.noted_parents(&c) {
            Some(ps) => stack.extend(ps),
            None => {
                boundary.insert(c);
            }
        }
    }
    Some((seen, boundary))
}

/// The tree to merge `a` and `b` against (see the module documentation);
/// `None` when the run cannot tell it.
pub fn base_tree(reader: &ObjectReader, a: &str, b: &str) -> Option<String> {
    base_tree_at(reader, a, b, 0)
}

/// [`base_tree`] of a merge `depth` virtual merges down.
fn base_tree_at(reader: &ObjectReader, a: &str, b: &str, depth: usize) -> Option<String> {
    if depth > 8 {
        return None;
    }
    let (anc_a, stop_a) = walk(reader, [a.to_string()])?;
    let (anc_b, stop_b) = walk(reader, [b.to_string()])?;
    if stop_a.len() != 1 || stop_a != stop_b {
        return None;
    }
    let common: HashSet<&String> = anc_a.intersection(&anc_b).collect();
    // Everything strictly below a common ancestor is not a best one.
    let (below, _) = walk(
        reader,
        common
            .iter()
            .flat_map(|c| reader.noted_parents(c).unwrap_or_default()),
    )?;
    let bases: HashSet<&String> = common.into_iter().filter(|c| !below.contains(*c)).collect();
    match bases.len() {
        0 => None,
        1 => reader.tree_of(bases.into_iter().next()?),
        n => {
            // A commit of the run whose parents are exactly the bases: their merge.
            let virtual_base = anc_a.iter().chain(anc_b.iter()).find(|c| {
                reader
                    .noted_parents(c)
                    .is_some_and(|ps| ps.len() == n && ps.iter().collect::<HashSet<_>>() == bases)
            });
            if let Some(v) = virtual_base {
                return reader.tree_of(v);
            }
            // Otherwise two bases are merged the way git makes its virtual base
            // (a clean merge of two commits is the same in either order); more
            // are left to git.
            if n != 2 {
                return None;
            }
            let mut two = bases.into_iter();
            let (x, y) = (two.next()?, two.next()?);
            let base = base_tree_at(reader, x, y, depth + 1)?;
            merge_trees(reader, &base, &reader.tree_of(x)?, &reader.tree_of(y)?)
        }
    }
}

/// The tree of the merge of the trees `ours` and `theirs` against `base`, when
/// no path changed differently on both sides; `None`: ask git.
pub fn merge_trees(reader: &ObjectReader, base: &str, ours: &str, theirs: &str) -> Option<String> {
    // `Some(None)`, everything removed: git writes the empty tree; left to it.
    merge_dir(reader, Some(base), ours, theirs, 0)?
}

/// One directory level: the merged tree's id, `Some(None)` when it is empty.
fn merge_dir(
    reader: &ObjectReader,
    base: Option<&str>,
    ours: &str,
    theirs: &str,
    depth: usize,
) -> Option<Option<String>> {
    if depth > 256 {
        return None;
    }
    if ours == theirs || base == Some(theirs) {
        return Some(Some(ours.to_string()));
    }
    if base == Some(ours) {
        return Some(Some(theirs.to_string()));
    }
    let empty = std::sync::Arc::new(Vec::new());
    let eb = match base {
        Some(b) => reader.tree(b)?,
        None => empty,
    };
    let (eo, et) = (reader.tree(ours)?, reader.tree(theirs)?);
    type Sides<'a> = [Option<&'a TreeEntry>; 3];
    let mut by_name: BTreeMap<&[u8], Sides<'_>> = BTreeMap::new();
    for (side, entries) in [&eb, &eo, &et].into_iter().enumerate() {
        for e in entries.iter() {
            by_name.entry(&e.name).or_default()[side] = Some(e);
        }
    }
    let same = |x: Option<&TreeEntry>, y: Option<&TreeEntry>| match (x, y) {
        (None, None) => true,
        (Some(x), Some(y)) => x.mode == y.mode && x.oid == y.oid,
        _ => false,
    };
    let mut merged: Vec<TreeEntry> = Vec::new();
    let (mut all_ours, mut all_theirs) = (true, true);
    for (_, [b, o, t]) in by_name {
        if b.is_some() && o.is_none() && t.is_none() {
            // Removed on both sides: if either side moved it, git reports the
            // rename (rename/rename, rename/delete) as a conflict.
            return None;
        }
        if same(o, t)
            && !same(b, o)
            && let (Some(b), Some(o)) = (b, o)
            && b.is_tree()
            && (!o.is_tree() || removes_any(reader, &b.oid, &o.oid, depth + 1)?)
        {
            // The same directory change on both sides that removes something:
            // the same question as above, one level down.
            return None;
        }
        let pick = if same(o, t) || same(b, t) {
            o.cloned()
        } else if same(b, o) {
            t.cloned()
        } else {
            match (b, o, t) {
                (b, Some(o), Some(t))
                    if o.is_tree() && t.is_tree() && b.is_none_or(|b| b.is_tree()) =>
                {
                    merge_dir(reader, b.map(|b| b.oid.as_str()), &o.oid, &t.oid, depth + 1)?.map(
                        |oid| TreeEntry {
                            mode: "40000".to_string(),
                            name: o.name.clone(),
                            oid,
                        },
                    )
                }
                _ => return None,
            }
        };
        all_ours &= same(pick.as_ref(), o);
        all_theirs &= same(pick.as_ref(), t);
        merged.extend(pick);
    }
    if all_ours {
        return Some(Some(ours.to_string()));
    }
    if all_theirs {
        return Some(Some(theirs.to_string()));
    }
    if merged.is_empty() {
        return Some(None);
    }
    Some(Some(reader.write_tree(&merged)?))
}

/// Whether the tree `to` lacks any path the tree `from` has (at any depth).
fn removes_any(reader: &ObjectReader, from: &str, to: &str, depth: usize) -> Option<bool> {
    if depth > 256 {
        return None;
    }
    if from == to {
        return Some(false);
    }
    let (ef, et) = (reader.tree(from)?, reader.tree(to)?);
    for f in ef.iter() {
        match et.iter().find(|t| t.name == f.name) {
            None => return Some(true),
            Some(t) if f.is_tree() => {
                if !t.is_tree() || removes_any(reader, &f.oid, &t.oid, depth + 1)? {
                    return Some(true);
                }
            }
            Some(_) => {}
        }
    }
    Some(false)
}
