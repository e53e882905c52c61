//! Running commands inside the prepared environment, like `uv run` or `poetry
//! run`: the virtual environment's `bin`, the conda prefix's `bin` and
//! `node_modules/.bin` go first on `PATH`, `VIRTUAL_ENV` / `CONDA_PREFIX` are set,
//! and the variables recorded at setup time are added.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use dandori_exec::{CommandSpec, run_command};

use crate::EnvError;
use crate::analyzer::join_rel;
use crate::reuse;
use crate::selection::{CONDA_PREFIX_DIR, VENV_DIR};

/// rustup's switch for installing missing toolchains on first use.
pub const RUSTUP_AUTO_INSTALL: &str = "RUSTUP_AUTO_INSTALL";

/// pnpm's switch (pnpm ≤ 10 reads the `npm_config_` name, later ones the
/// `pnpm_config_` one) for downloading and running the pinned pnpm release.
pub const PNPM_SELF_SWITCH: [&str; 2] = [
    "npm_config_manage_package_manager_versions",
    "pnpm_config_manage_package_manager_versions",
];

/// `bin` directories of the prepared environment rooted at `root` (relative to
/// `repo`) that exist, most specific first.
pub fn bin_dirs(repo: &Path, root: &str) -> Vec<PathBuf> {
    bin_dirs_of(repo, &[root])
}

/// `bin` directories of the environments rooted at `roots` (in that order,
/// then the repository root), those that exist, each once.
pub fn bin_dirs_of(repo: &Path, roots: &[&str]) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for r in roots.iter().copied().chain(["."]) {
        for sub in [
            format!("{VENV_DIR}/bin"),
            format!("{CONDA_PREFIX_DIR}/bin"),
            "node_modules/.bin".to_string(),
            // Composer's `bin` of the installed packages (phpunit, …).
            "vendor/bin".to_string(),
        ] {
            let d = repo.join(join_rel(r, &sub));
            if d.is_dir() && !dirs.contains(&d) {
                dirs.push(d);
            }
        }
    }
    dirs
}

/// The environment of commands run in the environment rooted at `root`:
/// `base`, then `variables`, `VIRTUAL_ENV` / `CONDA_PREFIX`, and the `bin`
/// directories first on `PATH`.
pub fn environment(
    repo: &Path,
    root: &str,
    variables: &BTreeMap<String, String>,
    base: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    environment_of(repo, &[root], variables, base)
}

/// [`environment`] for several prepared environments (seed 002 §12.2): the
/// `bin` directories of `roots` in their order (the primary environment's
/// first), then the repository root's, then `base`'s `PATH`; `VIRTUAL_ENV` /
/// `CONDA_PREFIX` of the first that has one; `NODE_PATH` of every root's
/// `node_modules`.
pub fn environment_of(
    repo: &Path,
    roots: &[&str],
    variables: &BTreeMap<String, String>,
    base: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = base.clone();
    env.extend(variables.clone());
    let dirs = bin_dirs_of(repo, roots);
    for d in &dirs {
        let parent = d.parent().map(Path::to_path_buf).unwrap_or_default();
        if d.ends_with(format!("{VENV_DIR}/bin")) && !env.contains_key("VIRTUAL_ENV") {
            env.insert("VIRTUAL_ENV".into(), parent.display().to_string());
        } else if d.ends_with(format!("{CONDA_PREFIX_DIR}/bin"))
            && !env.contains_key("CONDA_PREFIX")
        {
            env.insert("CONDA_PREFIX".into(), parent.display().to_string());
        }
    }
    env.remove("PYTHONHOME");
    // Setup, verification and `env exec` never install or update toolchains
    // behind the user's back: a `rust-toolchain.toml` naming a channel or a
    // component that is not installed fails instead of upgrading the machine's
    // rustup toolchains (set RUSTUP_AUTO_INSTALL=1 to allow it).
    let auto = std::env::var(RUSTUP_AUTO_INSTALL).unwrap_or_else(|_| "0".to_string());
    env.entry(RUSTUP_AUTO_INSTALL.to_string()).or_insert(auto);
    // Nor does pnpm fetch the release a `packageManager` field pins into the
    // user's data directory (`~/.local/share/pnpm/.tools`) and switch to it: the
    // installed pnpm runs (a different version only warns), and a missing pnpm
    // is bootstrapped at the pinned version into dandori's tool cache.
    for k in PNPM_SELF_SWITCH {
        if std::env::var_os(k).is_none() {
            env.entry(k.to_string()).or_insert_with(|| "false".into());
        }
    }
    let mut path: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
    if let Some(p) = base.get("PATH") {
        for s in p.split(':') {
            if !s.is_empty() && !path.iter().any(|x| x == s) {
                path.push(s.to_string());
            }
        }
    }
    env.insert("PATH".into(), path.join(":"));
    // The runner's steps work in pool worktrees, which have no `node_modules` of
    // their own: Node's CommonJS resolution falls back to `NODE_PATH`, so the
    // packages installed in the repository resolve from every worktree.
    let mut node_path: Vec<String> = Vec::new();
    for r in roots.iter().copied().chain(["."]) {
        let d = repo.join(join_rel(r, "node_modules"));
        let d = d.display().to_string();
        if repo.join(join_rel(r, "node_modules")).is_dir() && !node_path.contains(&d) {
            node_path.push(d);
        }
    }
    if !node_path.is_empty() {
        if let Some(p) = env.get("NODE_PATH").filter(|p| !p.is_empty()) {
            node_path.push(p.clone());
        }
        env.insert("NODE_PATH".into(), node_path.join(":"));
    }
    // Package managers dandori bootstrapped (uv, yarn, pnpm) come last.
    crate::tools::with_tools_on_path(&env)
}

/// The environment for commands in `repo`, on top of this process's base
/// environment (`dandori_exec::run::base_env`).
pub fn env_for(repo: &Path) -> BTreeMap<String, String> {
    env_for_with(repo, &dandori_exec::run::base_env())
}

/// The environment for commands in `repo` (as recorded by the last setup), on
/// top of `base`.
pub fn env_for_with(repo: &Path, base: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let repo = dandori_fs::canonicalize(repo).unwrap_or_else(|_| repo.to_path_buf());
    // The primary environment and the others of the last setup (seed 002
    // §12.2), in the setup's order; the primary's variables win.
    let states = reuse::load_all(&repo);
    let roots: Vec<&str> = states.iter().map(|s| s.root.as_str()).collect();
    let mut variables = BTreeMap::new();
    for s in states.iter().rev() {
        variables.extend(s.variables.clone());
    }
    environment_of(&repo, &roots, &variables, base)
}

/// Runs `argv` in `repo` inside the prepared environment with the terminal's
/// stdout/stderr; returns its exit code (`None` when killed by a signal).
pub fn exec(
    repo: &Path,
    argv: &[String],
    base: &BTreeMap<String, String>,
    sandbox: Option<(dandori_exec::Sandbox, dandori_exec::SandboxPolicy)>,
) -> Result<Option<i32>, EnvError> {
    let Some((program, args)) = argv.split_first() else {
        return Err(EnvError::Record {
            path: repo.display().to_string(),
            message: "no command given".into(),
        });
    };
    let mut spec = CommandSpec::program(program.clone(), args.iter().cloned(), repo)
        .env(env_for_with(repo, base))
        .inherit_output();
    if let Some((sandbox, policy)) = sandbox {
        spec = spec.sandbox(sandbox, policy, dandori_exec::Origin::User);
    }
    Ok(run_command(&spec)?.exit_code)
}
