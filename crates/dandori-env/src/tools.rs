//! dandori's own tool cache: package managers the generated commands prefer
//! (uv for Python, yarn classic and pnpm for Node) are installed here once,
//! from PyPI and npm, when they are not on `PATH`. Nothing global is touched:
//! the cache is a directory of dandori's, its `bin` goes last on the `PATH` of
//! setup, verification, `dandori env exec` and the runner's commands.
//!
//! Where: `$DANDORI_TOOLS_DIR`, else `$XDG_CACHE_HOME/dandori/tools`, else
//! `$HOME/.cache/dandori/tools`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use dandori_exec::{CommandSpec, run_command};

use crate::EnvError;
use crate::analyzer::Ecosystem;
use crate::installer::{self, Source};
use crate::records::ToolBootstrap;

/// Overrides the tool cache directory (tests, shared CI caches).
pub const TOOLS_DIR_VAR: &str = "DANDORI_TOOLS_DIR";
/// `0` / `false` turns the bootstrap off: only tools already on `PATH` are used.
pub const TOOLS_BOOTSTRAP_VAR: &str = "DANDORI_TOOLS_BOOTSTRAP";

const INSTALL_TIMEOUT: Duration = Duration::from_secs(600);

/// The tool cache directory for an environment (`PATH`, `HOME`, …).
pub fn tools_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let set = |k: &str| var(env, k).map(PathBuf::from);
    set(TOOLS_DIR_VAR)
        .or_else(|| set("XDG_CACHE_HOME").map(|c| c.join("dandori/tools")))
        .or_else(|| set("HOME").map(|h| h.join(".cache/dandori/tools")))
}

/// `policy` with the tool cache readable and, inside any directory the policy
/// makes writable (`~/.cache` of environment setup), read-only: a command that
/// names a bootstrapped tool inside a shell line (`sh -c "yarn test"`) finds it
/// on `PATH` inside the sandbox, and no command a model, plan or agent chose
/// can plant a file in the cache that later runs of any repository execute.
/// Only dandori's own bootstrap writes there. The cache is created (empty)
/// when missing: a sandbox only keeps read-only what exists.
pub fn with_tools_read_only(
    policy: dandori_exec::SandboxPolicy,
    env: &BTreeMap<String, String>,
) -> dandori_exec::SandboxPolicy {
    let Some(dir) = tools_dir(env) else {
        return policy;
    };
    let under_writable = policy.writable.iter().any(|w| dir.starts_with(w));
    if !dir.is_dir() && under_writable {
        // Best effort: without it the carve-out cannot be mounted, and the
        // error of the write is the command's own.
        let _ = dandori_fs::create_dir_all(&dir);
    }
    if !dir.is_dir() {
        return policy;
    }
    policy.readable(dir.clone()).read_only(dir)
}

/// `<tools>/bin`, where the bootstrapped programs are linked.
pub fn bin_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    tools_dir(env).map(|d| d.join("bin"))
}

/// `env` with the tool cache's `bin` (created when missing) last on `PATH`, so a tool
/// the user installed always wins.
pub fn with_tools_on_path(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = env.clone();
    // Created when missing: a tool bootstrapped later in the run (during the
    // environment phase) is then on the `PATH` and in the sandbox view that
    // the run's commands got before it existed.
    if let Some(bin) = bin_dir(&env).filter(|b| b.is_dir() || std::fs::create_dir_all(b).is_ok()) {
        let bin = bin.display().to_string();
        let path = env.get("PATH").cloned().unwrap_or_default();
        if !path.split(':').any(|p| p == bin) {
            let joined = if path.is_empty() {
                bin
            } else {
                format!("{path}:{bin}")
            };
            env.insert("PATH".into(), joined);
        }
    }
    env
}

fn on_path(tool: &str, env: &BTreeMap<String, String>) -> bool {
    let path = env.get("PATH").map(String::as_str).unwrap_or("");
    dandori_exec::run::find_program(tool, path, Path::new("/")).is_some()
}

