//! Acceptance criteria of a plan: the request's own, converted to `AC-01`… form,
//! and — when there are fewer than three (seed 004 §4.1 `AC_TOO_FEW`) — criteria
//! derived honestly from what the request does say: one per enumerated requirement
//! that no criterion covers, then the diff-limit criterion every step is held to.
//! A regression criterion (the existing tests still pass) is added whenever there
//! are fewer than three or some step is linked to no criterion, and is linked to
//! every step. Each derived criterion is named in `assumptions`.

use dandori_plan::{AcKind, AcceptanceCriterion};

use crate::draft::Draft;
use crate::request::{Language, Request};

pub fn ac_id(n: usize) -> String {
    format!("AC-{n:02}")
}

/// The request's criteria as `AC-01`….
pub fn from_request(request: &Request) -> Vec<AcceptanceCriterion> {
    request
        .acceptance_criteria
        .iter()
        .enumerate()
        .map(|(i, c)| {
            // A check named at the end of the line (`(check: \`cmd\`)`) is not
            // part of what the criterion says.
            let (then, check) = crate::test_first::split_check(&c.then);
            let mut extra = serde_json::Map::new();
            if let Some(check) = check {
                extra.insert("check".to_string(), check);
            }
            AcceptanceCriterion {
                id: ac_id(i + 1),
                given: c.given.clone(),
                when: c.when.clone(),
                kind: Some(kind_of(&c.given, &c.when, &then)),
                then,
                extra,
            }
        })
        .collect()
}

/// What a request criterion asks for, by its wording: that what exists keeps
/// working (`regression`), a bound on size, time or scope (`nonfunctional`), or
/// new behaviour (`functional`, the default). Only functional criteria need a test
/// that turns from red to green; the others hold when nothing that passed broke.
pub fn kind_of(given: &str, when: &str, then: &str) -> AcKind {
    // "within 200 ms" is a bound on an existing behaviour; "returns 3" is new.
    let then_l = then.to_lowercase();
    let all = format!("{} {} {then_l}", given.to_lowercase(), when.to_lowercase());
    const REGRESSION: [&str; 16] = [
        "still pass",
        "still work",
        "still succeed",
        "keeps working",
        "keep working",
        "continue to work",
        "continues to work",
        "nothing else changed",
        "nothing else changes",
        "is unchanged",
        "are unchanged",
        "remain unchanged",
        "does not break",
        "doesn't break",
        "引き続き",
        "変わらない",
    ];
    const NONFUNCTIONAL: [&str; 5] = [
        "milliseconds",
        "no file outside",
        "memory use",
        "ミリ秒",
        "メモリ使用量",
    ];
    // A bound with a number and what it measures: "within 200 ms", "at most 50
    // lines", "500 行以内". A bare number bounds a value the criterion computes
    // ("returns 0.3048 (within 1e-9)"): that is the behaviour itself.
    let bounded = [
        "within ",
        "at most ",
        "no more than ",
        "under ",
        "less than ",
    ]
    .iter()
    .any(|b| {
        then_l.match_indices(b).any(|(i, _)| {
            let rest = &then_l[i + b.len()..];
            let number = rest
                .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
                .unwrap_or(rest.len());
            number > 0 && measures(&rest[number..])
        })
    }) || then_l.match_indices("以内").any(|(i, _)| {
        then_l[..i]
            .trim_end()
            .ends_with(|c: char| c.is_ascii_digit() || c == '行' || c == '秒')
    });
    // 「既存のテストを実行したとき、すべて成功する」: the existing tests pass.
    let existing_tests_pass = all.contains("既存のテスト")
        && ["成功", "通る", "パス", "pass"]
            .iter()
            .any(|w| all.contains(w));
    if existing_tests_pass || REGRESSION.iter().any(|p| all.contains(p)) {
        AcKind::Regression
    } else if bounded || NONFUNCTIONAL.iter().any(|p| then_l.contains(p)) {
        AcKind::Nonfunctional
    } else {
        AcKind::Functional
    }
}

