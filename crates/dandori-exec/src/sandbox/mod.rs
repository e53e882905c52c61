//! The sandbox of every command dandori runs on someone's behalf (model, plan,
//! MCP server, environment setup, external agent, and by default the user's own
//! `dandori env exec`).
//!
//! Two mechanisms, one policy ([`SandboxPolicy`]):
//!
//! - **bubblewrap** (`bwrap` on `PATH`): the whole filesystem read-only, the
//!   writable directories bound back read-write, a private `/tmp`, the credential
//!   stores of `HOME` hidden behind empty mounts, `.git` directories read-only, its
//!   own PID namespace and, when the network is off, its own network namespace.
//! - **the built-in fallback** (no external binary): the `dandori` binary itself
//!   re-executed as `dandori __sandbox-exec …` ([`helper`]), which enters new
//!   mount and network namespaces where the kernel lets it (root, or unprivileged
//!   user namespaces), remounts the read-only paths read-only, applies a Landlock
//!   ruleset to itself (read everywhere except the credential stores, write only
//!   to the writable directories and a private temporary directory, no TCP when
//!   the network is off) and `exec`s the command.
//!
//! When neither works, commands issued by a model or a plan are refused
//! ([`ExecError::SandboxUnavailable`]) unless the user opted out
//! (`--sandbox off`, config `sandbox.mode: off`).

pub mod helper;
pub mod seccomp;
pub mod view;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::ExecError;

/// The name of the hidden subcommand of the `dandori` binary that runs the fallback.
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";
/// Environment variable naming the binary that implements [`HELPER_SUBCOMMAND`]
/// (default: the running `dandori`).
pub const HELPER_ENV: &str = "DANDORI_SANDBOX_HELPER";

/// Credential stores under `HOME` that no sandboxed command may read.
pub const HIDDEN_HOME_PATHS: &[&str] = &[
    ".ssh",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".config/hub",
    ".config/dandori",
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".docker",
    ".kube",
    ".gnupg",
    ".password-store",
    ".local/share/keyrings",
    ".pypirc",
    ".npmrc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".vault-token",
    ".pgpass",
    ".my.cnf",
    ".terraform.d/credentials.tfrc.json",
];

/// Package caches under `HOME` that environment setup may write.
const SETUP_HOME_CACHES: &[&str] = &[
    ".cache",
    ".npm",
    ".yarn",
    ".pnpm-store",
    ".local/share/pnpm",
    ".cargo/registry",
    ".cargo/git",
    ".m2",
    ".gradle",
    "go/pkg",
    ".bun/install/cache",
    // Bundler's and Composer's own caches and settings (seed 002 §13.1.1).
    ".bundle",
    ".gem",
    ".config/composer",
    ".local/share/composer",
];
/// Variables naming caches that environment setup may write.
const SETUP_CACHE_VARS: &[&str] = &[
    "UV_CACHE_DIR",
    "PIP_CACHE_DIR",
    "npm_config_cache",
    "NPM_CONFIG_CACHE",
    "CARGO_HOME",
    "GOMODCACHE",
    "GOCACHE",
    "XDG_CACHE_HOME",
    "COMPOSER_HOME",
    "COMPOSER_CACHE_DIR",
    "BUNDLE_USER_HOME",
];

/// Makes this process unreadable to other processes of the same user: no
/// `/proc/PID/environ` or `mem`, no ptrace attach (`PR_SET_DUMPABLE 0`). The
/// `dandori` binary calls it first: its environment holds the API keys.
pub fn harden_self() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_dumpable(false);
}

/// Which mechanism to use (config `sandbox.mode`, flag `--sandbox`).
pub use dandori_config::SandboxMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SandboxKind {
    Bubblewrap,
    Landlock,
    None,
}

/// What the runner records in the trace and prints on its first line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxStatus {
    pub kind: SandboxKind,
    /// Why commands are not sandboxed (`kind == None`), or why bubblewrap was not
    /// used (`kind == Landlock` under `auto`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback_reason: Option<String>,
    /// The user switched the sandbox off: commands run unconfined on purpose.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub disabled: bool,
}

