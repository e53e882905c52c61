//! Validation of `planning.json` (seed 004 §4) plus the dependency-graph rules.
//!
//! Validation runs on the raw text: it is parsed into a `serde_json::Value` first,
//! so that every missing key and wrong type is reported at once (a typed parse
//! stops at the first), then the rules of seed 004 §4 and the graph rules run on
//! whatever parts are usable. Every finding has a reason code
//! ([`crate::reason_codes`]), a severity, a path and a message.
//!
//! **Paths** are written from the document root with `.` between keys and `[i]`
//! for array positions, e.g. `steps[1].scope.max_diff_lines`; the root itself is
//! `$`. A missing key's path is the path the key should have.

pub mod bounds;
mod fast;
mod sanitise;
mod shape;
mod typed;

pub use sanitise::{CommandJudge, CommandVerdict, sanitise};

use rustc_hash::FxHashMap as HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::graph::{self, NodeSpec};
use crate::reason_codes as rc;
use crate::{PLANNING_VERSION, Planning};
use shape::{Field, Kind, Presence};

/// More than this many steps draws a warning (seed 004 §4.2).
pub const WARN_MAX_STEPS: usize = 10;
/// More than this many assumptions draws a warning (seed 004 §4.2).
pub const WARN_MAX_ASSUMPTIONS: usize = 8;
/// `expected_diff.files_max` above this draws a warning (seed 004 §4.2).
pub const WARN_MAX_FILES: u64 = 10;
/// At least this many acceptance criteria (seed 004 §4.1).
pub const MIN_ACCEPTANCE_CRITERIA: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Severity {
    /// Stops the run.
    #[serde(rename = "FAIL")]
    Fail,
    /// Recorded, the run continues.
    #[serde(rename = "WARN")]
    Warn,
}

/// One problem found in a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// A reason code from [`crate::reason_codes`].
    pub code: String,
    pub severity: Severity,
    /// Where, e.g. `steps[1].scope.max_diff_lines` (`$` is the root).
    pub path: String,
    pub message: String,
    /// For `JSON_PARSE_ERROR`: 1-based line of the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// For `JSON_PARSE_ERROR`: 1-based column of the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

/// All findings for one plan, in a deterministic order: structure in document
/// order, then the seed 004 rules, then the graph rules.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationReport {
    pub findings: Vec<Finding>,
}

/// The `dandori validate --json` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidationOutput {
    /// `ok` or `fail`.
    pub status: String,
    pub errors: Vec<Finding>,
    pub warnings: Vec<Finding>,
}

impl ValidationReport {
    pub fn has_fail(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Fail)
    }
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Fail)
    }
    pub fn warnings(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warn)
    }
    /// The distinct codes, in order of first appearance.
    pub fn codes(&self) -> Vec<&str> {
        let mut codes: Vec<&str> = Vec::new();
        for f in &self.findings {
            if !codes.contains(&f.code.as_str()) {
                codes.push(&f.code);
            }
        }
        codes
    }
    pub fn output(&self) -> ValidationOutput {
        ValidationOutput {
            status: if self.has_fail() { "fail" } else { "ok" }.to_string(),
            errors: self.errors().cloned().collect(),
            warnings: self.warnings().cloned().collect(),
        }
    }

    fn push(&mut self, code: &str, severity: Severity, path: &str, message: String) {
        self.findings.push(Finding {
            code: code.to_string(),
            severity,
            path: path.to_string(),
            message,
            line: None,
            column: None,
        });
    }
    fn fail(&mut self, code: &str, path: &str, message: String) {
        self.push(code, Severity::Fail, path, message);
    }
    fn warn(&mut self, code: &str, path: &str, message: String) {
        self.push(code, Severity::Warn, path, message);
    }
}

/// [`validate_bytes`] plus plan sanitisation ([`sanitise`]) with `judge` as the
/// command policy: what `dandori validate` and the runner use.
pub fn validate_bytes_with(bytes: &[u8], judge: &dyn CommandJudge) -> ValidationReport {
    if let Some(f) = bounds::check(bytes) {
        return ValidationReport { findings: vec![f] };
    }
    let mut report = validate_bytes(bytes);
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        report.findings.extend(sanitise(&value, judge).findings);
    }
    report
}

/// Validates `planning.json` given as bytes (any bytes: invalid UTF-8 or JSON is a
/// `JSON_PARSE_ERROR`).
pub fn validate_bytes(bytes: &[u8]) -> ValidationReport {
    if let Some(f) = bounds::check(bytes) {
        return ValidationReport { findings: vec![f] };
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => validate_str(text),
        Err(_) => validate_bytes_slow(bytes),
    }
}

