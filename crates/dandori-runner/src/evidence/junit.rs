//! Per-test results from JUnit XML reports: the machine-readable form many
//! runners write beside (or instead of) their console output — Maven Surefire
//! and Failsafe (`target/surefire-reports/TEST-*.xml`), Gradle
//! (`build/test-results/**/TEST-*.xml`), jest-junit (`junit.xml`), pytest
//! `--junitxml=PATH`, PHPUnit `--log-junit PATH`, go-junit-report.
//!
//! A test command's reports are the files at those places (and at a path its own
//! command line names) that are new or changed after it ran: [`Reports::before`]
//! notes what is there before the command, [`Reports::fresh`] what it wrote, so a
//! report left by the base commit or an earlier command never counts.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::time::SystemTime;

use super::parse::{TestResults, record};

/// A report larger than this is not read.
pub const MAX_REPORT_BYTES: u64 = 16 * 1024 * 1024;
/// At most this many reports are read after one command.
pub const MAX_REPORTS: usize = 256;
/// Directories visited looking for report folders, and their depth.
const MAX_DIRS: usize = 5_000;
const MAX_DEPTH: usize = 8;

/// The results of a JUnit XML report. `py_file` says whether a `.py` file (a
/// path relative to the directory the tests ran in) exists: pytest's reports
/// (a suite named `pytest`) name a test by its dotted `classname`
/// (`tests.test_x.TestC`), which maps back to pytest's id
/// (`tests/test_x.py::TestC::test_a`) where the file is, or give its `file`.
/// Other tests are named `classname.name` (`com.ex.CalcTest.adds`), or `name`
/// alone when it already holds the class name (jest-junit's default).
/// Skipped tests have no result; pytest's expected failures
/// (`<skipped type="pytest.xfail">`) pass, as in its console summary.
pub fn read(text: &str, py_file: &dyn Fn(&str) -> bool) -> Result<TestResults, String> {
    let doc = roxmltree::Document::parse(text).map_err(|e| format!("not well-formed XML: {e}"))?;
    let root = doc.root_element();
    let tag = root.tag_name().name();
    if tag != "testsuites" && tag != "testsuite" {
        return Err(format!(
            "not a JUnit report: the root element is <{tag}>, not <testsuites> or <testsuite>"
        ));
    }
    let mut out = TestResults::new();
    for case in root
        .descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == "testcase")
    {
        let Some(name) = case.attribute("name").filter(|n| !n.trim().is_empty()) else {
            continue;
        };
        let mut passed = Some(true);
        for child in case.children().filter(|n| n.is_element()) {
            match child.tag_name().name() {
                "failure" | "error" => passed = Some(false),
                "skipped" if passed == Some(true) => {
                    passed = (child.attribute("type") == Some("pytest.xfail")).then_some(true)
                }
                _ => {}
            }
        }
        if let Some(passed) = passed {
            // pytest's suite is named `pytest` (`junit_suite_name`), its
            // root `pytest tests`; other Python reporters (unittest-xml-reporting)
            // keep unittest's dotted ids.
            let pytest = case.ancestors().any(|a| {
                matches!(
                    (a.tag_name().name(), a.attribute("name")),
                    ("testsuite", Some("pytest")) | ("testsuites", Some("pytest tests"))
                )
            });
            let no_file = |_: &str| false;
            let id = test_id(
                case.attribute("classname").unwrap_or("").trim(),
                name.trim(),
                case.attribute("file").filter(|_| pytest),
                if pytest { py_file } else { &no_file },
            );
            record(&mut out, &id, passed);
        }
    }
    Ok(out)
}