impl SandboxStatus {
    /// One line for humans: `sandbox: bubblewrap`, `sandbox: landlock (…)`,
    /// `sandbox: OFF (…)`, `sandbox: unavailable (…)`.
    pub fn summary(&self) -> String {
        match (self.kind, self.disabled) {
            (SandboxKind::Bubblewrap, _) => "sandbox: bubblewrap".to_string(),
            (SandboxKind::Landlock, _) => format!(
                "sandbox: landlock fallback{}",
                self.fallback_reason
                    .as_deref()
                    .map(|r| format!(" ({r})"))
                    .unwrap_or_default()
            ),
            (SandboxKind::None, true) => {
                "sandbox: OFF (disabled by the user; commands run unconfined)".to_string()
            }
            (SandboxKind::None, false) => format!(
                "sandbox: unavailable ({}); model- and plan-issued commands are refused (use --sandbox off to run them unconfined)",
                self.fallback_reason.as_deref().unwrap_or("no mechanism")
            ),
        }
    }
}

/// Who asked for a command: decides what happens when no sandbox works.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A model, a plan, a repository's config: refused without a sandbox.
    Issued,
    /// The user typed it (`dandori env exec`): runs unconfined without a sandbox.
    User,
}

/// What a sandboxed command may do.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SandboxPolicy {
    /// Directories (and their subtrees) the command may write.
    pub writable: Vec<PathBuf>,
    /// Paths inside `writable` that stay read-only (`.git` directories).
    pub read_only: Vec<PathBuf>,
    /// More paths visible read-only (the main repository with its prepared
    /// environment, seen from a pool worktree).
    pub readable: Vec<PathBuf>,
    /// Network access (off for step commands, on for environment setup).
    pub network: bool,
}

impl SandboxPolicy {
    /// Write to `worktree` (its `.git` read-only) and `extra`; no network.
    pub fn worktree(worktree: &Path, extra: &[PathBuf]) -> Self {
        let mut writable = vec![worktree.to_path_buf()];
        writable.extend(extra.iter().cloned());
        let read_only = vec![worktree.join(".git")];
        SandboxPolicy {
            writable,
            read_only,
            readable: Vec::new(),
            network: false,
        }
    }

    pub fn with_network(mut self, network: bool) -> Self {
        self.network = network;
        self
    }

    /// Environment setup in `repo`: the repository and the package caches writable
    /// (`~/.cache`, `~/.npm`, `~/.cargo/registry`, `~/.m2`, …, and the directories
    /// named by `UV_CACHE_DIR`, `PIP_CACHE_DIR`, `npm_config_cache`, `CARGO_HOME`,
    /// `GOPATH`, `GOMODCACHE`), the network on (registries). `~/.rustup` stays
    /// read-only: a repository's `rust-toolchain.toml` cannot change the machine's
    /// toolchains.
    pub fn environment_setup(
        repo: &Path,
        env: &std::collections::BTreeMap<String, String>,
    ) -> Self {
        let mut extra: Vec<PathBuf> = Vec::new();
        if let Some(home) = env.get("HOME").map(PathBuf::from) {
            for rel in SETUP_HOME_CACHES {
                extra.push(home.join(rel));
            }
        }
        for var in SETUP_CACHE_VARS {
            if let Some(v) = env.get(*var).filter(|v| !v.is_empty()) {
                let p = PathBuf::from(v);
                if *var == "CARGO_HOME" {
                    extra.push(p.join("registry"));
                    extra.push(p.join("git"));
                } else {
                    extra.push(p);
                }
            }
        }
        SandboxPolicy::worktree(repo, &extra).with_network(true)
    }

    /// Adds a read-only path (e.g. the main repository's `.git`).
    pub fn read_only(mut self, path: impl Into<PathBuf>) -> Self {
        self.read_only.push(path.into());
        self
    }

    /// Shows a path read-only (e.g. the main repository, whose prepared
    /// environment — `.venv`, `node_modules` — a pool worktree uses).
    pub fn readable(mut self, path: impl Into<PathBuf>) -> Self {
        self.readable.push(path.into());
        self
    }

