//! Text and Mermaid renderings of a [`GraphAnalysis`].

use std::collections::HashMap;
use std::fmt::Write;

use super::GraphAnalysis;
use crate::{EdgeType, ExecutionMode, GroupMode, Step};

fn mode_name(m: ExecutionMode) -> &'static str {
    match m {
        ExecutionMode::Single => "single",
        ExecutionMode::Parallel => "parallel",
        ExecutionMode::Sequential => "sequential",
        ExecutionMode::Hybrid => "hybrid",
    }
}

fn edge_name(t: EdgeType) -> &'static str {
    match t {
        EdgeType::Data => "data",
        EdgeType::Resource => "resource",
        EdgeType::Logical => "logical",
    }
}

/// A human-readable summary: mode, groups, edges, critical path.
pub fn to_text(a: &GraphAnalysis) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "execution mode: {}", mode_name(a.execution_mode));
    let _ = writeln!(out, "execution groups:");
    for g in &a.execution_groups {
        let mode = match g.mode {
            GroupMode::Parallel => "parallel",
            GroupMode::Sequential => "sequential",
        };
        let after = if g.depends_on_groups.is_empty() {
            String::new()
        } else {
            let gs: Vec<String> = g.depends_on_groups.iter().map(u64::to_string).collect();
            format!(" after group {}", gs.join(", "))
        };
        let _ = writeln!(
            out,
            "  group {} ({mode}{after}): {}",
            g.group_index,
            g.step_ids.join(", ")
        );
    }
    let _ = writeln!(out, "edges:");
    if a.edges.is_empty() {
        let _ = writeln!(out, "  (none)");
    }
    for e in &a.edges {
        let _ = writeln!(out, "  {} -> {} ({})", e.from, e.to, edge_name(e.kind));
    }
    let _ = writeln!(out, "critical path: {}", a.critical_path.join(" -> "));
    out
}

/// A Mermaid `flowchart` of the steps (labelled with their titles), the edges
/// (labelled with their type) and one subgraph per execution group.
pub fn to_mermaid(a: &GraphAnalysis, steps: &[Step]) -> String {
    let titles: HashMap<&str, &str> = steps
        .iter()
        .map(|s| (s.step_id.as_str(), s.title.as_str()))
        .collect();
    let title = |id: &str| titles.get(id).copied().unwrap_or("");
    let mut out = String::from("flowchart TD\n");
    for g in &a.execution_groups {
        let _ = writeln!(
            out,
            "  subgraph G{}[\"group {}\"]",
            g.group_index, g.group_index
        );
        for id in &g.step_ids {
            let _ = writeln!(
                out,
                "    {}[\"{}: {}\"]",
                node_id(id),
                escape(id),
                escape(title(id))
            );
        }
        let _ = writeln!(out, "  end");
    }
    for e in &a.edges {
        let _ = writeln!(
            out,
            "  {} -->|{}| {}",
            node_id(&e.from),
            edge_name(e.kind),
            node_id(&e.to)
        );
    }
    out
}

/// Mermaid node ids must be plain words.
fn node_id(step_id: &str) -> String {
    step_id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

fn escape(s: &str) -> String {
    s.replace('"', "#quot;").replace(['\n', '\r'], " ")
}
