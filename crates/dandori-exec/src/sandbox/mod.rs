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

/// Hidden user configurations that package managers need for more than
/// credentials (a registry mirror, a proxy, a CA file): a sandboxed command reads
/// a copy without the credential entries instead, so that a tool which treats an
/// unreadable file as fatal (yarn 1 and `~/.npmrc`) still works and the mirror
/// still applies. (path under `HOME`, variable naming the copy for the fallback
/// sandbox, which cannot bind a file over another.) The user's file is never
/// written.
const REPLACED_USER_CONFIGS: &[(&str, &str)] = &[(".npmrc", "npm_config_userconfig")];

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
];

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
}

impl SandboxOptions {
    pub fn new(mode: SandboxMode) -> Self {
        SandboxOptions {
            mode,
            ..SandboxOptions::default()
        }
    }

    /// `PATH` and `HOME` taken from a child environment.
    pub fn env(mut self, env: &std::collections::BTreeMap<String, String>) -> Self {
        self.path_var = env.get("PATH").cloned();
        self.home = env.get("HOME").map(PathBuf::from);
        self
    }

    pub fn helper(mut self, helper: impl Into<PathBuf>) -> Self {
        self.helper = Some(helper.into());
        self
    }
}

#[derive(Debug, Clone)]
enum Mechanism {
    Bubblewrap {
        bwrap: PathBuf,
        /// Directories of `PATH` that the private `/tmp` would hide.
        shown_tmp_dirs: Vec<PathBuf>,
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
    /// Credential-free copies of hidden user configurations.
    replaced: Arc<ReplacedConfigs>,
}

/// Credential-free copies of hidden user configurations ([`REPLACED_USER_CONFIGS`])
/// in a directory of their own (read-only for sandboxed commands; removed when the
/// last clone of the sandbox drops).
#[derive(Debug, Default)]
struct ReplacedConfigs {
    dir: Option<tempfile::TempDir>,
    /// (hidden file, its copy, the variable that names the copy).
    files: Vec<(PathBuf, PathBuf, &'static str)>,
}

impl ReplacedConfigs {
    /// Copies each hidden configuration file of [`REPLACED_USER_CONFIGS`] that
    /// exists, without its credential entries. Best effort: a file that cannot be
    /// read or copied stays hidden as before.
    fn create(hidden: &[PathBuf]) -> ReplacedConfigs {
        let mut out = ReplacedConfigs::default();
        for (rel, var) in REPLACED_USER_CONFIGS {
            // The first home's copy wins for the variable; each file is replaced.
            for h in hidden.iter().filter(|h| h.ends_with(rel) && h.is_file()) {
                let Ok(text) = std::fs::read_to_string(h) else {
                    continue;
                };
                if out.dir.is_none() {
                    out.dir = tempfile::Builder::new()
                        .prefix("dandori-user-config-")
                        .tempdir()
                        .ok();
                }
                let Some(dir) = out.dir.as_ref() else {
                    return out;
                };
                let copy = dir.path().join(format!(
                    "{}.{}",
                    out.files.len(),
                    rel.trim_start_matches('.')
                ));
                if std::fs::write(&copy, without_credentials(&text)).is_ok() {
                    out.files.push((h.clone(), copy, var));
                }
            }
        }
        out
    }

    fn copy_of(&self, hidden: &Path) -> Option<&Path> {
        self.files
            .iter()
            .find(|(h, _, _)| h == hidden)
            .map(|(_, c, _)| c.as_path())
    }

