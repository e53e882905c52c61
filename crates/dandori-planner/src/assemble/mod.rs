//! The common half of planning: a [`Draft`] from any planner becomes a complete,
//! validated `planning.json` (seed 004) with the seed 003 size estimation, chunking
//! decision, dependency graph and execution plan, and the planning trace events.
//!
//! Fail-closed (seed 003 §9): a draft marked not decomposable, a draft from a failed
//! planner, a task that should be chunked but offers nothing to split on, or a plan
//! that fails validation becomes a single-step plan and `PLANNING_SKIPPED` is
//! recorded. A dependency cycle falls back to sequential order (seed 003 §9.1).

mod actions;
pub mod order;

use dandori_plan::graph::{self, GraphAnalysis};
use dandori_plan::sizing::{self, ChunkingInputs};
use dandori_plan::validation;
use dandori_plan::{
    ChunkingDecision, Commands, Complexity, Context, ExecutionMode, ExecutionPlan, ExpectedDiff,
    Gates, Inputs, Limits, PLANNING_VERSION, Planning, RiskLevel, RunOutputs, Scope, SizeCategory,
    SizeEstimation, Step, StepOutputs, SubtaskPlan, TestInstructions, WorkerStrategy,
    WorkerStrategyType,
};
use dandori_trace::{TraceWriter, events};
use serde_json::{Value, json};

use crate::context::PlanningContext;
use crate::draft::{Draft, DraftSubtask};
use crate::error::PlannerError;
use crate::run_dir::RunDir;
use crate::{acceptance, offline};

/// Plan-wide limits (seed 004 §3.2).
pub const MAX_DIFF_LINES: u64 = 400;
pub const MAX_FILES_CHANGED: u64 = 10;
pub const TIMEOUT_SEC: u64 = 300;
pub const MAX_AUTOFIX_CYCLES: u64 = 2;

/// Identity of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ids {
    pub request_id: String,
    pub run_id: String,
    pub created_at: String,
    pub base_branch: String,
    pub work_branch: String,
}

/// Why planning fell back to a single step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skip {
    pub reason: String,
    pub error_details: Option<String>,
}

pub struct Assembled {
    pub planning: Planning,
    /// The fail-closed reason, when there was one.
    pub skipped: Option<String>,
}

/// The validation FAIL findings (`CODE at path: message`) this draft would produce,
/// without writing anything; the LLM planner sends them back to the model once.
pub fn validation_failures(ctx: &PlanningContext, draft: &Draft) -> Vec<String> {
    let mut draft = draft.clone();
    let unit = ctx.unit_commands.first().cloned().unwrap_or_default();
    acceptance::ensure_minimum(&mut draft, ctx.request.language, &unit, MAX_DIFF_LINES);
    crate::test_first::prepare(ctx, &mut draft);
    let ids = Ids {
        request_id: ctx.request.id.clone(),
        run_id: "preview".to_string(),
        created_at: dandori_trace::now_rfc3339(),
        base_branch: "main".to_string(),
        work_branch: "dandori/preview".to_string(),
    };
    let rd = RunDir {
        request_id: ctx.request.id.clone(),
        run_id: "preview".to_string(),
        path: ctx.repo_root.join(".dandori/preview"),
        display: ".dandori/preview".to_string(),
    };
    let mut failures: Vec<String> = match build(ctx, &draft, &ids, &rd, false, false) {
        Ok(built) => validation::validate(&built.planning)
            .findings
            .iter()
            .filter(|f| f.severity == validation::Severity::Fail)
            .map(|f| format!("{} at {}: {}", f.code, f.path, f.message))
            .collect(),
        Err(e) => vec![e.to_string()],
    };
    if !failures.is_empty() {
        // Findings name steps; the planner knows its subtasks by key.
        let order = order::topological(&draft.subtasks)
            .unwrap_or_else(|_| (0..draft.subtasks.len()).collect());
        let names: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(i, &k)| format!("S{:02} = {}", i + 1, draft.subtasks[k].key))
            .collect();
        failures.push(format!("(steps are your subtasks: {})", names.join(", ")));
    }
    failures
}

