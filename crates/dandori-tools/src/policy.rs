//! Which tools may be called (seed 000 §12.1.1): `allowed_tools` / `forbidden_tools`
//! / `require_approval` globs over tool names, and the approver that answers when a
//! call needs approval.

use std::io::{BufRead, IsTerminal, Write};
use std::sync::Mutex;

use dandori_config::SecurityConfig;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde_json::Value;

use crate::error::ToolsError;
use crate::spec::{ReasonCode, ToolError};

/// The tool-name rules of one run, built from `planning.security`.
#[derive(Debug, Clone)]
pub struct ToolPolicy {
    allowed: Option<GlobSet>,
    forbidden: GlobSet,
    approval: GlobSet,
    forbid_gh: bool,
}

/// What the policy says about a tool name before anyone is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyDecision {
    Allow,
    NeedsApproval,
    Refuse(ToolError),
}

impl Default for ToolPolicy {
    fn default() -> Self {
        ToolPolicy {
            allowed: None,
            forbidden: GlobSet::empty(),
            approval: GlobSet::empty(),
            forbid_gh: true,
        }
    }
}

impl ToolPolicy {
    /// `forbid_gh` comes from the plan's gates (seed 004 §3.5; always true in v1).
    pub fn from_config(security: &SecurityConfig, forbid_gh: bool) -> Result<Self, ToolsError> {
        let allowed = if security.allowed_tools.is_empty() {
            None
        } else {
            Some(globs(
                "planning.security.allowed_tools",
                &security.allowed_tools,
            )?)
        };
        Ok(ToolPolicy {
            allowed,
            forbidden: globs(
                "planning.security.forbidden_tools",
                &security.forbidden_tools,
            )?,
            approval: globs(
                "planning.security.require_approval",
                &security.require_approval,
            )?,
            forbid_gh,
        })
    }

    pub fn forbid_gh(&self) -> bool {
        self.forbid_gh
    }

    /// Forbidden wins over allowed; an empty allow list allows everything.
    pub fn decide(&self, tool: &str) -> PolicyDecision {
        if self.forbidden.is_match(tool) {
            return PolicyDecision::Refuse(ToolError::new(
                ReasonCode::ToolForbidden,
                format!("tool `{tool}` matches planning.security.forbidden_tools"),
            ));
        }
        if let Some(allowed) = &self.allowed
            && !allowed.is_match(tool)
        {
            return PolicyDecision::Refuse(ToolError::new(
                ReasonCode::ToolNotAllowed,
                format!("tool `{tool}` matches no pattern of planning.security.allowed_tools"),
            ));
        }
        if self.approval.is_match(tool) {
            return PolicyDecision::NeedsApproval;
        }
        PolicyDecision::Allow
    }

    /// Whether a tool is offered to the model at all.
    pub fn is_visible(&self, tool: &str) -> bool {
        !matches!(self.decide(tool), PolicyDecision::Refuse(_))
    }
}

fn globs(what: &'static str, patterns: &[String]) -> Result<GlobSet, ToolsError> {
    let mut builder = GlobSetBuilder::new();
    for pattern in patterns {
        let glob = Glob::new(pattern).map_err(|e| ToolsError::Glob {
            what,
            pattern: pattern.clone(),
            message: e.to_string(),
        })?;
        builder.add(glob);
    }
    builder.build().map_err(|e| ToolsError::Glob {
        what,
        pattern: patterns.join(", "),
        message: e.to_string(),
    })
}

/// A call waiting for approval.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest<'a> {
    pub tool: &'a str,
    pub arguments: &'a Value,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    Approved,
    Denied { reason: String },
}

