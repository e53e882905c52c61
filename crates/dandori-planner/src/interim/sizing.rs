//! Seed 003 §3–4: the weighted size score and category, and the chunking decision
//! with every criterion of §4.1 / §4.2 evaluated and recorded.

use dandori_plan::{ChunkingDecision, DecisionCriterion, SizeCategory, SizeEstimation};
use serde_json::json;

/// The seed 003 §3.4 estimates a planner made.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeInputs {
    pub task_id: String,
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    pub complexity_score: u8,
    pub dependency_depth: u64,
    pub reasoning: String,
    pub confidence: f64,
}

/// Each factor normalised to 0–100: 10 000 tokens, 10 files, complexity 10 and
/// depth 5 are the maxima.
pub fn estimate_size(inputs: &SizeInputs, now: &str) -> SizeEstimation {
    let tokens = (inputs.estimated_tokens as f64 / 100.0).min(100.0);
    let files = (inputs.estimated_file_count as f64 * 10.0).min(100.0);
    let complexity = f64::from(inputs.complexity_score.clamp(1, 10)) * 10.0;
    let depth = (inputs.dependency_depth as f64 * 20.0).min(100.0);
    let total = 0.3 * tokens + 0.3 * files + 0.2 * complexity + 0.2 * depth;
    let total = (total * 10.0).round() / 10.0;
    SizeEstimation {
        task_id: inputs.task_id.clone(),
        estimated_at: now.to_string(),
        estimated_tokens: inputs.estimated_tokens,
        estimated_file_count: inputs.estimated_file_count,
        complexity_score: inputs.complexity_score.clamp(1, 10),
        dependency_depth: inputs.dependency_depth,
        total_score: total,
        size_category: category(total),
        llm_reasoning: inputs.reasoning.clone(),
        confidence: inputs.confidence.clamp(0.0, 1.0),
        extra: Default::default(),
    }
}

/// Seed 003 §3.2 ranges.
pub fn category(score: f64) -> SizeCategory {
    let s = score.round();
    if s <= 20.0 {
        SizeCategory::XS
    } else if s <= 40.0 {
        SizeCategory::S
    } else if s <= 60.0 {
        SizeCategory::M
    } else if s <= 80.0 {
        SizeCategory::L
    } else {
        SizeCategory::XL
    }
}

pub fn parse_category(s: &str) -> Option<SizeCategory> {
    match s.trim().to_uppercase().as_str() {
        "XS" => Some(SizeCategory::XS),
        "S" => Some(SizeCategory::S),
        "M" => Some(SizeCategory::M),
        "L" => Some(SizeCategory::L),
        "XL" => Some(SizeCategory::XL),
        _ => None,
    }
}

/// What §4.1 / §4.2 need besides the size estimation.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkingInputs {
    pub threshold: SizeCategory,
    pub explicit_enumeration: bool,
    pub multiple_components: bool,
    pub user_requested_chunk: bool,
    pub atomic_operation: bool,
    pub user_requested_single: bool,
    pub config_disable_chunk: bool,
    /// Subtasks available if chunking.
    pub subtask_count: u64,
    pub min_subtasks: u64,
}

/// Chunk when some §4.1 criterion is met, no §4.2 criterion is, and there are at
/// least `min_subtasks` subtasks to split into.
pub fn decide_chunking(
    size: &SizeEstimation,
    inputs: &ChunkingInputs,
    now: &str,
) -> ChunkingDecision {
    let cat = size.size_category;
    let name = |c: SizeCategory| format!("{c:?}");
    let crit = |n: &str, value: serde_json::Value, threshold: serde_json::Value, met: bool| {
        DecisionCriterion {
            name: n.to_string(),
            value,
            threshold,
            met,
        }
    };
    let consider = vec![
        crit(
            "size_category",
            json!(name(cat)),
            json!(name(inputs.threshold)),
            cat >= inputs.threshold,
        ),
        crit(
            "estimated_file_count",
            json!(size.estimated_file_count),
            json!(3),
            size.estimated_file_count >= 3,
        ),
        crit(
            "explicit_enumeration",
            json!(inputs.explicit_enumeration),
            json!(true),
            inputs.explicit_enumeration,
        ),
        crit(
            "multiple_components",
            json!(inputs.multiple_components),
            json!(true),
            inputs.multiple_components,
        ),
        crit(
            "user_requested_chunk",
            json!(inputs.user_requested_chunk),
            json!(true),
            inputs.user_requested_chunk,
        ),
    ];
    let xs_s = matches!(cat, SizeCategory::XS | SizeCategory::S);
    let prohibit = vec![
        crit(
            "atomic_operation",
            json!(inputs.atomic_operation),
            json!(true),
            inputs.atomic_operation,
        ),
        crit(
            "user_requested_single",
            json!(inputs.user_requested_single),
            json!(true),
            inputs.user_requested_single,
        ),
        crit(
            "config_disable_chunk",
            json!(inputs.config_disable_chunk),
            json!(true),
            inputs.config_disable_chunk,
        ),
        crit(
            "size_category_xs_s",
            json!(name(cat)),
            json!(["XS", "S"]),
            xs_s && !inputs.user_requested_chunk,
        ),
    ];
    let wanted: Vec<&str> = consider
        .iter()
        .filter(|c| c.met)
        .map(|c| c.name.as_str())
        .collect();
    let blocked: Vec<&str> = prohibit
        .iter()
        .filter(|c| c.met)
        .map(|c| c.name.as_str())
        .collect();
    let enough = inputs.subtask_count >= inputs.min_subtasks.max(2);
    let should_chunk = !wanted.is_empty() && blocked.is_empty() && enough;
    let reasoning = if should_chunk {
        format!(
            "split into {} subtasks: {} met; no prohibiting criterion",
            inputs.subtask_count,
            wanted.join(", ")
        )
    } else if !blocked.is_empty() {
        format!("single task: {} prohibits chunking", blocked.join(", "))
    } else if wanted.is_empty() {
        "single task: no chunking criterion met".to_string()
    } else {
        format!(
            "single task: {} met but only {} subtask(s) found (minimum {})",
            wanted.join(", "),
            inputs.subtask_count,
            inputs.min_subtasks.max(2)
        )
    };
    let mut decision_criteria = consider;
    decision_criteria.extend(prohibit);
    ChunkingDecision {
        task_id: size.task_id.clone(),
        decided_at: now.to_string(),
        should_chunk,
        chunk_count: if should_chunk {
            inputs.subtask_count
        } else {
            0
        },
        decision_criteria,
        llm_reasoning: reasoning,
        subtask_definitions: None,
        extra: Default::default(),
    }
}