/// The fast path: the text read into the borrowed view, which succeeds only for
/// documents without structural findings (see [`fast`]). `None` means "use the
/// `Value` walk", which then reports every problem.
fn validate_fast(text: &str) -> Option<ValidationReport> {
    // `from_str`: the text is UTF-8 already, so strings are not re-checked.
    let view: fast::PlanningV<'_> = serde_json::from_str(text).ok()?;
    let facts = Facts::from_view(&view);
    let mut report = ValidationReport::default();
    check_rules(&facts, &mut report);
    check_graph(&facts, &mut report);
    Some(report)
}

/// The `Value` walk on bytes (every path reports every finding).
fn validate_bytes_slow(bytes: &[u8]) -> ValidationReport {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => validate_value(&value),
        Err(e) => parse_error(&e),
    }
}

/// Validates `planning.json` given as text.
pub fn validate_str(text: &str) -> ValidationReport {
    if let Some(f) = bounds::check(text.as_bytes()) {
        return ValidationReport { findings: vec![f] };
    }
    if let Some(report) = validate_fast(text) {
        return report;
    }
    validate_bytes_slow(text.as_bytes())
}

/// Validates an already typed plan (the structure is right by construction; the
/// rules and graph checks still apply).
pub fn validate(planning: &Planning) -> ValidationReport {
    match serde_json::to_value(planning) {
        Ok(value) => validate_value(&value),
        Err(e) => {
            let mut report = ValidationReport::default();
            report.fail(
                rc::INVALID_VALUE,
                "$",
                format!("the plan cannot be represented as JSON: {e}"),
            );
            report
        }
    }
}

/// A plan that passed validation (no FAIL), with its warnings.
#[derive(Debug, Clone, PartialEq)]
pub struct Validated {
    pub planning: Planning,
    pub report: ValidationReport,
}

/// The findings for a text, and the typed plan when the text has the right shape
/// (it may still break a rule, e.g. a step id past S99 or a cycle).
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    pub report: ValidationReport,
    pub planning: Option<Planning>,
}

/// Validates and reads. A well-shaped text is read once, straight into the typed
/// plan through strict twins of the model types (see [`typed`]); the findings
/// come from that plan. Otherwise the text becomes a `Value` once, the findings
/// come from it and the typed plan is read from it.
pub fn check(text: &str) -> Checked {
    if let Some(f) = bounds::check(text.as_bytes()) {
        return Checked {
            report: ValidationReport { findings: vec![f] },
            planning: None,
        };
    }
    if let Ok(plan) = serde_json::from_str::<typed::PlanningT>(text) {
        let mut report = ValidationReport::default();
        {
            let facts = plan.facts();
            check_rules(&facts, &mut report);
            check_graph(&facts, &mut report);
        }
        return Checked {
            report,
            planning: Some(plan.into_planning()),
        };
    }
    check_slow(text)
}

/// [`check`] through the `Value` walk.
fn check_slow(text: &str) -> Checked {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Checked {
                report: parse_error(&e),
                planning: None,
            };
        }
    };
    let mut report = validate_value(&value);
    let structural = report.findings.iter().any(|f| {
        [
            rc::MISSING_REQUIRED_KEY,
            rc::INVALID_TYPE,
            rc::INVALID_VALUE,
        ]
        .contains(&f.code.as_str())
    });
    let planning = if structural {
        None
    } else {
        match Planning::deserialize(&value) {
            Ok(p) => Some(p),
            Err(e) => {
                // The shape tables and the types disagree: still a clear failure.
                report.fail(rc::INVALID_TYPE, "$", format!("cannot read the plan: {e}"));
                None
            }
        }
    };
    Checked { report, planning }
}

/// Validates and parses: `Ok` when there is no FAIL finding.
pub fn parse(text: &str) -> Result<Validated, ValidationReport> {
    let Checked { report, planning } = check(text);
    match planning {
        Some(planning) if !report.has_fail() => Ok(Validated { planning, report }),
        _ => Err(report),
    }
}

fn parse_error(e: &serde_json::Error) -> ValidationReport {
    let mut report = ValidationReport::default();
    report.findings.push(Finding {
        code: rc::JSON_PARSE_ERROR.to_string(),
        severity: Severity::Fail,
        path: "$".to_string(),
        message: {
            // serde_json appends " at line L column C"; say it once, our way.
            let full = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let reason = full.strip_suffix(&suffix).unwrap_or(&full);
            format!(
                "not valid JSON at line {}, column {}: {reason}",
                e.line(),
                e.column()
            )
        },
        line: Some(e.line()),
        column: Some(e.column()),
    });
    report
}