/// Whether `rest`, the text right after a bound's number, names what the
/// number measures: time, size, count of lines, files, calls or a share.
fn measures(rest: &str) -> bool {
    const UNITS: [&str; 25] = [
        "ms", "s ", "s)", "s.", "sec", "second", "minute", "min", "hour", "µs", "us", "ns", "line",
        "byte", "kb", "mb", "gb", "kib", "mib", "gib", "%", "percent", "file", "request", "call",
    ];
    let rest = format!("{} ", rest.trim_start());
    rest.len() > 1 && UNITS.iter().any(|u| rest.starts_with(u))
}

/// What callers pass as the unit command when the plan has none.
pub const NO_UNIT_COMMAND: &str = "the project's tests";

fn no_unit_command(unit_command: &str) -> bool {
    unit_command.trim().is_empty() || unit_command == NO_UNIT_COMMAND
}

/// Brings `draft` to at least three criteria, linking each derived one to the
/// subtasks it checks. `unit_command` is the environment's test command.
pub fn ensure_minimum(draft: &mut Draft, lang: Language, unit_command: &str, max_diff_lines: u64) {
    let given_count = draft.acceptance_criteria.len();
    let unlinked = draft.subtasks.iter().any(|s| s.links_to_ac.is_empty());
    let has_regression = draft
        .acceptance_criteria
        .iter()
        .any(|a| a.kind == Some(AcKind::Regression));
    if given_count >= 3 && (has_regression || !unlinked) {
        return;
    }
    let mut notes: Vec<String> = Vec::new();
    // The next free `AC-NN` (a model's ids need not be dense).
    let next_id = |d: &Draft| {
        (d.acceptance_criteria.len() + 1..)
            .map(ac_id)
            .find(|id| !d.acceptance_criteria.iter().any(|a| &a.id == id))
            .unwrap_or_default()
    };

    // One per requirement (subtask) that no criterion covers: the change it
    // describes is present. Docs items are checked by reading (the text renders,
    // its links resolve), test items by running the new tests.
    let uncovered: Vec<usize> = draft
        .subtasks
        .iter()
        .enumerate()
        .filter(|(_, s)| s.links_to_ac.is_empty())
        .map(|(i, _)| i)
        .collect();
    // Test and docs subtasks verify or describe the code subtasks; they get a
    // criterion of their own only when there is no code subtask.
    let is_code = |s: &crate::draft::DraftSubtask| {
        matches!(
            crate::offline::decomposition::classify(&s.title),
            crate::offline::decomposition::ItemKind::Implementation
                | crate::offline::decomposition::ItemKind::Definition
        )
    };
    let any_code = draft.subtasks.iter().any(is_code);
    let uncovered: Vec<usize> = uncovered
        .into_iter()
        .filter(|&i| !any_code || is_code(&draft.subtasks[i]))
        .collect();
    for i in uncovered.into_iter().filter(|_| given_count < 3) {
        let title = draft.subtasks[i].title.clone();
        // Docs wording (renders, links resolve) only for documentation files: a
        // docstring typo lives in code.
        let kind = match crate::offline::decomposition::classify(&title) {
            crate::offline::decomposition::ItemKind::Docs
                if !draft.subtasks[i]
                    .target_paths
                    .iter()
                    .all(|p| is_doc_path(p)) =>
            {
                crate::offline::decomposition::ItemKind::Implementation
            }
            k => k,
        };
        let id = next_id(draft);
        let targets = paths_phrase(&draft.subtasks[i].target_paths);
        let (given, when, then) = derived_presence(lang, kind, &title, &targets);
        draft.acceptance_criteria.push(AcceptanceCriterion {
            id: id.clone(),
            given,
            when,
            then,
            // Documentation, a docstring, a comment: what is proven is that the
            // change is there (the runner's scope check of a non-empty diff) and
            // broke nothing, not a red → green test (issue 20). Behaviour is.
            kind: Some(derived_kind(&title, no_unit_command(unit_command))),
            extra: Default::default(),
        });
        draft.subtasks[i].links_to_ac.push(id.clone());
        notes.push(match lang {
            Language::En => format!("{id} derived from the requirement \"{title}\""),
            Language::Ja => format!("{id} は要件「{title}」から導いた"),
        });
    }

    if draft.acceptance_criteria.len() < 3
        || !draft
            .acceptance_criteria
            .iter()
            .any(|a| a.kind == Some(AcKind::Regression))
    {
        let id = next_id(draft);
        // Without a test command (no tests in the repository) there is no suite to
        // re-run: the criterion is about behaviour, checked by the step's own tests.
        let no_tests = no_unit_command(unit_command);
        let (given, when, then) = match (lang, no_tests) {
            (Language::En, false) => (
                "the existing test suite".to_string(),
                format!("`{unit_command}` runs after the change"),
                "every test that passed before the change still passes".to_string(),
            ),
            (Language::Ja, false) => (
                "既存のテストスイート".to_string(),
                format!("変更後に `{unit_command}` を実行する"),
                "変更前に通っていたテストがすべて通る".to_string(),
            ),
            (Language::En, true) => (
                "the repository at the base branch, which has no tests".to_string(),
                "the existing behaviour is exercised after the change".to_string(),
                "what worked before the change still works".to_string(),
            ),
            (Language::Ja, true) => (
                "テストのないベースブランチのリポジトリ".to_string(),
                "変更後に既存の動作を確認する".to_string(),
                "変更前に動いていた機能が引き続き動く".to_string(),
            ),
        };
        draft.acceptance_criteria.push(AcceptanceCriterion {
            id: id.clone(),
            given,
            when,
            then,
            kind: Some(AcKind::Regression),
            extra: Default::default(),
        });
        for s in &mut draft.subtasks {
            s.links_to_ac.push(id.clone());
        }
        notes.push(match lang {
            Language::En => format!("{id} (regression) derived: existing tests must keep passing"),
            Language::Ja => format!("{id}（回帰）を追加: 既存のテストが通り続けること"),
        });
    }

    // Scope: nothing outside the files the plan names changes (the request's
    // paths or the retrieved targets), within the diff limit.
    while draft.acceptance_criteria.len() < 3 {
        let id = next_id(draft);
        let files = paths_phrase(&target_paths(&draft.subtasks));
        let (given, when, then, note) = match (lang, files.is_empty()) {
            (Language::En, false) => (
                "the repository at the base branch".to_string(),
                "the change is committed".to_string(),
                scope_then(lang, &files, max_diff_lines),
                format!("{id} (scope) derived from the files the plan targets"),
            ),
            (Language::En, true) => (
                "each step of this plan".to_string(),
                "its commit is made".to_string(),
                format!(
                    "the diff is at most {max_diff_lines} lines and stays within the step's target paths"
                ),
                format!("{id} (nonfunctional) derived from the plan's diff limits"),
            ),
            (Language::Ja, false) => (
                "ベースブランチのリポジトリ".to_string(),
                "変更をコミットする".to_string(),
                scope_then(lang, &files, max_diff_lines),
                format!("{id}（範囲）は計画の対象ファイルから導いた"),
            ),
            (Language::Ja, true) => (
                "この計画の各ステップ".to_string(),
                "コミットする".to_string(),
                format!("差分が {max_diff_lines} 行以内で、ステップの target_paths の範囲に収まる"),
                format!("{id}（非機能）は計画の差分上限から導いた"),
            ),
        };
        // A second pass (after a scope criterion) would repeat it: fall back to
        // the plain diff limit, which is always a distinct check.
        let duplicate = draft.acceptance_criteria.iter().any(|a| a.then == then);
        let then = if duplicate {
            match lang {
                Language::En => {
                    format!("each step's diff is at most {max_diff_lines} lines ({id})")
                }
                Language::Ja => format!("各ステップの差分が {max_diff_lines} 行以内である（{id}）"),
            }
        } else {
            then
        };
        draft.acceptance_criteria.push(AcceptanceCriterion {
            id: id.clone(),
            given,
            when,
            then,
            kind: Some(AcKind::Nonfunctional),
            extra: Default::default(),
        });
        for s in &mut draft.subtasks {
            s.links_to_ac.push(id.clone());
        }
        notes.push(note);
    }

    if !notes.is_empty() {
        draft.assumptions.push(match lang {
            Language::En => format!(
                "The request gave {given_count} acceptance criteria; {}.",
                notes.join("; ")
            ),
            Language::Ja => format!(
                "リクエストの受け入れ基準は {given_count} 件。{}。",
                notes.join("。")
            ),
        });
    }
}

