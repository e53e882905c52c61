//! The fast path of validation: the text is read straight into a borrowed view
//! of `planning.json` that mirrors the shape tables of [`super::shape`], with no
//! `serde_json::Value` tree, no map of keys and no copy of strings the rules do
//! not look at.
//!
//! The view accepts a document only when the structural pass over its `Value`
//! would find nothing: every required key present, every value of the kind its
//! table names, enum strings among the allowed ones. Anything else (a JSON syntax
//! error, a missing key, a wrong type, a duplicated known key) makes the view
//! fail, and the caller falls back to the `Value` walk, which reports every
//! problem at once with its path. So the fast path never changes a finding; it
//! only skips the tree when there is nothing structural to report.
//!
//! Two details keep "accepted here" equal to "parses as a `Value`":
//!
//! * Unknown keys and free-form values are consumed with [`Skip`], which asks
//!   the parser for each value exactly as `Value` does (`deserialize_any`), so
//!   numbers out of range and nesting past the recursion limit fail here too
//!   (serde's `IgnoredAny` would skip them without those checks).
//! * Every object is a struct with a flattened [`Skip`] catch-all, so it is read
//!   as a map only (a derived struct would also accept a JSON array).

// The view's fields exist to be checked while parsing; most are never read.
#![allow(dead_code)]

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::shape;

/// Any JSON value, checked by the parser like `Value` is and then dropped.
#[derive(Debug, Default)]
pub(super) struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        Skip::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Skip>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<Skip>()?.is_some() {
            map.next_value::<Skip>()?;
        }
        Ok(Skip)
    }
}

/// A string whose content validation does not need.
#[derive(Debug, Default)]
pub(super) struct Str;

impl<'de> Deserialize<'de> for Str {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Str;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E>(self, _: &str) -> Result<Str, E> {
                Ok(Str)
            }
        }
        d.deserialize_str(V)
    }
}

/// A string the rules read, borrowed from the text when it has no escapes.
#[derive(Debug)]
pub(super) struct BStr<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for BStr<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = BStr<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<BStr<'a>, E> {
                Ok(BStr(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<BStr<'a>, E> {
                Ok(BStr(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

impl BStr<'_> {
    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

/// The allowed strings of an enum kind.
pub(super) trait Allowed {
    const LIST: &'static [&'static str];
}

/// A string that must be one of `L::LIST`.
#[derive(Debug)]
pub(super) struct OneOf<L>(PhantomData<L>);

impl<'de, L: Allowed> Deserialize<'de> for OneOf<L> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<L>(PhantomData<L>);
        impl<L: Allowed> Visitor<'_> for V<L> {
            type Value = OneOf<L>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "one of {}", L::LIST.join(" | "))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<OneOf<L>, E> {
                if L::LIST.contains(&v) {
                    Ok(OneOf(PhantomData))
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(v), &self))
                }
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

macro_rules! allowed {
    ($($name:ident = $list:path;)*) => {$(
        #[derive(Debug)]
        pub(super) struct $name;
        impl Allowed for $name {
            const LIST: &'static [&'static str] = $list;
        }
    )*};
}

allowed! {
    Roles = shape::ROLES;
    RiskLevels = shape::RISK_LEVELS;
    AcKinds = shape::AC_KINDS;
    SizeCategories = shape::SIZE_CATEGORIES;
    EdgeTypes = shape::EDGE_TYPES;
    GroupModes = shape::GROUP_MODES;
    ExecutionModes = shape::EXECUTION_MODES;
    WorkerStrategies = shape::WORKER_STRATEGIES;
    PlanModes = shape::PLAN_MODES;
    ExecutionStrategies = shape::EXECUTION_STRATEGIES;
}

/// A free-form object.
#[derive(Debug)]
pub(super) struct AnyObj;

impl<'de> Deserialize<'de> for AnyObj {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = AnyObj;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<AnyObj, A::Error> {
                while map.next_key::<Skip>()?.is_some() {
                    map.next_value::<Skip>()?;
                }
                Ok(AnyObj)
            }
        }
        d.deserialize_map(V)
    }
}

/// An object whose values are strings.
#[derive(Debug, Default)]
pub(super) struct StrMap;

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrMap;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap, A::Error> {
                while map.next_key::<Skip>()?.is_some() {
                    map.next_value::<Str>()?;
                }
                Ok(StrMap)
            }
        }
        d.deserialize_map(V)
    }
}