    /// Shows what a command the user chose needs to start (its program's
    /// installation, the script an interpreter runs): for agent commands from
    /// `--agent-cmd` or the config, never for a model's or a plan's.
    pub fn with_program(mut self, argv: &[String], home: Option<&Path>) -> Self {
        for p in view::program_roots(argv, home) {
            if !self.readable.contains(&p) {
                self.readable.push(p);
            }
        }
        self
    }

    /// Copies the agent CLIs' credential and settings files of `home`
    /// ([`view::AGENT_CREDENTIAL_FILES`], those that exist) into the fresh home
    /// for this command; the host's files are never shown or written.
    pub fn with_agent_credentials(mut self, home: &Path) -> Self {
        for rel in view::AGENT_CREDENTIAL_FILES {
            let p = home.join(rel);
            if p.is_file() && !self.writable.contains(&p) {
                self.writable.push(p);
            }
        }
        self
    }

    /// The policy of a command in `worktree` of a git repository: its own and the
    /// repository's git directories read-only, and the main repository (with
    /// the environment prepared there) visible read-only.
    pub fn in_git_worktree(mut self, worktree: &Path) -> Self {
        if let Some((gitdir, common)) = crate::git::git_dirs(worktree) {
            if common.file_name().is_some_and(|n| n == ".git")
                && let Some(main) = common.parent()
                && !self.writable.iter().any(|w| main.starts_with(w))
            {
                self.readable.push(main.to_path_buf());
            }
            self.read_only.push(gitdir);
            self.read_only.push(common);
        }
        self
    }
}

/// Where to look for the mechanisms.
#[derive(Debug, Clone, Default)]
pub struct SandboxOptions {
    pub mode: SandboxMode,
    /// The `PATH` to search for `bwrap` (the command environment's).
    pub path_var: Option<String>,
    /// The `HOME` whose credential stores are hidden (the command environment's).
    pub home: Option<PathBuf>,
    /// The binary implementing [`HELPER_SUBCOMMAND`] (default: [`HELPER_ENV`], else
    /// the running `dandori`, else a `dandori` next to the running executable).
    pub helper: Option<PathBuf>,
    /// Toolchain variables of the command environment (`RUSTUP_HOME`, …):
    /// the installations they name are shown read-only.
    pub toolchain_vars: Vec<(String, String)>,
    /// Where the fresh home lives when it is kept (a run's `<run dir>/home`:
    /// the agents' sessions survive a resume); else a temporary directory.
    pub home_dir: Option<PathBuf>,
}

impl SandboxOptions {
    pub fn new(mode: SandboxMode) -> Self {
        SandboxOptions {
            mode,
            ..SandboxOptions::default()
        }
    }

    /// `PATH`, `HOME` and the toolchain variables (`RUSTUP_HOME`, …) taken from
    /// a child environment.
    pub fn env(mut self, env: &std::collections::BTreeMap<String, String>) -> Self {
        self.path_var = env.get("PATH").cloned();
        self.home = env.get("HOME").map(PathBuf::from);
        self.toolchain_vars = view::TOOLCHAIN_VARS
            .iter()
            .filter_map(|k| Some((k.to_string(), env.get(*k)?.clone())))
            .collect();
        self
    }

    /// The installations the commands see read-only besides the home's:
    /// those of the `PATH` entries and of the toolchain variables.
    fn roots(&self) -> Vec<PathBuf> {
        let home = self.home.as_deref();
        let mut roots = view::path_roots(Some(&self.path()), home);
        for r in view::var_roots(&self.toolchain_vars, home) {
            if !roots.contains(&r) {
                roots.push(r);
            }
        }
        roots
    }

    /// The `PATH` of the commands: the child environment's, else this process's.
    fn path(&self) -> String {
        self.path_var
            .clone()
            .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default())
    }

    pub fn helper(mut self, helper: impl Into<PathBuf>) -> Self {
        self.helper = Some(helper.into());
        self
    }

    /// Keeps the fresh home in `dir` (created when missing, never deleted).
    pub fn home_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.home_dir = Some(dir.into());
        self
    }
}

#[derive(Debug, Clone)]
enum Mechanism {
    Bubblewrap {
        bwrap: PathBuf,
        /// The system-call filter (`None` on an architecture it does not know).
        seccomp: Option<Arc<SeccompFile>>,
    },
    Landlock {
        helper: PathBuf,
        /// The private temporary directory (removed when the last clone drops).
        tmp: Arc<tempfile::TempDir>,
    },
    None,
}

