//! report.html: report.md's Markdown as HTML (snapshot of the fixture report),
//! escaping of every text, the charts drawn as inline SVG, no script.

use dandori_report::html::{markdown_to_html, render_html};
use dandori_report::render;
use pretty_assertions::assert_eq;

use super::fixture::fixture;

#[test]
fn fixture_report_as_html_snapshot() {
    let f = fixture();
    insta::assert_snapshot!("report_html_body", markdown_to_html(&render(&f.input())));
}

#[test]
fn markdown_subset() {
    let md = "# T <1>\n\nline one\nline `a<b` **bold** two\n\n- item `x`\n- **y**\n\n| A | B |\n|---|---|\n| a \\| b | `c` |\n\n```\nraw <x>\n```\n\nunmatched ` and ** stay\n";
    assert_eq!(
        markdown_to_html(md),
        "<h1>T &lt;1&gt;</h1>\n\
         <p>line one line <code>a&lt;b</code> <strong>bold</strong> two</p>\n\
         <ul>\n<li>item <code>x</code></li>\n<li><strong>y</strong></li>\n</ul>\n\
         <table>\n<thead><tr><th>A</th><th>B</th></tr></thead>\n<tbody>\n<tr><td>a | b</td><td><code>c</code></td></tr>\n</tbody>\n</table>\n\
         <pre><code>raw &lt;x&gt;\n</code></pre>\n\
         <p>unmatched ` and ** stay</p>\n"
    );
}

#[test]
fn hostile_text_stays_text() {
    let md = "# Run report: <script>x</script>\n\nA <img src=x onerror=alert(1)> & \"q\"\n\n```mermaid\ngraph TD\n    S01[\"S01: </pre><script>alert(1)</script>\"]\n```\n";
    let page = render_html(md, "en");
    assert!(page.contains("<title>Run report: &lt;script&gt;x&lt;/script&gt;</title>"));
    assert!(page.contains("<p>A &lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;</p>"));
    assert!(page.contains("S01: &lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.contains("<html lang=\"en\">"));
    // No script at all: the charts are SVG.
    assert_eq!(page.matches("<script").count(), 0, "{page}");
    assert!(page.contains("<svg class=\"chart dependency-graph\""));
}

#[test]
fn fixture_charts_are_svg_with_levels_critical_path_and_a_readable_axis() {
    let f = fixture();
    let md = render(&f.input());
    let page = render_html(&md, "ja");
    assert!(page.contains("<html lang=\"ja\">"));
    assert!(!page.contains("<script"));
    assert!(!page.contains("```mermaid") && !page.contains("graph TD"));
    assert_eq!(
        page.matches("<svg class=\"chart dependency-graph\"")
            .count(),
        1
    );
    assert_eq!(page.matches("<svg class=\"chart timeline\"").count(), 1);
    for s in &f.completion.steps {
        assert!(
            page.contains(&format!("data-step=\"{}\"", s.step_id)),
            "{} not drawn",
            s.step_id
        );
    }
    assert!(page.contains("class=\"level\""));
    assert!(page.contains(" critical\""), "no critical path drawn");
    // The time axis reads in ms / s / m:ss, never mermaid's 00:00 on short runs.
    let ticks: Vec<&str> = page
        .split("<g class=\"tick\">")
        .skip(1)
        .filter_map(|t| t.split("middle\" fill=\"#57606a\">").nth(1))
        .filter_map(|t| t.split('<').next())
        .collect();
    assert!(ticks.len() >= 2, "{ticks:?}");
    assert!(
        ticks
            .iter()
            .all(|t| t.ends_with(" ms") || t.ends_with(" s") || t.contains(':')),
        "{ticks:?}"
    );
    assert!(!ticks.contains(&"00:00"), "{ticks:?}");
}

#[test]
fn chart_labels_are_text() {
    let mut f = fixture();
    f.completion.steps[0].title = "Use <b>bold</b> \"quotes\"".to_string();
    let md = render(&f.input());
    assert!(
        md.contains("S01[\"S01: Use #lt;b#gt;bold#lt;/b#gt; 'quotes'\"]"),
        "{md}"
    );
}
