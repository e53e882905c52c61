//! Reading runs back from their directories: the list of runs under a runs root,
//! one run's progress, `report.md` re-rendered from the recorded run, and
//! `trace.jsonl` filtered. Shared by the MCP tools and the `dandori runs | status |
//! report | trace` commands. Read only: nothing here writes run state except
//! [`rerender_report`], which writes report.md atomically.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration as ChronoDuration, Utc};
use dandori_plan::{Planning, Stage, StepStatus};
use dandori_report::html;
use dandori_report::markdown::{self, StepMetrics};
use dandori_report::{Completion, StepTiming, TokenUsage};
use dandori_trace::TraceEvent;
use serde::Serialize;
use serde_json::Value;

use crate::error::{McpError, reason};

/// One run in a listing.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub run_dir: PathBuf,
    pub request_id: String,
    pub run_id: String,
    /// `planned | running | done | failed | needs_input` (stage.json), or
    /// `unreadable` when stage.json cannot be read.
    pub status: String,
    /// Steps in the plan.
    pub total: usize,
    pub done: usize,
    pub failed: usize,
    pub updated_at: String,
}

/// One step of a run's progress.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepProgress {
    pub step_id: String,
    pub title: String,
    pub status: StepStatus,
    pub attempts: u32,
    pub group: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    pub tokens: u64,
}

/// One run's progress: steps, groups, current step, tokens, time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunProgress {
    #[serde(flatten)]
    pub summary: RunSummary,
    pub current_step: Option<String>,
    /// Execution groups (step ids), in order.
    pub groups: Vec<Vec<String>>,
    pub steps: Vec<StepProgress>,
    pub tokens: TokenUsage,
    /// From the first trace event to the last one.
    pub elapsed_ms: u64,
    pub report: Option<PathBuf>,
}

/// A run directory read back: planning.json and stage.json.
pub struct RunFiles {
    pub run_dir: PathBuf,
    pub planning: Planning,
    pub stage: Option<Stage>,
}

/// The run directory of a target: itself, or the directory of a run file.
fn run_dir_of(target: &Path) -> PathBuf {
    if target.is_file() {
        target.parent().unwrap_or(Path::new(".")).to_path_buf()
    } else {
        target.to_path_buf()
    }
}

impl RunFiles {
    /// Reads a run directory (or the run directory of a planning.json / stage.json).
    pub fn open(target: &Path) -> Result<Self, McpError> {
        let run_dir = run_dir_of(target);
        let planning_path = run_dir.join("planning.json");
        if !planning_path.is_file() {
            return Err(McpError::path(
                reason::RUN_DIR_INVALID,
                &run_dir,
                "not a run directory (no planning.json)",
            ));
        }
        let planning = read_json::<Planning>(&planning_path)?;
        let stage_path = run_dir.join("stage.json");
        let stage = if stage_path.is_file() {
            Some(read_json::<Stage>(&stage_path)?)
        } else {
            None
        };
        Ok(RunFiles {
            run_dir,
            planning,
            stage,
        })
    }

    pub fn trace(&self) -> Vec<TraceEvent> {
        dandori_trace::read_trace(self.run_dir.join("trace.jsonl")).unwrap_or_default()
    }

    /// stage.json's status, except that a run that ended paused (its step budget,
    /// `max_steps_per_run`, reached: `EXECUTION_END` with status `paused`) is
    /// `paused`, not `running`: stage.json keeps `running` so that `resume`
    /// continues it.
    fn status(&self) -> String {
        let recorded = self
            .stage
            .as_ref()
            .and_then(|s| serde_json::to_value(s.status).ok())
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_else(|| "planned".to_string());
        if recorded != "running" {
            return recorded;
        }
        let paused = self
            .trace()
            .iter()
            .rev()
            .find(|e| e.event == "EXECUTION_END")
            .is_some_and(|e| e.data.get("status").and_then(|v| v.as_str()) == Some("paused"));
        if paused {
            "paused".to_string()
        } else {
            recorded
        }
    }