/// `k` from `env`, else from this process's environment (the child
/// environment of commands does not carry dandori's own variables).
fn var(env: &BTreeMap<String, String>, k: &str) -> Option<String> {
    env.get(k)
        .cloned()
        .or_else(|| std::env::var(k).ok())
        .filter(|v| !v.is_empty())
}

/// Whether the bootstrap may install tools (`DANDORI_TOOLS_BOOTSTRAP`).
pub fn bootstrap_enabled(env: &BTreeMap<String, String>) -> bool {
    !matches!(
        var(env, TOOLS_BOOTSTRAP_VAR).map(|v| v.trim().to_ascii_lowercase()),
        Some(v) if v == "0" || v == "false" || v == "no"
    )
}

/// Carries out [`installer::decide`] for `eco`: installs the package manager
/// into the tool cache when the decision says so (uv from PyPI, pnpm at the
/// pinned version, yarn 1 and a pinned yarn ≥ 2 release from npm) and says
/// what happened. `Ok(None)` when the ecosystem has no such tool.
///
/// The installs are dandori's own fixed commands (`pip install
/// --only-binary=:all: uv==X`, `npm install --ignore-scripts pnpm@X`: no
/// package code runs at install time), run outside the sandbox of any command
/// a model, plan or agent chose: the tool cache is writable for them only.
/// A failed install is not an error of the setup: the record says why and
/// which fallback the commands use (pip, corepack, npm).
pub fn ensure_for(
    eco: &Ecosystem,
    env: &BTreeMap<String, String>,
    progress: &dyn Fn(&str),
) -> Result<Option<ToolBootstrap>, EnvError> {
    let Some(decision) = installer::decide(eco, env) else {
        return Ok(None);
    };
    let started = Instant::now();
    let env = with_tools_on_path(env);
    let mut record = ToolBootstrap {
        tool: decision.tool.to_string(),
        version: decision.version.clone(),
        pinned_by: decision.pinned_by.clone(),
        status: String::new(),
        path: None,
        commands: Vec::new(),
        error: None,
        fallback: None,
        duration_ms: 0,
    };
    match &decision.source {
        Source::Path(p) => {
            record.status = "on_path".into();
            record.path = Some(p.display().to_string());
            if decision.pinned_by.is_some()
                && let Some(found) = tool_version(p, &env)
                && found != decision.version
            {
                let note = format!(
                    "{} {found} on PATH ({}) runs, not the {} the repository pins{}",
                    decision.tool,
                    p.display(),
                    decision.version,
                    decision
                        .pinned_by
                        .as_deref()
                        .map(|b| format!(" ({b})"))
                        .unwrap_or_default()
                );
                progress(&note);
                record.fallback = Some(note);
            }
        }
        Source::Cached(p) => {
            record.status = "cached".into();
            record.path = Some(p.display().to_string());
            if let Some(dir) = tools_dir(&env) {
                // A cache from before the launchers: they choose the release.
                write_launcher_of(decision.tool, &dir)?;
            }
        }
        Source::CachedOtherVersion(p) => {
            record.status = "disabled".into();
            record.path = Some(p.display().to_string());
            record.fallback = decision.note();
            if let Some(n) = &record.fallback {
                progress(n);
            }
        }
        Source::Unavailable(why) => {
            record.status = "disabled".into();
            record.error = Some(why.clone());
            record.fallback = Some(installer::fallback_of(decision.tool).to_string());
        }
        Source::Bootstrap => {
            let Some(dir) = tools_dir(&env) else {
                return Ok(None);
            };
            let io = Installer {
                env: &env,
                progress,
                ran: RefCell::new(Vec::new()),
            };
            let installed = install(&decision, &dir, &io);
            record.commands = io.ran.into_inner();
            match installed {
                Ok(path) => {
                    record.status = "installed".into();
                    record.path = Some(path.display().to_string());
                }
                Err(message) => {
                    let fallback = installer::fallback_of(decision.tool);
                    progress(&format!(
                        "could not bootstrap {} {} into dandori's tool cache {} ({message}); the setup uses {fallback}",
                        decision.tool,
                        decision.version,
                        dir.display()
                    ));
                    record.status = "failed".into();
                    record.error = Some(message);
                    record.fallback = Some(fallback.to_string());
                }
            }
        }
    }
    record.duration_ms = started.elapsed().as_millis() as u64;
    Ok(Some(record))
}