#[derive(Debug, Clone)]
pub struct Sandbox {
    status: SandboxStatus,
    mechanism: Mechanism,
    hidden: Vec<PathBuf>,
    /// The fresh home shown in place of the user's (`None` without a `HOME`).
    home: Option<Arc<view::FreshHome>>,
    /// The installations of the commands' `PATH` entries and toolchain
    /// variables (shown read-only).
    roots: Vec<PathBuf>,
}

/// An ini-style package-manager configuration (`.npmrc`) without the entries that
/// carry credentials (`_auth`, `_authToken`, `_password`, `username`, `email`,
/// client certificates and keys, tokens), scoped (`//host/:_authToken`) or not.
pub fn without_credentials(text: &str) -> String {
    const SECRET_KEYS: &[&str] = &[
        "_auth",
        "_authtoken",
        "_password",
        "password",
        "username",
        "email",
        "certfile",
        "keyfile",
        "cert",
        "key",
        "token",
        "otp",
    ];
    let mut out = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let key = t
            .split('=')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        // `//registry.example/:_authToken` → `_authtoken`.
        let last = key.rsplit(':').next().unwrap_or(&key);
        if SECRET_KEYS.contains(&last) || last.contains("token") || last.contains("password") {
            continue;
        }
        out.push_str(t);
        out.push('\n');
    }
    out
}

impl Sandbox {
    /// Picks and probes a mechanism (runs `true` inside it once).
    pub fn detect(opts: &SandboxOptions) -> Sandbox {
        let hidden = hidden_paths(opts.home.as_deref());
        if opts.mode == SandboxMode::Off {
            return Sandbox {
                status: SandboxStatus {
                    kind: SandboxKind::None,
                    fallback_reason: Some("disabled by the user (sandbox.mode: off)".to_string()),
                    disabled: true,
                },
                mechanism: Mechanism::None,
                hidden,
                home: None,
                roots: Vec::new(),
            };
        }
        if !cfg!(target_os = "linux") {
            return Sandbox::unavailable("sandboxing is available on Linux only", hidden);
        }
        let mut reasons = Vec::new();
        if matches!(opts.mode, SandboxMode::Auto | SandboxMode::Bubblewrap) {
            match probe_bwrap(opts, &hidden) {
                Ok(s) => return s,
                Err(r) => reasons.push(r),
            }
        }
        if matches!(opts.mode, SandboxMode::Auto | SandboxMode::Landlock) {
            match probe_fallback(opts, &hidden) {
                Ok(mut s) => {
                    if !reasons.is_empty() {
                        s.status.fallback_reason = Some(reasons.join("; "));
                    }
                    return s;
                }
                Err(r) => reasons.push(r),
            }
        }
        Sandbox::unavailable(&reasons.join("; "), hidden)
    }

    fn unavailable(reason: &str, hidden: Vec<PathBuf>) -> Sandbox {
        Sandbox {
            status: SandboxStatus {
                kind: SandboxKind::None,
                fallback_reason: Some(reason.to_string()),
                disabled: false,
            },
            mechanism: Mechanism::None,
            hidden,
            home: None,
            roots: Vec::new(),
        }
    }

    /// A sandbox that is off on purpose (tests of other layers, `--sandbox off`).
    pub fn off() -> Sandbox {
        Sandbox::detect(&SandboxOptions::new(SandboxMode::Off))
    }

    pub fn status(&self) -> &SandboxStatus {
        &self.status
    }

    /// Why [`Origin::Issued`] commands are refused here (no mechanism works and the
    /// user did not switch the sandbox off); `None` when they may run.
    pub fn refusal(&self) -> Option<String> {
        match self.mechanism {
            Mechanism::None if !self.status.disabled => Some(format!(
                "no sandbox works here ({}); install bubblewrap, or run with `--sandbox off` to run model- and plan-issued commands unconfined [SANDBOX_UNAVAILABLE]",
                self.status
                    .fallback_reason
                    .as_deref()
                    .unwrap_or("no mechanism")
            )),
            _ => None,
        }
    }

