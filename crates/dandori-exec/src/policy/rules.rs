//! The rules that need to know what a program does with its arguments: which
//! arguments it writes, deletes or links, which options make it run another
//! program (git, interpreters, package runners, `find -exec`), and what outlives
//! the run (persistence). Every rule refuses with a reason code and a rule name.

use std::sync::OnceLock;

use regex::Regex;

use super::codes;
use super::lexer::Word;
use super::paths::{self, LineState, Place};
use super::{CommandPolicy, PolicyViolation};

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
const PROC_READABLE: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/loadavg",
    "/proc/version",
    "/proc/uptime",
    "/proc/stat",
    "/proc/self/status",
];
/// Credential stores below the home directory (also matched by glob).
const HOME_CREDENTIALS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".config/gh",
    ".config/gcloud",
    ".azure",
    ".docker",
    ".kube",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/hub",
    ".password-store",
    ".vault-token",
];
/// Files and directories below `~` that run code at login, at shell start or on a
/// schedule, or configure tools for every later run.
const HOME_PERSISTENCE: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".cshrc",
    ".tcshrc",
    ".kshrc",
    ".inputrc",
    ".xinitrc",
    ".xprofile",
    ".gitconfig",
    ".config",
    ".local",
    ".pam_environment",
    ".ssh",
    ".cargo",
    ".rustup",
    ".npm",
    ".pip",
    ".condarc",
    ".vimrc",
    ".emacs",
    ".emacs.d",
    "Library/LaunchAgents",
];
/// Programs that write every operand (after their options).
const WRITES_OPERANDS: &[&str] = &[
    "touch", "mkdir", "rmdir", "unlink", "truncate", "shred", "tee",
];
/// Programs that take a destination (the last operand or `-t DIR`).
const COPIES: &[&str] = &["cp", "mv", "install", "rsync"];
/// Programs that delete like `rm -r`.
const DELETERS: &[&str] = &["rimraf", "del-cli", "del", "trash", "trash-put", "rm"];
/// Options whose value is a path a program writes to.
const OUTPUT_OPTIONS: &[&str] = &[
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
/// Package runners and where the program they run starts.
const RUNNERS: &[(&str, &[&str])] = &[
    ("npx", &[]),
    ("bunx", &[]),
    ("uvx", &[]),
    ("pnpx", &[]),
    ("npm", &["exec", "x"]),
    ("pnpm", &["dlx", "exec"]),
    ("yarn", &["dlx", "exec"]),
    ("bun", &["x"]),
    ("pipx", &["run"]),
    ("uv", &["run"]),
    ("poetry", &["run"]),
    ("pdm", &["run"]),
    ("hatch", &["run"]),
    ("pipenv", &["run"]),
    ("conda", &["run"]),
    ("mamba", &["run"]),
    ("micromamba", &["run"]),
    ("corepack", &[]),
];
/// Runner options that take a separate value.
const RUNNER_VALUE_OPTIONS: &[&str] = &[
    "-p",
    "--package",
    "--from",
    "--with",
    "--python",
    "-n",
    "--name",
    "--prefix",
    "--env",
    "-e",
    "--spec",
];

fn refuse(code: &'static str, rule: &'static str, msg: String) -> Result<(), PolicyViolation> {
    Err(PolicyViolation::new(code, msg).with_rule(rule))
}

fn unresolved(rule: &'static str, what: &str, shown: &str) -> Result<(), PolicyViolation> {
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

impl Args<'_> {
    /// The resolved value of argument `i` (`None`: unknown).
    pub fn value(&self, i: usize, st: &LineState) -> Option<String> {
        match self.words.get(i) {
            Some(w) if w.text == self.args[i] => paths::resolve(w, st),
            _ => Some(self.args[i].clone()),
        }
    }
}

fn operand_indices(args: &[String], value_opts: &[&str]) -> Vec<usize> {
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

/// Absolute places a command may read besides the worktree and the temporary
/// directories: the system's programs, libraries and configuration
/// ([`READ_PROTECTED`] still applies inside them).
const READABLE_SYSTEM_DIRS: &[&str] = &[
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
const DATA_DIRS: &[&str] = &[
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
                if let Some(link) = super::symlinks::outside_link(v, st, &self.roots, !deletes) {
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

    fn check_link_target(
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

    fn check_sed(&self, a: &Args<'_>, st: &LineState) -> Result<(), PolicyViolation> {
        let args = a.args;
        let mut scripts = Vec::new();
        let mut explicit = false;
        let mut i = 0;
        while i < args.len() {
            let x = &args[i];
            if x == "-e" || x == "--expression" {
                explicit = true;
                if let Some(s) = args.get(i + 1) {
                    scripts.push(s.clone());
                }
                i += 2;
                continue;
            }
            if let Some(s) = x.strip_prefix("--expression=") {
                explicit = true;
                scripts.push(s.to_string());
            }
            if x == "-f" || x == "--file" {
                explicit = true;
                i += 2;
                continue;
            }
            i += 1;
        }
        let ops = operand_indices(
            args,
            &["-e", "--expression", "-f", "--file", "-l", "--line-length"],
        );
        let files: Vec<usize> = if explicit {
            ops
        } else {
            if let Some(first) = ops.first() {
                scripts.push(args[*first].clone());
            }
            ops.into_iter().skip(1).collect()
        };
        for s in &scripts {
            if let Some(file) = sed_executes_or_writes(s)? {
                self.check_write(Some(&file), &file, st, "`sed w` file")?;
            }
        }
        if args
            .iter()
            .any(|x| x.starts_with("-i") || x == "--in-place" || x.starts_with("--in-place="))
        {
            for f in files {
                self.check_write(a.value(f, st).as_deref(), &args[f], st, "`sed -i` file")?;
            }
        }
        Ok(())
    }

    /// Persistence, secret dumps, loops and background helpers by program name.
    pub(crate) fn check_lifetime(
        &self,
        base: &str,
        args: &[String],
    ) -> Result<(), PolicyViolation> {
        let has = |flags: &[&str]| args.iter().any(|x| flags.contains(&x.as_str()));
        let sub = args
            .iter()
            .find(|x| !x.starts_with('-'))
            .map(String::as_str)
            .unwrap_or("");
        match base {
            "printenv" => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`printenv` prints the environment, secrets included".into(),
            ),
            "env" => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`env` without a command prints the environment".into(),
            ),
            "export" | "declare" | "typeset" | "readonly"
                if args.is_empty()
                    || args
                        .iter()
                        .all(|x| x.starts_with('-') && (x.contains('p') || x.contains('x'))) =>
            {
                refuse(
                    codes::POLICY_SECRET_READ,
                    "env-dump",
                    format!("`{base}` without names lists the environment"),
                )
            }
            "set" if args.is_empty() => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`set` lists every variable".into(),
            ),
            "compgen" if has(&["-v", "-e", "-A"]) => refuse(
                codes::POLICY_SECRET_READ,
                "env-dump",
                "`compgen` lists variables".into(),
            ),
            "yes" => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-output",
                "`yes` never ends".into(),
            ),
            "watch" => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-loop",
                "`watch` repeats forever".into(),
            ),
            "sleep" if args.iter().any(|x| x.starts_with("inf")) => refuse(
                codes::POLICY_INFINITE_LOOP,
                "endless-sleep",
                "`sleep infinity` never ends".into(),
            ),
            "tail"
                if args.iter().any(|x| {
                    x == "-f"
                        || x == "-F"
                        || x.starts_with("--follow")
                        || (x.starts_with('-') && !x.starts_with("--") && x.contains(['f', 'F']))
                }) =>
            {
                refuse(
                    codes::POLICY_INFINITE_LOOP,
                    "endless-follow",
                    "`tail -f` never ends".into(),
                )
            }
            "disown" | "screen" | "tmux" | "daemonize" | "start-stop-daemon" | "bg" => refuse(
                codes::POLICY_BACKGROUND_PROCESS,
                "background",
                format!("`{base}` keeps a process running after the command"),
            ),
            "crontab" | "at" | "batch" | "launchctl" | "update-rc.d" | "chkconfig" => refuse(
                codes::POLICY_PERSISTENCE,
                "scheduler",
                format!("`{base}` schedules work that outlives the run"),
            ),
            "pip" | "pip3" if has(&["--user"]) || matches!(sub, "config") => refuse(
                codes::POLICY_PERSISTENCE,
                "pip-user",
                "`pip --user` / `pip config` change the user's installation".into(),
            ),
            "uv" if sub == "tool" && args.iter().any(|x| x == "install") || has(&["--user"]) => {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "uv-tool-install",
                    "`uv tool install` installs for the user".into(),
                )
            }
            "npm" | "pnpm" | "yarn" | "bun"
                if has(&["-g", "--global", "--location=global"])
                    || args
                        .windows(2)
                        .any(|w| w[0] == "--location" && w[1] == "global")
                    || sub == "global"
                    || (matches!(sub, "config" | "set") && !has(&["--location=project"]))
                    || (sub == "link" && args.len() == 1) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "npm-global",
                    format!("`{base}` global install or config changes the user's installation"),
                )
            }
            "cargo"
                if sub == "install"
                    && !args
                        .iter()
                        .any(|x| x == "--root" || x.starts_with("--root=")) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "cargo-install",
                    "`cargo install` writes to ~/.cargo/bin (use --root inside the worktree)"
                        .into(),
                )
            }
            "go" if sub == "install" || (sub == "env" && has(&["-w", "-u"])) => refuse(
                codes::POLICY_PERSISTENCE,
                "go-install",
                "`go install` / `go env -w` change the user's Go installation".into(),
            ),
            "rustup"
                if matches!(
                    sub,
                    "default"
                        | "update"
                        | "install"
                        | "uninstall"
                        | "self"
                        | "set"
                        | "override"
                        | "component"
                        | "target"
                ) || (sub == "toolchain"
                    && args
                        .iter()
                        .any(|x| matches!(x.as_str(), "install" | "uninstall" | "link"))) =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "rustup-global",
                    format!("`rustup {sub}` changes the machine's toolchains"),
                )
            }
            "conda" | "mamba" | "micromamba" if matches!(sub, "init" | "config") => refuse(
                codes::POLICY_PERSISTENCE,
                "conda-init",
                format!("`{base} {sub}` changes shell start-up or user config"),
            ),
            "corepack" if matches!(sub, "enable" | "disable" | "install") => refuse(
                codes::POLICY_PERSISTENCE,
                "corepack-enable",
                "`corepack enable` writes shims next to node".into(),
            ),
            _ => Ok(()),
        }
    }

    /// git: options and config keys that execute programs, global config, and the
    /// subcommands that run commands.
    pub(crate) fn check_git(
        &self,
        a: &Args<'_>,
        depth: usize,
        st: &mut LineState,
    ) -> Result<(), PolicyViolation> {
        let args = a.args;
        let mut i = 0;
        // Global options before the subcommand.
        while i < args.len() && args[i].starts_with('-') {
            let x = args[i].as_str();
            if x == "-c" || x == "--config-env" {
                if let Some(kv) = args.get(i + 1) {
                    check_git_key(kv.split('=').next().unwrap_or(kv))?;
                }
                i += 2;
                continue;
            }
            if let Some(kv) = x
                .strip_prefix("-c")
                .or_else(|| x.strip_prefix("--config-env="))
            {
                check_git_key(kv.split('=').next().unwrap_or(kv))?;
            }
            if x.starts_with("--exec-path=") || x == "--exec-path" && i + 1 < args.len() {
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-path",
                    "`git --exec-path` chooses the programs git runs".into(),
                );
            }
            if matches!(
                x,
                "-C" | "--git-dir" | "--work-tree" | "--namespace" | "--super-prefix"
            ) {
                if x != "--namespace" && x != "--super-prefix" {
                    let v = a.value(i + 1, st);
                    if i + 1 < args.len() {
                        self.check_git_dir(v.as_deref(), &args[i + 1], st)?;
                    }
                }
                i += 2;
                continue;
            }
            if let Some(v) = x
                .strip_prefix("--git-dir=")
                .or_else(|| x.strip_prefix("--work-tree="))
            {
                self.check_git_dir(Some(v), v, st)?;
            }
            i += 1;
        }
        let Some(sub) = args.get(i).map(String::as_str) else {
            return Ok(());
        };
        let rest = &args[i + 1..];
        for (j, x) in rest.iter().enumerate() {
            let lower = x.to_ascii_lowercase();
            if lower.starts_with("ext::") || lower.contains("::ext::") || lower.starts_with("fd::")
            {
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-ext-transport",
                    format!("`{x}` makes git run a program as transport"),
                );
            }
            let exec_opt = [
                "--upload-pack",
                "--receive-pack",
                "--exec",
                "--template",
                "--extcmd",
                "--tool",
                "--config",
                "--ssh-command",
            ];
            let name = x.split('=').next().unwrap_or(x);
            if exec_opt.contains(&name) && !(sub == "rebase" && name == "--exec") {
                if name == "--config" {
                    if let Some(kv) = x
                        .split_once('=')
                        .map(|(_, v)| v.to_string())
                        .or_else(|| rest.get(j + 1).cloned())
                    {
                        check_git_key(kv.split('=').next().unwrap_or(&kv))?;
                    }
                    continue;
                }
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    format!("`git {sub} {name}` runs a program"),
                );
            }
            if matches!(sub, "clone" | "submodule") && (x == "-u" || x == "-c") {
                if x == "-c" {
                    if let Some(kv) = rest.get(j + 1) {
                        check_git_key(kv.split('=').next().unwrap_or(kv))?;
                    }
                    continue;
                }
                return refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    format!("`git {sub} -u` runs a program"),
                );
            }
        }
        match sub {
            "config" => {
                if rest
                    .iter()
                    .any(|x| matches!(x.as_str(), "--global" | "--system"))
                {
                    return refuse(
                        codes::POLICY_PERSISTENCE,
                        "git-config-global",
                        "`git config --global/--system` changes config outside the repository"
                            .into(),
                    );
                }
                if let Some(p) = rest.iter().position(|x| x == "-f" || x == "--file") {
                    let v = a.value(i + 2 + p, st);
                    self.check_write(
                        v.as_deref(),
                        rest.get(p + 1).map(String::as_str).unwrap_or(""),
                        st,
                        "`git config --file`",
                    )?;
                }
                let reading = rest.iter().any(|x| {
                    matches!(
                        x.as_str(),
                        "--get"
                            | "--get-all"
                            | "--get-regexp"
                            | "-l"
                            | "--list"
                            | "get"
                            | "list"
                            | "--show-origin"
                    )
                });
                let keys: Vec<&String> = rest.iter().filter(|x| !x.starts_with('-')).collect();
                let key = match keys.first().map(|s| s.as_str()) {
                    Some(
                        "set" | "unset" | "get" | "list" | "edit" | "rename-section"
                        | "remove-section",
                    ) => keys.get(1),
                    _ => keys.first(),
                };
                if rest
                    .iter()
                    .any(|x| x == "-e" || x == "--edit" || x == "edit")
                {
                    return refuse(
                        codes::POLICY_GIT_EXEC_OPTION,
                        "git-config-edit",
                        "`git config --edit` starts an editor".into(),
                    );
                }
                if !reading && let Some(k) = key {
                    check_git_key(k)?;
                }
                let dump = rest.iter().any(|x| {
                    matches!(
                        x.as_str(),
                        "-l" | "--list" | "list" | "--get-regexp" | "--show-origin"
                    )
                });
                let secret_key = key.is_some_and(|k| {
                    let k = k.to_ascii_lowercase();
                    k.ends_with(".extraheader")
                        || k.starts_with("credential")
                        || k.starts_with("http.")
                        || k.starts_with("url.")
                        || (k.starts_with("remote.") && k.ends_with(".url"))
                });
                if dump || (reading && secret_key) {
                    return refuse(
                        codes::POLICY_SECRET_READ,
                        "git-config-read",
                        "reading git's config dumps or its URL/credential keys can print tokens"
                            .into(),
                    );
                }
                Ok(())
            }
            "push" => refuse(
                codes::POLICY_REMOTE_WRITE,
                "remote-write",
                "`git push` writes to a remote repository".into(),
            ),
            "lfs" | "svn" | "p4"
                if rest.first().is_some_and(|x| {
                    matches!(
                        (sub, x.as_str()),
                        ("lfs", "push") | ("svn", "dcommit") | ("p4", "submit")
                    )
                }) =>
            {
                refuse(
                    codes::POLICY_REMOTE_WRITE,
                    "remote-write",
                    format!("`git {sub} {}` writes to a remote repository", rest[0]),
                )
            }
            "credential" | "credential-store" | "credential-cache" => refuse(
                codes::POLICY_SECRET_READ,
                "git-credential",
                "`git credential` reads stored credentials".into(),
            ),
            "filter-branch" | "daemon" | "instaweb" | "difftool" | "mergetool" | "send-email"
            | "web--browse" => refuse(
                codes::POLICY_GIT_EXEC_OPTION,
                "git-exec-subcommand",
                format!("`git {sub}` runs programs of its own"),
            ),
            "submodule" if rest.iter().any(|x| x == "foreach") => {
                let p = rest.iter().position(|x| x == "foreach").unwrap_or(0);
                let script = rest[p + 1..]
                    .iter()
                    .filter(|x| !x.starts_with("--"))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ");
                self.check_depth(&script, depth + 1).map(|_| ())
            }
            "bisect" if rest.first().is_some_and(|x| x == "run") => {
                if rest.len() > 1 {
                    self.check_program_line(&rest[1..], depth)
                } else {
                    Ok(())
                }
            }
            "rebase" => {
                for (j, x) in rest.iter().enumerate() {
                    let script = if x == "-x" || x == "--exec" {
                        rest.get(j + 1).cloned()
                    } else {
                        x.strip_prefix("--exec=").map(str::to_string)
                    };
                    if let Some(s) = script {
                        self.check_depth(&s, depth + 1)?;
                    }
                }
                Ok(())
            }
            "branch" | "tag" | "checkout" | "switch" | "update-ref" | "symbolic-ref" | "reflog"
            | "gc" | "prune" | "stash" | "worktree" | "remote" | "notes" | "replace" | "fetch"
            | "pull" => {
                if matches!(sub, "fetch" | "pull" | "remote") {
                    remote_url(sub, rest)?;
                }
                match shared_ref_change(sub, rest) {
                    Some(what) => refuse(
                        codes::POLICY_GIT_INTERNALS,
                        "git-refs",
                        format!("`git {sub}` {what}"),
                    ),
                    None => Ok(()),
                }
            }
            "clone" | "init"
                if rest.iter().any(|x| {
                    x.starts_with("--template") || x.starts_with("--separate-git-dir")
                }) =>
            {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    format!("`git {sub} --template/--separate-git-dir` installs hooks or a git directory elsewhere"),
                )
            }
            "clone" | "ls-remote" | "archive" | "submodule" => remote_url(sub, rest),
            "maintenance" if matches!(rest.first().map(String::as_str), Some("start" | "register")) => {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "git-maintenance",
                    "`git maintenance start/register` schedules jobs that outlive the run".into(),
                )
            }
            "lfs"
                if rest.first().is_some_and(|x| x == "install" || x == "uninstall")
                    && !rest.iter().any(|x| x == "--local" || x == "--worktree") =>
            {
                refuse(
                    codes::POLICY_PERSISTENCE,
                    "git-config-global",
                    "`git lfs install` without --local changes the user's or the system's git config".into(),
                )
            }
            "apply"
                if rest.iter().any(|x| {
                    x == "--unsafe-paths"
                        || x.strip_prefix("--directory=")
                            .is_some_and(|d| d.starts_with('/') || d.starts_with('~') || d.split('/').any(|c| c == ".."))
                }) =>
            {
                refuse(
                    codes::POLICY_OUTSIDE_WORKTREE,
                    "write-outside",
                    "`git apply --unsafe-paths/--directory` writes outside the worktree".into(),
                )
            }
            "grep" if rest.iter().any(|x| x.starts_with("-O") || x.starts_with("--open-files-in-pager")) => {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-option",
                    "`git grep -O` opens the files with a program".into(),
                )
            }
            "help" if rest.iter().any(|x| x == "-w" || x == "--web" || x == "-i" || x == "--info") => {
                refuse(
                    codes::POLICY_GIT_EXEC_OPTION,
                    "git-exec-subcommand",
                    "`git help --web/--info` starts a browser or viewer".into(),
                )
            }
            "imap-send" | "request-pull" => refuse(
                codes::POLICY_REMOTE_WRITE,
                "remote-write",
                format!("`git {sub}` sends to another machine"),
            ),
            "var" if rest.iter().any(|x| x == "-l") => refuse(
                codes::POLICY_SECRET_READ,
                "git-config-read",
                "`git var -l` prints every config value, tokens included".into(),
            ),
            "clean"
                if rest.iter().any(|x| {
                    x.starts_with('-') && !x.starts_with("--") && x.contains('x') && x.contains('f')
                }) && rest.iter().any(|x| x.contains('d')) =>
            {
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn check_git_dir(
        &self,
        value: Option<&str>,
        shown: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        match value.map(|v| paths::classify(v, st, &self.roots)) {
            Some(Place::Inside) => Ok(()),
            _ => refuse(
                codes::POLICY_OUTSIDE_WORKTREE,
                "git-dir-outside",
                format!("git pointed at `{shown}`, outside the worktree"),
            ),
        }
    }

    /// Checks `argv` (a program and its arguments) as a command of its own.
    pub(crate) fn check_program_line(
        &self,
        argv: &[String],
        depth: usize,
    ) -> Result<(), PolicyViolation> {
        let line = shell_words::join(argv);
        self.check_depth(&line, depth + 1).map(|_| ())
    }

    /// Package runners (`npx`, `npm exec`, `pnpm dlx`, `uvx`, `poetry run`, …):
    /// `Some(index)` of the program they run in `args`; the `-c` script of npx is
    /// checked here.
    pub(crate) fn runner_target(
        &self,
        base: &str,
        args: &[String],
        depth: usize,
    ) -> Result<Option<usize>, PolicyViolation> {
        // Subcommands that run the words after them as a command, or a string as
        // a command line: the inner command is checked as if it stood alone.
        let first_plain = |from: usize| (from..args.len()).find(|&i| !args[i].starts_with('-'));
        match (base, args.first().map(String::as_str)) {
            ("yarn" | "pnpm", Some("node")) | ("busybox", Some(_)) => return Ok(Some(0)),
            ("bun", Some("exec")) => {
                if let Some(line) = args.get(1) {
                    self.check_depth(line, depth + 1)?;
                }
                return Ok(None);
            }
            ("bundle", Some("exec")) | ("composer", Some("exec")) => {
                let from = args.iter().position(|a| a == "--").map_or(1, |i| i + 1);
                return Ok(first_plain(from));
            }
            // `rustup run <toolchain> <command>…`
            ("rustup", Some("run")) => {
                return Ok(first_plain(1).and_then(|tc| first_plain(tc + 1)));
            }
            ("npm", Some("explore")) => {
                return Ok(args
                    .iter()
                    .position(|a| a == "--")
                    .map(|i| i + 1)
                    .filter(|&i| i < args.len()));
            }
            ("uv", Some("tool")) if args.get(1).is_some_and(|a| a == "run") => {
                return Ok(first_plain(2));
            }
            ("cmake", Some("-E")) => {
                return Ok(match args.get(1).map(String::as_str) {
                    Some("time") => (args.len() > 2).then_some(2),
                    Some("chdir") => {
                        let dir = args.get(2).map(String::as_str).unwrap_or("");
                        if !matches!(
                            paths::classify(dir, &LineState::new(), &self.roots),
                            Place::Inside
                        ) {
                            return refuse(
                                codes::POLICY_OUTSIDE_WORKTREE,
                                "run-outside",
                                format!("`cmake -E chdir {dir}` runs outside the worktree"),
                            )
                            .map(|_| None);
                        }
                        (args.len() > 3).then_some(3)
                    }
                    Some("env") => (2..args.len())
                        .find(|&i| !args[i].starts_with('-') && !args[i].contains('=')),
                    _ => None,
                });
            }
            ("cross-env" | "cross-env-shell", _) => {
                for a in args {
                    if let Some((name, value)) = a.split_once('=')
                        && super::is_name(name)
                    {
                        self.check_env(name, value, &LineState::new(), depth)?;
                    }
                }
                return Ok(args.iter().position(|a| !a.contains('=')));
            }
            _ => {}
        }
        let Some((_, subs)) = RUNNERS.iter().find(|(n, _)| *n == base) else {
            return Ok(None);
        };
        let mut i = 0;
        if !subs.is_empty() {
            // The subcommand comes first (after options without values).
            while i < args.len() && args[i].starts_with('-') {
                i += 1;
            }
            match args.get(i) {
                Some(s) if subs.contains(&s.as_str()) => i += 1,
                _ => return Ok(None),
            }
            if base == "uv" && args.get(i).is_some_and(|s| s == "tool") {
                return Ok(None);
            }
        }
        while i < args.len() {
            let x = &args[i];
            if x == "--" {
                i += 1;
                break;
            }
            if x == "-c" || x == "--call" {
                if let Some(script) = args.get(i + 1) {
                    self.check_depth(script, depth + 1)?;
                }
                return Ok(None);
            }
            if let Some(script) = x.strip_prefix("--call=") {
                self.check_depth(script, depth + 1)?;
                return Ok(None);
            }
            if x.starts_with('-') {
                i += if RUNNER_VALUE_OPTIONS.contains(&x.as_str()) {
                    2
                } else {
                    1
                };
                continue;
            }
            break;
        }
        Ok((i < args.len()).then_some(i))
    }
}

