//! Deterministic reflection (seed 000 §5, §8.1.3): after every error or unexpected
//! result, and every `trigger_interval` actions, a reflection record in the seed's
//! JSON shape goes to the trace. With a model the LLM tool loop asks the model for
//! the same record; these rules are what holds when no model is asked (and they
//! are conservative: an unclear result counts as a problem, seed 000 §10.3).

use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReflectionStatus {
    Success,
    Failure,
    Partial,
}

impl ReflectionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ReflectionStatus::Success => "success",
            ReflectionStatus::Failure => "failure",
            ReflectionStatus::Partial => "partial",
        }
    }
}

/// Why a reflection happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    Error,
    Unexpected,
    Interval,
}

impl Trigger {
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Error => "error",
            Trigger::Unexpected => "unexpected_result",
            Trigger::Interval => "interval",
        }
    }
}

/// The seed 000 §5 reflection record.
pub fn record(
    action_id: &str,
    trigger: Trigger,
    status: ReflectionStatus,
    evaluation: &str,
    issues: &[String],
    plan_revision_needed: bool,
) -> Value {
    json!({
        "phase": "reflection",
        "trigger": trigger.as_str(),
        "reflection": {
            "action_id": action_id,
            "status": status.as_str(),
            "evaluation": evaluation,
            "alignment_with_plan": if plan_revision_needed { "diverges from the plan" } else { "consistent with the plan" },
            "issues_identified": issues,
            "plan_revision_needed": plan_revision_needed,
        }
    })
}

/// The periodic reflection interval of `step` (0: on errors only): `configured`
/// (`planning.reflection.trigger_interval`) when set, otherwise by complexity
/// (seed 000 §11.1.3: simple → errors only, moderate → every 5 actions, complex →
/// every 3). The complexity is the step's `estimated_complexity` (low / score 1–3
/// simple, medium / 4–6 moderate, high / 7–10 complex), else the highest one of
/// the plan's steps, else moderate.
pub fn interval_for(
    configured: Option<u32>,
    planning: &dandori_plan::Planning,
    step: &dandori_plan::Step,
) -> u32 {
    use dandori_plan::{Complexity, ComplexityLevel};
    if let Some(n) = configured {
        return n;
    }
    // 0 simple, 1 moderate, 2 complex
    let rank = |c: Complexity| match c {
        Complexity::Level(ComplexityLevel::Low) => 0,
        Complexity::Level(ComplexityLevel::Medium) => 1,
        Complexity::Level(ComplexityLevel::High) => 2,
        Complexity::Score(n) if n <= 3 => 0,
        Complexity::Score(n) if n <= 6 => 1,
        Complexity::Score(_) => 2,
    };
    let rank = step.estimated_complexity.map(rank).or_else(|| {
        planning
            .steps
            .iter()
            .filter_map(|s| s.estimated_complexity.map(rank))
            .max()
    });
    match rank.unwrap_or(1) {
        0 => 0,
        1 => 5,
        _ => 3,
    }
}

/// Whether action number `n` (1-based, run-wide) is due a periodic reflection.
pub fn interval_due(n: u32, trigger_interval: u32) -> bool {
    trigger_interval > 0 && n > 0 && n.is_multiple_of(trigger_interval)
}

/// What a model reflection is asked about: one action, its result, and the step.
#[derive(Debug, Clone)]
pub struct ReflectionInput<'a> {
    pub step_id: &'a str,
    pub intent: &'a str,
    pub success_criteria: &'a str,
    /// The tool called.
    pub action: &'a str,
    /// Its arguments (JSON text).
    pub arguments: &'a str,
    pub result: &'a str,
    pub result_is_error: bool,
    pub trigger: Trigger,
    /// Issues named by earlier reflections of the step.
    pub issues: &'a [String],
    /// `planning.reflection.depth` (seed 000 §9.1).
    pub depth: ReflectionDepth,
}

pub use dandori_config::ReflectionDepth;

