//! Evidence in the plan (issue 20): every functional acceptance criterion gets a
//! way to be proven red → green.
//!
//! * A criterion may name its check in the request: `(check: \`cmd\`)` (an
//!   executable assertion) or `(test: \`selector\`)` at the end of its line
//!   becomes `acceptance_criteria[].check`.
//! * A step that only writes tests links the functional criteria of the steps it
//!   tests: its new tests are their evidence.
//! * Criteria left with neither are proven **test-first** by the steps they
//!   link: each such step writes one test per criterion, named after it
//!   (`test_ac01_…`), failing on the code as it is, before making it pass; its
//!   target paths include where the tests go. Not a step of its own (an agent
//!   writing the feature writes its tests too), not when the request says not
//!   to write tests, nor without a test command to run them, nor for
//!   documentation.

use std::collections::BTreeSet;

use dandori_plan::{AcKind, AcceptanceCriterion};
use serde_json::{Value, json};

use crate::acceptance::is_doc_path;
use crate::context::PlanningContext;
use crate::draft::{Draft, DraftSubtask};
use crate::offline::decomposition::{ItemKind, classify};
use crate::request::Language;

/// Splits a trailing `(check: \`cmd\`)` / `(test: \`selector\`)` off a
/// criterion's text: the text without it, and the `check` value.
pub fn split_check(text: &str) -> (String, Option<Value>) {
    let t = text.trim_end();
    let Some(body) = t.strip_suffix(')') else {
        return (text.to_string(), None);
    };
    // The command itself may hold parentheses (`sys.exit(hasattr(m, 'x'))`):
    // the check opens at the rightmost `(` followed by a known label and a
    // backticked value running to the end.
    for (open, _) in body.rmatch_indices('(') {
        let inner = body[open + 1..].trim();
        let Some((label, rest)) = inner.split_once(':') else {
            continue;
        };
        let rest = rest.trim();
        let Some(value) = rest
            .strip_prefix('`')
            .and_then(|r| r.strip_suffix('`'))
            .map(str::trim)
        else {
            continue;
        };
        if value.is_empty() || value.contains('`') {
            continue;
        }
        let check = match label.trim().to_ascii_lowercase().as_str() {
            "check" | "command" | "検証" => json!({ "command": value }),
            "test" | "テスト" => json!({ "test": value }),
            _ => continue,
        };
        return (body[..open].trim_end().to_string(), Some(check));
    }
    (text.to_string(), None)
}

/// Whether the criterion must be proven red → green.
fn functional(ac: &AcceptanceCriterion) -> bool {
    matches!(ac.kind, None | Some(AcKind::Functional))
}

fn has_check(ac: &AcceptanceCriterion) -> bool {
    ac.extra.contains_key("check")
}

/// A test of the repository, or a path that belongs to the tests by the usual
/// conventions (a new test file has no scan entry yet).
fn is_test_path(ctx: &PlanningContext, p: &str) -> bool {
    ctx.scan.file(p).is_some_and(|f| f.is_test) || dandori_repo::scan::belongs_to_tests(p)
}

/// A subtask whose work is tests: so titled, or every target is a test path.
fn is_test_subtask(ctx: &PlanningContext, s: &DraftSubtask) -> bool {
    s.test_first
        || classify(&s.title) == ItemKind::Test
        || (!s.target_paths.is_empty() && s.target_paths.iter().all(|p| is_test_path(ctx, p)))
}

/// A subtask about documentation only: no test can show its work.
fn is_docs_subtask(s: &DraftSubtask) -> bool {
    !s.target_paths.is_empty() && s.target_paths.iter().all(|p| is_doc_path(p))
}

/// The request asks for no tests.
pub fn opted_out(raw: &str) -> bool {
    let l = raw.to_lowercase();
    [
        "no new tests",
        "no tests required",
        "without tests",
        "without adding tests",
        "don't write tests",
        "do not write tests",
        "don't add tests",
        "do not add tests",
        "no test needed",
        "no tests needed",
        "skip the tests",
        "テスト不要",
        "テストは不要",
        "テストを書かない",
        "テストは書かない",
        "テストなし",
        "テストは追加しない",
    ]
    .iter()
    .any(|n| l.contains(n))
}

