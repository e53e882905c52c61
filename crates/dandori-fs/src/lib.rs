//! Filesystem helpers. Every io error names the path it concerns, and run state is
//! written atomically (temporary file in the same directory, fsync, rename).

use std::io::Write;
use std::path::{Path, PathBuf};

/// An io error together with the path and the operation that failed.
#[derive(Debug, thiserror::Error)]
#[error("{op} {}: {source}", path.display())]
pub struct FsError {
    pub op: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl FsError {
    pub fn new(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        FsError {
            op,
            path: path.into(),
            source,
        }
    }
    /// True when the underlying error is "not found".
    pub fn is_not_found(&self) -> bool {
        self.source.kind() == std::io::ErrorKind::NotFound
    }
}

pub type Result<T, E = FsError> = std::result::Result<T, E>;

pub fn read_to_string(path: impl AsRef<Path>) -> Result<String> {
    let path = path.as_ref();
    std::fs::read_to_string(path).map_err(|e| FsError::new("reading", path, e))
}

pub fn read(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    let path = path.as_ref();
    std::fs::read(path).map_err(|e| FsError::new("reading", path, e))
}

pub fn create_dir_all(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    std::fs::create_dir_all(path).map_err(|e| FsError::new("creating directory", path, e))
}

pub fn metadata(path: impl AsRef<Path>) -> Result<std::fs::Metadata> {
    let path = path.as_ref();
    std::fs::metadata(path).map_err(|e| FsError::new("reading metadata of", path, e))
}

pub fn remove_file(path: impl AsRef<Path>) -> Result<()> {
    let path = path.as_ref();
    std::fs::remove_file(path).map_err(|e| FsError::new("removing", path, e))
}

pub fn canonicalize(path: impl AsRef<Path>) -> Result<PathBuf> {
    let path = path.as_ref();
    std::fs::canonicalize(path).map_err(|e| FsError::new("resolving", path, e))
}

/// Writes `contents` to `path` atomically: the file is either the old one or the
/// new one, never a torn mix, even if the process is killed mid-write; and durably
/// (file and directory synced to disk before returning).
pub fn write_atomic(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<()> {
    replace(path.as_ref(), contents.as_ref(), true)
}

/// Like [`write_atomic`], the file readable by all (mode 0644 on Unix; the
/// temporary file is created 0600 and would keep that mode): for the documents a
/// run writes for people to read, `report.md` and `report.html`.
pub fn write_atomic_readable(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<()> {
    replace_with_mode(path.as_ref(), contents.as_ref(), true, Some(0o644))
}

/// Like [`write_atomic`] without the two fsyncs: a reader, or a process killed at
/// any moment, still sees the old file or the new one, never a torn mix; only a
/// machine crash may lose the last write. For files that can be recreated (logs,
/// patches of committed changes) and for frequent intermediate saves of state
/// whose final version is written with [`write_atomic`].
pub fn write_atomic_unsynced(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> Result<()> {
    replace(path.as_ref(), contents.as_ref(), false)
}

fn replace(path: &Path, contents: &[u8], durable: bool) -> Result<()> {
    replace_with_mode(path, contents, durable, None)
}

fn replace_with_mode(path: &Path, contents: &[u8], durable: bool, mode: Option<u32>) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    create_dir_all(&dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".dandori-tmp-")
        .tempfile_in(&dir)
        .map_err(|e| FsError::new("creating temporary file in", &dir, e))?;
    tmp.write_all(contents)
        .and_then(|()| {
            if durable {
                tmp.as_file().sync_all()
            } else {
                Ok(())
            }
        })
        .map_err(|e| FsError::new("writing", tmp.path().to_path_buf(), e))?;
    #[cfg(unix)]
    if let Some(mode) = mode {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| FsError::new("setting the mode of", tmp.path().to_path_buf(), e))?;
    }
    #[cfg(not(unix))]
    let _ = mode;
    tmp.persist(path)
        .map_err(|e| FsError::new("renaming into", path, e.error))?;
    // Make the rename itself durable.
    if durable && let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Serialises `value` as pretty JSON (with a trailing newline) and writes it atomically.
pub fn write_json_atomic<T: serde::Serialize + ?Sized>(
    path: impl AsRef<Path>,
    value: &T,
) -> Result<()> {
    let path = path.as_ref();
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| FsError::new("serialising JSON for", path, std::io::Error::other(e)))?;
    text.push('\n');
    write_atomic(path, text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_names_path_on_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b/state.json");
        write_atomic(&p, "one").unwrap();
        write_atomic(&p, "two").unwrap();
        assert_eq!(read_to_string(&p).unwrap(), "two");
        write_atomic_unsynced(&p, "three").unwrap();
        assert_eq!(read_to_string(&p).unwrap(), "three");
        assert_eq!(std::fs::read_dir(p.parent().unwrap()).unwrap().count(), 1);
        let err = read_to_string(dir.path().join("missing")).unwrap_err();
        assert!(err.to_string().contains("missing"), "{err}");
        assert!(err.is_not_found());
    }

    #[cfg(unix)]
    #[test]
    fn readable_write_leaves_mode_0644_and_plain_write_0600() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let report = dir.path().join("report.md");
        write_atomic_readable(&report, "# R\n").unwrap();
        assert_eq!(mode(&report), 0o644);
        assert_eq!(read_to_string(&report).unwrap(), "# R\n");
        let state = dir.path().join("state.json");
        write_atomic(&state, "{}").unwrap();
        assert_eq!(mode(&state), 0o600);
    }
}
