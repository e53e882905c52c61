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
        .map(|(i, c)| AcceptanceCriterion {
            id: ac_id(i + 1),
            given: c.given.clone(),
            when: c.when.clone(),
            then: c.then.clone(),
            kind: Some(AcKind::Functional),
            extra: Default::default(),
        })
        .collect()
}

/// What callers pass as the unit command when the plan has none.
pub const NO_UNIT_COMMAND: &str = "the project's tests";

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
    let next_id = |d: &Draft| ac_id(d.acceptance_criteria.len() + 1);

    // One per requirement (subtask) that no criterion covers.
    let uncovered: Vec<usize> = draft
        .subtasks
        .iter()
        .enumerate()
        // Test and docs subtasks verify or describe others; they get no AC of their own.
        .filter(|(_, s)| {
            s.links_to_ac.is_empty()
                && matches!(
                    crate::offline::decomposition::classify(&s.title),
                    crate::offline::decomposition::ItemKind::Implementation
                        | crate::offline::decomposition::ItemKind::Definition
                )
        })
        .map(|(i, _)| i)
        .collect();
    for i in uncovered.into_iter().filter(|_| given_count < 3) {
        let title = draft.subtasks[i].title.clone();
        let id = next_id(draft);
        let (given, when, then) = match lang {
            Language::En => (
                "the repository at the base branch".to_string(),
                format!("\"{title}\" is implemented and the unit tests run"),
                format!("\"{title}\" works as the request describes and a test covers it"),
            ),
            Language::Ja => (
                "ベースブランチのリポジトリ".to_string(),
                format!("「{title}」を実装してユニットテストを実行する"),
                format!("「{title}」がリクエストどおりに動作し、テストで確認されている"),
            ),
        };
        draft.acceptance_criteria.push(AcceptanceCriterion {
            id: id.clone(),
            given,
            when,
            then,
            kind: Some(AcKind::Functional),
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
        let no_tests = unit_command.trim().is_empty() || unit_command == NO_UNIT_COMMAND;
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

    if draft.acceptance_criteria.len() < 3 {
        let id = next_id(draft);
        let (given, when, then) = match lang {
            Language::En => (
                "each step of this plan".to_string(),
                "its commit is made".to_string(),
                format!(
                    "the diff is at most {max_diff_lines} lines and stays within the step's target paths"
                ),
            ),
            Language::Ja => (
                "この計画の各ステップ".to_string(),
                "コミットする".to_string(),
                format!("差分が {max_diff_lines} 行以内で、ステップの target_paths の範囲に収まる"),
            ),
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
        notes.push(match lang {
            Language::En => format!("{id} (nonfunctional) derived from the plan's diff limits"),
            Language::Ja => format!("{id}（非機能）は計画の差分上限から導いた"),
        });
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