    /// `NAME=VALUE` defaults for the fallback sandbox (first copy per variable).
    fn env_defaults(&self) -> Vec<String> {
        let mut seen: Vec<&str> = Vec::new();
        let mut out = Vec::new();
        for (_, copy, var) in &self.files {
            if !seen.contains(var) {
                seen.push(var);
                out.push(format!("{var}={}", copy.display()));
            }
        }
        out
    }
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
                replaced: Arc::default(),
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
            replaced: Arc::default(),
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
        match &self.mechanism {
            Mechanism::Bubblewrap {
                bwrap,
                shown_tmp_dirs,
            } => Ok(bwrap_argv(
                bwrap,
                shown_tmp_dirs,
                &self.hidden,
                &self.replaced,
                argv,
                policy,
                cwd,
            )),
            Mechanism::Landlock { helper, tmp } => {
                let mut out = vec![
                    helper.to_string_lossy().into_owned(),
                    HELPER_SUBCOMMAND.to_string(),
                ];
                let req = helper::Request {
                    writable: policy.writable.clone(),
                    read_only: policy.read_only.clone(),
                    hidden: self.hidden.clone(),
                    network: policy.network,
                    tmp: Some(tmp.path().to_path_buf()),
                    env_defaults: self.replaced.env_defaults(),
                    cwd: cwd.to_path_buf(),
                    argv,
                };
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
    let replaced = Arc::new(ReplacedConfigs::create(hidden));
    let argv = bwrap_argv(
        &bwrap,
        &[],
        hidden,
        &replaced,
        vec!["true".to_string()],
        &policy,
        &probe_dir,
    );
    let path = opts
        .path_var
        .clone()
        .unwrap_or_else(|| std::env::var("PATH").unwrap_or_default());
    match quiet_run(&argv) {
        Ok(()) => {
            let dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
            Ok(Sandbox {
                status: SandboxStatus {
                    kind: SandboxKind::Bubblewrap,
                    fallback_reason: None,
                    disabled: false,
                },
                mechanism: Mechanism::Bubblewrap {
                    bwrap,
                    shown_tmp_dirs: tmp_roots(dirs.iter().map(PathBuf::as_path)),
                },
                hidden: hidden.to_vec(),
                replaced,
            })
        }
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
    let tmp = tempfile::Builder::new()
        .prefix("dandori-sandbox-")
        .tempdir()
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
        replaced: Arc::new(ReplacedConfigs::create(hidden)),
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

fn bwrap_argv(
    bwrap: &Path,
    shown_tmp_dirs: &[PathBuf],
    hidden: &[PathBuf],
    replaced: &ReplacedConfigs,
    argv: Vec<String>,
    policy: &SandboxPolicy,
    cwd: &Path,
) -> Vec<String> {
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let mut out: Vec<String> = vec![s(bwrap)];
    out.extend(
        [
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/var/tmp",
        ]
        .iter()
        .map(|a| a.to_string()),
    );
    if !policy.network {
        out.push("--unshare-net".to_string());
    }
    // The private /tmp hides whatever lives under the host's /tmp; keep the program,
    // the files named by absolute arguments (`sh /tmp/x/agent.sh`) and the PATH
    // tools visible (read-only) when they live there.
    let named = argv.iter().map(Path::new).filter(|p| p.is_absolute());
    let mut shown = shown_tmp_dirs.to_vec();
    shown.extend(tmp_roots(named));
    shown.sort();
    shown.dedup();
    for d in &shown {
        out.extend(["--ro-bind".to_string(), s(d), s(d)]);
    }
    for d in &policy.writable {
        if d.exists() {
            out.extend(["--bind".to_string(), s(d), s(d)]);
        }
    }
    for d in &policy.read_only {
        if d.exists() {
            out.extend(["--ro-bind".to_string(), s(d), s(d)]);
        }
    }
    for h in hidden {
        match std::fs::symlink_metadata(h) {
            Ok(m) if m.is_dir() => out.extend(["--tmpfs".to_string(), s(h)]),
            Ok(_) if replaced.copy_of(h).is_some() => {
                let copy = replaced.copy_of(h).unwrap_or(h);
                out.extend(["--ro-bind".to_string(), s(copy), s(h)]);
            }
            Ok(_) => out.extend(["--ro-bind".to_string(), "/dev/null".to_string(), s(h)]),
            Err(_) => {}
        }
    }
    out.extend([
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

/// The top-level directories under `/tmp` or `/var/tmp` that hold these paths
/// (`/tmp/ci/tools/bin` → `/tmp/ci`), which exist on the host.
fn tmp_roots<'a>(paths: impl Iterator<Item = &'a Path>) -> Vec<PathBuf> {
    let mut roots = Vec::new();
    for p in paths {
        for tmp in ["/tmp", "/var/tmp"] {
            if let Some(first) = p
                .strip_prefix(tmp)
                .ok()
                .and_then(|rest| rest.components().next())
            {
                let root = Path::new(tmp).join(first);
                if root.is_dir() && !roots.contains(&root) {
                    roots.push(root);
                }
            }
        }
    }
    roots
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