/// How much the model sees and may answer at each `planning.reflection.depth`
/// (before the budget cuts): characters of the result, the arguments, the
/// earlier issues, the success criteria and the intent, and the answer's tokens.
/// `shallow` judges the action from a glimpse of its result and no history;
/// `deep` reads the result at length with every earlier issue and may answer
/// at length.
fn depth_caps(depth: ReflectionDepth) -> ([usize; 5], u64) {
    match depth {
        ReflectionDepth::Shallow => ([300, 120, 0, 200, 200], 100),
        ReflectionDepth::Moderate => ([1200, 300, 300, 400, 400], 160),
        ReflectionDepth::Deep => ([6000, 1200, 1200, 1200, 1200], 400),
    }
}

/// A reflection request that fits its budget: `estimated_tokens` (the llm crate's
/// estimate of both messages) + `max_tokens` ≤ the per-reflection budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectionPrompt {
    pub system: String,
    pub user: String,
    pub estimated_tokens: u64,
    pub max_tokens: u32,
}

/// The reflection rules (seed 000 §8.1.3) and the answer format (§5), compact.
pub const REFLECTION_SYSTEM: &str = "You review one action of a coding step: compare the result with what was expected, name problems, check it fits the step, and revise the plan only if needed. Answer only with JSON: {\"phase\":\"reflection\",\"reflection\":{\"action_evaluated\":\"<tool>\",\"status\":\"success|failure|partial\",\"evaluation\":\"<one sentence>\",\"issues_identified\":[],\"plan_revision_needed\":false},\"plan_revision\":{\"reason\":\"\",\"changes\":[]}}";

/// The answer never gets less than this; a budget that leaves less is too small.
const MIN_ANSWER_TOKENS: u64 = 40;

/// Keeps at most `max` characters of `text`, marking the cut.
fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max {
        return text.to_string();
    }
    if max <= 1 {
        return "…".chars().take(max).collect();
    }
    let head: String = text.chars().take(max - 1).collect();
    format!("{head}…")
}

fn user_text(input: &ReflectionInput<'_>, caps: &[usize; 5]) -> String {
    let [result, args, issues, criteria, intent] = *caps;
    let issues_text = if input.issues.is_empty() || issues == 0 {
        "none".to_string()
    } else {
        clip(&input.issues.join("; "), issues)
    };
    format!(
        "Step {}: {}\nSuccess criteria: {}\nAction ({}): {} {}\nResult ({}): {}\nIssues so far: {}",
        input.step_id,
        clip(input.intent, intent),
        clip(input.success_criteria, criteria),
        input.trigger.as_str(),
        input.action,
        clip(input.arguments, args),
        if input.result_is_error { "error" } else { "ok" },
        clip(input.result, result),
        issues_text,
    )
}

