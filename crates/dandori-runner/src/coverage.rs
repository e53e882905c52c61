//! Coverage of the acceptance criteria after the steps ran (seed 001 §10.5), with
//! its four deterministic guardrails. An assessment (from a model, or the
//! deterministic count when there is none) goes in; the rules always have the last
//! word, and the max-iteration rule is applied last of all so nothing can override
//! it.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoverageInput {
    pub acceptance_criteria: Vec<String>,
    /// ACs with evidence (issue 20): a check red or absent on the base commit and
    /// green after a step (or, for regression / non-functional ACs, every test
    /// passing on the base still passing).
    pub covered: Vec<String>,
    /// ACs linked by no step at all (a gap in the plan, fixable by a follow-up).
    pub unplanned: Vec<String>,
    /// Covered ACs that a linking step left without a verification of its own
    /// (done without a check, or not done): covered, but worth a test.
    #[serde(default)]
    pub weakly_evidenced: Vec<String>,
    /// Size of what exists (committed diff lines): seed 001's "synthesis length".
    pub synthesis_size: u64,
    pub iteration: u32,
    pub max_iterations: u32,
}

pub use dandori_report::CoverageResult;

/// Why an acceptance criterion is (not) covered: the verifications of the done
/// steps linking it, as they ran after the change (seed 001 §10.5–10.8).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcEvidence {
    pub ac: String,
    pub covered: bool,
    /// `covered` (red → green, or green → green for regression / non-functional
    /// criteria), `unverified` (nothing turned green: "the suite passes" only),
    /// `not_covered` (the check fails after the steps).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<crate::evidence::AcStatus>,
    /// What proves it: a named test, the tests that turned green, a command.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub check: String,
    /// The check on the base commit: `pass`, `fail`, `absent`, `not run`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub base_result: String,
    /// The check after the steps.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub after_result: String,
    /// The step whose commit made it green, and that commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub green_step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub green_commit: Option<String>,
    /// The log of the run that says so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
    /// Steps linking the AC and their state, when none verified it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    pub evidence: Vec<EvidenceItem>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceItem {
    pub step_id: String,
    pub kind: String,
    pub command: String,
    pub exit_code: Option<i32>,
    pub log: String,
}

/// Below this many committed lines a high coverage claim is not trusted (rule 4).
const MIN_SYNTHESIS_LINES: u64 = 5;

/// The deterministic assessment: coverage is the share of ACs with evidence.
pub fn assess(input: &CoverageInput) -> CoverageResult {
    let total = input.acceptance_criteria.len().max(1) as f64;
    let covered = input
        .acceptance_criteria
        .iter()
        .filter(|a| input.covered.contains(a))
        .count() as f64;
    let critical_gaps: Vec<String> = input
        .acceptance_criteria
        .iter()
        .filter(|a| !input.covered.contains(a))
        .cloned()
        .collect();
    let overall = covered / total;
    CoverageResult {
        should_continue: overall < 0.85 || !critical_gaps.is_empty(),
        recommended_action: if critical_gaps.is_empty() {
            "complete"
        } else {
            "continue"
        }
        .to_string(),
        overall_coverage: overall,
        critical_gaps,
        // Seed 001 §10.5 `OptionalGaps`: improvements, not blockers — covered
        // criteria whose evidence leaves a linking step unverified.
        optional_gaps: input
            .acceptance_criteria
            .iter()
            .filter(|a| input.covered.contains(a) && input.weakly_evidenced.contains(a))
            .cloned()
            .collect(),
        confidence_level: "high".to_string(),
        rules_applied: Vec::new(),
    }
}

/// Seed 001 §10.5's guardrails over `result` (from a model or [`assess`]).
pub fn apply_guardrails(input: &CoverageInput, mut result: CoverageResult) -> CoverageResult {
    // Rule 1: first iteration with low coverage → continue.
    if input.iteration == 1 && result.overall_coverage < 0.5 {
        result.should_continue = true;
        result.recommended_action = "continue".to_string();
        result
            .rules_applied
            .push("rule1_first_iteration_low_coverage".to_string());
    }
    // Rule 2: critical gaps and iterations left → continue.
    if !result.critical_gaps.is_empty() && input.iteration < input.max_iterations {
        result.should_continue = true;
        result.recommended_action = "continue".to_string();
        result.rules_applied.push("rule2_critical_gaps".to_string());
    }
    // Rule 4: a high claim over almost nothing is not trusted.
    if input.synthesis_size < MIN_SYNTHESIS_LINES && result.overall_coverage > 0.7 {
        result.confidence_level = "low".to_string();
        result
            .rules_applied
            .push("rule4_low_confidence".to_string());
    }
    // Rule 3, always last: the iteration limit stops the loop.
    if input.iteration >= input.max_iterations {
        result.should_continue = false;
        result.recommended_action = "complete".to_string();
        result
            .rules_applied
            .push("rule3_max_iterations".to_string());
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(covered: &[&str], iteration: u32) -> CoverageInput {
        CoverageInput {
            acceptance_criteria: ["AC-01", "AC-02", "AC-03"].map(String::from).to_vec(),
            covered: covered.iter().map(|s| s.to_string()).collect(),
            unplanned: Vec::new(),
            weakly_evidenced: Vec::new(),
            synthesis_size: 100,
            iteration,
            max_iterations: 2,
        }
    }

    #[test]
    fn max_iteration_rule_wins_over_critical_gaps() {
        let i = input(&["AC-01"], 2);
        let r = apply_guardrails(&i, assess(&i));
        assert!(!r.should_continue);
        assert_eq!(
            r.rules_applied.last().map(String::as_str),
            Some("rule3_max_iterations")
        );
    }

    #[test]
    fn model_claiming_done_with_gaps_is_overridden() {
        let i = input(&["AC-01", "AC-02"], 1);
        let mut claimed = assess(&i);
        claimed.should_continue = false;
        claimed.recommended_action = "complete".to_string();
        let r = apply_guardrails(&i, claimed);
        assert!(r.should_continue);
        assert_eq!(r.critical_gaps, vec!["AC-03".to_string()]);
    }

    #[test]
    fn weak_evidence_of_a_covered_criterion_is_an_optional_gap() {
        let mut i = input(&["AC-01", "AC-02"], 1);
        // AC-03 is not covered: critical, never optional.
        i.weakly_evidenced = vec!["AC-02".to_string(), "AC-03".to_string()];
        let r = apply_guardrails(&i, assess(&i));
        assert_eq!(r.optional_gaps, vec!["AC-02".to_string()]);
        assert_eq!(r.critical_gaps, vec!["AC-03".to_string()]);
    }

    #[test]
    fn tiny_synthesis_lowers_confidence() {
        let mut i = input(&["AC-01", "AC-02", "AC-03"], 1);
        i.synthesis_size = 0;
        let r = apply_guardrails(&i, assess(&i));
        assert_eq!(r.confidence_level, "low");
        assert!(!r.should_continue);
    }
}