/// Validates a parsed JSON document.
pub fn validate_value(value: &Value) -> ValidationReport {
    let mut report = ValidationReport::default();
    match value {
        Value::Object(_) => check_fields(value, shape::PLANNING, &Seg::Root, &mut report),
        other => {
            report.fail(
                rc::INVALID_TYPE,
                "$",
                format!("expected an object, found {}", describe(other)),
            );
            return report;
        }
    }
    let facts = Facts::from_value(value);
    check_rules(&facts, &mut report);
    check_graph(&facts, &mut report);
    report
}

/// A path under construction, rendered only when a finding needs it (most
/// values are fine, so building every path string up front would dominate).
#[derive(Clone, Copy)]
enum Seg<'a> {
    Root,
    Key(&'a Seg<'a>, &'a str),
    Index(&'a Seg<'a>, usize),
}

impl Seg<'_> {
    fn render(&self) -> String {
        let mut out = String::new();
        self.render_into(&mut out);
        if out.is_empty() { "$".to_string() } else { out }
    }
    fn render_into(&self, out: &mut String) {
        match self {
            Seg::Root => {}
            Seg::Key(parent, key) => {
                parent.render_into(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Seg::Index(parent, i) => {
                parent.render_into(out);
                out.push('[');
                out.push_str(&i.to_string());
                out.push(']');
            }
        }
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("string \"{short}…\"")
            } else {
                format!("string \"{short}\"")
            }
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// Structural pass over one object.
fn check_fields(obj: &Value, fields: &[Field], base: &Seg<'_>, report: &mut ValidationReport) {
    for field in fields {
        let path = Seg::Key(base, field.key);
        match (obj.get(field.key), field.presence) {
            (None, Presence::Required) => report.fail(
                rc::MISSING_REQUIRED_KEY,
                &path.render(),
                format!("missing required key `{}`", field.key),
            ),
            (None, Presence::Optional | Presence::Defaulted)
            | (Some(Value::Null), Presence::Optional) => {}
            (Some(v), _) => check_kind(v, field.kind, &path, report),
        }
    }
}

fn check_kind(v: &Value, kind: Kind, path: &Seg<'_>, report: &mut ValidationReport) {
    let mismatch = |report: &mut ValidationReport, what: &str| {
        report.fail(
            rc::INVALID_TYPE,
            &path.render(),
            format!("expected {what}, found {}", describe(v)),
        );
    };
    match kind {
        Kind::Any => {}
        Kind::Str => {
            if !v.is_string() {
                mismatch(report, "a string");
            }
        }
        Kind::Bool => {
            if !v.is_boolean() {
                mismatch(report, "a boolean");
            }
        }
        Kind::UInt => {
            if v.as_u64().is_none() {
                mismatch(report, "a non-negative integer");
            }
        }
        Kind::U8 => {
            if v.as_u64().is_none_or(|n| n > 255) {
                mismatch(report, "an integer from 0 to 255");
            }
        }
        Kind::Num => {
            if !v.is_number() {
                mismatch(report, "a number");
            }
        }
        Kind::StrArray | Kind::UIntArray => match v.as_array() {
            None => mismatch(report, "an array"),
            Some(items) => {
                let (want, ok): (&str, fn(&Value) -> bool) = match kind {
                    Kind::UIntArray => ("a non-negative integer", |x| x.as_u64().is_some()),
                    _ => ("a string", Value::is_string),
                };
                for (i, item) in items.iter().enumerate() {
                    if !ok(item) {
                        report.fail(
                            rc::INVALID_TYPE,
                            &Seg::Index(path, i).render(),
                            format!("expected {want}, found {}", describe(item)),
                        );
                    }
                }
            }
        },
        Kind::Enum(allowed) => match v.as_str() {
            None => mismatch(report, "a string"),
            Some(s) => {
                if !allowed.contains(&s) {
                    report.fail(
                        rc::INVALID_VALUE,
                        &path.render(),
                        format!("`{s}` is not one of {}", allowed.join(" | ")),
                    );
                }
            }
        },
        Kind::Obj(fields) => {
            if v.is_object() {
                check_fields(v, fields, path, report);
            } else {
                mismatch(report, "an object");
            }
        }
        Kind::ObjArray(fields) => match v.as_array() {
            None => mismatch(report, "an array"),
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = Seg::Index(path, i);
                    if item.is_object() {
                        check_fields(item, fields, &p, report);
                    } else {
                        report.fail(
                            rc::INVALID_TYPE,
                            &p.render(),
                            format!("expected an object, found {}", describe(item)),
                        );
                    }
                }
            }
        },
        Kind::AnyObj => {
            if !v.is_object() {
                mismatch(report, "an object");
            }
        }
        Kind::StrMap => match v.as_object() {
            None => mismatch(report, "an object"),
            Some(map) => {
                for (k, item) in map {
                    if !item.is_string() {
                        report.fail(
                            rc::INVALID_TYPE,
                            &Seg::Key(path, k).render(),
                            format!("expected a string, found {}", describe(item)),
                        );
                    }
                }
            }
        },
        Kind::Complexity => {
            let ok = match v {
                Value::Number(n) => n.as_u64().is_some_and(|n| n <= 255),
                Value::String(s) => shape::COMPLEXITY_LEVELS.contains(&s.as_str()),
                _ => false,
            };
            if !ok {
                mismatch(report, "a score 1–10 or low | medium | high");
            }
        }
    }
}

