//! `find`: its starting points are read, `-delete` deletes under them,
//! `-exec`/`-ok` run a program on what it finds, `-fprint*` write files.
//!
//! Hostile lines: classes `find_exec` and `find_actions` of
//! `tests/fixtures/policy/hostile.txt`.

use super::*;

impl CommandPolicy {
    /// `find`: its starting points are read, `-delete` deletes under them,
    /// `-exec`/`-ok` run a program on what it finds, `-fprint*` write files.
    pub(crate) fn check_find(
        &self,
        args: &[String],
        arg_words: &[Word],
        depth: usize,
        st: &mut LineState,
    ) -> Result<(), PolicyViolation> {
        // Leading options (`-H`, `-L`, `-P`, `-D debugopts`, `-O3`) come before
        // the starting points.
        let mut lead = 0;
        while let Some(a) = args.get(lead) {
            match a.as_str() {
                "-H" | "-L" | "-P" => lead += 1,
                "-D" => lead += 2,
                o if o.starts_with("-O") => lead += 1,
                _ => break,
            }
        }
        let follows = args
            .iter()
            .enumerate()
            .any(|(i, a)| (i < lead && matches!(a.as_str(), "-L" | "-H")) || a == "-follow");
        // Tests that choose what is deleted; without one, `-delete` takes the tree.
        let filtered = args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-name"
                    | "-iname"
                    | "-path"
                    | "-ipath"
                    | "-wholename"
                    | "-iwholename"
                    | "-regex"
                    | "-iregex"
                    | "-lname"
                    | "-ilname"
                    | "-newer"
                    | "-mtime"
                    | "-mmin"
                    | "-size"
                    | "-empty"
            )
        });
        let roots: Vec<usize> = (lead..args.len())
            .take_while(|&i| !args[i].starts_with('-') && args[i] != "(" && args[i] != "!")
            .collect();
        let root_values: Vec<Option<String>> = roots
            .iter()
            .map(|&i| {
                Args {
                    args,
                    words: arg_words,
                }
                .value(i, st)
            })
            .collect();
        let first_root = match root_values.first() {
            Some(v) => v.clone(),
            None => Some(".".to_string()),
        };
        let mut i = lead + roots.len();
        while i < args.len() {
            match args[i].as_str() {
                "-delete" if follows => {
                    return Err(PolicyViolation::new(
                        codes::POLICY_DESTRUCTIVE_DELETE,
                        "`find -L … -delete` follows symbolic links while deleting: it deletes wherever they lead",
                    )
                    .with_rule("find-delete-follow"));
                }
                "-delete"
                    if !filtered
                        && (root_values.is_empty()
                            || root_values.iter().any(|v| {
                                v.as_deref()
                                    .is_some_and(|v| paths::is_root(v, st, &self.roots))
                            })) =>
                {
                    return Err(PolicyViolation::new(
                        codes::POLICY_DESTRUCTIVE_DELETE,
                        "`find -delete` from the worktree root without a -name/-path test deletes the whole worktree, `.git` included",
                    )
                    .with_rule("find-delete-root"));
                }
                "-delete" => {
                    for (k, v) in root_values.iter().enumerate() {
                        let inside = v.as_deref().is_some_and(|v| {
                            matches!(
                                paths::classify(v, st, &self.roots),
                                paths::Place::Inside | paths::Place::Temp
                            )
                        });
                        if !inside {
                            return Err(PolicyViolation::new(
                                codes::POLICY_DESTRUCTIVE_DELETE,
                                format!(
                                    "`find {} -delete` deletes outside the worktree",
                                    args[roots[k]]
                                ),
                            )
                            .with_rule("find-delete"));
                        }
                    }
                }
                "-exec" | "-execdir" | "-ok" | "-okdir" => {
                    let end = (i + 1..args.len())
                        .find(|&j| args[j] == ";" || args[j] == "+")
                        .unwrap_or(args.len());
                    if i + 1 < end {
                        // `{}` is a file found under the first starting point.
                        let found = first_root
                            .as_deref()
                            .map(|r| format!("{}/found", r.trim_end_matches('/')));
                        let inner: Vec<String> = args[i + 1..end]
                            .iter()
                            .map(|a| match (&found, a.contains("{}")) {
                                (Some(f), true) => a.replace("{}", f),
                                _ => a.clone(),
                            })
                            .collect();
                        let unknown = found.is_none();
                        let mut sub = st.clone();
                        self.check_program(
                            &inner[0],
                            &inner[1..],
                            &[],
                            depth + 1,
                            &mut sub,
                            unknown,
                        )?;
                    }
                    i = end;
                }
                "-fprint" | "-fprint0" | "-fprintf" | "-fls" => {
                    if let Some(f) = args.get(i + 1) {
                        let v = Args {
                            args,
                            words: arg_words,
                        }
                        .value(i + 1, st);
                        self.check_write(v.as_deref(), f, st, "`find` output file")?;
                    }
                }
                _ => {}
            }
            i += 1;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("find / -delete", POLICY_DESTRUCTIVE_DELETE),
                ("find . -delete", POLICY_DESTRUCTIVE_DELETE),
                ("find -L . -name x -delete", POLICY_DESTRUCTIVE_DELETE),
                ("find . -exec sudo id \\;", POLICY_PRIVILEGE_ESCALATION),
                ("find src -fprint /srv/list", POLICY_SYSTEM_PATH),
            ],
            &[
                "find . -name \"*.pyc\" -delete",
                "find src -type f -newer setup.py",
                "find tests -name \"*.py\" -exec wc -l {} +",
            ],
        );
    }
}
