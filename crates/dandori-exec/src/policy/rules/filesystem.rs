//! Reads and writes of paths: which arguments a program writes, deletes, copies
//! or links, where a read may look, and `cd` within the worktree.
//!
//! Hostile lines: classes `outside_worktree`, `absolute_reads`, `symlink` and
//! `system_dirs` of `tests/fixtures/policy/hostile.txt`.

use super::*;

/// System directories: a write there is refused as `POLICY_SYSTEM_PATH`.
pub(crate) const SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc",
    "/boot",
    "/dev",
    "/proc",
    "/sys",
    "/var",
    "/root",
    "/opt",
    "/srv",
    "/run",
    "/snap",
    "/home",
    "/mnt",
    "/media",
    "/nix",
    "/Library",
    "/System",
    "/Applications",
    "/private",
    "/Users",
];

/// Absolute locations that may not even be read.
pub(crate) const READ_PROTECTED: &[&str] = &[
    "/etc",
    "/root",
    "/boot",
    "/sys",
    "/proc",
    "/var/log",
    "/var/lib",
    "/var/spool",
    "/var/mail",
    "/var/run",
    "/run",
    "/lib/modules",
    "/home",
    "/Users",
];

/// `/proc` entries that describe the machine, not a process: readable.
pub(crate) const PROC_READABLE: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/loadavg",
    "/proc/version",
    "/proc/uptime",
    "/proc/stat",
    "/proc/self/status",
];

/// Programs that write every operand (after their options).
pub(crate) const WRITES_OPERANDS: &[&str] = &[
    "touch", "mkdir", "rmdir", "unlink", "truncate", "shred", "tee",
];

/// Programs that take a destination (the last operand or `-t DIR`).
pub(crate) const COPIES: &[&str] = &["cp", "mv", "install", "rsync"];

/// Programs that delete like `rm -r`.
pub(crate) const DELETERS: &[&str] = &["rimraf", "del-cli", "del", "trash", "trash-put", "rm"];

/// Options whose value is a path a program writes to.
pub(crate) const OUTPUT_OPTIONS: &[&str] = &[
    "-o",
    "--output",
    "--out",
    "--outfile",
    "--out-file",
    "--output-file",
    "--output-document",
    "--out-dir",
    "--outdir",
    "--output-dir",
    "--target-dir",
    "--target",
    "-t",
    "--prefix",
    "--root",
    "--install-dir",
    "--destdir",
    "--dest",
    "--cache-dir",
    "--log-file",
    "--junitxml",
    "--cov-report",
    "--basetemp",
];

/// Absolute places a command may read besides the worktree and the temporary
/// directories: the system's programs, libraries and configuration
/// ([`READ_PROTECTED`] still applies inside them).
pub(crate) const READABLE_SYSTEM_DIRS: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/opt",
    "/etc",
    "/nix",
    "/snap",
    "/proc",
    "/sys",
    "/dev",
    "/run",
    "/var/lib/dpkg",
    "/var/lib/apt",
    "/var/cache/apt",
];

/// Where data other than the system's lives: an absolute read there is refused
/// whether or not the path exists here.
pub(crate) const DATA_DIRS: &[&str] = &[
    "/srv",
    "/home",
    "/root",
    "/mnt",
    "/media",
    "/var",
    "/data",
    "/workspace",
    "/Users",
];

