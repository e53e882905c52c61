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

mod shape;

use std::collections::HashMap;

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

/// Validates `planning.json` given as bytes (any bytes: invalid UTF-8 or JSON is a
/// `JSON_PARSE_ERROR`).
pub fn validate_bytes(bytes: &[u8]) -> ValidationReport {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(value) => validate_value(&value),
        Err(e) => parse_error(&e),
    }
}

/// Validates `planning.json` given as text.
pub fn validate_str(text: &str) -> ValidationReport {
    validate_bytes(text.as_bytes())
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

/// Validates and reads in one parse: the text becomes a `Value` once, the
/// findings come from it and the typed plan is read from it.
pub fn check(text: &str) -> Checked {
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
    check_rules(value, &mut report);
    check_graph(value, &mut report);
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

fn steps_of(value: &Value) -> &[Value] {
    value
        .get("steps")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn is_step_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 3 && b[0] == b'S' && b[1].is_ascii_digit() && b[2].is_ascii_digit()
}

/// The rules of seed 004 §4.1 / §4.2 on the usable parts of the document.
fn check_rules(value: &Value, report: &mut ValidationReport) {
    if let Some(v) = value.get("version").and_then(Value::as_str)
        && v != PLANNING_VERSION
    {
        report.fail(
            rc::UNSUPPORTED_VERSION,
            "version",
            format!("version `{v}` is not supported (expected \"{PLANNING_VERSION}\")"),
        );
    }
    let limit = value
        .get("limits")
        .and_then(|l| l.get("max_diff_lines"))
        .and_then(Value::as_u64);
    let steps = steps_of(value);
    if value.get("steps").is_some_and(Value::is_array) && steps.is_empty() {
        report.fail(rc::NO_STEPS, "steps", "the plan has no steps".to_string());
    }
    let mut seen: HashMap<&str, usize> = HashMap::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        if let Some(id) = step.get("step_id").and_then(Value::as_str) {
            let path = format!("steps[{i}].step_id");
            if !is_step_id(id) {
                report.fail(
                    rc::STEP_ID_INVALID,
                    &path,
                    format!("step_id `{id}` does not match S\\d\\d (S01, S02, …)"),
                );
            }
            if let Some(first) = seen.get(id) {
                report.fail(
                    rc::STEP_ID_DUPLICATE,
                    &path,
                    format!("step_id `{id}` is already used by steps[{first}]"),
                );
            } else {
                seen.insert(id, i);
            }
        }
        let lines_max = step
            .get("expected_diff")
            .and_then(|d| d.get("lines_max"))
            .and_then(Value::as_u64);
        if let (Some(limit), Some(n)) = (limit, lines_max)
            && n > limit
        {
            report.fail(
                rc::EXPECTED_DIFF_OVER_LIMIT,
                &format!("steps[{i}].expected_diff.lines_max"),
                format!("expected_diff.lines_max {n} exceeds limits.max_diff_lines {limit}"),
            );
        }
        let scope_max = step
            .get("scope")
            .and_then(|d| d.get("max_diff_lines"))
            .and_then(Value::as_u64);
        if let (Some(limit), Some(n)) = (limit, scope_max)
            && n > limit
        {
            report.fail(
                rc::SCOPE_DIFF_OVER_LIMIT,
                &format!("steps[{i}].scope.max_diff_lines"),
                format!("scope.max_diff_lines {n} exceeds limits.max_diff_lines {limit}"),
            );
        }
        let files_max = step
            .get("expected_diff")
            .and_then(|d| d.get("files_max"))
            .and_then(Value::as_u64);
        if let Some(n) = files_max
            && n > WARN_MAX_FILES
        {
            report.warn(
                rc::FILES_MAX_HIGH,
                &format!("steps[{i}].expected_diff.files_max"),
                format!("expected_diff.files_max {n} is above {WARN_MAX_FILES}"),
            );
        }
    }
    if let Some(false) = value
        .get("gates")
        .and_then(|g| g.get("forbid_gh"))
        .and_then(Value::as_bool)
    {
        report.fail(
            rc::GH_NOT_FORBIDDEN,
            "gates.forbid_gh",
            "gates.forbid_gh must be true in v1".to_string(),
        );
    }
    if let Some(acs) = value
        .get("context")
        .and_then(|c| c.get("acceptance_criteria"))
        .and_then(Value::as_array)
    {
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
        let mut ids: HashMap<&str, usize> = HashMap::new();
        for (i, ac) in acs.iter().enumerate() {
            if let Some(id) = ac.get("id").and_then(Value::as_str) {
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
            let links = step.get("links_to_ac").and_then(Value::as_array);
            for (j, link) in links.into_iter().flatten().enumerate() {
                if let Some(l) = link.as_str()
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
    if let Some(a) = value.get("assumptions").and_then(Value::as_array)
        && a.len() > WARN_MAX_ASSUMPTIONS
    {
        report.warn(
            rc::TOO_MANY_ASSUMPTIONS,
            "assumptions",
            format!("{} assumptions (more than {WARN_MAX_ASSUMPTIONS})", a.len()),
        );
    }
}

/// Unknown dependencies and cycles over depends_on and produces → consumes.
fn check_graph<'v>(value: &'v Value, report: &mut ValidationReport) {
    let steps = steps_of(value);
    let strs = |step: &'v Value, key: &str| -> Vec<&'v str> {
        // An entry that is not a string was reported by the structural pass.
        step.get(key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    };
    let nodes: Vec<NodeSpec<'v>> = steps
        .iter()
        .map(|s| NodeSpec {
            id: s.get("step_id").and_then(Value::as_str).unwrap_or(""),
            depends_on: strs(s, "depends_on"),
            produces: strs(s, "produces"),
            consumes: strs(s, "consumes"),
            target_paths: Vec::new(),
            weight: 1,
        })
        .collect();
    let mut index: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    for (i, n) in nodes.iter().enumerate() {
        if !n.id.is_empty() {
            index.entry(n.id).or_insert(i);
        }
    }
    let ordering = graph::ordering_edges(&nodes, &index);
    for u in &ordering.unknown {
        // Position of the entry among all entries (non-strings included).
        let raw_index = steps[u.step]
            .get("depends_on")
            .and_then(Value::as_array)
            .and_then(|a| {
                a.iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_string())
                    .nth(u.entry)
                    .map(|(k, _)| k)
            })
            .unwrap_or(u.entry);
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
