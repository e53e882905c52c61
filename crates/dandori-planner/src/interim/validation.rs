//! Seed 004 §4: the checks every planning.json must pass (FAIL) and the ones that
//! are recorded (WARN).

use dandori_plan::Planning;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Severity {
    Fail,
    Warn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: String,
    pub severity: Severity,
    /// JSON path (`$.steps[0].expected_diff.lines_max`).
    pub path: String,
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ValidationReport {
    pub findings: Vec<Finding>,
}

impl ValidationReport {
    pub fn has_fail(&self) -> bool {
        self.findings.iter().any(|f| f.severity == Severity::Fail)
    }
    fn push(&mut self, code: &str, severity: Severity, path: String, message: String) {
        self.findings.push(Finding {
            code: code.to_string(),
            severity,
            path,
            message,
        });
    }
}

pub fn validate_str(text: &str) -> ValidationReport {
    match serde_json::from_str::<Planning>(text) {
        Ok(p) => validate(&p),
        Err(e) => {
            let mut r = ValidationReport::default();
            r.push(
                "JSON_PARSE_ERROR",
                Severity::Fail,
                "$".to_string(),
                format!("line {} column {}: {e}", e.line(), e.column()),
            );
            r
        }
    }
}

pub fn validate(p: &Planning) -> ValidationReport {
    use Severity::{Fail, Warn};
    let mut r = ValidationReport::default();
    for (field, value) in [
        ("version", &p.version),
        ("request_id", &p.request_id),
        ("run_id", &p.run_id),
    ] {
        if value.trim().is_empty() {
            r.push(
                "MISSING_FIELD",
                Fail,
                format!("$.{field}"),
                format!("{field} is empty"),
            );
        }
    }
    if p.steps.is_empty() {
        r.push(
            "MISSING_FIELD",
            Fail,
            "$.steps".into(),
            "steps is empty".into(),
        );
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, s) in p.steps.iter().enumerate() {
        let valid_id = s.step_id.len() == 3
            && s.step_id.starts_with('S')
            && s.step_id[1..].chars().all(|c| c.is_ascii_digit());
        if !valid_id {
            r.push(
                "STEP_ID_INVALID",
                Fail,
                format!("$.steps[{i}].step_id"),
                format!("{:?} is not S\\d\\d", s.step_id),
            );
        }
        if !seen.insert(s.step_id.clone()) {
            r.push(
                "STEP_ID_DUPLICATE",
                Fail,
                format!("$.steps[{i}].step_id"),
                format!("{} appears twice", s.step_id),
            );
        }
        if s.expected_diff.lines_max > p.limits.max_diff_lines {
            r.push(
                "DIFF_LIMIT_EXCEEDED",
                Fail,
                format!("$.steps[{i}].expected_diff.lines_max"),
                format!(
                    "{} > limits.max_diff_lines {}",
                    s.expected_diff.lines_max, p.limits.max_diff_lines
                ),
            );
        }
        if s.scope.max_diff_lines > p.limits.max_diff_lines {
            r.push(
                "DIFF_LIMIT_EXCEEDED",
                Fail,
                format!("$.steps[{i}].scope.max_diff_lines"),
                format!(
                    "{} > limits.max_diff_lines {}",
                    s.scope.max_diff_lines, p.limits.max_diff_lines
                ),
            );
        }
        if s.expected_diff.files_max > 10 {
            r.push(
                "FILES_MAX_HIGH",
                Warn,
                format!("$.steps[{i}].expected_diff.files_max"),
                format!("{} > 10", s.expected_diff.files_max),
            );
        }
    }
    if !p.gates.forbid_gh {
        r.push(
            "GH_NOT_FORBIDDEN",
            Fail,
            "$.gates.forbid_gh".into(),
            "must be true in v1".into(),
        );
    }
    let n = p.context.acceptance_criteria.len();
    if n < 3 {
        r.push(
            "AC_TOO_FEW",
            Fail,
            "$.context.acceptance_criteria".into(),
            format!("{n} < 3"),
        );
    }
    if p.steps.len() > 10 {
        r.push(
            "TOO_MANY_STEPS",
            Warn,
            "$.steps".into(),
            format!("{} steps > 10: possible over-decomposition", p.steps.len()),
        );
    }
    if p.assumptions.as_ref().is_some_and(|a| a.len() > 8) {
        r.push(
            "TOO_MANY_ASSUMPTIONS",
            Warn,
            "$.assumptions".into(),
            "more than 8 assumptions".into(),
        );
    }
    r
}
