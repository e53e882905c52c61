//! The step prompt given to an executor: intent, scope, inputs, success criteria
//! and the linked acceptance criteria, the prepared environment (seed 002 §7.2),
//! plus feedback from a failed attempt.

use std::fmt::Write;

use dandori_plan::{Planning, Step};

/// Why the step is being run again.
#[derive(Debug, Clone, PartialEq)]
pub enum Feedback {
    /// Unit commands failed; the output tail is given back (seed 004 §5 autofix).
    UnitFailure { cycle: u64, output: String },
    /// Seed 004 §2: the unit commands failed by several tests after every fix
    /// attempt; the step's work was reset and it is done again from a new design
    /// (plan revision `revision` of `max_revisions`).
    Replan {
        revision: u32,
        max_revisions: u32,
        failures: Vec<String>,
        output: String,
    },
    /// The step was split after STEP_TOO_LARGE: do only part `part` of `parts`.
    SplitPart {
        part: u32,
        parts: u32,
        previous_lines: u64,
        limit: u64,
    },
}

/// The text of a `## heading` section of a prompt [`build`] wrote (empty when the
/// prompt has none): how the LLM loop finds the step's intent and success criteria.
pub fn section<'a>(prompt: &'a str, heading: &str) -> &'a str {
    let start = format!("## {heading}\n");
    let Some(at) = prompt
        .match_indices(&start)
        .find(|(i, _)| *i == 0 || prompt[..*i].ends_with('\n'))
        .map(|(i, _)| i + start.len())
    else {
        return "";
    };
    let rest = &prompt[at..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    rest[..end].trim()
}

/// The heading of the step's `suggested_persona` (seed 001 §10.3).
pub const PERSONA_HEADING: &str = "Persona";
/// The heading of the step's `suggested_tools` (seed 001 §10.3).
pub const TOOLS_HEADING: &str = "Suggested tools";

/// The heading of the seed 002 §7.2 section.
pub const ENVIRONMENT_HEADING: &str = "Execution environment";

pub fn build(
    planning: &Planning,
    step: &Step,
    feedback: Option<&Feedback>,
    environment: Option<&str>,
) -> String {
    let mut p = String::new();
    let _ = writeln!(
        p,
        "You are working on step {} of a plan: {}",
        step.step_id, step.title
    );
    // Seed 001 §10.3 `SuggestedPersona` / `SuggestedTools`: the planner's advice
    // on how to work this step.
    if let Some(persona) = step
        .suggested_persona
        .as_deref()
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let _ = writeln!(p, "\n## {PERSONA_HEADING}\nWork as: {persona}");
    }
    let _ = writeln!(p, "\n## Request\n{}", planning.context.summary);
    let _ = writeln!(p, "\n## Intent\n{}", step.intent);
    let _ = writeln!(p, "\n## Scope");
    let _ = writeln!(p, "- change only: {}", step.scope.target_paths.join(", "));
    if let Some(f) = step
        .scope
        .forbidden_paths
        .as_ref()
        .filter(|f| !f.is_empty())
    {
        let _ = writeln!(p, "- never touch: {}", f.join(", "));
    }
    let _ = writeln!(
        p,
        "- at most {} changed lines{}",
        step.scope.max_diff_lines,
        step.scope
            .max_files_changed
            .map(|n| format!(" in at most {n} files"))
            .unwrap_or_default()
    );
    if let Some(b) = &step.boundaries {
        if !b.in_scope.is_empty() {
            let _ = writeln!(p, "- in scope: {}", b.in_scope.join("; "));
        }
        if !b.out_of_scope.is_empty() {
            let _ = writeln!(p, "- out of scope: {}", b.out_of_scope.join("; "));
        }
    }
    let _ = writeln!(p, "\n## Inputs\n- request: {}", step.inputs.request_path);
    for f in step.inputs.context_files.iter().flatten() {
        let _ = writeln!(p, "- context: {f}");
    }
    for f in step.inputs.code_files_hint.iter().flatten() {
        let _ = writeln!(p, "- code: {f}");
    }
    if let Some(tools) = step.suggested_tools.as_ref().filter(|t| !t.is_empty()) {
        let _ = writeln!(
            p,
            "\n## {TOOLS_HEADING}\nThe plan suggests these tools for this step (others stay allowed):"
        );
        for t in tools {
            let _ = writeln!(p, "- {t}");
        }
    }
    let _ = writeln!(p, "\n## Success criteria");
    for c in &step.success_criteria {
        let _ = writeln!(p, "- {c}");
    }
    let acs: Vec<_> = planning
        .context
        .acceptance_criteria
        .iter()
        .filter(|ac| step.links_to_ac.contains(&ac.id))
        .collect();
    if !acs.is_empty() {
        let _ = writeln!(p, "\n## Acceptance criteria");
        for ac in acs {
            let _ = writeln!(
                p,
                "- {}: Given {}, when {}, then {}",
                ac.id, ac.given, ac.when, ac.then
            );
        }
    }
    if !planning.context.constraints.is_empty() {
        let _ = writeln!(p, "\n## Constraints");
        for c in &planning.context.constraints {
            let _ = writeln!(p, "- {c}");
        }
    }
    if let Some(env) = environment.map(str::trim).filter(|e| !e.is_empty()) {
        let _ = writeln!(p, "\n## {ENVIRONMENT_HEADING}\n{env}");
    }
    if let Some(unit) = step.commands.unit.as_ref().filter(|u| !u.is_empty()) {
        let _ = writeln!(p, "\n## Tests run after you finish\n{}", unit.join("\n"));
    }
    match feedback {
        None => {}
        Some(Feedback::UnitFailure { cycle, output }) => {
            let _ = writeln!(
                p,
                "\n## Fix attempt {cycle}\nThe unit commands failed after your change. Fix the code so they pass. Output:\n```\n{output}\n```"
            );
        }
        Some(Feedback::Replan {
            revision,
            max_revisions,
            failures,
            output,
        }) => {
            let _ = writeln!(
                p,
                "\n## Replan (plan revision {revision} of {max_revisions})\nA previous attempt at this step kept failing several tests after every fix attempt: {}. Its design did not work, so its changes were discarded and the working tree is back at the step's starting commit. Design the change anew (another approach, not the same one again), then implement it so the tests pass. Last output:\n```\n{output}\n```",
                failures.join(", ")
            );
        }
        Some(Feedback::SplitPart {
            part,
            parts,
            previous_lines,
            limit,
        }) => {
            let _ = writeln!(
                p,
                "\n## Split step: part {part} of {parts}\nThe whole step changed {previous_lines} lines, over the limit of {limit}. It is split into {parts} parts, committed one by one. Do only part {part} of {parts} now (at most {limit} lines); earlier parts are already in the working tree."
            );
        }
    }
    let _ = writeln!(
        p,
        "\nDo not commit; dandori commits the step. Do not use `gh`."
    );
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn section_reads_one_heading_up_to_the_next() {
        let p = "You are working on step S01\n\n## Intent\nAdd divide.\n\n## Success criteria\n- tests pass\n- no warnings\n\n## Constraints\n- none\n";
        assert_eq!(section(p, "Intent"), "Add divide.");
        assert_eq!(
            section(p, "Success criteria"),
            "- tests pass\n- no warnings"
        );
        assert_eq!(section(p, "Acceptance criteria"), "");
    }
}
