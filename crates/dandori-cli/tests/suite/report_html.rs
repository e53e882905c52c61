//! `dandori report --html`: the page is opened in a real headless browser
//! (Debian `chromium`, installed by scripts/test.sh) with every network name
//! unresolvable, and the DOM it ends with is checked: the dependency graph and the
//! timeline are inline SVG drawn by dandori with the step ids, the page holds no
//! script, the browser logs nothing, the run's texts are escaped.

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

/// The DOM the browser ends with, and its console lines.
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

    let page = report_html(&run_dir, &[]);
    assert_eq!(page, run_dir.join("report.html"));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("<script"), "the page needs no script");
    assert!(!html.contains("mermaid"), "no mermaid left in the page");
    let (dom, console) = rendered_dom(&page);
    assert_eq!(console, Vec::<String>::new(), "console messages (errors?)");
    // Both charts are SVG in the page the browser shows: the dependency graph
    // (every step, its edges, the levels, the critical path) and the timeline (a
    // bar per step that ran, a time axis in ms or s).
    let charts = svgs(&dom);
    assert_eq!(charts.len(), 2, "{charts:?}");
    let graph = charts
        .iter()
        .find(|s| s.contains("class=\"chart dependency-graph\""))
        .expect("dependency graph SVG");
    let gantt = charts
        .iter()
        .find(|s| s.contains("class=\"chart timeline\""))
        .expect("timeline SVG");
    for id in ["S01", "S02", "S03"] {
        assert!(graph.contains(&format!("{id}:")), "{id} not in the graph");
        assert!(
            gantt.contains(&format!("data-step=\"{id}\"")),
            "{id} not in the timeline"
        );
    }
    assert!(graph.contains("class=\"edge"), "no edges drawn");
    assert!(graph.contains("class=\"level\""), "no levels");
    assert!(graph.contains(" critical\""), "no critical path");
    assert!(
        gantt.contains(" ms</text>") || gantt.contains(" s</text>"),
        "time axis not in ms or s: {gantt}"
    );
    assert!(!gantt.contains(">00:00<"));
    assert!(!dom.contains("graph TD"), "chart source left in the page");
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
fn html_report_elsewhere_is_readable_and_in_the_request_language() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let (_repo, run_dir) = finished_run(&dir.path().canonicalize().unwrap());
    let out = dir.path().join("elsewhere/r.html");
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    let page = report_html(&run_dir, &["--out", out.to_str().unwrap()]);
    assert_eq!(page, out);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<html lang=\"en\">"), "{html}");
    assert!(html.contains("<svg class=\"chart dependency-graph\""));
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o644, "report.html mode {mode:o}");
    let mode = std::fs::metadata(run_dir.join("report.md"))
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o644, "report.md mode {mode:o}");

    // A request written in Japanese: lang="ja".
    let planning_path = run_dir.join("planning.json");
    let mut planning: Value =
        serde_json::from_str(&std::fs::read_to_string(&planning_path).unwrap()).unwrap();
    planning["context"]["summary"] = Value::from("CSV エクスポート機能を追加する");
    std::fs::write(&planning_path, serde_json::to_string(&planning).unwrap()).unwrap();
    let page = report_html(&run_dir, &[]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("<html lang=\"ja\">"), "{html}");

    // Bad input: not a finished run directory → exit 2 with a reason code.
    let bad = Command::new(BIN)
        .arg("report")
        .arg(dir.path().join("nowhere"))
        .arg("--html")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    // The flag of the mermaid.js days is gone.
    let old = Command::new(BIN)
        .arg("report")
        .arg(&run_dir)
        .args(["--html", "--mermaid-js", "x.js"])
        .output()
        .unwrap();
    assert_eq!(old.status.code(), Some(2));
}
