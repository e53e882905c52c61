//! The command policy of seed 002 §11.1: an executable allowlist plus forbidden
//! patterns. A line is split the way a POSIX shell would split it (quotes,
//! escapes, `;`, `&&`, `||`, `|`, `&`, subshells, redirections, `$(…)`, backticks)
//! and every simple command of the chain, including those inside command
//! substitutions and behind wrappers such as `env` or `timeout`, is checked.
//! Nothing is matched as a substring of the raw line.
//!
//! Layout: `lexer` splits words, `parser` builds simple commands, `dispatch`
//! walks them and hands each program to the rule classes of `rules/` (one file
//! per class, with its hostile and legitimate lines); `paths` classifies paths,
//! `allowlist` holds the executables allowed.

mod allowlist;
pub mod codes;
mod dispatch;
mod lexer;
mod parser;
mod paths;
mod rules;
mod symlinks;
mod verdict;

pub use allowlist::DEFAULT_ALLOWED_COMMANDS;
pub use verdict::{Decision, Verdict};

use std::collections::BTreeSet;

use dandori_config::CommandPolicyConfig;
use regex::Regex;
use serde::Serialize;

use crate::ExecError;
use lexer::Word;

/// Longest command line accepted.
pub const MAX_LINE_LEN: usize = 16 * 1024;

/// Why a command line was refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct PolicyViolation {
    /// One of [`codes`].
    pub code: &'static str,
    /// The rule that decided, e.g. `git-exec-config`, `write-outside`; by default
    /// the code in kebab case without its `POLICY_` prefix.
    pub rule: String,
    pub message: String,
}

impl PolicyViolation {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        PolicyViolation {
            code,
            rule: code
                .trim_start_matches("POLICY_")
                .to_ascii_lowercase()
                .replace('_', "-"),
            message: message.into(),
        }
    }

    /// Names the rule that decided.
    pub fn with_rule(mut self, rule: &str) -> Self {
        self.rule = rule.to_string();
        self
    }
}

/// A redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Redirection {
    pub operator: String,
    pub target: String,
    /// The target as lexed, for resolving its expansions.
    #[serde(skip)]
    pub(crate) word: Word,
}

/// One simple command of a checked line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SimpleCommand {
    /// Leading `NAME=value` words.
    pub assignments: Vec<(String, String)>,
    /// Empty when the command is only assignments or redirections.
    pub program: String,
    pub args: Vec<String>,
    pub redirections: Vec<Redirection>,
    /// 0 for the first command of a pipeline, 1 for the one reading its output, …
    pub pipe_position: usize,
    /// `words[0]` is the program word, `words[1..]` line up with `args`.
    #[serde(skip)]
    pub(crate) words: Vec<Word>,
    /// Assignment and redirection-target words.
    #[serde(skip)]
    pub(crate) other_words: Vec<Word>,
}

/// A command line that passed the policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ParsedCommand {
    /// The line as given.
    pub line: String,
    pub commands: Vec<SimpleCommand>,
    /// Control operators between the commands, in order.
    pub operators: Vec<String>,
    /// True when the line needs `sh -c` (operators, redirections, assignments,
    /// expansions, shell builtins); false when `commands[0]` can be spawned as is.
    pub needs_shell: bool,
}

/// The command policy. Build it from config with [`CommandPolicy::new`]; the
/// default is the built-in policy.
#[derive(Debug, Clone)]
pub struct CommandPolicy {
    pub(crate) allowed: BTreeSet<String>,
    pub(crate) forbidden: Vec<(String, Regex)>,
    /// The worktree and other writable directories as absolute paths: absolute
    /// paths under them are inside.
    pub(crate) roots: Vec<String>,
    /// `$HOME` by value ([`CommandPolicy::with_home`]).
    pub(crate) home: Option<String>,
}

impl Default for CommandPolicy {
    fn default() -> Self {
        CommandPolicy {
            allowed: DEFAULT_ALLOWED_COMMANDS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            forbidden: Vec::new(),
            roots: Vec::new(),
            home: None,
        }
    }
}

impl CommandPolicy {
    /// The built-in policy extended by `config`: `allowed_commands` are added to
    /// the allowlist, `forbidden_patterns` are regexes matched against every simple
    /// command (its words joined by single spaces).
    pub fn new(config: &CommandPolicyConfig) -> Result<Self, ExecError> {
        let mut policy = CommandPolicy::default();
        policy
            .allowed
            .extend(config.allowed_commands.iter().cloned());
        for p in &config.forbidden_patterns {
            let re = Regex::new(p).map_err(|e| ExecError::InvalidPattern {
                pattern: p.clone(),
                message: e.to_string(),
            })?;
            policy.forbidden.push((p.clone(), re));
        }
        Ok(policy)
    }

    /// Absolute paths under `root` count as inside the worktree (without a root,
    /// only relative paths that stay below the working directory do). Call it for
    /// the worktree and for every other directory commands may write to.
    pub fn with_root(mut self, root: &std::path::Path) -> Self {
        self.roots
            .push(paths::normalize_abs(&root.to_string_lossy()));
        self
    }

    /// The user's home directory by value: absolute paths under it are treated as
    /// `~/…` (start-up files, credential stores), wherever `$HOME` is — not only
    /// under /home or /root.
    pub fn with_home(mut self, home: &std::path::Path) -> Self {
        let h = paths::normalize_abs(&home.to_string_lossy());
        self.home = (home.is_absolute() && h != "/").then_some(h);
        self
    }

    /// The three-way verdict on `line`: allowed, refused, or needs approval (only
    /// an executable missing from the allowlist, with nothing else wrong).
    pub fn evaluate(&self, line: &str) -> Verdict {
        Verdict::of(line, self.check(line))
    }

    /// The executables allowed, sorted.
    pub fn allowed_commands(&self) -> impl Iterator<Item = &str> {
        self.allowed.iter().map(String::as_str)
    }

    /// Parses `line` as a shell would and checks every simple command in it.
    pub fn check(&self, line: &str) -> Result<ParsedCommand, PolicyViolation> {
        self.check_depth(line, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_command_runs_without_shell() {
        let p = CommandPolicy::default()
            .check("uv pip install -r 'requirements dev.txt'")
            .unwrap();
        assert!(!p.needs_shell);
        assert_eq!(p.commands[0].program, "uv");
        assert_eq!(
            p.commands[0].args,
            vec!["pip", "install", "-r", "requirements dev.txt"]
        );
    }

    #[test]
    fn chain_is_split() {
        let p = CommandPolicy::default()
            .check("cd web && npm ci 2>&1 | tee ../npm.log")
            .unwrap();
        assert!(p.needs_shell);
        let progs: Vec<_> = p.commands.iter().map(|c| c.program.as_str()).collect();
        assert_eq!(progs, vec!["cd", "npm", "tee"]);
        assert_eq!(p.operators, vec!["&&", "|"]);
    }
}