/// The program name a package spec runs: `@scope/pkg@1.2` → `pkg`, `rimraf@5` → `rimraf`.
pub(crate) fn package_program(spec: &str) -> String {
    let s = spec
        .strip_prefix('@')
        .map(|r| r.split_once('/').map(|(_, p)| p).unwrap_or(r))
        .unwrap_or(spec);
    s.split('@').next().unwrap_or(s).to_string()
}

fn inline_or_next_exists(arg: &str, i: usize, args: &[String]) -> bool {
    arg.contains('=') || i + 1 < args.len()
}

fn relative_depth(t: &str, st: &LineState) -> usize {
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

/// Files that hold secrets by name, wherever they are: `.env` and its variants
/// (not the `.example`/`.sample`/`.template` ones), private keys and keystores,
/// cloud credentials, Terraform state, the repository's git config (tokens of
/// CI checkouts live there).
pub(crate) fn is_secret_file(path: &str) -> bool {
    let p = path.trim_end_matches('/');
    let name = p.rsplit('/').next().unwrap_or(p).to_ascii_lowercase();
    let example = [
        "example", "sample", "template", "dist", "defaults", "default", "tmpl", "test",
    ]
    .iter()
    .any(|e| name.ends_with(&format!(".{e}")) || name.contains(&format!(".{e}.")));
    let fixture = p.split('/').any(|c| {
        matches!(
            c,
            "test" | "tests" | "testdata" | "fixtures" | "spec" | "__tests__" | "examples" | "docs"
        )
    });
    if example || fixture {
        return false;
    }
    let exact = [
        ".env",
        "id_rsa",
        "id_dsa",
        "id_ecdsa",
        "id_ed25519",
        "credentials.json",
        "master.key",
        ".netrc",
        ".pypirc",
        ".git-credentials",
        ".htpasswd",
        "terraform.tfstate",
    ];
    let suffixes = [
        ".pem",
        ".key",
        ".p12",
        ".pfx",
        ".jks",
        ".keystore",
        ".tfstate",
        ".tfstate.backup",
    ];
    exact.contains(&name.as_str())
        || name.starts_with(".env.")
        || suffixes.iter().any(|s| name.ends_with(s))
        || (name.starts_with("service-account") && name.ends_with(".json"))
        || p.ends_with(".git/config")
}

fn is_credential(rest: &str) -> bool {
    let segs: Vec<&str> = rest.split('/').filter(|s| !s.is_empty()).collect();
    HOME_CREDENTIALS.iter().any(|c| {
        let cs: Vec<&str> = c.split('/').collect();
        segs.len() >= cs.len()
            && segs.iter().zip(&cs).all(|(a, b)| {
                if paths::has_glob(a) {
                    paths::glob_match(a, b)
                } else {
                    a == b
                }
            })
    })
}

/// Config keys that make git run a program (lower-cased comparison).
pub(crate) fn check_git_key(key: &str) -> Result<(), PolicyViolation> {
    let k = key.to_ascii_lowercase();
    let exact = [
        "core.pager",
        "core.editor",
        "core.sshcommand",
        "core.fsmonitor",
        "core.hookspath",
        "core.askpass",
        "core.gitproxy",
        "core.alternaterefscommand",
        "core.worktree",
        "core.attributesfile",
        "core.excludesfile",
        "sequence.editor",
        "diff.external",
        "gpg.program",
        "credential.helper",
        "uploadpack.packobjectshook",
        "receive.procreceiverefs",
        "include.path",
        "web.browser",
        "protocol.allow",
        "ssh.variant",
        "http.proxy",
        "core.sshcommandoptions",
        "merge.tool",
        "diff.tool",
        "instaweb.httpd",
        "sendemail.smtpserver",
    ];
    let prefixes = [
        "alias.",
        "filter.",
        "includeif.",
        "pager.",
        "url.",
        "protocol.",
    ];
    let suffixes = [
        ".cmd",
        ".command",
        ".program",
        ".driver",
        ".textconv",
        ".helper",
        ".hook",
        ".editor",
        ".pager",
        ".sshcommand",
        ".uploadpack",
        ".receivepack",
        ".proxy",
        ".path",
        ".update",
    ];
    if exact.contains(&k.as_str())
        || prefixes.iter().any(|p| k.starts_with(p))
        || suffixes.iter().any(|s| k.ends_with(s))
    {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-exec-config",
            format!("git config `{key}` can make git run a program"),
        );
    }
    // Everything else must be a setting known to change only presentation,
    // identity, line endings or performance: git has hundreds of keys, and new
    // ones that run programs or write elsewhere appear with its releases
    // (`gpg.ssh.defaultKeyCommand`, `interactive.diffFilter`, `trace2.*Target`,
    // `init.templateDir`, `safe.directory`).
    if !SAFE_GIT_KEY_PREFIXES.iter().any(|p| k.starts_with(p))
        && !SAFE_GIT_KEYS.contains(&k.as_str())
    {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-config-key",
            format!(
                "git config `{key}` is not among the settings a command may change (identity, colours, line endings, diff and merge presentation, performance)"
            ),
        );
    }
    Ok(())
}

