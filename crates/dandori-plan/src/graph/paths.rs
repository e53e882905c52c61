//! Resource dependencies: which steps' `scope.target_paths` overlap.
//!
//! Paths are repository-relative with `/` separators; `./`, repeated and trailing
//! slashes are ignored, and `""` or `.` means the whole repository. Two targets
//! overlap when:
//!
//! * they are equal, or one is a directory containing the other
//!   (`src` contains `src/lib.rs`; `src` does not contain `srcx`);
//! * a glob (a component with `*`, `?`, `[` or `{`) is involved: the glob's
//!   *literal prefix* is its directory part before the first glob component
//!   (`src/**/*.rs` → `src`). A glob and a plain path overlap when the glob matches
//!   the path, when the path contains the literal prefix, or when the path looks
//!   like a directory (no `.` in its last component) under the prefix that the glob
//!   could descend into (it has `**` or more components than the path). Two globs
//!   overlap when they have the same literal prefix, or when the one with the
//!   shorter prefix overlaps the other's prefix as a plain path. Uncertain cases
//!   count as overlapping: a false overlap only costs parallelism, a missed one a
//!   conflict.
//!
//! The steps are visited in a topological order and inserted into a trie of path
//! components that remembers the last step holding each node. A new target only
//! looks at its ancestors, its own node and its subtree; a plain target then
//! replaces its whole subtree (everything below is now ordered before it), so each
//! trie node is created and removed at most once per target: linear in the total
//! number of path components. A glob target cannot replace its subtree, so it
//! scans it; plans with many globs over one large directory cost more.

use rustc_hash::FxHashMap as HashMap;

use globset::{GlobBuilder, GlobMatcher};

use super::NodeSpec;
use crate::EdgeType;

/// Glob checks and subtree visits the analysis may spend on one plan. Globs over
/// one large directory make the trie walk quadratic (every glob scans the
/// directory, every later target checks every glob); past this budget the
/// analysis stops and orders every step that has targets after the previous one,
/// the conservative answer (a false overlap only costs parallelism). Real plans
/// of 10 000 steps use a few thousand.
pub const RESOURCE_WORK_BUDGET: usize = 200_000;

/// Resource edges by position, oriented along `order`.
pub(crate) fn resource_edges<'a, S: AsRef<str>>(
    nodes: &[NodeSpec<'a, S>],
    order: &[usize],
) -> Vec<(usize, usize, EdgeType)> {
    let mut trie = Trie::new();
    let mut edges = Vec::new();
    let mut preds: Vec<usize> = Vec::new();
    for &step in order {
        preds.clear();
        let targets: &'a [S] = nodes[step].target_paths;
        for raw in targets {
            trie.visit(step, Target::parse(raw.as_ref()), &mut preds);
        }
        if trie.work > RESOURCE_WORK_BUDGET {
            return serialised(nodes, order);
        }
        preds.sort_unstable();
        preds.dedup();
        edges.extend(
            preds
                .iter()
                .filter(|&&p| p != step)
                .map(|&p| (p, step, EdgeType::Resource)),
        );
    }
    edges
}

/// Every step with targets after the previous such step, in `order`.
fn serialised<S: AsRef<str>>(
    nodes: &[NodeSpec<'_, S>],
    order: &[usize],
) -> Vec<(usize, usize, EdgeType)> {
    let with_targets: Vec<usize> = order
        .iter()
        .copied()
        .filter(|&s| !nodes[s].target_paths.is_empty())
        .collect();
    with_targets
        .windows(2)
        .map(|w| (w[0], w[1], EdgeType::Resource))
        .collect()
}

/// Whether two target paths overlap (the pairwise form of the rules above; the
/// analysis itself uses the trie).
pub fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (Target::parse(a), Target::parse(b));
    match (&a.glob, &b.glob) {
        (None, None) => is_prefix(&a.prefix, &b.prefix) || is_prefix(&b.prefix, &a.prefix),
        (Some(ga), Some(gb)) => {
            a.prefix == b.prefix
                || (is_prefix(&a.prefix, &b.prefix) && ga.matches_path(&b.prefix))
                || (is_prefix(&b.prefix, &a.prefix) && gb.matches_path(&a.prefix))
        }
        (Some(g), None) => {
            is_prefix(&b.prefix, &a.prefix)
                || (is_prefix(&a.prefix, &b.prefix) && g.matches_path(&b.prefix))
        }
        (None, Some(g)) => {
            is_prefix(&a.prefix, &b.prefix)
                || (is_prefix(&b.prefix, &a.prefix) && g.matches_path(&a.prefix))
        }
    }
}

fn is_prefix(dir: &[&str], path: &[&str]) -> bool {
    dir.len() <= path.len() && dir.iter().zip(path).all(|(a, b)| a == b)
}

struct Glob {
    /// The whole pattern, normalised (components joined by `/`).
    pattern: String,
    matcher: Option<GlobMatcher>,
    has_globstar: bool,
    components: usize,
}

