//! `dandori metrics`: the seed 000 §16.1–16.3 measures over every run under a runs
//! root, each with its seed target and whether it is met, plus per-phase time,
//! call, token and cost breakdowns. Every figure is computed from what runs record
//! (definitions in docs/observability.md); a measure the artifacts cannot support
//! is `not_recorded`, never estimated.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, Utc};
use dandori_config::llm::ModelPrice;
use dandori_trace::TraceEvent;
use serde::Serialize;
use serde_json::{Value, json};

use crate::{ObsError, reason};

/// One run directory read back (lenient: planning.json / stage.json as JSON).
#[derive(Debug, Clone)]
pub struct RunRecord {
    pub run_dir: PathBuf,
    pub request_id: String,
    pub run_id: String,
    pub created_at: Option<DateTime<Utc>>,
    /// Step ids of planning.json, in order.
    pub steps: Vec<String>,
    /// stage.json, when present.
    pub stage: Option<Value>,
    pub events: Vec<TraceEvent>,
}

/// A run directory that could not be read (reported, not fatal).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    pub run_dir: PathBuf,
    pub reason: String,
}

/// Parses `--since`: RFC 3339, or a `YYYY-MM-DD` date (midnight UTC).
pub fn parse_since(s: &str) -> Result<DateTime<Utc>, ObsError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d")
        && let Some(t) = d.and_hms_opt(0, 0, 0)
    {
        return Ok(t.and_utc());
    }
    Err(ObsError::Invalid {
        code: reason::SINCE_INVALID,
        message: format!("--since {s:?}: expected an RFC 3339 time or a YYYY-MM-DD date"),
    })
}

fn ts(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Reads every run under `root` (`<request-id>/<run-id>/planning.json`).
pub fn load_runs(root: &Path) -> Result<(Vec<RunRecord>, Vec<Skipped>), ObsError> {
    if !root.is_dir() {
        return Err(ObsError::Path {
            code: reason::RUNS_ROOT_MISSING,
            path: root.to_path_buf(),
            message: "no runs root here (no run was planned yet, or a wrong --repo / --runs-root)"
                .to_string(),
        });
    }
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    for request in sorted_dirs(root)? {
        for run_dir in sorted_dirs(&request)? {
            if !run_dir.join("planning.json").is_file() {
                continue;
            }
            match load_run(&run_dir) {
                Ok(r) => runs.push(r),
                Err(reason) => skipped.push(Skipped { run_dir, reason }),
            }
        }
    }
    Ok((runs, skipped))
}

fn sorted_dirs(dir: &Path) -> Result<Vec<PathBuf>, ObsError> {
    let rd = std::fs::read_dir(dir).map_err(|e| dandori_fs::FsError::new("listing", dir, e))?;
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    Ok(out)
}

fn read_json(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
}

fn load_run(run_dir: &Path) -> Result<RunRecord, String> {
    let planning = read_json(&run_dir.join("planning.json"))?;
    let steps: Vec<String> = planning
        .get("steps")
        .and_then(Value::as_array)
        .ok_or_else(|| {
            format!(
                "{}: no steps array",
                run_dir.join("planning.json").display()
            )
        })?
        .iter()
        .filter_map(|s| s.get("id").and_then(Value::as_str).map(str::to_string))
        .collect();
    let stage_path = run_dir.join("stage.json");
    let stage = if stage_path.is_file() {
        Some(read_json(&stage_path)?)
    } else {
        None
    };
    let trace_path = run_dir.join("trace.jsonl");
    let events = if trace_path.is_file() {
        dandori_trace::read_trace(&trace_path).map_err(|e| e.to_string())?
    } else {
        Vec::new()
    };
    let text = |k: &str| planning.get(k).and_then(Value::as_str).map(str::to_string);
    let created_at = text("created_at")
        .as_deref()
        .and_then(ts)
        .or_else(|| events.first().and_then(|e| ts(&e.timestamp)));
    Ok(RunRecord {
        run_dir: run_dir.to_path_buf(),
        request_id: text("request_id").unwrap_or_default(),
        run_id: text("run_id").unwrap_or_default(),
        created_at,
        steps,
        stage,
        events,
    })
}

/// How a measure stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MeasureStatus {
    /// Computed from the runs.
    Ok,
    /// The runs hold nothing to compute it from (the denominator is zero).
    NoData,
    /// dandori does not record what it needs.
    NotRecorded,
}

