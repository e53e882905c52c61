//! Confinement of file tools to the worktree root.
//!
//! A path given by the model is accepted only if it is relative, has no `..`
//! component, does not enter `.git`, and every symlink met on the way resolves inside
//! the (canonical) root. Writes additionally refuse a final component that is a
//! symlink, and replace files by rename, so a link swapped in later is not followed.

use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::error::ToolsError;
use crate::spec::{ReasonCode, ToolError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// A path inside the worktree, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// `/`-separated path relative to the root ("" for the root itself).
    pub relative: String,
    /// The absolute path (root joined with `relative`; for reads of existing paths,
    /// canonical).
    pub absolute: PathBuf,
}

#[derive(Debug, Clone)]
pub struct Worktree {
    root: PathBuf,
    forbidden: GlobSet,
    forbidden_patterns: Vec<String>,
}

impl Worktree {
    /// `root` must exist; it is canonicalised once here.
    pub fn new(root: &Path) -> Result<Self, ToolsError> {
        let root = dandori_fs::canonicalize(root)?;
        Ok(Worktree {
            root,
            forbidden: GlobSet::empty(),
            forbidden_patterns: Vec::new(),
        })
    }

    /// Paths the tools must not write (a step's `scope.forbidden_paths`): each entry
    /// is a glob or a directory prefix (`vendor` forbids `vendor/**`).
    pub fn with_forbidden_paths(mut self, patterns: &[String]) -> Result<Self, ToolsError> {
        let mut builder = GlobSetBuilder::new();
        for pattern in patterns {
            let trimmed = pattern.trim_end_matches('/');
            for p in [trimmed.to_string(), format!("{trimmed}/**")] {
                let glob = Glob::new(&p).map_err(|e| ToolsError::Glob {
                    what: "forbidden_paths",
                    pattern: pattern.clone(),
                    message: e.to_string(),
                })?;
                builder.add(glob);
            }
        }
        self.forbidden = builder.build().map_err(|e| ToolsError::Glob {
            what: "forbidden_paths",
            pattern: patterns.join(", "),
            message: e.to_string(),
        })?;
        self.forbidden_patterns = patterns.to_vec();
        Ok(self)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Checks `path` (as given by the model) for `access`.
    pub fn resolve(&self, path: &str, access: Access) -> Result<ResolvedPath, ToolError> {
        let relative = lexical(path)?;
        if access == Access::Write {
            if relative.is_empty() {
                return Err(ToolError::new(
                    ReasonCode::NotAFile,
                    "cannot write the worktree root itself",
                ));
            }
            if self.forbidden.is_match(&relative) {
                return Err(ToolError::new(
                    ReasonCode::PathForbidden,
                    format!(
                        "`{relative}` is in the step's forbidden paths ({})",
                        self.forbidden_patterns.join(", ")
                    ),
                ));
            }
        }
        let mut current = self.root.clone();
        let parts: Vec<&str> = if relative.is_empty() {
            Vec::new()
        } else {
            relative.split('/').collect()
        };
        for (i, part) in parts.iter().enumerate() {
            current.push(part);
            let meta = match std::fs::symlink_metadata(&current) {
                Ok(meta) => meta,
                // The rest does not exist yet: nothing below can be a symlink.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    for rest in &parts[i + 1..] {
                        current.push(rest);
                    }
                    break;
                }
                Err(e) => {
                    return Err(ToolError::new(
                        ReasonCode::IoError,
                        format!("reading metadata of {}: {e}", current.display()),
                    ));
                }
            };
            if !meta.file_type().is_symlink() {
                continue;
            }
            let is_last = i + 1 == parts.len();
            if is_last && access == Access::Write {
                return Err(ToolError::new(
                    ReasonCode::SymlinkWriteRefused,
                    format!("`{relative}` is a symlink; writes never follow symlinks"),
                ));
            }
            let target = std::fs::canonicalize(&current).map_err(|e| {
                ToolError::new(
                    ReasonCode::SymlinkEscape,
                    format!(
                        "`{}` is a symlink that cannot be resolved ({e}); refusing it",
                        parts[..=i].join("/")
                    ),
                )
            })?;
            if !target.starts_with(&self.root) {
                return Err(ToolError::new(
                    ReasonCode::SymlinkEscape,
                    format!(
                        "`{}` is a symlink leading out of the worktree (to {})",
                        parts[..=i].join("/"),
                        target.display()
                    ),
                ));
            }
            // Continue from the resolved target so later links are judged from where
            // they really are.
            current = target;
            if is_git_dir(&self.root, &current) {
                return Err(git_dir_error(&relative));
            }
        }
        // An existing file must really live in the worktree and have no other
        // name: a hard link made by a command (`ln /etc/shadow x`) shares the
        // outside file's inode, which no path check can see.
        if let Ok(meta) = std::fs::metadata(&current) {
            use std::os::unix::fs::MetadataExt;
            if meta.is_file() && meta.nlink() > 1 {
                return Err(ToolError::new(
                    ReasonCode::HardLinkRefused,
                    format!(
                        "`{relative}` has {} hard links; it may be a file outside the worktree, refusing it",
                        meta.nlink()
                    ),
                ));
            }
            match std::fs::canonicalize(&current) {
                Ok(real) if real.starts_with(&self.root) => {}
                Ok(real) => {
                    return Err(ToolError::new(
                        ReasonCode::PathOutsideWorktree,
                        format!(
                            "`{relative}` resolves to {} outside the worktree",
                            real.display()
                        ),
                    ));
                }
                Err(e) => {
                    return Err(ToolError::new(
                        ReasonCode::IoError,
                        format!("resolving `{relative}`: {e}"),
                    ));
                }
            }
        }
        Ok(ResolvedPath {
            relative,
            absolute: current,
        })
    }

    /// An ignore walk of `dir` (inside the worktree) that reads the ignore files of
    /// the worktree only: from its root down to `dir`, never those of directories
    /// above the worktree (a step worktree under `.dandori/runs` sits below a
    /// `.gitignore` of `*`, which would hide everything).
    pub fn walker(&self, dir: &Path) -> ignore::WalkBuilder {
        let mut walker = ignore::WalkBuilder::new(dir);
        walker
            .parents(false)
            .hidden(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git");
        if let Ok(rel) = dir.strip_prefix(&self.root) {
            let mut ancestor = self.root.clone();
            let mut add = |d: &Path| {
                for name in [".gitignore", ".ignore"] {
                    let f = d.join(name);
                    if f.is_file() {
                        let _ = walker.add_ignore(&f);
                    }
                }
            };
            // `dir` itself is read by the walk; its ancestors up to the root are not.
            let comps: Vec<_> = rel.components().collect();
            if !comps.is_empty() {
                add(&ancestor);
                for c in &comps[..comps.len() - 1] {
                    ancestor.push(c);
                    add(&ancestor);
                }
            }
        }
        walker
    }
}