/// What one build produced, before events are written.
struct Built {
    planning: Planning,
    size: SizeEstimation,
    chunking: ChunkingDecision,
    graph: GraphAnalysis,
    plan: ExecutionPlan,
    durations: Vec<u64>,
    dependency_fallback: Option<String>,
}

pub fn assemble(
    ctx: &PlanningContext,
    mut draft: Draft,
    ids: &Ids,
    rd: &RunDir,
    mut skip: Option<Skip>,
    trace: &TraceWriter,
) -> Result<Assembled, PlannerError> {
    let unit = ctx
        .unit_commands
        .first()
        .cloned()
        .unwrap_or_else(|| acceptance::NO_UNIT_COMMAND.to_string());
    acceptance::ensure_minimum(&mut draft, ctx.request.language, &unit, MAX_DIFF_LINES);
    crate::test_first::prepare(ctx, &mut draft);

    let mut built = build(ctx, &draft, ids, rd, skip.is_some(), true)?;
    // A task that should be split but offers nothing to split on.
    if skip.is_none()
        && !built.chunking.should_chunk
        && draft.subtasks.len() < 2
        && chunk_wanted_but_impossible(&built.chunking)
    {
        skip = Some(Skip {
            reason: format!(
                "the task should be chunked ({}) but could not be decomposed: the request names one unit of work and no enumerated requirements to split on",
                met_criteria(&built.chunking).join(", ")
            ),
            error_details: Some(built.chunking.llm_reasoning.clone()),
        });
    }
    let report = validation::validate(&built.planning);
    if report.has_fail() && draft.subtasks.len() > 1 {
        let codes: Vec<String> = report
            .findings
            .iter()
            .filter(|f| f.severity == validation::Severity::Fail)
            .map(|f| format!("{} at {}", f.code, f.path))
            .collect();
        skip = Some(Skip {
            reason: "the decomposed plan failed validation".to_string(),
            error_details: Some(codes.join("; ")),
        });
        draft = offline::single_step_draft(ctx, &draft);
        built = build(ctx, &draft, ids, rd, true, true)?;
    }
    let report = validation::validate(&built.planning);
    if report.has_fail() {
        // Fail closed (seed 003 §9.2): the draft is unusable even as one step (a
        // model's answer the assembler cannot use): the offline draft as one step,
        // with the reason in the trace.
        let codes = fail_codes(&report);
        let mut fallback = offline::single_step_draft(ctx, &offline::SimplePlanner::draft_for(ctx));
        acceptance::ensure_minimum(&mut fallback, ctx.request.language, &unit, MAX_DIFF_LINES);
        crate::test_first::prepare(ctx, &mut fallback);
        let rebuilt = build(ctx, &fallback, ids, rd, true, true)?;
        let again = validation::validate(&rebuilt.planning);
        if again.has_fail() {
            return Err(PlannerError::Assemble(format!(
                "planning.json fails validation: {}",
                fail_codes(&again).join("; ")
            )));
        }
        let previous = skip.map(|s| s.reason);
        skip = Some(Skip {
            reason: match previous {
                Some(p) => {
                    format!("{p}; the single-step plan failed validation too: offline single step")
                }
                None => {
                    "the planner's draft failed validation even as one step: offline single step"
                        .to_string()
                }
            },
            error_details: Some(codes.join("; ")),
        });
        built = rebuilt;
    }

    if let Some(s) = &skip {
        trace.emit(
            events::PLANNING_SKIPPED,
            json!({
                "planning_skipped": true,
                "reason": s.reason,
                "fallback_mode": "single_task",
                "error_details": s.error_details,
            }),
        )?;
    }
    trace.emit(events::SIZE_ESTIMATION, to_value(&built.size)?)?;
    trace.emit(events::CHUNKING_DECISION, to_value(&built.chunking)?)?;
    let steps = &built.planning.steps;
    let subtasks: Vec<Value> = steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            json!({
                "index": i,
                "step_id": s.step_id,
                "prompt_summary": s.title,
                "estimated_duration_ms": built.durations[i],
            })
        })
        .collect();
    trace.emit(
        events::DEPENDENCY_ANALYSIS,
        json!({
            "task_id": ids.request_id,
            "subtasks": subtasks,
            "edges": built.graph.edges,
            "execution_groups": groups_with_indices(&built.plan, steps),
            "critical_path": built.graph.critical_path,
            "fallback": built.dependency_fallback,
        }),
    )?;
    trace.emit(
        events::EXECUTION_PLAN,
        json!({
            "execution_mode": built.plan.execution_mode,
            "execution_groups": groups_with_indices(&built.plan, steps),
            "estimated_total_duration_ms": built.plan.estimated_total_duration_ms,
            "worker_strategy": built.plan.worker_strategy,
        }),
    )?;
    Ok(Assembled {
        planning: built.planning,
        skipped: skip.map(|s| s.reason),
    })
}

