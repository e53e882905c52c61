//! report.html: report.md's Markdown as HTML (snapshot of the fixture report),
//! escaping of every text, the Mermaid blocks left for the browser, the script.

use dandori_report::html::{DEFAULT_MERMAID_URL, MermaidScript, markdown_to_html, render_html};
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
    let page = render_html(md, &MermaidScript::Url(DEFAULT_MERMAID_URL.to_string()));
    assert!(page.contains("<title>Run report: &lt;script&gt;x&lt;/script&gt;</title>"));
    assert!(page.contains("<p>A &lt;img src=x onerror=alert(1)&gt; &amp; &quot;q&quot;</p>"));
    assert!(page.contains(
        "<pre class=\"mermaid\">graph TD\n    S01[&quot;S01: &lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;&quot;]\n</pre>"
    ));
    // Two scripts only: the library and the chart runner.
    assert_eq!(page.matches("<script").count(), 2);
}

#[test]
fn inlined_library_cannot_close_its_script_element() {
    let page = render_html(
        "# R\n",
        &MermaidScript::Inline("var mermaid = '</script><b>';".to_string()),
    );
    assert!(page.contains("<script>var mermaid = '<\\/script><b>';</script>"));
    assert!(!page.contains("cdn.jsdelivr.net"));
    assert!(page.contains("data-charts=\"pending\""));
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
