//! Plan cache (seed 000 §11.1.1): the key hashes the normalised request, the
//! repository state (HEAD commit + a hash of uncommitted changes) and the planner
//! settings; a lookup also accepts an entry for a *similar* request (token-set
//! Jaccard similarity ≥ `planning.cache.similarity_threshold`) made against the same
//! repository state and settings; entries older than `ttl` are dropped.
//!
//! At rest (seed 000 §12.2.2) entries are sealed with the user's key
//! ([`crate::llm::cache_seal`]), expired ones are removed on every write and by a
//! bounded sweep when planning starts, `dandori cache list|clear` show and remove
//! them, and a request or plan that holds a secret is never cached (the planner
//! decides that with the masker's normalising matcher).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::llm::cache_seal::Seal;

/// 2: sealed entries (`*.plan`); 1 was JSON in clear (`*.json`), now swept.
const ENTRY_VERSION: u32 = 2;

/// Lower-case, punctuation folded to spaces, whitespace collapsed.
pub fn normalise(request: &str) -> String {
    request
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect::<String>()
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

fn token_set(normalised: &str) -> BTreeSet<String> {
    normalised
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// Jaccard similarity of two token sets (1.0 for two empty sets).
pub fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (token_set(a), token_set(b));
    let union = a.union(&b).count();
    if union == 0 {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / union as f64
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoState {
    /// None outside git or before the first commit.
    pub head: Option<String>,
    /// SHA-256 of `git status --porcelain` and `git diff HEAD`, excluding dandori's
    /// own directories.
    pub dirty_hash: String,
}

impl RepoState {
    /// Read the state of `repo`, ignoring changes under `exclude` (relative paths,
    /// e.g. `.dandori`, the runs root) so a plan's own output does not change it.
    pub fn read(repo: &Path, exclude: &[String]) -> RepoState {
        let git = |args: &[&str]| -> Option<String> {
            let mut cmd =
                dandori_exec::git::git_command(repo, dandori_exec::git::GlobalConfig::Ignore);
            cmd.args(args).stderr(Stdio::null());
            let out = cmd.output().ok()?;
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        };
        let head = git(&["rev-parse", "HEAD"]).map(|s| s.trim().to_string());
        let mut pathspec: Vec<String> = vec!["--".to_string(), ".".to_string()];
        for e in exclude {
            pathspec.push(format!(":(exclude){e}"));
        }
        let with = |base: &[&str]| -> String {
            let mut args: Vec<&str> = base.to_vec();
            args.extend(pathspec.iter().map(String::as_str));
            git(&args).unwrap_or_default()
        };
        let mut hasher = Sha256::new();
        hasher.update(with(&["status", "--porcelain", "--untracked-files=all"]));
        if head.is_some() {
            hasher.update(with(&["diff", "HEAD"]));
        }
        RepoState {
            head,
            dirty_hash: hex(&hasher.finalize()),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What identifies a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheKey {
    pub request: String,
    pub repo: RepoState,
    /// Planner identity and settings (provider, model, strategy, levels, limits).
    pub settings: String,
}

impl CacheKey {
    pub fn new(request: &str, repo: RepoState, settings: String) -> CacheKey {
        CacheKey {
            request: normalise(request),
            repo,
            settings,
        }
    }

    pub fn digest(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.request.as_bytes());
        h.update([0]);
        h.update(self.repo.head.as_deref().unwrap_or("").as_bytes());
        h.update([0]);
        h.update(self.repo.dirty_hash.as_bytes());
        h.update([0]);
        h.update(self.settings.as_bytes());
        hex(&h.finalize())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    version: u32,
    created_at: u64,
    key: CacheKey,
    payload: Value,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    Hit {
        payload: Value,
        /// The digest of the entry used.
        entry: String,
        /// 1.0 for an exact hit.
        similarity: f64,
        age_secs: u64,
    },
    Miss {
        /// Entries dropped because they outlived the TTL.
        expired: usize,
    },
}

/// One entry as `dandori cache list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed {
    /// The entry's digest (its file name without `.plan`).
    pub entry: String,
    /// Seconds since the epoch; None when the entry does not open with this key.
    pub created_at: Option<u64>,
    pub age_secs: Option<u64>,
    pub expired: bool,
    pub bytes: u64,
    /// The first words of the normalised request; None when it does not open.
    pub request: Option<String>,
    /// The planner that made the plan.
    pub planner: Option<String>,
}

/// What a sweep or `cache clear` removed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Swept {
    pub expired: usize,
    /// Entries that do not open with the user's key (another key, changed bytes).
    pub unreadable: usize,
    /// Entries of the previous format, kept in clear (`*.json`).
    pub clear_text: usize,
    pub removed: usize,
}

/// A sweep looks at this many entries at most: a command's start stays bounded
/// whatever the cache holds (the next sweep goes on with the rest).
pub const SWEEP_LIMIT: usize = 512;

/// The plan cache (seed 000 §11.1.1, §12.2.2): entries sealed with the user's key
/// ([`crate::llm::cache_seal`]) in files 0600 of a 0700 directory; expired ones
/// removed on every write and by a bounded sweep at the start of each planning.
#[derive(Debug)]
pub struct PlanCache {
    dir: PathBuf,
    ttl_secs: u64,
    threshold: f64,
    seal: Seal,
}

const EXT: &str = "plan";

impl PlanCache {
    pub fn new(dir: PathBuf, ttl_secs: u64, threshold: f64, seal: Seal) -> PlanCache {
        PlanCache {
            dir,
            ttl_secs,
            threshold,
            seal,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn lookup(&self, key: &CacheKey) -> Lookup {
        self.lookup_at(key, now())
    }

    /// The entries of the cache directory: (path, is a sealed entry).
    fn files(&self) -> Vec<(PathBuf, bool)> {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        read.flatten()
            .map(|i| i.path())
            .filter_map(|p| match p.extension().and_then(|e| e.to_str()) {
                Some(EXT) => Some((p, true)),
                Some("json") => Some((p, false)),
                _ => None,
            })
            .collect()
    }

    fn open(&self, path: &Path) -> Option<Entry> {
        let sealed = std::fs::read(path).ok()?;
        let plain = self.seal.open(&sealed)?;
        serde_json::from_slice::<Entry>(&plain)
            .ok()
            .filter(|e| e.version == ENTRY_VERSION)
    }

    fn lookup_at(&self, key: &CacheKey, now: u64) -> Lookup {
        let mut expired = 0;
        let mut best: Option<(f64, Entry, String)> = None;
        for (path, sealed) in self.files() {
            // An entry in clear (the previous format) is never read.
            if !sealed {
                continue;
            }
            // An unreadable or foreign entry is just not a hit.
            let Some(entry) = self.open(&path) else {
                continue;
            };
            if now.saturating_sub(entry.created_at) > self.ttl_secs {
                expired += 1;
                let _ = std::fs::remove_file(&path);
                continue;
            }
            if entry.key.repo != key.repo || entry.key.settings != key.settings {
                continue;
            }
            let sim = if entry.key.request == key.request {
                1.0
            } else {
                similarity(&entry.key.request, &key.request)
            };
            if sim >= self.threshold && best.as_ref().is_none_or(|(s, _, _)| sim > *s) {
                let name = path
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_string();
                best = Some((sim, entry, name));
            }
        }
        match best {
            Some((similarity, entry, name)) => Lookup::Hit {
                age_secs: now.saturating_sub(entry.created_at),
                payload: entry.payload,
                entry: name,
                similarity,
            },
            None => Lookup::Miss { expired },
        }
    }

    /// Stores `payload` sealed, after removing the expired entries (expiry is
    /// enforced on every write).
    pub fn store(&self, key: &CacheKey, payload: &Value) -> Result<PathBuf, dandori_fs::FsError> {
        self.store_at(key, payload, now())
    }

    fn store_at(
        &self,
        key: &CacheKey,
        payload: &Value,
        now: u64,
    ) -> Result<PathBuf, dandori_fs::FsError> {
        self.sweep_at(now, usize::MAX);
        private_dir(&self.dir)?;
        let path = self.dir.join(format!("{}.{EXT}", key.digest()));
        let entry = Entry {
            version: ENTRY_VERSION,
            created_at: now,
            key: key.clone(),
            payload: payload.clone(),
        };
        let plain = serde_json::to_vec(&entry).unwrap_or_default();
        let sealed = self.seal.seal(&plain).ok_or_else(|| {
            dandori_fs::FsError::new(
                "sealing",
                &path,
                std::io::Error::other("no system randomness"),
            )
        })?;
        // write_atomic creates the file 0600.
        dandori_fs::write_atomic(&path, sealed)?;
        Ok(path)
    }

    /// Removes expired entries, entries that do not open with the user's key and
    /// entries kept in clear by an earlier version; looks at `limit` files at most.
    pub fn sweep(&self, limit: usize) -> Swept {
        self.sweep_at(now(), limit)
    }

    fn sweep_at(&self, now: u64, limit: usize) -> Swept {
        let mut swept = Swept::default();
        for (path, sealed) in self.files().into_iter().take(limit) {
            let why = if !sealed {
                &mut swept.clear_text
            } else {
                match self.open(&path) {
                    None => &mut swept.unreadable,
                    Some(e) if now.saturating_sub(e.created_at) > self.ttl_secs => {
                        &mut swept.expired
                    }
                    Some(_) => continue,
                }
            };
            if std::fs::remove_file(&path).is_ok() {
                *why += 1;
                swept.removed += 1;
            }
        }
        swept
    }

    /// Every entry, newest first.
    pub fn list(&self) -> Vec<Listed> {
        self.list_at(now())
    }

    fn list_at(&self, now: u64) -> Vec<Listed> {
        let mut out: Vec<Listed> = self
            .files()
            .into_iter()
            .map(|(path, _)| {
                let entry = self.open(&path);
                let created_at = entry.as_ref().map(|e| e.created_at);
                let age_secs = created_at.map(|c| now.saturating_sub(c));
                Listed {
                    entry: path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .unwrap_or_default()
                        .to_string(),
                    created_at,
                    age_secs,
                    expired: age_secs.is_none_or(|a| a > self.ttl_secs),
                    bytes: std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                    request: entry.as_ref().map(|e| {
                        e.key
                            .request
                            .split(' ')
                            .take(12)
                            .collect::<Vec<_>>()
                            .join(" ")
                    }),
                    planner: entry.as_ref().and_then(|e| {
                        e.payload
                            .get("planner")
                            .and_then(Value::as_str)
                            .map(str::to_string)
                    }),
                }
            })
            .collect();
        out.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(a.entry.cmp(&b.entry)));
        out
    }
}

/// Removes every entry of the cache in `dir` (sealed or not), whatever the key:
/// `dandori cache clear`. Returns how many were removed.
pub fn clear(dir: &Path) -> Result<usize, dandori_fs::FsError> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut removed = 0;
    for item in read.flatten() {
        let path = item.path();
        if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some(EXT | "json")
        ) {
            dandori_fs::remove_file(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

/// The directory of the plan cache for a repository and its configuration
/// (`planning.cache.dir`, default `.dandori/cache`, relative to the repository).
pub fn cache_dir(config: &dandori_config::CacheConfig, repo_root: &Path) -> PathBuf {
    let dir = match &config.dir {
        Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
        Some(d) => repo_root.join(d),
        None => repo_root.join(".dandori/cache"),
    };
    dir.join("plans")
}

/// `dir` created, mode 0700.
fn private_dir(dir: &Path) -> Result<(), dandori_fs::FsError> {
    use std::os::unix::fs::PermissionsExt;
    dandori_fs::create_dir_all(dir)?;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| dandori_fs::FsError::new("setting the mode of", dir, e))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn state() -> RepoState {
        RepoState {
            head: Some("abc".into()),
            dirty_hash: "d".into(),
        }
    }

    fn seal(data: &Path) -> Seal {
        let repo = tempfile::tempdir().unwrap();
        Seal::open_or_create(&data.join("cache.key"), repo.path()).unwrap()
    }

    #[test]
    fn sealed_at_rest_swept_listed_and_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let plans = dir.path().join("plans");
        let cache = PlanCache::new(plans.clone(), 100, 0.8, seal(data.path()));
        let key = CacheKey::new("add a verbose flag", state(), "llm:a".into());
        let path = cache
            .store_at(
                &key,
                &json!({"planner": "llm:a", "goal": "verbose flag"}),
                1000,
            )
            .unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&plans), 0o700);
        let bytes = std::fs::read(&path).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains("verbose"));
        // Another user's key (a copy of the repository elsewhere) reads nothing.
        let other = tempfile::tempdir().unwrap();
        let stranger = PlanCache::new(plans.clone(), 100, 0.8, seal(other.path()));
        assert_eq!(stranger.lookup_at(&key, 1001), Lookup::Miss { expired: 0 });
        // A listed entry, then expiry on write: a later store removes it.
        let listed = cache.list_at(1050);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].request.as_deref(), Some("add a verbose flag"));
        assert_eq!(listed[0].planner.as_deref(), Some("llm:a"));
        assert!(!listed[0].expired);
        std::fs::write(plans.join("old.json"), "{\"payload\": \"in clear\"}").unwrap();
        let other_key = CacheKey::new("rewrite the parser", state(), "llm:a".into());
        cache.store_at(&other_key, &json!({}), 1200).unwrap();
        assert!(!path.exists(), "the expired entry outlived a write");
        assert!(
            !plans.join("old.json").exists(),
            "an entry in clear was kept"
        );
        assert_eq!(cache.list_at(1200).len(), 1);
        // The sweep is bounded and removes what has expired.
        assert_eq!(cache.sweep_at(1200, 0), Swept::default());
        let swept = cache.sweep_at(1400, SWEEP_LIMIT);
        assert_eq!((swept.expired, swept.removed), (1, 1));
        cache.store_at(&key, &json!({}), 1400).unwrap();
        assert_eq!(clear(&plans).unwrap(), 1);
        assert!(cache.list_at(1400).is_empty());
    }

    #[test]
    fn exact_similar_expired_and_other_state() {
        let dir = tempfile::tempdir().unwrap();
        let data = tempfile::tempdir().unwrap();
        let cache = PlanCache::new(dir.path().join("plans"), 100, 0.8, seal(data.path()));
        let key = CacheKey::new(
            "Add a --verbose flag to the CLI, please.",
            state(),
            "llm:a".into(),
        );
        assert_eq!(cache.lookup_at(&key, 1000), Lookup::Miss { expired: 0 });
        cache.store_at(&key, &json!({"plan": 1}), 1000).unwrap();
        match cache.lookup_at(&key, 1050) {
            Lookup::Hit {
                payload,
                similarity,
                age_secs,
                ..
            } => {
                assert_eq!(payload, json!({"plan": 1}));
                assert_eq!(similarity, 1.0);
                assert_eq!(age_secs, 50);
            }
            other => panic!("{other:?}"),
        }
        // Same words, different punctuation and case: exact after normalisation.
        let same = CacheKey::new(
            "add a verbose flag to the cli please",
            state(),
            "llm:a".into(),
        );
        assert_eq!(same.digest(), key.digest());
        // Similar (8 of 9 tokens shared).
        let similar = CacheKey::new(
            "add a --verbose flag to the CLI please now",
            state(),
            "llm:a".into(),
        );
        assert!(
            matches!(cache.lookup_at(&similar, 1050), Lookup::Hit { similarity, .. } if similarity > 0.8 && similarity < 1.0)
        );
        // Unrelated request, other repository state, other settings: misses.
        let other = CacheKey::new("rewrite the parser", state(), "llm:a".into());
        assert_eq!(cache.lookup_at(&other, 1050), Lookup::Miss { expired: 0 });
        let moved = CacheKey::new(
            "add a verbose flag to the cli please",
            RepoState {
                head: Some("def".into()),
                dirty_hash: "d".into(),
            },
            "llm:a".into(),
        );
        assert_eq!(cache.lookup_at(&moved, 1050), Lookup::Miss { expired: 0 });
        let settings = CacheKey::new(
            "add a verbose flag to the cli please",
            state(),
            "llm:b".into(),
        );
        assert_eq!(
            cache.lookup_at(&settings, 1050),
            Lookup::Miss { expired: 0 }
        );
        // TTL.
        assert_eq!(cache.lookup_at(&key, 1101), Lookup::Miss { expired: 1 });
        assert_eq!(cache.lookup_at(&key, 1101), Lookup::Miss { expired: 0 });
    }

    #[test]
    fn repo_state_ignores_excluded_dirs() {
        let repo = dandori_test_support::TempGitRepo::with_files(&[("a.txt", "a\n")]);
        let exclude = vec![".dandori".to_string()];
        let before = RepoState::read(repo.path(), &exclude);
        repo.write(".dandori/runs/x/planning.json", "{}");
        assert_eq!(RepoState::read(repo.path(), &exclude), before);
        repo.write("a.txt", "changed\n");
        let dirty = RepoState::read(repo.path(), &exclude);
        assert_eq!(dirty.head, before.head);
        assert_ne!(dirty.dirty_hash, before.dirty_hash);
        repo.commit_all("change");
        assert_ne!(RepoState::read(repo.path(), &exclude).head, before.head);
    }
}