fn fail_codes(report: &validation::ValidationReport) -> Vec<String> {
    report
        .findings
        .iter()
        .filter(|f| f.severity == validation::Severity::Fail)
        .map(|f| format!("{} at {}: {}", f.code, f.path, f.message))
        .collect()
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value, PlannerError> {
    serde_json::to_value(v).map_err(|e| PlannerError::Assemble(e.to_string()))
}

/// Execution groups as planning.json has them (step ids) plus seed 003 §7.2's
/// `subtask_indices`.
fn groups_with_indices(plan: &ExecutionPlan, steps: &[Step]) -> Vec<Value> {
    plan.execution_groups
        .iter()
        .map(|g| {
            let indices: Vec<usize> = g
                .step_ids
                .iter()
                .filter_map(|id| steps.iter().position(|s| &s.step_id == id))
                .collect();
            json!({
                "group_index": g.group_index,
                "mode": g.mode,
                "subtask_indices": indices,
                "step_ids": g.step_ids,
                "depends_on_groups": g.depends_on_groups,
            })
        })
        .collect()
}

fn met_criteria(c: &ChunkingDecision) -> Vec<String> {
    c.decision_criteria
        .iter()
        .filter(|d| d.met)
        .map(|d| d.name.clone())
        .collect()
}

fn chunk_wanted_but_impossible(c: &ChunkingDecision) -> bool {
    // Size and spread alone do not ask for a split: a request that is one unit of
    // work is planned as one step, not skipped. Only a split the user asked for,
    // or an enumeration that could not be kept, is a planning failure.
    const CONSIDER: &[&str] = &["explicit_enumeration", "user_requested_chunk"];
    const PROHIBIT: &[&str] = &[
        "atomic_operation",
        "user_requested_single",
        "config_disable_chunk",
        "size_category_xs_s",
    ];
    let met = |names: &[&str]| {
        c.decision_criteria
            .iter()
            .any(|d| d.met && names.contains(&d.name.as_str()))
    };
    met(CONSIDER) && !met(PROHIBIT)
}

fn build(
    ctx: &PlanningContext,
    draft: &Draft,
    ids: &Ids,
    rd: &RunDir,
    fail_closed: bool,
    // Off for the preview of a model's draft: its findings name its own subtasks.
    test_first: bool,
) -> Result<Built, PlannerError> {
    let now = dandori_trace::now_rfc3339();
    let tp = &ctx.task_planning;
    let mut reasoned = draft.clone();
    order::reasoned_dependencies(&mut reasoned.subtasks);
    let draft = &reasoned;

    // Size (seed 003 §3). A failed planner falls back to the configured category.
    let mut size = sizing::estimate_size(&sizing::SizeInputs {
        task_id: ids.request_id.clone(),
        estimated_at: now.clone(),
        estimated_tokens: draft.size.estimated_tokens,
        estimated_file_count: draft.size.estimated_file_count,
        complexity_score: draft.size.complexity_score,
        dependency_depth: draft.size.dependency_depth,
        llm_reasoning: draft.size.reasoning.clone(),
        confidence: draft.size.confidence,
    });
    if fail_closed && draft.subtasks.len() <= 1 {
        if let Ok(cat) = tp.size_estimation.fallback_category.parse::<SizeCategory>() {
            size.size_category = cat;
        }
        size.llm_reasoning = format!(
            "fail-closed fallback category {}; {}",
            tp.size_estimation.fallback_category, size.llm_reasoning
        );
    }

    // Order subtasks; a cycle falls back to the planner's order, run sequentially.
    let (order, mut dependency_fallback) = match order::topological(&draft.subtasks) {
        Ok(o) => (o, None),
        Err(cycle) => (
            (0..draft.subtasks.len()).collect(),
            Some(format!(
                "dependency cycle among {cycle:?}: sequential execution (safe mode)"
            )),
        ),
    };
    let subtasks: Vec<&DraftSubtask> = order.iter().map(|&i| &draft.subtasks[i]).collect();

    // Chunking (seed 003 §4).
    let threshold = tp
        .chunking
        .auto_chunk_threshold
        .parse::<SizeCategory>()
        .unwrap_or(SizeCategory::M);
    let signals = &draft.chunking_signals;
    let mut chunking = sizing::decide_chunking(&ChunkingInputs {
        task_id: ids.request_id.clone(),
        decided_at: now.clone(),
        size_category: size.size_category,
        estimated_file_count: size.estimated_file_count,
        explicit_enumeration: signals.explicit_enumeration,
        multiple_components: signals.multiple_components,
        user_requested_chunk: signals.user_requested_chunk,
        atomic_operation: signals.atomic_operation,
        user_requested_single: signals.user_requested_single,
        config_disable_chunk: !tp.enabled || !ctx.config.planning.enabled,
        auto_chunk_threshold: threshold,
        proposed_subtasks: subtasks.len() as u64,
        min_subtasks: u64::from(tp.chunking.min_subtasks),
        max_subtasks: u64::from(tp.chunking.max_subtasks),
        llm_reasoning: String::new(),
    });
    // Chunking wanted but fewer subtasks than `min_subtasks` to chunk into: a single
    // task (the caller records PLANNING_SKIPPED for a request that offers nothing to
    // split on).
    let min_subtasks = u64::from(tp.chunking.min_subtasks).max(2);
    if chunking.should_chunk && (subtasks.len() as u64) < min_subtasks {
        chunking.should_chunk = false;
        chunking.chunk_count = 0;
        chunking.llm_reasoning = format!(
            "single task: {} but only {} subtask(s) found (minimum {min_subtasks})",
            chunking.llm_reasoning,
            subtasks.len()
        );
    } else if chunking.should_chunk {
        // One step per subtask: the count is what the decomposition produced.
        chunking.chunk_count = subtasks.len() as u64;
    }
    if fail_closed && chunking.should_chunk {
        chunking.should_chunk = false;
        chunking.chunk_count = 0;
        chunking.llm_reasoning = format!("fail-closed: single task ({})", chunking.llm_reasoning);
    }

    // Steps: one per subtask when chunking, else the subtasks merged into one.
    let mut final_owned: Vec<DraftSubtask> = if chunking.should_chunk || subtasks.len() <= 1 {
        subtasks.iter().map(|s| (*s).clone()).collect()
    } else {
        let owned: Vec<DraftSubtask> = subtasks.iter().map(|s| (*s).clone()).collect();
        vec![offline::merge_all(ctx, &owned)]
    };
    // Test-first (issue 20): the steps that make the criteria nothing else
    // proves true write those criteria's failing tests first.
    if test_first {
        crate::test_first::insert(ctx, &draft.acceptance_criteria, &mut final_owned);
    }
    // The derived scope criterion allows what the steps now target (the tests
    // a test-first step writes included).
    let mut criteria = draft.acceptance_criteria.clone();
    acceptance::rescope(
        &mut criteria,
        ctx.request.language,
        MAX_DIFF_LINES,
        &acceptance::target_paths(&draft.subtasks),
        &acceptance::target_paths(&final_owned),
    );
    let final_subtasks: Vec<&DraftSubtask> = final_owned.iter().collect();
    let planned_actions: Vec<&[Value]> = final_subtasks
        .iter()
        .map(|s| s.actions.as_slice())
        .collect();
    let key_to_step: std::collections::BTreeMap<&str, String> = final_subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| (s.key.as_str(), step_id(i)))
        .collect();
    let mut steps: Vec<Step> = final_subtasks
        .iter()
        .enumerate()
        .map(|(i, s)| make_step(ctx, rd, i, s, &key_to_step))
        .collect();
    if dependency_fallback.is_some() {
        chain_sequentially(&mut steps);
    }
    if chunking.should_chunk {
        // Seed 003 §4.3 `dependencies`: logical and data, by index.
        let preds = order::predecessors(&final_owned);
        chunking.subtask_definitions = Some(
            final_subtasks
                .iter()
                .enumerate()
                .map(|(i, s)| SubtaskPlan {
                    subtask_index: i as u64,
                    prompt: s.title.clone(),
                    estimated_size: SizeCategory::from_score(s.complexity.saturating_mul(10)),
                    dependencies: preds[i].iter().map(|&p| p as u64).collect(),
                })
                .collect(),
        );
    }

    // Dependency graph (seed 003 §5).
    let graph = match graph::analyze(&steps) {
        Ok(g) => g,
        Err(e) => {
            dependency_fallback = Some(format!("{e}: sequential execution (safe mode)"));
            chain_sequentially(&mut steps);
            graph::analyze(&steps).map_err(|e| PlannerError::Assemble(e.to_string()))?
        }
    };
    let durations: Vec<u64> = steps
        .iter()
        .map(|s| match s.estimated_complexity {
            Some(Complexity::Score(c)) => 120_000 + 60_000 * u64::from(c),
            Some(Complexity::Level(_)) | None => 300_000,
        })
        .collect();
    let estimated_total_duration_ms: u64 = graph
        .execution_groups
        .iter()
        .map(|g| {
            g.step_ids
                .iter()
                .filter_map(|id| steps.iter().position(|s| &s.step_id == id))
                .map(|i| durations[i])
                .max()
                .unwrap_or(0)
        })
        .sum();
    let exec = &tp.execution;
    let strategy = match graph.execution_mode {
        ExecutionMode::Single | ExecutionMode::Sequential => WorkerStrategyType::Single,
        ExecutionMode::Parallel | ExecutionMode::Hybrid => match exec.default_strategy.as_str() {
            "least_loaded" => WorkerStrategyType::LeastLoaded,
            "single" => WorkerStrategyType::Single,
            _ => WorkerStrategyType::RoundRobin,
        },
    };
    let plan = ExecutionPlan {
        execution_mode: graph.execution_mode,
        execution_groups: graph.execution_groups.clone(),
        estimated_total_duration_ms,
        worker_strategy: Some(WorkerStrategy {
            kind: strategy,
            max_parallel_workers: u64::from(exec.max_parallel_workers.max(1)),
            worker_timeout_ms: exec.worker_timeout_ms,
        }),
        extra: Default::default(),
    };

    let mut goal = draft.goal_understanding.clone();
    if goal.success_criteria.is_empty() {
        goal.success_criteria = criteria.iter().map(|a| a.then.clone()).collect();
    }
    let mut risks = draft.risks.clone();
    if let Some(f) = &dependency_fallback {
        risks.push(format!("Dependency analysis failed ({f})."));
    }
    let mut project_facts = serde_json::Map::new();
    project_facts.insert("environment".into(), json!(ctx.selected_environment.name));
    project_facts.insert("files".into(), json!(ctx.scan.files.len()));
    project_facts.insert(
        "test_files".into(),
        json!(ctx.scan.files.iter().filter(|f| f.is_test).count()),
    );
    project_facts.insert(
        "readme".into(),
        json!(crate::gathering::readme_path(&ctx.scan)),
    );
    project_facts.insert(
        "tree".into(),
        json!(
            ctx.scan
                .summary
                .top_directories
                .iter()
                .map(|d| format!("{}/ ({} files)", d.path, d.files))
                .collect::<Vec<_>>()
        ),
    );
    project_facts.insert("planner_strategy".into(), json!(draft.strategy));

    let mut extra = serde_json::Map::new();
    extra.insert(
        "task_decomposition".into(),
        json!({
            "reasoning": draft.reasoning,
            "subtasks": steps.iter().map(|s| json!({
                "id": s.step_id,
                "description": s.intent,
                // Seed 000: what the step waits for, logical and data.
                "dependencies": graph.edges.iter()
                    .filter(|e| e.to == s.step_id && e.kind != dandori_plan::EdgeType::Resource)
                    .map(|e| e.from.clone())
                    .fold(Vec::<String>::new(), |mut v, f| { if !v.contains(&f) { v.push(f); } v }),
                "estimated_complexity": level(s),
                "required_tools": s.required_tools.clone().unwrap_or_default(),
            })).collect::<Vec<_>>(),
        }),
    );
    extra.insert(
        "action_plan".into(),
        json!({
            "execution_order": steps.iter().map(|s| s.step_id.clone()).collect::<Vec<_>>(),
            "actions": actions::actions(&steps, &planned_actions, &plan.execution_groups),
        }),
    );

    let planning = Planning {
        version: PLANNING_VERSION.to_string(),
        request_id: ids.request_id.clone(),
        run_id: ids.run_id.clone(),
        created_at: ids.created_at.clone(),
        base_branch: ids.base_branch.clone(),
        work_branch: ids.work_branch.clone(),
        limits: Limits {
            max_diff_lines: MAX_DIFF_LINES,
            max_files_changed: Some(MAX_FILES_CHANGED),
            timeout_sec: TIMEOUT_SEC,
            max_steps_per_run: steps.len() as u64,
            max_autofix_cycles: MAX_AUTOFIX_CYCLES,
            extra: Default::default(),
        },
        context: Context {
            summary: draft.summary.clone(),
            constraints: draft.constraints.clone(),
            acceptance_criteria: criteria,
            test_instructions: TestInstructions {
                unit: (!ctx.unit_commands.is_empty()).then(|| ctx.unit_commands.join(" && ")),
                e2e: None,
                extra: Default::default(),
            },
            project_facts: Some(project_facts),
            extra: Default::default(),
        },
        steps,
        gates: Gates {
            require_clean_worktree: true,
            require_work_branch: true,
            require_unit_pass: true,
            require_e2e_for_regression_ac: false,
            forbid_gh: true,
            max_step_too_large_retries: 1,
            extra: Default::default(),
        },
        outputs: RunOutputs {
            planning_json: rd.rel("planning.json"),
            stage_json: rd.rel("stage.json"),
            report_md: rd.rel("report.md"),
            errors_json: Some(rd.rel("errors.json")),
            extra: Default::default(),
        },
        assumptions: (!draft.assumptions.is_empty()).then(|| draft.assumptions.clone()),
        risks: (!risks.is_empty()).then_some(risks),
        goal_understanding: Some(goal),
        size_estimation: Some(size.clone()),
        chunking_decision: Some(chunking.clone()),
        dependency_graph: Some(graph.dependency_graph()),
        execution_plan: Some(plan.clone()),
        selected_environment: Some(ctx.selected_environment.clone()),
        mode: Some(draft.mode.unwrap_or_else(|| ctx.request_mode())),
        complexity_score: Some(
            draft
                .complexity_score
                .unwrap_or((size.total_score / 100.0 * 100.0).round() / 100.0)
                .clamp(0.0, 1.0),
        ),
        execution_strategy: Some(execution_strategy(plan.execution_mode)),
        extra,
    };
    Ok(Built {
        planning,
        size,
        chunking,
        graph,
        plan,
        durations,
        dependency_fallback,
    })
}

