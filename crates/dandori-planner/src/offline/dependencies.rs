//! Logical and data dependencies between the offline planner's subtasks (seed 003
//! §5.3): an interface / definition comes before the implementations that share its
//! subject, tests come after the code they test, documentation after both. A
//! backticked identifier that a definition introduces is its `produces`, and every
//! other subtask naming it `consumes` it. File overlap (resource edges) is left to
//! the dependency graph, which sees the target paths.

use std::collections::{BTreeMap, BTreeSet};

use crate::context::PlanningContext;
use crate::draft::DraftSubtask;
use crate::text::{backticked_identifiers, topic_tokens};

use super::decomposition::{Item, ItemKind};

/// Words that say what kind of work an item is, not what it is about.
const KIND_WORDS: &[&str] = &[
    "define",
    "definition",
    "interface",
    "schema",
    "model",
    "type",
    "enum",
    "implement",
    "test",
    "spec",
    "readme",
    "doc",
    "document",
    "endpoint",
    "function",
    "method",
    "class",
    "file",
    "code",
    "定義",
    "実装",
    "テス",
    "スト",
    "追加",
    "利用",
    "対応",
    "機能",
];

fn subject_tokens(item: &Item, s: &DraftSubtask, places: &BTreeSet<String>) -> BTreeSet<String> {
    let mut t: BTreeSet<String> = topic_tokens(&item.intent())
        .into_iter()
        .filter(|w| !KIND_WORDS.iter().any(|k| w == k) && !places.contains(w))
        .collect();
    for p in &s.target_paths {
        t.insert(format!("path:{p}"));
    }
    t
}

pub fn assign(ctx: &PlanningContext, items: &[Item], subtasks: &mut [DraftSubtask]) {
    let n = subtasks.len();
    // Directory names say where, not what: two items naming the package
    // (`bookshelf/models.py`, "`bookshelf list`") share no subject by it.
    let places: BTreeSet<String> = ctx
        .scan
        .files
        .iter()
        .flat_map(|f| {
            let dirs: Vec<&str> = f.path.split('/').collect();
            dirs[..dirs.len().saturating_sub(1)]
                .iter()
                .map(|d| d.to_lowercase())
                .collect::<Vec<_>>()
        })
        .collect();
    let subjects: Vec<BTreeSet<String>> = (0..n)
        .map(|i| subject_tokens(&items[i], &subtasks[i], &places))
        .collect();
    let kinds: Vec<ItemKind> = items.iter().map(|i| i.kind).collect();
    let keys: Vec<String> = subtasks.iter().map(|s| s.key.clone()).collect();
    let mut deps: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];

    // produces / consumes from backticked identifiers.
    let idents: Vec<Vec<String>> = items
        .iter()
        .map(|i| backticked_identifiers(&i.intent()))
        .collect();
    let mut producer: BTreeMap<String, usize> = BTreeMap::new();
    // A definition produces the identifiers it introduces: named, and not already
    // defined in the files it targets (`Task` in "add a field to `Task`" exists).
    for i in 0..n {
        if kinds[i] == ItemKind::Definition {
            for id in &idents[i] {
                let exists = subtasks[i]
                    .target_paths
                    .iter()
                    .any(|p| super::targets::defines_any(ctx, p, std::slice::from_ref(id)));
                if !exists {
                    producer.entry(id.clone()).or_insert(i);
                }
            }
        }
    }
    // An implementation that adds a new identifier ("`Task` に `due_date` を追加する",
    // "add a `priority` field") produces it for the items after it.
    let mut added_by: BTreeMap<String, usize> = BTreeMap::new();
    for i in 0..n {
        if kinds[i] == ItemKind::Implementation && adds_something(&items[i].intent()) {
            for id in &idents[i] {
                let exists = subtasks[i]
                    .target_paths
                    .iter()
                    .any(|p| super::targets::defines_any(ctx, p, std::slice::from_ref(id)));
                if !exists && !producer.contains_key(id) {
                    added_by.entry(id.clone()).or_insert(i);
                }
            }
        }
    }
    for i in 0..n {
        for id in &idents[i] {
            if let Some(&p) = added_by.get(id) {
                if p == i {
                    subtasks[i].produces.push(id.clone());
                } else if p < i {
                    // A data dependency: the graph's data edge orders them.
                    subtasks[i].consumes.push(id.clone());
                }
            }
        }
    }
    for i in 0..n {
        for id in &idents[i] {
            match producer.get(id) {
                Some(&p) if p == i => subtasks[i].produces.push(id.clone()),
                // A data dependency: the graph's data edge orders them.
                Some(_) => subtasks[i].consumes.push(id.clone()),
                None => {}
            }
        }
    }

    new_files(ctx, items, subtasks);

    // Definitions before the implementations that share their subject. A
    // definition sharing nothing with an implementation orders nothing: a
    // dependency needs a reason (seed 003 §5).
    let defs: Vec<usize> = (0..n)
        .filter(|i| kinds[*i] == ItemKind::Definition)
        .collect();
    let impls: Vec<usize> = (0..n)
        .filter(|i| kinds[*i] == ItemKind::Implementation)
        .collect();
    for &d in &defs {
        for i in impls
            .iter()
            .copied()
            .filter(|&i| subjects[d].intersection(&subjects[i]).next().is_some())
        {
            deps[i].insert(d);
        }
    }

    // Tests after the code they test: by the test→source map, else by subject,
    // else after all code.
    let code: Vec<usize> = (0..n)
        .filter(|i| matches!(kinds[*i], ItemKind::Implementation | ItemKind::Definition))
        .collect();
    for t in (0..n).filter(|i| kinds[*i] == ItemKind::Test) {
        let tested: BTreeSet<String> = subtasks[t]
            .target_paths
            .iter()
            .flat_map(|p| crate::gathering::sources_of(&ctx.scan, p))
            .cloned()
            .collect();
        let mut related: Vec<usize> = code
            .iter()
            .copied()
            .filter(|&c| subtasks[c].target_paths.iter().any(|p| tested.contains(p)))
            .collect();
        if related.is_empty() {
            related = code
                .iter()
                .copied()
                .filter(|&c| subjects[t].intersection(&subjects[c]).next().is_some())
                .collect();
        }
        if related.is_empty() {
            related = code.clone();
        }
        for c in related {
            deps[t].insert(c);
        }
    }

    // Documentation describes what was built: the code items sharing its
    // subject, or all of them when it refers to the request's work ("document
    // the new options", "document them"); a docs item about something else
    // ("fix the typo in the README") waits for nothing.
    for d in (0..n).filter(|i| kinds[*i] == ItemKind::Docs) {
        let related: Vec<usize> = code
            .iter()
            .copied()
            .filter(|&c| subjects[d].intersection(&subjects[c]).next().is_some())
            .collect();
        let related = if related.is_empty() && refers_to_the_work(&items[d].intent()) {
            code.clone()
        } else {
            related
        };
        for c in related {
            deps[d].insert(c);
        }
    }

    for (i, s) in subtasks.iter_mut().enumerate() {
        deps[i].remove(&i);
        s.depends_on = deps[i].iter().map(|&d| keys[d].clone()).collect();
        s.produces.dedup();
        s.consumes.dedup();
    }
}