/// One measure of seed 000 §16.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Measure {
    /// Seed name (`planning_accuracy`, …) or, for the §16.1.2 / §16.3.2 items the
    /// seed does not name, a snake_case name of the item.
    pub name: &'static str,
    pub section: &'static str,
    /// What the seed measures (its wording, in English).
    pub description: &'static str,
    pub status: MeasureStatus,
    pub value: Option<f64>,
    /// `ratio`, `count`, `seconds`, `usd`, `revisions`.
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub numerator: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denominator: Option<f64>,
    /// The seed's target, verbatim (`80%`, `<30%`, `>90%`, …), when it sets one.
    pub target: Option<&'static str>,
    /// Whether the value meets the target (None without a value or a target).
    pub met: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Time, calls, tokens and cost of one phase, summed over runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PhaseFigures {
    /// `planning`, `environment_setup`, `execution`, `reflection`.
    pub phase: &'static str,
    /// Runs where the phase's time is recorded.
    pub runs: u64,
    pub total_seconds: f64,
    pub mean_seconds: Option<f64>,
    /// Model calls, whatever their outcome (answered, failed, abandoned).
    pub llm_calls: u64,
    /// HTTP requests the provider received for them: every attempt, retries
    /// included (`LLM_CALL.attempts`).
    pub llm_requests: u64,
    /// Calls that ended with an error after their retries.
    pub failed_calls: u64,
    /// Calls dandori stopped waiting for (cancelled, its own time limit).
    pub abandoned_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD; None when a call of the phase used a model without a price.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Metrics {
    pub runs_root: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub since: Option<String>,
    pub runs: u64,
    /// Runs that reached execution (`dandori run` started them).
    pub executed_runs: u64,
    /// Steps of the executed runs (the population of the per-task rates).
    pub tasks: u64,
    pub measures: Vec<Measure>,
    /// `planning`, `environment_setup`, `execution`, `reflection`, in that order.
    pub phases: Vec<PhaseFigures>,
    /// Model name → calls, tokens, cost.
    pub models: BTreeMap<String, ModelFigures>,
    /// Agent CLI preset (`claude`, `codex`, `gemini`) → its invocations, with
    /// the usage and cost the CLI reported.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, AgentFigures>,
    pub skipped: Vec<Skipped>,
}

/// What one agent CLI did over the runs.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentFigures {
    pub invocations: u64,
    /// Invocations that resumed the step's session (fix cycles, resumed runs).
    pub resumed: u64,
    /// Invocations cut short by a kill of dandori, read back from what the CLI
    /// streamed (their turns and tokens are counted as far as it recorded them).
    pub interrupted: u64,
    pub turns: u64,
    pub tool_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// USD as the CLI reported it (else priced by `llm.pricing`); None when
    /// neither is known for a call.
    pub cost_usd: Option<f64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ModelFigures {
    pub llm_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: Option<f64>,
}

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn u(v: &Value, k: &str) -> Option<u64> {
    v.get(k).and_then(Value::as_u64)
}

/// The step an event is about (`step_id`, or a reflection's `action_id`).
fn step_of(e: &TraceEvent) -> Option<&str> {
    s(&e.data, "step_id").or_else(|| {
        e.data
            .pointer("/reflection/action_id")
            .and_then(Value::as_str)
    })
}

fn revision_requested(e: &TraceEvent) -> bool {
    e.event == "REFLECTION"
        && (e.data.pointer("/reflection/plan_revision_needed") == Some(&Value::Bool(true))
            || e.data.get("plan_revision_needed") == Some(&Value::Bool(true))
            || e.data.get("plan_revision").is_some_and(|r| !r.is_null()))
}

/// Per-step facts of one run.
#[derive(Debug, Default)]
struct StepFacts {
    done: bool,
    attempts: u64,
    revised: bool,
    autofix_cycles: u64,
    unit_failures: u64,
    errors: u64,
}

fn step_facts(run: &RunRecord) -> BTreeMap<String, StepFacts> {
    let mut out: BTreeMap<String, StepFacts> = run
        .steps
        .iter()
        .map(|id| (id.clone(), StepFacts::default()))
        .collect();
    if let Some(steps) = run
        .stage
        .as_ref()
        .and_then(|st| st.get("steps"))
        .and_then(Value::as_array)
    {
        for st in steps {
            let Some(id) = s(st, "step_id") else { continue };
            let f = out.entry(id.to_string()).or_default();
            f.done = s(st, "status") == Some("done");
            f.attempts = u(st, "attempts").unwrap_or(0);
        }
    }
    for e in &run.events {
        let Some(id) = step_of(e) else { continue };
        let Some(f) = out.get_mut(id) else { continue };
        match e.event.as_str() {
            "STEP_TOO_LARGE" | "PLAN_REVISION" => f.revised = true,
            "STEP_END" => {
                if u(&e.data, "splits").unwrap_or(0) > 0 {
                    f.revised = true;
                }
                f.autofix_cycles += u(&e.data, "autofix_cycles").unwrap_or(0);
            }
            "REFLECTION" if revision_requested(e) => f.revised = true,
            "UNIT_TEST" => {
                let failed = e.data.get("exit_code").and_then(Value::as_i64) != Some(0)
                    || e.data.get("timed_out") == Some(&Value::Bool(true));
                if failed {
                    f.unit_failures += 1;
                    f.errors += 1;
                }
            }
            "TOOL_CALL" | "STEP_ACTION" if e.data.get("ok") == Some(&Value::Bool(false)) => {
                f.errors += 1;
            }
            _ => {}
        }
    }
    out
}

fn executed(run: &RunRecord) -> bool {
    run.events
        .iter()
        .any(|e| e.event == "EXECUTION_START" || e.event == "EXECUTION_RESUME")
}

fn millis_between(a: &str, b: &str) -> Option<f64> {
    let (a, b) = (ts(a)?, ts(b)?);
    Some(((b - a).num_milliseconds().max(0)) as f64)
}

/// Phase of a model call: planner calls carry no `step_id`.
fn call_phase(e: &TraceEvent) -> &'static str {
    match s(&e.data, "phase") {
        Some("reflection") => return "reflection",
        Some("execution") => return "execution",
        Some("planning") => return "planning",
        _ => {}
    }
    match s(&e.data, "purpose") {
        Some("reflection") => "reflection",
        Some("execution") => "execution",
        _ if s(&e.data, "step_id").is_some() => "execution",
        _ => "planning",
    }
}

