//! Where a subtask works: paths it names, then a retrieval query of its own text.
//! Implementation and definition items target the best matching source files; test
//! items the tests mapped to those sources (or matching tests, or the test
//! directory); docs items the README / docs.

use std::collections::BTreeSet;

use crate::context::PlanningContext;
use crate::gathering::Hit;

use super::decomposition::{Item, ItemKind};

pub struct Targets {
    pub target_paths: Vec<String>,
    pub code_files_hint: Vec<String>,
    pub context_files: Vec<String>,
    /// False when nothing in the repository matched (targets are a guess).
    pub matched: bool,
}

/// Files a step should change at most, from retrieval alone.
const MAX_RETRIEVED_TARGETS: usize = 3;
const MAX_HINTS: usize = 5;
/// Hits scoring below this share of the best hit are noise.
const RELATIVE_CUTOFF: f64 = 0.4;

pub fn for_item(ctx: &PlanningContext, item: &Item, has_test_item: bool) -> Targets {
    let text = item.intent();
    let mut targets: Vec<String> = Vec::new();
    let push = |v: &mut Vec<String>, p: String| {
        if !v.contains(&p) {
            v.push(p);
        }
    };

    // Paths the item names: existing files and dirs, or new files in existing dirs.
    for p in crate::text::path_like_tokens(&text) {
        let dir = p.rsplit_once('/').map_or("", |(d, _)| d);
        if ctx.scan.contains(&p) || ctx.scan.has_dir(&p) || ctx.scan.has_dir(dir) {
            push(&mut targets, p);
        }
    }
    let named = !targets.is_empty();

    let hits: Vec<Hit> = ctx.search(&text, 12);
    let top = hits.first().map_or(0.0, |h| h.score);
    let good: Vec<&Hit> = hits
        .iter()
        .filter(|h| h.score >= top * RELATIVE_CUTOFF && h.score > 0.0)
        .collect();
    let is_doc = |p: &str| {
        let l = p.to_lowercase();
        l.ends_with(".md") || l.ends_with(".rst") || l.ends_with(".txt") || l.starts_with("docs/")
    };

    let retrieved: Vec<String> = match item.kind {
        ItemKind::Test => {
            // Tests of the code the request is about, then matching tests.
            let mut t: Vec<String> = Vec::new();
            for h in &ctx.hits {
                for test in ctx.scan.tests_for(&h.path) {
                    push(&mut t, test);
                }
            }
            for h in good
                .iter()
                .filter(|h| ctx.scan.files.iter().any(|f| f.path == h.path && f.is_test))
            {
                push(&mut t, h.path.clone());
            }
            if t.is_empty()
                && let Some(dir) = test_dir(ctx)
            {
                t.push(dir);
            }
            t.into_iter().take(MAX_RETRIEVED_TARGETS).collect()
        }
        ItemKind::Docs => {
            let mut t: Vec<String> = good
                .iter()
                .filter(|h| is_doc(&h.path))
                .map(|h| h.path.clone())
                .collect();
            if t.is_empty()
                && let Some(r) = &ctx.scan.readme
            {
                t.push(r.clone());
            }
            t.truncate(MAX_RETRIEVED_TARGETS);
            t
        }
        ItemKind::Definition | ItemKind::Implementation => good
            .iter()
            .filter(|h| !is_test(ctx, &h.path) && !is_doc(&h.path))
            .take(MAX_RETRIEVED_TARGETS)
            .map(|h| h.path.clone())
            .collect(),
    };
    if !named {
        for r in retrieved
            .iter()
            .take(if item.kind == ItemKind::Implementation {
                2
            } else {
                MAX_RETRIEVED_TARGETS
            })
        {
            push(&mut targets, r.clone());
        }
    }
    // Without a separate test item, an implementation step also updates its tests.
    if !has_test_item && matches!(item.kind, ItemKind::Implementation | ItemKind::Definition) {
        let sources: Vec<String> = targets.clone();
        for s in sources {
            for t in ctx.scan.tests_for(&s).into_iter().take(1) {
                push(&mut targets, t);
            }
        }
    }
    let matched = !targets.is_empty();
    if targets.is_empty() {
        // Nothing matched: the files most relevant to the request as a whole.
        for h in ctx.hits.iter().filter(|h| !is_test(ctx, &h.path)).take(2) {
            push(&mut targets, h.path.clone());
        }
    }
    if targets.is_empty() {
        targets.push(".".to_string());
    }

    let target_set: BTreeSet<&String> = targets.iter().collect();
    let code_files_hint: Vec<String> = hits
        .iter()
        .map(|h| h.path.clone())
        .filter(|p| !target_set.contains(p))
        .take(MAX_HINTS)
        .collect();
    let mut context_files = Vec::new();
    if let Some(r) = &ctx.scan.readme
        && !targets.contains(r)
    {
        context_files.push(r.clone());
    }
    Targets {
        target_paths: targets,
        code_files_hint,
        context_files,
        matched,
    }
}

fn is_test(ctx: &PlanningContext, path: &str) -> bool {
    ctx.scan.files.iter().any(|f| f.path == path && f.is_test)
}

/// The directory most tests live in (`tests/`).
fn test_dir(ctx: &PlanningContext) -> Option<String> {
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for f in ctx.scan.files.iter().filter(|f| f.is_test) {
        if let Some((d, _)) = f.path.rsplit_once('/') {
            *counts.entry(format!("{d}/")).or_default() += 1;
        }
    }
    counts
        .into_iter()
        .max_by_key(|(d, n)| (*n, std::cmp::Reverse(d.clone())))
        .map(|(d, _)| d)
}