impl CommandPolicy {
    /// A path the command writes to (or deletes).
    pub(crate) fn check_write(
        &self,
        value: Option<&str>,
        shown: &str,
        st: &LineState,
        what: &str,
    ) -> Result<(), PolicyViolation> {
        let Some(v) = value else {
            return unresolved("unresolved-write-target", what, shown);
        };
        match paths::classify(v, st, &self.roots) {
            Place::Inside => {
                // Deleting a link removes the link; writing through it follows it.
                let deletes = ["`rm`", "`unlink`", "`rmdir`", "`trash`"]
                    .iter()
                    .any(|d| what.starts_with(d));
                if let Some(link) =
                    crate::policy::symlinks::outside_link(v, st, &self.roots, !deletes)
                {
                    return refuse(
                        codes::POLICY_LINK_OUTSIDE,
                        "write-through-link",
                        format!(
                            "{what} `{shown}` goes through `{link}`, a symbolic link of the worktree that points outside it"
                        ),
                    );
                }
                if v.split('/').any(|s| s == ".git") {
                    return refuse(
                        codes::POLICY_GIT_INTERNALS,
                        "git-internals",
                        format!("{what} `{shown}` is inside `.git`"),
                    );
                }
                Ok(())
            }
            Place::Temp | Place::SafeDevice => Ok(()),
            Place::Home(rest) => {
                let persistent = HOME_PERSISTENCE.iter().any(|p| {
                    let first = rest.split('/').next().unwrap_or("");
                    paths::under(&rest, p)
                        || (paths::has_glob(first) && paths::glob_match(first, p))
                });
                if persistent || rest.is_empty() {
                    refuse(
                        codes::POLICY_PERSISTENCE,
                        "home-startup-file",
                        format!(
                            "{what} `{shown}` changes the home directory (persists after the run)"
                        ),
                    )
                } else {
                    refuse(
                        codes::POLICY_OUTSIDE_WORKTREE,
                        "write-outside",
                        format!("{what} `{shown}` is in the home directory, outside the worktree"),
                    )
                }
            }
            Place::Abs(p) => {
                if ["/var/tmp", "/dev/shm"]
                    .iter()
                    .any(|d| paths::could_be_under(&p, d))
                {
                    return refuse(
                        codes::POLICY_OUTSIDE_WORKTREE,
                        "write-shared-temp",
                        format!(
                            "{what} `{shown}` is outside the worktree: only `/tmp` (`$TMPDIR`) is the sandbox's private temporary directory"
                        ),
                    );
                }
                if SYSTEM_DIRS.iter().any(|d| paths::could_be_under(&p, d)) || p == "/" {
                    refuse(
                        codes::POLICY_SYSTEM_PATH,
                        "write-system-dir",
                        format!("{what} `{shown}` is a system location"),
                    )
                } else {
                    refuse(
                        codes::POLICY_OUTSIDE_WORKTREE,
                        "write-outside",
                        format!("{what} `{shown}` is outside the worktree"),
                    )
                }
            }
            Place::Escapes => refuse(
                codes::POLICY_OUTSIDE_WORKTREE,
                "write-outside",
                format!("{what} `{shown}` leaves the worktree"),
            ),
        }
    }

    /// A path the command reads. Unknown values pass: reading is not destructive.
    pub(crate) fn check_read(
        &self,
        value: Option<&str>,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        let Some(v) = value else { return Ok(()) };
        match paths::classify(v, st, &self.roots) {
            Place::Abs(p) => {
                if paths::could_be_under(&p, "/proc") {
                    let segs: Vec<&str> = p.split('/').collect();
                    if segs.iter().any(|s| {
                        ["environ", "cmdline", "mem", "maps", "auxv"]
                            .iter()
                            .any(|n| paths::glob_match(s, n))
                    }) {
                        return refuse(
                            codes::POLICY_SECRET_READ,
                            "proc-environ",
                            format!("`{v}` exposes a process's environment or memory"),
                        );
                    }
                    if PROC_READABLE.iter().any(|r| p == *r) {
                        return Ok(());
                    }
                }
                let protected = READ_PROTECTED.iter().any(|d| paths::could_be_under(&p, d))
                    || (paths::could_be_under(&p, "/dev")
                        && !paths::SAFE_DEVICES.iter().any(|d| paths::under(&p, d)));
                if protected {
                    return refuse(
                        codes::POLICY_SYSTEM_PATH,
                        "read-system-dir",
                        format!("`{v}` is a protected system location"),
                    );
                }
                // Outside the worktree and the system's own directories
                // (`/srv/app/.env`, another user's home, a database's files):
                // somebody else's data. An operand is only taken for a path when
                // it names an existing file or a data location: `/^def /p` and
                // `/api/v1` are a sed script and a grep pattern.
                let path_like = p != "/"
                    && p.chars()
                        .all(|c| c.is_alphanumeric() || "/._-+@~*?[]".contains(c));
                let data = DATA_DIRS.iter().any(|d| paths::could_be_under(&p, d))
                    || std::path::Path::new(&p).exists();
                if path_like
                    && data
                    && !READABLE_SYSTEM_DIRS
                        .iter()
                        .any(|d| paths::could_be_under(&p, d))
                {
                    return refuse(
                        codes::POLICY_OUTSIDE_WORKTREE,
                        "read-outside",
                        format!("`{v}` is outside the worktree and the system directories"),
                    );
                }
                Ok(())
            }
            Place::Home(rest) => {
                if is_credential(&rest) {
                    return refuse(
                        codes::POLICY_CREDENTIAL_ACCESS,
                        "credential-store",
                        format!("`{v}` points into a credential store"),
                    );
                }
                refuse(
                    codes::POLICY_OUTSIDE_WORKTREE,
                    "read-outside",
                    format!("`{v}` is in the home directory, outside the worktree"),
                )
            }
            Place::Escapes => refuse(
                codes::POLICY_OUTSIDE_WORKTREE,
                "read-outside",
                format!("`{v}` leaves the worktree"),
            ),
            Place::Inside | Place::Temp | Place::SafeDevice => Ok(()),
        }
    }

