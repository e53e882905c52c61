//! Request intake: English and Japanese enumerations, sections and criteria.

use dandori_planner::request::{Language, RequestCriterion, RequirementOrigin, parse};
use pretty_assertions::assert_eq;

fn req(text: &str) -> dandori_planner::Request {
    parse(text, "fallback", "test.md", None).unwrap()
}

#[test]
fn front_matter_id_and_title_win() {
    let r = req("---\nid: RQ-9\ntitle: From front matter\n---\n# Heading\n\nBody text.\n");
    assert_eq!(
        (r.id.as_str(), r.title.as_str()),
        ("RQ-9", "From front matter")
    );
    assert_eq!(r.summary, "Body text.");
    let r = req("# Heading only\n\nBody.\n");
    assert_eq!(
        (r.id.as_str(), r.title.as_str()),
        ("fallback", "Heading only")
    );
}

/// An issue as trackers export it: the title on the first line, the body
/// right under it (SWE-bench's `problem_statement`, `gh issue view`).
#[test]
fn an_issue_title_line_above_its_body_is_the_title() {
    let r = req(
        "Require a non-empty name for Blueprints\nThings do not work correctly if a Blueprint is given an empty name (e.g. #4944).\nIt would be helpful if a `ValueError` was raised when trying to do that.\n",
    );
    assert_eq!(r.title, "Require a non-empty name for Blueprints");
    assert!(
        r.summary.contains("Things do not work correctly"),
        "{}",
        r.summary
    );
    let r = req(
        "Getting http://.example.com raises UnicodeError\n`requests.get(\"http://.example.com\")` raises.\n",
    );
    assert_eq!(r.title, "Getting http://.example.com raises UnicodeError");
    // A body starting lower case after a short title, an area tag, or code.
    for (text, title) in [
        (
            "Add joblib in show_versions\njoblib should be added to the dependencies listed.\n",
            "Add joblib in show_versions",
        ),
        (
            "skipping: --runxfail breaks pytest.mark.skip location reporting\npytest versions: 5.4.x, current master\n",
            "skipping: --runxfail breaks pytest.mark.skip location reporting",
        ),
        (
            "kernS: 'kern' referenced before assignment\nfrom sympy.core.sympify import kernS\n",
            "kernS: 'kern' referenced before assignment",
        ),
        (
            "cla(), clf() should unset the `.axes` and `.figure` attributes of deparented artists\nmpl2.0b3: Removing an artist from its axes unsets its `.axes`.\n",
            "cla(), clf() should unset the `.axes` and `.figure` attributes of deparented artists",
        ),
    ] {
        assert_eq!(req(text).title, title, "{text}");
    }
    // Prose wrapped mid-sentence is one paragraph, not a title and a body.
    for text in [
        "Add a function that counts the words in\nthe text and returns them.\n",
        "Add a function that counts the words of the\nText class.\n",
        "Add a function that counts the words\nin the text and returns them.\n",
        "Add a function that counts the words of a text and returns the number\nfound, so that the caller can print it.\n",
    ] {
        let r = req(text);
        assert_ne!(r.title, text.lines().next().unwrap(), "{text}");
    }
}

#[test]
fn english_bullets_numbered_and_nested() {
    let r = req(
        "# Title\n\n## Tasks\n1. First thing\n   - detail a\n2. Second thing\n- [ ] Third thing\n\n## Constraints\n- keep it small\n\n## Out of scope\n- the UI\n",
    );
    assert_eq!(
        r.requirements,
        vec!["First thing", "Second thing", "Third thing"]
    );
    assert_eq!(r.requirement_items[0].details, vec!["detail a"]);
    assert_eq!(r.requirement_items[0].origin, RequirementOrigin::Numbered);
    assert_eq!(r.requirement_items[2].origin, RequirementOrigin::Bullet);
    assert_eq!(r.constraints, vec!["keep it small"]);
    assert_eq!(r.out_of_scope, vec!["the UI"]);
    assert_eq!(r.language, Language::En);
}

#[test]
fn japanese_sections_nakaguro_and_numbering() {
    let r = req(
        "# 検索機能\n\n検索を改善する。\n\n## 要件\n・タイトル検索\n・タグ検索\n① 並び替え\n\n## 制約\n- 既存APIを壊さない\n\n## 受け入れ基準\n- 前提: タスクが3件ある / 操作: 「牛乳」で検索する / 期待: 1件返る\n- 空文字で検索したとき、全件を返す\n",
    );
    assert_eq!(r.language, Language::Ja);
    assert_eq!(r.requirements, vec!["タイトル検索", "タグ検索", "並び替え"]);
    assert_eq!(r.constraints, vec!["既存APIを壊さない"]);
    assert_eq!(
        r.acceptance_criteria,
        vec![
            RequestCriterion {
                given: "タスクが3件ある".into(),
                when: "「牛乳」で検索する".into(),
                then: "1件返る".into(),
                explicit: true
            },
            RequestCriterion {
                given: "本リクエストの変更が適用されている".into(),
                when: "空文字で検索する".into(),
                then: "全件を返す".into(),
                explicit: true
            },
        ]
    );
}

