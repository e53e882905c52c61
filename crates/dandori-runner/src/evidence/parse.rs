//! Per-test results from test runners' output: which test ids passed and which
//! failed. Each parser reads one runner's machine-readable or line-oriented
//! form; the output of one command may hold several (a script running pytest and
//! then `node --test`). A command whose output none of them recognises has no
//! per-test results, and only its exit code counts.
//!
//! Recognised: pytest's `-rA` short summary (`PASSED` / `FAILED` / `ERROR` lines;
//! the runner sets `PYTEST_ADDOPTS=-rA`), unittest's verbose lines
//! (`test_x (mod.Class.test_x) ... ok`) and its `FAIL:` / `ERROR:` headers,
//! TAP (`ok 1 - name` / `not ok 2 - name`, the default of `node --test` without a
//! terminal, with nested subtests named by their parents), node's spec reporter
//! (`✔ name` / `✖ name`), `cargo test` (`test path::name ... ok`), `go test -json`
//! (`{"Action":"pass","Test":…}`) and `go test -v` (`--- PASS: TestX`).

use std::collections::BTreeMap;

/// Test id → passed. A test seen failing anywhere in the output failed.
pub type TestResults = BTreeMap<String, bool>;

pub(crate) fn record(out: &mut TestResults, id: &str, passed: bool) {
    let id = id.trim();
    if id.is_empty() {
        return;
    }
    let e = out.entry(id.to_string()).or_insert(passed);
    *e = *e && passed;
}

