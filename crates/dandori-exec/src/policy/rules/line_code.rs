//! Code a line supplies to itself: a makefile read from stdin (`make -f
//! /dev/stdin`, `make -f -`), and a script the line writes and then runs
//! (`echo … > run.sh && sh run.sh`, `tee go.sh`, `. ./hook.sh`). Either way the
//! policy never sees the commands that run: they are data of the line.
//!
//! Hostile and legitimate lines: classes `stdin_makefile` and `write_then_execute`
//! of `tests/fixtures/policy/hostile.txt`.

use super::paths::LineState;
use super::{PolicyViolation, codes};

pub(crate) const MAKES: &[&str] = &["make", "gmake", "bmake", "remake"];
/// Names of this process's stdin.
const STDIN_FILES: &[&str] = &["-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// `make -f FILE` / `--file=FILE` / `--makefile FILE` / `-fFILE` with FILE stdin.
pub(crate) fn check_makefile(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
    if !MAKES.contains(&base) {
        return Ok(());
    }
    for (i, a) in args.iter().enumerate() {
        let file = match a.as_str() {
            "-f" | "--file" | "--makefile" => args.get(i + 1).map(String::as_str),
            _ => a
                .strip_prefix("--file=")
                .or_else(|| a.strip_prefix("--makefile="))
                .or_else(|| a.strip_prefix("-f").filter(|f| !f.is_empty())),
        };
        if let Some(f) = file.filter(|f| STDIN_FILES.contains(f)) {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!("`{base} -f {f}` runs a makefile read from stdin"),
            )
            .with_rule("stdin-makefile"));
        }
    }
    Ok(())
}

/// Records the files `base` writes as operands (`tee FILE`).
pub(crate) fn record_writes(base: &str, args: &[String], st: &mut LineState) {
    if base == "tee" {
        st.written.extend(
            args.iter()
                .filter(|a| !a.starts_with('-'))
                .map(|a| a.trim_start_matches("./").to_string()),
        );
    }
}

/// Refuses running `run` (the program, or the script a shell, an interpreter or
/// `.` / `source` is given) when an earlier command of the line wrote it.
pub(crate) fn check_written_run(run: &str, st: &LineState) -> Result<(), PolicyViolation> {
    if st.written.contains(run.trim_start_matches("./")) {
        return Err(PolicyViolation::new(
            codes::POLICY_DYNAMIC_COMMAND,
            format!("`{run}` was written earlier in this line and would run"),
        )
        .with_rule("write-then-execute"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("make -f - all", POLICY_PIPE_TO_SHELL),
                ("gmake --file=/dev/stdin", POLICY_PIPE_TO_SHELL),
                (
                    "printf \x27id\\n\x27 > t.sh && sh t.sh",
                    POLICY_DYNAMIC_COMMAND,
                ),
                (
                    "echo id | tee run.sh && bash run.sh",
                    POLICY_DYNAMIC_COMMAND,
                ),
            ],
            &[
                "make -f build/ci.mk lint",
                "sh scripts/bootstrap.sh",
                "echo ok > status.txt && cat status.txt",
            ],
        );
    }
}