/// Rules 1 and 2: checks named in the request, and test subtasks linked to the
/// criteria of what they test.
pub fn prepare(ctx: &PlanningContext, draft: &mut Draft) {
    for ac in &mut draft.acceptance_criteria {
        if has_check(ac) {
            continue;
        }
        let (then, check) = split_check(&ac.then);
        if let Some(c) = check {
            ac.then = then;
            ac.extra.insert("check".to_string(), c);
        }
    }
    let functional_ids: BTreeSet<String> = draft
        .acceptance_criteria
        .iter()
        .filter(|a| functional(a))
        .map(|a| a.id.clone())
        .collect();
    let snapshot = draft.subtasks.clone();
    for s in draft.subtasks.iter_mut() {
        if !is_test_subtask(ctx, s) {
            continue;
        }
        let mut links: Vec<String> = snapshot
            .iter()
            .filter(|o| s.depends_on.contains(&o.key))
            .flat_map(|o| o.links_to_ac.iter())
            .filter(|id| functional_ids.contains(*id))
            .cloned()
            .collect();
        if links.is_empty() {
            links = snapshot
                .iter()
                .filter(|o| o.key != s.key && !is_docs_subtask(o))
                .flat_map(|o| o.links_to_ac.iter())
                .filter(|id| functional_ids.contains(*id))
                .cloned()
                .collect();
        }
        for l in links {
            if !s.links_to_ac.contains(&l) {
                s.links_to_ac.push(l);
            }
        }
    }
}

/// Rule 3: the functional criteria nothing proves yet are proven test-first by
/// the steps that make them true: each such step writes their tests (named
/// after them, failing on the code as it is) before its change, and its target
/// paths hold where those tests go. Not a step of its own: an agent asked for
/// part of a feature writes all of it, tests included, and a later step would
/// be left with nothing to do.
pub fn insert(ctx: &PlanningContext, acs: &[AcceptanceCriterion], subtasks: &mut [DraftSubtask]) {
    if ctx.unit_commands.is_empty() || opted_out(&ctx.request.raw) {
        return;
    }
    let proven_by_tests: BTreeSet<&String> = subtasks
        .iter()
        .filter(|s| is_test_subtask(ctx, s))
        .flat_map(|s| s.links_to_ac.iter())
        .collect();
    let pending: Vec<&AcceptanceCriterion> = acs
        .iter()
        .filter(|a| functional(a) && !has_check(a) && !proven_by_tests.contains(&a.id))
        .collect();
    for s in subtasks.iter_mut() {
        if is_docs_subtask(s) || is_test_subtask(ctx, s) {
            continue;
        }
        let own: Vec<&AcceptanceCriterion> = pending
            .iter()
            .filter(|a| s.links_to_ac.contains(&a.id))
            .copied()
            .collect();
        if own.is_empty() {
            continue;
        }
        let names: Vec<String> = own
            .iter()
            .map(|a| {
                let tag = a.id.to_ascii_lowercase().replace('-', "");
                match ctx.request.language {
                    Language::En => format!("`test_{tag}_…` for {}", a.id),
                    Language::Ja => format!("{} は `test_{tag}_…`", a.id),
                }
            })
            .collect();
        let code: Vec<String> = s
            .target_paths
            .iter()
            .filter(|p| !is_test_path(ctx, p) && !is_doc_path(p))
            .cloned()
            .collect();
        let (tests, context) = test_targets(ctx, &code);
        // A step that already targets tests writes the new ones there.
        if !s.target_paths.iter().any(|p| is_test_path(ctx, p)) {
            for t in tests {
                if !s.target_paths.contains(&t) {
                    s.target_paths.push(t);
                }
            }
        }
        for c in context {
            if !s.context_files.contains(&c) && !s.target_paths.contains(&c) {
                s.context_files.push(c);
            }
        }
        let unit = ctx.unit_commands.first().cloned().unwrap_or_default();
        if !s.intent.ends_with(['.', '。', '!', '?']) {
            s.intent.push_str(match ctx.request.language {
                Language::En => ".",
                Language::Ja => "。",
            });
        }
        s.intent.push_str(&match ctx.request.language {
            Language::En => format!(
                " Test first: before the change, add one test per criterion this step makes true, named after it ({}), in the project's test style where `{unit}` runs it; it fails on the current code; then make the change so that it passes.",
                names.join(", ")
            ),
            Language::Ja => format!(
                "テストファースト: 変更の前に、このステップが満たす基準ごとにその ID を名前に含むテスト（{}）を `{unit}` で実行される場所に既存のテストの書き方で書き、現在のコードで失敗することを確かめてから、通るように変更する。",
                names.join("、")
            ),
        });
        let ids: Vec<&str> = own.iter().map(|a| a.id.as_str()).collect();
        s.success_criteria.push(match (ctx.request.language, ids.as_slice()) {
            (Language::En, [one]) => format!(
                "{one} has a test named after it that fails on the base commit and passes after the change"
            ),
            (Language::En, _) => format!(
                "each of {} has a test named after it that fails on the base commit and passes after the change",
                ids.join(", ")
            ),
            (Language::Ja, _) => format!(
                "{} のそれぞれに、その ID を名前に含み、ベースのコミットで失敗し変更後に通るテストがある",
                ids.join("、")
            ),
        });
    }
}

