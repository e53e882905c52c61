//! The one-pass read behind [`super::check`]: the text straight into the typed
//! plan through strict twins of the model types that have an enum field or no
//! catch-all for unknown keys. With them the typed read accepts exactly what
//! the borrowed view of [`super::fast`] accepts (no structural finding), so one
//! parse gives both the findings and the plan; the model types themselves keep
//! their lenient serde behaviour.
//!
//! What the twins change against a plain `Planning` read:
//!
//! * enum fields take only a string (serde would also take `{"variant": null}`);
//! * objects without an `extra` catch-all are read as maps only (a derived
//!   struct would also take an array), and their unknown keys are consumed with
//!   [`Skip`], which checks numbers and nesting as `Value` does.
//!
//! Every other type is the model's own (maps only, unknown keys kept in `extra`).

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};

use super::fast::Skip;
use crate::model::Extra;
use crate::{
    AcKind, AcceptanceCriterion, Boundaries, ChunkingDecision, Commands, Complexity,
    ComplexityLevel, Context, DecisionCriterion, DependencyEdge, DependencyGraph, EdgeType,
    ExecutionGroup, ExecutionMode, ExecutionPlan, ExecutionStrategy, ExpectedDiff, Gates,
    GoalUnderstanding, GroupMode, Inputs, Limits, PlanMode, Planning, RiskLevel, Role, RunOutputs,
    Scope, SelectedEnvironment, SizeCategory, SizeEstimation, Step, StepOutputs, SubtaskPlan,
    TestInstructions, WorkerStrategy, WorkerStrategyType,
};

