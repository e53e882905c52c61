use dandori_plan::SizeCategory;
use dandori_plan::sizing::{
    self, CHUNK_CRITERIA, CHUNK_PROHIBITIONS, ChunkingInputs, SizeInputs, decide_chunking,
    estimate_size,
};
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::json;

fn inputs(tokens: u64, files: u64, complexity: u8, depth: u64) -> SizeInputs {
    SizeInputs {
        task_id: "task-001".into(),
        estimated_at: "2026-01-23T10:00:01.000Z".into(),
        estimated_tokens: tokens,
        estimated_file_count: files,
        complexity_score: complexity,
        dependency_depth: depth,
        llm_reasoning: "Multiple files with interconnected components".into(),
        confidence: 0.85,
    }
}

fn chunking(cat: SizeCategory, files: u64) -> ChunkingInputs {
    ChunkingInputs {
        task_id: "task-001".into(),
        decided_at: "2026-01-23T10:00:02.000Z".into(),
        size_category: cat,
        estimated_file_count: files,
        explicit_enumeration: false,
        multiple_components: false,
        user_requested_chunk: false,
        atomic_operation: false,
        user_requested_single: false,
        config_disable_chunk: false,
        auto_chunk_threshold: SizeCategory::M,
        proposed_subtasks: 5,
        min_subtasks: 2,
        max_subtasks: 10,
        llm_reasoning: String::new(),
    }
}

#[test]
fn seed003_example_scores_72_l() {
    let e = estimate_size(&inputs(5000, 5, 7, 2));
    assert_eq!(e.total_score, 72.0);
    assert_eq!(e.size_category, SizeCategory::L);
    assert_eq!(e.confidence, 0.85);
}

#[test]
fn categories_follow_seed_ranges() {
    let cases = [
        (0, SizeCategory::XS),
        (20, SizeCategory::XS),
        (21, SizeCategory::S),
        (40, SizeCategory::S),
        (41, SizeCategory::M),
        (60, SizeCategory::M),
        (61, SizeCategory::L),
        (80, SizeCategory::L),
        (81, SizeCategory::XL),
        (100, SizeCategory::XL),
    ];
    for (score, cat) in cases {
        assert_eq!(SizeCategory::from_score(score), cat, "{score}");
    }
    assert_eq!(estimate_size(&inputs(0, 0, 1, 0)).total_score, 2.0);
    assert_eq!(
        estimate_size(&inputs(100_000, 50, 10, 9)).total_score,
        100.0
    );
    assert_eq!("xl".parse::<SizeCategory>(), Ok(SizeCategory::XL));
    assert!("XXL".parse::<SizeCategory>().is_err());
}

#[test]
fn chunking_records_every_criterion() {
    let d = decide_chunking(&chunking(SizeCategory::L, 5));
    assert!(d.should_chunk);
    assert_eq!(d.chunk_count, 5);
    let names: Vec<&str> = d
        .decision_criteria
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let expected: Vec<&str> = CHUNK_CRITERIA
        .iter()
        .chain(&CHUNK_PROHIBITIONS)
        .copied()
        .collect();
    assert_eq!(names, expected);
    assert_eq!(
        serde_json::to_value(&d.decision_criteria[..2]).unwrap(),
        json!([
            {"name": "size_category", "value": "L", "threshold": "M", "met": true},
            {"name": "estimated_file_count", "value": 5, "threshold": 3, "met": true}
        ])
    );
    assert_eq!(
        d.llm_reasoning,
        "chunk into 5: size_category (\"L\"), estimated_file_count (5)"
    );
}

#[test]
fn prohibitions_win() {
    // Small tasks are never chunked, even with many files.
    let d = decide_chunking(&chunking(SizeCategory::S, 4));
    assert!(!d.should_chunk);
    assert_eq!(d.chunk_count, 0);
    assert!(
        d.decision_criteria
            .iter()
            .any(|c| c.name == "size_category_xs_s" && c.met)
    );
    let mut i = chunking(SizeCategory::XL, 9);
    i.atomic_operation = true;
    assert!(!decide_chunking(&i).should_chunk);
    let mut i = chunking(SizeCategory::XL, 9);
    i.user_requested_single = true;
    assert!(!decide_chunking(&i).should_chunk);
    let mut i = chunking(SizeCategory::XL, 9);
    i.config_disable_chunk = true;
    let d = decide_chunking(&i);
    assert!(!d.should_chunk);
    assert_eq!(
        d.llm_reasoning,
        "single: prohibited by config_disable_chunk (true)"
    );
}

#[test]
fn medium_task_with_one_file_and_no_flags_is_chunked_by_size_only() {
    let d = decide_chunking(&chunking(SizeCategory::M, 1));
    assert!(d.should_chunk);
    let mut i = chunking(SizeCategory::M, 1);
    i.auto_chunk_threshold = SizeCategory::L;
    i.proposed_subtasks = 1;
    let d = decide_chunking(&i);
    assert!(!d.should_chunk);
    assert_eq!(d.llm_reasoning, "single: no chunking criterion met");
    // A chunked task gets at least min_subtasks, at most max_subtasks.
    let mut i = chunking(SizeCategory::L, 1);
    i.proposed_subtasks = 40;
    assert_eq!(decide_chunking(&i).chunk_count, 10);
    i.proposed_subtasks = 1;
    assert_eq!(decide_chunking(&i).chunk_count, 2);
}

proptest! {
    #[test]
    fn score_is_bounded_and_monotone(t in 0u64..20_000, f in 0u64..20, c in 0u8..=12, d in 0u64..8) {
        let s = sizing::total_score(&inputs(t, f, c, d));
        prop_assert!(s <= 100);
        prop_assert!(sizing::total_score(&inputs(t + 500, f, c, d)) >= s);
        prop_assert!(sizing::total_score(&inputs(t, f + 1, c, d)) >= s);
        prop_assert!(sizing::total_score(&inputs(t, f, c.saturating_add(1), d)) >= s);
        prop_assert!(sizing::total_score(&inputs(t, f, c, d + 1)) >= s);
        let e = estimate_size(&inputs(t, f, c, d));
        prop_assert_eq!(e.size_category, SizeCategory::from_score(s));
    }
}