fn test_id(
    classname: &str,
    name: &str,
    file: Option<&str>,
    py_file: &dyn Fn(&str) -> bool,
) -> String {
    let pytest_id = |file: &str, rest: &str| {
        let mut id = file.to_string();
        for part in rest.split('.').filter(|p| !p.is_empty()) {
            id.push_str("::");
            id.push_str(part);
        }
        format!("{id}::{name}")
    };
    // pytest's xunit1 family names the file.
    if let Some(file) = file.filter(|f| f.ends_with(".py") && !f.starts_with('/')) {
        let module = file.trim_end_matches(".py").replace('/', ".");
        if let Some(rest) = classname.strip_prefix(&module) {
            return pytest_id(file, rest);
        }
    }
    // xunit2 (pytest's default): the longest dotted prefix that is a file.
    if !classname.is_empty() && !classname.contains(['/', ' ']) {
        let parts: Vec<&str> = classname.split('.').collect();
        for i in (1..=parts.len()).rev() {
            let file = format!("{}.py", parts[..i].join("/"));
            if py_file(&file) {
                return pytest_id(&file, &parts[i..].join("."));
            }
        }
    }
    if classname.is_empty() || name == classname || name.starts_with(&format!("{classname} ")) {
        name.to_string()
    } else {
        format!("{classname}.{name}")
    }
}

/// The report files a command may write: their size and modification time.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Reports {
    seen: BTreeMap<PathBuf, (u64, Option<SystemTime>)>,
}

/// The per-test results of a command's fresh reports, and what went wrong.
#[derive(Debug, Default)]
pub struct Collected {
    pub tests: TestResults,
    /// Each report read, with its number of results.
    pub read: Vec<(PathBuf, usize)>,
    /// `path: reason` for each report that could not be read.
    pub errors: Vec<String>,
}

impl Reports {
    /// The reports in `dir` before `command` runs.
    pub fn before(dir: &Path, command: &str) -> Reports {
        Reports {
            seen: scan(dir, command),
        }
    }

    /// The reports `command` wrote in `dir` since [`Reports::before`], read.
    pub fn fresh(&self, dir: &Path, command: &str) -> Collected {
        let fresh: Vec<PathBuf> = scan(dir, command)
            .into_iter()
            .filter(|(p, m)| self.seen.get(p) != Some(m))
            .map(|(p, _)| p)
            .collect();
        read_files(dir, dir, &fresh)
    }
}

/// Reads the reports `files` (named relative to `shown_from` in messages); a
/// pytest id is resolved against the files of `dir`, where the tests ran.
pub fn read_files(dir: &Path, shown_from: &Path, files: &[PathBuf]) -> Collected {
    let mut c = Collected::default();
    let py_file = |f: &str| {
        Path::new(f)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
            && dir.join(f).is_file()
    };
    for path in files {
        let shown = path
            .strip_prefix(shown_from)
            .unwrap_or(path)
            .display()
            .to_string();
        let len = match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_file() => m.len(),
            Ok(_) => continue,
            Err(e) => {
                c.errors.push(format!("{shown}: {e}"));
                continue;
            }
        };
        if len > MAX_REPORT_BYTES {
            c.errors.push(format!(
                "{shown}: {len} bytes, more than the {MAX_REPORT_BYTES} read"
            ));
            continue;
        }
        // Bounded again while reading: the file may have grown since.
        let mut bytes = Vec::new();
        let read_bytes = std::fs::File::open(path).and_then(|f| {
            use std::io::Read as _;
            f.take(MAX_REPORT_BYTES + 1).read_to_end(&mut bytes)
        });
        if let Err(e) = read_bytes {
            c.errors.push(format!("{shown}: {e}"));
            continue;
        }
        if bytes.len() as u64 > MAX_REPORT_BYTES {
            c.errors.push(format!(
                "{shown}: more than the {MAX_REPORT_BYTES} bytes read"
            ));
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        match read(&text, &py_file) {
            Ok(tests) => {
                c.read.push((PathBuf::from(&shown), tests.len()));
                for (id, passed) in tests {
                    record(&mut c.tests, &id, passed);
                }
            }
            Err(e) => c.errors.push(format!("{shown}: {e}")),
        }
    }
    c
}

