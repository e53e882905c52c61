//! Evidence in the plan (issue 20): every functional acceptance criterion gets a
//! way to be proven red → green.
//!
//! * A criterion may name its check in the request: `(check: \`cmd\`)` (an
//!   executable assertion) or `(test: \`selector\`)` at the end of its line
//!   becomes `acceptance_criteria[].check`.
//! * A step that only writes tests links the functional criteria of the steps it
//!   tests: its new tests are their evidence.
//! * Criteria left with neither get a **test-first** step (`tdd_phase: "red"`),
//!   first in the plan: it writes one test per criterion, named after it
//!   (`test_ac01_…`), which must fail on the code as it is; the steps that make
//!   the criteria true depend on it. Not when the request says not to write
//!   tests, nor without a test command to run them, nor for documentation.

use std::collections::BTreeSet;

use dandori_plan::{AcKind, AcceptanceCriterion};
use serde_json::{Value, json};

use crate::acceptance::is_doc_path;
use crate::context::PlanningContext;
use crate::draft::{Draft, DraftSubtask};
use crate::offline::decomposition::{ItemKind, classify};
use crate::request::Language;

/// The key of the inserted step.
pub const KEY: &str = "test_first";

/// Splits a trailing `(check: \`cmd\`)` / `(test: \`selector\`)` off a
/// criterion's text: the text without it, and the `check` value.
pub fn split_check(text: &str) -> (String, Option<Value>) {
    let t = text.trim_end();
    let Some(body) = t.strip_suffix(')') else {
        return (text.to_string(), None);
    };
    let Some(open) = body.rfind('(') else {
        return (text.to_string(), None);
    };
    let inner = body[open + 1..].trim();
    let Some((label, rest)) = inner.split_once(':') else {
        return (text.to_string(), None);
    };
    let value = rest.trim().trim_matches('`').trim();
    if value.is_empty() || value.contains('`') {
        return (text.to_string(), None);
    }
    let check = match label.trim().to_ascii_lowercase().as_str() {
        "check" | "command" | "検証" => json!({ "command": value }),
        "test" | "テスト" => json!({ "test": value }),
        _ => return (text.to_string(), None),
    };
    (body[..open].trim_end().to_string(), Some(check))
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

/// Rule 3: the test-first subtask, first, for the functional criteria nothing
/// proves yet; the subtasks that make them true depend on it.
pub fn insert(
    ctx: &PlanningContext,
    acs: &[AcceptanceCriterion],
    subtasks: &mut Vec<DraftSubtask>,
) {
    if ctx.unit_commands.is_empty()
        || opted_out(&ctx.request.raw)
        || subtasks.iter().any(|s| s.key == KEY)
    {
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
        .filter(|a| {
            // Criteria whose every linking step is documentation are read, not tested.
            let linking: Vec<&DraftSubtask> = subtasks
                .iter()
                .filter(|s| s.links_to_ac.contains(&a.id))
                .collect();
            !linking.is_empty() && !linking.iter().all(|s| is_docs_subtask(s))
        })
        .collect();
    if pending.is_empty() {
        return;
    }
    let ids: Vec<String> = pending.iter().map(|a| a.id.clone()).collect();
    let code_targets: Vec<String> = subtasks
        .iter()
        .filter(|s| s.links_to_ac.iter().any(|l| ids.contains(l)))
        .flat_map(|s| s.target_paths.iter())
        .filter(|p| !is_test_path(ctx, p) && !is_doc_path(p))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    // At the user's cap on steps (`planning.max_subtasks`) the steps write their
    // tests themselves, first.
    if subtasks.len() >= ctx.max_subtasks() {
        for s in subtasks.iter_mut() {
            let own: Vec<&String> = s.links_to_ac.iter().filter(|l| ids.contains(l)).collect();
            if own.is_empty() {
                continue;
            }
            let names: Vec<String> = own.iter().map(|a| a.to_string()).collect();
            s.intent.push_str(&match ctx.request.language {
                Language::En => format!(
                    " Test first: before the change, add a test for {} (named test_ac01_… after its criterion) that fails on the current code; then make it pass.",
                    names.join(", ")
                ),
                Language::Ja => format!(
                    " テストファースト: 変更の前に {} のテスト（test_ac01_… のように基準の ID を含む名前）を書き、現在のコードで失敗することを確かめてから通す。",
                    names.join(", ")
                ),
            });
        }
        return;
    }
    let (target_paths, context_files) = test_targets(ctx, &code_targets);
    let step = test_first_subtask(ctx, &pending, target_paths, context_files, code_targets);
    for s in subtasks.iter_mut() {
        if s.links_to_ac.iter().any(|l| ids.contains(l)) {
            s.depends_on.push(KEY.to_string());
            s.success_criteria.push(match ctx.request.language {
                Language::En => {
                    format!("the tests written test-first ({}) now pass", ids.join(", "))
                }
                Language::Ja => format!("先に書いたテスト（{}）が通る", ids.join(", ")),
            });
        }
    }
    subtasks.insert(0, step);
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

fn test_first_subtask(
    ctx: &PlanningContext,
    acs: &[&AcceptanceCriterion],
    target_paths: Vec<String>,
    context_files: Vec<String>,
    code_files_hint: Vec<String>,
) -> DraftSubtask {
    let lang = ctx.request.language;
    let ids: Vec<&str> = acs.iter().map(|a| a.id.as_str()).collect();
    let list: Vec<String> = acs
        .iter()
        .map(|a| {
            let tag = a.id.to_ascii_lowercase().replace('-', "");
            format!(
                "{} (name its test `test_{tag}_…`): given {}, when {}, then {}",
                a.id, a.given, a.when, a.then
            )
        })
        .collect();
    let unit = ctx.unit_commands.first().cloned().unwrap_or_default();
    let (title, intent, criteria) = match lang {
        Language::En => (
            format!("Write failing tests for {}", ids.join(", ")),
            format!(
                "Test first: before the change, add one test per acceptance criterion below, in the project's test style, that `{unit}` runs. Each test must fail on the current code (the behaviour is not there yet) and pass once it is implemented. Do not implement the behaviour in this step and do not change non-test files. {}",
                list.join("; ")
            ),
            vec![
                "each new test fails on the current code, by its assertion or a missing name (red)"
                    .to_string(),
                "every test that passed before still passes".to_string(),
                "each test's name contains its criterion (test_ac01_…)".to_string(),
            ],
        ),
        Language::Ja => (
            format!("{} の失敗するテストを先に書く", ids.join(", ")),
            format!(
                "テストファースト: 変更の前に、下の受け入れ基準ごとにテストを 1 つ、`{unit}` で実行される場所に既存のテストの書き方で追加する。各テストは現在のコードでは失敗し（まだ実装されていない）、実装後に通ること。このステップでは実装しない。テスト以外のファイルは変更しない。{}",
                list.join("。")
            ),
            vec![
                "新しいテストは現在のコードで失敗する（red）".to_string(),
                "変更前に通っていたテストはすべて通る".to_string(),
                "テスト名に基準の ID を含む（test_ac01_…）".to_string(),
            ],
        ),
    };
    DraftSubtask {
        key: KEY.to_string(),
        title,
        intent,
        target_paths,
        code_files_hint,
        context_files,
        produces: Vec::new(),
        consumes: Vec::new(),
        boundaries: None,
        depends_on: Vec::new(),
        complexity: 2,
        estimated_lines: 20 + 15 * acs.len() as u64,
        links_to_ac: ids.iter().map(|s| s.to_string()).collect(),
        success_criteria: criteria,
        required_tools: Vec::new(),
        suggested_tools: ["read_file", "search", "write_file", "run_command"]
            .into_iter()
            .map(str::to_string)
            .collect(),
        suggested_persona: None,
        test_first: true,
    }
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
