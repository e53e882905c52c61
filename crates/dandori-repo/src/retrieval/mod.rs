//! Ranking files against a request: BM25F over three fields (path tokens,
//! defined names, contents) plus evidence the request text gives directly —
//! mentioned paths, dotted module paths, stack-trace frames and names that a
//! file defines. [`Bm25Baseline`] is plain BM25 over whole-file contents, kept
//! for comparison.

pub mod definitions;
pub mod history;
pub mod literals;
pub mod query;
pub mod rerank;
pub mod tokenize;

mod baseline;
mod snippets;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

pub use baseline::Bm25Baseline;
pub use query::{QueryAnalysis, QueryWeights, analyze, analyze_with};
pub use tokenize::{TokenOptions, tokenize, tokens};

use crate::scan::{FileEntry, RepoScan, language};

/// A ranked file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// Relative, `/`-separated.
    pub path: String,
    pub score: f32,
    pub is_test: bool,
    /// Best-matching regions, best first.
    pub snippets: Vec<Snippet>,
    /// Why the file ranks: `path mentioned`, `defines QuerySet`, `stack frame`, ….
    pub reasons: Vec<String>,
}

/// Lines `start_line..=end_line` (1-based) of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Snippet {
    pub start_line: usize,
    pub end_line: usize,
    pub text: String,
}

/// Index limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct IndexOptions {
    /// Bytes of a file read for indexing; the rest is not indexed.
    pub max_bytes_per_file: usize,
    /// Snippets per hit.
    pub snippets_per_hit: usize,
    /// Lines per snippet.
    pub snippet_lines: usize,
    /// Threads (0 = available parallelism).
    pub threads: usize,
    pub weights: RankingWeights,
}

impl Default for IndexOptions {
    fn default() -> Self {
        IndexOptions {
            max_bytes_per_file: 512 * 1024,
            snippets_per_hit: 2,
            snippet_lines: 8,
            threads: 0,
            weights: RankingWeights::default(),
        }
    }
}

/// Weights of the ranking. BM25F is normalised so the best file scores 1.0; the
/// evidence bonuses are added to that, the penalties multiply. Defaults tuned on
/// SWE-bench Verified (docs/retrieval.md).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RankingWeights {
    /// BM25F weight of the path, definitions and contents fields.
    pub field_weight: [f32; 3],
    /// BM25F length normalisation per field.
    pub field_b: [f32; 3],
    pub k1: f32,
    /// The request names the file's exact path.
    pub path_exact: f32,
    /// The request names a path the file's path ends with.
    pub path_suffix: f32,
    /// The request names the file by its name only (and few files share it).
    pub file_name: f32,
    /// A dotted module path in the request resolves to the file.
    pub module: f32,
    /// A stack frame of the request is in the file.
    pub frame: f32,
    /// Extra for the innermost in-repository frame.
    pub frame_innermost: f32,
    /// Each frame further out from the innermost in-repository one counts this
    /// much of the next inner one (1.0: all frames alike).
    pub frame_decay: f32,
    /// The path bonus a traceback frame's file also gets as a mentioned path
    /// (0: a frame counts as a frame only).
    pub frame_path_mention: f32,
    /// The file defines names the request mentions.
    pub definition: f32,
    /// How much a defined name's specificity counts: its evidence is scaled by
    /// (idf of the name over file contents / the highest idf) to this power
    /// (0: every name alike; names used all over the code say little).
    pub definition_specificity: f32,
    /// The file contains a message the request quotes (the code that emits it).
    pub message: f32,
    /// The request contains a string literal of the file (cut at its
    /// placeholders), the longest ones counting fully.
    pub literal: f32,
    /// Literal fragments found in more files than this say nothing.
    pub literal_max_files: f32,
    /// Test files, unless the request is about tests.
    pub test_penalty: f32,
    /// Files that are not code (docs, data, config).
    pub non_code_penalty: f32,
    /// Code in another language than the repository's main one.
    pub other_language_penalty: f32,
    /// Documentation, examples, benchmarks and vendored trees.
    pub auxiliary_dir_penalty: f32,
    /// Evidence from an exception class's name (`ProgrammingError`,
    /// `django.db.utils.OperationalError`) counts this much: where an error type
    /// is defined is rarely where the code that raised it is.
    pub exception_name: f32,
    /// A literal fragment's strength is scaled by (mean idf of its words / the
    /// highest idf) to this power: "does not exist" says less than
    /// "unit not convertible".
    pub literal_idf: f32,
    /// With n modules named, each counts (1/n) to this power (a config's list of
    /// extensions names many modules, none of them in particular).
    pub module_spread: f32,
    /// Names and modules the title mentions count this much more.
    pub title_evidence: f32,
    /// `Class.member` in the text (`Dataset.to_stacked_array`): a file that
    /// defines both names.
    pub member_pair: f32,
    /// A file that defines many of the request's generic names (a compatibility
    /// module redefining the library's common functions) gets the definition
    /// bonus of each name scaled down by how many common names it defines (0: off).
    pub definition_breadth: f32,
    /// The request is about how something is printed or rendered (`repr`,
    /// `str(`, "prints", "pretty", "latex output"): files whose path names a
    /// printer or renderer get this bonus (0: off).
    pub render_intent: f32,
    /// The caller of the innermost in-repository frame (and the module that
    /// produced the bad input) also gets this share of the innermost bonus.
    pub frame_caller: f32,
    /// Two-word prose (`data set`, `line plot`) meets the one-word file name it
    /// names (`dataset.py`) with this bonus (0: off).
    pub compound_words: f32,
    /// A frame path from another machine matches a project file by basename only
    /// under the repository's own top-level roots (1) or anywhere (0).
    pub frame_roots: f32,
    /// The second stage: the first stage's best [`rerank::RERANK_DEPTH`] files
    /// re-ordered by a linear model over their evidence, fitted offline (0: off).
    pub rerank: f32,
}

