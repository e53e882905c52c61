//! Symbolic links already in the worktree. The path rules are lexical: `linkdir/f`
//! is inside. When the repository holds `linkdir -> /srv/app`, a write or a
//! delete through it lands outside; so a write or delete target is walked
//! component by component in the worktree on disk, and a link whose target
//! resolves outside every writable root refuses the line. A delete of the link
//! itself (`rm linkdir`, no trailing `/`) removes only the link and passes.
//!
//! Hostile and legitimate lines: `tests/fixtures/policy/hostile_worktree.txt`
//! (class `symlink_targets`) and `legitimate_worktree.txt`.

use std::path::{Path, PathBuf};

use super::paths::{LineState, normalize_abs, under};

/// The first component of `path` (relative to the worktree root, the line's
/// working directory still at it) that is a symbolic link resolving outside
/// `roots`; the last component counts only when `follow_last` or the path ends
/// with `/`. `None` when there is none, or no root to walk from.
pub(crate) fn outside_link(
    path: &str,
    st: &LineState,
    roots: &[String],
    follow_last: bool,
) -> Option<String> {
    let root = roots.first()?;
    if path.starts_with('/') || st.cwd_depth != Some(0) {
        return None;
    }
    let parts: Vec<&str> = path
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    let follow_all = follow_last || path.ends_with('/');
    let mut at = PathBuf::from(root);
    let mut shown: Vec<&str> = Vec::new();
    for (i, part) in parts.iter().enumerate() {
        if *part == ".." {
            at.pop();
            shown.pop();
            continue;
        }
        at.push(part);
        shown.push(part);
        let last = i + 1 == parts.len();
        if last && !follow_all {
            break;
        }
        if is_link(&at) && !resolves_inside(&at, roots) {
            return Some(shown.join("/"));
        }
    }
    None
}

fn is_link(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink())
}

/// Where the link leads, resolved as far as it exists, is under a root.
fn resolves_inside(link: &Path, roots: &[String]) -> bool {
    let Ok(target) = std::fs::read_link(link) else {
        return false;
    };
    let base = link.parent().unwrap_or(Path::new("/"));
    let joined = normalize_abs(&base.join(target).to_string_lossy());
    // A dangling or not yet created target: judged lexically.
    let resolved = std::fs::canonicalize(&joined)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or(joined);
    roots.iter().any(|r| under(&resolved, r))
}