/// Git config sections whose every key is safe for a command to set.
const SAFE_GIT_KEY_PREFIXES: &[&str] = &[
    "user.",
    "author.",
    "committer.",
    "color.",
    "advice.",
    "i18n.",
    "log.",
    "status.",
    "column.",
    "rerere.",
    "blame.",
    "grep.",
    "pretty.",
];
/// Single git config keys that are safe for a command to set.
const SAFE_GIT_KEYS: &[&str] = &[
    "init.defaultbranch",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.filemode",
    "core.ignorecase",
    "core.quotepath",
    "core.whitespace",
    "core.precomposeunicode",
    "core.longpaths",
    "core.symlinks",
    "core.abbrev",
    "core.compression",
    "core.bigfilethreshold",
    "core.untrackedcache",
    "core.preloadindex",
    "core.splitindex",
    "core.commitgraph",
    "core.checkstat",
    "core.trustctime",
    "commit.gpgsign",
    "commit.verbose",
    "commit.cleanup",
    "commit.status",
    "tag.gpgsign",
    "tag.sort",
    "merge.conflictstyle",
    "merge.ff",
    "merge.renames",
    "merge.renamelimit",
    "merge.stat",
    "diff.renames",
    "diff.renamelimit",
    "diff.algorithm",
    "diff.noprefix",
    "diff.mnemonicprefix",
    "diff.colormoved",
    "diff.context",
    "diff.interhunkcontext",
    "diff.indentheuristic",
    "diff.statgraphwidth",
    "diff.submodule",
    "diff.ignoresubmodules",
    "pull.rebase",
    "pull.ff",
    "rebase.autosquash",
    "rebase.autostash",
    "rebase.stat",
    "gc.auto",
    "gc.autodetach",
    "fetch.prune",
    "fetch.parallel",
    "submodule.recurse",
    "submodule.fetchjobs",
    "protocol.version",
    "http.version",
    "http.postbuffer",
    "http.lowspeedlimit",
    "http.lowspeedtime",
    "pack.threads",
    "index.version",
    "index.threads",
    "feature.manyfiles",
    "checkout.workers",
    "checkout.defaultremote",
    "apply.whitespace",
    "am.threeway",
    "branch.sort",
    "help.autocorrect",
    "format.pretty",
    "versionsort.suffix",
];

