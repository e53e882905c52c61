//! The rule classes of the command policy, one file per class with its hostile
//! and legitimate lines beside it. Every rule refuses with a reason code
//! (`codes`) and a rule name.

mod build_tools;
mod destructive;
mod environment;
mod exec_options;
mod filesystem;
mod find;
mod git;
mod git_config;
mod interpreters;
mod lifetime;
mod line_code;
mod listen;
mod network;
mod runners;
mod secrets;
mod system;
mod wrappers;

pub(super) use destructive::*;
pub(super) use exec_options::*;
pub(super) use filesystem::*;
pub(super) use git_config::*;
pub(super) use interpreters::*;
pub(super) use lifetime::*;
pub(super) use line_code::*;
pub(super) use listen::*;
pub(super) use network::*;
pub(super) use runners::*;
pub(super) use secrets::*;
pub(super) use system::*;
pub(super) use wrappers::*;

use std::sync::OnceLock;

use regex::Regex;

use super::lexer::Word;
use super::paths::{self, LineState, Place, SAFE_DEVICES, normalize_abs, under};
use super::{CommandPolicy, PolicyViolation, SimpleCommand, codes};

/// Shells: code given to them is a command line of its own.
pub(crate) const EVAL: &[&str] = &["eval", "source", ".", "trap", "alias"];
pub(crate) const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox",
];
pub(crate) const INTERPRETERS: &[&str] = &[
    "python",
    "python3",
    "perl",
    "ruby",
    "node",
    "php",
    "lua",
    "osascript",
    "pwsh",
];

/// A program name without its version suffix: `python3.11` → `python`.
pub(crate) fn version_stem(program: &str) -> &str {
    program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

pub(crate) fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

pub(crate) fn refuse(
    code: &'static str,
    rule: &'static str,
    msg: String,
) -> Result<(), PolicyViolation> {
    Err(PolicyViolation::new(code, msg).with_rule(rule))
}

pub(crate) fn unresolved(
    rule: &'static str,
    what: &str,
    shown: &str,
) -> Result<(), PolicyViolation> {
    refuse(
        codes::POLICY_UNRESOLVED_EXPANSION,
        rule,
        format!("{what} `{shown}` depends on an expansion the policy cannot resolve"),
    )
}

/// Arguments of one program with their words, for resolution.
pub(crate) struct Args<'a> {
    pub args: &'a [String],
    pub words: &'a [Word],
}

pub(crate) fn operand_indices(args: &[String], value_opts: &[&str]) -> Vec<usize> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut end_of_opts = false;
    while i < args.len() {
        let a = &args[i];
        if !end_of_opts && a == "--" {
            end_of_opts = true;
        } else if !end_of_opts && a.starts_with('-') && a.len() > 1 {
            if value_opts.contains(&a.as_str()) {
                i += 1;
            }
        } else {
            out.push(i);
        }
        i += 1;
    }
    out
}

pub(crate) fn inline_or_next_exists(arg: &str, i: usize, args: &[String]) -> bool {
    arg.contains('=') || i + 1 < args.len()
}

/// The subcommand: the first word that is neither an option nor the value of the
/// option before it (`npm --registry URL publish` → `publish`). An option's value
/// is guessed: a word after a long option without `=`, or after a short option
/// of one letter, counts as its value when another plain word follows.
pub(crate) fn subcommand(args: &[String]) -> &str {
    let plain: Vec<usize> = (0..args.len())
        .filter(|&i| !args[i].starts_with('-'))
        .collect();
    for (k, &i) in plain.iter().enumerate() {
        let after_option = i > 0 && {
            let prev = args[i - 1].as_str();
            (prev.starts_with("--") && !prev.contains('='))
                || (prev.len() == 2 && prev.starts_with('-'))
        };
        if !after_option || k + 1 == plain.len() {
            return &args[i];
        }
    }
    ""
}

impl Args<'_> {
    /// The resolved value of argument `i` (`None`: unknown).
    pub fn value(&self, i: usize, st: &LineState) -> Option<String> {
        match self.words.get(i) {
            Some(w) if w.text == self.args[i] => paths::resolve(w, st),
            _ => Some(self.args[i].clone()),
        }
    }
}

/// What every class file's tests share: the policy of `run_command` (the tool
/// loop adds `sh` and `bash`) and the check of a class's hostile and legitimate
/// lines.
#[cfg(test)]
pub(crate) mod class_test {
    use pretty_assertions::assert_eq;

    use crate::policy::{CommandPolicy, Decision};

    fn policy() -> CommandPolicy {
        let mut config = dandori_config::CommandPolicyConfig::default();
        config
            .allowed_commands
            .extend(["sh".to_string(), "bash".to_string()]);
        CommandPolicy::new(&config).expect("the default config builds a policy")
    }

    /// Every hostile line is refused with its code, every legitimate one allowed.
    pub(crate) fn check(hostile: &[(&str, &str)], legitimate: &[&str]) {
        let p = policy();
        let wrong: Vec<(&str, String)> = hostile
            .iter()
            .filter_map(|(line, code)| {
                let v = p.evaluate(line);
                (v.decision != Decision::Refused || v.code != Some(*code)).then(|| {
                    (
                        *line,
                        format!("{:?} {:?} {}", v.decision, v.code, v.message),
                    )
                })
            })
            .collect();
        assert_eq!(wrong, Vec::<(&str, String)>::new(), "hostile lines");
        let refused: Vec<(&str, String)> = legitimate
            .iter()
            .filter_map(|line| {
                let v = p.evaluate(line);
                (v.decision != Decision::Allowed)
                    .then(|| (*line, format!("{:?} {}", v.code, v.message)))
            })
            .collect();
        assert_eq!(refused, Vec::<(&str, String)>::new(), "legitimate lines");
    }
}
