use dandori_plan::reason_codes;
use dandori_plan::validation::{self, Finding, Severity};
use pretty_assertions::assert_eq;
use proptest::prelude::*;

use super::{fixture, fixture_dir, sample};

#[test]
fn seed004_sample_validates_clean() {
    let report = validation::validate_str(&sample());
    assert_eq!(report.findings, Vec::<Finding>::new());
    let parsed = validation::parse(&sample()).expect("sample parses");
    assert_eq!(parsed.planning.steps[0].step_id, "S01");
    // The typed entry point agrees.
    assert_eq!(validation::validate(&parsed.planning).findings, Vec::new());
}

#[test]
fn every_reason_code_has_a_fixture_producing_exactly_it() {
    for code in reason_codes::ALL {
        let text = fixture(&format!("codes/{code}.json"));
        let report = validation::validate_str(&text);
        assert_eq!(report.codes(), vec![*code], "fixture {code}: {report:#?}");
    }
    // And no stray fixtures.
    let count = std::fs::read_dir(fixture_dir().join("codes"))
        .unwrap()
        .count();
    assert_eq!(count, reason_codes::ALL.len());
}

#[test]
fn parse_error_has_line_and_column() {
    let report = validation::validate_str("{\n  \"version\": \"1.0\",\n  oops\n}");
    let f = &report.findings[0];
    assert_eq!(report.findings.len(), 1);
    assert_eq!(f.code, reason_codes::JSON_PARSE_ERROR);
    assert_eq!((f.line, f.column), (Some(3), Some(3)));
    assert!(f.message.contains("line 3, column 3"), "{}", f.message);
}

#[test]
fn every_missing_key_is_reported_at_once() {
    let mut doc: serde_json::Value = serde_json::from_str(&sample()).unwrap();
    let root = doc.as_object_mut().unwrap();
    root.remove("run_id");
    root.remove("gates");
    let step = &mut root["steps"][0];
    step.as_object_mut().unwrap().remove("title");
    step["scope"]
        .as_object_mut()
        .unwrap()
        .remove("max_diff_lines");
    step["expected_diff"]["files_max"] = serde_json::json!("eight");
    let report = validation::validate_value(&doc);
    let got: Vec<(&str, &str)> = report
        .findings
        .iter()
        .map(|f| (f.code.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("MISSING_REQUIRED_KEY", "run_id"),
            ("MISSING_REQUIRED_KEY", "steps[0].title"),
            ("MISSING_REQUIRED_KEY", "steps[0].scope.max_diff_lines"),
            ("INVALID_TYPE", "steps[0].expected_diff.files_max"),
            ("MISSING_REQUIRED_KEY", "gates"),
        ]
    );
    assert!(report.has_fail());
}

#[test]
fn findings_name_paths_and_values() {
    let report = validation::validate_str(&fixture("codes/SCOPE_DIFF_OVER_LIMIT.json"));
    assert_eq!(
        report.findings,
        vec![Finding {
            code: "SCOPE_DIFF_OVER_LIMIT".into(),
            severity: Severity::Fail,
            path: "steps[0].scope.max_diff_lines".into(),
            message: "scope.max_diff_lines 500 exceeds limits.max_diff_lines 400".into(),
            line: None,
            column: None,
        }]
    );
}

#[test]
fn cycle_is_named() {
    let report = validation::validate_str(&fixture("codes/DEPENDENCY_CYCLE.json"));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].path, "steps[0]");
    assert!(
        report.findings[0]
            .message
            .contains("S01 -> S02 -> S03 -> S01"),
        "{}",
        report.findings[0].message
    );
}

#[test]
fn warnings_alone_are_ok() {
    let report = validation::validate_str(&fixture("codes/TOO_MANY_STEPS.json"));
    assert!(!report.has_fail());
    let out = report.output();
    assert_eq!(out.status, "ok");
    assert_eq!(out.errors.len(), 0);
    assert_eq!(out.warnings.len(), 1);
    assert!(validation::parse(&fixture("codes/TOO_MANY_STEPS.json")).is_ok());
}

#[test]
fn reason_codes_doc_lists_every_code() {
    let doc_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/REASON_CODES.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap();
    for code in reason_codes::ALL.iter().chain(reason_codes::SANITISATION) {
        assert!(
            doc.contains(&format!("`{code}`")),
            "docs/REASON_CODES.md misses {code}"
        );
    }
}

