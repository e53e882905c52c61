//! The report's two charts drawn as inline SVG by dandori itself — no script, no
//! network: the dependency graph (steps by level, the execution groups, the
//! critical path highlighted) and the timeline (a Gantt chart with a time axis in
//! ms, s or m:ss as the run's length asks).
//!
//! The input is the two Mermaid blocks [`crate::markdown::render`] writes into
//! report.md (they stay there for Markdown viewers): the `graph TD` block gives
//! the steps, their labels, statuses and edges; the `gantt` block the start and
//! end of every step that ran (ms since the run started). Every text is
//! HTML-escaped.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::html::escape;

/// One step of the dependency graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    /// `S01: title`, as the Markdown shows it.
    pub label: String,
    /// `done`, `failed`, `skipped`, `needs_input`, `pending`, `running`.
    pub status: String,
}

/// The `graph TD` block: nodes in order, edges as (from, to) indices.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Graph {
    pub nodes: Vec<Node>,
    pub edges: Vec<(usize, usize)>,
}

/// One bar of the timeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bar {
    pub id: String,
    /// `done`, `crit` (failed), `active` (running) or empty.
    pub tag: String,
    pub start_ms: u64,
    pub end_ms: u64,
}

/// Mermaid's entity spelling of `<`/`>` in labels, back to the characters.
fn unmermaid(s: &str) -> String {
    s.replace("#lt;", "<").replace("#gt;", ">")
}

/// Reads the `graph TD` block (its lines after the header).
pub fn parse_graph(lines: &[&str]) -> Graph {
    let mut g = Graph::default();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for line in lines {
        let t = line.trim();
        if let Some((from, to)) = t.split_once(" --> ") {
            if let (Some(&f), Some(&to)) = (index.get(from.trim()), index.get(to.trim())) {
                g.edges.push((f, to));
            }
            continue;
        }
        let Some((id, rest)) = t.split_once("[\"") else {
            continue;
        };
        let Some((label, class)) = rest.rsplit_once("\"]") else {
            continue;
        };
        let status = class.strip_prefix(":::").unwrap_or("pending").to_string();
        index.insert(id.to_string(), g.nodes.len());
        g.nodes.push(Node {
            id: id.to_string(),
            label: unmermaid(label),
            status,
        });
    }
    g
}

/// Reads the `gantt` block: `ID : [tag, ]ID, start, end`.
pub fn parse_gantt(lines: &[&str]) -> Vec<Bar> {
    lines
        .iter()
        .filter_map(|line| {
            let (id, rest) = line.trim().split_once(" : ")?;
            let parts: Vec<&str> = rest.split(',').map(str::trim).collect();
            let (tag, nums) = match parts.as_slice() {
                [tag, _, s, e] => (*tag, [*s, *e]),
                [_, s, e] => ("", [*s, *e]),
                _ => return None,
            };
            Some(Bar {
                id: id.trim().to_string(),
                tag: tag.to_string(),
                start_ms: nums[0].parse().ok()?,
                end_ms: nums[1].parse().ok()?,
            })
        })
        .collect()
}

/// The level of every node: 0 for steps without predecessors, else one more
/// than the highest level among them (the execution groups run level by level).
pub fn levels(g: &Graph) -> Vec<usize> {
    let n = g.nodes.len();
    let mut level = vec![0usize; n];
    // Longest-path relaxation; at most n rounds (a cycle cannot occur in a
    // validated plan, and the bound keeps a broken one from looping).
    for _ in 0..n {
        let mut changed = false;
        for &(f, t) in &g.edges {
            if level[t] < level[f] + 1 && level[f] < n {
                level[t] = level[f] + 1;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    level
}

/// The critical path: the chain of dependent steps with the largest total
/// duration (ms from the timeline; a step that did not run weighs 1 ms, so
/// without timings it is the longest chain). Node indices, first to last.
pub fn critical_path(g: &Graph, bars: &[Bar]) -> Vec<usize> {
    let n = g.nodes.len();
    if n == 0 {
        return Vec::new();
    }
    let weight: Vec<u64> = g
        .nodes
        .iter()
        .map(|node| {
            bars.iter()
                .find(|b| b.id == node.id)
                .map_or(1, |b| b.end_ms.saturating_sub(b.start_ms).max(1))
        })
        .collect();
    let level = levels(g);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| level[i]);
    let mut best: Vec<u64> = weight.clone();
    let mut prev: Vec<Option<usize>> = vec![None; n];
    for &i in &order {
        for &(f, t) in g.edges.iter().filter(|(_, t)| *t == i) {
            if best[f] + weight[t] > best[t] {
                best[t] = best[f] + weight[t];
                prev[t] = Some(f);
            }
        }
    }
    let mut end = 0;
    for i in 0..n {
        if best[i] > best[end] {
            end = i;
        }
    }
    let mut path = vec![end];
    while let Some(p) = prev[*path.last().unwrap_or(&end)] {
        if path.contains(&p) {
            break;
        }
        path.push(p);
    }
    path.reverse();
    path
}

fn fill(status: &str) -> &'static str {
    match status {
        "done" => "#d4edda",
        "failed" | "crit" => "#f8d7da",
        "skipped" => "#eeeeee",
        "needs_input" => "#fff3cd",
        "running" | "active" => "#cce5ff",
        _ => "#ffffff",
    }
}

/// At most `max` characters, with `…` when cut.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
        out.push('…');
        out
    }
}