/// Seed 001 §10.4: the strategy the execution mode amounts to — independent
/// steps run in parallel, one chain (or one step) sequentially, a partial order
/// as a DAG.
fn execution_strategy(mode: ExecutionMode) -> dandori_plan::ExecutionStrategy {
    match mode {
        ExecutionMode::Single | ExecutionMode::Sequential => {
            dandori_plan::ExecutionStrategy::Sequential
        }
        ExecutionMode::Parallel => dandori_plan::ExecutionStrategy::Parallel,
        ExecutionMode::Hybrid => dandori_plan::ExecutionStrategy::Dag,
    }
}

fn step_id(i: usize) -> String {
    format!("S{:02}", i + 1)
}

fn level(s: &Step) -> &'static str {
    match s.estimated_complexity {
        Some(Complexity::Score(c)) if c <= 3 => "low",
        Some(Complexity::Score(c)) if c <= 6 => "medium",
        Some(Complexity::Score(_)) => "high",
        Some(Complexity::Level(l)) => match l {
            dandori_plan::ComplexityLevel::Low => "low",
            dandori_plan::ComplexityLevel::Medium => "medium",
            dandori_plan::ComplexityLevel::High => "high",
        },
        None => "medium",
    }
}

/// Safe mode: every step after the previous one, nothing else.
fn chain_sequentially(steps: &mut [Step]) {
    let ids: Vec<String> = steps.iter().map(|s| s.step_id.clone()).collect();
    for (i, s) in steps.iter_mut().enumerate() {
        s.depends_on = (i > 0).then(|| vec![ids[i - 1].clone()]);
    }
}