/// `program --version`'s first word (`10.18.3`), or `None` when it does not run.
fn tool_version(program: &Path, env: &BTreeMap<String, String>) -> Option<String> {
    let spec = CommandSpec::program(
        program.display().to_string(),
        ["--version".to_string()],
        Path::new("/"),
    )
    .env(env.clone())
    .timeout(Duration::from_secs(30));
    let out = run_command(&spec).ok().filter(|o| o.success())?;
    out.stdout_tail
        .split_whitespace()
        .last()
        .map(|v| v.trim_start_matches('v').to_string())
}

/// Installs the decided release; the linked program, or why it failed.
fn install(
    decision: &installer::Decision,
    dir: &Path,
    io: &Installer<'_>,
) -> Result<PathBuf, String> {
    let err = |e: EnvError| e.to_string();
    let v = &decision.version;
    match decision.tool {
        "uv" => install_from_pypi(dir, "uv", &format!("uv=={v}"), io),
        "pnpm" => {
            npm_install(
                dir,
                &format!("pnpm@{v}"),
                "pnpm",
                &format!("pnpm@{v}"),
                "node_modules/.bin/pnpm",
                io,
            )?;
            write_launcher(dir, "pnpm", PNPM_LAUNCHER).map_err(err)
        }
        "yarn" => {
            let classic = format!("yarn@{}", installer::YARN_CLASSIC_VERSION);
            npm_install(
                dir,
                "yarn@1",
                "yarn",
                &classic,
                "node_modules/.bin/yarn",
                io,
            )?;
            if !v.starts_with("1.") {
                // Without corepack (or when it cannot fetch), the launcher runs
                // this release for the projects that pin it.
                let package = format!("{BERRY_PACKAGE}@{v}");
                let prefix = package.replace('/', "_");
                if let Err(first) = npm_install(dir, &prefix, "yarn", &package, BERRY_ENTRY, io) {
                    // Not every release reached npm (4.10.0 did not): the
                    // latest patch of the same minor, for this pin.
                    let nearest = format!("{BERRY_PACKAGE}@~{v}");
                    npm_install(dir, &prefix, "yarn", &nearest, BERRY_ENTRY, io)
                        .map_err(|second| format!("{first}; then {second}"))?;
                }
            }
            write_launcher(dir, "yarn", YARN_LAUNCHER).map_err(err)
        }
        other => Err(format!("dandori does not bootstrap {other}")),
    }
}

/// What an install needs: the environment, the progress line, and the
/// commands it ran (for the record).
struct Installer<'a> {
    env: &'a BTreeMap<String, String>,
    progress: &'a dyn Fn(&str),
    ran: RefCell<Vec<String>>,
}

impl Installer<'_> {
    /// Runs `argv` in `cwd` (a directory of the tool cache), unsandboxed:
    /// dandori's own command, never one a model, plan or agent chose.
    fn run(&self, argv: &[String], cwd: &Path) -> Result<(), String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("empty command".into());
        };
        let line = shell_words::join(argv);
        self.ran.borrow_mut().push(line.clone());
        let spec = CommandSpec::program(program.clone(), args.iter().cloned(), cwd)
            .env(self.env.clone())
            .timeout(INSTALL_TIMEOUT);
        match run_command(&spec) {
            Ok(o) if o.success() => Ok(()),
            Ok(o) => Err(format!(
                "`{line}` exited with {:?}: {}",
                o.exit_code,
                o.stderr_tail.trim()
            )),
            Err(e) => Err(format!("`{line}`: {e}")),
        }
    }
}

fn link(target: &Path, bin: &Path, tool: &str) -> Result<PathBuf, EnvError> {
    dandori_fs::create_dir_all(bin)?;
    let dest = bin.join(tool);
    if dest.exists() || dest.is_symlink() {
        dandori_fs::remove_file(&dest)?;
    }
    std::os::unix::fs::symlink(target, &dest).map_err(|e| EnvError::Record {
        path: dest.display().to_string(),
        message: format!("linking {}: {e}", target.display()),
    })?;
    Ok(dest)
}

