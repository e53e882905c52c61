//! Size estimation (seed 003 §3) and the chunking decision (seed 003 §4), as pure
//! functions: the caller supplies the raw estimates (from an LLM or the offline
//! planner) and the clock reading.
//!
//! # Score
//!
//! `total_score = floor(0.3·tokens + 0.3·files + 0.2·complexity + 0.2·depth)`, each
//! factor first normalised to 0–100:
//!
//! | factor | normalisation | 100 reached at |
//! | --- | --- | --- |
//! | `estimated_tokens` | `tokens / 80`, capped | 8 000 output tokens |
//! | `estimated_file_count` | `files × 20`, capped | 5 files |
//! | `complexity_score` | `score × 10` (score clamped to 1–10) | 10 |
//! | `dependency_depth` | `depth × 25`, capped | depth 4 |
//!
//! The caps are where seed 003 §3.2 says a task stops being small: five files or
//! a few thousand tokens of output already make a 15–30 minute (L) task. The score
//! is truncated to an integer so the ranges of §3.2 (0–20 XS, 21–40 S, 41–60 M,
//! 61–80 L, 81–100 XL) cover every value. The seed's own example (5 000 tokens,
//! 5 files, complexity 7, depth 2) scores 72, category L, as in seed 003 §7.2.
//!
//! # Chunking
//!
//! Every criterion of §4.1 and every prohibition of §4.2 is evaluated and recorded
//! with its value, threshold and whether it was met. The task is chunked when at
//! least one §4.1 criterion is met and no §4.2 prohibition is.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use crate::model::Extra;
use crate::{ChunkingDecision, DecisionCriterion, SizeCategory, SizeEstimation};

/// Seed 003 §3.1 weights.
pub const WEIGHT_TOKENS: f64 = 0.3;
pub const WEIGHT_FILES: f64 = 0.3;
pub const WEIGHT_COMPLEXITY: f64 = 0.2;
pub const WEIGHT_DEPTH: f64 = 0.2;

/// Output tokens that normalise to 100.
pub const TOKENS_AT_MAX: f64 = 8_000.0;
/// Files that normalise to 100.
pub const FILES_AT_MAX: f64 = 5.0;
/// Dependency depth that normalises to 100.
pub const DEPTH_AT_MAX: f64 = 4.0;
/// Seed 003 §4.1: chunk from this many files.
pub const CHUNK_FILE_THRESHOLD: u64 = 3;

impl SizeCategory {
    pub const ALL: [SizeCategory; 5] = [
        SizeCategory::XS,
        SizeCategory::S,
        SizeCategory::M,
        SizeCategory::L,
        SizeCategory::XL,
    ];

    /// Seed 003 §3.2 ranges.
    pub fn from_score(score: u8) -> SizeCategory {
        match score {
            0..=20 => SizeCategory::XS,
            21..=40 => SizeCategory::S,
            41..=60 => SizeCategory::M,
            61..=80 => SizeCategory::L,
            _ => SizeCategory::XL,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SizeCategory::XS => "XS",
            SizeCategory::S => "S",
            SizeCategory::M => "M",
            SizeCategory::L => "L",
            SizeCategory::XL => "XL",
        }
    }
}

impl fmt::Display for SizeCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a size category (XS | S | M | L | XL)")]
pub struct UnknownSizeCategory(pub String);

impl FromStr for SizeCategory {
    type Err = UnknownSizeCategory;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SizeCategory::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| UnknownSizeCategory(s.to_string()))
    }
}

/// The raw estimates of seed 003 §3.4 plus identification.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeInputs {
    pub task_id: String,
    /// ISO 8601; supplied by the caller so the function stays pure.
    pub estimated_at: String,
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    /// 1–10; values outside are clamped.
    pub complexity_score: u8,
    pub dependency_depth: u64,
    pub llm_reasoning: String,
    /// 0.0–1.0; clamped.
    pub confidence: f64,
}

/// Each factor normalised to 0–100.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NormalizedFactors {
    pub tokens: f64,
    pub files: f64,
    pub complexity: f64,
    pub depth: f64,
}

pub fn normalize(inputs: &SizeInputs) -> NormalizedFactors {
    let cap = |x: f64| x.clamp(0.0, 100.0);
    NormalizedFactors {
        tokens: cap(inputs.estimated_tokens as f64 / TOKENS_AT_MAX * 100.0),
        files: cap(inputs.estimated_file_count as f64 / FILES_AT_MAX * 100.0),
        complexity: f64::from(inputs.complexity_score.clamp(1, 10)) * 10.0,
        depth: cap(inputs.dependency_depth as f64 / DEPTH_AT_MAX * 100.0),
    }
}

/// The weighted score 0–100 (an integer, see the module docs).
pub fn total_score(inputs: &SizeInputs) -> u8 {
    let f = normalize(inputs);
    let score = WEIGHT_TOKENS * f.tokens
        + WEIGHT_FILES * f.files
        + WEIGHT_COMPLEXITY * f.complexity
        + WEIGHT_DEPTH * f.depth;
    // Tiny epsilon so 0.3·50 + … landing on x.9999 is not truncated a point low.
    (score + 1e-9).floor().clamp(0.0, 100.0) as u8
}

