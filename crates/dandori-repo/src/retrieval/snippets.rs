//! The best-matching regions of a ranked file, for prompts and reports.

use rustc_hash::FxHashMap;

use super::tokenize::{TokenOptions, tokenize};
use super::{Index, QueryAnalysis, Snippet, read_bounded};

/// Characters kept per snippet line.
const MAX_LINE_CHARS: usize = 200;

pub(super) fn best_snippets(
    index: &Index,
    path: &str,
    q: &QueryAnalysis,
    def_lines: &[u32],
) -> Vec<Snippet> {
    let opts = index.options();
    let mut buf = Vec::new();
    if !read_bounded(&index.root().join(path), opts.max_bytes_per_file, &mut buf) {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text.lines().collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let weights: FxHashMap<&str, f32> = q
        .terms
        .iter()
        .map(|(t, w)| (t.as_str(), w * index.idf(t).unwrap_or(0.0)))
        .collect();
    let mut line_scores: Vec<f32> = lines
        .iter()
        .map(|l| {
            let mut s = 0f32;
            let mut seen: Vec<String> = Vec::new();
            tokenize(l, TokenOptions::TEXT, &mut |t| {
                if let Some(w) = weights.get(t)
                    && !seen.iter().any(|x| x == t)
                {
                    s += w;
                    seen.push(t.to_string());
                }
            });
            s
        })
        .collect();
    for &l in def_lines {
        if let Some(s) = line_scores.get_mut(l as usize) {
            *s = *s * 2.0 + 10.0;
        }
    }
    let window = opts.snippet_lines.max(1);
    let mut taken: Vec<(usize, usize)> = Vec::new();
    let mut out = Vec::new();
    for _ in 0..opts.snippets_per_hit.max(1) {
        let best = line_scores
            .iter()
            .enumerate()
            .filter(|(i, s)| **s > 0.0 && !taken.iter().any(|(a, b)| i >= a && i <= b))
            .max_by(|a, b| a.1.total_cmp(b.1).then_with(|| b.0.cmp(&a.0)))
            .map(|(i, _)| i);
        let Some(center) = best else {
            break;
        };
        let start = center.saturating_sub(window / 4);
        let end = (start + window - 1).min(lines.len() - 1);
        // Keep snippets apart.
        let start = taken
            .iter()
            .filter(|(_, b)| *b < center)
            .map(|(_, b)| b + 1)
            .fold(start, usize::max);
        let end = taken
            .iter()
            .filter(|(a, _)| *a > center)
            .map(|(a, _)| a - 1)
            .fold(end, usize::min);
        taken.push((start, end));
        for s in &mut line_scores[start..=end] {
            *s = 0.0;
        }
        out.push(snippet(&lines, start, end));
    }
    if out.is_empty() {
        let end = window.min(lines.len()) - 1;
        out.push(snippet(&lines, 0, end));
    }
    out
}

fn snippet(lines: &[&str], start: usize, end: usize) -> Snippet {
    let mut text = String::new();
    for l in &lines[start..=end] {
        let (cut, truncated) = crate::scan::truncate_chars(l, MAX_LINE_CHARS);
        text.push_str(&cut);
        if truncated {
            text.push('…');
        }
        text.push('\n');
    }
    Snippet {
        start_line: start + 1,
        end_line: end + 1,
        text,
    }
}