    /// Write targets, deletions, links and option values of one program.
    pub(crate) fn check_effects(
        &self,
        base: &str,
        a: &Args<'_>,
        st: &mut LineState,
        stdin_args: bool,
    ) -> Result<(), PolicyViolation> {
        let args = a.args;
        let destructive = DELETERS.contains(&base)
            || WRITES_OPERANDS.contains(&base)
            || COPIES.contains(&base)
            || matches!(base, "ln" | "chmod" | "chown" | "chgrp")
            || (base == "sed"
                && args
                    .iter()
                    .any(|x| x.starts_with("-i") || x == "--in-place"));
        if stdin_args && destructive {
            return refuse(
                codes::POLICY_UNRESOLVED_EXPANSION,
                "xargs-destructive",
                format!("`{base}` would act on arguments read from stdin (xargs)"),
            );
        }
        // Reads: every operand and every `--opt=value` (link targets are not
        // read: the link rule below resolves them from the link's directory).
        for (i, arg) in args.iter().enumerate().filter(|_| base != "ln") {
            // An unknown expansion may be anything: reason about it as `*`.
            let v = a.value(i, st).or_else(|| Some(paths::as_glob(arg)));
            let v = match (arg.starts_with('-'), v) {
                (true, Some(v)) => match v.split_once('=') {
                    Some((_, val)) => Some(val.to_string()),
                    None => continue,
                },
                (_, v) => v,
            };
            self.check_read(v.as_deref(), st)?;
            // A secret file read (not the destination a copy writes).
            let destination = WRITES_OPERANDS.contains(&base)
                || DELETERS.contains(&base)
                || (COPIES.contains(&base) && args[i + 1..].iter().all(|x| x.starts_with('-')));
            if !arg.starts_with('-')
                && !destination
                && v.as_deref().is_some_and(|v| {
                    is_secret_file(v)
                        && matches!(paths::classify(v, st, &self.roots), Place::Inside)
                })
            {
                return refuse(
                    codes::POLICY_SECRET_READ,
                    "secret-file",
                    format!("`{arg}` is a file that holds secrets (keys, tokens, passwords)"),
                );
            }
        }
        // Option values that name an output.
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            let (opt, val_idx, inline) = match arg.split_once('=') {
                Some((o, v)) if o.starts_with('-') => (o, None, Some(v.to_string())),
                _ => (arg.as_str(), Some(i + 1), None),
            };
            let is_out = OUTPUT_OPTIONS.contains(&opt)
                && (opt != "-t" || COPIES.contains(&base) || base.starts_with("pip"));
            if is_out {
                let value = match (inline, val_idx) {
                    (Some(v), _) => Some(v),
                    (None, Some(j)) if j < args.len() => a.value(j, st),
                    _ => None,
                };
                if inline_or_next_exists(arg, i, args) {
                    let shown = value.clone().unwrap_or_else(|| arg.clone());
                    // `pytest -o key=value` is an ini override, not a file.
                    if !(opt == "-o" && shown.contains('=')) {
                        self.check_write(value.as_deref(), &shown, st, &format!("`{opt}`"))?;
                    }
                }
            }
            i += 1;
        }
        match base {
            _ if DELETERS.contains(&base) => {
                let recursive = base != "rm"
                    || args.iter().any(|x| {
                        x == "--recursive"
                            || (x.starts_with('-')
                                && !x.starts_with("--")
                                && (x.contains('r') || x.contains('R')))
                    });
                for i in operand_indices(args, &[]) {
                    let v = a.value(i, st);
                    if let Some(v) = &v
                        && recursive
                        && !matches!(
                            paths::classify(v, st, &self.roots),
                            Place::Inside | Place::Temp
                        )
                    {
                        return refuse(
                            codes::POLICY_DESTRUCTIVE_DELETE,
                            "delete-outside",
                            format!("`{base}` of `{}` deletes outside the worktree", args[i]),
                        );
                    }
                    self.check_write(v.as_deref(), &args[i], st, &format!("`{base}` target"))?;
                }
            }
            _ if WRITES_OPERANDS.contains(&base) => {
                let skip = if base == "truncate" {
                    &["-s", "--size", "-r"][..]
                } else {
                    &["-m", "--mode"][..]
                };
                for i in operand_indices(args, skip) {
                    self.check_write(
                        a.value(i, st).as_deref(),
                        &args[i],
                        st,
                        &format!("`{base}` target"),
                    )?;
                }
            }
            "chmod" | "chown" | "chgrp" => {
                for i in operand_indices(args, &["--reference"]).into_iter().skip(1) {
                    self.check_write(
                        a.value(i, st).as_deref(),
                        &args[i],
                        st,
                        &format!("`{base}` target"),
                    )?;
                }
            }
            _ if COPIES.contains(&base) => {
                let ops = operand_indices(
                    args,
                    &[
                        "-t", "-S", "--suffix", "-m", "--mode", "-o", "-g", "--owner", "--group",
                    ],
                );
                let target_dir = args
                    .iter()
                    .position(|x| x == "-t")
                    .map(|p| p + 1)
                    .filter(|p| *p < args.len());
                let links = args.iter().any(|x| {
                    matches!(x.as_str(), "-l" | "-s" | "--link" | "--symbolic-link")
                        || (x.starts_with('-')
                            && !x.starts_with("--")
                            && (x.contains('l') || x.contains('s'))
                            && base == "cp")
                });
                let (dest, sources): (Option<usize>, Vec<usize>) = match target_dir {
                    Some(t) => (Some(t), ops.clone()),
                    None => match ops.split_last() {
                        Some((last, rest)) => (Some(*last), rest.to_vec()),
                        None => (None, Vec::new()),
                    },
                };
                if let Some(d) = dest {
                    self.check_write(
                        a.value(d, st).as_deref(),
                        &args[d],
                        st,
                        &format!("`{base}` destination"),
                    )?;
                }
                for s in sources {
                    if base == "mv" {
                        self.check_write(a.value(s, st).as_deref(), &args[s], st, "`mv` source")?;
                    }
                    if links {
                        self.check_link_target(a.value(s, st).as_deref(), &args[s], st)?;
                    }
                }
            }
            "ln" => {
                let ops = operand_indices(args, &["-t", "-S", "--suffix"]);
                let (targets, name): (Vec<usize>, Option<usize>) = if ops.len() == 1 {
                    (ops.clone(), None)
                } else {
                    match ops.split_last() {
                        Some((last, rest)) => (rest.to_vec(), Some(*last)),
                        None => (Vec::new(), None),
                    }
                };
                let symbolic = args.iter().any(|x| {
                    x == "--symbolic"
                        || (x.starts_with('-') && !x.starts_with("--") && x.contains('s'))
                });
                // A relative symlink target is resolved from the link's directory.
                let link_dir = name
                    .and_then(|n| a.value(n, st))
                    .map(|n| match n.rsplit_once('/') {
                        Some((dir, _)) if !n.ends_with('/') => format!("{dir}/"),
                        _ if n.ends_with('/') => n.clone(),
                        _ => String::new(),
                    })
                    .unwrap_or_default();
                for t in targets {
                    let v = a.value(t, st).map(|v| {
                        if symbolic && !v.starts_with('/') && !v.starts_with('~') {
                            format!("{link_dir}{v}")
                        } else {
                            v
                        }
                    });
                    self.check_link_target(v.as_deref(), &args[t], st)?;
                }
                if let Some(n) = name {
                    self.check_write(a.value(n, st).as_deref(), &args[n], st, "`ln` link name")?;
                }
                if symbolic {
                    // The link's own name, for paths through it later in the line.
                    let made = match name {
                        Some(n) => a.value(n, st),
                        None => ops
                            .first()
                            .and_then(|&t| a.value(t, st))
                            .map(|t| t.rsplit('/').next().unwrap_or(&t).to_string()),
                    };
                    if let Some(m) = made {
                        let m = m.trim_start_matches("./").trim_end_matches('/');
                        if !m.is_empty() {
                            st.links.insert(m.to_string());
                        }
                    }
                }
            }
            "sed" => self.check_sed(a, st)?,
            "awk" | "gawk" | "mawk" | "nawk" => check_awk(args)?,
            "cd" => {
                let target = match args.iter().find(|x| !x.starts_with('-')) {
                    Some(_) => {
                        let i = args.iter().position(|x| !x.starts_with('-')).unwrap_or(0);
                        a.value(i, st)
                    }
                    None => Some("~".to_string()),
                };
                st.cwd_depth = match target
                    .as_deref()
                    .map(|t| paths::classify(t, st, &self.roots))
                {
                    Some(Place::Inside) => target.as_deref().map(|t| relative_depth(t, st)),
                    _ => None,
                };
            }
            _ => {}
        }
        Ok(())
    }

    pub(crate) fn check_link_target(
        &self,
        value: Option<&str>,
        shown: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        let Some(v) = value else {
            return unresolved("unresolved-link-target", "link target", shown);
        };
        match paths::classify(v, st, &self.roots) {
            Place::Inside => Ok(()),
            _ => refuse(
                codes::POLICY_LINK_OUTSIDE,
                "link-outside",
                format!("a link to `{shown}` would reach outside the worktree"),
            ),
        }
    }
}

