//! The repository's recent commit history as ranking evidence: how often each
//! file changed (code that changes often is where fixes land) and the words
//! of the commit subjects that changed it (a file whose past fixes were
//! described like the request — "autodoc: type hints …", "lambdify: …" — is
//! likely to be the site of this one; bug-localisation research calls this
//! the similarity to past reports). Read once per index with `git log`; a
//! tree without history (an export, a fresh `git init`) simply has none, and
//! the second stage's features for it are zero for every file.

use std::path::Path;

use rustc_hash::FxHashMap;

use super::tokenize::{TokenOptions, tokenize};

/// Commits read by default: enough to cover a few years of a busy project.
pub const HISTORY_COMMITS: usize = 3000;

/// A commit changing more files than this is a sweep (a rename, a
/// reformatting, a licence header): its subject says nothing about each file.
pub const SWEEP_FILES: usize = 20;

/// Per file path: how many of the read commits changed it, and the words of
/// their subjects (tokenised like request text).
#[derive(Debug, Default, Clone)]
pub struct History {
    files: FxHashMap<String, FileHistory>,
    commits: usize,
}

/// One file's history.
#[derive(Debug, Default, Clone)]
pub struct FileHistory {
    /// Commits (not sweeps) that changed the file.
    pub commits: u32,
    /// Subject words of those commits, repeated as often as they occur.
    pub words: Vec<Box<str>>,
}

/// Field and record separators of the `git log` format read by
/// [`History::parse`].
const RECORD: char = '\u{1}';