/// Environment variables git reads that are safe to set.
const SAFE_GIT_ENV: &[&str] = &[
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_AUTHOR_DATE",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_COMMITTER_DATE",
    "GIT_TERMINAL_PROMPT",
    "GIT_PAGER_IN_USE",
    "GIT_FLUSH",
    "GIT_TRACE",
];

pub(crate) fn check_git_env(name: &str) -> Result<(), PolicyViolation> {
    if name.starts_with("GIT_") && !SAFE_GIT_ENV.contains(&name) {
        return refuse(
            codes::POLICY_GIT_EXEC_OPTION,
            "git-env",
            format!("setting `{name}` changes what git runs or where it looks"),
        );
    }
    Ok(())
}

/// Network git subcommands given an explicit URL (not a configured remote, not
/// this machine): code and history from outside the repository.
fn remote_url(sub: &str, rest: &[String]) -> Result<(), PolicyViolation> {
    let url = rest.iter().find(|x| {
        let x = x.strip_prefix("--remote=").unwrap_or(x);
        let scp_like = !x.contains("://")
            && x.split_once(':')
                .is_some_and(|(h, _)| h.contains('@') || h.contains('.'))
            && !x.starts_with('-')
            && !x.starts_with('.')
            && !x.starts_with('/');
        (x.contains("://") && !x.starts_with("file://") && !is_loopback(url_host(x))) || scp_like
    });
    match url {
        Some(u) => refuse(
            codes::POLICY_REMOTE_CODE,
            "remote-code",
            format!("`git {sub}` of `{u}` brings code from outside the repository"),
        ),
        None => Ok(()),
    }
}