impl Default for RankingWeights {
    fn default() -> Self {
        RankingWeights {
            field_weight: [3.0, 2.0, 1.0],
            field_b: [0.3, 0.5, 0.9],
            k1: 2.0,
            path_exact: 1.5,
            path_suffix: 1.2,
            file_name: 0.6,
            module: 1.0,
            frame: 1.0,
            frame_innermost: 0.8,
            frame_decay: 0.5,
            frame_path_mention: 0.0,
            definition: 0.8,
            definition_specificity: 0.0,
            message: 1.0,
            literal: 2.0,
            literal_max_files: 8.0,
            test_penalty: 0.4,
            non_code_penalty: 0.6,
            other_language_penalty: 0.6,
            auxiliary_dir_penalty: 0.6,
            exception_name: 0.3,
            literal_idf: 1.0,
            module_spread: 0.5,
            title_evidence: 1.5,
            member_pair: 1.0,
            definition_breadth: 1.0,
            render_intent: 0.5,
            frame_caller: 0.0,
            compound_words: 0.0,
            frame_roots: 0.0,
            rerank: 1.0,
        }
    }
}

/// A file whose path names a printer or renderer (`printing/latex.py`,
/// `formatting_html.py`, `_repr.py`, `pretty.py`).
fn is_renderer_path(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [
        "print",
        "render",
        "repr",
        "pretty",
        "latex",
        "mathml",
        "formatting",
        "display",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// Fields of a document.
const PATH: usize = 0;
const DEFS: usize = 1;
const BODY: usize = 2;
const FIELDS: usize = 3;

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    tf: [u16; FIELDS],
}

#[derive(Debug, Clone)]
struct Doc {
    path: String,
    is_test: bool,
    is_code: bool,
    language: Option<String>,
    auxiliary: bool,
    /// A test, or data under a tests directory (fixtures, expected output).
    test_tree: bool,
    len: [u32; FIELDS],
}

/// The retrieval index over a scanned repository.
#[derive(Debug)]
pub struct Index {
    root: PathBuf,
    primary_language: Option<String>,
    options: IndexOptions,
    docs: Vec<Doc>,
    terms: FxHashMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
    avg_len: [f32; FIELDS],
    /// Lowercased defined name → (doc, 0-based line).
    defs: FxHashMap<Box<str>, Vec<(u32, u32)>>,
    /// Dotted module key suffixes (`models.query`, `db.models.query`, …) → docs.
    modules: FxHashMap<Box<str>, Vec<u32>>,
    /// Lowercased file name → docs.
    names: FxHashMap<Box<str>, Vec<u32>>,
    /// Two-word key → string-literal fragments of code files with their doc
    /// ([`literals`]).
    literals: FxHashMap<Box<str>, Vec<(Box<str>, u32)>>,
    /// Source doc → the test files mapped to it ([`RepoScan::test_map`]).
    tests_of: FxHashMap<u32, Vec<u32>>,
    /// The commit history, when one was attached ([`Index::set_history`]).
    history: Option<history::HistoryIndex>,
}

/// A document's id, field lengths, (lowercased name, line) definitions and
/// string-literal fragments.
type PartialDoc = (u32, [u32; FIELDS], Vec<(String, u32)>, Vec<String>);

/// Per-thread results of indexing a share of the files.
struct Partial {
    terms: FxHashMap<Box<str>, u32>,
    postings: Vec<Vec<Posting>>,
    docs: Vec<PartialDoc>,
}

/// BM25's inverse document frequency of a term in `df` of `n` documents.
pub(crate) fn bm25_idf(n: f32, df: f32) -> f32 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// Path → document id.
fn doc_ids(docs: &[Doc]) -> FxHashMap<&str, u32> {
    docs.iter()
        .enumerate()
        .map(|(i, d)| (d.path.as_str(), i as u32))
        .collect()
}

impl Index {
    /// Builds the index, reading the scanned text files (bounded per file).
    pub fn build(scan: &RepoScan) -> Index {
        Index::build_with(scan, &IndexOptions::default())
    }

    /// [`Index::build`] with explicit limits.
    pub fn build_with(scan: &RepoScan, options: &IndexOptions) -> Index {
        let files: Vec<&FileEntry> = scan.files.iter().filter(|f| !f.is_binary).collect();
        let threads = if options.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            options.threads
        }
        .clamp(1, 16);
        let next = AtomicUsize::new(0);
        let partials: Vec<Partial> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| index_share(&scan.root, &files, &next, options.max_bytes_per_file))
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });

        let mut docs: Vec<Doc> = files
            .iter()
            .map(|f| Doc {
                path: f.path.clone(),
                is_test: f.is_test,
                is_code: f
                    .language
                    .as_deref()
                    .is_some_and(language::is_code_language),
                language: f.language.clone(),
                auxiliary: is_auxiliary_path(&f.path),
                test_tree: f.is_test
                    || f.path.split('/').rev().skip(1).any(|d| {
                        matches!(
                            d,
                            "tests" | "testing" | "__tests__" | "fixtures" | "testdata"
                        )
                    }),
                len: [0; FIELDS],
            })
            .collect();
        let mut terms: FxHashMap<Box<str>, u32> = FxHashMap::default();
        let mut postings: Vec<Vec<Posting>> = Vec::new();
        let mut defs: FxHashMap<Box<str>, Vec<(u32, u32)>> = FxHashMap::default();
        let mut lits: FxHashMap<Box<str>, Vec<(Box<str>, u32)>> = FxHashMap::default();
        for partial in partials {
            let mut remap = vec![0u32; partial.postings.len()];
            for (term, local) in partial.terms {
                let next_id = u32::try_from(postings.len()).unwrap_or(u32::MAX);
                let id = *terms.entry(term).or_insert_with(|| {
                    postings.push(Vec::new());
                    next_id
                });
                remap[local as usize] = id;
            }
            for (local, list) in partial.postings.into_iter().enumerate() {
                if let Some(p) = postings.get_mut(remap[local] as usize) {
                    if p.is_empty() {
                        *p = list;
                    } else {
                        p.extend(list);
                    }
                }
            }
            for (doc, len, doc_defs, doc_lits) in partial.docs {
                if let Some(d) = docs.get_mut(doc as usize) {
                    d.len = len;
                }
                for fragment in doc_lits {
                    if let Some(key) = literals::key_of(&fragment) {
                        lits.entry(key.into_boxed_str())
                            .or_default()
                            .push((fragment.into_boxed_str(), doc));
                    }
                }
                for (name, line) in doc_defs {
                    defs.entry(name.into_boxed_str())
                        .or_default()
                        .push((doc, line));
                }
            }
        }
        // Posting lists grew by doubling: give the slack back.
        for p in &mut postings {
            p.shrink_to_fit();
        }
        let n = docs.len().max(1) as f32;
        let mut avg_len = [0f32; FIELDS];
        for d in &docs {
            for (f, avg) in avg_len.iter_mut().enumerate() {
                *avg += d.len[f] as f32;
            }
        }
        for a in &mut avg_len {
            *a = (*a / n).max(1.0);
        }

        let mut modules: FxHashMap<Box<str>, Vec<u32>> = FxHashMap::default();
        let mut names: FxHashMap<Box<str>, Vec<u32>> = FxHashMap::default();
        for (i, d) in docs.iter().enumerate() {
            let i = i as u32;
            let name = d.path.rsplit('/').next().unwrap_or(&d.path);
            names
                .entry(name.to_lowercase().into_boxed_str())
                .or_default()
                .push(i);
            for key in module_keys(&d.path) {
                modules.entry(key.into_boxed_str()).or_default().push(i);
            }
        }
        let doc_of = doc_ids(&docs);
        let mut tests_of: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        for mapping in &scan.test_map {
            let Some(&test) = doc_of.get(mapping.test.as_str()) else {
                continue;
            };
            for source in &mapping.sources {
                if let Some(&src) = doc_of.get(source.as_str()) {
                    tests_of.entry(src).or_default().push(test);
                }
            }
        }
        Index {
            tests_of,
            history: None,
            primary_language: scan.summary.primary_language.clone(),
            root: scan.root.clone(),
            options: options.clone(),
            docs,
            terms,
            postings,
            avg_len,
            defs,
            modules,
            names,
            literals: lits,
        }
    }

    /// Attaches the repository's commit history ([`history::History::read`]):
    /// how often each file changed and the subjects of those commits are
    /// evidence for the second stage. Without it those features are zero.
    pub fn set_history(&mut self, history: &history::History) {
        let doc_of = doc_ids(&self.docs);
        self.history = Some(history::HistoryIndex::build(
            history,
            &doc_of,
            self.docs.len(),
        ));
    }

    /// Reads the commit history of the indexed tree (`git log` from `HEAD`,
    /// [`history::HISTORY_COMMITS`] commits) and attaches it; a tree that is
    /// not the top level of a git work tree keeps none
    /// ([`history::History::read_work_tree`]). Returns whether history was
    /// attached.
    pub fn attach_git_history(&mut self) -> bool {
        match history::History::read_work_tree(&self.root, "HEAD", history::HISTORY_COMMITS) {
            Ok(h) if !h.is_empty() => {
                self.set_history(&h);
                true
            }
            _ => false,
        }
    }

    /// Replaces the ranking weights (for tuning; the index itself is unchanged).
    pub fn set_weights(&mut self, weights: RankingWeights) {
        self.options.weights = weights;
    }

    /// Number of indexed files.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// True when no file was indexed.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Approximate heap bytes held by the index.
    pub fn heap_bytes(&self) -> usize {
        let postings: usize = self
            .postings
            .iter()
            .map(|p| p.capacity() * std::mem::size_of::<Posting>() + 24)
            .sum();
        let terms: usize = self.terms.keys().map(|k| k.len() + 16 + 8).sum();
        let docs: usize = self
            .docs
            .iter()
            .map(|d| d.path.capacity() + std::mem::size_of::<Doc>())
            .sum();
        let defs: usize = self
            .defs
            .iter()
            .map(|(k, v)| k.len() + 16 + 24 + v.capacity() * 8)
            .sum();
        let paths: usize = self
            .modules
            .iter()
            .chain(self.names.iter())
            .map(|(k, v)| k.len() + 16 + 24 + v.capacity() * 4)
            .sum();
        let lits: usize = self
            .literals
            .iter()
            .map(|(k, v)| k.len() + 40 + v.iter().map(|(f, _)| f.len() + 24).sum::<usize>())
            .sum();
        let history = self
            .history
            .as_ref()
            .map_or(0, history::HistoryIndex::heap_bytes);
        postings + terms + docs + defs + paths + lits + history
    }

    /// The `k` files most relevant to `query` (a request or an issue text).
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        let analysis = analyze(query);
        self.search_analyzed(&analysis, k)
    }

    /// [`Index::search`] over an already analysed query.
    pub fn search_analyzed(&self, q: &QueryAnalysis, k: usize) -> Vec<Hit> {
        if self.docs.is_empty() || k == 0 {
            return Vec::new();
        }
        let mut stage = self.first_stage(q);
        let mut order = self.first_order(&stage.scores);
        let scores =
            if self.options.weights.rerank > 0.0 && self.docs.len() >= rerank::RERANK_MIN_FILES {
                rerank::rerank(self, q, &stage, &mut order)
            } else {
                stage.scores.clone()
            };
        order.truncate(k);
        order
            .into_iter()
            .map(|doc| {
                let d = &self.docs[doc as usize];
                let doc_defs: Vec<u32> = q
                    .identifiers
                    .iter()
                    .filter_map(|ident| self.defs.get(ident.to_lowercase().as_str()))
                    .flatten()
                    .filter(|(dd, _)| *dd == doc)
                    .map(|(_, line)| *line)
                    .collect();
                Hit {
                    path: d.path.clone(),
                    score: scores[doc as usize],
                    is_test: d.is_test,
                    snippets: snippets::best_snippets(self, &d.path, q, &doc_defs),
                    reasons: stage.reasons.remove(&doc).unwrap_or_default(),
                }
            })
            .collect()
    }

    /// The re-ranker's features ([`rerank::FEATURE_NAMES`]) of the first
    /// stage's best `n` files, in first-stage order: what the re-ranker's
    /// weights are fitted on (docs/retrieval.md).
    pub fn rank_features(&self, q: &QueryAnalysis, n: usize) -> Vec<(String, Vec<f32>)> {
        if self.docs.is_empty() || n == 0 {
            return Vec::new();
        }
        let stage = self.first_stage(q);
        let mut order = self.first_order(&stage.scores);
        order.truncate(n);
        let feats = rerank::features(self, q, &stage, &order, true);
        order
            .iter()
            .zip(feats)
            .map(|(&doc, f)| (self.docs[doc as usize].path.clone(), f.to_vec()))
            .collect()
    }

    /// Files with a positive first-stage score, best first.
    fn first_order(&self, scores: &[f32]) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.docs.len() as u32)
            .filter(|&i| scores[i as usize] > 0.0)
            .collect();
        order.sort_by(|&a, &b| {
            scores[b as usize]
                .total_cmp(&scores[a as usize])
                .then_with(|| self.docs[a as usize].path.cmp(&self.docs[b as usize].path))
        });
        order
    }

    /// The first stage: BM25F normalised to 1.0 at the best file, the evidence
    /// bonuses added, the penalties multiplied; with the evidence per file that
    /// the second stage reads.
    fn first_stage(&self, q: &QueryAnalysis) -> rerank::FirstStage {
        let w = &self.options.weights;
        let mut scores = self.bm25f(&q.terms);
        let max = scores.iter().copied().fold(0f32, f32::max);
        if max > 0.0 {
            for s in &mut scores {
                *s /= max;
            }
        }
        let bm25 = scores.clone();
        let mut reasons: FxHashMap<u32, Vec<String>> = FxHashMap::default();
        let mut evidence: FxHashMap<u32, rerank::Evidence> = FxHashMap::default();
        let mut bonus = |doc: u32, kind: usize, amount: f32, why: String, scores: &mut [f32]| {
            if let Some(s) = scores.get_mut(doc as usize) {
                *s += amount;
                evidence.entry(doc).or_default().0[kind] += amount;
                let r = reasons.entry(doc).or_default();
                if !why.is_empty() && !r.contains(&why) {
                    r.push(why);
                }
            }
        };

        // Mentioned paths (a traceback frame's file is weighed as a frame below).
        for p in &q.paths {
            let scale = if q.frames.iter().any(|(f, _)| f.ends_with(p.as_str())) {
                w.frame_path_mention
            } else {
                1.0
            };
            if scale <= 0.0 {
                continue;
            }
            // A path from the reporter's machine names a project file only as a
            // frame path does: by a suffix of at least two components.
            let found = if w.frame_roots > 0.0 && p.starts_with('/') {
                self.resolve_frame(p)
                    .map(|d| (d, false))
                    .into_iter()
                    .collect()
            } else {
                self.resolve_path(p)
            };
            for (doc, exact) in found {
                let amount = if exact {
                    w.path_exact
                } else if p.contains('/') {
                    w.path_suffix
                } else {
                    w.file_name
                };
                bonus(
                    doc,
                    rerank::E_PATH,
                    amount * scale,
                    format!("mentions {p}"),
                    &mut scores,
                );
            }
        }
        // Dotted module paths: the longest prefix that names a file; a module
        // named several times (`pkg.mod`, `from pkg.mod import a, b`) counts once,
        // and a text naming many modules (a config's extension list) names none
        // of them in particular.
        let mut seen_modules: Vec<String> = Vec::new();
        let mut resolved = Vec::new();
        for m in &q.modules {
            if let Some((doc_ids, key)) = self.resolve_module(m)
                && !seen_modules.contains(&key)
            {
                seen_modules.push(key.clone());
                resolved.push((m, doc_ids, key));
            }
        }
        let spread = (1.0 / resolved.len().max(1) as f32).powf(w.module_spread);
        for (m, doc_ids, key) in resolved {
            let mut weight = spread * w.module / doc_ids.len() as f32;
            if m.rsplit('.').next().is_some_and(is_exception_name) {
                weight *= w.exception_name;
            }
            if contains_word(&q.title, m) {
                weight *= w.title_evidence;
            }
            for doc in doc_ids {
                bonus(
                    doc,
                    rerank::E_MODULE,
                    weight,
                    format!("module {key}"),
                    &mut scores,
                );
            }
        }
        // Stack frames inside the repository, the innermost weighing more.
        let in_repo: Vec<(u32, Option<&String>)> = q
            .frames
            .iter()
            .filter_map(|(p, func)| self.resolve_frame(p).map(|d| (d, func.as_ref())))
            .collect();
        let last = in_repo.len().saturating_sub(1);
        let mut frame_flags: Vec<(u32, usize)> = Vec::new();
        for (i, (doc, func)) in in_repo.iter().enumerate() {
            let mut amount = w.frame * w.frame_decay.powi((last - i) as i32);
            if i == last {
                amount += w.frame_innermost;
            } else if i + 1 == last {
                // The caller decides what the innermost frame was given.
                amount += w.frame_innermost * w.frame_caller;
            }
            let why = match func {
                Some(f) => format!("stack frame in {f}"),
                None => "stack frame".to_string(),
            };
            bonus(*doc, rerank::E_FRAME, amount, why, &mut scores);
            if i == last {
                frame_flags.push((*doc, rerank::E_INNERMOST));
            } else if i + 1 == last {
                frame_flags.push((*doc, rerank::E_CALLER));
            }
        }
        // Quoted messages: the files whose text contains the longest literal
        // fragment of the message (placeholders and numbers cut it apart).
        for msg in q.messages.iter().take(8) {
            let Some(fragment) = message_fragment(msg) else {
                continue;
            };
            for doc in self.files_containing(&fragment) {
                bonus(
                    doc,
                    rerank::E_MESSAGE,
                    w.message,
                    format!("contains \"{}\"", truncate(&fragment, 40)),
                    &mut scores,
                );
            }
        }
        // String literals of code files that the request contains verbatim (an
        // error or warning message, whatever values its placeholders took).
        if w.literal > 0.0 {
            for (doc, amount, fragment) in self.literal_matches(q) {
                bonus(
                    doc,
                    rerank::E_LITERAL,
                    w.literal * amount,
                    format!("emits \"{}\"", truncate(&fragment, 40)),
                    &mut scores,
                );
            }
        }
        // `Class.member`: the files that define both.
        if w.member_pair > 0.0 {
            let mut seen: Vec<(u32, &str)> = Vec::new();
            for m in &q.modules {
                let mut parts = m.split('.');
                let (Some(class), Some(member)) = (parts.next(), parts.next()) else {
                    continue;
                };
                if !class.chars().next().is_some_and(char::is_uppercase) || member.len() < 3 {
                    continue;
                }
                let (Some(a), Some(b)) = (
                    self.defs.get(class.to_lowercase().as_str()),
                    self.defs.get(member.to_lowercase().trim_matches('_')),
                ) else {
                    continue;
                };
                let both: Vec<u32> = a
                    .iter()
                    .map(|x| x.0)
                    .filter(|d| b.iter().any(|y| y.0 == *d))
                    .collect();
                if both.is_empty() || both.len() > 5 {
                    continue;
                }
                let share = 1.0 / both.len() as f32;
                for doc in both {
                    if seen.contains(&(doc, m.as_str())) {
                        continue;
                    }
                    seen.push((doc, m.as_str()));
                    bonus(
                        doc,
                        rerank::E_MEMBER,
                        w.member_pair * share,
                        format!("defines {class}.{member}"),
                        &mut scores,
                    );
                }
            }
        }
        // Two prose words naming a one-word file (`data set` → `dataset.py`).
        if w.compound_words > 0.0 {
            for c in &q.compounds {
                let docs: Vec<u32> = self
                    .names
                    .iter()
                    .filter(|(name, _)| name.split('.').next() == Some(c.as_str()))
                    .flat_map(|(_, d)| d.iter().copied())
                    .collect();
                if docs.is_empty() || docs.len() > 3 {
                    continue;
                }
                for doc in docs {
                    bonus(
                        doc,
                        rerank::E_PATH,
                        w.file_name * w.compound_words,
                        format!("names {c}"),
                        &mut scores,
                    );
                }
            }
        }
        // Definitions of mentioned names; a rarely defined name is stronger evidence.
        let mut def_bonus: FxHashMap<u32, f32> = FxHashMap::default();
        // Per file: the evidence of generic names (defined in several files) and
        // how many of them it defines.
        let mut generic: FxHashMap<u32, (f32, u32)> = FxHashMap::default();
        let top_idf = self.top_idf();
        for ident in &q.identifiers {
            let key = ident.to_lowercase();
            let Some(sites) = self.defs.get(key.as_str()) else {
                continue;
            };
            let mut docs_defining: Vec<u32> = sites.iter().map(|s| s.0).collect();
            docs_defining.dedup();
            let spread = docs_defining.len() as f32;
            let mut strength = 1.0 / (1.0 + spread.ln());
            if is_exception_name(ident) {
                strength *= w.exception_name;
            }
            if contains_word(&q.title, ident) {
                strength *= w.title_evidence;
            }
            if w.definition_specificity > 0.0 {
                // A name the whole code base uses (`format`, `execute`) says less
                // about where the change goes than one a few files use.
                let idf = self.idf(key.trim_matches('_')).unwrap_or(top_idf);
                strength *= (idf / top_idf)
                    .clamp(0.05, 1.0)
                    .powf(w.definition_specificity);
            }
            let class_like = ident.chars().next().is_some_and(char::is_uppercase);
            let strength = if class_like { strength * 1.2 } else { strength };
            let in_title = contains_word(&q.title, ident);
            for doc in docs_defining {
                let e = &mut evidence.entry(doc).or_default().0;
                e[if spread >= 3.0 {
                    rerank::E_DEF_GENERIC
                } else {
                    rerank::E_DEF_RARE
                }] += 1.0;
                if in_title {
                    e[rerank::E_DEF_TITLE] = 1.0;
                }
                if w.definition_breadth > 0.0 && spread >= 3.0 {
                    let g = generic.entry(doc).or_default();
                    g.0 += strength;
                    g.1 += 1;
                } else {
                    *def_bonus.entry(doc).or_default() += strength;
                }
                let r = reasons.entry(doc).or_default();
                let why = format!("defines {ident}");
                if r.len() < 6 && !r.contains(&why) {
                    r.push(why);
                }
            }
        }
        // A file defining many of the request's generic names (a compatibility
        // module, a test helper wrapping the file system) is not where each of
        // them is at home: their evidence shrinks with their number.
        for (doc, (b, n)) in generic {
            *def_bonus.entry(doc).or_default() +=
                b * (1.0 + n as f32).powf(-w.definition_breadth) * 2f32.powf(w.definition_breadth);
        }
        for (doc, b) in def_bonus {
            if let Some(s) = scores.get_mut(doc as usize) {
                // Diminishing returns for files that define many mentioned names.
                let amount = w.definition * (1.0 + b).ln() / std::f32::consts::LN_2;
                *s += amount;
                evidence.entry(doc).or_default().0[rerank::E_DEF] += amount;
            }
        }
        for (doc, kind) in frame_flags {
            evidence.entry(doc).or_default().0[kind] = 1.0;
        }
        // Tests, docs, examples and vendored code rarely are what a request about
        // behaviour needs changed.
        for (i, d) in self.docs.iter().enumerate() {
            if q.about_rendering && w.render_intent > 0.0 && is_renderer_path(&d.path) {
                scores[i] *= 1.0 + w.render_intent;
            }
            if d.test_tree && !q.about_tests {
                scores[i] *= w.test_penalty;
            }
            if !d.is_code {
                if !q.about_docs {
                    scores[i] *= w.non_code_penalty;
                }
            } else if self.primary_language.is_some() && d.language != self.primary_language {
                scores[i] *= w.other_language_penalty;
            }
            if d.auxiliary && !q.about_docs {
                scores[i] *= w.auxiliary_dir_penalty;
            }
        }
        rerank::FirstStage {
            scores,
            bm25,
            evidence,
            reasons,
        }
    }

    /// BM25F's length normalisation of field `f` of `doc`: its length against
    /// the field's average, by `field_b`.
    pub(crate) fn field_norm(&self, doc: u32, f: usize) -> f32 {
        let b = self.options.weights.field_b[f];
        1.0 - b + b * self.docs[doc as usize].len[f] as f32 / self.avg_len[f]
    }

    fn bm25f(&self, terms: &[(String, f32)]) -> Vec<f32> {
        let w = &self.options.weights;
        let n = self.docs.len() as f32;
        let mut scores = vec![0f32; self.docs.len()];
        for (term, qw) in terms {
            let Some(&id) = self.terms.get(term.as_str()) else {
                continue;
            };
            let list = &self.postings[id as usize];
            let df = list.len() as f32;
            let idf = bm25_idf(n, df);
            for p in list {
                let mut tf = 0f32;
                for f in 0..FIELDS {
                    if p.tf[f] > 0 {
                        tf += w.field_weight[f] * p.tf[f] as f32 / self.field_norm(p.doc, f);
                    }
                }
                scores[p.doc as usize] += qw * idf * tf / (w.k1 + tf);
            }
        }
        scores
    }

    /// Docs whose text contains `fragment` (case-sensitive): candidates from the
    /// postings of the fragment's rarest words, then each candidate read and checked.
    /// None when the fragment is too common to say anything (more than 30 files).
    fn files_containing(&self, fragment: &str) -> Vec<u32> {
        let mut words: Vec<(usize, u32)> = Vec::new();
        tokenize::tokenize(fragment, tokenize::TokenOptions::TEXT, &mut |t| {
            if let Some(&id) = self.terms.get(t)
                && !words.iter().any(|(_, x)| *x == id)
            {
                words.push((self.postings[id as usize].len(), id));
            }
        });
        if words.is_empty() {
            return Vec::new();
        }
        words.sort_unstable();
        let mut candidates: Vec<u32> = self.postings[words[0].1 as usize]
            .iter()
            .filter(|p| p.tf[BODY] > 0)
            .map(|p| p.doc)
            .collect();
        for (_, id) in words.iter().skip(1).take(3) {
            let list = &self.postings[*id as usize];
            candidates.retain(|d| list.iter().any(|p| p.doc == *d && p.tf[BODY] > 0));
        }
        if candidates.len() > 30 {
            return Vec::new();
        }
        let mut buf = Vec::new();
        candidates
            .into_iter()
            .filter(|&d| {
                let path = self.root.join(&self.docs[d as usize].path);
                buf.clear();
                read_bounded(&path, self.options.max_bytes_per_file, &mut buf)
                    && String::from_utf8_lossy(&buf).contains(fragment)
            })
            .collect()
    }

    /// Code files whose string literals the request contains, with a strength in
    /// (0, 1] (longer and rarer fragments are stronger; a file's best fragment
    /// counts fully, further ones a quarter) and the best fragment.
    fn literal_matches(&self, q: &QueryAnalysis) -> Vec<(u32, f32, String)> {
        let max_files = self.options.weights.literal_max_files.max(1.0) as usize;
        // Fragment → docs, for the fragments the text contains.
        let mut found: FxHashMap<&str, Vec<u32>> = FxHashMap::default();
        for (at, key) in &q.literal_keys {
            let Some(cands) = self.literals.get(key.as_str()) else {
                continue;
            };
            let rest = &q.normalised[*at..];
            for (fragment, doc) in cands {
                // The fragment must end at a word boundary of the text.
                if rest.starts_with(&**fragment)
                    && rest[fragment.len()..]
                        .chars()
                        .next()
                        .is_none_or(|c| !c.is_alphanumeric())
                {
                    let docs = found.entry(fragment).or_default();
                    if !docs.contains(doc) {
                        docs.push(*doc);
                    }
                }
            }
        }
        // A fragment inside a longer found fragment of the same file adds nothing.
        let mut per_doc: FxHashMap<u32, Vec<(f32, &str)>> = FxHashMap::default();
        for (fragment, docs) in &found {
            if docs.len() > max_files {
                continue;
            }
            let words = fragment.split(' ').count() as f32;
            let length = ((words - 1.0) / 4.0).clamp(0.25, 1.0);
            let mut rarity = 1.0 / (docs.len() as f32).sqrt();
            if self.options.weights.literal_idf > 0.0 {
                rarity *= self
                    .informativeness(fragment)
                    .powf(self.options.weights.literal_idf);
            }
            for &doc in docs {
                per_doc
                    .entry(doc)
                    .or_default()
                    .push((length * rarity, fragment));
            }
        }
        let mut out = Vec::new();
        for (doc, mut list) in per_doc {
            list.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.len().cmp(&a.1.len())));
            let best = list[0];
            let mut strength = best.0;
            for (s, f) in list.iter().skip(1) {
                if !best.1.contains(*f) {
                    strength += 0.25 * s;
                }
            }
            out.push((doc, strength.min(1.5), best.1.to_string()));
        }
        out
    }

    /// Mean idf of the words of a text relative to the highest idf (0..=1);
    /// stopwords and unindexed words count as the most common.
    fn informativeness(&self, text: &str) -> f32 {
        let top = self.top_idf();
        let mut sum = 0f32;
        let mut n = 0usize;
        for word in text.split(' ') {
            n += 1;
            let mut best = 0f32;
            tokenize::tokenize(word, tokenize::TokenOptions::TEXT, &mut |t| {
                if let Some(idf) = self.idf(t) {
                    best = best.max(idf);
                }
            });
            sum += (best / top).min(1.0);
        }
        if n == 0 { 0.0 } else { sum / n as f32 }
    }

    /// The highest inverse document frequency (a token of one file).
    fn top_idf(&self) -> f32 {
        let n = self.docs.len() as f32;
        (1.0 + (n - 0.5) / 1.5).ln().max(f32::EPSILON)
    }

    /// Inverse document frequency of a token, if indexed.
    pub(crate) fn idf(&self, term: &str) -> Option<f32> {
        let id = *self.terms.get(term)?;
        let df = self.postings[id as usize].len() as f32;
        let n = self.docs.len() as f32;
        Some(bm25_idf(n, df))
    }

    /// Docs a mentioned path names: exact, as a path suffix, or by file name
    /// (only when the name is nearly unique). The flag is true for exact matches.
    fn resolve_path(&self, mention: &str) -> Vec<(u32, bool)> {
        let mention = mention.trim_start_matches('/');
        if let Ok(i) = self.docs.binary_search_by(|d| d.path.as_str().cmp(mention)) {
            return vec![(i as u32, true)];
        }
        let name = mention.rsplit('/').next().unwrap_or(mention).to_lowercase();
        let Some(cands) = self.names.get(name.as_str()) else {
            // A directory mention: nothing to boost file by file.
            return Vec::new();
        };
        if mention.contains('/') {
            let suffix = format!("/{mention}");
            let by_suffix: Vec<(u32, bool)> = cands
                .iter()
                .filter(|&&c| self.docs[c as usize].path.ends_with(&suffix))
                .map(|&c| (c, false))
                .collect();
            if !by_suffix.is_empty() {
                return by_suffix;
            }
        }
        if cands.len() <= 3 {
            cands.iter().map(|&c| (c, false)).collect()
        } else {
            Vec::new()
        }
    }

    /// A stack-frame path (often absolute, from another machine) inside the repo:
    /// the longest suffix of it that is a repository path.
    /// A frame of the reporter's own script (`/home/me/repro.py`) does not name
    /// a repository file that happens to share its bare name: at least two
    /// components must match unless the frame path is a bare relative name. An
    /// installed package (`site-packages/pkg/mod.py`) maps to a `src/pkg/mod.py`
    /// layout by path suffix.
    fn resolve_frame(&self, path: &str) -> Option<u32> {
        let parts: Vec<&str> = path
            .split('/')
            .filter(|s| !s.is_empty() && *s != "." && *s != "..")
            .collect();
        let min_parts = if parts.len() == 1 && !path.starts_with('/') {
            1
        } else {
            2
        };
        for start in 0..=parts.len().saturating_sub(min_parts) {
            let candidate = parts[start..].join("/");
            if let Ok(i) = self
                .docs
                .binary_search_by(|d| d.path.as_str().cmp(candidate.as_str()))
            {
                return Some(i as u32);
            }
            if parts.len() - start >= 2 {
                let name = parts[parts.len() - 1].to_lowercase();
                let suffix = format!("/{candidate}");
                let mut found = self
                    .names
                    .get(name.as_str())
                    .into_iter()
                    .flatten()
                    .filter(|&&c| self.docs[c as usize].path.ends_with(&suffix));
                if let (Some(&doc), None) = (found.next(), found.next()) {
                    return Some(doc);
                }
            }
        }
        None
    }

    fn resolve_module(&self, dotted: &str) -> Option<(Vec<u32>, String)> {
        let parts: Vec<&str> = dotted.split('.').collect();
        for end in (2..=parts.len()).rev() {
            let key = parts[..end].join(".").to_lowercase();
            if let Some(docs) = self.modules.get(key.as_str())
                && docs.len() <= 3
            {
                return Some((docs.clone(), key));
            }
        }
        None
    }

    pub(crate) fn root(&self) -> &std::path::Path {
        &self.root
    }

    pub(crate) fn options(&self) -> &IndexOptions {
        &self.options
    }
}

