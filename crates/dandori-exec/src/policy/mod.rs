//! The command policy of seed 002 §11.1: an executable allowlist plus forbidden
//! patterns. A line is split the way a POSIX shell would split it (quotes,
//! escapes, `;`, `&&`, `||`, `|`, `&`, subshells, redirections, `$(…)`, backticks)
//! and every simple command of the chain, including those inside command
//! substitutions and behind wrappers such as `env` or `timeout`, is checked.
//! Nothing is matched as a substring of the raw line.

pub mod codes;
mod lexer;
mod line_code;
mod listen;
mod paths;
mod rules;
mod symlinks;
mod verdict;

pub use verdict::{Decision, Verdict};

use std::collections::BTreeSet;

use dandori_config::CommandPolicyConfig;
use regex::Regex;
use serde::Serialize;

use crate::ExecError;
use lexer::{Token, Word};
use paths::LineState;
use rules::Args;

/// Longest command line accepted.
pub const MAX_LINE_LEN: usize = 16 * 1024;
/// How deep command substitutions are followed.
const MAX_DEPTH: usize = 4;

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
    words: Vec<Word>,
    /// Assignment and redirection-target words.
    #[serde(skip)]
    other_words: Vec<Word>,
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

/// The built-in allowlist: seed 002 §11.1.1 plus the tools dandori's own setup and
/// verification commands use, and harmless file utilities.
pub const DEFAULT_ALLOWED_COMMANDS: &[&str] = &[
    // seed 002 §11.1.1
    "pip",
    "conda",
    "npm",
    "yarn",
    "pnpm",
    "mvn",
    "gradle",
    "go",
    "make",
    // python
    "pip3",
    "python",
    "python3",
    "uv",
    "uvx",
    "mamba",
    "micromamba",
    "poetry",
    "pdm",
    "pipenv",
    "hatch",
    "tox",
    "nox",
    "pytest",
    "virtualenv",
    // node
    "node",
    "npx",
    "corepack",
    "bun",
    "deno",
    "tsc",
    "jest",
    "vitest",
    // test runners and coverage wrappers a package's `test` script names
    // (run from node_modules/.bin, like jest and vitest)
    "mocha",
    "ava",
    "tape",
    "tap",
    "uvu",
    "jasmine",
    "nyc",
    "c8",
    // java
    "mvnw",
    "gradlew",
    "java",
    "javac",
    // go, rust
    "gofmt",
    "cargo",
    "rustc",
    "rustup",
    // ruby, .net (seed 002 §13.1.1; php and composer below)
    "ruby",
    "bundle",
    "bundler",
    "gem",
    "rake",
    "dotnet",
    // build and harmless utilities
    "cmake",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "cd",
    "pwd",
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "sort",
    "mkdir",
    "cp",
    "mv",
    "rm",
    "touch",
    "ln",
    "which",
    "type",
    "dirname",
    "basename",
    "git",
    "export",
    "tee",
    "chmod",
    // php (seed 004's sample plan runs `php artisan test`)
    "php",
    "composer",
    // developer tools: linters, type checkers, search, text utilities
    "ruff",
    "mypy",
    "black",
    "isort",
    "flake8",
    "pylint",
    "pyright",
    "pyflakes",
    "coverage",
    "prettier",
    "eslint",
    "biome",
    "rustfmt",
    "golangci-lint",
    "rg",
    "sed",
    "awk",
    "gawk",
    "find",
    "diff",
    "cmp",
    "uniq",
    "cut",
    "tr",
    "jq",
    "file",
    "stat",
    "du",
    "realpath",
    "readlink",
    "date",
    "sleep",
    "seq",
    "nl",
    "tree",
    "rmdir",
    "read",
];

const PRIVILEGE: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "chroot",
    "setpriv",
    "gosu",
    "su-exec",
    "sg",
    "newgrp",
    "machinectl",
    "nsenter",
    "unshare",
    "capsh",
    "setcap",
];
const NETWORK: &[&str] = &[
    "ip",
    "ifconfig",
    "iptables",
    "ip6tables",
    "iptables-restore",
    "ip6tables-restore",
    "iptables-save",
    "nft",
    "route",
    "nmcli",
    "nmtui",
    "netplan",
    "ufw",
    "firewall-cmd",
    "tc",
    "ethtool",
    "iw",
    "iwconfig",
    "resolvectl",
    "systemd-resolve",
    "hostnamectl",
    "brctl",
    "dhclient",
    "arp",
    "ebtables",
    "wg",
    "wg-quick",
];
const SYSTEM: &[&str] = &[
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "systemctl",
    "service",
    "mount",
    "umount",
    "fdisk",
    "sfdisk",
    "parted",
    "wipefs",
    "mkswap",
    "swapon",
    "swapoff",
    "modprobe",
    "insmod",
    "rmmod",
    "sysctl",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "passwd",
    "chpasswd",
    "visudo",
    "loginctl",
    "kill",
    "pkill",
    "killall",
    "dd",
    "shred",
    "apt",
    "apt-get",
    "dpkg",
    "yum",
    "dnf",
    "apk",
    "pacman",
    "zypper",
    "snap",
];
const EVAL: &[&str] = &["eval", "source", ".", "trap", "alias"];
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "fish", "csh", "tcsh", "ash", "busybox",
];
const INTERPRETERS: &[&str] = &[
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
/// Programs that run another program given as an argument.
const WRAPPERS: &[&str] = &[
    "env", "nice", "nohup", "timeout", "time", "stdbuf", "xargs", "command", "builtin", "ionice",
    "setsid", "exec", "strace", "ltrace", "chronic", "unbuffer",
];
/// Wrappers whose program keeps running after the command returns.
const BACKGROUND_WRAPPERS: &[&str] = &["nohup", "setsid"];
/// Shell reserved words that open or continue a compound command: the command
/// after them is checked as if it stood alone.
const KEYWORDS: &[&str] = &["if", "then", "else", "elif", "do", "!", "{", "time"];
/// Reserved words that close a compound command.
const CLOSERS: &[&str] = &["fi", "done", "}", "esac"];
/// Variables that choose where programs and modules are loaded from.
const SEARCH_PATHS: &[&str] = &[
    "PATH",
    "PYTHONPATH",
    "NODE_PATH",
    "PERL5LIB",
    "RUBYLIB",
    "CLASSPATH",
    "GOPATH",
];
const DANGEROUS_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "IFS",
    "SHELLOPTS",
    "PS4",
    "GCONV_PATH",
    "NODE_OPTIONS_PRELOAD",
];
/// Variables whose value is a command line a tool runs for itself (a pager, an
/// editor, a compiler, a wrapper): the value is checked as a command of its own.
const PROGRAM_ENV: &[&str] = &[
    "PAGER",
    "MANPAGER",
    "EDITOR",
    "VISUAL",
    "SSH_ASKPASS",
    "SUDO_ASKPASS",
    "BROWSER",
    "LESSOPEN",
    "LESSCLOSE",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "FC",
    "CONFIG_SHELL",
    "MAKESHELL",
    "RUSTC",
    "RUSTDOC",
    "RUSTC_WRAPPER",
    "RUSTC_WORKSPACE_WRAPPER",
];
/// Variables that make an interpreter load code before the program it runs: every
/// path in them must be inside the worktree.
const PRELOAD_ENV: &[&str] = &[
    "NODE_OPTIONS",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "RUBYOPT",
    "PERL5OPT",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
];
/// Shell builtins: their presence needs `sh -c`.
const BUILTINS: &[&str] = &[
    "cd", "export", "test", "[", "type", "pwd", "true", "false", "read",
];