/// What a git subcommand would change in the refs, objects or settings that the
/// user's repository shares with every worktree (branches, tags, the stash, the
/// reflog, remotes, other worktrees), if anything: a step works on its own
/// detached checkout and never needs to.
fn shared_ref_change(sub: &str, rest: &[String]) -> Option<&'static str> {
    let plain: Vec<&str> = rest
        .iter()
        .map(String::as_str)
        .filter(|x| !x.starts_with('-'))
        .collect();
    // A short option, alone or in a cluster (`-Df`), or one of the long names.
    let flag = |short: &str, long: &[&str]| {
        rest.iter().any(|x| {
            long.contains(&x.split('=').next().unwrap_or(x))
                || (x.starts_with('-')
                    && !x.starts_with("--")
                    && x[1..].chars().any(|c| short.contains(c)))
        })
    };
    match sub {
        "branch" if flag("dDfmMC", &["--delete", "--force", "--move", "--copy"]) => {
            Some("deletes, moves or overwrites a branch")
        }
        "tag" if flag("df", &["--delete", "--force"]) => Some("deletes or moves a tag"),
        "checkout" | "switch" if flag("BC", &["--force-create"]) => {
            Some("resets an existing branch")
        }
        "update-ref" => Some("writes refs directly"),
        "symbolic-ref" if plain.len() > 1 || flag("d", &["--delete"]) => {
            Some("rewrites a symbolic ref")
        }
        "reflog" if matches!(plain.first(), Some(&("expire" | "delete"))) => {
            Some("erases the reflog, the record that recovers lost commits")
        }
        "gc" if rest.iter().any(|x| x.starts_with("--prune")) => Some("prunes unreachable objects"),
        "prune" => Some("deletes unreachable objects"),
        "stash" if matches!(plain.first(), Some(&("drop" | "clear"))) => {
            Some("drops stashed changes, which every worktree shares")
        }
        "worktree" if matches!(plain.first(), Some(&("remove" | "prune" | "move"))) => {
            Some("changes worktrees other than this one")
        }
        "notes"
            if matches!(
                plain.first(),
                Some(&("add" | "append" | "copy" | "edit" | "merge" | "remove" | "prune"))
            ) =>
        {
            Some("writes notes refs, which every worktree shares")
        }
        "replace" if !rest.iter().any(|x| x == "-l" || x == "--list") => {
            Some("replaces objects for every worktree")
        }
        // `git fetch . HEAD:main`, `+refs/heads/*:refs/heads/*`: a refspec that
        // writes local branches or tags.
        "fetch" | "pull"
            if plain.iter().skip(1).any(|r| {
                r.split_once(':').is_some_and(|(_, dst)| {
                    let dst = dst.trim_start_matches('+');
                    !dst.is_empty() && !dst.starts_with("refs/remotes/")
                })
            }) =>
        {
            Some("writes local branches or tags through a refspec")
        }
        "remote"
            if matches!(
                plain.first(),
                Some(
                    &("add" | "set-url" | "rename" | "remove" | "rm" | "set-head" | "set-branches")
                )
            ) =>
        {
            Some("changes the repository's remotes")
        }
        _ => None,
    }
}

/// Names of variables a command may not read: every secret name of the
/// workspace ([`dandori_trace::secret_names::is_secret_name`]: `OPENAI_API_KEY`,
/// `DB_PASSWORD`, `GITHUB_TOKEN`, …), plus, because reading is riskier than
/// inheriting, session and certificate names (`FLASK_SESSION`, `CLIENT_CERT`) and
/// service URLs that usually carry credentials (`DATABASE_URL`).
pub(crate) fn is_secret_name(name: &str) -> bool {
    if dandori_trace::secret_names::is_secret_name(name) {
        return true;
    }
    let upper = name.to_ascii_uppercase();
    let parts: Vec<&str> = upper.split('_').collect();
    if parts.iter().any(|p| ["SESSION", "CERT"].contains(p)) {
        return true;
    }
    let url_hosts = [
        "DATABASE", "DB", "REDIS", "MONGO", "MONGODB", "POSTGRES", "PG", "MYSQL", "AMQP",
        "RABBITMQ", "SENTRY", "BROKER", "CELERY",
    ];
    (upper.ends_with("_URL") || upper.ends_with("_URI"))
        && parts.first().is_some_and(|p| url_hosts.contains(p))
}

/// Variable names referenced by `$NAME` / `${NAME…}` in a word's text.
pub(crate) fn referenced_vars(text: &str) -> Vec<&str> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let Some(re) = RE
        .get_or_init(|| Regex::new(r"\$\{?[!#]?([A-Za-z_][A-Za-z0-9_]*)").ok())
        .as_ref()
    else {
        return Vec::new();
    };
    re.captures_iter(text)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .collect()
}

/// The `-c`/`-e` code of an interpreter invocation, if any.
pub(crate) fn inline_code<'a>(base: &str, args: &'a [String]) -> Option<(&'static str, &'a str)> {
    let stem = super::version_stem(base);
    let (lang, flags): (&'static str, &[&str]) = match stem {
        "python" | "pypy" => ("python", &["-c"]),
        "node" | "nodejs" | "bun" | "deno" => ("js", &["-e", "--eval", "-p", "--print", "eval"]),
        "perl" => ("perl", &["-e", "-E"]),
        "ruby" => ("ruby", &["-e"]),
        "php" => ("php", &["-r"]),
        "lua" | "luajit" => ("lua", &["-e"]),
        "Rscript" => ("r", &["-e"]),
        "osascript" => ("applescript", &["-e"]),
        _ => return None,
    };
    for (i, x) in args.iter().enumerate() {
        if flags.contains(&x.as_str()) {
            return args.get(i + 1).map(|c| (lang, c.as_str()));
        }
        if let Some(code) = x
            .strip_prefix("--eval=")
            .or_else(|| x.strip_prefix("--print="))
        {
            return Some((lang, code));
        }
        // Clusters: `python -Ic CODE`, `perl -ne CODE`, `python -cCODE`.
        if x.starts_with('-') && !x.starts_with("--") && x.len() > 2 {
            let body = &x[1..];
            for f in flags
                .iter()
                .filter_map(|f| f.strip_prefix('-'))
                .filter(|f| f.len() == 1)
            {
                if body.ends_with(f) && body.chars().all(|c| c.is_ascii_alphabetic()) {
                    return args.get(i + 1).map(|c| (lang, c.as_str()));
                }
                if lang == "python" && body.starts_with(f) {
                    return Some((lang, &x[2..]));
                }
            }
        }
        if lang == "python" && !x.starts_with('-') {
            // `python script.py -c x`: the rest belongs to the script.
            return None;
        }
    }
    None
}