fn is_step_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 3 && b[0] == b'S' && b[1].is_ascii_digit() && b[2].is_ascii_digit()
}

/// What the rules and the graph checks read from a document, taken either from
/// its `Value` (any shape) or from the fast view (right shape by construction).
struct Facts<'a> {
    version: Option<&'a str>,
    /// `limits.max_diff_lines`.
    limit: Option<u64>,
    /// Whether `steps` is an array (an empty one draws NO_STEPS).
    steps_is_array: bool,
    steps: Vec<StepFacts<'a>>,
    /// `gates.forbid_gh`.
    forbid_gh: Option<bool>,
    /// `context.acceptance_criteria[*].id`, when it is an array.
    ac_ids: Option<Vec<Option<&'a str>>>,
    /// Length of `assumptions`, when it is an array.
    assumptions: Option<usize>,
    /// Seed 001 `complexity_score`, when it is a number.
    complexity_score: Option<f64>,
}

struct StepFacts<'a> {
    id: Option<&'a str>,
    lines_max: Option<u64>,
    scope_max: Option<u64>,
    files_max: Option<u64>,
    /// `links_to_ac` entries (`None` for a non-string).
    links: Vec<Option<&'a str>>,
    /// `depends_on` entries (`None` for a non-string).
    depends_on: Vec<Option<&'a str>>,
    produces: Vec<&'a str>,
    consumes: Vec<&'a str>,
}

impl<'a> Facts<'a> {
    fn from_value(value: &'a Value) -> Facts<'a> {
        let steps_value = value.get("steps").and_then(Value::as_array);
        let raw = |step: &'a Value, key: &str| -> Vec<Option<&'a str>> {
            step.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let strs = |step: &'a Value, key: &str| -> Vec<&'a str> {
            // An entry that is not a string was reported by the structural pass.
            step.get(key)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        };
        let u64_at = |v: &'a Value, a: &str, b: &str| {
            v.get(a).and_then(|d| d.get(b)).and_then(Value::as_u64)
        };
        Facts {
            version: value.get("version").and_then(Value::as_str),
            limit: u64_at(value, "limits", "max_diff_lines"),
            steps_is_array: steps_value.is_some(),
            steps: steps_value
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|step| StepFacts {
                    id: step.get("step_id").and_then(Value::as_str),
                    lines_max: u64_at(step, "expected_diff", "lines_max"),
                    scope_max: u64_at(step, "scope", "max_diff_lines"),
                    files_max: u64_at(step, "expected_diff", "files_max"),
                    links: raw(step, "links_to_ac"),
                    depends_on: raw(step, "depends_on"),
                    produces: strs(step, "produces"),
                    consumes: strs(step, "consumes"),
                })
                .collect(),
            forbid_gh: value
                .get("gates")
                .and_then(|g| g.get("forbid_gh"))
                .and_then(Value::as_bool),
            ac_ids: value
                .get("context")
                .and_then(|c| c.get("acceptance_criteria"))
                .and_then(Value::as_array)
                .map(|acs| {
                    acs.iter()
                        .map(|ac| ac.get("id").and_then(Value::as_str))
                        .collect()
                }),
            assumptions: value
                .get("assumptions")
                .and_then(Value::as_array)
                .map(Vec::len),
            complexity_score: value.get("complexity_score").and_then(Value::as_f64),
        }
    }