/// An enum read from a string only.
struct Strict<T>(T);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Strict<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<T: DeserializeOwned> Visitor<'_> for V<T> {
            type Value = Strict<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Strict<T>, E> {
                T::deserialize(de::value::StrDeserializer::<E>::new(s)).map(Strict)
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// `Complexity` as the shape table has it: 0–255 or a level string.
struct StrictComplexity(Complexity);

impl<'de> Deserialize<'de> for StrictComplexity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = StrictComplexity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a score 1–10 or low | medium | high")
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<StrictComplexity, E> {
                u8::try_from(n)
                    .map(|n| StrictComplexity(Complexity::Score(n)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Unsigned(n), &self))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<StrictComplexity, E> {
                u8::try_from(n)
                    .map(|n| StrictComplexity(Complexity::Score(n)))
                    .map_err(|_| E::invalid_value(de::Unexpected::Signed(n), &self))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<StrictComplexity, E> {
                let level = match s {
                    "low" => ComplexityLevel::Low,
                    "medium" => ComplexityLevel::Medium,
                    "high" => ComplexityLevel::High,
                    _ => return Err(E::invalid_value(de::Unexpected::Str(s), &self)),
                };
                Ok(StrictComplexity(Complexity::Level(level)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
pub(super) struct PlanningT {
    version: String,
    request_id: String,
    run_id: String,
    created_at: String,
    base_branch: String,
    work_branch: String,
    limits: Limits,
    context: ContextT,
    /// Read through [`StepT`] one step at a time, kept as model steps (a step
    /// is large: converting a whole `Vec<StepT>` afterwards would copy them all).
    #[serde(deserialize_with = "strict_steps")]
    steps: Vec<Step>,
    gates: Gates,
    outputs: RunOutputs,
    assumptions: Option<Vec<String>>,
    risks: Option<Vec<String>>,
    goal_understanding: Option<GoalUnderstanding>,
    size_estimation: Option<SizeEstimationT>,
    chunking_decision: Option<ChunkingDecisionT>,
    dependency_graph: Option<DependencyGraphT>,
    execution_plan: Option<ExecutionPlanT>,
    selected_environment: Option<SelectedEnvironment>,
    mode: Option<Strict<PlanMode>>,
    complexity_score: Option<f64>,
    execution_strategy: Option<Strict<ExecutionStrategy>>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct ContextT {
    summary: String,
    constraints: Vec<String>,
    acceptance_criteria: Vec<AcT>,
    test_instructions: TestInstructions,
    project_facts: Option<serde_json::Map<String, serde_json::Value>>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct AcT {
    id: String,
    given: String,
    when: String,
    then: String,
    #[serde(rename = "type")]
    kind: Option<Strict<AcKind>>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct StepT {
    step_id: String,
    title: String,
    role: Strict<Role>,
    intent: String,
    scope: Scope,
    inputs: Inputs,
    commands: Commands,
    success_criteria: Vec<String>,
    links_to_ac: Vec<String>,
    expected_diff: ExpectedDiffT,
    outputs: StepOutputs,
    fallback: Option<serde_json::Map<String, serde_json::Value>>,
    stop_conditions: Option<Vec<String>>,
    depends_on: Option<Vec<String>>,
    produces: Option<Vec<String>>,
    consumes: Option<Vec<String>>,
    boundaries: Option<BoundariesT>,
    estimated_complexity: Option<StrictComplexity>,
    required_tools: Option<Vec<String>>,
    suggested_tools: Option<Vec<String>>,
    suggested_persona: Option<String>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct ExpectedDiffT {
    lines_max: u64,
    files_max: u64,
    risk_level: Strict<RiskLevel>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct BoundariesT {
    #[serde(default)]
    in_scope: Vec<String>,
    #[serde(default)]
    out_of_scope: Vec<String>,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct SizeEstimationT {
    task_id: String,
    estimated_at: String,
    estimated_tokens: u64,
    estimated_file_count: u64,
    complexity_score: u8,
    dependency_depth: u64,
    total_score: f64,
    size_category: Strict<SizeCategory>,
    llm_reasoning: String,
    confidence: f64,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct DecisionCriterionT {
    name: String,
    value: serde_json::Value,
    threshold: serde_json::Value,
    met: bool,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct SubtaskPlanT {
    subtask_index: u64,
    prompt: String,
    estimated_size: Strict<SizeCategory>,
    #[serde(default)]
    dependencies: Vec<u64>,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct ChunkingDecisionT {
    task_id: String,
    decided_at: String,
    should_chunk: bool,
    chunk_count: u64,
    decision_criteria: Vec<DecisionCriterionT>,
    llm_reasoning: String,
    subtask_definitions: Option<Vec<SubtaskPlanT>>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct EdgeT {
    from: String,
    to: String,
    #[serde(rename = "type")]
    kind: Strict<EdgeType>,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct ExecutionGroupT {
    group_index: u64,
    mode: Strict<GroupMode>,
    step_ids: Vec<String>,
    #[serde(default)]
    depends_on_groups: Vec<u64>,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct DependencyGraphT {
    #[serde(default)]
    edges: Vec<EdgeT>,
    #[serde(default)]
    execution_groups: Vec<ExecutionGroupT>,
    #[serde(default)]
    critical_path: Vec<String>,
    #[serde(flatten)]
    extra: Extra,
}

#[derive(Deserialize)]
struct WorkerStrategyT {
    #[serde(rename = "type")]
    kind: Strict<WorkerStrategyType>,
    max_parallel_workers: u64,
    worker_timeout_ms: u64,
    #[serde(flatten)]
    _rest: Skip,
}

#[derive(Deserialize)]
struct ExecutionPlanT {
    execution_mode: Strict<ExecutionMode>,
    #[serde(default)]
    execution_groups: Vec<ExecutionGroupT>,
    #[serde(default)]
    estimated_total_duration_ms: u64,
    worker_strategy: Option<WorkerStrategyT>,
    #[serde(flatten)]
    extra: Extra,
}

fn strict_steps<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Step>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<Step>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an array of steps")
        }
        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Step>, A::Error> {
            let mut steps = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(step) = seq.next_element::<StepT>()? {
                steps.push(step.into_step());
            }
            Ok(steps)
        }
    }
    d.deserialize_seq(V)
}

impl StepT {
    fn into_step(self) -> Step {
        let s = self;
        Step {
            step_id: s.step_id,
            title: s.title,
            role: s.role.0,
            intent: s.intent,
            scope: s.scope,
            inputs: s.inputs,
            commands: s.commands,
            success_criteria: s.success_criteria,
            links_to_ac: s.links_to_ac,
            expected_diff: ExpectedDiff {
                lines_max: s.expected_diff.lines_max,
                files_max: s.expected_diff.files_max,
                risk_level: s.expected_diff.risk_level.0,
                extra: s.expected_diff.extra,
            },
            outputs: s.outputs,
            fallback: s.fallback,
            stop_conditions: s.stop_conditions,
            depends_on: s.depends_on,
            produces: s.produces,
            consumes: s.consumes,
            boundaries: s.boundaries.map(|b| Boundaries {
                in_scope: b.in_scope,
                out_of_scope: b.out_of_scope,
            }),
            estimated_complexity: s.estimated_complexity.map(|c| c.0),
            required_tools: s.required_tools,
            suggested_tools: s.suggested_tools,
            suggested_persona: s.suggested_persona,
            extra: s.extra,
        }
    }
}

fn groups(gs: Vec<ExecutionGroupT>) -> Vec<ExecutionGroup> {
    gs.into_iter()
        .map(|g| ExecutionGroup {
            group_index: g.group_index,
            mode: g.mode.0,
            step_ids: g.step_ids,
            depends_on_groups: g.depends_on_groups,
        })
        .collect()
}

impl PlanningT {
    /// The facts the rules read (same as from the view).
    pub(super) fn facts(&self) -> super::Facts<'_> {
        fn all(v: &Option<Vec<String>>) -> Vec<&str> {
            v.as_deref()
                .unwrap_or_default()
                .iter()
                .map(String::as_str)
                .collect()
        }
        super::Facts {
            version: Some(&self.version),
            limit: Some(self.limits.max_diff_lines),
            steps_is_array: true,
            steps: self
                .steps
                .iter()
                .map(|step| super::StepFacts {
                    id: Some(&step.step_id),
                    lines_max: Some(step.expected_diff.lines_max),
                    scope_max: Some(step.scope.max_diff_lines),
                    files_max: Some(step.expected_diff.files_max),
                    links: step.links_to_ac.iter().map(|l| Some(l.as_str())).collect(),
                    depends_on: step
                        .depends_on
                        .as_deref()
                        .unwrap_or_default()
                        .iter()
                        .map(|d| Some(d.as_str()))
                        .collect(),
                    produces: all(&step.produces),
                    consumes: all(&step.consumes),
                })
                .collect(),
            forbid_gh: Some(self.gates.forbid_gh),
            ac_ids: Some(
                self.context
                    .acceptance_criteria
                    .iter()
                    .map(|ac| Some(ac.id.as_str()))
                    .collect(),
            ),
            assumptions: self.assumptions.as_ref().map(Vec::len),
            complexity_score: self.complexity_score,
        }
    }

    /// The model value (fields moved, nothing copied).
    pub(super) fn into_planning(self) -> Planning {
        let c = self.context;
        Planning {
            version: self.version,
            request_id: self.request_id,
            run_id: self.run_id,
            created_at: self.created_at,
            base_branch: self.base_branch,
            work_branch: self.work_branch,
            limits: self.limits,
            context: Context {
                summary: c.summary,
                constraints: c.constraints,
                acceptance_criteria: c
                    .acceptance_criteria
                    .into_iter()
                    .map(|a| AcceptanceCriterion {
                        id: a.id,
                        given: a.given,
                        when: a.when,
                        then: a.then,
                        kind: a.kind.map(|k| k.0),
                        extra: a.extra,
                    })
                    .collect(),
                test_instructions: c.test_instructions,
                project_facts: c.project_facts,
                extra: c.extra,
            },
            steps: self.steps,
            gates: self.gates,
            outputs: self.outputs,
            assumptions: self.assumptions,
            risks: self.risks,
            goal_understanding: self.goal_understanding,
            size_estimation: self.size_estimation.map(|e| SizeEstimation {
                task_id: e.task_id,
                estimated_at: e.estimated_at,
                estimated_tokens: e.estimated_tokens,
                estimated_file_count: e.estimated_file_count,
                complexity_score: e.complexity_score,
                dependency_depth: e.dependency_depth,
                total_score: e.total_score,
                size_category: e.size_category.0,
                llm_reasoning: e.llm_reasoning,
                confidence: e.confidence,
                extra: e.extra,
            }),
            chunking_decision: self.chunking_decision.map(|d| ChunkingDecision {
                task_id: d.task_id,
                decided_at: d.decided_at,
                should_chunk: d.should_chunk,
                chunk_count: d.chunk_count,
                decision_criteria: d
                    .decision_criteria
                    .into_iter()
                    .map(|c| DecisionCriterion {
                        name: c.name,
                        value: c.value,
                        threshold: c.threshold,
                        met: c.met,
                    })
                    .collect(),
                llm_reasoning: d.llm_reasoning,
                subtask_definitions: d.subtask_definitions.map(|ss| {
                    ss.into_iter()
                        .map(|s| SubtaskPlan {
                            subtask_index: s.subtask_index,
                            prompt: s.prompt,
                            estimated_size: s.estimated_size.0,
                            dependencies: s.dependencies,
                        })
                        .collect()
                }),
                extra: d.extra,
            }),
            dependency_graph: self.dependency_graph.map(|g| DependencyGraph {
                edges: g
                    .edges
                    .into_iter()
                    .map(|e| DependencyEdge {
                        from: e.from,
                        to: e.to,
                        kind: e.kind.0,
                    })
                    .collect(),
                execution_groups: groups(g.execution_groups),
                critical_path: g.critical_path,
                extra: g.extra,
            }),
            execution_plan: self.execution_plan.map(|p| ExecutionPlan {
                execution_mode: p.execution_mode.0,
                execution_groups: groups(p.execution_groups),
                estimated_total_duration_ms: p.estimated_total_duration_ms,
                worker_strategy: p.worker_strategy.map(|w| WorkerStrategy {
                    kind: w.kind.0,
                    max_parallel_workers: w.max_parallel_workers,
                    worker_timeout_ms: w.worker_timeout_ms,
                }),
                extra: p.extra,
            }),
            selected_environment: self.selected_environment,
            mode: self.mode.map(|m| m.0),
            complexity_score: self.complexity_score,
            execution_strategy: self.execution_strategy.map(|m| m.0),
            extra: self.extra,
        }
    }
}