impl History {
    /// The last `max_commits` non-merge commits reachable from `rev` in the
    /// repository at `repo` (a work tree or a git directory). `Err` says why
    /// there is no history (not a git repository, unknown revision).
    pub fn read(repo: &Path, rev: &str, max_commits: usize) -> Result<History, String> {
        let out = dandori_exec::git::git_command(repo, dandori_exec::git::GlobalConfig::Ignore)
            .args([
                "log",
                "--no-merges",
                "--no-renames",
                "--relative",
                "--format=%x01%s",
                "--name-only",
            ])
            .arg(format!("--max-count={max_commits}"))
            .arg(rev)
            .arg("--")
            .output()
            .map_err(|e| format!("running git: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(History::parse(&String::from_utf8_lossy(&out.stdout)))
    }

    /// [`History::read`] of a work tree's top level only: a tree inside
    /// another project's repository (a test fixture, a vendored copy, an
    /// example directory) does not take that project's history, which
    /// describes other work and changes with every commit of it.
    pub fn read_work_tree(root: &Path, rev: &str, max_commits: usize) -> Result<History, String> {
        let out = dandori_exec::git::git_command(root, dandori_exec::git::GlobalConfig::Ignore)
            .args(["rev-parse", "--show-prefix"])
            .output()
            .map_err(|e| format!("running git: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let prefix = String::from_utf8_lossy(&out.stdout);
        if !prefix.trim().is_empty() {
            return Err(format!(
                "{} is the subdirectory {} of a git work tree, not its top level",
                root.display(),
                prefix.trim()
            ));
        }
        History::read(root, rev, max_commits)
    }

    /// Parses `git log --format=%x01%s --name-only` output.
    pub fn parse(log: &str) -> History {
        let mut history = History::default();
        for record in log.split(RECORD).skip(1) {
            let mut lines = record.lines();
            let subject = lines.next().unwrap_or("");
            let files: Vec<&str> = lines.map(str::trim).filter(|l| !l.is_empty()).collect();
            history.commits += 1;
            if files.is_empty() || files.len() > SWEEP_FILES {
                continue;
            }
            let mut words: Vec<Box<str>> = Vec::new();
            tokenize(subject, TokenOptions::TEXT, &mut |t| words.push(t.into()));
            for file in files {
                let entry = history.files.entry(file.to_string()).or_default();
                entry.commits += 1;
                entry.words.extend(words.iter().cloned());
            }
        }
        history
    }

    /// Commits read (sweeps included).
    pub fn commits(&self) -> usize {
        self.commits
    }

    /// The history of one path.
    pub fn file(&self, path: &str) -> Option<&FileHistory> {
        self.files.get(path)
    }

    /// Paths with any history.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// True when no file has history.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    pub(crate) fn files(&self) -> impl Iterator<Item = (&str, &FileHistory)> {
        self.files.iter().map(|(p, h)| (p.as_str(), h))
    }
}

/// The history attached to an index, by document: change counts and an
/// inverted index of subject words for BM25.
#[derive(Debug, Default)]
pub(crate) struct HistoryIndex {
    pub commits: Vec<u32>,
    pub len: Vec<u32>,
    pub avg_len: f32,
    /// Documents with any history.
    pub docs: f32,
    pub postings: FxHashMap<Box<str>, Vec<(u32, u32)>>,
}

impl HistoryIndex {
    pub(crate) fn build(history: &History, doc_of: &FxHashMap<&str, u32>, n_docs: usize) -> Self {
        let mut index = HistoryIndex {
            commits: vec![0; n_docs],
            len: vec![0; n_docs],
            ..HistoryIndex::default()
        };
        let mut total = 0u64;
        for (path, file) in history.files() {
            let Some(&doc) = doc_of.get(path) else {
                continue;
            };
            index.commits[doc as usize] = file.commits;
            index.len[doc as usize] = file.words.len() as u32;
            total += file.words.len() as u64;
            index.docs += 1.0;
            let mut tf: FxHashMap<&str, u32> = FxHashMap::default();
            for w in &file.words {
                *tf.entry(w).or_default() += 1;
            }
            for (w, n) in tf {
                index.postings.entry(w.into()).or_default().push((doc, n));
            }
        }
        index.avg_len = if index.docs > 0.0 {
            (total as f32 / index.docs).max(1.0)
        } else {
            1.0
        };
        index
    }

    /// BM25 (k1 1.2, b 0.75) of weighted terms against each document's
    /// subject words, for the documents `slot` maps to a candidate position.
    pub(crate) fn bm25(&self, terms: &[(String, f32)], slot: &FxHashMap<u32, usize>) -> Vec<f32> {
        let mut scores = vec![0f32; slot.len()];
        for (term, qw) in terms {
            let Some(list) = self.postings.get(term.as_str()) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = super::bm25_idf(self.docs, df);
            for &(doc, n) in list {
                let Some(&i) = slot.get(&doc) else {
                    continue;
                };
                let norm = 0.25 + 0.75 * self.len[doc as usize] as f32 / self.avg_len;
                let tf = n as f32 / norm;
                scores[i] += qw * idf * tf / (1.2 + tf);
            }
        }
        scores
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.commits.capacity() * 4
            + self.len.capacity() * 4
            + self
                .postings
                .iter()
                .map(|(k, v)| k.len() + 16 + 24 + v.capacity() * 8)
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_subjects_and_files_and_skips_sweeps() {
        let mut log = String::from(
            "\u{1}autodoc: fix type hints of properties\n\nsphinx/ext/autodoc/__init__.py\ntests/test_ext_autodoc.py\n\
             \u{1}Merge typehints for overloads\n\nsphinx/ext/autodoc/typehints.py\n\
             \u{1}Empty commit\n\n",
        );
        log.push_str("\u{1}Reformat everything\n\n");
        for i in 0..=SWEEP_FILES {
            log.push_str(&format!("f{i}.py\n"));
        }
        let h = History::parse(&log);
        assert_eq!(h.commits(), 4);
        let autodoc = h.file("sphinx/ext/autodoc/__init__.py").expect("history");
        assert_eq!(autodoc.commits, 1);
        assert!(autodoc.words.iter().any(|w| &**w == "autodoc"));
        assert!(autodoc.words.iter().any(|w| &**w == "hint"));
        assert_eq!(
            h.file("sphinx/ext/autodoc/typehints.py").map(|f| f.commits),
            Some(1)
        );
        assert!(h.file("f0.py").is_none(), "a sweep gives no history");
        assert_eq!(h.len(), 3);
    }
}