fn is_git_dir(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root)
        .ok()
        .and_then(|rest| rest.components().next())
        .is_some_and(|c| c.as_os_str() == ".git")
}

fn git_dir_error(relative: &str) -> ToolError {
    ToolError::new(
        ReasonCode::GitDirProtected,
        format!("`{relative}` is inside .git; tools never touch git's own files"),
    )
}

/// The lexical checks: relative, no `..`, not in `.git`. Returns the normalised
/// `/`-separated relative path.
fn lexical(path: &str) -> Result<String, ToolError> {
    if path.contains('\0') {
        return Err(ToolError::new(
            ReasonCode::InvalidArguments,
            "path contains a NUL byte",
        ));
    }
    let p = Path::new(path);
    if p.is_absolute() || path.starts_with('/') || path.starts_with('\\') || path.starts_with('~') {
        return Err(ToolError::new(
            ReasonCode::PathOutsideWorktree,
            format!("`{path}` is absolute; give a path relative to the worktree root"),
        ));
    }
    let mut parts = Vec::new();
    for component in p.components() {
        match component {
            Component::Normal(c) => {
                let Some(c) = c.to_str() else {
                    return Err(ToolError::new(
                        ReasonCode::InvalidArguments,
                        format!("`{path}` is not valid UTF-8"),
                    ));
                };
                parts.push(c);
            }
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(ToolError::new(
                    ReasonCode::PathOutsideWorktree,
                    format!("`{path}` contains `..`; paths must stay inside the worktree"),
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(ToolError::new(
                    ReasonCode::PathOutsideWorktree,
                    format!("`{path}` is absolute; give a path relative to the worktree root"),
                ));
            }
        }
    }
    let relative = parts.join("/");
    if parts.first() == Some(&".git") {
        return Err(git_dir_error(&relative));
    }
    Ok(relative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_rules() {
        assert_eq!(lexical("./src//a.rs").ok(), Some("src/a.rs".to_string()));
        assert_eq!(lexical("").ok(), Some(String::new()));
        assert_eq!(lexical(".").ok(), Some(String::new()));
        for bad in ["../x", "a/../../x", "a/..", "/etc/passwd", "~/x"] {
            assert_eq!(
                lexical(bad).err().map(|e| e.code),
                Some(ReasonCode::PathOutsideWorktree),
                "{bad}"
            );
        }
        assert_eq!(
            lexical(".git/hooks/pre-commit").err().map(|e| e.code),
            Some(ReasonCode::GitDirProtected)
        );
    }
}