/// Builds the reflection request within `budget` tokens (prompt + answer), sized
/// with [`dandori_llm::estimate_tokens`], the estimate the client admits calls by.
/// The variable parts are cut first (the result, then the arguments, the earlier
/// issues, the success criteria, the intent). `None` when even the fixed text and
/// a minimal answer do not fit.
pub fn prompt(input: &ReflectionInput<'_>, budget: u64) -> Option<ReflectionPrompt> {
    let (mut caps, answer_tokens) = depth_caps(input.depth);
    let answer = answer_tokens.min(budget / 3);
    if answer < MIN_ANSWER_TOKENS {
        return None;
    }
    // The client admits a call when prompt + 1 ≤ budget and caps the answer at the
    // rest; keep the prompt at or under budget - answer.
    let prompt_limit = budget - answer;
    let floors: [usize; 5] = [80, 40, 0, 40, 60];
    loop {
        let user = user_text(input, &caps);
        let estimated = dandori_llm::estimate_tokens(&format!("{REFLECTION_SYSTEM}{user}"));
        if estimated <= prompt_limit {
            return Some(ReflectionPrompt {
                system: REFLECTION_SYSTEM.to_string(),
                user,
                estimated_tokens: estimated,
                max_tokens: u32::try_from(answer).unwrap_or(u32::MAX),
            });
        }
        // Over by this many characters (4 a token); take them from the first part
        // still above its floor.
        let over = usize::try_from((estimated - prompt_limit) * 4).unwrap_or(usize::MAX);
        let i = (0..caps.len()).find(|i| caps[*i] > floors[*i])?;
        caps[i] = caps[i].saturating_sub(over.max(8)).max(floors[i]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_counts_actions() {
        let due: Vec<u32> = (1..=7).filter(|n| interval_due(*n, 3)).collect();
        assert_eq!(due, vec![3, 6]);
        assert!(!interval_due(3, 0));
    }

    fn input<'a>(result: &'a str, issues: &'a [String]) -> ReflectionInput<'a> {
        ReflectionInput {
            step_id: "S01",
            intent: "Add the divide function to calc.py and its unit test.",
            success_criteria: "- tests pass\n- divide by zero raises",
            action: "run_command",
            arguments: r#"{"command":"python -m unittest"}"#,
            result,
            result_is_error: true,
            trigger: Trigger::Error,
            issues,
            depth: ReflectionDepth::Moderate,
        }
    }

    #[test]
    fn depth_sets_how_much_the_model_sees_and_answers() {
        let long = "Traceback line\n".repeat(2000);
        let issues = vec!["the import is missing".to_string()];
        let at = |depth| {
            let mut i = input(&long, &issues);
            i.depth = depth;
            prompt(&i, 8000).unwrap()
        };
        let (shallow, moderate, deep) = (
            at(ReflectionDepth::Shallow),
            at(ReflectionDepth::Moderate),
            at(ReflectionDepth::Deep),
        );
        assert!(shallow.user.len() < moderate.user.len());
        assert!(moderate.user.len() < deep.user.len());
        assert!(shallow.max_tokens < moderate.max_tokens && moderate.max_tokens < deep.max_tokens);
        // Shallow: no history of earlier issues; the others carry it.
        assert!(
            shallow.user.ends_with("Issues so far: none"),
            "{}",
            shallow.user
        );
        assert!(deep.user.contains("the import is missing"));
        // Deep still fits a small budget: the budget cuts win over the depth.
        let mut i = input(&long, &issues);
        i.depth = ReflectionDepth::Deep;
        let p = prompt(&i, 500).unwrap();
        assert!(p.estimated_tokens + u64::from(p.max_tokens) <= 500);
    }

    #[test]
    fn the_prompt_fits_the_default_budget_by_cutting_the_result_first() {
        let long = "Traceback line\n".repeat(2000);
        let issues: Vec<String> = (0..50).map(|i| format!("issue number {i}")).collect();
        let p = prompt(&input(&long, &issues), 500).unwrap();
        let estimate = dandori_llm::estimate_tokens(&format!("{}{}", p.system, p.user));
        assert_eq!(p.estimated_tokens, estimate);
        assert!(estimate + u64::from(p.max_tokens) <= 500, "{estimate}");
        assert!(p.user.contains("Add the divide function"), "{}", p.user);
        assert!(p.user.contains("divide by zero raises"), "{}", p.user);
        assert!(p.user.contains("Result (error): Traceback"), "{}", p.user);
        assert!(p.user.contains("issue number 0"), "{}", p.user);
    }

    #[test]
    fn a_short_result_is_kept_whole_and_a_tiny_budget_gives_none() {
        let p = prompt(&input("FAILED (errors=1)", &[]), 500).unwrap();
        assert!(
            p.user
                .ends_with("Result (error): FAILED (errors=1)\nIssues so far: none"),
            "{}",
            p.user
        );
        assert!(prompt(&input("x", &[]), 100).is_none());
        // About 400 tokens are enough for the fixed text, cut parts and an answer.
        let long = "y".repeat(5000);
        let p = prompt(&input(&long, &[]), 400).unwrap();
        assert!(p.estimated_tokens + u64::from(p.max_tokens) <= 400, "{p:?}");
    }
}
