//! `report.html`: report.md as one self-contained page. Its two charts — the
//! dependency graph and the timeline — are drawn as inline SVG by dandori
//! ([`crate::charts`]): no script, no network, readable offline.
//!
//! The Markdown is the subset [`crate::markdown::render`] writes — headings,
//! paragraphs, `-` lists, pipe tables (with `\|` escapes), fenced code blocks,
//! inline code and `**bold**`; anything else is shown as text. Every piece of text
//! is HTML-escaped (request summaries, titles and reasons come from users and
//! models). The Mermaid blocks of report.md (kept there for Markdown viewers)
//! become the SVG charts; a Mermaid block of another kind stays as code.

use std::fmt::Write;

use crate::charts;

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;color:#1f2328;line-height:1.5}\
table{border-collapse:collapse;margin:1rem 0;display:block;overflow-x:auto}\
th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}\
th{background:#f6f8fa}code{background:#f6f8fa;padding:.1rem .3rem;border-radius:4px;font-size:90%}\
pre{background:#f6f8fa;padding:1rem;overflow-x:auto}figure.chart{margin:1rem 0;overflow-x:auto}\
figure.chart svg{max-width:none}";

/// The charts drawn from report.md's two Mermaid blocks.
#[derive(Debug, Default)]
struct Charts {
    graph: Option<String>,
    timeline: Option<String>,
}

/// The lines of every fenced `mermaid` block whose first line is `header`.
fn mermaid_block<'a>(lines: &[&'a str], header: &str) -> Option<Vec<&'a str>> {
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().strip_prefix("```").map(str::trim) == Some("mermaid")
            && lines.get(i + 1).map(|l| l.trim()) == Some(header)
        {
            let body = lines[i + 2..]
                .iter()
                .take_while(|l| !l.trim_start().starts_with("```"))
                .copied()
                .collect();
            return Some(body);
        }
        i += 1;
    }
    None
}

fn draw_charts(md: &str) -> Charts {
    let lines: Vec<&str> = md.lines().collect();
    let graph = mermaid_block(&lines, "graph TD").map(|b| charts::parse_graph(&b));
    let bars = mermaid_block(&lines, "gantt")
        .map(|b| charts::parse_gantt(&b))
        .unwrap_or_default();
    let critical = graph
        .as_ref()
        .map(|g| charts::critical_path(g, &bars))
        .unwrap_or_default();
    let critical_ids: Vec<&str> = graph
        .as_ref()
        .map(|g| critical.iter().map(|&i| g.nodes[i].id.as_str()).collect())
        .unwrap_or_default();
    Charts {
        timeline: (!bars.is_empty()).then(|| charts::gantt_svg(&bars, &critical_ids)),
        graph: graph.as_ref().map(|g| charts::graph_svg(g, &critical)),
    }
}

pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Inline Markdown: `code` spans, then `**bold**` outside them; all text
/// escaped. An unmatched backtick or `**` stays as it is.
fn inline(s: &str) -> String {
    let parts: Vec<&str> = s.split('`').collect();
    let mut out = String::new();
    for (i, part) in parts.iter().enumerate() {
        if i % 2 == 1 && i + 1 < parts.len() {
            let _ = write!(out, "<code>{}</code>", escape(part));
            continue;
        }
        if i % 2 == 1 {
            out.push('`');
        }
        let segs: Vec<String> = escape(part).split("**").map(str::to_string).collect();
        let matched = (segs.len() - 1) / 2 * 2;
        for (j, seg) in segs.iter().enumerate() {
            if j > matched {
                out.push_str("**");
            } else if j > 0 {
                out.push_str(if j % 2 == 1 { "<strong>" } else { "</strong>" });
            }
            out.push_str(seg);
        }
    }
    out
}

/// The cells of a table row: split at `|` not escaped as `\|`.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|');
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('|');
                chars.next();
            }
            '|' => out.push(std::mem::take(&mut cur).trim().to_string()),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    out
}

fn is_separator(line: &str) -> bool {
    let t = line.trim();
    t.starts_with('|') && t.contains('-') && t.chars().all(|c| "|-: ".contains(c))
}

/// The body of the page: report.md's subset of Markdown as HTML, its charts as
/// inline SVG.
pub fn markdown_to_html(md: &str) -> String {
    let mut charts = draw_charts(md);
    let lines: Vec<&str> = md.lines().collect();
    let mut out = String::new();
    let mut para: Vec<&str> = Vec::new();
    let flush = |para: &mut Vec<&str>, out: &mut String| {
        if !para.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", inline(&para.join(" ")));
            para.clear();
        }
    };
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let t = line.trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            flush(&mut para, &mut out);
            let lang = lang.trim();
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                code.push(lines[i]);
                i += 1;
            }
            let chart = match (lang, code.first().map(|l| l.trim())) {
                ("mermaid", Some("graph TD")) => charts.graph.take(),
                ("mermaid", Some("gantt")) => charts.timeline.take(),
                _ => None,
            };
            match chart {
                Some(svg) => {
                    let _ = writeln!(out, "<figure class=\"chart\">\n{}</figure>", svg);
                }
                None => {
                    let code = escape(&code.join("\n"));
                    let _ = writeln!(out, "<pre><code>{code}\n</code></pre>");
                }
            }
            i += 1;
            continue;
        }
        let hashes = t.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && t[hashes..].starts_with(' ') {
            flush(&mut para, &mut out);
            let _ = writeln!(out, "<h{hashes}>{}</h{hashes}>", inline(t[hashes..].trim()));
            i += 1;
            continue;
        }
        if t.starts_with('|') && lines.get(i + 1).is_some_and(|l| is_separator(l)) {
            flush(&mut para, &mut out);
            out.push_str("<table>\n<thead><tr>");
            for c in cells(t) {
                let _ = write!(out, "<th>{}</th>", inline(&c));
            }
            out.push_str("</tr></thead>\n<tbody>\n");
            i += 2;
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                out.push_str("<tr>");
                for c in cells(lines[i]) {
                    let _ = write!(out, "<td>{}</td>", inline(&c));
                }
                out.push_str("</tr>\n");
                i += 1;
            }
            out.push_str("</tbody>\n</table>\n");
            continue;
        }
        if t.starts_with("- ") || t == "-" {
            flush(&mut para, &mut out);
            out.push_str("<ul>\n");
            while i < lines.len() {
                let Some(item) = lines[i]
                    .trim_start()
                    .strip_prefix("- ")
                    .or_else(|| (lines[i].trim() == "-").then_some(""))
                else {
                    break;
                };
                let _ = writeln!(out, "<li>{}</li>", inline(item));
                i += 1;
            }
            out.push_str("</ul>\n");
            continue;
        }
        if t.trim().is_empty() {
            flush(&mut para, &mut out);
        } else {
            para.push(t.trim_end());
        }
        i += 1;
    }
    flush(&mut para, &mut out);
    out
}

/// The whole page. `title` is the first heading of the report; `lang` the
/// language of the request (`en`, `ja`). No script.
pub fn render_html(md: &str, lang: &str) -> String {
    let title = md
        .lines()
        .find_map(|l| l.strip_prefix("# "))
        .unwrap_or("dandori run report");
    format!(
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"dandori\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
        escape(lang),
        escape(title),
        markdown_to_html(md),
    )
}