/// uv from PyPI into `<tools>/uv` (a virtual environment of its own), linked
/// from `<tools>/bin/uv`. Only a wheel is accepted: no package code runs.
fn install_from_pypi(
    dir: &Path,
    tool: &str,
    requirement: &str,
    io: &Installer<'_>,
) -> Result<PathBuf, String> {
    let err = |e: EnvError| e.to_string();
    let venv = dir.join(tool);
    let exe = venv.join("bin").join(tool);
    if !exe.exists() {
        let python = ["python3", "python"]
            .into_iter()
            .find(|p| on_path(p, io.env))
            .ok_or_else(|| "neither python3 nor python is on PATH".to_string())?;
        (io.progress)(&format!(
            "{tool} not found: installing it once from PyPI ({requirement}) into dandori's tool cache {}",
            dir.display()
        ));
        dandori_fs::create_dir_all(dir).map_err(|e| e.to_string())?;
        let venv_s = venv.display().to_string();
        let pip = venv.join("bin/python").display().to_string();
        let steps = [
            vec![python.to_string(), "-m".into(), "venv".into(), venv_s],
            vec![
                pip,
                "-m".into(),
                "pip".into(),
                "install".into(),
                "--quiet".into(),
                "--disable-pip-version-check".into(),
                "--only-binary=:all:".into(),
                requirement.to_string(),
            ],
        ];
        for s in &steps {
            io.run(s, dir)?;
        }
    }
    link(&exe, &dir.join("bin"), tool).map_err(err)
}

/// The npm package of yarn ≥ 2 releases (one bundled JavaScript file).
pub(crate) const BERRY_PACKAGE: &str = "@yarnpkg/cli-dist";
/// The release's entry point inside its install prefix.
pub(crate) const BERRY_ENTRY: &str = "node_modules/@yarnpkg/cli-dist/bin/yarn.js";

/// `<tools>/bin/yarn`: runs the yarn release that the nearest `package.json`
/// pins (`packageManager: yarn@X`, X ≥ 2) when the tool cache holds it, else the
/// cache's yarn 1 (which runs a repository's own `yarnPath` release itself).
const YARN_LAUNCHER: &str = r#"#!/bin/sh
# Written by dandori (tool cache launcher): the yarn release that the nearest
# package.json pins when dandori's tool cache holds it, else yarn 1.
tools=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
v=$(node -e 'const fs = require("fs"), p = require("path"); let d = process.cwd();
for (;;) {
  try {
    const pm = JSON.parse(fs.readFileSync(p.join(d, "package.json"), "utf8")).packageManager || "";
    const m = /^yarn@([0-9]+\.[0-9A-Za-z.-]*)/.exec(pm);
    if (m) {
      // A `yarnPath` release missing from the checkout: the cached one runs instead.
      let rc = ""; try { rc = fs.readFileSync(p.join(d, ".yarnrc.yml"), "utf8"); } catch (e) {}
      const yp = /^yarnPath:\s*["\x27]?([^"\x27\n]+)/m.exec(rc);
      const gone = yp && !fs.existsSync(p.resolve(d, yp[1].trim()));
      process.stdout.write(m[1] + (gone ? " ignore-path" : "")); break;
    }
  } catch (e) {}
  const up = p.dirname(d); if (up === d) break; d = up;
}' 2>/dev/null)
case "$v" in *" ignore-path") v=${v% ignore-path}; export YARN_IGNORE_PATH=1 ;; esac
berry="$tools/@yarnpkg_cli-dist@$v/node_modules/@yarnpkg/cli-dist/bin/yarn.js"
if [ -n "$v" ] && [ -f "$berry" ]; then exec node "$berry" "$@"; fi
unset YARN_IGNORE_PATH
exec "$tools/yarn@1/node_modules/.bin/yarn" "$@"
"#;