/// The kind of a criterion derived from a requirement's title: documentation is
/// shown present, a move, rename or refactor keeps behaviour (`regression`), new
/// behaviour is proven by a test (`functional`).
fn derived_kind(title: &str, no_tests: bool) -> AcKind {
    use crate::offline::decomposition::{ItemKind, classify};
    // Without a test command nothing can be proven red → green: what is checked
    // is that the change is there, within scope, and broke nothing.
    if no_tests {
        return AcKind::Nonfunctional;
    }
    let l = title.to_lowercase();
    const PRESERVING: [&str; 16] = [
        "move ",
        "rename",
        "refactor",
        "reorgani",
        "restructur",
        "extract ",
        "clean up",
        "cleanup",
        "reformat",
        "typo",
        "spelling",
        "移動",
        "名前を変",
        "リネーム",
        "リファクタ",
        "整理",
    ];
    if PRESERVING.iter().any(|p| l.contains(p)) {
        AcKind::Regression
    } else if classify(title) == ItemKind::Docs {
        AcKind::Nonfunctional
    } else {
        AcKind::Functional
    }
}

/// Up to five paths in backticks, "and N more" after that; empty for none.
/// The `then` of the scope criterion over `files` (a [`paths_phrase`]).
fn scope_then(lang: Language, files: &str, max_diff_lines: u64) -> String {
    match lang {
        Language::En => {
            format!(
                "no file outside {files} changes and the diff is at most {max_diff_lines} lines"
            )
        }
        Language::Ja => {
            format!("{files} 以外のファイルは変更されず、差分は {max_diff_lines} 行以内である")
        }
    }
}