fn make_step(
    ctx: &PlanningContext,
    rd: &RunDir,
    i: usize,
    s: &DraftSubtask,
    key_to_step: &std::collections::BTreeMap<&str, String>,
) -> Step {
    let id = step_id(i);
    let depends_on: Vec<String> = s
        .depends_on
        .iter()
        .filter_map(|k| key_to_step.get(k.as_str()).cloned())
        .collect();
    let lines_max = s.estimated_lines.clamp(50, MAX_DIFF_LINES).div_ceil(10) * 10;
    let lines_max = lines_max.min(MAX_DIFF_LINES);
    let files_max = (s.target_paths.len() as u64 + 1).clamp(1, MAX_FILES_CHANGED);
    let risk_level = match s.complexity {
        0..=3 => RiskLevel::Low,
        4..=6 => RiskLevel::Mid,
        _ => RiskLevel::High,
    };
    let mut forbidden: Vec<String> = vec![".git".to_string(), ".dandori".to_string()];
    if let Some(top) = rd.display.split('/').next()
        && !rd.display.starts_with('/')
        && !forbidden.iter().any(|f| f == top)
    {
        forbidden.push(top.to_string());
    }
    let mut fallback = serde_json::Map::new();
    fallback.insert(
        "on_step_too_large".into(),
        json!("split this step into smaller steps (a new run)"),
    );
    fallback.insert("on_unit_failure".into(), json!("fix and re-run the unit commands up to limits.max_autofix_cycles, then stop with UNIT_TEST_FAILED"));
    let opt = |v: &Vec<String>| (!v.is_empty()).then(|| v.clone());
    Step {
        step_id: id.clone(),
        title: s.title.clone(),
        role: dandori_plan::Role::Implementer,
        intent: s.intent.clone(),
        scope: Scope {
            target_paths: s.target_paths.clone(),
            forbidden_paths: Some(forbidden),
            max_diff_lines: MAX_DIFF_LINES,
            max_files_changed: Some(MAX_FILES_CHANGED),
            extra: Default::default(),
        },
        inputs: Inputs {
            request_path: ctx.request_path.clone(),
            context_files: opt(&s.context_files),
            code_files_hint: opt(&s.code_files_hint),
            extra: Default::default(),
        },
        commands: Commands {
            unit: Some(ctx.unit_commands.clone()),
            e2e: Some(Vec::new()),
            extra: Default::default(),
        },
        success_criteria: s.success_criteria.clone(),
        links_to_ac: s.links_to_ac.clone(),
        expected_diff: ExpectedDiff {
            lines_max,
            files_max,
            risk_level,
            extra: Default::default(),
        },
        outputs: StepOutputs {
            patch_path: rd.rel(&format!("patches/{id}.patch")),
            log_prefix: rd.rel(&format!("logs/step.{id}")),
            extra: Default::default(),
        },
        fallback: Some(fallback),
        stop_conditions: Some(vec![
            "STEP_TOO_LARGE: the diff exceeds scope.max_diff_lines".to_string(),
            "UNIT_TEST_FAILED after limits.max_autofix_cycles fix attempts".to_string(),
        ]),
        depends_on: opt(&depends_on),
        produces: opt(&s.produces),
        consumes: opt(&s.consumes),
        boundaries: s.boundaries.clone(),
        estimated_complexity: Some(Complexity::Score(s.complexity.clamp(1, 10))),
        required_tools: opt(&s.required_tools),
        suggested_tools: opt(&s.suggested_tools),
        suggested_persona: s.suggested_persona.clone(),
        extra: if s.test_first {
            let mut m = serde_json::Map::new();
            m.insert("tdd_phase".into(), json!("red"));
            m
        } else {
            Default::default()
        },
    }
}