pub(crate) fn relative_depth(t: &str, st: &LineState) -> usize {
    let mut d = st.cwd_depth.unwrap_or(0);
    if t.starts_with('/') {
        // Inside by the root prefix: depth relative to it is unknown; stay put.
        return d;
    }
    for seg in t.split('/') {
        match seg {
            "" | "." => {}
            ".." => d = d.saturating_sub(1),
            _ => d += 1,
        }
    }
    d
}

pub(crate) fn is_deleter(base: &str) -> bool {
    DELETERS.contains(&base)
}

#[cfg(test)]
mod tests {
    use super::super::class_test;
    use crate::policy::codes::*;

    #[test]
    fn hostile_refused_legitimate_allowed() {
        class_test::check(
            &[
                ("echo x > /var/tmp/run.log", POLICY_OUTSIDE_WORKTREE),
                ("cp -r src /var/tmp/copy", POLICY_OUTSIDE_WORKTREE),
                ("echo x > ../outside.txt", POLICY_OUTSIDE_WORKTREE),
                ("cp build/app /usr/local/bin/app", POLICY_SYSTEM_PATH),
                ("ln -s /srv/data data", POLICY_LINK_OUTSIDE),
                ("echo x >> ~/.bashrc", POLICY_PERSISTENCE),
                ("cat /srv/app/config.yml", POLICY_OUTSIDE_WORKTREE),
                ("touch .git/hooks/pre-commit", POLICY_GIT_INTERNALS),
            ],
            &[
                "mkdir -p /tmp/cache && touch /tmp/cache/stamp",
                "mkdir -p build/out && cp src/a.txt build/out/",
                "echo done > /tmp/status.txt",
                "ln -s ../README.md docs/README.md",
                "cat /usr/share/dict/words",
                "cd src && touch __init__.py",
            ],
        );
    }
}