/// `<tools>/bin/pnpm`: runs the pnpm release that the nearest `package.json`
/// pins (`packageManager: pnpm@X`) when the tool cache holds it, else the
/// newest cached release, saying so on stderr when a pin is not honoured.
const PNPM_LAUNCHER: &str = r#"#!/bin/sh
# Written by dandori (tool cache launcher): the pnpm release that the nearest
# package.json pins when dandori's tool cache holds it, else the newest one.
tools=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
v=$(node -e 'const fs = require("fs"), p = require("path"); let d = process.cwd();
for (;;) {
  try {
    const pm = JSON.parse(fs.readFileSync(p.join(d, "package.json"), "utf8")).packageManager || "";
    const m = /^pnpm@([0-9][0-9A-Za-z.-]*)/.exec(pm);
    if (m) { process.stdout.write(m[1]); break; }
  } catch (e) {}
  const up = p.dirname(d); if (up === d) break; d = up;
}' 2>/dev/null)
exe="$tools/pnpm@$v/node_modules/.bin/pnpm"
if [ -n "$v" ] && [ -x "$exe" ]; then exec "$exe" "$@"; fi
newest=$(ls -d "$tools"/pnpm@*/node_modules/.bin/pnpm 2>/dev/null | sort -V | tail -n 1)
if [ -z "$newest" ]; then
  echo "dandori: no pnpm in dandori's tool cache $tools" >&2
  exit 127
fi
if [ -n "$v" ]; then
  echo "dandori: pnpm $v (pinned by package.json) is not in dandori's tool cache; running $newest" >&2
fi
exec "$newest" "$@"
"#;

/// The launcher of `tool` (pnpm, yarn) as `<tools>/bin/<tool>` when the cache
/// holds dandori's releases of it (a cache from before the launchers has a
/// link to one release).
fn write_launcher_of(tool: &str, dir: &Path) -> Result<(), EnvError> {
    let (text, ours) = match tool {
        "pnpm" => (PNPM_LAUNCHER, true),
        "yarn" => (
            YARN_LAUNCHER,
            dir.join("yarn@1/node_modules/.bin/yarn").exists(),
        ),
        _ => return Ok(()),
    };
    let launcher = dir.join("bin").join(tool);
    let current = dandori_fs::read_to_string(&launcher).ok();
    if ours && current.as_deref() != Some(text) {
        write_launcher(dir, tool, text)?;
    }
    Ok(())
}

/// Writes `text` as the executable `<tools>/bin/<tool>` (replacing a link).
fn write_launcher(dir: &Path, tool: &str, text: &str) -> Result<PathBuf, EnvError> {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    dandori_fs::create_dir_all(&bin)?;
    let dest = bin.join(tool);
    if dest.is_symlink() {
        dandori_fs::remove_file(&dest)?;
    }
    dandori_fs::write_atomic(&dest, text.as_bytes())?;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).map_err(|e| {
        EnvError::Record {
            path: dest.display().to_string(),
            message: format!("making the {tool} launcher executable: {e}"),
        }
    })?;
    Ok(dest)
}

/// `package` from npm into `<tools>/<prefix>` unless `exe_rel` is already
/// there, without install scripts; the installed `exe_rel`, or why not.
fn npm_install(
    dir: &Path,
    prefix: &str,
    tool: &str,
    package: &str,
    exe_rel: &str,
    io: &Installer<'_>,
) -> Result<PathBuf, String> {
    let prefix = dir.join(prefix);
    let exe = prefix.join(exe_rel);
    if exe.exists() {
        return Ok(exe);
    }
    if !on_path("npm", io.env) {
        return Err("npm is not on PATH".into());
    }
    (io.progress)(&format!(
        "{tool} not found: installing {package} once from npm into dandori's tool cache {}",
        dir.display()
    ));
    dandori_fs::create_dir_all(&prefix).map_err(|e| e.to_string())?;
    let argv: Vec<String> = [
        "npm",
        "install",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--prefix",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([prefix.display().to_string(), package.to_string()])
    .collect();
    io.run(&argv, &prefix)?;
    if exe.exists() {
        Ok(exe)
    } else {
        Err(format!(
            "`{}` installed no {}",
            argv.join(" "),
            exe.display()
        ))
    }
}