#[test]
fn non_object_roots_fail_cleanly() {
    for text in ["[]", "null", "42", "\"x\""] {
        let report = validation::validate_str(text);
        assert_eq!(report.codes(), vec!["INVALID_TYPE"], "{text}");
        assert_eq!(report.findings[0].path, "$");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let report = validation::validate_bytes(&bytes);
        prop_assert!(report.has_fail() || !bytes.is_empty());
    }

    #[test]
    fn arbitrary_json_never_panics(value in arb_json()) {
        let _ = validation::validate_value(&value);
    }

    #[test]
    fn mutated_sample_never_panics(cut in 0usize..3000, junk in "[\\[\\]{}\",:0-9a-z]{0,8}") {
        let text = sample();
        let cut = cut.min(text.len());
        let cut = (0..=cut).rev().find(|&c| text.is_char_boundary(c)).unwrap_or(0);
        let mutated = format!("{}{}{}", &text[..cut], junk, &text[cut..]);
        let _ = validation::validate_str(&mutated);
        let _ = validation::parse(&mutated);
    }
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        "[a-zA-Z0-9_]{0,6}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        let keys = prop_oneof![
            Just("version".to_string()),
            Just("steps".to_string()),
            Just("step_id".to_string()),
            Just("limits".to_string()),
            Just("depends_on".to_string()),
            Just("context".to_string()),
            Just("acceptance_criteria".to_string()),
            Just("links_to_ac".to_string()),
            Just("produces".to_string()),
            Just("consumes".to_string()),
            "[a-z]{1,4}",
        ];
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map(keys, inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The command policy of `run_command` as the judge of sanitisation.
fn judge(line: &str) -> Option<validation::CommandVerdict> {
    let policy =
        dandori_exec::CommandPolicy::new(&dandori_config::CommandPolicyConfig::default()).unwrap();
    policy
        .check(line)
        .err()
        .map(|v| validation::CommandVerdict {
            code: v.code.to_string(),
            rule: v.rule,
            message: v.message,
        })
}

#[test]
fn every_sanitisation_code_has_a_fixture_producing_exactly_it() {
    for code in reason_codes::SANITISATION {
        let text = fixture(&format!("sanitise/{code}.json"));
        let report = validation::validate_bytes_with(text.as_bytes(), &judge);
        assert_eq!(report.codes(), vec![*code], "fixture {code}: {report:#?}");
        let f = &report.findings[0];
        assert!(f.path.starts_with("steps[0]."), "{f:?}");
    }
    let count = std::fs::read_dir(fixture_dir().join("sanitise"))
        .unwrap()
        .count();
    assert_eq!(count, reason_codes::SANITISATION.len());
    // The sample plan is clean.
    let report = validation::validate_bytes_with(sample().as_bytes(), &judge);
    assert_eq!(report.findings, Vec::<Finding>::new());
}

#[test]
fn sanitisation_reports_json_paths_and_policy_codes() {
    let mut doc: serde_json::Value = serde_json::from_str(&sample()).unwrap();
    doc["steps"][0]["scope"]["target_paths"] = serde_json::json!(["src", "/etc/cron.d/x"]);
    doc["steps"][0]["inputs"]["context_files"] = serde_json::json!([".git/config"]);
    doc["steps"][0]["commands"]["unit"] =
        serde_json::json!(["php artisan test", "yes | php artisan migrate"]);
    doc["context"]["test_instructions"]["unit"] = serde_json::json!("nohup php artisan queue:work");
    let report = validation::sanitise(&doc, &judge);
    let got: Vec<(&str, &str)> = report
        .findings
        .iter()
        .map(|f| (f.code.as_str(), f.path.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("PLAN_PATH_OUTSIDE_REPO", "steps[0].scope.target_paths[1]"),
            ("PLAN_PATH_OUTSIDE_REPO", "steps[0].inputs.context_files[0]"),
            ("PLAN_INFINITE_LOOP", "steps[0].commands.unit[1]"),
            ("PLAN_BACKGROUND_PROCESS", "context.test_instructions.unit"),
        ]
    );
    assert!(report.findings[2].message.contains("POLICY_INFINITE_LOOP"));
}

/// Seed 001's `mode`, `complexity_score`, `execution_strategy` and the steps'
/// `suggested_tools` / `suggested_persona`: optional (the seed 004 sample has
/// none and validates clean, above), typed when present, and kept by a parse.
#[test]
fn seed001_fields_are_optional_typed_and_kept() {
    let mut v: serde_json::Value = serde_json::from_str(&sample()).unwrap();
    v["mode"] = serde_json::json!("standard");
    v["complexity_score"] = serde_json::json!(0.42);
    v["execution_strategy"] = serde_json::json!("dag");
    v["steps"][0]["suggested_tools"] = serde_json::json!(["read_file", "run_command"]);
    v["steps"][0]["suggested_persona"] = serde_json::json!("a careful Python reviewer");
    let text = v.to_string();
    assert_eq!(
        validation::validate_str(&text).findings,
        Vec::<Finding>::new()
    );
    let parsed = validation::parse(&text).unwrap().planning;
    assert_eq!(parsed.mode, Some(dandori_plan::PlanMode::Standard));
    assert_eq!(parsed.complexity_score, Some(0.42));
    assert_eq!(
        parsed.execution_strategy,
        Some(dandori_plan::ExecutionStrategy::Dag)
    );
    assert_eq!(
        parsed.steps[0].suggested_persona.as_deref(),
        Some("a careful Python reviewer")
    );
    assert_eq!(
        serde_json::to_value(&parsed).unwrap()["steps"][0]["suggested_tools"],
        serde_json::json!(["read_file", "run_command"])
    );

    let bad = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut v = v.clone();
        edit(&mut v);
        validation::validate_str(&v.to_string())
            .findings
            .into_iter()
            .map(|f| (f.code.to_string(), f.path))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        bad(&|v| v["mode"] = serde_json::json!("huge")),
        vec![(reason_codes::INVALID_VALUE.to_string(), "mode".to_string())]
    );
    assert_eq!(
        bad(&|v| v["complexity_score"] = serde_json::json!(1.5)),
        vec![(
            reason_codes::INVALID_VALUE.to_string(),
            "complexity_score".to_string()
        )]
    );
    assert_eq!(
        bad(&|v| v["execution_strategy"] = serde_json::json!("hybrid")),
        vec![(
            reason_codes::INVALID_VALUE.to_string(),
            "execution_strategy".to_string()
        )]
    );
    assert_eq!(
        bad(&|v| v["steps"][0]["suggested_persona"] = serde_json::json!(3)),
        vec![(
            reason_codes::INVALID_TYPE.to_string(),
            "steps[0].suggested_persona".to_string()
        )]
    );
}
