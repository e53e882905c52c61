//! dandori's own tool cache: package managers the generated commands prefer
//! (uv for Python, yarn classic and pnpm for Node) are installed here once,
//! from PyPI and npm, when they are not on `PATH`. Nothing global is touched:
//! the cache is a directory of dandori's, its `bin` goes last on the `PATH` of
//! setup, verification, `dandori env exec` and the runner's commands.
//!
//! Where: `$DANDORI_TOOLS_DIR`, else `$XDG_CACHE_HOME/dandori/tools`, else
//! `$HOME/.cache/dandori/tools`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_exec::{CommandSpec, run_command};

use crate::EnvError;
use crate::analyzer::{Ecosystem, NODE, PYTHON};

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

/// `policy` with the tool cache (when it exists) readable: a command that
/// names a bootstrapped tool inside a shell line (`sh -c "yarn test"`, `cd web
/// && pnpm list`) finds it on `PATH` inside the sandbox too.
pub fn with_tools_readable(
    policy: dandori_exec::SandboxPolicy,
    env: &BTreeMap<String, String>,
) -> dandori_exec::SandboxPolicy {
    match tools_dir(env).filter(|d| d.is_dir()) {
        Some(d) => policy.readable(d),
        None => policy,
    }
}

/// `<tools>/bin`, where the bootstrapped programs are linked.
pub fn bin_dir(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    tools_dir(env).map(|d| d.join("bin"))
}

/// `env` with the tool cache's `bin` (when it exists) last on `PATH`, so a tool
/// the user installed always wins.
pub fn with_tools_on_path(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let mut env = env.clone();
    if let Some(bin) = bin_dir(&env).filter(|b| b.is_dir()) {
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

/// The package manager [`ensure_for`] installs for an ecosystem when it is
/// missing: uv for Python, yarn or pnpm for the Node projects that use them.
pub fn bootstrap_tool(eco: &Ecosystem) -> Option<&'static str> {
    match (eco.name.as_str(), eco.package_manager.as_str()) {
        (PYTHON, _) => Some("uv"),
        (NODE, "yarn") => Some("yarn"),
        (NODE, "pnpm") => Some("pnpm"),
        _ => None,
    }
}

/// Whether the bootstrap may install tools (`DANDORI_TOOLS_BOOTSTRAP`).
pub fn bootstrap_enabled(env: &BTreeMap<String, String>) -> bool {
    !matches!(
        var(env, TOOLS_BOOTSTRAP_VAR).map(|v| v.trim().to_ascii_lowercase()),
        Some(v) if v == "0" || v == "false" || v == "no"
    )
}

/// One bootstrapped tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bootstrapped {
    pub tool: String,
    pub path: PathBuf,
}