/// A complexity score 0–255 or one of the levels.
#[derive(Debug)]
pub(super) struct ComplexityV;

impl<'de> Deserialize<'de> for ComplexityV {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ComplexityV;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a score 1–10 or low | medium | high")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<ComplexityV, E> {
                if n <= 255 {
                    Ok(ComplexityV)
                } else {
                    Err(E::invalid_value(de::Unexpected::Unsigned(n), &self))
                }
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<ComplexityV, E> {
                if (0..=255).contains(&n) {
                    Ok(ComplexityV)
                } else {
                    Err(E::invalid_value(de::Unexpected::Signed(n), &self))
                }
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ComplexityV, E> {
                if shape::COMPLEXITY_LEVELS.contains(&s) {
                    Ok(ComplexityV)
                } else {
                    Err(E::invalid_value(de::Unexpected::Str(s), &self))
                }
            }
        }
        d.deserialize_any(V)
    }
}

// ---- the view, one struct per shape table (same keys, same presence) ----
//
// Required: a plain field. Optional (absent or null): `Option`. Defaulted
// (absent, but not null): `#[serde(default)]`.

#[derive(Debug, Deserialize)]
pub(super) struct PlanningV<'a> {
    #[serde(borrow)]
    pub version: BStr<'a>,
    pub request_id: Str,
    pub run_id: Str,
    pub created_at: Str,
    pub base_branch: Str,
    pub work_branch: Str,
    pub limits: LimitsV,
    #[serde(borrow)]
    pub context: ContextV<'a>,
    #[serde(borrow)]
    pub steps: Vec<StepV<'a>>,
    pub gates: GatesV,
    pub outputs: RunOutputsV,
    pub assumptions: Option<Vec<Str>>,
    pub risks: Option<Vec<Str>>,
    pub goal_understanding: Option<GoalUnderstandingV>,
    pub size_estimation: Option<SizeEstimationV>,
    pub chunking_decision: Option<ChunkingDecisionV>,
    pub dependency_graph: Option<DependencyGraphV>,
    pub execution_plan: Option<ExecutionPlanV>,
    pub selected_environment: Option<SelectedEnvironmentV>,
    pub mode: Option<OneOf<PlanModes>>,
    pub complexity_score: Option<f64>,
    pub execution_strategy: Option<OneOf<ExecutionStrategies>>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct LimitsV {
    pub max_diff_lines: u64,
    pub max_files_changed: Option<u64>,
    pub timeout_sec: u64,
    pub max_steps_per_run: u64,
    pub max_autofix_cycles: u64,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct AcV<'a> {
    #[serde(borrow)]
    pub id: BStr<'a>,
    pub given: Str,
    pub when: Str,
    pub then: Str,
    #[serde(rename = "type")]
    pub kind: Option<OneOf<AcKinds>>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct TestInstructionsV {
    pub unit: Option<Str>,
    pub e2e: Option<Str>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ContextV<'a> {
    pub summary: Str,
    pub constraints: Vec<Str>,
    #[serde(borrow)]
    pub acceptance_criteria: Vec<AcV<'a>>,
    pub test_instructions: TestInstructionsV,
    pub project_facts: Option<AnyObj>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ScopeV {
    pub target_paths: Vec<Str>,
    pub forbidden_paths: Option<Vec<Str>>,
    pub max_diff_lines: u64,
    pub max_files_changed: Option<u64>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct InputsV {
    pub request_path: Str,
    pub context_files: Option<Vec<Str>>,
    pub code_files_hint: Option<Vec<Str>>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct CommandsV {
    pub unit: Option<Vec<Str>>,
    pub e2e: Option<Vec<Str>>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ExpectedDiffV {
    pub lines_max: u64,
    pub files_max: u64,
    pub risk_level: OneOf<RiskLevels>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct StepOutputsV {
    pub patch_path: Str,
    pub log_prefix: Str,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct BoundariesV {
    #[serde(default)]
    pub in_scope: Vec<Str>,
    #[serde(default)]
    pub out_of_scope: Vec<Str>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct StepV<'a> {
    #[serde(borrow)]
    pub step_id: BStr<'a>,
    pub title: Str,
    pub role: OneOf<Roles>,
    pub intent: Str,
    pub scope: ScopeV,
    pub inputs: InputsV,
    pub commands: CommandsV,
    pub success_criteria: Vec<Str>,
    #[serde(borrow)]
    pub links_to_ac: Vec<BStr<'a>>,
    pub expected_diff: ExpectedDiffV,
    pub outputs: StepOutputsV,
    pub fallback: Option<AnyObj>,
    pub stop_conditions: Option<Vec<Str>>,
    #[serde(borrow)]
    pub depends_on: Option<Vec<BStr<'a>>>,
    #[serde(borrow)]
    pub produces: Option<Vec<BStr<'a>>>,
    #[serde(borrow)]
    pub consumes: Option<Vec<BStr<'a>>>,
    pub boundaries: Option<BoundariesV>,
    pub estimated_complexity: Option<ComplexityV>,
    pub required_tools: Option<Vec<Str>>,
    pub suggested_tools: Option<Vec<Str>>,
    pub suggested_persona: Option<Str>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct GatesV {
    pub require_clean_worktree: bool,
    pub require_work_branch: bool,
    pub require_unit_pass: bool,
    pub require_e2e_for_regression_ac: bool,
    pub forbid_gh: bool,
    pub max_step_too_large_retries: u64,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct RunOutputsV {
    pub planning_json: Str,
    pub stage_json: Str,
    pub report_md: Str,
    pub errors_json: Option<Str>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct GoalUnderstandingV {
    pub main_objective: Str,
    #[serde(default)]
    pub success_criteria: Vec<Str>,
    #[serde(default)]
    pub constraints: Vec<Str>,
    #[serde(default)]
    pub context: Str,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct SizeEstimationV {
    pub task_id: Str,
    pub estimated_at: Str,
    pub estimated_tokens: u64,
    pub estimated_file_count: u64,
    pub complexity_score: u8,
    pub dependency_depth: u64,
    pub total_score: f64,
    pub size_category: OneOf<SizeCategories>,
    pub llm_reasoning: Str,
    pub confidence: f64,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct DecisionCriterionV {
    pub name: Str,
    pub value: Skip,
    pub threshold: Skip,
    pub met: bool,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct SubtaskPlanV {
    pub subtask_index: u64,
    pub prompt: Str,
    pub estimated_size: OneOf<SizeCategories>,
    #[serde(default)]
    pub dependencies: Vec<u64>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ChunkingDecisionV {
    pub task_id: Str,
    pub decided_at: Str,
    pub should_chunk: bool,
    pub chunk_count: u64,
    pub decision_criteria: Vec<DecisionCriterionV>,
    pub llm_reasoning: Str,
    pub subtask_definitions: Option<Vec<SubtaskPlanV>>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct EdgeV {
    pub from: Str,
    pub to: Str,
    #[serde(rename = "type")]
    pub kind: OneOf<EdgeTypes>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ExecutionGroupV {
    pub group_index: u64,
    pub mode: OneOf<GroupModes>,
    pub step_ids: Vec<Str>,
    #[serde(default)]
    pub depends_on_groups: Vec<u64>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct DependencyGraphV {
    #[serde(default)]
    pub edges: Vec<EdgeV>,
    #[serde(default)]
    pub execution_groups: Vec<ExecutionGroupV>,
    #[serde(default)]
    pub critical_path: Vec<Str>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct WorkerStrategyV {
    #[serde(rename = "type")]
    pub kind: OneOf<WorkerStrategies>,
    pub max_parallel_workers: u64,
    pub worker_timeout_ms: u64,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct ExecutionPlanV {
    pub execution_mode: OneOf<ExecutionModes>,
    #[serde(default)]
    pub execution_groups: Vec<ExecutionGroupV>,
    #[serde(default)]
    pub estimated_total_duration_ms: u64,
    pub worker_strategy: Option<WorkerStrategyV>,
    #[serde(flatten)]
    pub rest: Skip,
}

#[derive(Debug, Deserialize)]
pub(super) struct SelectedEnvironmentV {
    pub name: Str,
    pub reason: Str,
    #[serde(default)]
    pub detected_files: Vec<Str>,
    #[serde(default)]
    pub setup_commands: Vec<Str>,
    #[serde(default)]
    pub verification_commands: Vec<Str>,
    #[serde(default)]
    pub expected_results: StrMap,
    #[serde(flatten)]
    pub rest: Skip,
}