fn usage(e: &TraceEvent) -> (u64, u64) {
    let u0 = e.data.get("usage").cloned().unwrap_or(Value::Null);
    (
        u(&u0, "prompt_tokens").unwrap_or(0),
        u(&u0, "completion_tokens").unwrap_or(0),
    )
}

fn price_of<'a>(
    e: &TraceEvent,
    pricing: &'a BTreeMap<String, ModelPrice>,
) -> (String, Option<&'a ModelPrice>) {
    let model = s(&e.data, "model").unwrap_or("").to_string();
    let price = pricing
        .get(&model)
        .or_else(|| s(&e.data, "request_model").and_then(|m| pricing.get(m)));
    (model, price)
}

fn cost(p: &ModelPrice, input: u64, output: u64) -> f64 {
    (input as f64 * p.input_usd_per_mtok + output as f64 * p.output_usd_per_mtok) / 1_000_000.0
}

/// Parses a seed target (`80%`, `<30%`, `>90%`, `<1.5`) and checks `value`.
/// A bare number means "at least" (seed: "80%のタスクが最初の計画で完了").
pub fn meets(target: &str, value: f64) -> bool {
    let t = target.trim();
    let (op, rest) = if let Some(r) = t.strip_prefix("<=") {
        ("<=", r)
    } else if let Some(r) = t.strip_prefix(">=") {
        (">=", r)
    } else if let Some(r) = t.strip_prefix('<') {
        ("<", r)
    } else if let Some(r) = t.strip_prefix('>') {
        (">", r)
    } else {
        (">=", t)
    };
    let (num, scale) = match rest.trim().strip_suffix('%') {
        Some(n) => (n, 100.0),
        None => (rest.trim(), 1.0),
    };
    let Ok(n) = num.trim().parse::<f64>() else {
        return false;
    };
    let limit = n / scale;
    let eps = 1e-9;
    match op {
        "<" => value < limit - eps,
        ">" => value > limit + eps,
        "<=" => value <= limit + eps,
        _ => value >= limit - eps,
    }
}

struct MeasureSpec {
    name: &'static str,
    section: &'static str,
    description: &'static str,
    unit: &'static str,
    target: Option<&'static str>,
}

fn ratio(spec: MeasureSpec, num: u64, den: u64, empty_note: &str) -> Measure {
    let value = (den > 0).then(|| num as f64 / den as f64);
    measure(
        spec,
        value,
        Some(num as f64),
        Some(den as f64),
        (den == 0).then(|| empty_note.to_string()),
    )
}

fn measure(
    spec: MeasureSpec,
    value: Option<f64>,
    numerator: Option<f64>,
    denominator: Option<f64>,
    note: Option<String>,
) -> Measure {
    Measure {
        name: spec.name,
        section: spec.section,
        description: spec.description,
        status: if value.is_some() {
            MeasureStatus::Ok
        } else {
            MeasureStatus::NoData
        },
        met: match (value, spec.target) {
            (Some(v), Some(t)) => Some(meets(t, v)),
            _ => None,
        },
        value,
        unit: spec.unit,
        numerator,
        denominator,
        target: spec.target,
        note,
    }
}

fn not_recorded(spec: MeasureSpec, why: &str) -> Measure {
    Measure {
        name: spec.name,
        section: spec.section,
        description: spec.description,
        status: MeasureStatus::NotRecorded,
        value: None,
        unit: spec.unit,
        numerator: None,
        denominator: None,
        target: spec.target,
        met: None,
        note: Some(why.to_string()),
    }
}