/// Installs the package manager the ecosystem's commands prefer when it is
/// missing: uv for Python, yarn 1 (which also runs a repository's own
/// `yarnPath` release) or the pinned pnpm for Node. Returns what was installed;
/// `Ok(None)` when nothing was needed. `progress` gets a line saying so.
///
/// With a `sandbox`, every install runs in it like a setup command (seed 002
/// §11.2): network on, writes only to the tool cache and the package caches
/// under `HOME` (`~/.npm`, `~/.cache`), nothing else of the user's.
pub fn ensure_for(
    eco: &Ecosystem,
    env: &BTreeMap<String, String>,
    sandbox: Option<&dandori_exec::Sandbox>,
    progress: &dyn Fn(&str),
) -> Result<Option<Bootstrapped>, EnvError> {
    if !bootstrap_enabled(env) {
        return Ok(None);
    }
    let env = with_tools_on_path(env);
    let io = Installer {
        env: &env,
        sandbox,
        progress,
    };
    if let (Some(version), Some(dir)) = (berry_version(eco), tools_dir(&env)) {
        // Without corepack (or when it cannot fetch), the launcher of
        // `<tools>/bin/yarn` runs this release for the projects that pin it.
        let package = format!("{BERRY_PACKAGE}@{version}");
        let prefix = package.replace('/', "_");
        let mut installed = npm_install(&dir, &prefix, "yarn", &package, BERRY_ENTRY, &io)?;
        if installed.is_none() {
            // Not every release reached npm (4.10.0 did not): the latest patch of
            // the same minor, for this pin.
            let nearest = format!("{BERRY_PACKAGE}@~{version}");
            installed = npm_install(&dir, &prefix, "yarn", &nearest, BERRY_ENTRY, &io)?;
        }
        if installed.is_some() {
            write_yarn_launcher(&dir)?;
        }
    }
    let (tool, package) = match (eco.name.as_str(), eco.package_manager.as_str()) {
        (PYTHON, _) => ("uv", "uv".to_string()),
        (NODE, "yarn") => ("yarn", "yarn@1".to_string()),
        (NODE, "pnpm") => (
            "pnpm",
            format!(
                "pnpm@{}",
                eco.package_manager_version.as_deref().unwrap_or("latest")
            ),
        ),
        _ => return Ok(None),
    };
    let Some(dir) = tools_dir(&env) else {
        return Ok(None);
    };
    // The cache's own yarn launcher needs the cache's yarn 1 behind it.
    let cached = |t: &str| {
        let path = env.get("PATH").map(String::as_str).unwrap_or("");
        dandori_exec::run::find_program(t, path, Path::new("/"))
            .is_some_and(|p| p.starts_with(dir.join("bin")))
    };
    if on_path(tool, &env) && !(tool == "yarn" && cached(tool)) {
        return Ok(None);
    }
    let installed = if tool == "uv" {
        install_from_pypi(&dir, tool, &package, &io)?
    } else {
        install_from_npm(&dir, tool, &package, &io)?
    };
    Ok(installed.map(|path| Bootstrapped {
        tool: tool.to_string(),
        path,
    }))
}

/// What an install needs: the environment, the sandbox to run in, the
/// progress line.
struct Installer<'a> {
    env: &'a BTreeMap<String, String>,
    sandbox: Option<&'a dandori_exec::Sandbox>,
    progress: &'a dyn Fn(&str),
}

impl Installer<'_> {
    /// Runs `argv` in `cwd` (a directory of the tool cache), in the sandbox when
    /// there is one, with the tool cache `dir` as its only writable place besides
    /// the package caches.
    fn run(&self, argv: &[String], cwd: &Path, dir: &Path) -> Result<(), String> {
        let Some((program, args)) = argv.split_first() else {
            return Err("empty command".into());
        };
        let mut spec = CommandSpec::program(program.clone(), args.iter().cloned(), cwd)
            .env(self.env.clone())
            .timeout(INSTALL_TIMEOUT);
        if let Some(s) = self.sandbox {
            let policy = dandori_exec::SandboxPolicy::environment_setup(dir, self.env);
            crate::setup::create_tool_caches([program.as_str()], &policy, self.env);
            spec = spec.sandbox(s.clone(), policy, dandori_exec::Origin::Issued);
        }
        match run_command(&spec) {
            Ok(o) if o.success() => Ok(()),
            Ok(o) => Err(format!(
                "`{}` exited with {:?}: {}",
                argv.join(" "),
                o.exit_code,
                o.stderr_tail.trim()
            )),
            Err(e) => Err(format!("`{}`: {e}", argv.join(" "))),
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

fn bootstrap_failed(tool: &str, message: String, progress: &dyn Fn(&str)) {
    progress(&format!(
        "could not bootstrap {tool} into dandori's tool cache ({message}); continuing without it"
    ));
}

/// uv from PyPI into `<tools>/uv` (a virtual environment of its own).
fn install_from_pypi(
    dir: &Path,
    tool: &str,
    package: &str,
    io: &Installer<'_>,
) -> Result<Option<PathBuf>, EnvError> {
    let (env, progress) = (io.env, io.progress);
    let venv = dir.join(tool);
    let exe = venv.join("bin").join(tool);
    if !exe.exists() {
        let python = ["python3", "python"]
            .into_iter()
            .find(|p| on_path(p, env))
            .unwrap_or("python3");
        progress(&format!(
            "{tool} not found: installing it once from PyPI into dandori's tool cache {}",
            dir.display()
        ));
        dandori_fs::create_dir_all(dir)?;
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
                package.to_string(),
            ],
        ];
        for s in &steps {
            if let Err(m) = io.run(s, dir, dir) {
                bootstrap_failed(tool, m, progress);
                return Ok(None);
            }
        }
    }
    let linked = link(&exe, &dir.join("bin"), tool)?;
    Ok(Some(linked))
}

