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
//!   overlap when one literal prefix contains the other. Uncertain cases count as
//!   overlapping: a false overlap only costs parallelism, a missed one a conflict.
//!
//! The steps are visited in a topological order and inserted into a trie of path
//! components that remembers the last step holding each node. A new target only
//! looks at its ancestors, its own node and its subtree; a plain target then
//! replaces its whole subtree (everything below is now ordered before it), so each
//! trie node is created and removed at most once per target: linear overall.

use std::collections::HashMap;

use globset::{GlobBuilder, GlobMatcher};

use super::NodeSpec;
use crate::EdgeType;

/// Resource edges by position, oriented along `order`.
pub(crate) fn resource_edges(
    nodes: &[NodeSpec<'_>],
    order: &[usize],
) -> Vec<(usize, usize, EdgeType)> {
    let mut trie = Trie::new();
    let mut edges = Vec::new();
    let mut preds: Vec<usize> = Vec::new();
    for &step in order {
        preds.clear();
        for raw in &nodes[step].target_paths {
            let target = Target::parse(raw);
            trie.visit(step, &target, &mut preds);
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

/// Whether two target paths overlap (the pairwise form of the rules above; the
/// analysis itself uses the trie).
pub fn overlaps(a: &str, b: &str) -> bool {
    let (a, b) = (Target::parse(a), Target::parse(b));
    match (&a.glob, &b.glob) {
        (None, None) => is_prefix(&a.prefix, &b.prefix) || is_prefix(&b.prefix, &a.prefix),
        (Some(_), Some(_)) => is_prefix(&a.prefix, &b.prefix) || is_prefix(&b.prefix, &a.prefix),
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

fn is_prefix(dir: &[String], path: &[String]) -> bool {
    dir.len() <= path.len() && dir.iter().zip(path).all(|(a, b)| a == b)
}

struct Glob {
    matcher: Option<GlobMatcher>,
    has_globstar: bool,
    components: usize,
}

impl Glob {
    /// Whether the glob may touch the plain path `path` (components).
    fn matches_path(&self, path: &[String]) -> bool {
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

struct Target {
    /// Plain components (the whole path, or a glob's literal prefix).
    prefix: Vec<String>,
    glob: Option<Glob>,
}

impl Target {
    fn parse(raw: &str) -> Target {
        let comps: Vec<&str> = raw
            .trim()
            .split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect();
        let first_glob = comps.iter().position(|c| c.contains(['*', '?', '[', '{']));
        match first_glob {
            None => Target {
                prefix: comps.iter().map(|c| c.to_string()).collect(),
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
                    prefix: comps[..k].iter().map(|c| c.to_string()).collect(),
                    glob: Some(Glob {
                        matcher,
                        has_globstar: comps[k..].iter().any(|c| c.contains("**")),
                        components: comps.len(),
                    }),
                }
            }
        }
    }
}

struct TrieNode {
    children: HashMap<String, usize>,
    /// Components from the root.
    path: Vec<String>,
    /// The last step whose plain target is exactly this node.
    last: Option<usize>,
    /// Steps with a glob whose literal prefix is this node, since the last plain
    /// target here.
    globs: Vec<(usize, Glob)>,
}

struct Trie {
    nodes: Vec<TrieNode>,
}

impl Trie {
    fn new() -> Trie {
        Trie {
            nodes: vec![TrieNode {
                children: HashMap::new(),
                path: Vec::new(),
                last: None,
                globs: Vec::new(),
            }],
        }
    }

    /// Records `step` holding `target`, pushing into `preds` every earlier step
    /// it overlaps.
    fn visit(&mut self, step: usize, target: &Target, preds: &mut Vec<usize>) {
        // Walk (and create) the prefix, collecting the ancestors' holders.
        let mut cur = 0usize;
        for depth in 0..=target.prefix.len() {
            if depth > 0 {
                let comp = &target.prefix[depth - 1];
                cur = match self.nodes[cur].children.get(comp) {
                    Some(&c) => c,
                    None => {
                        let id = self.nodes.len();
                        self.nodes.push(TrieNode {
                            children: HashMap::new(),
                            path: target.prefix[..depth].to_vec(),
                            last: None,
                            globs: Vec::new(),
                        });
                        self.nodes[cur].children.insert(comp.clone(), id);
                        id
                    }
                };
            }
            let node = &self.nodes[cur];
            let at_target = depth == target.prefix.len();
            preds.extend(node.last);
            for (s, g) in &node.globs {
                // A glob at an ancestor directory of a plain path overlaps only
                // if it may match it; globs overlap globs and the node itself.
                let hit = at_target || target.glob.is_some() || g.matches_path(&target.prefix);
                if hit {
                    preds.push(*s);
                }
            }
        }
        // The subtree below the target's node.
        let mut stack: Vec<usize> = self.nodes[cur].children.values().copied().collect();
        while let Some(v) = stack.pop() {
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
            // Globs below a plain directory or below a glob's prefix: overlap.
            preds.extend(node.globs.iter().map(|(s, _)| *s));
            stack.extend(node.children.values().copied());
        }
        match &target.glob {
            None => {
                // Everything below is now ordered before `step`: drop it.
                let node = &mut self.nodes[cur];
                node.children.clear();
                node.globs.clear();
                node.last = Some(step);
            }
            Some(g) => {
                let glob = Glob {
                    matcher: g.matcher.clone(),
                    has_globstar: g.has_globstar,
                    components: g.components,
                };
                self.nodes[cur].globs.push((step, glob));
            }
        }
    }
}
