//! `dandori report --html`: the page is opened in a real headless browser
//! (Debian `chromium`, installed by scripts/test.sh) and the DOM it ends with is
//! checked: both Mermaid charts became SVG with the step ids, no script error, the
//! run's texts escaped. mermaid.min.js comes from npm `mermaid` (installed by
//! scripts/test.sh into target/test-tools/node) and is inlined, so no network.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use super::runs::{finished_run, ok};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

fn chromium() -> PathBuf {
    on_path(&["chromium", "chromium-browser", "google-chrome"]).unwrap_or_else(|| {
        panic!(
            "no chromium on PATH: run the tests with ./scripts/test.sh, which installs Debian's chromium (as root, with apt)"
        )
    })
}

/// npm `mermaid`'s dist/mermaid.min.js under target/test-tools (or
/// $DANDORI_TEST_TOOLS, which scripts/test.sh sets).
fn mermaid_js() -> PathBuf {
    let tools = std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"));
    let js = tools.join("node/node_modules/mermaid/dist/mermaid.min.js");
    assert!(
        js.is_file(),
        "{} missing: run the tests with ./scripts/test.sh, which installs npm `mermaid` into target/test-tools/node",
        js.display()
    );
    js
}

/// The DOM after the page's scripts ran, and the browser's console lines.
fn rendered_dom(page: &Path) -> (String, Vec<String>) {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            // Nothing may come from the network: every name fails to resolve.
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=15000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    let dom = ok(&out);
    let console = String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains(":CONSOLE"))
        .map(str::to_string)
        .collect();
    (dom, console)
}

fn report_html(run_dir: &Path, extra: &[&str]) -> PathBuf {
    let out = Command::new(BIN)
        .arg("report")
        .arg(run_dir)
        .arg("--html")
        .args(extra)
        .env_remove("DANDORI_MERMAID_JS")
        .output()
        .unwrap();
    PathBuf::from(ok(&out).trim())
}

/// The `<svg …>…</svg>` elements of a DOM dump.
fn svgs(dom: &str) -> Vec<&str> {
    dom.match_indices("<svg")
        .map(|(i, _)| {
            let end = dom[i..].find("</svg>").map_or(dom.len(), |e| i + e + 6);
            &dom[i..end]
        })
        .collect()
}

#[test]
fn html_report_renders_its_charts_in_a_headless_browser() {
    let dir = tempfile::tempdir().unwrap();
    let (_repo, run_dir) = finished_run(&dir.path().canonicalize().unwrap());
    // Hostile texts in the plan and the recorded step titles: they must reach the
    // page (tables and chart labels) as text, not markup.
    let planning_path = run_dir.join("planning.json");
    let mut planning: Value =
        serde_json::from_str(&std::fs::read_to_string(&planning_path).unwrap()).unwrap();
    planning["context"]["summary"] = Value::from(
        "Write <img src=x onerror=\"document.title='pwned'\"> files & <script>window.pwned=1</script>",
    );
    std::fs::write(&planning_path, serde_json::to_string(&planning).unwrap()).unwrap();
    let trace_path = run_dir.join("trace.jsonl");
    let trace: Vec<String> = std::fs::read_to_string(&trace_path)
        .unwrap()
        .lines()
        .map(|l| {
            let mut e: Value = serde_json::from_str(l).unwrap();
            if e["event"] == "EXECUTION_END" {
                e["data"]["steps"][1]["title"] = Value::from("Write <b>S02</b> & \"quote\" it");
            }
            e.to_string()
        })
        .collect();
    std::fs::write(&trace_path, trace.join("\n") + "\n").unwrap();

    let page = report_html(&run_dir, &["--mermaid-js", mermaid_js().to_str().unwrap()]);
    assert_eq!(page, run_dir.join("report.html"));
    let (dom, console) = rendered_dom(&page);
    assert_eq!(
        console,
        Vec::<String>::new(),
        "console messages (script errors?)"
    );
    assert!(
        dom.contains("data-charts=\"rendered\""),
        "charts not rendered:\n{}",
        &dom[dom.len().saturating_sub(3000)..]
    );
    assert!(!dom.contains("class=\"chart-error\""));
    // Both charts are SVG now: the dependency graph (a flowchart with every step
    // and its edges) and the Gantt timeline (a bar per step that ran).
    let charts: Vec<&str> = svgs(&dom)
        .into_iter()
        .filter(|s| s.contains("aria-roledescription"))
        .collect();
    assert_eq!(charts.len(), 2, "{charts:?}");
    let graph = charts
        .iter()
        .find(|s| s.contains("aria-roledescription=\"flowchart"))
        .expect("flowchart SVG");
    let gantt = charts
        .iter()
        .find(|s| s.contains("aria-roledescription=\"gantt"))
        .expect("gantt SVG");
    for id in ["S01", "S02", "S03"] {
        assert!(graph.contains(&format!("{id}:")), "{id} not in the graph");
        assert!(gantt.contains(id), "{id} not in the timeline");
    }
    assert!(graph.contains("edge"), "no edges drawn");
    assert!(
        !dom.contains("<pre class=\"mermaid\">graph TD"),
        "chart source left unrendered"
    );
    // The hostile texts are text: no element was injected, no script ran.
    assert!(dom.contains("&lt;img src=x"), "summary not escaped");
    assert!(dom.contains("&lt;script&gt;window.pwned=1&lt;/script&gt;"));
    assert!(!dom.contains("<img src=\"x\""));
    assert!(!dom.contains("<title>pwned"));
    assert!(!dom.contains("<b>S02</b>"));
    assert!(dom.contains("Write &lt;b&gt;S02&lt;/b&gt; &amp; \"quote\" it"));
    // The tables are there too.
    assert!(dom.contains("<th>Step</th>"));
}

#[test]
fn html_report_without_mermaid_keeps_the_chart_sources_offline() {
    let dir = tempfile::tempdir().unwrap();
    let (_repo, run_dir) = finished_run(&dir.path().canonicalize().unwrap());
    let out = dir.path().join("elsewhere/r.html");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let page = report_html(&run_dir, &["--out", out.to_str().unwrap()]);
    assert_eq!(page, out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(
            "<script src=\"https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.min.js\">"
        )
    );
    // The CDN is unreachable: the page says so and shows the sources.
    let (dom, _) = rendered_dom(&page);
    assert!(dom.contains("data-charts=\"unavailable\""), "{dom}");
    assert_eq!(dom.matches("class=\"chart-error\"").count(), 2);
    assert!(dom.contains("<pre class=\"mermaid\">graph TD"));
    assert!(dom.contains("<th>Step</th>"));

    // Bad inputs: exit 2 with a reason code naming the path.
    let bad = Command::new(BIN)
        .arg("report")
        .arg(&run_dir)
        .args(["--html", "--mermaid-js", "/nonexistent/mermaid.min.js"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("/nonexistent/mermaid.min.js"), "{err}");
    let not_js = dir.path().join("x.js");
    std::fs::write(&not_js, "alert(1)").unwrap();
    let bad = Command::new(BIN)
        .arg("report")
        .arg(&run_dir)
        .arg("--html")
        .arg("--mermaid-js")
        .arg(&not_js)
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ARGUMENT_INVALID"));
}