/// The npm package of yarn ≥ 2 releases (one bundled JavaScript file).
const BERRY_PACKAGE: &str = "@yarnpkg/cli-dist";
/// The release's entry point inside its install prefix.
const BERRY_ENTRY: &str = "node_modules/@yarnpkg/cli-dist/bin/yarn.js";

/// The yarn ≥ 2 release a project pins (`packageManager: yarn@4.5.1`), when its
/// version is a plain release number.
fn berry_version(eco: &Ecosystem) -> Option<&str> {
    let v = eco.package_manager_version.as_deref()?;
    let major: u32 = v.split('.').next()?.parse().ok()?;
    let plain = v
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-');
    (eco.name == NODE && eco.package_manager == "yarn" && major >= 2 && plain).then_some(v)
}

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

/// Writes the yarn launcher as `<tools>/bin/yarn` (replacing a link to yarn 1).
fn write_yarn_launcher(dir: &Path) -> Result<PathBuf, EnvError> {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join("bin");
    dandori_fs::create_dir_all(&bin)?;
    let dest = bin.join("yarn");
    if dest.is_symlink() {
        dandori_fs::remove_file(&dest)?;
    }
    dandori_fs::write_atomic(&dest, YARN_LAUNCHER.as_bytes())?;
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755)).map_err(|e| {
        EnvError::Record {
            path: dest.display().to_string(),
            message: format!("making the yarn launcher executable: {e}"),
        }
    })?;
    Ok(dest)
}

/// yarn / pnpm from npm into `<tools>/<package@version>` (no corepack, no
/// global npm prefix), linked into `<tools>/bin` (yarn through the launcher).
fn install_from_npm(
    dir: &Path,
    tool: &str,
    package: &str,
    io: &Installer<'_>,
) -> Result<Option<PathBuf>, EnvError> {
    let exe_rel = format!("node_modules/.bin/{tool}");
    let prefix = package.replace('/', "_");
    let Some(exe) = npm_install(dir, &prefix, tool, package, &exe_rel, io)? else {
        return Ok(None);
    };
    if tool == "yarn" {
        return write_yarn_launcher(dir).map(Some);
    }
    let linked = link(&exe, &dir.join("bin"), tool)?;
    Ok(Some(linked))
}

/// `package` from npm into `<tools>/<prefix>` unless `exe_rel` is already
/// there; the installed `exe_rel`, or `None` when npm is missing or the install
/// failed (said through `progress`).
fn npm_install(
    dir: &Path,
    prefix: &str,
    tool: &str,
    package: &str,
    exe_rel: &str,
    io: &Installer<'_>,
) -> Result<Option<PathBuf>, EnvError> {
    let (env, progress) = (io.env, io.progress);
    let prefix = dir.join(prefix);
    let exe = prefix.join(exe_rel);
    if !exe.exists() {
        if !on_path("npm", env) {
            return Ok(None);
        }
        progress(&format!(
            "{tool} not found: installing {package} once from npm into dandori's tool cache {}",
            dir.display()
        ));
        dandori_fs::create_dir_all(&prefix)?;
        let argv: Vec<String> = [
            "npm",
            "install",
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--prefix",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([prefix.display().to_string(), package.to_string()])
        .collect();
        if let Err(m) = io.run(&argv, &prefix, dir) {
            bootstrap_failed(tool, m, progress);
            return Ok(None);
        }
    }
    Ok(Some(exe))
}