/// Refuses inline code that runs programs, reads the environment, deletes or
/// links files, or names paths outside the worktree.
pub(crate) fn check_inline_code(lang: &str, code: &str) -> Result<(), PolicyViolation> {
    let secret = [
        "environ",
        "getenv",
        "process.env",
        "ENV[",
        "ENV.",
        "$ENV",
        "$_ENV",
        "ENV.fetch",
        "Sys.getenv",
        "%ENV",
    ];
    if secret.iter().any(|s| code.contains(s)) {
        return refuse(
            codes::POLICY_SECRET_READ,
            "inline-code-env",
            format!("{lang} code reads the environment"),
        );
    }
    let common: &[&str] = &[
        "system", "exec", "spawn", "popen", "fork", "socket", "eval", "`", "unlink", "rmtree",
        "symlink", "chmod", "chown", "kill",
    ];
    let per_lang: &[&str] = match lang {
        "python" => &[
            "subprocess",
            "os.remove",
            "os.rmdir",
            "os.link",
            "os.rename",
            "os.replace",
            "shutil",
            "pty",
            "ctypes",
            "__import__",
            "importlib",
            "compile(",
            "expanduser",
            "Path.home",
            "builtins",
            "write_text",
            "write_bytes",
            "urllib",
            "http.client",
        ],
        "js" => &[
            "child_process",
            "process[",
            "globalThis",
            "global.",
            "constructor",
            "import(",
            "Function(",
            "process.binding",
            "Deno.",
            "Bun.",
            "homedir",
            "net.",
            "fetch(",
        ],
        "perl" | "ruby" | "php" => &[
            "open",
            "qx",
            "%x",
            "File.",
            "IO.",
            "Dir.",
            "Kernel",
            "shell_exec",
            "passthru",
            "proc_open",
            "file_put_contents",
            "require",
            "rm",
            "syscall",
        ],
        _ => &["os.", "io.", "do shell script", "system("],
    };
    if let Some(hit) = common.iter().chain(per_lang).find(|p| code.contains(*p)) {
        return refuse(
            codes::POLICY_INTERPRETER_CODE,
            "inline-code",
            format!("{lang} code uses `{hit}`"),
        );
    }
    if let Some(hit) = inline_code_regex(lang).and_then(|re| re.find(code)) {
        return refuse(
            codes::POLICY_INTERPRETER_CODE,
            "inline-code",
            format!("{lang} code uses `{}`", hit.as_str()),
        );
    }
    static LOOP: OnceLock<Option<Regex>> = OnceLock::new();
    let endless = LOOP
        .get_or_init(|| {
            Regex::new(r"while\s*\(?\s*(True|true|1)\s*\)?\s*[:{]|for\s*\(\s*;\s*;\s*\)|\bloop\s*\{|while\s+1\b").ok()
        })
        .as_ref();
    if endless.is_some_and(|re| re.is_match(code)) {
        return refuse(
            codes::POLICY_INFINITE_LOOP,
            "inline-code-loop",
            format!("{lang} code loops forever"),
        );
    }
    // Quoted literals that name places outside the worktree.
    for lit in quoted_literals(code) {
        let outside = lit.starts_with('~')
            || lit.split('/').any(|s| s == "..")
            || (lit.starts_with('/')
                && !["/tmp", "/dev/null"]
                    .iter()
                    .any(|p| paths::under(&paths::normalize_abs(lit), p)));
        if outside {
            return refuse(
                codes::POLICY_INTERPRETER_CODE,
                "inline-code-path",
                format!("{lang} code names `{lit}`, outside the worktree"),
            );
        }
    }
    Ok(())
}

/// Constructs a word list cannot express: modules that run programs or open
/// sockets, dynamic `require`, file writes and deletions, `open(…, "w")`.
fn inline_code_regex(lang: &str) -> Option<&'static Regex> {
    static JS: OnceLock<Option<Regex>> = OnceLock::new();
    static PY: OnceLock<Option<Regex>> = OnceLock::new();
    match lang {
        "js" => JS
            .get_or_init(|| {
                Regex::new(concat!(
                    r#"require\s*\(\s*['"`](node:)?(child_process|net|dgram|http|https|http2|tls|vm|worker_threads|cluster|inspector|os|v8|module|repl)['"`]"#,
                    r#"|require\s*\(\s*[^'"`\s]"#,
                    r"|\b(writeFile|appendFile|rm|rmdir|unlink|symlink|link|rename|chmod|chown|copyFile|cp|createWriteStream|truncate|openSync|open|mkdtemp|utimes)(Sync)?\s*\(",
                ))
                .ok()
            })
            .as_ref(),
        "python" => PY
            .get_or_init(|| {
                Regex::new(r#"open\s*\([^)]*,\s*(mode\s*=\s*)?['"][^'"]*[wax+]"#).ok()
            })
            .as_ref(),
        _ => None,
    }
}

