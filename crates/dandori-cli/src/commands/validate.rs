//! `dandori validate FILE|RUN_DIR [--json]`: exit 0 without FAIL findings, 1 with
//! (a JSON syntax error in a plan, `JSON_PARSE_ERROR`, is one), 2 for usage or IO
//! errors (returned as `Err`) and for input that is not a plan at all (a README:
//! not even the start of a JSON document).
//! Includes plan sanitisation (seed 000 §12.1.2) with the built-in command policy
//! as judge.

use std::process::ExitCode;

use dandori_plan::validation::{self, Finding, Severity};

use crate::cli::ValidateArgs;
use crate::output;

pub fn validate(args: &ValidateArgs) -> anyhow::Result<ExitCode> {
    let (path, bytes) = super::read_planning(&args.file)?;
    // Plan sanitisation judges commands with the policy of `run_command`.
    let policy = dandori_tools::tool_command_policy(&Default::default())
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let judge = |line: &str| dandori_runner::plan::command_verdict(&policy, line);
    let report = validation::validate_bytes_with(&bytes, &judge);
    let file = path.display();
    // Not JSON at all: the wrong file was passed (a usage error), not a bad plan.
    // A document that starts like JSON (`{` or `[`) but does not parse is a plan
    // with a syntax error: a FAIL finding like any other.
    let not_json = report
        .errors()
        .any(|f| f.code == dandori_plan::reason_codes::JSON_PARSE_ERROR)
        && !starts_like_json(&bytes);
    if args.json {
        output::json(&report.output());
    } else {
        for f in &report.findings {
            output::line(&format!("{file}: {}", finding_line(f)));
        }
        let errors = report.errors().count();
        let warnings = report.warnings().count();
        let verdict = if report.has_fail() { "fail" } else { "ok" };
        output::line(&format!(
            "{file}: {verdict} ({errors} error{}, {warnings} warning{})",
            plural(errors),
            plural(warnings)
        ));
    }
    if not_json {
        output::error(&format!(
            "{}: {file} is not JSON; pass a planning.json or a run directory (.dandori/runs/<request-id>/<run-id>)",
            dandori_plan::reason_codes::JSON_PARSE_ERROR
        ));
        return Ok(ExitCode::from(2));
    }
    Ok(if report.has_fail() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The first byte after whitespace (and a UTF-8 byte-order mark) opens a JSON
/// object or array.
fn starts_like_json(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    matches!(
        bytes.iter().find(|b| !b.is_ascii_whitespace()),
        Some(b'{' | b'[')
    )
}

/// `FAIL AC_TOO_FEW context.acceptance_criteria: 2 acceptance criteria, …`
pub(crate) fn finding_line(f: &Finding) -> String {
    let severity = match f.severity {
        Severity::Fail => "FAIL",
        Severity::Warn => "WARN",
    };
    format!("{severity} {} {}: {}", f.code, f.path, f.message)
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}