/// Where the new tests go: the tests already mapped to the code (same stem), and
/// the directory most tests live in; the existing tests of that code are context.
fn test_targets(ctx: &PlanningContext, code: &[String]) -> (Vec<String>, Vec<String>) {
    let stems: BTreeSet<String> = code
        .iter()
        .filter_map(|p| {
            let name = p.rsplit('/').next()?;
            let stem = name.split('.').next()?.to_ascii_lowercase();
            (stem.len() >= 2 && stem != "__init__" && stem != "index" && stem != "mod")
                .then_some(stem)
        })
        .collect();
    let tests: Vec<&str> = ctx
        .scan
        .files
        .iter()
        .filter(|f| f.is_test)
        .map(|f| f.path.as_str())
        .collect();
    let mapped: Vec<String> = tests
        .iter()
        .filter(|t| {
            let name = t.rsplit('/').next().unwrap_or(t).to_ascii_lowercase();
            stems.iter().any(|s| name.contains(s.as_str()))
        })
        .map(|t| t.to_string())
        .collect();
    let mut targets = mapped.clone();
    if let Some(dir) = crate::offline::targets::test_dir(ctx) {
        targets.retain(|t| !t.starts_with(&dir));
        targets.push(dir);
    } else if targets.is_empty() {
        // Tests beside the code (no test directory): the existing test files.
        targets = tests.iter().take(5).map(|t| t.to_string()).collect();
    }
    if targets.is_empty() {
        targets.push("tests/".to_string());
    }
    let context = if mapped.is_empty() {
        tests.iter().take(2).map(|t| t.to_string()).collect()
    } else {
        mapped
    };
    (targets, context)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trailing_check_or_test_becomes_the_criterions_check() {
        assert_eq!(
            split_check("it greets (check: `grep -qi hello src/greet.txt`)"),
            (
                "it greets".to_string(),
                Some(json!({"command": "grep -qi hello src/greet.txt"}))
            )
        );
        assert_eq!(
            split_check("it returns 2 (test: `tests/test_calc.py::test_subtract`)"),
            (
                "it returns 2".to_string(),
                Some(json!({"test": "tests/test_calc.py::test_subtract"}))
            )
        );
        // A command holding parentheses of its own.
        assert_eq!(
            split_check(
                "it is gone (check: `python -c \"import sys, m; sys.exit(hasattr(m, 'old'))\"`)"
            ),
            (
                "it is gone".to_string(),
                Some(
                    json!({"command": "python -c \"import sys, m; sys.exit(hasattr(m, 'old'))\""})
                )
            )
        );
        // Parentheses that are not a check stay.
        assert_eq!(
            split_check("it returns (a, b)"),
            ("it returns (a, b)".to_string(), None)
        );
        assert_eq!(
            split_check("see (note: later)"),
            ("see (note: later)".to_string(), None)
        );
    }

    #[test]
    fn opt_out_phrases() {
        assert!(opted_out("Fix the typo. No tests needed."));
        assert!(opted_out("テストは不要です"));
        assert!(!opted_out("Add tests for the parser"));
    }
}