const PROTECTED_PREFIXES: &[&str] = &[
    "/etc",
    "/sys",
    "/proc/sys",
    "/proc/sysrq-trigger",
    "/proc/kcore",
    "/boot",
    "/root",
    "/lib/modules",
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/var/lib/dpkg",
    "/var/lib/apt",
];
use paths::SAFE_DEVICES;
const CREDENTIAL_PARTS: &[&str] = &[
    ".ssh",
    ".aws",
    ".gnupg",
    ".netrc",
    ".docker/config.json",
    ".kube/config",
    ".git-credentials",
    ".pypirc",
    ".npmrc",
    "id_rsa",
    "id_ed25519",
];

/// The command policy. Build it from config with [`CommandPolicy::new`]; the
/// default is the built-in policy.
#[derive(Debug, Clone)]
pub struct CommandPolicy {
    allowed: BTreeSet<String>,
    forbidden: Vec<(String, Regex)>,
    /// The worktree and other writable directories as absolute paths: absolute
    /// paths under them are inside.
    roots: Vec<String>,
    /// `$HOME` by value ([`CommandPolicy::with_home`]).
    home: Option<String>,
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

    pub(crate) fn check_depth(
        &self,
        line: &str,
        depth: usize,
    ) -> Result<ParsedCommand, PolicyViolation> {
        if depth > MAX_DEPTH {
            return Err(PolicyViolation::new(
                codes::POLICY_TOO_DEEP,
                format!("command substitutions nested deeper than {MAX_DEPTH}"),
            ));
        }
        if line.len() > MAX_LINE_LEN {
            return Err(PolicyViolation::new(
                codes::POLICY_TOO_LONG,
                format!(
                    "command line of {} bytes exceeds {MAX_LINE_LEN}",
                    line.len()
                ),
            ));
        }
        let tokens = lexer::lex(line)?;
        let parsed = parse(line, tokens)?;
        if parsed.commands.is_empty() {
            return Err(PolicyViolation::new(
                codes::POLICY_EMPTY_COMMAND,
                "empty command line",
            ));
        }
        let pipelines_into_shell = parsed
            .commands
            .iter()
            .any(|c| c.pipe_position > 0 && reads_code_from_stdin(c));
        if pipelines_into_shell {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!("`{line}` pipes output into a shell or interpreter"),
            ));
        }
        // A program missing from the allowlist is only "needs approval": keep
        // checking the rest of the line, a later refusal wins.
        let mut not_allowed = None;
        let mut st = LineState::new();
        st.home = self.home.clone();
        for cmd in &parsed.commands {
            match self.check_simple(cmd, depth, &mut st) {
                Ok(()) => {}
                Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                    not_allowed.get_or_insert(v);
                }
                Err(v) => return Err(v),
            }
        }
        match not_allowed {
            Some(v) => Err(v),
            None => Ok(parsed),
        }
    }

    fn check_simple(
        &self,
        cmd: &SimpleCommand,
        depth: usize,
        st: &mut LineState,
    ) -> Result<(), PolicyViolation> {
        if SHELLS.contains(&basename(&cmd.program))
            && cmd
                .words
                .iter()
                .skip(1)
                .any(|w| !w.substitutions.is_empty())
        {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!(
                    "`{}` is fed with the output of a command substitution",
                    cmd.program
                ),
            ));
        }
        let mut sub_not_allowed: Option<PolicyViolation> = None;
        for w in cmd
            .words
            .iter()
            .chain(&cmd.other_words)
            .chain(cmd.redirections.iter().map(|r| &r.word))
        {
            if w.expands && w.text.contains("${!") {
                return Err(PolicyViolation::new(
                    codes::POLICY_SECRET_READ,
                    format!("`{}`: indirect expansion can read any variable", w.text),
                )
                .with_rule("indirect-expansion"));
            }
            for name in rules::referenced_vars(&w.text) {
                if rules::is_secret_name(name) {
                    return Err(PolicyViolation::new(
                        codes::POLICY_SECRET_READ,
                        format!("`${name}` holds a secret"),
                    )
                    .with_rule("secret-variable"));
                }
            }
            for sub in &w.substitutions {
                match self.check_depth(sub, depth + 1) {
                    Ok(_) => {}
                    // A program missing from the allowlist inside a substitution
                    // must not hide what the command itself does (`eval "$(…)"`).
                    Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                        sub_not_allowed.get_or_insert(v);
                    }
                    Err(v) => {
                        let rule = v.rule.clone();
                        return Err(PolicyViolation::new(
                            v.code,
                            format!("in command substitution `{sub}`: {}", v.message),
                        )
                        .with_rule(&rule));
                    }
                }
            }
        }
        let assignment_words: Vec<&Word> = cmd
            .other_words
            .iter()
            .filter(|w| w.text.split_once('=').is_some_and(|(n, _)| is_name(n)))
            .collect();
        for (k, (name, value)) in cmd.assignments.iter().enumerate() {
            self.check_env(name, value, st, depth)?;
            check_path_like(value)?;
            if cmd.program.is_empty() {
                let resolved = assignment_words.get(k).and_then(|w| {
                    let mut v = (*w).clone();
                    v.text = value.clone();
                    paths::resolve(&v, st)
                });
                st.vars.insert(name.clone(), resolved);
            }
        }
        let effective = effective_program(cmd);
        for r in &cmd.redirections {
            check_path_like(&r.target)?;
            let value = paths::resolve(&r.word, st);
            match r.operator.trim_start_matches(|c: char| c.is_ascii_digit()) {
                ">" | ">>" | ">|" | "&>" | "&>>" | "<>" => {
                    self.check_write(value.as_deref(), &r.target, st, "redirection target")?;
                    st.written
                        .insert(r.target.trim_start_matches("./").to_string());
                    if matches!(effective, "curl" | "wget") {
                        st.fetched
                            .insert(r.target.trim_start_matches("./").to_string());
                    }
                }
                "<<<" => {
                    // A here-string is stdin: for a shell or an interpreter, code.
                    let stem = version_stem(effective);
                    if SHELLS.contains(&effective) {
                        self.check_depth(&r.target, depth + 1)?;
                    } else if INTERPRETERS.contains(&stem) || EVAL.contains(&effective) {
                        rules::check_inline_code(effective, &r.target)?;
                    }
                }
                ">&" | "<&" => {
                    if !r.target.chars().all(|c| c.is_ascii_digit() || c == '-') {
                        self.check_write(value.as_deref(), &r.target, st, "redirection target")?;
                    }
                }
                _ => self.check_read(value.as_deref(), st)?,
            }
        }
        if cmd.program.is_empty() {
            return sub_not_allowed.map_or(Ok(()), Err);
        }
        let joined = std::iter::once(cmd.program.as_str())
            .chain(cmd.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ");
        for (pat, re) in &self.forbidden {
            if re.is_match(&joined) {
                return Err(PolicyViolation::new(
                    codes::POLICY_FORBIDDEN_PATTERN,
                    format!("`{joined}` matches the forbidden pattern `{pat}`"),
                ));
            }
        }
        // Brace expansion or escapes in the program name (`{rm,-rf,/}`, `$'\x72m'`)
        // hide the program from anyone reading the line.
        let obfuscated = |t: &str| {
            (t.contains('{') && t.contains(',') && t.contains('}'))
                || t.contains("$'")
                || t.contains("\\x")
        };
        if cmd.words.first().is_some_and(|w| {
            (w.expands && !w.text.starts_with('~'))
                || obfuscated(&w.text)
                || obfuscated(&cmd.program)
        }) {
            return Err(PolicyViolation::new(
                codes::POLICY_DYNAMIC_COMMAND,
                format!(
                    "the program `{}` is computed when the line runs",
                    cmd.program
                ),
            ));
        }
        self.check_program(
            &cmd.program,
            &cmd.args,
            cmd.words.get(1..).unwrap_or(&[]),
            depth,
            st,
            false,
        )?;
        sub_not_allowed.map_or(Ok(()), Err)
    }

    /// Checks one program with its arguments. `stdin_args`: more arguments come
    /// from stdin at run time (`xargs`).
    fn check_program(
        &self,
        program: &str,
        args: &[String],
        arg_words: &[Word],
        depth: usize,
        st: &mut LineState,
        stdin_args: bool,
    ) -> Result<(), PolicyViolation> {
        let base = basename(program);
        let refuse = |code: &'static str, what: &str| {
            Err(PolicyViolation::new(
                code,
                format!("`{base}` is refused: {what}"),
            ))
        };
        if matches!(base, "while" | "until") && program == base {
            let cond: Vec<&str> = args.iter().map(String::as_str).collect();
            let endless = matches!(
                (base, cond.as_slice()),
                (
                    "while",
                    ["true" | ":"] | ["[" | "test", "1", ..] | ["sleep", ..]
                ) | ("until", ["false"] | ["!", "true"])
            );
            if endless {
                return Err(PolicyViolation::new(
                    codes::POLICY_INFINITE_LOOP,
                    format!("`{base} {}` never ends", cond.join(" ")),
                )
                .with_rule("endless-loop"));
            }
        }
        // Reserved words: the command after them is what runs.
        if (KEYWORDS.contains(&base) || matches!(base, "while" | "until")) && program == base {
            return match args.first() {
                Some(next) => self.check_program(
                    next,
                    &args[1..],
                    arg_words.get(1..).unwrap_or(&[]),
                    depth,
                    st,
                    stdin_args,
                ),
                None => Ok(()),
            };
        }
        if CLOSERS.contains(&base) && program == base {
            return Ok(());
        }
        match base {
            "for" | "select" => {
                if let Some(var) = args.first() {
                    st.vars.insert(var.clone(), None);
                }
                return Ok(());
            }
            "case" | "coproc" => {
                return Err(PolicyViolation::new(
                    codes::POLICY_UNSUPPORTED_SYNTAX,
                    format!("`{base}` is not accepted by the policy"),
                ));
            }
            "export" | "readonly" | "local" | "declare" | "typeset" if !args.is_empty() => {
                let nameref = args
                    .iter()
                    .any(|a| a.starts_with('-') && !a.starts_with("--") && a.contains('n'));
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    // `declare -n r=OPENAI_API_KEY`: `$r` would read the secret.
                    if nameref
                        && let Some((_, target)) = a.split_once('=')
                        && rules::is_secret_name(target)
                    {
                        return Err(PolicyViolation::new(
                            codes::POLICY_SECRET_READ,
                            format!(
                                "`{base} -n` makes a name for `{target}`, which holds a secret"
                            ),
                        )
                        .with_rule("secret-variable"));
                    }
                    if let Some((name, value)) = a.split_once('=')
                        && is_name(name)
                    {
                        self.check_env(name, value, st, depth)?;
                        let w = arg_words.iter().find(|w| w.text == *a).map(|w| Word {
                            text: value.to_string(),
                            ..w.clone()
                        });
                        let resolved = w.and_then(|w| paths::resolve(&w, st));
                        st.vars.insert(name.to_string(), resolved);
                    }
                }
            }
            "read" | "mapfile" | "readarray" => {
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    st.vars.insert(a.clone(), None);
                }
            }
            // Builtins that assign or unset a variable behind the policy's back:
            // the variable is unknown from here on.
            "printf" => {
                if let Some(i) = args.iter().position(|a| a == "-v")
                    && let Some(name) = args.get(i + 1)
                {
                    st.vars.insert(name.clone(), None);
                }
            }
            "unset" | "getopts" => {
                for a in args.iter().filter(|a| !a.starts_with('-') && is_name(a)) {
                    st.vars.insert(a.clone(), None);
                }
            }
            _ => {}
        }
        if PRIVILEGE.contains(&base) {
            return refuse(codes::POLICY_PRIVILEGE_ESCALATION, "privilege escalation");
        }
        if NETWORK.contains(&base) {
            return refuse(codes::POLICY_NETWORK_CONFIG, "network configuration");
        }
        if SYSTEM.contains(&base) || base.starts_with("mkfs") {
            return refuse(codes::POLICY_SYSTEM_CONTROL, "system control");
        }
        if EVAL.contains(&base) {
            return refuse(codes::POLICY_EVAL, "it runs code the policy cannot see");
        }
        if WRAPPERS.contains(&base) {
            // Check the program the wrapper runs as if it stood alone.
            let inner = wrapped_command(base, args);
            for (k, a) in args[..inner.unwrap_or(args.len())].iter().enumerate() {
                if let Some((name, value)) = a.split_once('=')
                    && is_name(name)
                {
                    self.check_env(name, value, st, depth)?;
                } else if base == "env"
                    && (a == "-C"
                        || a == "--chdir"
                        || a.starts_with("--chdir=")
                        || (a.starts_with("-C") && a.len() > 2))
                {
                    let v = a
                        .strip_prefix("--chdir=")
                        .or_else(|| a.strip_prefix("-C").filter(|v| !v.is_empty()))
                        .map(str::to_string)
                        .or_else(|| args.get(k + 1).cloned());
                    if let Some(v) = v
                        && !matches!(paths::classify(&v, st, &self.roots), paths::Place::Inside)
                    {
                        return Err(PolicyViolation::new(
                            codes::POLICY_OUTSIDE_WORKTREE,
                            format!("`env -C {v}` runs outside the worktree"),
                        ));
                    }
                }
                check_path_like(a)?;
            }
            let Some(i) = inner else {
                return match base {
                    "env" => self.check_lifetime("env", args),
                    _ => Ok(()),
                };
            };
            self.check_program(
                &args[i],
                &args[i + 1..],
                arg_words.get(i + 1..).unwrap_or(&[]),
                depth,
                st,
                stdin_args || base == "xargs",
            )?;
            if BACKGROUND_WRAPPERS.contains(&base) {
                return Err(PolicyViolation::new(
                    codes::POLICY_BACKGROUND_PROCESS,
                    format!("`{base}` detaches `{}` from the command", args[i]),
                )
                .with_rule("background-wrapper"));
            }
            return Ok(());
        }
        self.check_lifetime(base, args)?;
        let stem = version_stem(base);
        let runs_code = SHELLS.contains(&base) || INTERPRETERS.contains(&stem);
        let script = runs_code
            .then(|| args.iter().find(|a| !a.starts_with('-')))
            .flatten();
        if program.contains('/')
            && !program.starts_with('/')
            && matches!(
                paths::classify(program, st, &self.roots),
                paths::Place::Escapes
            )
        {
            return Err(PolicyViolation::new(
                codes::POLICY_OUTSIDE_WORKTREE,
                format!("`{program}` climbs out of the worktree"),
            )
            .with_rule("run-outside"));
        }
        if runs_code
            && arg_words
                .iter()
                .any(|w| !w.substitutions.is_empty() && w.text.starts_with("<("))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_PIPE_TO_SHELL,
                format!("`{base}` runs the output of a process substitution"),
            )
            .with_rule("pipe-to-shell"));
        }
        let sourced = matches!(base, "." | "source")
            .then(|| args.first())
            .flatten();
        for run in std::iter::once(program).chain(script.or(sourced).map(String::as_str)) {
            line_code::check_written_run(run, st)?;
            if st.fetched.contains(run.trim_start_matches("./")) {
                return Err(PolicyViolation::new(
                    codes::POLICY_REMOTE_CODE,
                    format!("`{run}` was downloaded earlier in this line and would run"),
                )
                .with_rule("download-run"));
            }
        }
        if matches!(base, "curl" | "wget") {
            st.fetched.extend(rules::downloads(base, args));
        }
        rules::check_remote_write(base, args)?;
        rules::check_remote_code(base, args)?;
        listen::check_listen(stem, args)?;
        line_code::check_makefile(base, args)?;
        line_code::record_writes(base, args, st);
        if stdin_args && (SHELLS.contains(&base) || INTERPRETERS.contains(&base) || base == "git") {
            return Err(PolicyViolation::new(
                codes::POLICY_UNRESOLVED_EXPANSION,
                format!("`{base}` would run with arguments read from stdin (xargs)"),
            )
            .with_rule("xargs-program"));
        }
        if SHELLS.contains(&base) {
            if arg_words.iter().any(|w| !w.substitutions.is_empty()) {
                return refuse(
                    codes::POLICY_PIPE_TO_SHELL,
                    "a shell fed with the output of a command substitution",
                );
            }
            // `-c`, also in clusters: `bash -lc`, `sh -ec`.
            if let Some(pos) = args.iter().position(|a| {
                a == "-c"
                    || (a.starts_with('-')
                        && !a.starts_with("--")
                        && a.ends_with('c')
                        && a[1..].chars().all(|c| c.is_ascii_alphabetic()))
            }) && let Some(script) = args.get(pos + 1)
            {
                self.check_depth(script, depth + 1)?;
            }
        }
        for (option, value) in rules::exec_option_values(base, args) {
            self.check_command_value(
                &format!("`{base} {option}`"),
                &value,
                depth,
                codes::POLICY_PIPE_TO_SHELL,
                "exec-option",
            )?;
        }
        // The environment printed as data by a tool that is allowed for other work.
        let first = args.first().map(String::as_str).unwrap_or("");
        let env_dump = match base {
            "jq" | "gojq" | "jaq" => args.iter().any(|a| {
                !a.starts_with('-')
                    && (a.contains("$ENV")
                        || a.split(|c: char| !c.is_alphanumeric() && c != '_')
                            .any(|w| w == "env"))
            }),
            "npm" | "pnpm" | "yarn" | "bun" => {
                (first == "run" || first == "run-script") && args.get(1).is_some_and(|a| a == "env")
                    || first == "env"
            }
            "make" | "gmake" => args.iter().any(|a| {
                a == "--print-data-base"
                    || (a.starts_with('-') && !a.starts_with("--") && a.contains('p'))
            }),
            "cmake" => first == "-E" && args.get(1).is_some_and(|a| a == "environment"),
            "mvn" | "mvnw" => args
                .iter()
                .any(|a| a.starts_with("help:system") || a.contains("env.")),
            _ => false,
        };
        if env_dump {
            return Err(PolicyViolation::new(
                codes::POLICY_SECRET_READ,
                format!("`{base} {}` prints the environment", args.join(" ")),
            )
            .with_rule("env-dump"));
        }
        // What a network command sends is what its arguments say: a command
        // substitution there carries local data out (`pip install "x==$(cat .env)"`).
        let sends = match base {
            "curl" | "wget" | "dig" | "nslookup" | "host" | "ping" | "ssh" | "scp" | "nc"
            | "ncat" | "openssl" | "rsync" | "ftp" | "telnet" => true,
            "pip" | "pip3" | "uv" | "npm" | "pnpm" | "yarn" | "bun" | "gem" | "cargo" => matches!(
                first,
                "install"
                    | "i"
                    | "add"
                    | "download"
                    | "view"
                    | "info"
                    | "search"
                    | "show"
                    | "fetch"
                    | "pip"
                    | "update"
                    | "upgrade"
            ),
            "go" => matches!(first, "get" | "install" | "run" | "mod"),
            "git" => args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "fetch" | "pull" | "clone" | "ls-remote" | "push" | "archive" | "submodule"
                )
            }),
            _ => false,
        };
        if sends && arg_words.iter().any(|w| !w.substitutions.is_empty()) {
            return Err(PolicyViolation::new(
                codes::POLICY_REMOTE_WRITE,
                format!(
                    "`{base}` would send the output of a command substitution to another machine"
                ),
            )
            .with_rule("remote-write"));
        }
        if base == "gh"
            && args.first().is_some_and(|a| a == "auth")
            && (args.get(1).is_some_and(|a| a == "token")
                || args.iter().any(|a| a == "--show-token" || a == "-t"))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_SECRET_READ,
                "`gh auth token` prints the stored GitHub token".to_string(),
            )
            .with_rule("secret-read"));
        }
        // `node -r /tmp/x.js`, `node --import data:…`, `php -d auto_prepend_file=…`:
        // code loaded before the program, from a file or inline.
        let preload_opts: &[&str] = match base {
            "node" | "nodejs" | "bun" | "deno" | "tsx" | "ts-node" => &[
                "-r",
                "--require",
                "--import",
                "--loader",
                "--experimental-loader",
                "--preload",
            ],
            "ruby" => &["-r", "-I"],
            "php" => &["-d"],
            _ => &[],
        };
        for (i, a) in args.iter().enumerate() {
            let (name, inline) = match a.split_once('=') {
                Some((n, v)) if n.starts_with("--") => (n, Some(v)),
                _ => (a.as_str(), None),
            };
            if !preload_opts.contains(&name) {
                continue;
            }
            let Some(value) = inline.or_else(|| args.get(i + 1).map(String::as_str)) else {
                continue;
            };
            let value = match base {
                "php" => match value.split_once('=') {
                    Some((k, v))
                        if k.contains("prepend")
                            || k.contains("append")
                            || k.contains("extension") =>
                    {
                        v
                    }
                    _ => continue,
                },
                _ => value,
            };
            if value.starts_with("data:")
                || value.starts_with("http:")
                || value.starts_with("https:")
            {
                return Err(PolicyViolation::new(
                    codes::POLICY_INTERPRETER_CODE,
                    format!("`{base} {name}` loads code given inline or from the network"),
                )
                .with_rule("preload-option"));
            }
            self.check_preload(&format!("{base} {name}"), value, st)?;
        }
        // `script -c CMD`, `flock [-c CMD | FILE CMD…]`: they run a command line.
        if matches!(base, "script" | "flock") {
            let c = args.iter().position(|a| {
                a == "-c"
                    || a == "--command"
                    || (a.starts_with('-') && !a.starts_with("--") && a.ends_with('c'))
            });
            if let Some(line) = c.and_then(|i| args.get(i + 1)) {
                self.check_depth(line, depth + 1)?;
            } else if base == "flock" {
                let plain: Vec<usize> = (0..args.len())
                    .filter(|&i| !args[i].starts_with('-'))
                    .collect();
                if let Some(&cmd) = plain.get(1) {
                    self.check_program_line(&args[cmd..], depth)?;
                }
            }
        }
        if let Some((lang, code)) = rules::inline_code(base, args) {
            rules::check_inline_code(lang, code)?;
        }
        // `python -m pip …` is pip.
        if stem == "python"
            && let Some(m) = args.iter().position(|a| a == "-m")
            && let Some(module) = args.get(m + 1)
            && matches!(module.as_str(), "pip" | "pip3")
        {
            self.check_lifetime("pip", &args[m + 2..])?;
        }
        if stem == "python"
            && let Some(m) = args.iter().position(|a| a == "-m")
            && let Some(module) = args.get(m + 1)
        {
            rules::check_remote_write(module, &args[m + 2..])?;
            rules::check_remote_code(module, &args[m + 2..])?;
        }
        if let Some(i) = self.runner_target(base, args, depth)? {
            let target = rules::package_program(&args[i]);
            // The package's program, as if it stood alone.
            let mut words: Vec<Word> = arg_words.get(i + 1..).unwrap_or(&[]).to_vec();
            words.truncate(args.len() - i - 1);
            let inner_args = &args[i + 1..];
            return self.check_program(&target, inner_args, &words, depth, st, stdin_args);
        }
        if base == "git" {
            self.check_git(
                &Args {
                    args,
                    words: arg_words,
                },
                depth,
                st,
            )?;
        }
        if base == "find" {
            self.check_find(args, arg_words, depth, st)?;
        }
        for a in args {
            check_path_like(a)?;
        }
        match base {
            "rm" => check_rm(args)?,
            "chmod" | "chown" | "chgrp" => check_permissions(base, args)?,
            _ => {}
        }
        if rules::is_deleter(base) && base != "rm" {
            let mut with_r = vec!["-r".to_string()];
            with_r.extend(args.iter().cloned());
            check_rm(&with_r)?;
        }
        self.check_effects(
            base,
            &Args {
                args,
                words: arg_words,
            },
            st,
            stdin_args,
        )?;
        if !self.is_allowed(program, base) {
            return refuse(
                codes::POLICY_NOT_ALLOWED,
                "not on the allowlist (planning.environment_setup.security.allowed_commands)",
            );
        }
        Ok(())
    }

    /// `find`: its starting points are read, `-delete` deletes under them,
    /// `-exec`/`-ok` run a program on what it finds, `-fprint*` write files.
    fn check_find(
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

    /// One variable assignment (`NAME=value cmd`, `export`, `env NAME=value`):
    /// loader and shell start-up variables are refused, search paths and preload
    /// options must not reach outside the worktree, and a variable whose value is
    /// a command line (`PAGER`, `EDITOR`, `CC`, `RUSTC_WRAPPER`, npm's
    /// `script-shell`, …) is checked as that command.
    fn check_env(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
        depth: usize,
    ) -> Result<(), PolicyViolation> {
        check_assignment(name)?;
        self.check_search_path(name, value, st)?;
        let lower = name.to_ascii_lowercase();
        let npm = lower
            .strip_prefix("npm_config_")
            .map(|k| k.replace('-', "_"));
        let cargo_program = name.starts_with("CARGO_")
            && ["_LINKER", "_RUNNER", "_WRAPPER", "_RUSTC", "_RUSTDOC"]
                .iter()
                .any(|s| name.ends_with(s));
        let program_valued = PROGRAM_ENV.contains(&name)
            || cargo_program
            || npm.as_deref().is_some_and(|k| {
                matches!(
                    k,
                    "script_shell" | "shell" | "editor" | "browser" | "git" | "viewer"
                )
            });
        let upper = name.to_ascii_uppercase();
        let registry = matches!(
            upper.as_str(),
            "PIP_INDEX_URL"
                | "PIP_EXTRA_INDEX_URL"
                | "PIP_FIND_LINKS"
                | "PIP_TRUSTED_HOST"
                | "UV_INDEX_URL"
                | "UV_EXTRA_INDEX_URL"
                | "UV_DEFAULT_INDEX"
                | "UV_INDEX"
                | "UV_FIND_LINKS"
                | "GOPROXY"
                | "GOPRIVATE"
                | "GONOPROXY"
                | "YARN_NPM_REGISTRY_SERVER"
                | "YARN_REGISTRY"
                | "BUNDLE_MIRROR__ALL"
                | "CONDA_CHANNELS"
        ) || npm.as_deref() == Some("registry")
            || upper.starts_with("CARGO_REGISTRIES_")
            || upper.starts_with("CARGO_SOURCE_")
            || upper.starts_with("BUNDLE_MIRROR__");
        if registry
            && (upper.ends_with("TRUSTED_HOST")
                || value.split([',', ' ', '|']).any(|u| {
                    u.contains("://") && !rules::is_loopback_url(u) && !u.starts_with("file://")
                }))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_REMOTE_CODE,
                format!(
                    "`{name}` points the package manager at `{value}`, not its configured registry"
                ),
            )
            .with_rule("remote-code"));
        }
        // Config files and checks that decide where packages come from and
        // whether they are verified.
        let config_file = matches!(
            upper.as_str(),
            "PIP_CONFIG_FILE"
                | "UV_CONFIG_FILE"
                | "MAKEFILES"
                | "GONOSUMDB"
                | "GONOSUMCHECK"
                | "GOINSECURE"
                | "GOTOOLCHAIN"
                | "RUSTUP_TOOLCHAIN"
                | "GOROOT"
                | "CARGO_HOME"
                | "RUSTUP_HOME"
                | "GIT_CONFIG_GLOBAL"
        ) || (upper == "GOSUMDB" && value.trim() == "off")
            || matches!(
                npm.as_deref(),
                Some("userconfig" | "globalconfig" | "global" | "prefix" | "location")
            );
        if config_file {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("setting `{name}` changes where tools, packages or their checks come from"),
            )
            .with_rule("tool-config-env"));
        }
        if matches!(
            upper.as_str(),
            "RUSTFLAGS" | "CARGO_ENCODED_RUSTFLAGS" | "RUSTDOCFLAGS"
        ) {
            let tokens: Vec<&str> = value.split(['\u{1f}', ' ']).collect();
            for i in 0..tokens.len() {
                if let Some(l) = rules::linker_at(&tokens, i) {
                    self.check_command_value(
                        &format!("`{name}` linker"),
                        l,
                        depth,
                        codes::POLICY_DANGEROUS_ENV,
                        "program-env",
                    )?;
                }
            }
        }
        if upper == "GOFLAGS"
            && ["-toolexec", "-exec", "-vettool", "-insecure", "-overlay"]
                .iter()
                .any(|f| value.contains(f))
        {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("`GOFLAGS={value}` makes go run another program or skip its checks"),
            )
            .with_rule("program-env"));
        }
        if upper == "PYTHONBREAKPOINT"
            && !value.is_empty()
            && value != "0"
            && !value.starts_with("pdb")
        {
            return Err(PolicyViolation::new(
                codes::POLICY_DANGEROUS_ENV,
                format!("`PYTHONBREAKPOINT={value}` makes `breakpoint()` call it"),
            )
            .with_rule("program-env"));
        }
        if PRELOAD_ENV.contains(&name) || npm.as_deref() == Some("node_options") {
            self.check_preload(name, value, st)?;
        }
        if !program_valued {
            return Ok(());
        }
        self.check_command_value(
            &format!("`{name}`"),
            value,
            depth,
            codes::POLICY_DANGEROUS_ENV,
            "program-env",
        )
    }

    /// A value that a tool runs as a command line (a variable such as `PAGER`, an
    /// option such as `tar --to-command`): a shell, interpreter or wrapper there is
    /// refused with `code`; anything else is checked as the command it is.
    fn check_command_value(
        &self,
        what: &str,
        value: &str,
        depth: usize,
        code: &'static str,
        rule: &str,
    ) -> Result<(), PolicyViolation> {
        let command = value
            .trim()
            .trim_start_matches('|')
            .replace("%s", "")
            .trim()
            .to_string();
        if command.is_empty() {
            return Ok(());
        }
        let words = shell_words::split(&command).unwrap_or_default();
        let first = words.first().map(|w| basename(w)).unwrap_or("");
        let stem = version_stem(first);
        if SHELLS.contains(&first)
            || INTERPRETERS.contains(&stem)
            || EVAL.contains(&first)
            || WRAPPERS.contains(&first)
            || first.contains('$')
        {
            return Err(PolicyViolation::new(
                code,
                format!("{what} makes the tool run `{command}`, a shell, interpreter or computed program"),
            )
            .with_rule(rule));
        }
        match self.check_depth(&command, depth + 1) {
            Ok(_) => Ok(()),
            // A helper program missing from the allowlist (`PAGER=less`, `tar -I
            // zstd`, `make CC=clang`) runs only as the allowed tool's helper; a
            // path outside the places programs are installed is refused.
            Err(v) if v.code == codes::POLICY_NOT_ALLOWED => {
                let program = words.first().map(String::as_str).unwrap_or("");
                if program.contains('/') && !self.installed_place(program) {
                    Err(PolicyViolation::new(
                        code,
                        format!("{what} runs `{program}`, from outside the places programs are installed"),
                    )
                    .with_rule(rule))
                } else {
                    Ok(())
                }
            }
            Err(v) => Err(PolicyViolation::new(
                v.code,
                format!("{what} runs `{command}`: {}", v.message),
            )
            .with_rule(rule)),
        }
    }

    /// Preload options (`NODE_OPTIONS=--require …`, `-javaagent:…`, `RUBYOPT`,
    /// `PYTHONSTARTUP`): a path in them that is not inside the worktree would load
    /// code from somewhere anyone can write.
    fn check_preload(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        for token in value.split_whitespace() {
            // `--require=/x`, `-javaagent:/x.jar=opts`, or the value of the option
            // before (`--require /x`); `-Dname=value` is a property, not code.
            let body = if token.starts_with("-D") {
                continue;
            } else if token.starts_with('-') {
                match token.find(['=', ':']) {
                    Some(i) => &token[i + 1..],
                    // `-r/x.rb`, `-I/dir`: a short option with its value attached.
                    None if !token.starts_with("--") && token.len() > 2 => &token[2..],
                    None => continue,
                }
            } else {
                token
            };
            let path = body.split('=').next().unwrap_or(body);
            if path.starts_with('-') || !(path.contains('/') || path.starts_with('~')) {
                continue;
            }
            if path.contains('$') {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` loads `{path}`, which the policy cannot resolve"),
                )
                .with_rule("preload-env"));
            }
            if !matches!(paths::classify(path, st, &self.roots), paths::Place::Inside) {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` loads `{path}` from outside the worktree"),
                )
                .with_rule("preload-env"));
            }
        }
        Ok(())
    }

    /// A search path (`PATH`, `PYTHONPATH`, …) that takes programs or modules from
    /// the temp dirs or from above the worktree: anything written there earlier
    /// would run in place of the real tool.
    fn check_search_path(
        &self,
        name: &str,
        value: &str,
        st: &LineState,
    ) -> Result<(), PolicyViolation> {
        if !SEARCH_PATHS.contains(&name) {
            return Ok(());
        }
        for dir in value
            .split(':')
            .filter(|d| !d.is_empty() && !d.contains('$'))
        {
            if matches!(
                paths::classify(dir, st, &self.roots),
                paths::Place::Temp | paths::Place::Escapes
            ) {
                return Err(PolicyViolation::new(
                    codes::POLICY_DANGEROUS_ENV,
                    format!("`{name}` takes `{dir}` first, a directory outside the worktree anyone can write"),
                )
                .with_rule("search-path"));
            }
        }
        Ok(())
    }

    fn is_allowed(&self, program: &str, base: &str) -> bool {
        if self.allowed.contains(program) {
            return true;
        }
        // A path counts as its allowlisted name only where programs are installed
        // or inside the worktree: `/tmp/python3` or `~/evil/cargo` is not python3
        // or cargo.
        if program.contains('/') && !self.installed_place(program) {
            return false;
        }
        if self.allowed.contains(base) {
            return true;
        }
        // Versioned interpreters: python3.11, pip3.12.
        let stem = version_stem(base);
        stem != base && matches!(stem, "python" | "pip") && self.allowed.contains(stem)
    }
}