fn mean(xs: &[f64]) -> Option<f64> {
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

/// The §16.1.2 subtask range for a size category.
fn subtask_range(category: &str) -> Option<(&'static str, usize, usize)> {
    match category {
        "XS" | "S" => Some(("simple", 2, 5)),
        "M" => Some(("moderate", 5, 10)),
        "L" | "XL" => Some(("complex", 10, 15)),
        _ => None,
    }
}

/// Computes every measure over `runs` (already filtered by `--since`).
pub fn compute(
    runs_root: &Path,
    runs: &[RunRecord],
    skipped: Vec<Skipped>,
    since: Option<&str>,
    pricing: &BTreeMap<String, ModelPrice>,
) -> Metrics {
    let executed_runs: Vec<&RunRecord> = runs.iter().filter(|r| executed(r)).collect();
    let mut tasks = 0u64;
    let mut done = 0u64;
    let mut revised = 0u64;
    let mut done_unrevised = 0u64;
    let mut first_try = 0u64;
    let mut errors = 0u64;
    let mut recovered = 0u64;
    let mut revisions: Vec<f64> = Vec::new();
    for run in &executed_runs {
        let facts = step_facts(run);
        for f in facts.values() {
            tasks += 1;
            done += u64::from(f.done);
            revised += u64::from(f.revised);
            done_unrevised += u64::from(f.done && !f.revised);
            first_try += u64::from(
                f.done
                    && !f.revised
                    && f.attempts <= 1
                    && f.autofix_cycles == 0
                    && f.unit_failures == 0,
            );
            errors += f.errors;
            if f.done {
                recovered += f.errors;
            }
        }
        let recorded = run
            .stage
            .as_ref()
            .and_then(|st| u(st, "revisions"))
            .map(|n| n as f64);
        let requested = run.events.iter().filter(|e| revision_requested(e)).count() as f64;
        revisions.push(recorded.unwrap_or(requested));
    }

    // Phases.
    let mut phases: BTreeMap<&'static str, PhaseFigures> = BTreeMap::new();
    for p in ["planning", "environment_setup", "execution", "reflection"] {
        phases.insert(
            p,
            PhaseFigures {
                phase: p,
                cost_usd: Some(0.0),
                ..Default::default()
            },
        );
    }
    let mut models: BTreeMap<String, ModelFigures> = BTreeMap::new();
    let mut agents: BTreeMap<String, AgentFigures> = BTreeMap::new();
    // Phases and models with a cost the agent CLI reported itself.
    let mut reported: BTreeSet<String> = BTreeSet::new();
    let mut unpriced: BTreeSet<String> = BTreeSet::new();
    let mut planning_times = Vec::new();
    let mut execution_times = Vec::new();
    let mut reflection_times = Vec::new();
    let mut env_times = Vec::new();
    let mut total_times = Vec::new();
    let mut calls_unrecorded_runs = 0u64;
    for run in runs {
        let mut planning_ms = None;
        let mut execution_ms: Option<f64> = None;
        let mut open_exec: Option<&str> = None;
        let mut reflection_ms = 0.0;
        let mut reflection_calls = false;
        let mut prev: Option<&TraceEvent> = None;
        let mut llm_executor_steps = false;
        let mut execution_calls = 0u64;
        let mut legacy_tokens = (0u64, 0u64);
        for e in &run.events {
            match e.event.as_str() {
                "PLANNING_END" => planning_ms = u(&e.data, "duration_ms").map(|n| n as f64),
                "EXECUTION_START" | "EXECUTION_RESUME" => open_exec = Some(&e.timestamp),
                "EXECUTION_END" => {
                    if let Some(start) = open_exec.take()
                        && let Some(ms) = millis_between(start, &e.timestamp)
                    {
                        execution_ms = Some(execution_ms.unwrap_or(0.0) + ms);
                    }
                }
                "ENVIRONMENT_SETUP" => {
                    if let Some(p) = prev
                        && let Some(ms) = millis_between(&p.timestamp, &e.timestamp)
                    {
                        env_times.push(ms);
                    }
                }
                "STEP_ACTION" if s(&e.data, "executor") == Some("llm") => {
                    llm_executor_steps = true;
                    if let Some(t) = e.data.get("tokens") {
                        legacy_tokens.0 += u(t, "prompt_tokens").unwrap_or(0);
                        legacy_tokens.1 += u(t, "completion_tokens").unwrap_or(0);
                    }
                }
                "LLM_CALL" => {
                    let phase = call_phase(e);
                    let (i, o) = usage(e);
                    let (model, price) = price_of(e, pricing);
                    let own = e.data.get("cost_usd").and_then(Value::as_f64);
                    let c = own.or_else(|| price.map(|p| cost(p, i, o)));
                    if own.is_some() {
                        reported.insert(phase.to_string());
                        reported.insert(model.clone());
                    }
                    if let Some(agent) = s(&e.data, "agent") {
                        let a = agents
                            .entry(agent.to_string())
                            .or_insert_with(|| AgentFigures {
                                cost_usd: Some(0.0),
                                ..Default::default()
                            });
                        a.invocations += 1;
                        a.resumed += u64::from(e.data.get("resumed") == Some(&Value::Bool(true)));
                        a.interrupted +=
                            u64::from(e.data.get("interrupted") == Some(&Value::Bool(true)));
                        a.turns += u(&e.data, "num_turns").unwrap_or(0);
                        a.tool_calls += u(&e.data, "tool_calls").unwrap_or(0);
                        a.input_tokens += i;
                        a.output_tokens += o;
                        a.cost_usd = match (a.cost_usd, c) {
                            (Some(x), Some(y)) => Some(x + y),
                            _ => None,
                        };
                    }
                    if c.is_none() {
                        unpriced.insert(model.clone());
                    }
                    if phase == "reflection" {
                        reflection_calls = true;
                        reflection_ms += u(&e.data, "duration_ms").unwrap_or(0) as f64;
                    }
                    if phase != "planning" {
                        execution_calls += 1;
                    }
                    let f = phases.entry(phase).or_default();
                    f.llm_calls += 1;
                    f.llm_requests += u(&e.data, "attempts").unwrap_or(1);
                    match s(&e.data, "outcome") {
                        Some("failed") => f.failed_calls += 1,
                        Some("abandoned") => f.abandoned_calls += 1,
                        _ => {}
                    }
                    f.input_tokens += i;
                    f.output_tokens += o;
                    f.cost_usd = match (f.cost_usd, c) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                    let m = models.entry(model).or_insert_with(|| ModelFigures {
                        cost_usd: Some(0.0),
                        ..Default::default()
                    });
                    m.llm_calls += 1;
                    m.input_tokens += i;
                    m.output_tokens += o;
                    m.cost_usd = match (m.cost_usd, c) {
                        (Some(a), Some(b)) => Some(a + b),
                        _ => None,
                    };
                }
                _ => {}
            }
            prev = Some(e);
        }
        if llm_executor_steps && execution_calls == 0 {
            // A trace written before model calls were recorded one by one: the
            // steps' token totals count, their calls and cost are unknown.
            calls_unrecorded_runs += 1;
            if let Some(f) = phases.get_mut("execution") {
                f.input_tokens += legacy_tokens.0;
                f.output_tokens += legacy_tokens.1;
                f.cost_usd = None;
            }
            unpriced.insert("(model not recorded)".to_string());
        }
        if let Some(ms) = planning_ms {
            planning_times.push(ms);
        }
        if let Some(ms) = execution_ms {
            execution_times.push(ms);
            if reflection_calls || !llm_executor_steps || execution_calls > 0 {
                reflection_times.push(reflection_ms);
            }
        }
        if let (Some(p), Some(x)) = (planning_ms, execution_ms) {
            total_times.push(p + x);
        }
    }
    let set_times = |f: &mut PhaseFigures, xs: &[f64]| {
        f.runs = xs.len() as u64;
        f.total_seconds = xs.iter().fold(0.0, |a, b| a + b) / 1000.0;
        f.mean_seconds = mean(xs).map(|m| m / 1000.0);
    };
    for (name, xs) in [
        ("planning", &planning_times),
        ("environment_setup", &env_times),
        ("execution", &execution_times),
        ("reflection", &reflection_times),
    ] {
        if let Some(f) = phases.get_mut(name) {
            set_times(f, xs);
        }
    }
    if pricing.is_empty() {
        for f in phases.values_mut() {
            if !reported.contains(f.phase) {
                f.cost_usd = None;
            }
        }
        for (name, m) in models.iter_mut() {
            if !reported.contains(name) {
                m.cost_usd = None;
            }
        }
    }

    let mut measures = Vec::new();
    let no_tasks = "no executed run with steps";
    // §16.1.1
    measures.push(ratio(
        MeasureSpec {
            name: "planning_accuracy",
            section: "16.1.1",
            description: "share of tasks completed as first planned",
            unit: "ratio",
            target: Some("80%"),
        },
        done_unrevised,
        tasks,
        no_tasks,
    ));
    measures.push(ratio(
        MeasureSpec {
            name: "revision_rate",
            section: "16.1.1",
            description: "share of tasks whose plan needed a revision",
            unit: "ratio",
            target: Some("<30%"),
        },
        revised,
        tasks,
        no_tasks,
    ));
    let rev_sum: f64 = revisions.iter().fold(0.0, |a, b| a + b);
    measures.push(measure(
        MeasureSpec {
            name: "avg_revisions",
            section: "16.1.1",
            description: "average number of plan revisions per run",
            unit: "revisions",
            target: Some("<1.5"),
        },
        mean(&revisions),
        Some(rev_sum),
        Some(revisions.len() as f64),
        revisions.is_empty().then(|| "no executed run".to_string()),
    ));
    // §16.1.2
    let mut fit = 0u64;
    let mut sized = 0u64;
    let mut cvs = Vec::new();
    for run in runs {
        let category = run
            .events
            .iter()
            .find(|e| e.event == "SIZE_ESTIMATION")
            .and_then(|e| s(&e.data, "size_category"));
        if let Some((_, lo, hi)) = category.and_then(subtask_range) {
            sized += 1;
            fit += u64::from((lo..=hi).contains(&run.steps.len()));
        }
        let diffs: Vec<f64> = run
            .events
            .iter()
            .filter(|e| e.event == "STEP_END" && s(&e.data, "status") == Some("done"))
            .filter_map(|e| u(&e.data, "diff_lines").map(|n| n as f64))
            .collect();
        if diffs.len() >= 2
            && let Some(m) = mean(&diffs)
            && m > 0.0
        {
            let var = diffs.iter().map(|d| (d - m).powi(2)).sum::<f64>() / diffs.len() as f64;
            cvs.push(var.sqrt() / m);
        }
    }
    measures.push(ratio(
        MeasureSpec {
            name: "subtask_count_fit",
            section: "16.1.2",
            description: "share of runs whose subtask count fits the seed range of their size (simple 2-5, moderate 5-10, complex 10-15)",
            unit: "ratio",
            target: None,
        },
        fit,
        sized,
        "no run with a SIZE_ESTIMATION event",
    ));
    measures.push(measure(
        MeasureSpec {
            name: "subtask_granularity_cv",
            section: "16.1.2",
            description: "consistency of subtask granularity: mean coefficient of variation of the diff lines of a run's done steps (0 = even)",
            unit: "ratio",
            target: None,
        },
        mean(&cvs),
        None,
        Some(cvs.len() as f64),
        cvs.is_empty()
            .then(|| "no run with two or more done steps that changed lines".to_string()),
    ));
    measures.push(not_recorded(
        MeasureSpec {
            name: "dependency_accuracy",
            section: "16.1.2",
            description: "accuracy of the dependencies between subtasks",
            unit: "ratio",
            target: None,
        },
        "runs record the planned dependencies but no ground truth to judge them against",
    ));
    // §16.2.1
    let secs = |xs: &[f64]| mean(xs).map(|m| m / 1000.0);
    for (name, description, xs, empty) in [
        (
            "planning_time",
            "duration of the planning phase (mean per run)",
            &planning_times,
            "no PLANNING_END with duration_ms",
        ),
        (
            "execution_time",
            "duration of the execution phase (mean per run)",
            &execution_times,
            "no finished execution (EXECUTION_START/RESUME … EXECUTION_END)",
        ),
        (
            "reflection_time",
            "duration of the reflection phase: time in reflection model calls (mean per run)",
            &reflection_times,
            "no executed run with its model calls recorded",
        ),
        (
            "total_time",
            "duration of the whole task: planning + execution (mean per run)",
            &total_times,
            "no run both planned and executed to the end",
        ),
    ] {
        measures.push(measure(
            MeasureSpec {
                name,
                section: "16.2.1",
                description,
                unit: "seconds",
                target: None,
            },
            secs(xs),
            Some(xs.iter().fold(0.0, |a, b| a + b) / 1000.0),
            Some(xs.len() as f64),
            xs.is_empty().then(|| empty.to_string()),
        ));
    }
    measures.extend(time_targets(runs));
    // §16.2.2
    let calls: u64 = phases.values().map(|f| f.llm_calls).sum();
    let phases_out: Vec<PhaseFigures> =
        ["planning", "environment_setup", "execution", "reflection"]
            .iter()
            .filter_map(|p| phases.get(p).cloned())
            .collect();
    let calls_note = (calls_unrecorded_runs > 0).then(|| {
        format!(
            "{calls_unrecorded_runs} run(s) used the llm executor without per-call records; their execution calls are missing"
        )
    });
    let mut m = measure(
        MeasureSpec {
            name: "llm_calls",
            section: "16.2.2",
            description: "LLM API calls (breakdown planning / execution / reflection under phases)",
            unit: "count",
            target: None,
        },
        Some(calls as f64),
        None,
        None,
        calls_note.clone(),
    );
    if runs.is_empty() {
        m.value = None;
        m.status = MeasureStatus::NoData;
    }
    measures.push(m);
    let input: u64 = phases.values().map(|f| f.input_tokens).sum();
    let output: u64 = phases.values().map(|f| f.output_tokens).sum();
    let mut m = measure(
        MeasureSpec {
            name: "tokens_used",
            section: "16.2.2",
            description: "tokens used (input + output; breakdown under phases)",
            unit: "count",
            target: None,
        },
        Some((input + output) as f64),
        Some(input as f64),
        Some(output as f64),
        Some(format!(
            "input {input}, output {output}{}",
            calls_note
                .as_deref()
                .map(|n| format!("; {n}"))
                .unwrap_or_default()
        )),
    );
    m.numerator = None;
    m.denominator = None;
    if runs.is_empty() {
        m.value = None;
        m.status = MeasureStatus::NoData;
    }
    measures.push(m);
    let api_cost = if pricing.is_empty() {
        not_recorded(
            MeasureSpec {
                name: "api_cost",
                section: "16.2.2",
                description: "API cost",
                unit: "usd",
                target: None,
            },
            "no llm.pricing in the config",
        )
    } else if !unpriced.is_empty() {
        not_recorded(
            MeasureSpec {
                name: "api_cost",
                section: "16.2.2",
                description: "API cost",
                unit: "usd",
                target: None,
            },
            &format!(
                "no llm.pricing entry for model(s): {}",
                unpriced.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    } else {
        let total: f64 = phases
            .values()
            .filter_map(|f| f.cost_usd)
            .fold(0.0, |a, b| a + b);
        measure(
            MeasureSpec {
                name: "api_cost",
                section: "16.2.2",
                description: "API cost",
                unit: "usd",
                target: None,
            },
            Some(total),
            None,
            None,
            calls_note,
        )
    };
    measures.push(api_cost);
    // §16.3.1
    measures.push(ratio(
        MeasureSpec {
            name: "task_completion_rate",
            section: "16.3.1",
            description: "completed tasks / all tasks",
            unit: "ratio",
            target: Some(">90%"),
        },
        done,
        tasks,
        no_tasks,
    ));
    measures.push(ratio(
        MeasureSpec {
            name: "first_try_success_rate",
            section: "16.3.1",
            description: "tasks completed without plan revision (at the first try) / all tasks",
            unit: "ratio",
            target: Some(">70%"),
        },
        first_try,
        tasks,
        no_tasks,
    ));
    measures.push(ratio(
        MeasureSpec {
            name: "error_recovery_rate",
            section: "16.3.1",
            description: "recovered errors / all errors",
            unit: "ratio",
            target: Some(">80%"),
        },
        recovered,
        errors,
        "no error recorded",
    ));
    // §16.3.2
    for (name, description) in [
        (
            "syntax_error_rate",
            "syntax error rate of the generated code",
        ),
        ("test_coverage", "test coverage"),
        ("review_findings", "findings in code review"),
    ] {
        measures.push(not_recorded(
            MeasureSpec {
                name,
                section: "16.3.2",
                description,
                unit: if name == "review_findings" {
                    "count"
                } else {
                    "ratio"
                },
                target: None,
            },
            "runs do not record it",
        ));
    }

    Metrics {
        runs_root: runs_root.to_path_buf(),
        since: since.map(str::to_string),
        runs: runs.len() as u64,
        executed_runs: executed_runs.len() as u64,
        tasks,
        measures,
        phases: phases_out,
        models,
        agents,
        skipped,
    }
}

/// Seed 000 §13.4 time targets: each planning phase (from
/// `PLANNING_END.phase_durations_ms`) and each whole task (planning +
/// execution) by its size category. The value is the mean; the target is met
/// only when every run meets it (the note names how many did not).
fn time_targets(runs: &[RunRecord]) -> Vec<Measure> {
    use dandori_plan::performance::{PLANNING_PHASES, TASK_TIMES, TimeTarget, task_time_target};
    let mut phase_secs: Vec<Vec<f64>> = vec![Vec::new(); PLANNING_PHASES.len()];
    let mut task_secs: Vec<Vec<f64>> = vec![Vec::new(); TASK_TIMES.len()];
    for run in runs {
        let end = run.events.iter().rev().find(|e| e.event == "PLANNING_END");
        if let Some(d) = end.and_then(|e| e.data.get("phase_durations_ms")) {
            for (i, (key, _)) in PLANNING_PHASES.iter().enumerate() {
                if let Some(ms) = u(d, key) {
                    phase_secs[i].push(ms as f64 / 1000.0);
                }
            }
        }
        let category = run
            .events
            .iter()
            .find(|e| e.event == "SIZE_ESTIMATION")
            .and_then(|e| s(&e.data, "size_category"));
        let planning = end.and_then(|e| u(&e.data, "duration_ms"));
        let mut execution: Option<f64> = None;
        let mut open: Option<&str> = None;
        for e in &run.events {
            match e.event.as_str() {
                "EXECUTION_START" | "EXECUTION_RESUME" => open = Some(&e.timestamp),
                "EXECUTION_END" => {
                    if let Some(start) = open.take()
                        && let Some(ms) = millis_between(start, &e.timestamp)
                    {
                        execution = Some(execution.unwrap_or(0.0) + ms);
                    }
                }
                _ => {}
            }
        }
        if let (Some(t), Some(p), Some(x)) =
            (category.and_then(task_time_target), planning, execution)
            && let Some(i) = TASK_TIMES.iter().position(|k| k.name == t.name)
        {
            task_secs[i].push((p as f64 + x) / 1000.0);
        }
    }
    let one = |t: &TimeTarget, xs: &[f64], empty: &str| {
        let over = xs.iter().filter(|x| !t.met(**x)).count();
        let mut m = measure(
            MeasureSpec {
                name: t.name,
                section: "13.4",
                description: t.description,
                unit: "seconds",
                target: Some(t.target),
            },
            mean(xs),
            Some(xs.iter().fold(0.0, |a, b| a + b)),
            Some(xs.len() as f64),
            Some(if xs.is_empty() {
                empty.to_string()
            } else {
                format!(
                    "{over} of {} run(s) over {} s; slowest {:.1} s",
                    xs.len(),
                    t.target,
                    xs.iter().fold(0.0_f64, |a, b| a.max(*b))
                )
            }),
        );
        if !xs.is_empty() {
            m.met = Some(over == 0);
        }
        m
    };
    let mut out: Vec<Measure> = PLANNING_PHASES
        .iter()
        .zip(&phase_secs)
        .map(|((_, t), xs)| one(t, xs, "no PLANNING_END with phase_durations_ms"))
        .collect();
    out.extend(TASK_TIMES.iter().zip(&task_secs).map(|(t, xs)| {
        one(
            t,
            xs,
            "no run of this size both planned and executed to the end",
        )
    }));
    out
}

/// A measure's value for people: `75.0% (3/4)`, `12.3 s`, `$0.0123`.
pub fn display_value(m: &Measure) -> String {
    let Some(v) = m.value else {
        return match m.status {
            MeasureStatus::NotRecorded => "not recorded".to_string(),
            _ => "no data".to_string(),
        };
    };
    match m.unit {
        "ratio" => match (m.numerator, m.denominator) {
            (Some(n), Some(d)) if m.name != "subtask_granularity_cv" => {
                format!("{:.1}% ({n}/{d})", v * 100.0)
            }
            _ => format!("{v:.3}"),
        },
        "seconds" => format!("{v:.1} s"),
        "usd" => format!("${v:.4}"),
        "revisions" => format!("{v:.2}"),
        _ => format!("{v}"),
    }
}

/// The heading of a group of measures in the text report (the seed's section
/// titles; the section number stays in the JSON `section` field).
fn section_title(section: &str) -> &'static str {
    match section {
        "13.4" => "Time targets",
        "16.1.1" => "Planning accuracy",
        "16.1.2" => "Task decomposition",
        "16.2.1" => "Processing time",
        "16.2.2" => "Resource usage",
        "16.3.1" => "Success rate",
        "16.3.2" => "Code quality",
        _ => "Other",
    }
}

/// The report as text lines (`dandori metrics` without `--json`).
pub fn render_text(m: &Metrics) -> Vec<String> {
    let mut out = vec![format!(
        "{} run(s) under {} ({} executed, {} task(s)){}",
        m.runs,
        m.runs_root.display(),
        m.executed_runs,
        m.tasks,
        m.since
            .as_deref()
            .map(|s| format!(" since {s}"))
            .unwrap_or_default()
    )];
    let mut section = "";
    for x in &m.measures {
        if x.section != section {
            section = x.section;
            out.push(section_title(section).to_string());
        }
        let target = match (x.target, x.met) {
            (Some(t), Some(true)) => format!("target {t}: met"),
            (Some(t), Some(false)) => format!("target {t}: NOT met"),
            (Some(t), None) => format!("target {t}"),
            (None, _) => String::new(),
        };
        let note = x
            .note
            .as_deref()
            .map(|n| format!("  ({n})"))
            .unwrap_or_default();
        out.push(format!(
            "  {:<24} {:<20} {}{}",
            x.name,
            display_value(x),
            target,
            note
        ));
    }
    out.push("phases:".to_string());
    for f in &m.phases {
        let name = f.phase;
        out.push(format!(
            "  {:<18} {:>3} run(s) {:>9} total {:>9} mean  {:>4} call(s){}  {:>8} in {:>8} out  {}",
            name,
            f.runs,
            format!("{:.1} s", f.total_seconds),
            f.mean_seconds
                .map(|v| format!("{v:.1} s"))
                .unwrap_or_else(|| "-".to_string()),
            f.llm_calls,
            if f.llm_requests != f.llm_calls || f.failed_calls + f.abandoned_calls > 0 {
                format!(
                    " ({} request(s), {} failed, {} abandoned)",
                    f.llm_requests, f.failed_calls, f.abandoned_calls
                )
            } else {
                String::new()
            },
            f.input_tokens,
            f.output_tokens,
            f.cost_usd
                .map(|c| format!("${c:.4}"))
                .unwrap_or_else(|| "cost not recorded".to_string())
        ));
    }
    if !m.models.is_empty() {
        out.push("models:".to_string());
        for (name, f) in &m.models {
            out.push(format!(
                "  {:<24} {:>4} call(s)  {:>8} in {:>8} out  {}",
                name,
                f.llm_calls,
                f.input_tokens,
                f.output_tokens,
                f.cost_usd
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "cost not recorded".to_string())
            ));
        }
    }
    if !m.agents.is_empty() {
        out.push("agents:".to_string());
        for (name, a) in &m.agents {
            out.push(format!(
                "  {:<24} {:>4} run(s) ({} resumed)  {} turn(s)  {} tool call(s)  {:>8} in {:>8} out  {}",
                name,
                a.invocations,
                a.resumed,
                a.turns,
                a.tool_calls,
                a.input_tokens,
                a.output_tokens,
                a.cost_usd
                    .map(|c| format!("${c:.4}"))
                    .unwrap_or_else(|| "cost not recorded".to_string())
            ));
        }
    }
    for sk in &m.skipped {
        out.push(format!("skipped {}: {}", sk.run_dir.display(), sk.reason));
    }
    out
}

/// Keeps the runs created at or after `since`.
pub fn filter_since(runs: Vec<RunRecord>, since: Option<DateTime<Utc>>) -> Vec<RunRecord> {
    match since {
        None => runs,
        Some(t) => runs
            .into_iter()
            .filter(|r| r.created_at.is_some_and(|c| c >= t))
            .collect(),
    }
}

/// Loads, filters and computes in one call.
pub fn metrics_for(
    runs_root: &Path,
    since: Option<&str>,
    pricing: &BTreeMap<String, ModelPrice>,
) -> Result<Metrics, ObsError> {
    let cutoff = since.map(parse_since).transpose()?;
    let (runs, skipped) = load_runs(runs_root)?;
    let runs = filter_since(runs, cutoff);
    Ok(compute(runs_root, &runs, skipped, since, pricing))
}

/// A JSON value of the report (for `--json`).
pub fn to_json(m: &Metrics) -> Value {
    serde_json::to_value(m).unwrap_or_else(|e| json!({"error": e.to_string()}))
}