const NODE_W: usize = 200;
const NODE_H: usize = 40;
const GAP_X: usize = 24;
const GAP_Y: usize = 48;
const LEFT: usize = 80;

/// The dependency graph: one row per level (execution group), the steps of a
/// level side by side, edges as arrows; the critical path in red and thick.
pub fn graph_svg(g: &Graph, critical: &[usize]) -> String {
    let level = levels(g);
    let rows = level.iter().max().map_or(0, |m| m + 1);
    let mut by_row: Vec<Vec<usize>> = vec![Vec::new(); rows];
    for (i, &l) in level.iter().enumerate() {
        by_row[l].push(i);
    }
    let widest = by_row.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let width = LEFT + widest * (NODE_W + GAP_X) + GAP_X;
    let height = rows * (NODE_H + GAP_Y) + GAP_Y / 2 + 24;
    let mut pos = vec![(0usize, 0usize); g.nodes.len()];
    for (r, row) in by_row.iter().enumerate() {
        let offset = (widest - row.len()) * (NODE_W + GAP_X) / 2;
        for (k, &i) in row.iter().enumerate() {
            pos[i] = (
                LEFT + offset + k * (NODE_W + GAP_X),
                16 + r * (NODE_H + GAP_Y),
            );
        }
    }
    let on_path = |f: usize, t: usize| critical.windows(2).any(|w| w[0] == f && w[1] == t);
    let mut s = String::new();
    let _ = write!(
        s,
        "<svg class=\"chart dependency-graph\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">\n<title>Dependency graph: {} steps in {rows} levels; critical path {}</title>\n<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#57606a\"/></marker><marker id=\"arrow-critical\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"9\" markerHeight=\"9\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"#d1242f\"/></marker></defs>\n",
        g.nodes.len(),
        escape(
            &critical
                .iter()
                .map(|&i| g.nodes[i].id.as_str())
                .collect::<Vec<_>>()
                .join(" → ")
        )
    );
    for (r, _) in by_row.iter().enumerate() {
        let y = 16 + r * (NODE_H + GAP_Y) + NODE_H / 2 + 4;
        let _ = writeln!(
            s,
            "<text class=\"level\" x=\"8\" y=\"{y}\" fill=\"#57606a\">level {}</text>",
            r + 1
        );
    }
    for &(f, t) in &g.edges {
        let (x1, y1) = (pos[f].0 + NODE_W / 2, pos[f].1 + NODE_H);
        let (x2, y2) = (pos[t].0 + NODE_W / 2, pos[t].1);
        let crit = on_path(f, t);
        let _ = writeln!(
            s,
            "<path class=\"edge{}\" data-from=\"{}\" data-to=\"{}\" d=\"M{x1},{y1} C{x1},{} {x2},{} {x2},{y2}\" fill=\"none\" stroke=\"{}\" stroke-width=\"{}\" marker-end=\"url(#{})\"/>",
            if crit { " critical" } else { "" },
            escape(&g.nodes[f].id),
            escape(&g.nodes[t].id),
            y1 + GAP_Y / 2,
            y2.saturating_sub(GAP_Y / 2),
            if crit { "#d1242f" } else { "#8c959f" },
            if crit { 2.5 } else { 1.2 },
            if crit { "arrow-critical" } else { "arrow" },
        );
    }
    for (i, node) in g.nodes.iter().enumerate() {
        let (x, y) = pos[i];
        let crit = critical.contains(&i);
        let _ = writeln!(
            s,
            "<g class=\"step {}{}\" data-step=\"{}\"><title>{} ({})</title><rect x=\"{x}\" y=\"{y}\" width=\"{NODE_W}\" height=\"{NODE_H}\" rx=\"6\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text></g>",
            escape(&node.status),
            if crit { " critical" } else { "" },
            escape(&node.id),
            escape(&node.label),
            escape(&node.status),
            fill(&node.status),
            if crit { "#d1242f" } else { "#57606a" },
            if crit { "2.5" } else { "1" },
            x + NODE_W / 2,
            y + NODE_H / 2 + 4,
            // Markdown code spans read as plain text in a box.
            escape(&clip(&node.label.replace('`', ""), 30)),
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"8\" y=\"{}\" fill=\"#d1242f\">red: the critical path</text>\n</svg>",
        height - 6
    );
    s
}

/// A tick step of 1, 2 or 5 × 10^k ms giving at most ~8 ticks over `span`.
fn tick_step(span: u64) -> u64 {
    let mut step = 1u64;
    loop {
        for m in [1, 2, 5] {
            if span / (step * m) <= 8 {
                return step * m;
            }
        }
        step = step.saturating_mul(10);
    }
}

/// A tick label: ms on runs under 2 s, seconds under 2 min, else m:ss.
pub fn tick_label(ms: u64, span: u64, step: u64) -> String {
    if span < 2_000 {
        format!("{ms} ms")
    } else if span < 120_000 {
        if step.is_multiple_of(1000) {
            format!("{} s", ms / 1000)
        } else {
            format!("{:.1} s", ms as f64 / 1000.0)
        }
    } else {
        format!("{}:{:02}", ms / 60_000, ms / 1000 % 60)
    }
}

/// The timeline: one row per step that ran, a bar from its start to its end
/// (ms since the run started), ticks along the top; critical-path steps
/// outlined in red.
pub fn gantt_svg(bars: &[Bar], critical_ids: &[&str]) -> String {
    const ROW: usize = 26;
    const LABEL_W: usize = 70;
    const PLOT_W: usize = 760;
    let span = bars.iter().map(|b| b.end_ms).max().unwrap_or(1).max(1);
    let step = tick_step(span);
    let height = 30 + bars.len() * ROW + 10;
    let width = LABEL_W + PLOT_W + 40;
    let x_of = |ms: u64| LABEL_W as f64 + ms as f64 * PLOT_W as f64 / span as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart timeline\" xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" font-family=\"system-ui,sans-serif\" font-size=\"12\">\n<title>Timeline: {} steps over {}</title>",
        bars.len(),
        tick_label(span, span, 1)
    );
    let mut t = 0;
    while t <= span {
        let x = x_of(t);
        let _ = writeln!(
            s,
            "<g class=\"tick\"><line x1=\"{x:.1}\" y1=\"22\" x2=\"{x:.1}\" y2=\"{}\" stroke=\"#d0d7de\"/><text x=\"{x:.1}\" y=\"14\" text-anchor=\"middle\" fill=\"#57606a\">{}</text></g>",
            height - 10,
            tick_label(t, span, step)
        );
        t += step;
    }
    for (k, b) in bars.iter().enumerate() {
        let y = 30 + k * ROW;
        let x = x_of(b.start_ms);
        let w = (x_of(b.end_ms) - x).max(2.0);
        let crit = critical_ids.contains(&b.id.as_str());
        let _ = writeln!(
            s,
            "<g class=\"bar{}\" data-step=\"{}\"><title>{}: {} – {} ms</title><text x=\"4\" y=\"{}\">{}</text><rect x=\"{x:.1}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" rx=\"3\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/></g>",
            if crit { " critical" } else { "" },
            escape(&b.id),
            escape(&b.id),
            b.start_ms,
            b.end_ms,
            y + ROW / 2,
            escape(&b.id),
            ROW - 8,
            fill(if b.tag.is_empty() { "pending" } else { &b.tag }),
            if crit { "#d1242f" } else { "#57606a" },
            if crit { 2 } else { 1 },
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_read_ms_s_or_minutes() {
        assert_eq!(tick_step(450), 100);
        assert_eq!(tick_label(200, 450, 100), "200 ms");
        assert_eq!(tick_step(7_300), 1000);
        assert_eq!(tick_label(3000, 7_300, 1000), "3 s");
        assert_eq!(tick_label(500, 3_000, 500), "0.5 s");
        assert_eq!(tick_label(125_000, 400_000, 60_000), "2:05");
    }

    #[test]
    fn levels_and_critical_path_follow_the_edges_and_durations() {
        let lines = [
            "    S01[\"S01: a\"]:::done",
            "    S02[\"S02: b #lt;x#gt;\"]:::done",
            "    S03[\"S03: c\"]:::failed",
            "    S04[\"S04: d\"]:::done",
            "    S01 --> S02",
            "    S01 --> S03",
            "    S02 --> S04",
            "    S03 --> S04",
            "    classDef done fill:#d4edda;",
        ];
        let g = parse_graph(&lines);
        assert_eq!(g.nodes[1].label, "S02: b <x>");
        assert_eq!(g.nodes[2].status, "failed");
        assert_eq!(levels(&g), vec![0, 1, 1, 2]);
        let bars = parse_gantt(&[
            "    S01 : done, S01, 0, 100",
            "    S02 : done, S02, 100, 200",
            "    S03 : crit, S03, 100, 900",
            "    S04 : S04, 900, 1000",
        ]);
        assert_eq!(bars[3].tag, "");
        assert_eq!(critical_path(&g, &bars), vec![0, 2, 3]);
        let svg = graph_svg(&g, &[0, 2, 3]);
        assert!(svg.contains("S02: b &lt;x&gt;"));
        assert_eq!(svg.matches("class=\"edge critical\"").count(), 2);
        let gantt = gantt_svg(&bars, &["S01", "S03", "S04"]);
        assert!(gantt.contains(">400 ms<"), "{gantt}");
        assert!(!gantt.contains("00:00"));
    }
}