    fn from_view(view: &'a fast::PlanningV<'a>) -> Facts<'a> {
        let all = |v: &'a Option<Vec<fast::BStr<'a>>>| -> Vec<&'a str> {
            v.as_deref()
                .unwrap_or_default()
                .iter()
                .map(fast::BStr::as_str)
                .collect()
        };
        Facts {
            version: Some(view.version.as_str()),
            limit: Some(view.limits.max_diff_lines),
            steps_is_array: true,
            steps: view
                .steps
                .iter()
                .map(|step| StepFacts {
                    id: Some(step.step_id.as_str()),
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
            forbid_gh: Some(view.gates.forbid_gh),
            ac_ids: Some(
                view.context
                    .acceptance_criteria
                    .iter()
                    .map(|ac| Some(ac.id.as_str()))
                    .collect(),
            ),
            assumptions: view.assumptions.as_ref().map(Vec::len),
            complexity_score: view.complexity_score,
        }
    }
}

/// The rules of seed 004 §4.1 / §4.2 on the usable parts of the document.
fn check_rules(facts: &Facts<'_>, report: &mut ValidationReport) {
    if let Some(v) = facts.version
        && v != PLANNING_VERSION
    {
        report.fail(
            rc::UNSUPPORTED_VERSION,
            "version",
            format!("version `{v}` is not supported (expected \"{PLANNING_VERSION}\")"),
        );
    }
    if let Some(c) = facts.complexity_score
        && !(0.0..=1.0).contains(&c)
    {
        report.fail(
            rc::INVALID_VALUE,
            "complexity_score",
            format!("complexity_score {c} is outside 0.0–1.0"),
        );
    }
    let limit = facts.limit;
    let steps = &facts.steps;
    if facts.steps_is_array && steps.is_empty() {
        report.fail(rc::NO_STEPS, "steps", "the plan has no steps".to_string());
    }
    let mut seen: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(steps.len(), Default::default());
    for (i, step) in steps.iter().enumerate() {
        if let Some(id) = step.id {
            if !is_step_id(id) {
                report.fail(
                    rc::STEP_ID_INVALID,
                    &format!("steps[{i}].step_id"),
                    format!("step_id `{id}` does not match S\\d\\d (S01, S02, …)"),
                );
            }
            match seen.entry(id) {
                std::collections::hash_map::Entry::Occupied(first) => report.fail(
                    rc::STEP_ID_DUPLICATE,
                    &format!("steps[{i}].step_id"),
                    format!("step_id `{id}` is already used by steps[{}]", first.get()),
                ),
                std::collections::hash_map::Entry::Vacant(e) => {
                    e.insert(i);
                }
            }
        }
        if let (Some(limit), Some(n)) = (limit, step.lines_max)
            && n > limit
        {
            report.fail(
                rc::EXPECTED_DIFF_OVER_LIMIT,
                &format!("steps[{i}].expected_diff.lines_max"),
                format!("expected_diff.lines_max {n} exceeds limits.max_diff_lines {limit}"),
            );
        }
        if let (Some(limit), Some(n)) = (limit, step.scope_max)
            && n > limit
        {
            report.fail(
                rc::SCOPE_DIFF_OVER_LIMIT,
                &format!("steps[{i}].scope.max_diff_lines"),
                format!("scope.max_diff_lines {n} exceeds limits.max_diff_lines {limit}"),
            );
        }
        if let Some(n) = step.files_max
            && n > WARN_MAX_FILES
        {
            report.warn(
                rc::FILES_MAX_HIGH,
                &format!("steps[{i}].expected_diff.files_max"),
                format!("expected_diff.files_max {n} is above {WARN_MAX_FILES}"),
            );
        }
    }
    if facts.forbid_gh == Some(false) {
        report.fail(
            rc::GH_NOT_FORBIDDEN,
            "gates.forbid_gh",
            "gates.forbid_gh must be true in v1".to_string(),
        );
    }
    if let Some(acs) = &facts.ac_ids {
        if acs.len() < MIN_ACCEPTANCE_CRITERIA {
            report.fail(
                rc::AC_TOO_FEW,
                "context.acceptance_criteria",
                format!(
                    "{} acceptance criteria, at least {MIN_ACCEPTANCE_CRITERIA} are required",
                    acs.len()
                ),
            );
        }
        let mut ids: HashMap<&str, usize> =
            HashMap::with_capacity_and_hasher(acs.len(), Default::default());
        for (i, id) in acs.iter().enumerate() {
            if let Some(id) = *id {
                if let Some(first) = ids.get(id) {
                    report.fail(
                        rc::AC_ID_DUPLICATE,
                        &format!("context.acceptance_criteria[{i}].id"),
                        format!("acceptance criterion id `{id}` is already used by [{first}]"),
                    );
                } else {
                    ids.insert(id, i);
                }
            }
        }
        for (i, step) in steps.iter().enumerate() {
            for (j, link) in step.links.iter().enumerate() {
                if let Some(l) = *link
                    && !ids.contains_key(l)
                {
                    report.fail(
                        rc::UNKNOWN_AC_LINK,
                        &format!("steps[{i}].links_to_ac[{j}]"),
                        format!("links_to_ac names `{l}`, which is not an acceptance criterion"),
                    );
                }
            }
        }
    }
    if steps.len() > WARN_MAX_STEPS {
        report.warn(
            rc::TOO_MANY_STEPS,
            "steps",
            format!(
                "{} steps (more than {WARN_MAX_STEPS}): possibly over-split",
                steps.len()
            ),
        );
    }
    if let Some(a) = facts.assumptions
        && a > WARN_MAX_ASSUMPTIONS
    {
        report.warn(
            rc::TOO_MANY_ASSUMPTIONS,
            "assumptions",
            format!("{a} assumptions (more than {WARN_MAX_ASSUMPTIONS})"),
        );
    }
}