fn quoted_literals(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find(['\'', '"']) {
        let q = &rest[start..start + 1];
        let after = &rest[start + 1..];
        match after.find(q) {
            Some(end) => {
                out.push(&after[..end]);
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

fn check_awk(args: &[String]) -> Result<(), PolicyViolation> {
    static RE: OnceLock<Option<Regex>> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(r#"system\s*\(|\|\s*getline|getline\s*<|print[f]?\b[^;{}]*[>|]|ENVIRON"#).ok()
    });
    let mut i = 0;
    while i < args.len() {
        let x = &args[i];
        if x == "-f" || x == "-v" || x == "-F" {
            i += 2;
            continue;
        }
        if !x.starts_with('-') {
            let hit = re.as_ref().is_none_or(|re| re.is_match(x));
            if hit {
                return refuse(
                    codes::POLICY_INTERPRETER_CODE,
                    "awk-program",
                    "the awk program runs commands, redirects output or reads ENVIRON".into(),
                );
            }
            return Ok(());
        }
        i += 1;
    }
    Ok(())
}

/// `Err` when a sed script executes (`e` command, `s///e`); `Ok(Some(file))` for
/// the first `w FILE` it writes.
fn sed_executes_or_writes(script: &str) -> Result<Option<String>, PolicyViolation> {
    let chars: Vec<char> = script.chars().collect();
    let exec = || {
        refuse(
            codes::POLICY_INTERPRETER_CODE,
            "sed-execute",
            format!("the sed script `{script}` executes commands"),
        )
    };
    let mut written = None;
    let mut i = 0;
    let mut at_command = true;
    while i < chars.len() {
        let c = chars[i];
        if at_command {
            match c {
                ' ' | '\t' | '\n' | ';' | '{' | '}' | '!' | ',' | '$' | '0'..='9' => {}
                '/' | '\\' => {
                    // An address regex: skip to its end.
                    let d = if c == '\\' {
                        chars.get(i + 1).copied().unwrap_or('/')
                    } else {
                        '/'
                    };
                    let mut j = if c == '\\' { i + 2 } else { i + 1 };
                    while j < chars.len() && chars[j] != d {
                        if chars[j] == '\\' {
                            j += 1;
                        }
                        j += 1;
                    }
                    i = j;
                }
                's' | 'y' => {
                    let Some(&d) = chars.get(i + 1) else { break };
                    let mut j = i + 2;
                    let mut seen = 0;
                    while j < chars.len() && seen < 2 {
                        if chars[j] == '\\' {
                            j += 1;
                        } else if chars[j] == d {
                            seen += 1;
                        }
                        j += 1;
                    }
                    let mut flags = String::new();
                    while j < chars.len() && chars[j].is_ascii_alphanumeric() {
                        flags.push(chars[j]);
                        if chars[j] == 'w' {
                            break;
                        }
                        j += 1;
                    }
                    if c == 's' && flags.contains('e') {
                        return exec().map(|_| None);
                    }
                    if c == 's' && flags.ends_with('w') {
                        let file: String =
                            chars[j + 1..].iter().collect::<String>().trim().to_string();
                        written.get_or_insert(file);
                        break;
                    }
                    i = j;
                    at_command = false;
                    continue;
                }
                'e' => return exec().map(|_| None),
                'w' | 'W' => {
                    let file: String = chars[i + 1..]
                        .iter()
                        .take_while(|&&ch| ch != '\n' && ch != ';')
                        .collect::<String>()
                        .trim()
                        .to_string();
                    written.get_or_insert(file);
                    break;
                }
                _ => at_command = false,
            }
        } else if c == ';' || c == '\n' || c == '{' || c == '}' {
            at_command = true;
        }
        i += 1;
    }
    Ok(written)
}

pub(crate) fn is_deleter(base: &str) -> bool {
    DELETERS.contains(&base)
}

/// Writes to another machine that cannot be taken back: package publication and
/// uploads (git pushes are refused by `check_git`). Dandori's own
/// git traffic (distributed runs) does not go through the policy; a step's
/// commands never need to push or publish.
pub(crate) fn check_remote_write(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
    let sub = subcommand(args);
    let has_word = |words: &[&str]| args.iter().any(|x| words.contains(&x.as_str()));
    let what = match base {
        "npm" | "pnpm" | "yarn" | "bun"
            if matches!(
                sub,
                "publish" | "unpublish" | "deprecate" | "dist-tag" | "owner" | "access"
            ) =>
        {
            format!("`{base} {sub}` changes a package on the registry")
        }
        "yarn" if sub == "npm" && has_word(&["publish", "tag"]) => {
            "`yarn npm publish` changes a package on the registry".to_string()
        }
        "cargo" if matches!(sub, "publish" | "yank" | "owner") => {
            format!("`cargo {sub}` changes a crate on the registry")
        }
        "twine" if matches!(sub, "upload" | "register") => {
            format!("`twine {sub}` publishes to a package index")
        }
        "poetry" | "flit" | "hatch" | "uv" | "pdm" | "maturin" | "rye"
            if matches!(sub, "publish" | "upload") =>
        {
            format!("`{base} {sub}` publishes to a package index")
        }
        "gem" if matches!(sub, "push" | "yank" | "owner") => {
            format!("`gem {sub}` changes a gem on the registry")
        }
        "mvn" | "mvnw" | "./mvnw"
            if args.iter().any(|x| {
                x == "deploy" || x.starts_with("deploy:") || x.starts_with("release:")
            }) =>
        {
            format!("`{base} deploy` publishes artifacts to a repository")
        }
        "gradle" | "gradlew"
            if args.iter().any(|x| {
                let task = x.rsplit(':').next().unwrap_or(x);
                task.starts_with("publish") || task.starts_with("upload")
            }) =>
        {
            format!("`{base}` publish tasks upload artifacts")
        }
        "dotnet" if sub == "nuget" && has_word(&["push", "delete"]) => {
            "`dotnet nuget push` publishes a package".to_string()
        }
        "docker" | "podman" | "buildah" if sub == "push" => {
            format!("`{base} push` uploads an image")
        }
        "curl" | "wget" => match http_write_target(base, args) {
            Some(host) => format!("`{base}` sends data to `{host}`, another machine"),
            None => return Ok(()),
        },
        _ => return Ok(()),
    };
    refuse(codes::POLICY_REMOTE_WRITE, "remote-write", what)
}

/// Installs and runs of code from somewhere other than the package registry the
/// package manager is configured with: URLs and VCS specs, other indexes and
/// registries, remote modules run in place. Environment setup has the network,
/// so this is where a hostile command would fetch its payload.
pub(crate) fn check_remote_code(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
    let sub = subcommand(args);
    let is_remote = |x: &str| {
        let l = x.to_ascii_lowercase();
        let spec = l.rsplit_once(" @ ").map_or(l.as_str(), |(_, u)| u).trim();
        let spec = spec
            .split_once('@')
            .filter(|(n, _)| !n.contains(':') && !n.contains('/'))
            .map_or(spec, |(_, u)| u);
        [
            "http://", "https://", "git+", "git://", "hg+", "svn+", "bzr+", "ssh://", "ftp://",
        ]
        .iter()
        .any(|p| spec.starts_with(p))
            || ["github:", "gitlab:", "bitbucket:", "gist:"]
                .iter()
                .any(|p| spec.starts_with(p))
    };
    // Options whose value names another index or registry.
    let index_opts: &[&str] = match base {
        "pip" | "pip3" | "uv" | "pdm" | "pipenv" | "poetry" => &[
            "-i",
            "--index-url",
            "--extra-index-url",
            "--index",
            "--default-index",
            "-f",
            "--find-links",
            "--trusted-host",
        ],
        "npm" | "pnpm" | "yarn" | "bun" | "npx" => &["--registry"],
        "gem" => &["--source", "-s"],
        "cargo" => &["--index", "--registry", "--git"],
        _ => &[],
    };
    for (i, a) in args.iter().enumerate() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v)),
            _ => (a.as_str(), None),
        };
        if index_opts.contains(&name) {
            let value = inline.or(args.get(i + 1).map(String::as_str)).unwrap_or("");
            // A loopback index is no safer than a remote one: whatever listens
            // there (a server the agent started itself) chose the packages.
            if !value.is_empty() && (value.contains("://") || name == "--trusted-host") {
                return refuse(
                    codes::POLICY_REMOTE_CODE,
                    "remote-code",
                    format!(
                        "`{base} {name} {value}` takes packages from another index than the configured one"
                    ),
                );
            }
        }
    }
    let installs = match base {
        "pip" | "pip3" => matches!(sub, "install" | "download" | "wheel"),
        "uv" => matches!(sub, "pip" | "add" | "tool"),
        "npm" | "pnpm" | "yarn" => {
            matches!(
                sub,
                "install" | "i" | "add" | "update" | "x" | "dlx" | "exec" | "create"
            )
        }
        "bun" => matches!(sub, "install" | "i" | "add" | "x" | "create" | "run"),
        "npx" | "pnpx" | "bunx" | "uvx" | "pipx" | "deno" => true,
        "pdm" | "poetry" | "pipenv" => matches!(sub, "add" | "install"),
        "go" => matches!(sub, "run" | "install" | "get"),
        _ => false,
    };
    // `uv run --with SPEC`, `uvx --from SPEC`: the packages the run installs first.
    let with_value = args.iter().enumerate().find_map(|(i, a)| {
        let v = match a.split_once('=') {
            Some(("--with" | "--from" | "--with-requirements", v)) => Some(v),
            _ if matches!(a.as_str(), "--with" | "--from") => args.get(i + 1).map(String::as_str),
            _ => None,
        };
        v.filter(|v| is_remote(v))
    });
    if let Some(x) = with_value {
        return refuse(
            codes::POLICY_REMOTE_CODE,
            "remote-code",
            format!("`{base}` would install `{x}`, code from outside the package registry"),
        );
    }
    if !installs {
        return Ok(());
    }
    if let Some(x) = args.iter().find(|x| !x.starts_with('-') && is_remote(x)) {
        return refuse(
            codes::POLICY_REMOTE_CODE,
            "remote-code",
            format!("`{base}` would install or run `{x}`, code from outside the package registry"),
        );
    }
    // `go run host/module@version` fetches and runs a module in place.
    if base == "go"
        && sub == "run"
        && let Some(x) = args.iter().find(|x| {
            !x.starts_with('-')
                && x.contains('@')
                && x.split('/').next().is_some_and(|h| h.contains('.'))
        })
    {
        return refuse(
            codes::POLICY_REMOTE_CODE,
            "remote-code",
            format!("`go run {x}` fetches a module and runs it"),
        );
    }
    Ok(())
}

/// The files `curl`/`wget` write what they download to: `-o F`/`--output F`
/// (also in clusters: `-fsSLo F`), `-O`/`--remote-name` and wget's default (the
/// URL's last path segment), `wget -O F`/`--output-document=F`.
pub(crate) fn downloads(base: &str, args: &[String]) -> Vec<String> {
    let urls: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .filter(|a| {
            a.contains("://") || (!a.starts_with('-') && a.contains('.') && a.contains('/'))
        })
        .collect();
    let remote_names = || {
        urls.iter()
            .filter_map(|u| {
                let path = u.split(['?', '#']).next().unwrap_or(u);
                let path = path.split_once("://").map_or(path, |(_, r)| r);
                path.split_once('/')
                    .map(|(_, p)| p.rsplit('/').next().unwrap_or(p))
                    .filter(|n| !n.is_empty())
                    .map(str::to_string)
            })
            .collect::<Vec<_>>()
    };
    let mut out = Vec::new();
    let mut remote_name = base == "wget";
    let explicit: &[&str] = if base == "curl" {
        &["--output"]
    } else {
        &["--output-document"]
    };
    let short = if base == "curl" { 'o' } else { 'O' };
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if let Some((n, v)) = a.split_once('=')
            && explicit.contains(&n)
        {
            out.push(v.to_string());
            remote_name = false;
        } else if explicit.contains(&a)
            || (a.starts_with('-') && !a.starts_with("--") && a.ends_with(short))
        {
            if let Some(v) = args.get(i + 1) {
                out.push(v.clone());
            }
            remote_name = false;
            i += 1;
        } else if a.starts_with('-')
            && !a.starts_with("--")
            && a.len() > 2
            && a[1..].contains(short)
        {
            // `-oFILE`
            let at = a.find(short).unwrap_or(0);
            out.push(a[at + 1..].to_string());
            remote_name = false;
        } else if base == "curl"
            && (a == "--remote-name"
                || (a.starts_with('-') && !a.starts_with("--") && a.contains('O')))
        {
            remote_name = true;
        }
        i += 1;
    }
    if remote_name {
        out.extend(remote_names());
    }
    out.into_iter()
        .map(|f| f.trim_start_matches("./").to_string())
        .filter(|f| !f.is_empty() && f != "-")
        .collect()
}

