//! The plan cache's protection at rest (seed 000 §12.2.2, docs/security.md § Plan
//! cache): every entry is sealed with AES-256-GCM under a key kept outside the
//! repository, in the user's data directory (`$DANDORI_DATA_HOME/cache.key`, else
//! `$XDG_DATA_HOME/dandori/cache.key`, else `~/.local/share/dandori/cache.key`),
//! created on first use with 32 random bytes, mode 0600 in a 0700 directory.
//!
//! A key file that others may read or write (any group or other bit), that is not
//! a regular file of 32 bytes, or that lies inside the repository is refused: the
//! cache is then off, never written in clear. A copy of the repository (with its
//! `.dandori/cache`) is unreadable without the user's key; an entry that does not
//! open (another key, changed bytes) is not a hit.

use std::path::{Path, PathBuf};

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The directory of the user's dandori data (the cache key).
pub const DANDORI_DATA_HOME: &str = "DANDORI_DATA_HOME";

const KEY_LEN: usize = 32;
/// Bound to every sealed entry: an entry of another format does not open.
const AAD: &[u8] = b"dandori plan cache v2";

/// Why the cache key cannot be used (the cache is then off).
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error(
        "CACHE_KEY_UNAVAILABLE: no user data directory: set {DANDORI_DATA_HOME}, XDG_DATA_HOME or HOME to an absolute path"
    )]
    NoDataDir,
    #[error("CACHE_KEY_INSECURE: {}: {reason}", path.display())]
    Insecure { path: PathBuf, reason: String },
    #[error("CACHE_KEY_UNAVAILABLE: {}: {reason}", path.display())]
    Io { path: PathBuf, reason: String },
}

/// Where the key is, from the environment given.
pub fn key_path(env: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let abs = |var: &str| env(var).map(PathBuf::from).filter(|p| p.is_absolute());
    if let Some(dir) = abs(DANDORI_DATA_HOME) {
        return Some(dir.join("cache.key"));
    }
    if let Some(dir) = abs("XDG_DATA_HOME") {
        return Some(dir.join("dandori").join("cache.key"));
    }
    abs("HOME").map(|h| h.join(".local/share/dandori/cache.key"))
}

/// The sealing key of the plan cache.
pub struct Seal {
    key: LessSafeKey,
    rng: SystemRandom,
}

impl std::fmt::Debug for Seal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Seal(***)")
    }
}

impl Seal {
    /// The key at `path`, created when missing; refused when it lies inside
    /// `repo` or others may read it.
    pub fn open_or_create(path: &Path, repo: &Path) -> Result<Seal, SealError> {
        let insecure = |reason: &str| SealError::Insecure {
            path: path.to_path_buf(),
            reason: reason.to_string(),
        };
        let io = |e: std::io::Error| SealError::Io {
            path: path.to_path_buf(),
            reason: e.to_string(),
        };
        let canon_repo = std::fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
        let dir = path
            .parent()
            .ok_or_else(|| insecure("no parent directory"))?;
        let canon_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if canon_dir.starts_with(&canon_repo) || path.starts_with(repo) {
            return Err(insecure(
                "the key must be kept outside the repository (set DANDORI_DATA_HOME)",
            ));
        }
        let rng = SystemRandom::new();
        let bytes = match read_key(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                create_key(path, &rng).map_err(io)?
            }
            Err(e) => return Err(io(e)),
        };
        check_mode(path).map_err(|r| insecure(&r))?;
        if bytes.len() != KEY_LEN {
            return Err(insecure("not a key of 32 bytes"));
        }
        let key =
            UnboundKey::new(&AES_256_GCM, &bytes).map_err(|_| insecure("not an AES-256 key"))?;
        Ok(Seal {
            key: LessSafeKey::new(key),
            rng,
        })
    }

    /// `plain` sealed: a fresh 96-bit nonce, then the ciphertext and its tag.
    pub fn seal(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut data = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(AAD),
                &mut data,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Some(out)
    }

    /// What [`Seal::seal`] sealed; None for anything else (another key, changed
    /// bytes, a file in clear).
    pub fn open(&self, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, rest) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut data = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(AAD), &mut data)
            .ok()?;
        Some(plain.to_vec())
    }
}

fn read_key(path: &Path) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    std::fs::read(path)
}

/// A new key, written 0600 in a 0700 directory (`create_new`: a key another
/// process wrote first is read, not replaced).
fn create_key(path: &Path, rng: &SystemRandom) -> std::io::Result<Vec<u8>> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut key = vec![0u8; KEY_LEN];
    rng.fill(&mut key)
        .map_err(|_| std::io::Error::other("no system randomness"))?;
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
    {
        Ok(mut f) => {
            f.write_all(&key)?;
            f.sync_all()?;
            Ok(key)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_key(path),
        Err(e) => Err(e),
    }
}

fn check_mode(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "mode {mode:o}: others may read or change it (chmod 600)"
        ));
    }
    if meta.uid() != nix::unistd::Uid::effective().as_raw() {
        return Err("owned by another user".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_opens_and_refuses() {
        let data = tempfile::tempdir().unwrap();
        let repo = tempfile::tempdir().unwrap();
        let path = data.path().join("d/cache.key");
        let seal = Seal::open_or_create(&path, repo.path()).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        let sealed = seal.seal(b"plan text").unwrap();
        assert!(!sealed.windows(4).any(|w| w == b"plan"));
        assert_eq!(seal.open(&sealed).unwrap(), b"plan text");
        // The same key again; a changed byte or another key does not open.
        let again = Seal::open_or_create(&path, repo.path()).unwrap();
        assert_eq!(again.open(&sealed).unwrap(), b"plan text");
        let mut changed = sealed.clone();
        *changed.last_mut().unwrap() ^= 1;
        assert!(seal.open(&changed).is_none());
        let other = Seal::open_or_create(&data.path().join("e/cache.key"), repo.path()).unwrap();
        assert!(other.open(&sealed).is_none());
        assert!(seal.open(b"{\"plain\": true}").is_none());
        // A readable key is refused; so is a key inside the repository.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = Seal::open_or_create(&path, repo.path()).unwrap_err();
        assert!(err.to_string().starts_with("CACHE_KEY_INSECURE"), "{err}");
        let inside = repo.path().join(".dandori/cache.key");
        let err = Seal::open_or_create(&inside, repo.path()).unwrap_err();
        assert!(err.to_string().contains("outside the repository"), "{err}");
        assert!(!inside.exists());
    }

    #[test]
    fn key_path_order() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            key_path(&env(&[
                ("HOME", "/h"),
                ("XDG_DATA_HOME", "/x"),
                (DANDORI_DATA_HOME, "/d")
            ])),
            Some(PathBuf::from("/d/cache.key"))
        );
        assert_eq!(
            key_path(&env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
            Some(PathBuf::from("/x/dandori/cache.key"))
        );
        assert_eq!(
            key_path(&env(&[("HOME", "/h")])),
            Some(PathBuf::from("/h/.local/share/dandori/cache.key"))
        );
        assert_eq!(key_path(&env(&[("HOME", "relative")])), None);
    }
}