/// Whether `text` contains `word` not glued to other identifier characters.
fn contains_word(text: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(word).any(|(i, _)| {
        !text[..i].chars().next_back().is_some_and(ident)
            && !text[i + word.len()..].chars().next().is_some_and(ident)
    })
}

/// `ValueError`, `ProgrammingError`, `UserWarning`, `MyException`: an
/// exception or warning class name.
fn is_exception_name(name: &str) -> bool {
    name.len() > 5
        && name.chars().next().is_some_and(char::is_uppercase)
        && ["Error", "Exception", "Warning"]
            .iter()
            .any(|s| name.ends_with(s))
}

/// Documentation, examples, benchmarks and vendored trees.
/// The longest run of a message that code would hold literally: the message cut
/// at quotes, backticks, braces, numbers and the like, at least 12 characters and
/// two words; None when nothing that long is left.
fn message_fragment(msg: &str) -> Option<String> {
    msg.split(|c: char| {
        c.is_ascii_digit()
            || matches!(
                c,
                '"' | '\'' | '`' | '{' | '}' | '[' | ']' | '<' | '>' | '(' | ')' | '%'
            )
    })
    .map(|f| {
        f.trim_matches(|c: char| c.is_whitespace() || matches!(c, ':' | ',' | '.' | '=' | '-'))
    })
    .filter(|f| f.len() >= 12 && f.split_whitespace().count() >= 2)
    .max_by_key(|f| f.len())
    .map(str::to_string)
}