/// Every subtask's target paths, in order, each once.
pub fn target_paths(subtasks: &[crate::draft::DraftSubtask]) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for p in subtasks.iter().flat_map(|s| &s.target_paths) {
        if !named.contains(p) {
            named.push(p.clone());
        }
    }
    named
}

/// Words the scope criterion derived over `before` (the subtasks' targets when
/// it was derived) over `after` (the final steps' targets): a later pass that
/// adds targets (the tests of a test-first step) must not leave a criterion
/// that forbids what the plan asks for.
pub fn rescope(
    criteria: &mut [AcceptanceCriterion],
    lang: Language,
    max_diff_lines: u64,
    before: &[String],
    after: &[String],
) {
    let (old, new) = (paths_phrase(before), paths_phrase(after));
    if old.is_empty() || new.is_empty() || old == new {
        return;
    }
    let (old, new) = (
        scope_then(lang, &old, max_diff_lines),
        scope_then(lang, &new, max_diff_lines),
    );
    for ac in criteria.iter_mut().filter(|a| a.then == old) {
        ac.then = new.clone();
    }
}

fn paths_phrase(paths: &[String]) -> String {
    let shown: Vec<String> = paths
        .iter()
        .filter(|p| p.as_str() != ".")
        .take(5)
        .map(|p| format!("`{p}`"))
        .collect();
    let rest = paths.len().saturating_sub(shown.len());
    match (shown.is_empty(), rest) {
        (true, _) => String::new(),
        (false, 0) => shown.join(", "),
        (false, n) => format!("{} (+{n})", shown.join(", ")),
    }
}