#[test]
fn inline_enumerations_in_both_languages() {
    let r = req("# ログイン\n\nログイン、ログアウト、セッション管理を実装する。\n");
    assert_eq!(
        r.requirements,
        vec![
            "ログインを実装する",
            "ログアウトを実装する",
            "セッション管理を実装する"
        ]
    );
    assert!(
        r.requirement_items
            .iter()
            .all(|i| i.origin == RequirementOrigin::Inline)
    );

    let r = req("Add a `count` endpoint, a `clear` method and a `--port` option.");
    assert_eq!(
        r.requirements,
        vec![
            "Add a `count` endpoint",
            "Add a `clear` method",
            "Add a `--port` option"
        ]
    );

    let r = req("# 属性\n\nタグ・期限・優先度を追加");
    assert_eq!(
        r.requirements,
        vec!["タグを追加", "期限を追加", "優先度を追加"]
    );

    // Prose with "and" is one requirement, not two.
    let r = req("Sort tasks by due date and priority.");
    assert!(r.requirements.is_empty(), "{:?}", r.requirements);
}

#[test]
fn given_when_then_outside_an_ac_section() {
    let r = req("# T\n\nGiven a user, when they log in, then a session is created.\n");
    assert_eq!(
        r.acceptance_criteria,
        vec![RequestCriterion {
            given: "a user".into(),
            when: "they log in".into(),
            then: "a session is created".into(),
            explicit: true
        }]
    );
}

#[test]
fn mentioned_paths() {
    let r = req("# T\n\nChange `todo/store.py` and tests/test_store.py; see docs/ too.\n");
    assert_eq!(
        r.mentioned_paths,
        vec!["todo/store.py", "tests/test_store.py", "docs/"]
    );
}

#[test]
fn empty_and_bad_requests_are_errors() {
    let e = parse("   \n\n", "x", "empty.md", None).unwrap_err();
    assert_eq!(e.code(), "REQUEST_EMPTY");
    assert!(e.to_string().contains("empty.md"), "{e}");
    let e = parse("---\nid: ../evil\n---\n# T\n", "x", "bad.md", None).unwrap_err();
    assert_eq!(e.code(), "REQUEST_INVALID");
    let e = parse("---\nid: [unclosed\n---\n# T\n", "x", "yaml.md", None).unwrap_err();
    assert!(e.to_string().contains("yaml.md: line"), "{e}");
    let e = parse("---\nid: x\n# never closed\n", "x", "open.md", None).unwrap_err();
    assert!(e.to_string().contains("never closed"), "{e}");
}

#[test]
fn oversized_requests_are_refused_and_paths_are_capped() {
    use dandori_planner::request::{MAX_MENTIONED_PATHS, MAX_REQUEST_BYTES};
    let big = format!("# Title\n\n{}", "x".repeat(MAX_REQUEST_BYTES));
    let err = parse(&big, "RQ-big", "big.md", None).unwrap_err();
    assert_eq!(err.code(), "REQUEST_TOO_LARGE");
    assert!(err.to_string().contains("big.md"), "{err}");

    // Many backticked paths: deduplicated in one pass and capped.
    let mut text = String::from("# Touch files\n\n");
    for i in 0..1_000 {
        text.push_str(&format!("`src/m{i}/f.py` `src/m{i}/f.py` "));
    }
    let r = parse(&text, "RQ-paths", "paths.md", None).unwrap();
    assert_eq!(r.mentioned_paths.len(), MAX_MENTIONED_PATHS);
    assert_eq!(r.mentioned_paths[1], "src/m1/f.py");
}

mod fuzz {
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any request text gives a request or an error, never a panic.
        #[test]
        fn any_request_text_parses_or_errors(text in "(# |## |- |1\\. |`|src/|\\.py|---\n|id: |前提|期待|Given |When |Then |\n|[a-z ]{1,12}|、|。|\\[|\\]|\\*){0,60}") {
            let _ = dandori_planner::request::parse(&text, "RQ-fuzz", "fuzz.md", None);
        }
    }
}