fn truncate(s: &str, n: usize) -> String {
    match s.char_indices().nth(n) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn is_auxiliary_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name.contains(".min.")
        || path.split('/').rev().skip(1).any(|d| {
            matches!(
                d,
                "doc"
                    | "docs"
                    | "example"
                    | "examples"
                    | "benchmarks"
                    | "bench"
                    | "asv_bench"
                    | "vendor"
                    | "vendored"
                    | "_vendor"
                    | "third_party"
                    | "thirdparty"
                    | "extern"
                    | "external"
                    | "site-packages"
            )
        })
}

/// Dotted keys under which a file can be named as a module: `a/b/c.py` →
/// `a.b.c`, `b.c`; `a/b/__init__.py` → `a.b`; `src/` prefixes dropped. Only keys
/// of two or more components.
fn module_keys(path: &str) -> Vec<String> {
    let Some((stem_path, _ext)) = path.rsplit_once('.') else {
        return Vec::new();
    };
    if stem_path.contains('.') {
        return Vec::new();
    }
    let stem_path = stem_path
        .strip_suffix("/__init__")
        .or_else(|| stem_path.strip_suffix("/index"))
        .or_else(|| stem_path.strip_suffix("/mod"))
        .unwrap_or(stem_path);
    let parts: Vec<&str> = stem_path.split('/').collect();
    let mut keys = Vec::new();
    for start in 0..parts.len().saturating_sub(1) {
        keys.push(parts[start..].join(".").to_lowercase());
    }
    keys
}