impl CommandPolicy {
    /// A program path under the worktree, a system prefix, or a toolchain
    /// directory of the home directory.
    fn installed_place(&self, program: &str) -> bool {
        const SYSTEM: &[&str] = &["/usr/", "/bin/", "/sbin/", "/opt/", "/nix/", "/snap/"];
        const HOME_TOOLS: &[&str] = &[
            ".cargo/bin/",
            ".rustup/",
            ".local/bin/",
            ".local/share/",
            ".pyenv/",
            ".nvm/",
            ".volta/",
            ".bun/bin/",
            ".deno/bin/",
            "go/bin/",
            ".sdkman/",
            ".cache/",
            ".asdf/",
            ".npm/",
            ".yarn/",
            ".pnpm",
            "miniconda3/",
            "anaconda3/",
            "micromamba/",
            ".jdks/",
        ];
        match paths::classify(program, &paths::LineState::new(), &self.roots) {
            paths::Place::Inside => true,
            paths::Place::Abs(p) => SYSTEM.iter().any(|s| p.starts_with(s)),
            paths::Place::Home(rest) => HOME_TOOLS.iter().any(|t| rest.starts_with(t)),
            _ => false,
        }
    }
}

/// A program name without its version suffix: `python3.11` → `python`.
pub(crate) fn version_stem(program: &str) -> &str {
    program.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
}