/// Unknown dependencies and cycles over depends_on and produces → consumes.
fn check_graph(facts: &Facts<'_>, report: &mut ValidationReport) {
    let steps = &facts.steps;
    // The string entries of each depends_on (non-strings were reported by the
    // structural pass).
    let depends_on: Vec<Vec<&str>> = steps
        .iter()
        .map(|s| s.depends_on.iter().flatten().copied().collect())
        .collect();
    let nodes: Vec<NodeSpec<'_>> = steps
        .iter()
        .zip(&depends_on)
        .map(|(s, deps)| NodeSpec {
            id: s.id.unwrap_or(""),
            depends_on: deps,
            produces: &s.produces,
            consumes: &s.consumes,
            target_paths: &[],
            weight: 1,
        })
        .collect();
    let mut index: HashMap<&str, usize> =
        HashMap::with_capacity_and_hasher(nodes.len(), Default::default());
    for (i, n) in nodes.iter().enumerate() {
        if !n.id.is_empty() {
            index.entry(n.id).or_insert(i);
        }
    }
    let ordering = graph::ordering_edges(&nodes, &index);
    // Raw positions of the string entries of one step's depends_on, built once per
    // step: looking each unknown entry up by scanning was quadratic in the number
    // of unknown ids of a step.
    let mut raw_positions: (usize, Vec<usize>) = (usize::MAX, Vec::new());
    for u in &ordering.unknown {
        if raw_positions.0 != u.step {
            raw_positions = (
                u.step,
                steps[u.step]
                    .depends_on
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_some())
                    .map(|(k, _)| k)
                    .collect(),
            );
        }
        // Position of the entry among all entries (non-strings included).
        let raw_index = raw_positions.1.get(u.entry).copied().unwrap_or(u.entry);
        report.fail(
            rc::UNKNOWN_DEPENDENCY,
            &format!("steps[{}].depends_on[{raw_index}]", u.step),
            format!(
                "step `{}` depends on `{}`, which is not a step",
                nodes[u.step].id, u.name
            ),
        );
    }
    let order = graph::topo_order(nodes.len(), &ordering.edges);
    if order.len() < nodes.len() {
        for cycle in graph::cycle_positions(nodes.len(), &ordering.edges, &order) {
            let names: Vec<&str> = cycle.iter().map(|&v| nodes[v].id).collect();
            report.fail(
                rc::DEPENDENCY_CYCLE,
                &format!("steps[{}]", cycle[0]),
                format!(
                    "dependency cycle: {} (through depends_on and produces/consumes)",
                    names.join(" -> ")
                ),
            );
        }
    }
}

/// The fast path against the `Value` walk: wherever the view accepts a
/// document, the findings (and `check`'s typed plan) must be the same.
#[cfg(test)]
mod fast_path_tests {
    use serde_json::{Value, json};

    use super::{check, check_slow, validate_fast, validate_value};