fn index_share(
    root: &std::path::Path,
    files: &[&FileEntry],
    next: &AtomicUsize,
    max_bytes: usize,
) -> Partial {
    let mut partial = Partial {
        terms: FxHashMap::default(),
        postings: Vec::new(),
        docs: Vec::new(),
    };
    // Per-document term frequencies, dense by local term id, with the ids
    // touched by the current document listed so that clearing is cheap.
    let mut counts: Vec<[u16; FIELDS]> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        let Some(f) = files.get(i) else {
            break;
        };
        let mut len = [0u32; FIELDS];
        let mut intern = |tok: &str, field: usize, partial: &mut Partial| {
            let id = match partial.terms.get(tok) {
                Some(&id) => id,
                None => {
                    let id = partial.postings.len() as u32;
                    partial.terms.insert(tok.into(), id);
                    partial.postings.push(Vec::new());
                    counts.push([0; FIELDS]);
                    id
                }
            };
            let c = &mut counts[id as usize];
            if *c == [0; FIELDS] {
                touched.push(id);
            }
            c[field] = c[field].saturating_add(1);
            len[field] += 1;
        };
        tokenize(&f.path, TokenOptions::PATH, &mut |t| {
            intern(t, PATH, &mut partial)
        });

        buf.clear();
        let read_ok = read_bounded(&root.join(&f.path), max_bytes, &mut buf);
        let mut doc_defs = Vec::new();
        let mut doc_lits = Vec::new();
        if read_ok && memchr::memchr(0, &buf).is_none() {
            let text = String::from_utf8_lossy(&buf);
            if f.language
                .as_deref()
                .is_some_and(language::is_code_language)
            {
                doc_lits = literals::extract(&text);
            }
            for d in definitions::extract(&text, f.language.as_deref()) {
                tokenize(&d.name, TokenOptions::TEXT, &mut |t| {
                    intern(t, DEFS, &mut partial);
                });
                let lower = d.name.to_lowercase();
                let key = lower.trim_matches('_');
                if !key.is_empty() {
                    doc_defs.push((key.to_string(), d.line));
                }
                if key.len() != lower.len() {
                    doc_defs.push((lower, d.line));
                }
            }
            tokenize(&text, TokenOptions::TEXT, &mut |t| {
                intern(t, BODY, &mut partial)
            });
        }
        for &id in &touched {
            let tf = std::mem::replace(&mut counts[id as usize], [0; FIELDS]);
            partial.postings[id as usize].push(Posting { doc: i as u32, tf });
        }
        touched.clear();
        partial.docs.push((i as u32, len, doc_defs, doc_lits));
    }
    partial
}

