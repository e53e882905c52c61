//! Plan cache (seed 000 §11.1.1): the key hashes the normalised request, the
//! repository state (HEAD commit + a hash of uncommitted changes) and the planner
//! settings; a lookup also accepts an entry for a *similar* request (token-set
//! Jaccard similarity ≥ `planning.cache.similarity_threshold`) made against the same
//! repository state and settings; entries older than `ttl` are dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

const ENTRY_VERSION: u32 = 1;

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

#[derive(Debug, Clone)]
pub struct PlanCache {
    dir: PathBuf,
    ttl_secs: u64,
    threshold: f64,
}

impl PlanCache {
    pub fn new(dir: PathBuf, ttl_secs: u64, threshold: f64) -> PlanCache {
        PlanCache {
            dir,
            ttl_secs,
            threshold,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn lookup(&self, key: &CacheKey) -> Lookup {
        self.lookup_at(key, now())
    }

    fn lookup_at(&self, key: &CacheKey, now: u64) -> Lookup {
        let mut expired = 0;
        let mut best: Option<(f64, Entry, String)> = None;
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return Lookup::Miss { expired };
        };
        for item in read.flatten() {
            let path = item.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            // An unreadable or foreign entry is just not a hit.
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(entry) = serde_json::from_str::<Entry>(&text) else {
                continue;
            };
            if entry.version != ENTRY_VERSION {
                continue;
            }
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

    pub fn store(&self, key: &CacheKey, payload: &Value) -> Result<PathBuf, dandori_fs::FsError> {
        self.store_at(key, payload, now())
    }

    fn store_at(
        &self,
        key: &CacheKey,
        payload: &Value,
        now: u64,
    ) -> Result<PathBuf, dandori_fs::FsError> {
        dandori_fs::create_dir_all(&self.dir)?;
        let path = self.dir.join(format!("{}.json", key.digest()));
        let entry = Entry {
            version: ENTRY_VERSION,
            created_at: now,
            key: key.clone(),
            payload: payload.clone(),
        };
        dandori_fs::write_json_atomic(&path, &entry)?;
        Ok(path)
    }
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

    #[test]
    fn exact_similar_expired_and_other_state() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PlanCache::new(dir.path().join("plans"), 100, 0.8);
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