/// `output` without its terminal escape sequences (colours, cursor moves): some
/// runners colour their output without a terminal (vitest, jest with `FORCE_COLOR`).
pub fn strip_ansi(output: &str) -> std::borrow::Cow<'_, str> {
    if !output.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(output);
    }
    let mut out = String::with_capacity(output.len());
    let mut chars = output.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.peek() {
            // CSI: parameters and intermediates up to a final byte in @..~.
            Some('[') => {
                chars.next();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC (links, titles): up to BEL or ESC \.
            Some(']') => {
                chars.next();
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            Some(_) => {
                chars.next();
            }
            None => {}
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Every per-test result the output holds.
pub fn parse(output: &str) -> TestResults {
    let mut out = TestResults::new();
    let mut tap = Tap::default();
    let output = strip_ansi(output);
    for raw in output.lines() {
        let line = raw.trim_end_matches('\r');
        pytest(line, &mut out);
        unittest(line, &mut out);
        cargo(line, &mut out);
        go(line, &mut out);
        node_spec(line, &mut out);
        tap.line(line, &mut out);
    }
    out
}

/// `PASSED tests/test_x.py::test_a`, `FAILED tests/test_x.py::test_b - reason`,
/// `ERROR tests/test_x.py::test_c - reason` (pytest `-rA` summary).
fn pytest(line: &str, out: &mut TestResults) {
    for (prefix, passed) in [
        ("PASSED ", true),
        ("XPASS ", true),
        ("XFAIL ", true),
        ("FAILED ", false),
        ("ERROR ", false),
    ] {
        if let Some(rest) = line.strip_prefix(prefix) {
            let id = rest.split(" - ").next().unwrap_or(rest).trim();
            // A test id (`file::name`), not a collection error of a whole file.
            if id.contains("::") && !id.contains(' ') {
                record(out, id, passed);
            }
            return;
        }
    }
}

/// `test_a (pkg.mod.Class.test_a) ... ok` (Python ≥ 3.11; earlier versions
/// name the class only, `test_a (pkg.mod.Class)`), and the failure headers
/// `FAIL: test_b (pkg.mod.Class.test_b)` / `ERROR: …` that unittest prints with
/// or without `-v`.
fn unittest(line: &str, out: &mut TestResults) {
    for prefix in ["FAIL: ", "ERROR: "] {
        if let Some(rest) = line.strip_prefix(prefix)
            && let Some(id) = unittest_id(rest)
        {
            record(out, &id, false);
            return;
        }
    }
    let Some((head, verdict)) = line.rsplit_once(" ... ") else {
        return;
    };
    let passed = match verdict.trim() {
        "ok" | "expected failure" => true,
        v if v.starts_with("skipped") => return,
        "FAIL" | "ERROR" | "unexpected success" => false,
        _ => return,
    };
    if let Some(id) = unittest_id(head) {
        record(out, &id, passed);
    }
}

/// `test_a (pkg.mod.Class.test_a)` → `pkg.mod.Class.test_a`.
fn unittest_id(s: &str) -> Option<String> {
    let (name, rest) = s.trim().split_once(" (")?;
    let path = rest.strip_suffix(')')?;
    if name.contains(' ') || path.contains(' ') || !path.contains('.') {
        return None;
    }
    Some(if path.ends_with(&format!(".{name}")) {
        path.to_string()
    } else {
        format!("{path}.{name}")
    })
}

/// `test parser::tests::header ... ok` / `... FAILED` (`cargo test`).
fn cargo(line: &str, out: &mut TestResults) {
    let Some(rest) = line.strip_prefix("test ") else {
        return;
    };
    let Some((name, verdict)) = rest.rsplit_once(" ... ") else {
        return;
    };
    if name.contains(' ') {
        return;
    }
    match verdict.trim() {
        "ok" => record(out, name, true),
        "FAILED" => record(out, name, false),
        _ => {}
    }
}

/// `go test -json` events and `go test -v` result lines.
fn go(line: &str, out: &mut TestResults) {
    let t = line.trim_start();
    if t.starts_with('{') && t.contains("\"Action\"") {
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(t)
            && let (Some(action), Some(test)) = (
                v.get("Action").and_then(|a| a.as_str()),
                v.get("Test").and_then(|a| a.as_str()),
            )
        {
            let pkg = v.get("Package").and_then(|a| a.as_str()).unwrap_or("");
            let id = if pkg.is_empty() {
                test.to_string()
            } else {
                format!("{pkg}.{test}")
            };
            match action {
                "pass" => record(out, &id, true),
                "fail" => record(out, &id, false),
                _ => {}
            }
        }
        return;
    }
    for (prefix, passed) in [("--- PASS: ", true), ("--- FAIL: ", false)] {
        if let Some(rest) = t.strip_prefix(prefix) {
            let name = rest.split(" (").next().unwrap_or(rest);
            record(out, name, passed);
        }
    }
}

/// node's spec reporter: `✔ adds (0.5ms)` / `✖ rejects (1.2ms)`.
fn node_spec(line: &str, out: &mut TestResults) {
    let t = line.trim_start();
    for (mark, passed) in [("✔ ", true), ("✖ ", false)] {
        if let Some(rest) = t.strip_prefix(mark) {
            let name = match rest.rfind(" (") {
                Some(i) if rest.ends_with(')') => &rest[..i],
                _ => rest,
            };
            // The spec reporter's footer (`✖ failing tests:`) names no test.
            if name.ends_with(':') {
                return;
            }
            record(out, name, passed);
        }
    }
}

/// TAP 13/14 with indented subtests: a nested test is named
/// `parent > child`; a parent's own line counts only when it has no children.
#[derive(Default)]
struct Tap {
    seen_version: bool,
    /// Indented results waiting for their parent's line.
    pending: Vec<(usize, String, bool)>,
}

impl Tap {
    fn line(&mut self, line: &str, out: &mut TestResults) {
        if line.starts_with("TAP version") {
            self.seen_version = true;
            return;
        }
        if !self.seen_version {
            return;
        }
        let indent = line.len() - line.trim_start().len();
        let t = line.trim_start();
        let (passed, rest) = if let Some(r) = t.strip_prefix("not ok ") {
            (false, r)
        } else if let Some(r) = t.strip_prefix("ok ") {
            (true, r)
        } else {
            return;
        };
        // `3 - name # SKIP` → `name`.
        let rest = rest
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start();
        let rest = rest.strip_prefix("- ").unwrap_or(rest);
        let (name, directive) = match rest.split_once(" # ") {
            Some((n, d)) => (n, Some(d)),
            None => (rest, None),
        };
        if directive.is_some_and(|d| d.to_ascii_uppercase().starts_with("SKIP")) {
            return;
        }
        let name = name.trim().to_string();
        // Results indented deeper than this line are its subtests.
        let (children, others): (Vec<_>, Vec<_>) =
            self.pending.drain(..).partition(|(i, _, _)| *i > indent);
        self.pending = others;
        let entries: Vec<(String, bool)> = if children.is_empty() {
            vec![(name, passed)]
        } else {
            children
                .into_iter()
                .map(|(_, child, p)| (format!("{name} > {child}"), p))
                .collect()
        };
        for (id, p) in entries {
            if indent == 0 {
                record(out, &id, p);
            } else {
                self.pending.push((indent, id, p));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn results(pairs: &[(&str, bool)]) -> TestResults {
        pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn pytest_short_summary() {
        let out = "....F\n=========================== short test summary info ============================\nPASSED tests/test_slug.py::test_basic\nPASSED tests/test_slug.py::test_case[a-b]\nFAILED tests/test_slug.py::test_new - AssertionError: x\nERROR tests/test_db.py - ImportError\n";
        assert_eq!(
            parse(out),
            results(&[
                ("tests/test_slug.py::test_basic", true),
                ("tests/test_slug.py::test_case[a-b]", true),
                ("tests/test_slug.py::test_new", false),
            ])
        );
    }

    #[test]
    fn unittest_verbose_and_headers() {
        let out = "test_add (test_calc.TestCalc.test_add) ... ok\ntest_div (test_calc.TestCalc) ... FAIL\ntest_skip (test_calc.TestCalc.test_skip) ... skipped 'later'\n\n======================================================================\nFAIL: test_div (test_calc.TestCalc)\n----------------------------------------------------------------------\nERROR: test_io (test_io.TestIo.test_io)\n";
        assert_eq!(
            parse(out),
            results(&[
                ("test_calc.TestCalc.test_add", true),
                ("test_calc.TestCalc.test_div", false),
                ("test_io.TestIo.test_io", false),
            ])
        );
    }

    #[test]
    fn node_tap_with_subtests() {
        let out = "TAP version 13\n# Subtest: adds\nok 1 - adds\n  ---\n  duration_ms: 1.4\n  ...\n# Subtest: math\n    # Subtest: mul\n    ok 1 - mul\n    # Subtest: div\n    not ok 2 - div\n      ---\n      error: 'x'\n      ...\n    1..2\nnot ok 2 - math\n# Subtest: later\nok 3 - later # SKIP\n1..3\n# tests 3\n";
        assert_eq!(
            parse(out),
            results(&[("adds", true), ("math > div", false), ("math > mul", true)])
        );
    }

    #[test]
    fn node_spec_cargo_and_go() {
        let out = "✔ adds (0.5ms)\n✖ rejects (1.2ms)\n✖ failing tests:\ntest parse::tests::header ... ok\ntest parse::tests::body ... FAILED\ntest slow ... ignored\n--- PASS: TestSum (0.00s)\n--- FAIL: TestDiv (0.01s)\n{\"Action\":\"pass\",\"Package\":\"ex/calc\",\"Test\":\"TestMul\"}\n{\"Action\":\"fail\",\"Package\":\"ex/calc\"}\n";
        assert_eq!(
            parse(out),
            results(&[
                ("TestDiv", false),
                ("TestSum", true),
                ("adds", true),
                ("ex/calc.TestMul", true),
                ("parse::tests::body", false),
                ("parse::tests::header", true),
                ("rejects", false),
            ])
        );
    }

    #[test]
    fn colours_are_not_part_of_a_result() {
        let out = "\u{1b}[32m✔\u{1b}[39m adds \u{1b}[90m(0.5ms)\u{1b}[39m\n\u{1b}]8;;file:///x\u{7}link\u{1b}]8;;\u{7}\n";
        assert_eq!(strip_ansi(out), "✔ adds (0.5ms)\nlink\n");
        assert_eq!(parse(out), results(&[("adds", true)]));
    }

    #[test]
    fn plain_output_has_no_results() {
        assert!(parse("Ran 3 tests\nOK\nall good\n").is_empty());
    }
}