/// Reads at most `max` bytes of a file into `buf`; false when unreadable.
pub(crate) fn read_bounded(path: &std::path::Path, max: usize, buf: &mut Vec<u8>) -> bool {
    use std::io::Read;
    match std::fs::File::open(path) {
        Ok(f) => f.take(max as u64).read_to_end(buf).is_ok(),
        Err(_) => false,
    }
}

/// The files the planner puts into a step's `target_paths`: the top hits whose
/// score is at least [`TARGET_MIN_RELATIVE_SCORE`] of the best, at most
/// [`TARGET_PATHS_MAX`], never fewer than one when there is a hit.
pub fn target_paths_for(hits: &[Hit]) -> Vec<String> {
    let Some(top) = hits.first() else {
        return Vec::new();
    };
    let floor = top.score * TARGET_MIN_RELATIVE_SCORE;
    hits.iter()
        .take(TARGET_PATHS_MAX)
        .enumerate()
        .filter(|(i, h)| *i == 0 || h.score >= floor)
        .map(|(_, h)| h.path.clone())
        .collect()
}

/// See [`target_paths_for`].
pub const TARGET_PATHS_MAX: usize = 5;
/// See [`target_paths_for`].
pub const TARGET_MIN_RELATIVE_SCORE: f32 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn module_keys_of_paths() {
        assert_eq!(
            module_keys("django/db/models/query.py"),
            vec!["django.db.models.query", "db.models.query", "models.query"]
        );
        assert_eq!(module_keys("pkg/sub/__init__.py"), vec!["pkg.sub"]);
        assert_eq!(module_keys("setup.py"), Vec::<String>::new());
    }

    #[test]
    fn target_paths_take_the_strong_head() {
        let hit = |p: &str, s: f32| Hit {
            path: p.into(),
            score: s,
            is_test: false,
            snippets: vec![],
            reasons: vec![],
        };
        let hits = vec![hit("a", 2.0), hit("b", 1.5), hit("c", 0.5), hit("d", 1.2)];
        assert_eq!(target_paths_for(&hits), vec!["a", "b", "d"]);
        assert_eq!(target_paths_for(&[]), Vec::<String>::new());
    }
}