/// The linker rustc's codegen option at `tokens[i]` names: `-Clinker=X`, or `-C`
/// followed by `linker=X` (argv words, or the words of `RUSTFLAGS`).
pub(crate) fn linker_at<S: AsRef<str>>(tokens: &[S], i: usize) -> Option<&str> {
    let t = tokens.get(i)?.as_ref();
    t.strip_prefix("-Clinker=").or_else(|| {
        (t == "-C")
            .then(|| {
                tokens
                    .get(i + 1)
                    .and_then(|n| n.as_ref().strip_prefix("linker="))
            })
            .flatten()
    })
}

/// Options whose value is a command line the tool runs (`tar --to-command`,
/// `tar -I`, `--checkpoint-action=exec=…`, `zip -TT`, `rsync -e`, `ssh -o
/// ProxyCommand=…`, `man -P`, `vim -c ':!…'`): `(option, command)` pairs.
pub(crate) fn exec_option_values(base: &str, args: &[String]) -> Vec<(String, String)> {
    let opts: &[&str] = match base {
        "tar" | "gtar" | "bsdtar" => &[
            "--to-command",
            "--use-compress-program",
            "-I",
            "--info-script",
            "--new-volume-script",
            "-F",
            "--rsh-command",
            "--rmt-command",
        ],
        "zip" => &["-TT", "--unzip-command"],
        "rsync" => &["-e", "--rsh", "--rsync-path"],
        "man" => &["-P", "--pager", "-H", "--html"],
        "go" => &["-toolexec", "-exec", "-vettool"],
        "npm" | "pnpm" | "yarn" => &[
            "--script-shell",
            "--shell",
            "--git",
            "--editor",
            "--browser",
        ],
        "sort" => &["--compress-program"],
        _ => &[],
    };
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if opts.contains(&name)
            && let Some(v) = inline.or_else(|| args.get(i + 1).cloned())
        {
            out.push((name.to_string(), v));
        }
        // `cargo --config 'target.x.runner="…"'`, `rustc -C linker=…`, `make
        // SHELL=…`, `java -XX:OnError=…`: settings whose value is a program.
        if base == "cargo"
            && (a == "--config" || a.starts_with("--config="))
            && let Some(kv) = a
                .strip_prefix("--config=")
                .map(str::to_string)
                .or_else(|| args.get(i + 1).cloned())
            && let Some((k, v)) = kv.split_once('=')
            && [
                "runner",
                "linker",
                "rustc-wrapper",
                "rustc-workspace-wrapper",
                "rustc",
                "rustdoc",
            ]
            .iter()
            .any(|p| k.trim().ends_with(p))
        {
            out.push((
                format!("--config {}", k.trim()),
                v.trim().trim_matches('"').to_string(),
            ));
        }
        if matches!(base, "rustc" | "cargo")
            && let Some(v) = linker_at(args, i)
        {
            out.push(("-C linker".into(), v.to_string()));
        }
        if matches!(base, "make" | "gmake")
            && let Some((k, v)) = a.split_once('=')
            && matches!(
                k,
                "SHELL" | "MAKE" | "CC" | "CXX" | "LD" | "AR" | "CPP" | "FC"
            )
        {
            out.push((k.to_string(), v.to_string()));
        }
        if base == "java"
            && let Some(v) = a
                .strip_prefix("-XX:OnError=")
                .or_else(|| a.strip_prefix("-XX:OnOutOfMemoryError="))
        {
            out.push(("-XX:OnError".into(), v.to_string()));
        }
        if matches!(base, "tar" | "gtar" | "bsdtar")
            && let Some(v) = a.strip_prefix("--checkpoint-action=exec=")
        {
            out.push(("--checkpoint-action".into(), v.to_string()));
        }
        if base == "ssh" {
            let o = if a == "-o" {
                args.get(i + 1).map(String::as_str)
            } else {
                a.strip_prefix("-o")
            };
            if let Some((k, v)) = o.and_then(|o| o.split_once(['=', ' '])) {
                let k = k.to_ascii_lowercase();
                if k == "proxycommand" || k == "localcommand" || k == "knownhostscommand" {
                    out.push((format!("-o {k}"), v.to_string()));
                }
            }
        }
        if matches!(base, "vim" | "vi" | "nvim" | "ex" | "view")
            && let Some(c) = (a == "-c" || a == "--cmd")
                .then(|| args.get(i + 1))
                .flatten()
                .map(String::as_str)
                .or_else(|| a.strip_prefix('+'))
            && let Some(cmd) = c.trim_start_matches(':').strip_prefix('!')
        {
            out.push(("-c :!".into(), cmd.to_string()));
        }
    }
    out
}

/// The subcommand: the first word that is neither an option nor the value of the
/// option before it (`npm --registry URL publish` → `publish`). An option's value
/// is guessed: a word after a long option without `=`, or after a short option
/// of one letter, counts as its value when another plain word follows.
fn subcommand(args: &[String]) -> &str {
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

/// The first remote host `curl`/`wget` would send data to (a body, a form, an
/// upload or a writing method), if any. Loopback targets are local tests.
fn http_write_target(base: &str, args: &[String]) -> Option<String> {
    // Options that send data; like those of CURL_VALUE they take a value.
    const CURL_WRITE: &[&str] = &[
        "-d",
        "--data",
        "--data-raw",
        "--data-binary",
        "--data-urlencode",
        "--data-ascii",
        "-F",
        "--form",
        "--form-string",
        "-T",
        "--upload-file",
        "--json",
    ];
    // The other curl options that take a value.
    const CURL_VALUE: &[&str] = &[
        "-X",
        "--request",
        "-H",
        "--header",
        "-o",
        "--output",
        "-u",
        "--user",
        "-A",
        "--user-agent",
        "-e",
        "--referer",
        "-b",
        "--cookie",
        "-c",
        "--cookie-jar",
        "-m",
        "--max-time",
        "--connect-timeout",
        "-w",
        "--write-out",
        "--retry",
        "-x",
        "--proxy",
        "-K",
        "--config",
        "--resolve",
        "--cacert",
        "--cert",
        "--key",
        "-r",
        "--range",
        "-U",
        "--proxy-user",
    ];
    const WGET_WRITE: &[&str] = &["--post-data", "--post-file", "--body-data", "--body-file"];
    let mut writes = false;
    let mut targets: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (a, None),
        };
        let method =
            |m: &str| !matches!(m.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "OPTIONS");
        if base == "curl" {
            if CURL_WRITE.contains(&name) {
                writes = true;
            }
            if let Some(m) = a.strip_prefix("-X").filter(|m| !m.is_empty()) {
                writes |= method(m);
            }
            if matches!(name, "-X" | "--request") {
                let m = inline.or_else(|| args.get(i + 1).map(String::as_str));
                writes |= m.is_some_and(method);
            }
            if name == "--url" {
                targets.extend(inline.or_else(|| args.get(i + 1).map(String::as_str)));
            }
            if a.starts_with("-d") && a.len() > 2 && !a.starts_with("--") {
                writes = true;
            }
            if CURL_WRITE.contains(&name) || CURL_VALUE.contains(&name) || name == "--url" {
                i += if inline.is_some() { 1 } else { 2 };
                continue;
            }
        } else {
            if WGET_WRITE.contains(&name) {
                writes = true;
            }
            if name == "--method" {
                let m = inline.or_else(|| args.get(i + 1).map(String::as_str));
                writes |= m.is_some_and(method);
            }
        }
        if !a.starts_with('-') {
            targets.push(a);
        }
        i += 1;
    }
    if !writes {
        return None;
    }
    targets
        .into_iter()
        .map(url_host)
        .find(|h| !is_loopback(h))
        .map(str::to_string)
}

/// The host of a URL or `host[:port][/path]` argument.
fn url_host(target: &str) -> &str {
    let rest = target.split_once("://").map_or(target, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host.strip_prefix('[') {
        return v6.split(']').next().unwrap_or(v6);
    }
    host.split(':').next().unwrap_or(host)
}

/// A URL whose host is named as this machine (`localhost`, `127.*`, `::1`):
/// unlike [`is_loopback`] for upload targets, an unspecified host (`0.0.0.0`,
/// empty) does not count.
pub(crate) fn is_loopback_url(url: &str) -> bool {
    let host = url_host(url);
    !host.is_empty() && host != "0.0.0.0" && is_loopback(host)
}

fn is_loopback(host: &str) -> bool {
    let h = host.to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h == "::1"
        || h == "0.0.0.0"
        || h.starts_with("127.")
        || h.is_empty()
}
