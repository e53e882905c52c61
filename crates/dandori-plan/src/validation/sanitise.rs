//! Plan sanitisation (seed 000 §12.1.2): the parts of a plan that name files or
//! commands are checked before anything runs. Paths must stay inside the
//! repository; commands are judged by the command policy, which this pure crate
//! does not know: the caller passes it as a [`CommandJudge`] (the CLI and the
//! runner pass `dandori-exec`'s policy), so the dependency points one way.

use serde_json::Value;

use super::{Severity, ValidationReport};
use crate::reason_codes as rc;

/// The policy's answer on a refused or unapproved command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandVerdict {
    /// The policy's reason code, e.g. `POLICY_INFINITE_LOOP`.
    pub code: String,
    /// The policy rule that decided.
    pub rule: String,
    pub message: String,
}

/// Judges one command line: `None` when the policy allows it.
pub trait CommandJudge {
    fn judge(&self, line: &str) -> Option<CommandVerdict>;
}

impl<F: Fn(&str) -> Option<CommandVerdict>> CommandJudge for F {
    fn judge(&self, line: &str) -> Option<CommandVerdict> {
        self(line)
    }
}

/// Sanitisation findings of a parsed planning.json (any shape: parts that are
/// missing or of the wrong type are skipped, structural validation reports them).
pub fn sanitise(plan: &Value, judge: &dyn CommandJudge) -> ValidationReport {
    let mut report = ValidationReport::default();
    if let Some(steps) = plan.get("steps").and_then(Value::as_array) {
        for (i, step) in steps.iter().enumerate() {
            for (key, list) in [
                ("scope.target_paths", step.pointer("/scope/target_paths")),
                (
                    "inputs.context_files",
                    step.pointer("/inputs/context_files"),
                ),
                (
                    "inputs.code_files_hint",
                    step.pointer("/inputs/code_files_hint"),
                ),
            ] {
                for (j, p) in strings(list) {
                    if let Some(why) = path_problem(p) {
                        report.fail(
                            rc::PLAN_PATH_OUTSIDE_REPO,
                            &format!("steps[{i}].{key}[{j}]"),
                            format!("`{p}` {why}"),
                        );
                    }
                }
            }
            for kind in ["unit", "e2e"] {
                for (k, line) in strings(step.pointer(&format!("/commands/{kind}"))) {
                    judge_command(
                        judge,
                        line,
                        &format!("steps[{i}].commands.{kind}[{k}]"),
                        &mut report,
                    );
                }
            }
        }
    }
    for kind in ["unit", "e2e"] {
        if let Some(line) = plan
            .pointer(&format!("/context/test_instructions/{kind}"))
            .and_then(Value::as_str)
        {
            judge_command(
                judge,
                line,
                &format!("context.test_instructions.{kind}"),
                &mut report,
            );
        }
    }
    report
}

fn strings(v: Option<&Value>) -> impl Iterator<Item = (usize, &str)> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .filter_map(|(i, x)| x.as_str().map(|s| (i, s)))
}

/// Why a plan path is not a path inside the repository, if it is not.
fn path_problem(p: &str) -> Option<&'static str> {
    let bytes = p.as_bytes();
    if p.starts_with('/') || p.starts_with('\\') || p.starts_with('~') {
        return Some("is absolute; plan paths are relative to the repository");
    }
    if bytes.len() >= 2 && bytes[1] == b':' && bytes[0].is_ascii_alphabetic() {
        return Some("is an absolute Windows path; plan paths are relative to the repository");
    }
    let mut depth = 0usize;
    for seg in p.split(['/', '\\']) {
        match seg {
            "" | "." => {}
            ".." => {
                if depth == 0 {
                    return Some("leaves the repository");
                }
                depth -= 1;
            }
            ".git" => return Some("points into `.git`"),
            _ => depth += 1,
        }
    }
    None
}

fn judge_command(judge: &dyn CommandJudge, line: &str, path: &str, report: &mut ValidationReport) {
    if line.trim().is_empty() {
        return;
    }
    let Some(v) = judge.judge(line) else { return };
    let (code, severity) = match v.code.as_str() {
        "POLICY_INFINITE_LOOP" => (rc::PLAN_INFINITE_LOOP, Severity::Fail),
        "POLICY_BACKGROUND_PROCESS" => (rc::PLAN_BACKGROUND_PROCESS, Severity::Fail),
        "POLICY_PRIVILEGE_ESCALATION" => (rc::PLAN_PRIVILEGE_ESCALATION, Severity::Fail),
        "POLICY_SECRET_READ" | "POLICY_CREDENTIAL_ACCESS" => (rc::PLAN_SECRET_READ, Severity::Fail),
        "POLICY_NOT_ALLOWED" => (rc::PLAN_COMMAND_NEEDS_APPROVAL, Severity::Warn),
        _ => (rc::PLAN_COMMAND_REFUSED, Severity::Fail),
    };
    report.push(
        code,
        severity,
        path,
        format!("`{line}`: {} [{}]: {}", v.code, v.rule, v.message),
    );
}

#[cfg(test)]
mod tests {
    use super::path_problem;

    #[test]
    fn paths() {
        assert_eq!(path_problem("src/app.py"), None);
        assert_eq!(path_problem("src/../tests/x.py"), None);
        assert!(path_problem("../x").is_some());
        assert!(path_problem("src/../../x").is_some());
        assert!(path_problem("/etc/passwd").is_some());
        assert!(path_problem("~/.bashrc").is_some());
        assert!(path_problem("C:\\x").is_some());
        assert!(path_problem(".git/hooks/pre-commit").is_some());
    }
}