/// Report paths a command line names: pytest `--junitxml=PATH` /
/// `--junit-xml PATH`, PHPUnit `--log-junit PATH`. Only paths inside `dir`.
pub fn named_reports(dir: &Path, command: &str) -> Vec<PathBuf> {
    let words = shell_words::split(command)
        .unwrap_or_else(|_| command.split_whitespace().map(str::to_string).collect());
    let flags = ["--junitxml", "--junit-xml", "--log-junit"];
    let mut out = Vec::new();
    let mut take_next = false;
    for w in &words {
        let path = if take_next {
            take_next = false;
            Some(w.as_str())
        } else if flags.contains(&w.as_str()) {
            take_next = true;
            None
        } else {
            flags
                .iter()
                .find_map(|f| w.strip_prefix(f).and_then(|r| r.strip_prefix('=')))
        };
        let Some(path) = path.map(Path::new) else {
            continue;
        };
        let rel = if path.is_absolute() {
            path.strip_prefix(dir).ok()
        } else {
            Some(path)
        };
        if let Some(rel) = rel.filter(|r| {
            r.components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        }) {
            out.push(dir.join(rel));
        }
    }
    out
}

/// The report files in `dir`: the ones `command` names, `junit.xml`, and
/// `TEST-*.xml` under `target/surefire-reports`, `target/failsafe-reports` and
/// `build/test-results` at any depth up to [`MAX_DEPTH`] (no hidden folders,
/// no `node_modules`). Regular files only (never a symlink), at most
/// [`MAX_REPORTS`].
fn scan(dir: &Path, command: &str) -> BTreeMap<PathBuf, (u64, Option<SystemTime>)> {
    let mut files = named_reports(dir, command);
    files.push(dir.join("junit.xml"));
    let mut stack = vec![(dir.to_path_buf(), 0usize)];
    let mut visited = 0;
    while let Some((d, depth)) = stack.pop() {
        visited += 1;
        if visited > MAX_DIRS {
            break;
        }
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let name = e.file_name().to_string_lossy().into_owned();
            let path = e.path();
            match name.as_str() {
                "target" => {
                    for sub in ["surefire-reports", "failsafe-reports"] {
                        report_files(&path.join(sub), 0, &mut files);
                    }
                }
                "build" => report_files(&path.join("test-results"), 0, &mut files),
                "node_modules" | "__pycache__" => {}
                n if n.starts_with('.') => {}
                _ if depth < MAX_DEPTH => stack.push((path, depth + 1)),
                _ => {}
            }
        }
    }
    let mut out = BTreeMap::new();
    for f in files {
        if out.len() >= MAX_REPORTS {
            break;
        }
        if let Ok(m) = std::fs::symlink_metadata(&f)
            && m.file_type().is_file()
        {
            out.insert(f, (m.len(), m.modified().ok()));
        }
    }
    out
}