impl Glob {
    /// Whether the glob may touch the plain path `path` (components).
    fn matches_path(&self, path: &[&str]) -> bool {
        let Some(matcher) = &self.matcher else {
            // An invalid pattern: treat it as its whole literal prefix.
            return true;
        };
        if matcher.is_match(path.join("/")) {
            return true;
        }
        let looks_like_dir = path.last().is_none_or(|c| !c.contains('.'));
        looks_like_dir && (self.has_globstar || self.components > path.len())
    }
}

struct Target<'a> {
    /// Plain components (the whole path, or a glob's literal prefix).
    prefix: Vec<&'a str>,
    glob: Option<Glob>,
}

impl<'a> Target<'a> {
    fn parse(raw: &'a str) -> Target<'a> {
        let comps: Vec<&str> = raw
            .trim()
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let first_glob = comps.iter().position(|c| c.contains(['*', '?', '[', '{']));
        match first_glob {
            None => Target {
                prefix: comps,
                glob: None,
            },
            Some(k) => {
                let pattern = comps.join("/");
                let matcher = GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .build()
                    .ok()
                    .map(|g| g.compile_matcher());
                Target {
                    prefix: comps[..k].to_vec(),
                    glob: Some(Glob {
                        pattern,
                        matcher,
                        has_globstar: comps[k..].iter().any(|c| c.contains("**")),
                        components: comps.len(),
                    }),
                }
            }
        }
    }
}

struct TrieNode<'a> {
    children: HashMap<&'a str, usize>,
    /// Components from the root.
    path: Vec<&'a str>,
    /// The last step whose plain target is exactly this node.
    last: Option<usize>,
    /// Steps with a glob whose literal prefix is this node, since the last plain
    /// target here.
    globs: Vec<(usize, Glob)>,
}

struct Trie<'a> {
    nodes: Vec<TrieNode<'a>>,
    /// Glob checks and subtree visits so far (see [`RESOURCE_WORK_BUDGET`]).
    work: usize,
}

impl<'a> Trie<'a> {
    fn new() -> Trie<'a> {
        Trie {
            nodes: vec![TrieNode {
                children: HashMap::default(),
                path: Vec::new(),
                last: None,
                globs: Vec::new(),
            }],
            work: 0,
        }
    }

    /// Records `step` holding `target`, pushing into `preds` every earlier step
    /// it overlaps.
    fn visit(&mut self, step: usize, target: Target<'a>, preds: &mut Vec<usize>) {
        // Walk (and create) the prefix, collecting the ancestors' holders.
        let mut cur = 0usize;
        for depth in 0..=target.prefix.len() {
            if depth > 0 {
                let comp = target.prefix[depth - 1];
                cur = match self.nodes[cur].children.get(comp) {
                    Some(&c) => c,
                    None => {
                        let id = self.nodes.len();
                        self.nodes.push(TrieNode {
                            children: HashMap::default(),
                            path: target.prefix[..depth].to_vec(),
                            last: None,
                            globs: Vec::new(),
                        });
                        self.nodes[cur].children.insert(comp, id);
                        id
                    }
                };
            }
            let node = &self.nodes[cur];
            let at_target = depth == target.prefix.len();
            preds.extend(node.last);
            self.work += node.globs.len();
            for (s, g) in &node.globs {
                // A glob at an ancestor directory overlaps a deeper target only
                // if it may reach into it; at the same node it always overlaps.
                let hit = at_target || g.matches_path(&target.prefix);
                if hit {
                    preds.push(*s);
                }
            }
        }
        // The subtree below the target's node.
        let mut stack: Vec<usize> = self.nodes[cur].children.values().copied().collect();
        while let Some(v) = stack.pop() {
            self.work += 1;
            if self.work > RESOURCE_WORK_BUDGET {
                return;
            }
            let node = &self.nodes[v];
            if let Some(s) = node.last {
                let hit = match &target.glob {
                    None => true,
                    Some(g) => g.matches_path(&node.path),
                };
                if hit {
                    preds.push(s);
                }
            }
            // Globs below a plain directory overlap it; below a glob's prefix,
            // when the glob may reach into their prefix.
            let deeper_globs_hit = match &target.glob {
                None => true,
                Some(g) => g.matches_path(&node.path),
            };
            if deeper_globs_hit {
                self.work += node.globs.len();
                preds.extend(node.globs.iter().map(|(s, _)| *s));
            }
            stack.extend(node.children.values().copied());
        }
        match target.glob {
            None => {
                // Everything below is now ordered before `step`: drop it.
                let node = &mut self.nodes[cur];
                node.children.clear();
                node.globs.clear();
                node.last = Some(step);
            }
            Some(g) => {
                // An earlier identical glob here is ordered before `step` (it was
                // a predecessor above) and overlaps exactly what `g` overlaps.
                let globs = &mut self.nodes[cur].globs;
                globs.retain(|(_, old)| old.pattern != g.pattern);
                globs.push((step, g));
            }
        }
    }
}
