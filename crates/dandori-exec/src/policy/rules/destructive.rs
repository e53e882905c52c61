//! Deletions and permission changes that take a tree, the home directory or the
//! system with them: `rm -rf /`, `rm -rf ..`, `chmod -R 777 /`, setuid bits.
//!
//! Hostile lines: classes `destructive` and `glob_paths` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

pub(crate) fn is_home(t: &str) -> bool {
    matches!(t, "~" | "$HOME" | "${HOME}")
        || ["~/", "$HOME/", "${HOME}/"]
            .iter()
            .any(|p| t.strip_prefix(p).is_some_and(|r| r.is_empty() || r == "*"))
}

pub(crate) fn check_rm(args: &[String]) -> Result<(), PolicyViolation> {
    let mut recursive = false;
    let mut targets = Vec::new();
    let mut end_of_opts = false;
    for a in args {
        if !end_of_opts && a == "--" {
            end_of_opts = true;
        } else if !end_of_opts && a.starts_with("--") {
            if a == "--recursive" {
                recursive = true;
            }
            if a == "--no-preserve-root" {
                return Err(PolicyViolation::new(
                    codes::POLICY_DESTRUCTIVE_DELETE,
                    "`rm --no-preserve-root` is refused",
                ));
            }
        } else if !end_of_opts && a.starts_with('-') && a.len() > 1 {
            if a.contains('r') || a.contains('R') {
                recursive = true;
            }
        } else {
            targets.push(a.as_str());
        }
    }
    let expanded: Vec<String> = targets
        .iter()
        .flat_map(|t| paths::brace_expand(t))
        .collect();
    for t in expanded.iter().map(String::as_str) {
        let trimmed = t.trim_end_matches('/');
        if recursive && !t.starts_with('/') && !t.starts_with('~') {
            // `src/../..`, `.g?t`, `.??*`, `?*`, `[a-z]*` at the top: the glob or
            // path reaches `.git`, above the worktree, or everything in it.
            let segs: Vec<&str> = trimmed
                .split('/')
                .filter(|s| !s.is_empty() && *s != ".")
                .collect();
            let climbs = {
                let mut depth: i32 = 0;
                let mut out = false;
                for s in &segs {
                    depth += if *s == ".." { -1 } else { 1 };
                    out |= depth < 0;
                }
                out || (depth == 0 && !segs.is_empty())
            };
            let top = segs.first().copied().unwrap_or("");
            let shell_match = |pat: &str, name: &str| {
                (pat.starts_with('.') || !name.starts_with('.')) && paths::glob_match(pat, name)
            };
            let git_or_up =
                paths::has_glob(top) && (shell_match(top, ".git") || shell_match(top, ".."));
            let everything = segs.len() == 1
                && paths::has_glob(top)
                && ["src", "tests", "docs", "lib"]
                    .iter()
                    .all(|n| shell_match(top, n));
            if climbs || git_or_up || everything {
                return Err(PolicyViolation::new(
                    codes::POLICY_DESTRUCTIVE_DELETE,
                    format!("`rm` of `{t}` reaches `.git`, above the worktree, or all of it"),
                ));
            }
        }
        let dangerous = trimmed.is_empty()
            || is_home(t)
            || matches!(trimmed, "*" | "/*" | "." | "./*" | ".." | "../*")
            || trimmed
                .split('/')
                .all(|s| s == ".." || s == "." || s == "*")
            || (t.starts_with('/') && {
                let n = normalize_abs(t);
                n == "/" || n.matches('/').count() <= 1
            });
        if dangerous && (recursive || trimmed.is_empty() || t.contains('*')) {
            return Err(PolicyViolation::new(
                codes::POLICY_DESTRUCTIVE_DELETE,
                format!("`rm` of `{t}` is refused"),
            ));
        }
    }
    Ok(())
}

pub(crate) fn check_permissions(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
    let recursive = args
        .iter()
        .any(|a| a == "-R" || a == "--recursive" || (a.starts_with('-') && a.contains('R')));
    let operands: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    if base == "chmod"
        && let Some(mode) = operands.first()
    {
        // `4755`, `04755`, `=4755`, `u+s`, `g=s`: a set-id bit.
        let digits = mode.trim_start_matches('=');
        let setuid = mode.contains('s')
            || (digits.len() >= 4
                && digits.chars().all(|c| c.is_ascii_digit())
                && matches!(
                    digits.as_bytes()[digits.len() - 4],
                    b'2' | b'3' | b'4' | b'5' | b'6' | b'7'
                ));
        if setuid {
            return Err(PolicyViolation::new(
                codes::POLICY_PRIVILEGE_ESCALATION,
                format!("`chmod {mode}` sets a setuid/setgid bit"),
            ));
        }
    }
    let skip = 1; // the mode or owner
    for t in operands.iter().skip(skip) {
        let system = t.starts_with('/') || is_home(t) || matches!(*t, "*" | ".." | "../*");
        let world = operands
            .first()
            .is_some_and(|m| m.contains("777") || m.contains("o+w") || m.contains("a+w"));
        if system && (recursive || world || base != "chmod" || normalize_abs(t) == "/") {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_PERMISSIONS,
                format!("`{base}` of `{t}` is refused"),
            ));
        }
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
                ("rm -rf --no-preserve-root /", POLICY_DESTRUCTIVE_DELETE),
                ("rm -r ../..", POLICY_DESTRUCTIVE_DELETE),
                ("rm -rf .g?t", POLICY_DESTRUCTIVE_DELETE),
                ("chmod -R 777 /srv", POLICY_DANGEROUS_PERMISSIONS),
                ("chmod g+s bin/tool", POLICY_PRIVILEGE_ESCALATION),
                ("chown -R nobody ~", POLICY_DANGEROUS_PERMISSIONS),
            ],
            &[
                "rm -rf build dist",
                "rm -f src/*.orig",
                "chmod +x scripts/release.sh",
                "chmod 644 README.md",
            ],
        );
    }
}