/// Seed 003 §5 data dependencies on new files: a subtask that creates a file
/// the repository does not have yet (`todo/storage.py`) produces it; another
/// subtask consumes it when its own words name the file (its path, or its stem
/// as a word: "the storage"), or when it comes right after the creating one and
/// refers back to it ("`TaskStore` uses it").
fn new_files(ctx: &PlanningContext, items: &[Item], subtasks: &mut [DraftSubtask]) {
    let n = subtasks.len();
    let mut created: Vec<(usize, String)> = Vec::new();
    for (i, s) in subtasks.iter().enumerate() {
        for p in &s.target_paths {
            let p = p.trim_end_matches('/');
            let is_file = p.rsplit('/').next().is_some_and(|b| b.contains('.'));
            // The first subtask (plan order) that targets a new file creates
            // it; a later one that targets it too edits what the first made.
            if is_file
                && !crate::gathering::has_file(&ctx.scan, p)
                && !crate::gathering::has_dir(&ctx.scan, p)
                && !created.iter().any(|(_, q)| q == p)
            {
                created.push((i, p.to_string()));
            }
        }
    }
    for (c, path) in created {
        let base = path.rsplit('/').next().unwrap_or(&path);
        let stem = base.split('.').next().unwrap_or(base).to_lowercase();
        for j in (0..n).filter(|&j| j != c) {
            let text = items[j].intent();
            let names = text.contains(&path)
                || (stem.chars().count() >= 4
                    && !KIND_WORDS.contains(&stem.as_str())
                    && topic_tokens(&text).contains(&stem));
            let refers_back = j == c + 1 && refers_back(&text);
            if names || refers_back {
                if !subtasks[c].produces.contains(&path) {
                    subtasks[c].produces.push(path.clone());
                }
                if !subtasks[j].consumes.contains(&path) {
                    subtasks[j].consumes.push(path.clone());
                }
            }
        }
    }
}

/// Words by which an item points at the one before it.
fn refers_back(text: &str) -> bool {
    let l = format!(" {} ", text.to_lowercase());
    [
        " it ",
        " it.",
        " it,",
        " them ",
        " them.",
        " that module",
        " this module",
        "それ",
        "これを",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// A docs item that speaks of the request's own work rather than of something
/// of its own.
fn refers_to_the_work(text: &str) -> bool {
    let l = format!(" {} ", text.to_lowercase());
    [
        " new ",
        " them ",
        " these ",
        " it ",
        " this ",
        " the change",
        " above",
        "新しい",
        "追加した",
        "それ",
        "これら",
        "新",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// The item introduces something new (English or Japanese verbs).
fn adds_something(text: &str) -> bool {
    let l = text.to_lowercase();
    ["add ", "introduce", "new field", "追加", "導入", "新設"]
        .iter()
        .any(|w| l.starts_with(w.trim_end()) || l.contains(w))
}

/// The longest chain of dependencies, logical (`depends_on`) or data
/// (`consumes` what another `produces`); 0 when nothing depends on anything.
/// Cycles count each subtask once.
pub fn depth(subtasks: &[DraftSubtask]) -> u64 {
    let preds = crate::assemble::order::predecessors(subtasks);
    let mut memo: Vec<Option<u64>> = vec![None; subtasks.len()];
    fn visit(
        i: usize,
        preds: &[BTreeSet<usize>],
        memo: &mut Vec<Option<u64>>,
        stack: &mut Vec<usize>,
    ) -> u64 {
        if let Some(d) = memo[i] {
            return d;
        }
        if stack.contains(&i) {
            return 0;
        }
        stack.push(i);
        let d = preds[i]
            .iter()
            .map(|&j| 1 + visit(j, preds, memo, stack))
            .max()
            .unwrap_or(0);
        stack.pop();
        memo[i] = Some(d);
        d
    }
    let mut stack = Vec::new();
    (0..subtasks.len())
        .map(|i| visit(i, &preds, &mut memo, &mut stack))
        .max()
        .unwrap_or(0)
}