    /// The seed 004 sample with every optional key and extension present, and
    /// a second step so the graph rules have something to do.
    fn full() -> Value {
        let text = include_str!("../../tests/fixtures/seed004_sample.json");
        let mut doc: Value = serde_json::from_str(text).unwrap_or_default();
        let mut s2 = doc["steps"][0].clone();
        s2["step_id"] = json!("S02");
        s2["depends_on"] = json!(["S01"]);
        s2["consumes"] = json!(["api"]);
        s2["fallback"] = json!({"role": "reviewer", "n": [1, {"a": null}]});
        s2["stop_conditions"] = json!(["tests fail"]);
        s2["boundaries"] = json!({"in_scope": ["a"], "out_of_scope": ["b"]});
        s2["estimated_complexity"] = json!("medium");
        s2["required_tools"] = json!(["git"]);
        s2["x_unknown"] = json!({"deep": [1, 2.5, -3, "s"]});
        doc["steps"][0]["produces"] = json!(["api"]);
        doc["steps"][0]["estimated_complexity"] = json!(7);
        doc["steps"][0]["scope"]["max_files_changed"] = json!(3);
        doc["steps"][0]["commands"]["e2e"] = json!(["npm run e2e"]);
        doc["steps"] = json!([doc["steps"][0].clone(), s2]);
        doc["context"]["project_facts"] = json!({"framework": "laravel"});
        doc["context"]["acceptance_criteria"][0]["type"] = json!("functional");
        doc["outputs"]["errors_json"] = json!("runs/x/errors.json");
        doc["risks"] = json!(["r"]);
        doc["goal_understanding"] = json!({
            "main_objective": "o", "success_criteria": ["s"], "constraints": ["c"], "context": "x"
        });
        doc["size_estimation"] = json!({
            "task_id": "t", "estimated_at": "2025-01-01T00:00:00Z", "estimated_tokens": 10,
            "estimated_file_count": 2, "complexity_score": 5, "dependency_depth": 1,
            "total_score": 42.5, "size_category": "M", "llm_reasoning": "r", "confidence": 0.5
        });
        doc["chunking_decision"] = json!({
            "task_id": "t", "decided_at": "2025-01-01T00:00:00Z", "should_chunk": true,
            "chunk_count": 2,
            "decision_criteria": [{"name": "n", "value": 3, "threshold": null, "met": true}],
            "llm_reasoning": "r",
            "subtask_definitions": [
                {"subtask_index": 0, "prompt": "p", "estimated_size": "S", "dependencies": [1]}
            ]
        });
        let group = json!({
            "group_index": 0, "mode": "parallel", "step_ids": ["S01"], "depends_on_groups": [0]
        });
        doc["dependency_graph"] = json!({
            "edges": [{"from": "S01", "to": "S02", "type": "data"}],
            "execution_groups": [group.clone()],
            "critical_path": ["S01", "S02"]
        });
        doc["execution_plan"] = json!({
            "execution_mode": "hybrid", "execution_groups": [group],
            "estimated_total_duration_ms": 0,
            "worker_strategy": {"type": "round_robin", "max_parallel_workers": 2,
                                "worker_timeout_ms": 1000}
        });
        doc["selected_environment"] = json!({
            "name": "rust", "reason": "Cargo.toml", "detected_files": ["Cargo.toml"],
            "setup_commands": [], "verification_commands": ["cargo --version"],
            "expected_results": {"cargo --version": "cargo 1"}
        });
        doc
    }

    /// Asserts fast == slow for one text; returns whether the fast path took it.
    fn same(text: &str) -> bool {
        let slow = match serde_json::from_str::<Value>(text) {
            Ok(v) => Some(validate_value(&v)),
            Err(_) => None,
        };
        let fast = validate_fast(text);
        // The one-pass typed read accepts exactly what the view accepts.
        assert_eq!(
            serde_json::from_str::<super::typed::PlanningT>(text).is_ok(),
            fast.is_some(),
            "typed read and view disagree on {text}"
        );
        if let Some(fast) = &fast {
            assert_eq!(Some(fast), slow.as_ref(), "fast path differs on {text}");
        }
        // A document past the bounds is refused before either path parses it.
        if super::bounds::check(text.as_bytes()).is_none() {
            assert_eq!(check(text), check_slow(text), "check differs on {text}");
        } else {
            assert_eq!(
                check(text).report.codes(),
                vec![crate::reason_codes::PLAN_TOO_LARGE]
            );
        }
        fast.is_some()
    }

    fn replacements() -> Vec<Value> {
        vec![
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(3),
            json!(11),
            json!(255),
            json!(256),
            json!(100_000),
            json!(-1),
            json!(1.5),
            json!(""),
            json!("S99"),
            json!("low"),
            json!("medium"),
            json!("mid"),
            json!("implementer"),
            json!("parallel"),
            json!("M"),
            json!("data"),
            json!("functional"),
            json!("round_robin"),
            json!("hybrid"),
            json!("1.0"),
            json!([]),
            json!(["a"]),
            json!([1]),
            json!([{}]),
            json!({}),
            json!({"a": 1}),
            json!({"a": "b"}),
        ]
    }