fn basename(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

fn check_assignment(name: &str) -> Result<(), PolicyViolation> {
    if DANGEROUS_ENV.contains(&name) || name.starts_with("DYLD_") {
        return Err(PolicyViolation::new(
            codes::POLICY_DANGEROUS_ENV,
            format!("setting `{name}` is refused"),
        ));
    }
    rules::check_git_env(name)
}

/// The program a simple command finally runs, through wrappers.
fn effective_program(cmd: &SimpleCommand) -> &str {
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
fn wrapped_command(wrapper: &str, args: &[String]) -> Option<usize> {
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

/// A command at `pipe_position > 0` that would execute what it reads.
fn reads_code_from_stdin(cmd: &SimpleCommand) -> bool {
    let base = basename(&cmd.program);
    let mut program = base;
    let mut args: &[String] = &cmd.args;
    if WRAPPERS.contains(&base) || PRIVILEGE.contains(&base) {
        let inner = if PRIVILEGE.contains(&base) {
            cmd.args.iter().position(|a| !a.starts_with('-'))
        } else {
            wrapped_command(base, &cmd.args)
        };
        if let Some(i) = inner {
            program = basename(&cmd.args[i]);
            args = &cmd.args[i + 1..];
        }
    }
    let stem = version_stem(program);
    if SHELLS.contains(&program) || EVAL.contains(&program) {
        // `… | sh`, `… | bash -s`; `… | sh -c 'script'` still runs stdin-fed code
        // only if the script reads it, which it may: refuse as well.
        return true;
    }
    if INTERPRETERS.contains(&program) || INTERPRETERS.contains(&stem) {
        return args.is_empty() || args.iter().all(|a| a == "-" || a == "-s" || a == "-u");
    }
    false
}

use paths::{normalize_abs, under};

/// Checks a word that may name a path (also the value of `--opt=value`).
fn check_path_like(word: &str) -> Result<(), PolicyViolation> {
    let mut candidates = vec![word];
    if let Some((_, v)) = word.split_once('=') {
        candidates.push(v);
    }
    for c in candidates {
        for cred in CREDENTIAL_PARTS {
            let hit = c
                .split('/')
                .collect::<Vec<_>>()
                .windows(cred.matches('/').count() + 1)
                .any(|w| w.join("/") == *cred);
            if hit {
                return Err(PolicyViolation::new(
                    codes::POLICY_CREDENTIAL_ACCESS,
                    format!("`{c}` points into a credential store"),
                ));
            }
        }
        let abs = if c.starts_with('/') {
            Some(normalize_abs(c))
        } else if c.starts_with("..") && c.matches("..").count() >= 2 {
            // `../../../etc/passwd`: climbing out of the project into a system dir.
            let rest: Vec<&str> = c
                .split('/')
                .skip_while(|s| *s == ".." || *s == "." || s.is_empty())
                .collect();
            (!rest.is_empty()).then(|| format!("/{}", rest.join("/")))
        } else {
            None
        };
        let Some(abs) = abs else { continue };
        if SAFE_DEVICES.iter().any(|d| under(&abs, d)) {
            continue;
        }
        if PROTECTED_PREFIXES.iter().any(|p| under(&abs, p)) || under(&abs, "/dev") {
            return Err(PolicyViolation::new(
                codes::POLICY_SYSTEM_PATH,
                format!("`{c}` is a protected system location"),
            ));
        }
    }
    Ok(())
}

fn is_home(t: &str) -> bool {
    matches!(t, "~" | "$HOME" | "${HOME}")
        || ["~/", "$HOME/", "${HOME}/"]
            .iter()
            .any(|p| t.strip_prefix(p).is_some_and(|r| r.is_empty() || r == "*"))
}

fn check_rm(args: &[String]) -> Result<(), PolicyViolation> {
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

fn check_permissions(base: &str, args: &[String]) -> Result<(), PolicyViolation> {
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

#[derive(Default)]
struct Builder {
    cmd: Option<SimpleCommand>,
    pending_redir: Option<String>,
}

fn parse(line: &str, tokens: Vec<Token>) -> Result<ParsedCommand, PolicyViolation> {
    let abuse = |what: String| PolicyViolation::new(codes::POLICY_OPERATOR_ABUSE, what);
    let mut commands: Vec<SimpleCommand> = Vec::new();
    let mut operators: Vec<String> = Vec::new();
    let mut b = Builder::default();
    let mut pipe_position = 0usize;
    // True right after an operator: a command must follow.
    let mut expect_command = true;
    let mut last_op: Option<&'static str> = None;
    let mut depth = 0i32;
    let mut needs_shell = false;

    let finish =
        |b: &mut Builder, commands: &mut Vec<SimpleCommand>| -> Result<bool, PolicyViolation> {
            if let Some(op) = b.pending_redir.take() {
                return Err(PolicyViolation::new(
                    codes::POLICY_PARSE_ERROR,
                    format!("redirection `{op}` without a target in `{line}`"),
                ));
            }
            match b.cmd.take() {
                Some(c) => {
                    commands.push(c);
                    Ok(true)
                }
                None => Ok(false),
            }
        };

    let mut iter = tokens.into_iter().peekable();
    while let Some(tok) = iter.next() {
        match tok {
            Token::Word(w) => {
                if b.cmd.is_none() && (w.text == "{" || w.text == "}") && !w.expands {
                    needs_shell = true;
                    continue;
                }
                if b.cmd.is_none() && w.text == "function" {
                    return Err(PolicyViolation::new(
                        codes::POLICY_SHELL_FUNCTION,
                        format!("shell function definition in `{line}`"),
                    ));
                }
                let cmd = b.cmd.get_or_insert_with(|| SimpleCommand {
                    assignments: Vec::new(),
                    program: String::new(),
                    args: Vec::new(),
                    redirections: Vec::new(),
                    pipe_position,
                    words: Vec::new(),
                    other_words: Vec::new(),
                });
                expect_command = false;
                if w.expands || !w.substitutions.is_empty() {
                    needs_shell = true;
                }
                if let Some(op) = b.pending_redir.take() {
                    cmd.redirections.push(Redirection {
                        operator: op,
                        target: w.text.clone(),
                        word: w.clone(),
                    });
                    cmd.other_words.push(w);
                    continue;
                }
                if cmd.program.is_empty() {
                    if let Some((name, value)) = w.text.split_once('=')
                        && is_name(name)
                    {
                        needs_shell = true;
                        cmd.assignments.push((name.to_string(), value.to_string()));
                        cmd.other_words.push(w);
                        continue;
                    }
                    cmd.program = w.text.clone();
                    if BUILTINS.contains(&cmd.program.as_str()) {
                        needs_shell = true;
                    }
                } else {
                    cmd.args.push(w.text.clone());
                }
                cmd.words.push(w);
            }
            Token::Redir(op) => {
                needs_shell = true;
                if b.pending_redir.is_some() {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("redirection without a target in `{line}`"),
                    ));
                }
                // `2>&1`, `>&2`: the target is an fd, not a path.
                let fd_target = op.ends_with('&')
                    && matches!(iter.peek(), Some(Token::Word(w)) if w.text.chars().all(|c| c.is_ascii_digit() || c == '-'));
                let cmd = b.cmd.get_or_insert_with(|| SimpleCommand {
                    assignments: Vec::new(),
                    program: String::new(),
                    args: Vec::new(),
                    redirections: Vec::new(),
                    pipe_position,
                    words: Vec::new(),
                    other_words: Vec::new(),
                });
                expect_command = false;
                if fd_target {
                    if let Some(Token::Word(w)) = iter.next() {
                        cmd.redirections.push(Redirection {
                            operator: op,
                            target: w.text.clone(),
                            word: w,
                        });
                    }
                } else {
                    b.pending_redir = Some(op);
                }
            }
            Token::Op("(") => {
                if let Some(cmd) = &b.cmd
                    && cmd.program == "for"
                    && cmd.args.is_empty()
                {
                    return Err(c_style_for(line, &mut iter));
                }
                if let Some(cmd) = &b.cmd {
                    // `name ( )`: a function definition.
                    if cmd.args.is_empty() && matches!(iter.peek(), Some(Token::Op(")"))) {
                        let name = cmd.program.clone();
                        // Look for the name inside the body only (up to the closing `}`).
                        let mut braces = 0i32;
                        let mut calls_itself = false;
                        for t in iter.by_ref() {
                            if let Token::Word(w) = &t {
                                match w.text.as_str() {
                                    "{" => braces += 1,
                                    "}" => {
                                        braces -= 1;
                                        if braces <= 0 {
                                            break;
                                        }
                                    }
                                    x if x == name => calls_itself = true,
                                    _ => {}
                                }
                            }
                        }
                        let (code, what) = if calls_itself {
                            (
                                codes::POLICY_FORK_BOMB,
                                "a self-calling shell function (fork bomb)",
                            )
                        } else {
                            (codes::POLICY_SHELL_FUNCTION, "a shell function definition")
                        };
                        return Err(PolicyViolation::new(
                            code,
                            format!("`{line}` contains {what}"),
                        ));
                    }
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unexpected `(` in `{line}`"),
                    ));
                }
                if !expect_command {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unexpected `(` in `{line}`"),
                    ));
                }
                needs_shell = true;
                depth += 1;
            }
            Token::Op(")") => {
                finish(&mut b, &mut commands)?;
                depth -= 1;
                if depth < 0 {
                    return Err(PolicyViolation::new(
                        codes::POLICY_PARSE_ERROR,
                        format!("unbalanced `)` in `{line}`"),
                    ));
                }
                expect_command = false;
            }
            Token::Op(op) => {
                let had = finish(&mut b, &mut commands)?;
                needs_shell = true;
                if op == ";;" {
                    return Err(abuse(format!("`;;` outside a case statement in `{line}`")));
                }
                if op == "&" {
                    return Err(PolicyViolation::new(
                        codes::POLICY_BACKGROUND_PROCESS,
                        format!("`&` sends a command to the background in `{line}`"),
                    ));
                }
                if expect_command && !had {
                    // `;` after `;` (or at the start) is harmless in sh but is
                    // exactly the "consecutive metacharacters" of seed §11.1.2.
                    return Err(abuse(match last_op {
                        Some(prev) => format!(
                            "`{prev}` followed by `{op}` with no command between in `{line}`"
                        ),
                        None => format!("`{line}` starts with `{op}`"),
                    }));
                }
                operators.push(op.to_string());
                pipe_position = if op == "|" || op == "|&" {
                    pipe_position + 1
                } else {
                    0
                };
                expect_command = true;
                last_op = Some(op);
            }
        }
    }
    finish(&mut b, &mut commands)?;
    if depth != 0 {
        return Err(PolicyViolation::new(
            codes::POLICY_PARSE_ERROR,
            format!("unbalanced `(` in `{line}`"),
        ));
    }
    if expect_command && let Some(op) = last_op {
        if op != ";" {
            return Err(abuse(format!("`{line}` ends with `{op}`")));
        }
        // A trailing `;` is not an operator between commands.
        operators.pop();
    }
    if commands.len() == 1 && operators.is_empty() && !needs_shell {
        needs_shell = commands[0].program.is_empty();
    }
    Ok(ParsedCommand {
        line: line.to_string(),
        commands,
        operators,
        needs_shell,
    })
}

/// `for ((init; cond; step))`: refused, as an endless loop when `cond` is empty.
fn c_style_for(line: &str, iter: &mut impl Iterator<Item = Token>) -> PolicyViolation {
    // Tokens up to the closing `))`: `;` separates the three clauses (`;;` is two).
    let mut clause = 0usize;
    let mut cond_words = 0usize;
    let mut parens = 1i32;
    for t in iter {
        match t {
            Token::Op("(") => parens += 1,
            Token::Op(")") => {
                parens -= 1;
                if parens <= 0 {
                    break;
                }
            }
            Token::Op(";") => clause += 1,
            Token::Op(";;") => clause += 2,
            Token::Word(_) if clause == 1 => cond_words += 1,
            _ => {}
        }
    }
    if cond_words == 0 {
        PolicyViolation::new(
            codes::POLICY_INFINITE_LOOP,
            format!("`{line}` has a `for ((…))` loop without a condition"),
        )
        .with_rule("endless-loop")
    } else {
        PolicyViolation::new(
            codes::POLICY_UNSUPPORTED_SYNTAX,
            format!("arithmetic `for ((…))` loops are not accepted in `{line}`"),
        )
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