    /// The paths hidden from sandboxed commands.
    pub fn hidden(&self) -> &[PathBuf] {
        &self.hidden
    }

    /// The directory shown as the home of sandboxed commands (`None` without a
    /// mechanism or a `HOME`): where agents keep their sessions.
    pub fn home_dir(&self) -> Option<&Path> {
        match self.mechanism {
            Mechanism::None => None,
            _ => self.home.as_deref().map(view::FreshHome::dir),
        }
    }

    /// The argv that runs `argv` in `cwd` under `policy`. Unchanged when the user
    /// switched the sandbox off, or for a [`Origin::User`] command when no
    /// mechanism works; an error for an [`Origin::Issued`] command then.
    pub fn wrap(
        &self,
        argv: Vec<String>,
        policy: &SandboxPolicy,
        cwd: &Path,
        origin: Origin,
    ) -> Result<Vec<String>, ExecError> {
        // A command in a copy-on-write step workspace runs in the workspace's
        // mount namespace (`crate::overlay`): its paths as that namespace sees them.
        let translated;
        let (policy, cwd) = if cwd.starts_with("/proc") {
            let map = |v: &[PathBuf]| v.iter().map(|p| crate::overlay::inner(p)).collect();
            translated = (
                SandboxPolicy {
                    writable: map(&policy.writable),
                    read_only: map(&policy.read_only),
                    readable: map(&policy.readable),
                    network: policy.network,
                },
                crate::overlay::inner(cwd),
            );
            (&translated.0, translated.1.as_path())
        } else {
            (policy, cwd)
        };
        match &self.mechanism {
            Mechanism::Bubblewrap { bwrap, seccomp } => Ok(bwrap_argv(
                bwrap,
                &self.hidden,
                self.home.as_deref(),
                seccomp.as_deref(),
                &self.roots,
                argv,
                policy,
                cwd,
            )),
            Mechanism::Landlock { helper, tmp } => {
                let mut out = vec![
                    helper.to_string_lossy().into_owned(),
                    HELPER_SUBCOMMAND.to_string(),
                ];
                let home = self.home.as_deref();
                // The hidden paths that matter are those inside shown paths
                // (`layout`); the rest of the home is not shown at all.
                let mut req = helper::Request {
                    network: policy.network,
                    dac_override: running_as_root(),
                    tmp: Some(tmp.path().to_path_buf()),
                    home: home.map(|h| (h.real.clone(), h.dir().to_path_buf())),
                    cwd: cwd.to_path_buf(),
                    ..helper::Request::default()
                };
                for (p, how) in view::layout(home, &self.hidden, &self.roots, policy) {
                    match how {
                        Show::ReadOnly => req.readable.push(p),
                        Show::Writable => req.writable.push(p),
                        Show::ReadOnlyOver => req.read_only.push(p),
                        Show::Hidden => req.hidden.push(p),
                    }
                }
                req.argv = argv;
                out.extend(req.to_args());
                Ok(out)
            }
            Mechanism::None if self.status.disabled || origin == Origin::User => Ok(argv),
            Mechanism::None => Err(ExecError::SandboxUnavailable {
                command: shell_words::join(&argv),
                reason: self
                    .status
                    .fallback_reason
                    .clone()
                    .unwrap_or_else(|| "no mechanism".to_string()),
            }),
        }
    }
}

/// `HOME`'s credential stores, plus those of the process's own `HOME`.
fn hidden_paths(home: Option<&Path>) -> Vec<PathBuf> {
    let mut homes: Vec<PathBuf> = home.map(Path::to_path_buf).into_iter().collect();
    if let Some(h) = std::env::var_os("HOME").map(PathBuf::from)
        && !homes.contains(&h)
    {
        homes.push(h);
    }
    let mut out = Vec::new();
    for h in homes.iter().filter(|h| h.is_absolute()) {
        for rel in HIDDEN_HOME_PATHS {
            out.push(h.join(rel));
        }
    }
    out
}