    fn summary(&self) -> RunSummary {
        let count = |st: StepStatus| {
            self.stage
                .as_ref()
                .map_or(0, |s| s.steps.iter().filter(|x| x.status == st).count())
        };
        RunSummary {
            run_dir: self.run_dir.clone(),
            request_id: self.planning.request_id.clone(),
            run_id: self.planning.run_id.clone(),
            status: self.status(),
            total: self.planning.steps.len(),
            done: count(StepStatus::Done),
            failed: count(StepStatus::Failed),
            updated_at: self
                .stage
                .as_ref()
                .map(|s| s.updated_at.clone())
                .unwrap_or_default(),
        }
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, McpError> {
    let text = dandori_fs::read_to_string(path)?;
    serde_json::from_str(&text).map_err(|e| {
        McpError::path(
            reason::RUN_DIR_INVALID,
            path,
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })
}

/// Every run under `root` (`<root>/<request-id>/<run-id>/`), newest first. A run
/// whose files cannot be read is listed with status `unreadable`.
pub fn list_runs(root: &Path) -> Result<Vec<RunSummary>, McpError> {
    let mut out = Vec::new();
    if !root.is_dir() {
        return Ok(out);
    }
    for request in read_dir(root)? {
        if !request.is_dir() {
            continue;
        }
        for run in read_dir(&request)? {
            if !run.join("planning.json").is_file() {
                continue;
            }
            match RunFiles::open(&run) {
                Ok(f) => out.push(f.summary()),
                Err(_) => out.push(RunSummary {
                    request_id: file_name(&request),
                    run_id: file_name(&run),
                    run_dir: run,
                    status: "unreadable".to_string(),
                    total: 0,
                    done: 0,
                    failed: 0,
                    updated_at: String::new(),
                }),
            }
        }
    }
    // Run ids start with their UTC creation time.
    out.sort_by(|a, b| {
        b.run_id
            .cmp(&a.run_id)
            .then(a.request_id.cmp(&b.request_id))
    });
    Ok(out)
}

/// The entries of a directory, sorted, as paths.
fn read_dir(dir: &Path) -> Result<Vec<PathBuf>, McpError> {
    let entries = std::fs::read_dir(dir)
        .map_err(|e| dandori_fs::FsError::new("reading directory", dir, e))?;
    let mut out: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    out.sort();
    Ok(out)
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The last `STEP_END` of each step: what report.md shows of the steps that ran.
fn step_metrics(trace: &[TraceEvent]) -> BTreeMap<String, (StepMetrics, Option<u64>)> {
    let mut out = BTreeMap::new();
    for ev in trace.iter().filter(|e| e.event == "STEP_END") {
        let d = &ev.data;
        let Some(id) = d.get("step_id").and_then(Value::as_str) else {
            continue;
        };
        let metrics = StepMetrics {
            diff_lines: d.get("diff_lines").and_then(Value::as_u64).unwrap_or(0),
            unit_passed: d.get("unit_passed").and_then(Value::as_bool),
            autofix_cycles: d.get("autofix_cycles").and_then(Value::as_u64).unwrap_or(0),
            tokens: d
                .get("tokens")
                .and_then(|t| serde_json::from_value(t.clone()).ok())
                .unwrap_or_default(),
        };
        let duration = d.get("duration_ms").and_then(Value::as_u64);
        out.insert(id.to_string(), (metrics, duration));
    }
    out
}

fn timings(stage: Option<&Stage>) -> BTreeMap<String, StepTiming> {
    stage
        .and_then(|s| s.extra.get("timings"))
        .and_then(|t| serde_json::from_value(t.clone()).ok())
        .unwrap_or_default()
}

/// One run's progress.
pub fn progress(target: &Path) -> Result<RunProgress, McpError> {
    let files = RunFiles::open(target)?;
    let trace = files.trace();
    let metrics = step_metrics(&trace);
    let timings = timings(files.stage.as_ref());
    let mut group_of: BTreeMap<&str, u64> = BTreeMap::new();
    let mut groups = Vec::new();
    // Hand-written plans may lack execution_plan: the groups come from the graph.
    let computed = match &files.planning.execution_plan {
        Some(ep) => ep.execution_groups.clone(),
        None => dandori_plan::graph::analyze(&files.planning.steps)
            .map(|a| a.execution_groups)
            .unwrap_or_default(),
    };
    for g in &computed {
        for id in &g.step_ids {
            group_of.insert(id.as_str(), g.group_index);
        }
        groups.push(g.step_ids.clone());
    }
    let mut tokens = TokenUsage::default();
    let steps: Vec<StepProgress> = files
        .planning
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let st = files.stage.as_ref().and_then(|st| st.steps.get(i));
            let m = metrics.get(&s.step_id);
            let step_tokens = m.map(|(m, _)| m.tokens).unwrap_or_default();
            tokens.add(step_tokens);
            let duration_ms = m.and_then(|(_, d)| *d).or_else(|| {
                let t = timings.get(&s.step_id)?;
                Some(t.finished_ms?.saturating_sub(t.started_ms))
            });
            StepProgress {
                step_id: s.step_id.clone(),
                title: s.title.clone(),
                status: st.map_or(StepStatus::Pending, |x| x.status),
                attempts: st.map_or(0, |x| x.attempts),
                group: group_of.get(s.step_id.as_str()).copied(),
                commit: st.and_then(|x| x.commit.clone()),
                reason_code: st.and_then(|x| x.reason_code.clone()),
                duration_ms,
                tokens: step_tokens.total(),
            }
        })
        .collect();
    let current_step = steps
        .iter()
        .find(|s| s.status == StepStatus::Running)
        .or_else(|| {
            steps
                .iter()
                .find(|s| matches!(s.status, StepStatus::Pending | StepStatus::NeedsInput))
        })
        .map(|s| s.step_id.clone());
    let elapsed_ms = match (trace.first(), trace.last()) {
        (Some(a), Some(b)) => match (parse_time(&a.timestamp), parse_time(&b.timestamp)) {
            (Some(a), Some(b)) => (b - a).num_milliseconds().max(0) as u64,
            _ => 0,
        },
        _ => 0,
    };
    let report = Some(files.run_dir.join("report.md")).filter(|p| p.is_file());
    Ok(RunProgress {
        summary: files.summary(),
        current_step,
        groups,
        steps,
        tokens,
        elapsed_ms,
        report,
    })
}

/// report.md rendered again from the recorded run: the completion of the last
/// `EXECUTION_END` in trace.jsonl, the steps' measurements from their `STEP_END`
/// events, the timings and acceptance-criteria evidence in stage.json. Written
/// atomically; returns the text.
pub fn rerender_report(target: &Path) -> Result<String, McpError> {
    let files = RunFiles::open(target)?;
    let trace = files.trace();
    let completion: Completion = trace
        .iter()
        .rev()
        .find(|e| e.event == "EXECUTION_END")
        .ok_or_else(|| {
            McpError::path(
                reason::RUN_DIR_INVALID,
                &files.run_dir,
                "the run has not finished (no EXECUTION_END in trace.jsonl); see `dandori status`",
            )
        })
        .and_then(|e| {
            serde_json::from_value(e.data.clone()).map_err(|err| {
                McpError::path(
                    reason::RUN_DIR_INVALID,
                    files.run_dir.join("trace.jsonl"),
                    format!("EXECUTION_END: {err}"),
                )
            })
        })?;
    let metrics: BTreeMap<String, StepMetrics> = step_metrics(&trace)
        .into_iter()
        .map(|(k, (m, _))| (k, m))
        .collect();
    let preds: Vec<BTreeSet<usize>> = dandori_runner::plan::predecessors(&files.planning)?;
    let evidence: Vec<dandori_runner::coverage::AcEvidence> = files
        .stage
        .as_ref()
        .and_then(|s| s.extra.get("ac_evidence"))
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default();
    let baseline: Option<dandori_runner::evidence::Baseline> = files
        .stage
        .as_ref()
        .and_then(|s| s.extra.get("baseline"))
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let text = dandori_runner::report::render_recorded(
        &markdown::ReportInput {
            planning: &files.planning,
            completion: &completion,
            metrics: &metrics,
            timings: &timings(files.stage.as_ref()),
            preds: &preds,
        },
        &evidence,
        baseline.as_ref(),
        &files.run_dir,
    );
    dandori_fs::write_atomic_readable(files.run_dir.join("report.md"), &text)?;
    Ok(text)
}

/// `report.html`: report.md re-rendered ([`rerender_report`]), then written as one
/// self-contained page (charts as inline SVG, no script) to `out` (default:
/// `report.html` in the run directory), atomically, mode 0644 like report.md. The
/// page's `lang` is the language of the request.
pub fn write_html_report(target: &Path, out: Option<&Path>) -> Result<PathBuf, McpError> {
    let md = rerender_report(target)?;
    let files = RunFiles::open(target)?;
    let lang = match dandori_planner::request::detect_language(&files.planning.context.summary) {
        dandori_planner::request::Language::Ja => "ja",
        dandori_planner::request::Language::En => "en",
    };
    let path = out
        .map(Path::to_path_buf)
        .unwrap_or_else(|| run_dir_of(target).join("report.html"));
    dandori_fs::write_atomic_readable(&path, html::render_html(&md, lang))?;
    Ok(path)
}

/// Which trace events to show.
#[derive(Debug, Clone, Default)]
pub struct TraceFilter {
    /// Event names (case-insensitive); empty = all.
    pub events: Vec<String>,
    /// Only events whose `data.step_id` is this step.
    pub step: Option<String>,
    /// Only events at or after this time.
    pub since: Option<DateTime<Utc>>,
    /// Seed 003 §7.1 view: `summary` keeps the summary events, `full` every
    /// event (the details too); None = every event.
    pub visibility: Option<dandori_trace::events::Visibility>,
}

impl TraceFilter {
    pub fn matches(&self, e: &TraceEvent) -> bool {
        if !self.events.is_empty() && !self.events.iter().any(|n| n.eq_ignore_ascii_case(&e.event))
        {
            return false;
        }
        if let Some(step) = &self.step
            && e.data.get("step_id").and_then(Value::as_str) != Some(step.as_str())
        {
            return false;
        }
        if self.visibility == Some(dandori_trace::events::Visibility::Summary)
            && e.visibility() != dandori_trace::events::Visibility::Summary
        {
            return false;
        }
        if let Some(since) = self.since {
            match parse_time(&e.timestamp) {
                Some(t) if t >= since => {}
                _ => return false,
            }
        }
        true
    }
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// `--since`: an RFC 3339 time, or a duration back from `now` (`90s`, `15m`, `2h`,
/// `1d`).
/// `--visibility`: `summary` | `full` (seed 003 §7.1).
pub fn parse_visibility(s: &str) -> Result<dandori_trace::events::Visibility, McpError> {
    dandori_trace::events::Visibility::parse(s).ok_or_else(|| {
        McpError::invalid(
            reason::ARGUMENT_INVALID,
            format!("visibility {s:?}: expected `summary` or `full`"),
        )
    })
}

pub fn parse_since(s: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, McpError> {
    if let Some(t) = parse_time(s) {
        return Ok(t);
    }
    let bad = || {
        McpError::invalid(
            reason::ARGUMENT_INVALID,
            format!("--since {s:?}: expected an RFC 3339 time or a duration like 90s, 15m, 2h, 1d"),
        )
    };
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = s.split_at(split);
    let n: i64 = n.parse().map_err(|_| bad())?;
    let d = match unit {
        "s" => ChronoDuration::try_seconds(n),
        "m" => ChronoDuration::try_minutes(n),
        "h" => ChronoDuration::try_hours(n),
        "d" => ChronoDuration::try_days(n),
        _ => None,
    }
    .ok_or_else(bad)?;
    Ok(now - d)
}

/// One trace event as a line for people: time, event, step, the rest of the data.
pub fn trace_line(e: &TraceEvent) -> String {
    let step = e.data.get("step_id").and_then(Value::as_str).unwrap_or("");
    let rest = match &e.data {
        Value::Object(m) => {
            let mut parts = Vec::new();
            for (k, v) in m {
                if k == "step_id" || v.is_null() {
                    continue;
                }
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let v: String = if v.chars().count() > 120 {
                    format!("{}…", v.chars().take(119).collect::<String>())
                } else {
                    v
                };
                parts.push(format!("{k}={v}"));
            }
            parts.join(" ")
        }
        Value::Null => String::new(),
        other => other.to_string(),
    };
    format!("{}  {:<22} {:<4} {}", e.timestamp, e.event, step, rest)
        .trim_end()
        .to_string()
}