/// `TEST-*.xml` in `d` and its subfolders (Gradle: `test-results/<task>/`).
fn report_files(d: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(d) else {
        return;
    };
    for e in entries.flatten() {
        if out.len() > MAX_REPORTS {
            return;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        match e.file_type() {
            Ok(t) if t.is_dir() && depth < 3 => report_files(&e.path(), depth + 1, out),
            Ok(t) if t.is_file() && name.starts_with("TEST-") && name.ends_with(".xml") => {
                out.push(e.path())
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(pairs: &[(&str, bool)]) -> TestResults {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    fn no_files(_: &str) -> bool {
        false
    }

    /// What pytest 8 writes with `--junitxml` (xunit2, its default), as written
    /// by the test tools' pytest for a file with a class, a parametrized test,
    /// a failure, a skip and an expected failure.
    const PYTEST: &str = r#"<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0" failures="1" skipped="2" tests="7" time="0.069" timestamp="2026-11-27T05:52:15.046259+00:00" hostname="vm"><testcase classname="tests.test_slug" name="test_basic" time="0.000" /><testcase classname="tests.test_slug" name="test_case[a-b]" time="0.000" /><testcase classname="tests.test_slug" name="test_new" time="0.000"><failure message="AssertionError: x&#10;assert 0">&gt;   def test_new(): assert 0, "x"
E   AssertionError: x

tests/test_slug.py:5: AssertionError</failure></testcase><testcase classname="tests.test_slug" name="test_skip" time="0.000"><skipped type="pytest.skip" message="later">/w/tests/test_slug.py:6: later</skipped></testcase><testcase classname="tests.test_slug" name="test_xf" time="0.000"><skipped type="pytest.xfail" message="" /></testcase><testcase classname="tests.test_slug.TestC" name="test_m" time="0.000" /></testsuite></testsuites>"#;

    #[test]
    fn pytest_reports_name_tests_as_pytest_does_where_the_file_exists() {
        let exists = |f: &str| f == "tests/test_slug.py";
        assert_eq!(
            read(PYTEST, &exists).unwrap(),
            results(&[
                ("tests/test_slug.py::TestC::test_m", true),
                ("tests/test_slug.py::test_basic", true),
                ("tests/test_slug.py::test_case[a-b]", true),
                ("tests/test_slug.py::test_new", false),
                ("tests/test_slug.py::test_xf", true),
            ])
        );
        // Without the file, the dotted name.
        let r = read(PYTEST, &no_files).unwrap();
        assert_eq!(r.get("tests.test_slug.TestC.test_m"), Some(&true));
        assert_eq!(r.get("tests.test_slug.test_new"), Some(&false));
    }

    #[test]
    fn pytest_xunit1_reports_name_their_file() {
        let xml = r#"<testsuites><testsuite name="pytest" tests="2"><testcase classname="tests.test_slug" name="test_basic" file="tests/test_slug.py" line="1" time="0.000" /><testcase classname="tests.test_slug.TestC" name="test_m" file="tests/test_slug.py" line="10" time="0.000"><error message="failed on teardown with &quot;x&quot;">boom</error></testcase></testsuite></testsuites>"#;
        assert_eq!(
            read(xml, &no_files).unwrap(),
            results(&[
                ("tests/test_slug.py::TestC::test_m", false),
                ("tests/test_slug.py::test_basic", true),
            ])
        );
    }

    #[test]
    fn surefire_and_gradle_reports() {
        // Maven Surefire 3 (`target/surefire-reports/TEST-com.ex.CalcTest.xml`).
        let surefire = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuite xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="https://maven.apache.org/surefire/maven-surefire-plugin/xsd/surefire-test-report.xsd" version="3.0.2" name="com.ex.CalcTest" time="0.05" tests="4" errors="1" skipped="1" failures="1">
  <properties>
    <property name="java.version" value="21"/>
  </properties>
  <testcase name="adds" classname="com.ex.CalcTest" time="0.002"/>
  <testcase name="divides" classname="com.ex.CalcTest" time="0.003">
    <failure message="expected: &lt;2&gt; but was: &lt;3&gt;" type="org.opentest4j.AssertionFailedError"><![CDATA[org.opentest4j.AssertionFailedError: expected: <2> but was: <3>
	at com.ex.CalcTest.divides(CalcTest.java:14)]]></failure>
    <system-out><![CDATA[dividing]]></system-out>
  </testcase>
  <testcase name="reads" classname="com.ex.CalcTest" time="0">
    <error message="boom" type="java.io.IOException">java.io.IOException: boom</error>
  </testcase>
  <testcase name="later" classname="com.ex.CalcTest" time="0">
    <skipped message="not yet"/>
  </testcase>
</testsuite>"#;
        assert_eq!(
            read(surefire, &no_files).unwrap(),
            results(&[
                ("com.ex.CalcTest.adds", true),
                ("com.ex.CalcTest.divides", false),
                ("com.ex.CalcTest.reads", false),
            ])
        );
        // Gradle (`build/test-results/test/TEST-com.ex.CalcTest.xml`, JUnit 5).
        let gradle = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="com.ex.CalcTest" tests="2" skipped="0" failures="1" errors="0" timestamp="2026-11-27T05:00:00" hostname="vm" time="0.02">
  <properties/>
  <testcase name="adds()" classname="com.ex.CalcTest" time="0.01"/>
  <testcase name="divides()" classname="com.ex.CalcTest" time="0.01">
    <failure message="org.opentest4j.AssertionFailedError: expected: &lt;2&gt; but was: &lt;3&gt;" type="org.opentest4j.AssertionFailedError">org.opentest4j.AssertionFailedError: expected: &lt;2&gt; but was: &lt;3&gt;</failure>
  </testcase>
  <system-out><![CDATA[]]></system-out>
  <system-err><![CDATA[]]></system-err>
</testsuite>"#;
        assert_eq!(
            read(gradle, &no_files).unwrap(),
            results(&[
                ("com.ex.CalcTest.adds()", true),
                ("com.ex.CalcTest.divides()", false),
            ])
        );
    }

    #[test]
    fn jest_junit_go_junit_report_and_phpunit() {
        // jest-junit's defaults: classname and name are both "{classname} {title}".
        let jest = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="jest tests" tests="2" failures="1" errors="0" time="0.5">
  <testsuite name="sum" errors="0" failures="1" skipped="0" timestamp="2026-11-27T05:00:00" time="0.4" tests="2">
    <testcase classname="sum adds 1 + 2" name="sum adds 1 + 2" time="0.002">
    </testcase>
    <testcase classname="sum rejects strings" name="sum rejects strings" time="0.001">
      <failure>Error: expect(received).toThrow()</failure>
    </testcase>
  </testsuite>
</testsuites>"#;
        assert_eq!(
            read(jest, &no_files).unwrap(),
            results(&[("sum adds 1 + 2", true), ("sum rejects strings", false)])
        );
        // go-junit-report names the package as the class, as `go test -json` ids do.
        let go = r#"<testsuites tests="2" failures="1"><testsuite name="ex/calc" tests="2" failures="1" errors="0" id="0" hostname="vm" time="0.01" timestamp="2026-11-27T05:00:00Z"><properties><property name="go.version" value="go1.23"></property></properties><testcase name="TestSum" classname="ex/calc" time="0.000"></testcase><testcase name="TestDiv" classname="ex/calc" time="0.000"><failure message="Failed"><![CDATA[    calc_test.go:9: want 2]]></failure></testcase></testsuite></testsuites>"#;
        assert_eq!(
            read(go, &no_files).unwrap(),
            results(&[("ex/calc.TestDiv", false), ("ex/calc.TestSum", true)])
        );
        // PHPUnit `--log-junit`: nested suites, a PHP file named.
        let php = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="" tests="2" assertions="2" errors="0" failures="1" skipped="0" time="0.01">
    <testsuite name="CalcTest" file="/app/tests/CalcTest.php" tests="2" assertions="2" errors="0" failures="1" skipped="0" time="0.01">
      <testcase name="testAdds" file="/app/tests/CalcTest.php" line="8" class="CalcTest" classname="CalcTest" assertions="1" time="0.001"/>
      <testcase name="testDivides" file="/app/tests/CalcTest.php" line="12" class="CalcTest" classname="CalcTest" assertions="1" time="0.002">
        <failure type="PHPUnit\Framework\ExpectationFailedException">CalcTest::testDivides
Failed asserting that 3 matches expected 2.</failure>
      </testcase>
    </testsuite>
  </testsuite>
</testsuites>"#;
        assert_eq!(
            read(php, &no_files).unwrap(),
            results(&[("CalcTest.testAdds", true), ("CalcTest.testDivides", false)])
        );
    }

    #[test]
    fn malformed_or_foreign_xml_is_an_error_with_its_reason() {
        let e = read("<testsuite><testcase name=\"a\">", &no_files).unwrap_err();
        assert!(e.starts_with("not well-formed XML: "), "{e}");
        let e = read("<html><body/></html>", &no_files).unwrap_err();
        assert_eq!(
            e,
            "not a JUnit report: the root element is <html>, not <testsuites> or <testsuite>"
        );
        assert!(read("", &no_files).is_err());
    }

    #[test]
    fn a_command_names_its_report_inside_its_directory_only() {
        let dir = Path::new("/w");
        assert_eq!(
            named_reports(
                dir,
                "pytest --junitxml=out/r.xml -q && phpunit --log-junit /w/php.xml && pytest --junit-xml ../up.xml && x --log-junit=/etc/r.xml"
            ),
            [PathBuf::from("/w/out/r.xml"), PathBuf::from("/w/php.xml")]
        );
    }

    #[test]
    fn only_reports_written_after_the_scan_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let sure = d.join("mod-a/target/surefire-reports");
        std::fs::create_dir_all(&sure).unwrap();
        std::fs::create_dir_all(d.join("build/test-results/test")).unwrap();
        let case = |name: &str, failed: bool| {
            format!(
                r#"<testsuite name="C"><testcase classname="C" name="{name}">{}</testcase></testsuite>"#,
                if failed { "<failure/>" } else { "" }
            )
        };
        std::fs::write(sure.join("TEST-C.xml"), case("stale", false)).unwrap();
        let command = "mvn test --junitxml=out.xml";
        let before = Reports::before(d, command);
        assert!(before.fresh(d, command).tests.is_empty());
        std::fs::write(sure.join("TEST-D.xml"), case("new", true)).unwrap();
        std::fs::write(
            d.join("build/test-results/test/TEST-E.xml"),
            case("gradle", false),
        )
        .unwrap();
        std::fs::write(d.join("out.xml"), "<testsuite><oops").unwrap();
        std::fs::write(d.join("junit.xml"), case("jest", false)).unwrap();
        let c = before.fresh(d, command);
        assert_eq!(
            c.tests,
            results(&[("C.gradle", true), ("C.jest", true), ("C.new", false)])
        );
        assert_eq!(c.read.len(), 3);
        assert_eq!(c.errors.len(), 1);
        assert!(
            c.errors[0].starts_with("out.xml: not well-formed XML"),
            "{:?}",
            c.errors
        );
    }

    #[test]
    fn oversized_reports_and_symlinks_are_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let outside = tempfile::tempdir().unwrap();
        let secret = outside.path().join("TEST-X.xml");
        std::fs::write(
            &secret,
            r#"<testsuite><testcase classname="X" name="x"/></testsuite>"#,
        )
        .unwrap();
        let command = "pytest --junitxml=big.xml";
        let before = Reports::before(d, command);
        // Sparse: no disk used.
        let big = std::fs::File::create(d.join("big.xml")).unwrap();
        big.set_len(MAX_REPORT_BYTES + 1).unwrap();
        std::os::unix::fs::symlink(&secret, d.join("junit.xml")).unwrap();
        let c = before.fresh(d, command);
        assert!(c.tests.is_empty() && c.read.is_empty(), "{c:?}");
        assert_eq!(
            c.errors,
            [format!(
                "big.xml: {} bytes, more than the {MAX_REPORT_BYTES} read",
                MAX_REPORT_BYTES + 1
            )]
        );
    }

    #[test]
    fn unittest_xml_reporting_keeps_unittest_ids() {
        // unittest-xml-reporting (`xmlrunner`) 3: a suite per class, the file named.
        let xml = r#"<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
	<testsuite name="test_calc.TestCalc-20261127055200" tests="2" file="test_calc.py" time="0.001" timestamp="2026-11-27T05:52:00" failures="1" errors="0" skipped="0">
		<testcase classname="test_calc.TestCalc" name="test_add" time="0.000" timestamp="2026-11-27T05:52:00" file="test_calc.py" line="5"/>
		<testcase classname="test_calc.TestCalc" name="test_div" time="0.000" timestamp="2026-11-27T05:52:00" file="test_calc.py" line="8">
			<failure type="AssertionError" message="2 != 3"><![CDATA[Traceback (most recent call last): AssertionError: 2 != 3]]></failure>
		</testcase>
	</testsuite>
</testsuites>"#;
        let exists = |f: &str| f == "test_calc.py";
        assert_eq!(
            read(xml, &exists).unwrap(),
            results(&[
                ("test_calc.TestCalc.test_add", true),
                ("test_calc.TestCalc.test_div", false),
            ])
        );
    }
}