fn probe_bwrap(opts: &SandboxOptions, hidden: &[PathBuf]) -> Result<Sandbox, String> {
    let Some(bwrap) = find_on_path("bwrap", opts.path_var.as_deref()) else {
        return Err(
            "bwrap (bubblewrap) not found on PATH; install it (apt-get install bubblewrap)"
                .to_string(),
        );
    };
    let probe_dir = std::env::temp_dir();
    let policy = SandboxPolicy::worktree(&probe_dir, &[]);
    let home = opts
        .home
        .as_deref()
        .and_then(|h| view::FreshHome::create(h, opts.home_dir.as_deref()));
    let seccomp = SeccompFile::create().map(Arc::new);
    let argv = bwrap_argv(
        &bwrap,
        hidden,
        home.as_ref(),
        seccomp.as_deref(),
        &[],
        vec!["true".to_string()],
        &policy,
        &probe_dir,
    );
    match quiet_run(&argv) {
        Ok(()) => Ok(Sandbox {
            status: SandboxStatus {
                kind: SandboxKind::Bubblewrap,
                fallback_reason: None,
                disabled: false,
            },
            mechanism: Mechanism::Bubblewrap { bwrap, seccomp },
            hidden: hidden.to_vec(),
            home: home.map(Arc::new),
            roots: opts.roots(),
        }),
        Err(e) => Err(format!("bwrap cannot create a sandbox here: {e}")),
    }
}

fn probe_fallback(opts: &SandboxOptions, hidden: &[PathBuf]) -> Result<Sandbox, String> {
    let helper = find_helper(opts.helper.as_deref()).ok_or_else(|| {
        format!(
            "the built-in sandbox needs the dandori binary (set {HELPER_ENV}); none found next to {}",
            std::env::current_exe()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        )
    })?;
    let tmp = view::temp_dir("dandori-sandbox-")
        .map_err(|e| format!("creating the sandbox's temporary directory: {e}"))?;
    let sandbox = Sandbox {
        status: SandboxStatus {
            kind: SandboxKind::Landlock,
            fallback_reason: None,
            disabled: false,
        },
        mechanism: Mechanism::Landlock {
            helper,
            tmp: Arc::new(tmp),
        },
        hidden: hidden.to_vec(),
        home: opts
            .home
            .as_deref()
            .and_then(|h| view::FreshHome::create(h, opts.home_dir.as_deref()))
            .map(Arc::new),
        roots: opts.roots(),
    };
    let dir = std::env::temp_dir();
    let argv = sandbox
        .wrap(
            vec!["true".to_string()],
            &SandboxPolicy::worktree(&dir, &[]),
            &dir,
            Origin::Issued,
        )
        .map_err(|e| e.to_string())?;
    quiet_run(&argv).map_err(|e| format!("the built-in sandbox does not work here: {e}"))?;
    Ok(sandbox)
}

