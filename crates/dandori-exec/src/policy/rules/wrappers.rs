//! Programs that run another program given as an argument (`env`, `timeout`,
//! `xargs`, `nohup`, …): the program they run is checked as if it stood alone.
//!
//! Hostile lines: classes `xargs`, `wrappers_and_tools` and `loops_background` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

/// Programs that run another program given as an argument.
pub(crate) const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "time", "stdbuf", "xargs", "command", "builtin", "ionice",
    "setsid", "exec", "strace", "ltrace", "chronic", "unbuffer",
];

/// Wrappers whose program keeps running after the command returns.
pub(crate) const BACKGROUND_WRAPPERS: &[&str] = &["nohup", "setsid"];

/// The program a simple command finally runs, through wrappers.
pub(crate) fn effective_program(cmd: &SimpleCommand) -> &str {
    let mut program = basename(&cmd.program);
    let mut args: &[String] = &cmd.args;
    for _ in 0..8 {
        if !WRAPPERS.contains(&program) {
            break;
        }
        match wrapped_command(program, args) {
            Some(i) => {
                program = basename(&args[i]);
                args = &args[i + 1..];
            }
            None => break,
        }
    }
    program
}

/// Index in `args` of the program a wrapper runs, if any.
pub(crate) fn wrapped_command(wrapper: &str, args: &[String]) -> Option<usize> {
    let mut i = 0;
    let mut skipped_duration = false;
    while i < args.len() {
        let a = &args[i];
        if a == "--" {
            return (i + 1 < args.len()).then_some(i + 1);
        }
        if a.starts_with('-') {
            // Options that take a separate value.
            let takes_value = match wrapper {
                "env" => matches!(a.as_str(), "-u" | "-C" | "-S" | "--unset" | "--chdir"),
                "nice" => a == "-n",
                "timeout" => matches!(a.as_str(), "-s" | "-k" | "--signal" | "--kill-after"),
                "xargs" => matches!(a.as_str(), "-I" | "-n" | "-P" | "-d" | "-L" | "-s" | "-a"),
                "ionice" => matches!(a.as_str(), "-c" | "-n" | "-p"),
                "watch" => matches!(a.as_str(), "-n" | "-d"),
                _ => false,
            };
            i += if takes_value { 2 } else { 1 };
            continue;
        }
        if wrapper == "env" && a.split_once('=').is_some_and(|(n, _)| is_name(n)) {
            i += 1;
            continue;
        }
        if wrapper == "timeout" && !skipped_duration {
            skipped_duration = true;
            i += 1;
            continue;
        }
        return Some(i);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("timeout 5 sudo id", POLICY_PRIVILEGE_ESCALATION),
                ("nohup make serve", POLICY_BACKGROUND_PROCESS),
                ("find . -name x | xargs rm", POLICY_UNRESOLVED_EXPANSION),
                ("env -C /srv make", POLICY_OUTSIDE_WORKTREE),
                ("nice -n 5 env", POLICY_SECRET_READ),
            ],
            &[
                "timeout 300 cargo test",
                "nice -n 10 make -j2",
                "env -C docs make html",
                "find src -name \"*.py\" | xargs wc -l",
            ],
        );
    }
}