/// "The change described is present", worded for the kind of item.
fn derived_presence(
    lang: Language,
    kind: crate::offline::decomposition::ItemKind,
    title: &str,
    targets: &str,
) -> (String, String, String) {
    use crate::offline::decomposition::ItemKind;
    let where_en = if targets.is_empty() {
        String::new()
    } else {
        format!(" in {targets}")
    };
    let where_ja = if targets.is_empty() {
        String::new()
    } else {
        format!("（{targets}）")
    };
    match (lang, kind) {
        (Language::En, ItemKind::Docs) => (
            "the repository at the base branch".to_string(),
            format!("the documentation{where_en} is read after \"{title}\""),
            "it states what the request asks for, the Markdown renders, and its relative links resolve".to_string(),
        ),
        (Language::En, ItemKind::Test) => (
            "the repository at the base branch".to_string(),
            format!("the tests{where_en} run after \"{title}\""),
            "the new or changed tests run and pass".to_string(),
        ),
        (Language::En, ItemKind::Implementation | ItemKind::Definition) => (
            "the repository at the base branch".to_string(),
            format!("\"{title}\" is implemented and the unit tests run"),
            format!("\"{title}\" works as the request describes and a test covers it"),
        ),
        (Language::Ja, ItemKind::Docs) => (
            "ベースブランチのリポジトリ".to_string(),
            format!("「{title}」の後でドキュメント{where_ja}を読む"),
            "リクエストの内容が書かれ、Markdown が正しく表示され、相対リンクが解決する".to_string(),
        ),
        (Language::Ja, ItemKind::Test) => (
            "ベースブランチのリポジトリ".to_string(),
            format!("「{title}」の後でテスト{where_ja}を実行する"),
            "追加・変更したテストが実行され、通る".to_string(),
        ),
        (Language::Ja, ItemKind::Implementation | ItemKind::Definition) => (
            "ベースブランチのリポジトリ".to_string(),
            format!("「{title}」を実装してユニットテストを実行する"),
            format!("「{title}」がリクエストどおりに動作し、テストで確認されている"),
        ),
    }
}

pub(crate) fn is_doc_path(p: &str) -> bool {
    let l = p.to_ascii_lowercase();
    [".md", ".rst", ".txt", ".adoc", ".markdown"]
        .iter()
        .any(|e| l.ends_with(e))
        || l.starts_with("docs/")
        || l.starts_with("doc/")
}

#[cfg(test)]
mod kind_tests {
    use super::kind_of;
    use dandori_plan::AcKind;

    #[test]
    fn criteria_are_classified_by_what_they_ask() {
        let k = |t: &str| kind_of("g", "w", t);
        assert_eq!(k("it returns 2"), AcKind::Functional);
        assert_eq!(k("the value is within range"), AcKind::Functional);
        assert_eq!(k("it answers within 200 ms"), AcKind::Nonfunctional);
        assert_eq!(k("the diff is at most 50 lines"), AcKind::Nonfunctional);
        assert_eq!(k("existing tests still pass"), AcKind::Regression);
        assert_eq!(
            kind_of(
                "the repository",
                "it is checked out",
                "nothing else changed"
            ),
            AcKind::Regression
        );
        assert_eq!(k("応答は 200 ミリ秒以内"), AcKind::Nonfunctional);
        assert_eq!(k("既存の機能は引き続き動く"), AcKind::Regression);
        // A tolerance on the value computed is the behaviour, not a bound.
        assert_eq!(k("it returns 0.3048 (within 1e-9)"), AcKind::Functional);
        assert_eq!(k("it answers within 2 seconds"), AcKind::Nonfunctional);
        assert_eq!(k("it uses less than 50 MB"), AcKind::Nonfunctional);
        assert_eq!(
            kind_of("", "既存のテストを実行する", "すべて成功する"),
            AcKind::Regression
        );
    }
}