fn quiet_run(argv: &[String]) -> Result<(), String> {
    let Some((program, args)) = argv.split_first() else {
        return Err("empty command".to_string());
    };
    let out = Command::new(program)
        .args(args)
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .map_err(|e| format!("running {program}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// The helper binary: explicit, [`HELPER_ENV`], the running `dandori`, or a
/// `dandori` beside the running executable (or one directory up, for test
/// binaries under `target/*/deps`).
fn find_helper(explicit: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return p.is_file().then(|| p.to_path_buf());
    }
    if let Some(p) = std::env::var_os(HELPER_ENV).map(PathBuf::from) {
        return p.is_file().then_some(p);
    }
    let exe = std::env::current_exe().ok()?;
    if exe.file_name().is_some_and(|n| n == "dandori") {
        return Some(exe);
    }
    let dir = exe.parent()?;
    [Some(dir), dir.parent()]
        .into_iter()
        .flatten()
        .map(|d| d.join("dandori"))
        .find(|p| p.is_file())
}

use view::Show;

/// The seccomp program written once for bubblewrap's `--seccomp FD`.
#[derive(Debug)]
struct SeccompFile {
    _dir: tempfile::TempDir,
    path: PathBuf,
}

impl SeccompFile {
    fn create() -> Option<SeccompFile> {
        let program = seccomp::program()?;
        let dir = view::temp_dir("dandori-seccomp-").ok()?;
        let path = dir.path().join("filter.bpf");
        std::fs::write(&path, seccomp::to_bytes(&program)).ok()?;
        Some(SeccompFile { _dir: dir, path })
    }
}

/// True when this process is root (bubblewrap keeps every capability for root
/// unless told otherwise).
pub(crate) fn running_as_root() -> bool {
    nix::unistd::geteuid().is_root()
}

#[allow(clippy::too_many_arguments)]
fn bwrap_argv(
    bwrap: &Path,
    hidden: &[PathBuf],
    home: Option<&view::FreshHome>,
    seccomp: Option<&SeccompFile>,
    roots: &[PathBuf],
    argv: Vec<String>,
    policy: &SandboxPolicy,
    cwd: &Path,
) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut out: Vec<String> = Vec::new();
    // bubblewrap reads the filter from a file descriptor: a shell opens it.
    if let Some(f) = seccomp {
        out.extend([
            "/bin/sh".to_string(),
            "-c".to_string(),
            "f=$1; shift; exec \"$@\" 9<\"$f\"".to_string(),
            "dandori-sandbox".to_string(),
            s(&f.path),
        ]);
    }
    out.push(s(bwrap));
    out.extend(
        [
            "--die-with-parent",
            "--new-session",
            "--unshare-user",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
        ]
        .iter()
        .map(|a| a.to_string()),
    );
    if running_as_root() {
        // Root keeps its capabilities inside bubblewrap unless they are dropped.
        // It keeps one: the override of file modes, which root relies on
        // everywhere (a checkout copied from a read-only tree has mode 0555); in
        // the user namespace it covers root's own files only, and what may be
        // read or written is the view's and the mounts' business.
        out.extend(
            [
                "--uid",
                "0",
                "--gid",
                "0",
                "--cap-drop",
                "ALL",
                "--cap-add",
                "CAP_DAC_OVERRIDE",
            ]
            .map(String::from),
        );
    }
    if seccomp.is_some() {
        out.extend(["--seccomp".to_string(), "9".to_string()]);
    }
    for d in view::SYSTEM_DIRS {
        let p = Path::new(d);
        match std::fs::symlink_metadata(p) {
            Ok(m) if m.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(p) {
                    out.extend(["--symlink".to_string(), s(&target), s(p)]);
                }
            }
            Ok(_) => out.extend(["--ro-bind".to_string(), s(p), s(p)]),
            Err(_) => {}
        }
    }
    // /etc/resolv.conf may point into /run (systemd-resolved): show its target.
    if let Ok(target) = std::fs::canonicalize("/etc/resolv.conf")
        && !view::in_system(&target)
    {
        out.extend(["--ro-bind".to_string(), s(&target), s(&target)]);
    }
    out.extend(
        [
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp", "--tmpfs", "/var/tmp",
        ]
        .iter()
        .map(|a| a.to_string()),
    );
    if !policy.network {
        out.push("--unshare-net".to_string());
    }
    if let Some(h) = home {
        out.extend(["--bind".to_string(), s(h.dir()), s(&h.real)]);
    }
    for (p, how) in view::layout(home, hidden, roots, policy) {
        match how {
            Show::ReadOnly | Show::ReadOnlyOver => {
                out.extend(["--ro-bind".to_string(), s(&p), s(&p)]);
            }
            Show::Writable => out.extend(["--bind".to_string(), s(&p), s(&p)]),
            Show::Hidden => match std::fs::symlink_metadata(&p) {
                Ok(m) if m.is_dir() => out.extend(["--tmpfs".to_string(), s(&p)]),
                Ok(_) => {
                    out.extend(["--ro-bind".to_string(), "/dev/null".to_string(), s(&p)]);
                }
                Err(_) => {}
            },
        }
    }
    // The root bubblewrap built (directories made for mount points) is
    // read-only too: nothing written outside the shown paths vanishes silently.
    out.extend([
        "--remount-ro".to_string(),
        "/".to_string(),
        "--chdir".to_string(),
        s(cwd),
        "--setenv".to_string(),
        "TMPDIR".to_string(),
        "/tmp".to_string(),
        "--".to_string(),
    ]);
    out.extend(argv);
    out
}

fn find_on_path(program: &str, path_var: Option<&str>) -> Option<PathBuf> {
    let path = match path_var {
        Some(p) => p.to_string(),
        None => std::env::var("PATH").ok()?,
    };
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}