/// Seed 003 §3.3.
pub fn estimate_size(inputs: &SizeInputs) -> SizeEstimation {
    let score = total_score(inputs);
    SizeEstimation {
        task_id: inputs.task_id.clone(),
        estimated_at: inputs.estimated_at.clone(),
        estimated_tokens: inputs.estimated_tokens,
        estimated_file_count: inputs.estimated_file_count,
        complexity_score: inputs.complexity_score.clamp(1, 10),
        dependency_depth: inputs.dependency_depth,
        total_score: f64::from(score),
        size_category: SizeCategory::from_score(score),
        llm_reasoning: inputs.llm_reasoning.clone(),
        confidence: if inputs.confidence.is_nan() {
            0.0
        } else {
            inputs.confidence.clamp(0.0, 1.0)
        },
        extra: Extra::new(),
    }
}

/// Everything the chunking decision looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct ChunkingInputs {
    pub task_id: String,
    /// ISO 8601; supplied by the caller.
    pub decided_at: String,
    pub size_category: SizeCategory,
    pub estimated_file_count: u64,
    /// "Implement A, B and C": the request enumerates parts.
    pub explicit_enumeration: bool,
    /// The change spans several components.
    pub multiple_components: bool,
    pub user_requested_chunk: bool,
    /// An indivisible operation (a single transaction, …).
    pub atomic_operation: bool,
    pub user_requested_single: bool,
    /// Chunking disabled in config (`task-planning.json` `enabled: false`).
    pub config_disable_chunk: bool,
    /// `chunking.auto_chunk_threshold` (seed 003 §8.1, default M).
    pub auto_chunk_threshold: SizeCategory,
    /// How many subtasks the decomposition proposes.
    pub proposed_subtasks: u64,
    /// `chunking.min_subtasks` / `max_subtasks`.
    pub min_subtasks: u64,
    pub max_subtasks: u64,
    /// Left empty, a reasoning is written from the criteria.
    pub llm_reasoning: String,
}

fn criterion(name: &str, value: Value, threshold: Value, met: bool) -> DecisionCriterion {
    DecisionCriterion {
        name: name.to_string(),
        value,
        threshold,
        met,
    }
}

/// Names of the §4.1 criteria, in order.
pub const CHUNK_CRITERIA: [&str; 5] = [
    "size_category",
    "estimated_file_count",
    "explicit_enumeration",
    "multiple_components",
    "user_requested_chunk",
];
/// Names of the §4.2 prohibitions, in order.
pub const CHUNK_PROHIBITIONS: [&str; 4] = [
    "atomic_operation",
    "user_requested_single",
    "config_disable_chunk",
    "size_category_xs_s",
];

/// Seed 003 §4: the decision with every criterion recorded (§4.1 first, then
/// §4.2). When chunking, `chunk_count` is the proposed subtask count clamped to
/// `min_subtasks..=max_subtasks`; otherwise 0.
pub fn decide_chunking(inputs: &ChunkingInputs) -> ChunkingDecision {
    let cat = inputs.size_category;
    let flag = |name: &str, v: bool| criterion(name, json!(v), json!(true), v);
    let for_chunk = vec![
        criterion(
            CHUNK_CRITERIA[0],
            json!(cat.as_str()),
            json!(inputs.auto_chunk_threshold.as_str()),
            cat >= inputs.auto_chunk_threshold,
        ),
        criterion(
            CHUNK_CRITERIA[1],
            json!(inputs.estimated_file_count),
            json!(CHUNK_FILE_THRESHOLD),
            inputs.estimated_file_count >= CHUNK_FILE_THRESHOLD,
        ),
        flag(CHUNK_CRITERIA[2], inputs.explicit_enumeration),
        flag(CHUNK_CRITERIA[3], inputs.multiple_components),
        flag(CHUNK_CRITERIA[4], inputs.user_requested_chunk),
    ];
    let against = vec![
        flag(CHUNK_PROHIBITIONS[0], inputs.atomic_operation),
        flag(CHUNK_PROHIBITIONS[1], inputs.user_requested_single),
        flag(CHUNK_PROHIBITIONS[2], inputs.config_disable_chunk),
        criterion(
            CHUNK_PROHIBITIONS[3],
            json!(cat.as_str()),
            json!(["XS", "S"]),
            cat <= SizeCategory::S,
        ),
    ];
    let wanted = for_chunk.iter().any(|c| c.met);
    let prohibited = against.iter().any(|c| c.met);
    let should_chunk = wanted && !prohibited;
    let (lo, hi) = (
        inputs.min_subtasks.max(1),
        inputs.max_subtasks.max(inputs.min_subtasks.max(1)),
    );
    let chunk_count = if should_chunk {
        inputs.proposed_subtasks.clamp(lo, hi)
    } else {
        0
    };
    let llm_reasoning = if inputs.llm_reasoning.trim().is_empty() {
        let met = |cs: &[DecisionCriterion]| {
            cs.iter()
                .filter(|c| c.met)
                .map(|c| format!("{} ({})", c.name, c.value))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match (wanted, prohibited) {
            (true, false) => format!("chunk into {chunk_count}: {}", met(&for_chunk)),
            (_, true) => format!("single: prohibited by {}", met(&against)),
            (false, false) => "single: no chunking criterion met".to_string(),
        }
    } else {
        inputs.llm_reasoning.clone()
    };
    let mut decision_criteria = for_chunk;
    decision_criteria.extend(against);
    ChunkingDecision {
        task_id: inputs.task_id.clone(),
        decided_at: inputs.decided_at.clone(),
        should_chunk,
        chunk_count,
        decision_criteria,
        llm_reasoning,
        subtask_definitions: None,
        extra: Extra::new(),
    }
}
