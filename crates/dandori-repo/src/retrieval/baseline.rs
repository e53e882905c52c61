//! Plain BM25 over whole-file contents (no path field, no identifier splitting,
//! no query analysis): the yardstick the ranking is compared against.

use std::sync::atomic::{AtomicUsize, Ordering};

use rustc_hash::FxHashMap;

use super::tokenize::{TokenOptions, tokenize};
use super::{Hit, read_bounded};
use crate::scan::RepoScan;

const K1: f32 = 1.2;
const B: f32 = 0.75;

/// The baseline index.
#[derive(Debug)]
pub struct Bm25Baseline {
    paths: Vec<(String, bool)>,
    lens: Vec<u32>,
    avg_len: f32,
    terms: FxHashMap<Box<str>, Vec<(u32, u32)>>,
}

impl Bm25Baseline {
    /// Indexes every text file of the scan (same per-file byte bound as
    /// [`super::Index`]).
    pub fn build(scan: &RepoScan) -> Bm25Baseline {
        let max_bytes = super::IndexOptions::default().max_bytes_per_file;
        let files: Vec<&crate::FileEntry> = scan.files.iter().filter(|f| !f.is_binary).collect();
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        let next = AtomicUsize::new(0);
        type Part = (FxHashMap<String, Vec<(u32, u32)>>, Vec<(u32, u32)>);
        let parts: Vec<Part> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    s.spawn(|| {
                        let mut terms: FxHashMap<String, Vec<(u32, u32)>> = FxHashMap::default();
                        let mut lens = Vec::new();
                        let mut counts: FxHashMap<String, u32> = FxHashMap::default();
                        let mut buf = Vec::new();
                        loop {
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            let Some(f) = files.get(i) else { break };
                            counts.clear();
                            buf.clear();
                            let mut len = 0u32;
                            if read_bounded(&scan.root.join(&f.path), max_bytes, &mut buf)
                                && memchr::memchr(0, &buf).is_none()
                            {
                                let text = String::from_utf8_lossy(&buf);
                                tokenize(&text, TokenOptions::PLAIN, &mut |t| {
                                    len += 1;
                                    match counts.get_mut(t) {
                                        Some(c) => *c += 1,
                                        None => {
                                            counts.insert(t.to_string(), 1);
                                        }
                                    }
                                });
                            }
                            for (t, c) in counts.drain() {
                                terms.entry(t).or_default().push((i as u32, c));
                            }
                            lens.push((i as u32, len));
                        }
                        (terms, lens)
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        let mut terms: FxHashMap<Box<str>, Vec<(u32, u32)>> = FxHashMap::default();
        let mut lens = vec![0u32; files.len()];
        for (t, l) in parts {
            for (term, list) in t {
                terms.entry(term.into_boxed_str()).or_default().extend(list);
            }
            for (i, len) in l {
                lens[i as usize] = len;
            }
        }
        let avg_len =
            (lens.iter().map(|&l| l as f32).sum::<f32>() / lens.len().max(1) as f32).max(1.0);
        Bm25Baseline {
            paths: files.iter().map(|f| (f.path.clone(), f.is_test)).collect(),
            lens,
            avg_len,
            terms,
        }
    }

    /// The `k` best files for `query` (no snippets).
    pub fn search(&self, query: &str, k: usize) -> Vec<Hit> {
        let mut q: FxHashMap<String, f32> = FxHashMap::default();
        tokenize(query, TokenOptions::PLAIN, &mut |t| {
            *q.entry(t.to_string()).or_default() += 1.0;
        });
        let n = self.paths.len() as f32;
        let mut scores = vec![0f32; self.paths.len()];
        for (t, qtf) in &q {
            let Some(list) = self.terms.get(t.as_str()) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = super::bm25_idf(n, df);
            for &(doc, tf) in list {
                let tf = tf as f32;
                let norm = K1 * (1.0 - B + B * self.lens[doc as usize] as f32 / self.avg_len);
                scores[doc as usize] += qtf * idf * tf * (K1 + 1.0) / (tf + norm);
            }
        }
        let mut order: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] > 0.0).collect();
        order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then_with(|| a.cmp(&b)));
        order.truncate(k);
        order
            .into_iter()
            .map(|i| Hit {
                path: self.paths[i].0.clone(),
                score: scores[i],
                is_test: self.paths[i].1,
                snippets: Vec::new(),
                reasons: Vec::new(),
            })
            .collect()
    }
}