/// Answers calls that match `require_approval`.
pub trait Approver: Send + Sync {
    fn approve(&self, request: &ApprovalRequest<'_>) -> ApprovalDecision;
}

/// `--approve`: every call that needs approval is approved.
#[derive(Debug, Clone, Copy, Default)]
pub struct AutoApprove;

impl Approver for AutoApprove {
    fn approve(&self, _request: &ApprovalRequest<'_>) -> ApprovalDecision {
        ApprovalDecision::Approved
    }
}

/// Not on a terminal and no `--approve`: every call that needs approval is denied.
#[derive(Debug, Clone, Copy, Default)]
pub struct DenyNonInteractive;

impl Approver for DenyNonInteractive {
    fn approve(&self, request: &ApprovalRequest<'_>) -> ApprovalDecision {
        ApprovalDecision::Denied {
            reason: format!(
                "tool `{}` requires approval (planning.security.require_approval) and dandori is not running on a terminal; rerun with --approve to approve it",
                request.tool
            ),
        }
    }
}

/// Asks on a terminal: writes the question to `prompt`, reads one line from `answers`;
/// `y` / `yes` approves, anything else (or end of input) denies.
pub struct TerminalApprover<R, W> {
    io: Mutex<(R, W)>,
}

impl<R: BufRead + Send, W: Write + Send> TerminalApprover<R, W> {
    pub fn new(answers: R, prompt: W) -> Self {
        TerminalApprover {
            io: Mutex::new((answers, prompt)),
        }
    }
}

impl<R: BufRead + Send, W: Write + Send> Approver for TerminalApprover<R, W> {
    fn approve(&self, request: &ApprovalRequest<'_>) -> ApprovalDecision {
        let Ok(mut io) = self.io.lock() else {
            return ApprovalDecision::Denied {
                reason: "the approval prompt is unusable (poisoned lock)".to_string(),
            };
        };
        let (answers, prompt) = &mut *io;
        let mut args = request.arguments.to_string();
        if args.len() > 400 {
            let cut = (0..=400)
                .rev()
                .find(|i| args.is_char_boundary(*i))
                .unwrap_or(0);
            args.truncate(cut);
            args.push('…');
        }
        let asked = writeln!(prompt, "dandori: tool `{}` requires approval", request.tool)
            .and_then(|()| writeln!(prompt, "  arguments: {args}"))
            .and_then(|()| write!(prompt, "  approve? [y/N] "))
            .and_then(|()| prompt.flush());
        if let Err(e) = asked {
            return ApprovalDecision::Denied {
                reason: format!("could not ask for approval: {e}"),
            };
        }
        let mut line = String::new();
        match answers.read_line(&mut line) {
            Ok(_) => {
                let answer = line.trim().to_ascii_lowercase();
                if answer == "y" || answer == "yes" {
                    ApprovalDecision::Approved
                } else {
                    ApprovalDecision::Denied {
                        reason: format!("the user declined tool `{}`", request.tool),
                    }
                }
            }
            Err(e) => ApprovalDecision::Denied {
                reason: format!("could not read the approval answer: {e}"),
            },
        }
    }
}

/// The approver of a CLI session: `--approve` → [`AutoApprove`]; stdin a terminal →
/// [`TerminalApprover`] on stdin/stderr; otherwise [`DenyNonInteractive`].
pub fn session_approver(approve_flag: bool) -> Box<dyn Approver> {
    if approve_flag {
        Box::new(AutoApprove)
    } else if std::io::stdin().is_terminal() {
        Box::new(TerminalApprover::new(
            std::io::BufReader::new(std::io::stdin()),
            std::io::stderr(),
        ))
    } else {
        Box::new(DenyNonInteractive)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn security(allowed: &[&str], forbidden: &[&str], approval: &[&str]) -> SecurityConfig {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        SecurityConfig {
            allowed_tools: v(allowed),
            forbidden_tools: v(forbidden),
            require_approval: v(approval),
        }
    }

    #[test]
    fn forbidden_wins_then_allowed_then_approval() {
        let policy = ToolPolicy::from_config(
            &security(
                &["read_*", "git_*", "fs__*"],
                &["*_admin_*", "git_diff"],
                &["fs__write*"],
            ),
            true,
        )
        .unwrap();
        let code = |t: &str| match policy.decide(t) {
            PolicyDecision::Refuse(e) => Some(e.code),
            PolicyDecision::Allow | PolicyDecision::NeedsApproval => None,
        };
        assert_eq!(policy.decide("read_file"), PolicyDecision::Allow);
        assert_eq!(code("git_diff"), Some(ReasonCode::ToolForbidden));
        assert_eq!(code("read_admin_x"), Some(ReasonCode::ToolForbidden));
        assert_eq!(code("write_file"), Some(ReasonCode::ToolNotAllowed));
        assert_eq!(
            policy.decide("fs__write_file"),
            PolicyDecision::NeedsApproval
        );
    }

    #[test]
    fn bad_glob_names_the_key() {
        let err = ToolPolicy::from_config(&security(&[], &["a[b"], &[]), true).unwrap_err();
        assert!(
            err.to_string()
                .contains("planning.security.forbidden_tools"),
            "{err}"
        );
    }

    #[test]
    fn terminal_approver_reads_answers() {
        let args = json!({"path": "a"});
        let req = ApprovalRequest {
            tool: "write_file",
            arguments: &args,
        };
        let yes = TerminalApprover::new(std::io::Cursor::new(b"yes\n".to_vec()), Vec::new());
        assert_eq!(yes.approve(&req), ApprovalDecision::Approved);
        let no = TerminalApprover::new(std::io::Cursor::new(b"\n".to_vec()), Vec::new());
        assert!(matches!(no.approve(&req), ApprovalDecision::Denied { .. }));
        let eof = TerminalApprover::new(std::io::Cursor::new(Vec::new()), Vec::new());
        assert!(matches!(eof.approve(&req), ApprovalDecision::Denied { .. }));
        assert!(matches!(
            DenyNonInteractive.approve(&req),
            ApprovalDecision::Denied { .. }
        ));
    }
}