    /// Every position of the document: removed, and replaced by each value.
    fn mutate(doc: &Value, at: &mut Vec<Value>, out: &mut Vec<Value>) {
        // `at` is the path as JSON keys/indices from the root.
        fn get_mut<'v>(v: &'v mut Value, path: &[Value]) -> Option<&'v mut Value> {
            path.iter().try_fold(v, |v, k| match k {
                Value::String(k) => v.get_mut(k.as_str()),
                Value::Number(n) => v.get_mut(n.as_u64()? as usize),
                _ => None,
            })
        }
        let node = at.iter().try_fold(doc, |v, k| match k {
            Value::String(k) => v.get(k.as_str()),
            Value::Number(n) => v.get(n.as_u64()? as usize),
            _ => None,
        });
        let Some(node) = node.cloned() else { return };
        if let Some((last, parent)) = at.split_last() {
            let mut removed = doc.clone();
            match (get_mut(&mut removed, parent), last) {
                (Some(Value::Object(m)), Value::String(k)) => {
                    m.shift_remove(k.as_str());
                }
                (Some(Value::Array(a)), Value::Number(n)) => {
                    a.remove(n.as_u64().unwrap_or(0) as usize);
                }
                _ => {}
            }
            out.push(removed);
            for r in replacements() {
                let mut changed = doc.clone();
                if let Some(slot) = get_mut(&mut changed, at) {
                    *slot = r;
                }
                out.push(changed);
            }
        }
        match &node {
            Value::Object(m) => {
                for k in m.keys() {
                    at.push(Value::String(k.clone()));
                    mutate(doc, at, out);
                    at.pop();
                }
            }
            Value::Array(a) => {
                for i in 0..a.len() {
                    at.push(json!(i));
                    mutate(doc, at, out);
                    at.pop();
                }
            }
            _ => {}
        }
    }

    #[test]
    fn the_full_document_takes_the_fast_path() {
        let text = serde_json::to_string(&full()).unwrap_or_default();
        assert!(same(&text));
        let sample = include_str!("../../tests/fixtures/seed004_sample.json");
        assert!(same(sample));
    }

    #[test]
    fn every_mutation_gives_the_same_findings() {
        let doc = full();
        let mut out = Vec::new();
        mutate(&doc, &mut Vec::new(), &mut out);
        assert!(out.len() > 1000, "{} mutations", out.len());
        let mut fast = 0;
        for m in &out {
            let text = serde_json::to_string(m).unwrap_or_default();
            if same(&text) {
                fast += 1;
            }
        }
        // Both paths are exercised.
        assert!(
            fast > 100 && fast < out.len() - 100,
            "{fast} of {}",
            out.len()
        );
    }

    #[test]
    fn every_code_fixture_gives_the_same_findings() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/codes");
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            same(&text);
        }
    }

    #[test]
    fn texts_a_value_rejects_are_rejected_by_the_view_too() {
        let base = serde_json::to_string(&full()).unwrap_or_default();
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        let cases = [
            // Past serde_json's recursion limit inside a free-form value.
            base.replacen("{", &format!("{{\"x_deep\": {deep},"), 1),
            // A number out of range in an unknown key and in a free-form value.
            base.replacen("{", "{\"x_big\": 1e999,", 1),
            base.replace("\"framework\"", "\"n\": -1e999, \"framework\""),
            // A duplicated known key (the later wins in a `Value`).
            base.replacen("{", "{\"version\": \"0.9\",", 1),
            base.replace(
                "\"step_id\":\"S02\"",
                "\"step_id\":\"S02\",\"step_id\":\"S03\"",
            ),
            // Duplicated unknown keys, escapes in ids and keys.
            base.replacen("{", "{\"x\": 1, \"x\": [2],", 1),
            base.replace("\"S01\"", "\"S\\u00301\""),
            base.replace("\"step_id\"", "\"step\\u005fid\""),
            // Arrays where objects belong.
            base.replace(
                "\"boundaries\":{\"in_scope\":[\"a\"],\"out_of_scope\":[\"b\"]}",
                "\"boundaries\":[[\"a\"],[\"b\"]]",
            ),
            base.replace(
                "\"role\":\"implementer\"",
                "\"role\":{\"implementer\":null}",
            ),
            // Trailing garbage, an empty text.
            format!("{base} x"),
            String::new(),
        ];
        for text in &cases {
            assert_ne!(text, &base);
            same(text);
        }
    }
}
