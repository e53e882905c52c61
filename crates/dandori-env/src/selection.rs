//! Environment selection (seed 002 §4.2) and the default setup and verification
//! commands of each environment (§4.3, §5.3).

use std::collections::{BTreeMap, BTreeSet};

use dandori_plan::SelectedEnvironment;
use serde_json::json;

use crate::analyzer::{
    self, DENO, DOTNET, DependencyKind, Ecosystem, EnvironmentAnalysis, GO, JAVA, MINIFORGE, NODE,
    PHP, PYTHON, RUBY, RUST,
};

/// Where the Python virtual environment goes, relative to the ecosystem directory.
pub const VENV_DIR: &str = ".venv";
/// Where the conda environment goes (a prefix, so no `conda activate` is needed).
pub const CONDA_PREFIX_DIR: &str = ".conda-env";
/// Key in `SelectedEnvironment.extra` listing verification commands whose failure
/// only makes the result `partial_success` (§5.5.3).
pub const OPTIONAL_VERIFICATION_KEY: &str = "optional_verification_commands";

/// Key in `SelectedEnvironment.extra`: setup command → the commands that
/// replace it when it fails (the editable-install fallback chain).
pub const FALLBACK_KEY: &str = "fallback_commands";

/// Key in `SelectedEnvironment.extra`: the environment's own manifests that do
/// not parse (`file:line:column: reason`); setup fails on them.
pub const MANIFEST_ERRORS_KEY: &str = "manifest_errors";

/// Preference order when nothing else decides (rule 3 of §4.2.2, then §4.2.3).
const ORDER: &[&str] = &[PYTHON, NODE, JAVA, GO, RUST, RUBY, PHP, DOTNET, DENO];

/// Tools looked for on `PATH`.
const TOOLS: &[&str] = &[
    "uv",
    "python3",
    "python",
    "conda",
    "mamba",
    "micromamba",
    "poetry",
    "pdm",
    "pipenv",
    "node",
    "npm",
    "npx",
    "corepack",
    "pnpm",
    "yarn",
    "bun",
    "mvn",
    "gradle",
    "java",
    "go",
    "cargo",
    "rustc",
];

/// Which tools are installed, so that generated commands use what exists (uv
/// rather than pip when available, corepack for pinned package managers).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Toolchain {
    available: BTreeSet<String>,
}

impl Toolchain {
    /// Looks the known tools up on `path` (a `PATH` value).
    pub fn discover(path: &str) -> Self {
        let cwd = std::path::Path::new("/");
        Toolchain {
            available: TOOLS
                .iter()
                .filter(|t| dandori_exec::run::find_program(t, path, cwd).is_some())
                .map(|t| t.to_string())
                .collect(),
        }
    }

    /// [`Toolchain::discover`] on this process's `PATH`.
    pub fn from_process() -> Self {
        Self::discover(&std::env::var("PATH").unwrap_or_default())
    }

    /// Exactly these tools (tests, dry runs).
    pub fn with(tools: &[&str]) -> Self {
        Toolchain {
            available: tools.iter().map(|t| t.to_string()).collect(),
        }
    }

    /// This toolchain and `tool`.
    pub fn and(mut self, tool: &str) -> Self {
        self.available.insert(tool.to_string());
        self
    }

    pub fn has(&self, tool: &str) -> bool {
        self.available.contains(tool)
    }
}

fn language(eco: &str) -> &str {
    if eco == MINIFORGE { PYTHON } else { eco }
}

/// Maps a task's target language to an environment language.
pub fn normalize_language(lang: &str) -> Option<&'static str> {
    Some(match lang.trim().to_ascii_lowercase().as_str() {
        "python" | "py" | "python3" => PYTHON,
        "miniforge" | "conda" => PYTHON,
        "node" | "nodejs" | "node.js" | "javascript" | "js" | "typescript" | "ts" => NODE,
        "java" | "kotlin" | "scala" | "groovy" => JAVA,
        "go" | "golang" => GO,
        "rust" | "rs" => RUST,
        "ruby" | "rb" => RUBY,
        "php" => PHP,
        "dotnet" | ".net" | "csharp" | "c#" | "cs" | "fsharp" | "f#" => DOTNET,
        "deno" => DENO,
        _ => return None,
    })
}

/// The chosen ecosystem and why.
#[derive(Debug, Clone)]
pub struct Choice<'a> {
    pub ecosystem: Option<&'a Ecosystem>,
    pub name: String,
    pub reason: String,
}

/// Picks the primary environment (§4.2.2 / §4.2.3).
pub fn choose<'a>(analysis: &'a EnvironmentAnalysis, target_language: Option<&str>) -> Choice<'a> {
    let langs: BTreeSet<&str> = analysis
        .ecosystems
        .iter()
        .map(|e| language(&e.name))
        .collect();
    let pick = |lang: &str| -> Option<&'a Ecosystem> {
        let mut cands: Vec<&Ecosystem> = analysis
            .ecosystems
            .iter()
            .filter(|e| language(&e.name) == lang)
            .collect();
        // Shallowest first; a conda environment file wins over plain Python at
        // the same depth (§4.2.1: environment.yml → miniforge).
        cands.sort_by_key(|e| {
            (
                if e.dir == "." {
                    0
                } else {
                    1 + e.dir.matches('/').count()
                },
                usize::from(e.name != MINIFORGE),
                e.dir.clone(),
            )
        });
        cands.first().copied()
    };
    let all: Vec<&str> = langs.iter().copied().collect();
    let others = |chosen: &str| {
        let o: Vec<&str> = all.iter().copied().filter(|l| *l != chosen).collect();
        if o.is_empty() {
            String::new()
        } else {
            format!("; also detected: {}", o.join(", "))
        }
    };
    let describe = |e: &Ecosystem| {
        // The root's own files first, then members', shallowest first.
        let mut files: Vec<&str> = e
            .files
            .iter()
            .filter(|f| !f.ends_with(".lock") || e.files.len() < 4)
            .map(String::as_str)
            .collect();
        files.sort_by_key(|f| (f.matches('/').count(), *f));
        files.truncate(3);
        files.join(", ")
    };

    // 1. The task's target language.
    // A plugin's environment type (`elixir`) is a language of its own.
    let target = target_language.and_then(|t| {
        normalize_language(t).or_else(|| {
            analysis
                .ecosystems
                .iter()
                .find(|e| e.name == t.trim())
                .map(|e| language(&e.name))
        })
    });
    if let Some(t) = target
        && let Some(e) = pick(t)
    {
        return Choice {
            ecosystem: Some(e),
            name: e.name.clone(),
            reason: format!("the task targets {t}; {} found{}", describe(e), others(t)),
        };
    }
    if langs.len() == 1
        && let Some(e) = pick(all[0])
    {
        return Choice {
            ecosystem: Some(e),
            name: e.name.clone(),
            reason: format!("{} found: a {} project", describe(e), e.name),
        };
    }
    // 2. The language with the most dependencies.
    if !langs.is_empty() {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for e in &analysis.ecosystems {
            *counts.entry(language(&e.name)).or_default() += e.dependencies.len();
        }
        let max = counts.values().copied().max().unwrap_or(0);
        let top: Vec<&str> = counts
            .iter()
            .filter(|(_, c)| **c == max)
            .map(|(l, _)| *l)
            .collect();
        if max > 0
            && top.len() == 1
            && let Some(e) = pick(top[0])
        {
            let summary: Vec<String> = counts.iter().map(|(l, c)| format!("{l} {c}")).collect();
            return Choice {
                ecosystem: Some(e),
                name: e.name.clone(),
                reason: format!(
                    "mixed repository; {} has the most dependencies ({}){}",
                    top[0],
                    summary.join(", "),
                    others(top[0])
                ),
            };
        }
        // 3. Build configuration files, then the fixed order.
        let with_build: Vec<&str> = ORDER
            .iter()
            .copied()
            .filter(|l| {
                analysis.ecosystems.iter().any(|e| {
                    language(&e.name) == *l && e.has_build_file && (max == 0 || top.contains(l))
                })
            })
            .collect();
        let lang = with_build
            .first()
            .copied()
            .or_else(|| ORDER.iter().copied().find(|l| langs.contains(l)))
            .or_else(|| langs.iter().next().copied());
        if let Some(e) = lang.and_then(pick) {
            return Choice {
                ecosystem: Some(e),
                name: e.name.clone(),
                reason: format!(
                    "mixed repository with no dependency majority; {} has a build configuration file ({}){}",
                    e.name,
                    describe(e),
                    others(language(&e.name))
                ),
            };
        }
    }
    // §4.2.3: nothing detected. Source files hint at the language.
    let by_source = analysis
        .source_files
        .iter()
        .max_by_key(|(_, n)| **n)
        .and_then(|(ext, _)| match ext.as_str() {
            "py" => Some(PYTHON),
            "js" | "ts" => Some(NODE),
            "java" | "kt" => Some(JAVA),
            "go" => Some(GO),
            "rs" => Some(RUST),
            "rb" => Some(RUBY),
            "php" => Some(PHP),
            "cs" => Some(DOTNET),
            _ => None,
        });
    match by_source {
        Some(l) if l != PYTHON => Choice {
            ecosystem: None,
            name: l.to_string(),
            reason: format!("no environment files; most source files are {l}"),
        },
        _ => Choice {
            ecosystem: None,
            name: PYTHON.to_string(),
            reason: "no environment files detected; python is the default".to_string(),
        },
    }
}

/// `select_environment` with the tools found on this process's `PATH`.
pub fn select_environment(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
) -> SelectedEnvironment {
    select_environment_with(analysis, target_language, &Toolchain::from_process())
}

/// Picks the primary environment and generates its setup and verification
/// commands with expected results, for the tools in `tools`.
pub fn select_environment_with(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
    tools: &Toolchain,
) -> SelectedEnvironment {
    let choice = choose(analysis, target_language);
    let fallback;
    let eco = match choice.ecosystem {
        Some(e) => e,
        None => {
            fallback = analyzer_default(&choice.name);
            &fallback
        }
    };
    // Nothing to prepare: no environment file and no source file of the
    // default language (a README-only directory gets no `.venv`).
    let nothing = choice.ecosystem.is_none()
        && choice.name == PYTHON
        && !analysis.source_files.contains_key("py");
    let cmds = if nothing {
        Commands::default()
    } else {
        commands_for(eco, tools)
    };
    let reason = if nothing {
        "no environment files and no source files: nothing to prepare".to_string()
    } else {
        choice.reason
    };
    let mut detected: Vec<String> = eco.files.clone();
    detected.extend(
        analysis
            .detected_files
            .iter()
            .filter(|f| f.ecosystem == analyzer::COMMON)
            .map(|f| f.path.clone()),
    );
    let mut extra = serde_json::Map::new();
    extra.insert("root".into(), json!(eco.dir));
    extra.insert("package_manager".into(), json!(eco.package_manager));
    if let Some(p) = &eco.plugin {
        extra.insert(crate::plugins::PLUGIN_KEY.into(), json!(p.path));
        if !p.registries.is_empty() {
            extra.insert(crate::network::REGISTRIES_KEY.into(), json!(p.registries));
        }
    }
    if let Some(v) = &eco.runtime_version {
        extra.insert("runtime_version".into(), json!(v.value));
    }
    if let Some(t) = &eco.test_command {
        extra.insert("test_command".into(), json!(cd_prefix(&eco.dir, t)));
    }
    extra.insert(OPTIONAL_VERIFICATION_KEY.into(), json!(cmds.optional));
    if !cmds.fallbacks.is_empty() {
        extra.insert(FALLBACK_KEY.into(), json!(cmds.fallbacks));
    }
    if !eco.manifest_errors.is_empty() {
        extra.insert(MANIFEST_ERRORS_KEY.into(), json!(eco.manifest_errors));
    }
    if let Some((lock, file)) = &cmds.lock_constraints {
        extra.insert(
            crate::lockfile::LOCK_CONSTRAINTS_KEY.into(),
            json!({"lock": lock, "file": file}),
        );
    }
    let others: Vec<serde_json::Value> = analysis
        .ecosystems
        .iter()
        .filter(|e| !(e.name == eco.name && e.dir == eco.dir))
        .map(|e| json!({"name": e.name, "root": e.dir, "package_manager": e.package_manager}))
        .collect();
    if !others.is_empty() {
        extra.insert("other_environments".into(), json!(others));
    }
    SelectedEnvironment {
        name: choice.name,
        reason,
        detected_files: detected,
        setup_commands: cmds.setup,
        verification_commands: cmds.verification,
        expected_results: cmds.expected,
        extra,
    }
}

fn analyzer_default(name: &str) -> Ecosystem {
    let mut e = Ecosystem::new(name, ".");
    e.package_manager = match name {
        PYTHON => "pip",
        NODE => "npm",
        JAVA => "maven",
        GO => "go",
        RUST => "cargo",
        RUBY => "bundler",
        PHP => "composer",
        DOTNET => "dotnet",
        DENO => "deno",
        _ => "",
    }
    .to_string();
    e
}

/// Generated commands of one environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Commands {
    pub setup: Vec<String>,
    /// Setup command → the commands that replace it when it fails (the
    /// fallback rung, seed 002 §9.2.2 without a model).
    pub fallbacks: BTreeMap<String, Vec<String>>,
    pub verification: Vec<String>,
    pub optional: Vec<String>,
    pub expected: BTreeMap<String, String>,
    /// `(lock, constraints file)`, relative to the environment's root: setup
    /// writes the file from the lock before a command that names it runs.
    pub lock_constraints: Option<(String, String)>,
}

impl Commands {
    fn verify(&mut self, cmd: String, expected: Option<String>, required: bool) {
        if let Some(x) = expected {
            self.expected.insert(cmd.clone(), x);
        }
        if !required {
            self.optional.push(cmd.clone());
        }
        self.verification.push(cmd);
    }
}

fn q(s: &str) -> String {
    shell_words::quote(s).into_owned()
}

/// Double quotes for inline code (reads like the seed's examples) when safe.
fn dq(s: &str) -> String {
    if s.contains(['"', '$', '`', '\\']) {
        q(s)
    } else {
        format!("\"{s}\"")
    }
}

fn cd_prefix(dir: &str, cmd: &str) -> String {
    if dir == "." || dir.is_empty() {
        cmd.to_string()
    } else {
        format!("cd {} && {cmd}", q(dir))
    }
}

/// `3.11`, `3.11.5`, `v20.1.0`, `20` → a regex for the version line, when exact.
fn version_pattern(prefix: &str, v: &str, parts: usize) -> Option<String> {
    let v = v.trim().trim_start_matches(['v', '=']);
    if v.is_empty() || !v.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    let nums: Vec<&str> = v.split('.').filter(|s| !s.is_empty()).take(parts).collect();
    Some(format!("{prefix}{}", nums.join(r"\.")))
}

/// A regex matching a version line whose `major.minor` is at least `v`'s
/// (`rust-version = "1.68"` accepts `rustc 1.95.0`).
fn at_least_pattern(prefix: &str, v: &str, parts: usize) -> Option<String> {
    let v = v.trim().trim_start_matches(['v', '=', '>']).trim();
    // Java's `1.8` is release 8.
    let v = if parts == 1 {
        v.strip_prefix("1.").unwrap_or(v)
    } else {
        v
    };
    let mut it = v.split('.');
    let major: u64 = it.next()?.parse().ok()?;
    if parts == 1 {
        return Some(format!(r"{prefix}{}\b", at_least_int(major)));
    }
    let minor: u64 = it.next().unwrap_or("0").parse().ok()?;
    Some(format!(
        r"{prefix}(?:{major}\.{}\b|{}\.)",
        at_least_int(minor),
        at_least_int(major + 1)
    ))
}

/// A regex for a decimal integer ≥ `n` (no leading zeros).
fn at_least_int(n: u64) -> String {
    let d: Vec<u32> = n
        .to_string()
        .chars()
        .filter_map(|c| c.to_digit(10))
        .collect();
    let mut alts = vec![format!(r"[1-9]\d{{{},}}", d.len())];
    for i in 0..d.len() {
        if d[i] < 9 {
            let prefix: String = d[..i].iter().map(u32::to_string).collect();
            let rest = d.len() - i - 1;
            alts.push(format!(
                r"{prefix}[{}-9]{}",
                d[i] + 1,
                if rest > 0 {
                    format!(r"\d{{{rest}}}")
                } else {
                    String::new()
                }
            ));
        }
    }
    alts.push(n.to_string());
    format!("(?:{})", alts.join("|"))
}

/// The version check of a runtime: exact pins (`.python-version`, `.nvmrc`,
/// `rust-toolchain(.toml)` with a number, go.mod `toolchain`, `.java-version`)
/// must match; minimums (`rust-version`, the go directive, Maven/Gradle release
/// levels) accept any later version.
fn runtime_pattern(e: &Ecosystem, prefix: &str, parts: usize) -> Option<String> {
    let v = e.runtime_version.as_ref()?;
    let src = file_name_of(&v.source);
    let minimum = match e.name.as_str() {
        RUST => src == "Cargo.toml",
        // The go directive is a minimum; so is `toolchain` for a newer local Go.
        GO => true,
        JAVA => src != ".java-version" && src != ".sdkmanrc",
        // `engines.node` is a range npm only warns about; `.nvmrc` and
        // `volta.node` are pins.
        NODE => src.ends_with("engines.node"),
        _ => false,
    };
    if minimum {
        at_least_pattern(prefix, &v.value, parts)
    } else {
        version_pattern(prefix, &v.value, parts)
    }
}

fn file_name_of(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The setup and verification commands of one ecosystem, from whoever
/// detected it: a plugin's generated code, else the built-in commands.
pub fn commands_for(e: &Ecosystem, tools: &Toolchain) -> Commands {
    crate::plugins::generate(e, tools)
}

/// The built-in ecosystems' commands (`generate_setup_code` of
/// [`crate::plugins::Builtin`]).
pub fn builtin_commands(e: &Ecosystem, tools: &Toolchain) -> Commands {
    let mut c = Commands::default();
    let at = |cmd: String| cd_prefix(&e.dir, &cmd);
    match e.name.as_str() {
        PYTHON => python_commands(e, tools, &mut c, &at),
        MINIFORGE => conda_commands(e, tools, &mut c, &at),
        NODE => node_commands(e, tools, &mut c, &at),
        JAVA => java_commands(e, &mut c, &at),
        GO => {
            c.setup.push(at("go mod download".into()));
            let pat = runtime_pattern(e, "go", 2).unwrap_or_else(|| r"go1\.".to_string());
            c.verify("go version".into(), Some(pat), true);
            c.verify(at("go build -n ./...".into()), None, true);
            c.verify(at("go list -m all".into()), None, false);
        }
        RUBY => {
            // Gems go to vendor/bundle of the project, not the user's gem home.
            c.setup
                .push(at("bundle config set --local path vendor/bundle".into()));
            c.setup.push(at("bundle install".into()));
            let pat = runtime_pattern(e, "ruby ", 2).unwrap_or_else(|| "ruby ".to_string());
            c.verify("ruby --version".into(), Some(pat), true);
            c.verify(at("bundle check".into()), None, true);
        }
        PHP => {
            c.setup
                .push(at("composer install --no-interaction --no-progress".into()));
            c.verify("php --version".into(), Some("^PHP ".into()), true);
            c.verify(
                at("composer validate --no-check-publish".into()),
                None,
                false,
            );
        }
        DOTNET => {
            c.setup.push(at("dotnet restore".into()));
            let pat = runtime_pattern(e, "^", 2).unwrap_or_else(|| r"^\d+\.".to_string());
            c.verify("dotnet --version".into(), Some(pat), true);
            c.verify(at("dotnet build --no-restore".into()), None, false);
        }
        DENO => {
            // Deno 2: the `imports` of deno.json (and a package.json) into the
            // project's cache, honouring deno.lock.
            c.setup.push(at("deno install".into()));
            c.verify("deno --version".into(), Some("^deno ".into()), true);
        }
        RUST => {
            c.setup.push(at("cargo fetch".into()));
            c.setup.push(at("cargo build".into()));
            c.verify("cargo --version".into(), Some(r"^cargo 1\.".into()), true);
            let pat = runtime_pattern(e, "rustc ", 2).unwrap_or_else(|| "rustc ".to_string());
            c.verify("rustc --version".into(), Some(pat), true);
            c.verify(at("cargo test --no-run".into()), None, false);
        }
        _ => {}
    }
    c
}

fn rel_in(e: &Ecosystem, f: &str) -> String {
    if e.dir == "." {
        f.to_string()
    } else {
        f.strip_prefix(&format!("{}/", e.dir))
            .unwrap_or(f)
            .to_string()
    }
}

fn python_commands(
    e: &Ecosystem,
    tools: &Toolchain,
    c: &mut Commands,
    at: &dyn Fn(String) -> String,
) {
    let uv = tools.has("uv");
    let py_bin = format!("{VENV_DIR}/bin/python");
    let has = |n: &str| e.has_file(n);
    // The lock the project's tool wrote: its versions are what gets installed.
    let lock = crate::lockfile::PYTHON_LOCKS
        .iter()
        .copied()
        .find(|l| has(l) && (*l != "poetry.lock" || e.package_manager != "uv"));
    let mut tool_line: Option<String> = None;
    match e.package_manager.as_str() {
        "uv" if uv && has("uv.lock") => {
            // `uv sync --frozen` installs exactly the lock (and the `dev` group);
            // test groups and test extras are asked for by name (only those the
            // project declares).
            let mut line = "uv sync --frozen".to_string();
            for g in test_groups(e, false) {
                line.push_str(&format!(" --group {}", q(&g)));
            }
            for x in test_groups(e, true) {
                line.push_str(&format!(" --extra {}", q(&x)));
            }
            tool_line = Some(at(line));
        }
        "poetry" if tools.has("poetry") => {
            tool_line = Some(at(
                "POETRY_VIRTUALENVS_IN_PROJECT=true poetry install".into()
            ));
        }
        "pdm" if tools.has("pdm") => {
            tool_line = Some(at("pdm install".into()));
        }
        "pipenv" if tools.has("pipenv") => {
            tool_line = Some(at("PIPENV_VENV_IN_PROJECT=1 pipenv install --dev".into()));
        }
        _ => {}
    }
    // Without the project's tool (or when it fails): a virtual environment and
    // the declared requirements, with the lock's versions as constraints.
    let mut generic = Commands::default();
    let constraints = lock.map(|l| {
        generic.lock_constraints = Some((l.to_string(), crate::lockfile::CONSTRAINTS_FILE.into()));
        crate::lockfile::CONSTRAINTS_FILE
    });
    pip_commands(e, tools, constraints, &mut generic, at);
    match tool_line {
        Some(line) => {
            c.setup.push(line.clone());
            // uv's own sync failing (a Python it cannot find, a lock it cannot
            // read): the locked versions through `uv pip` are the next rung.
            if e.package_manager == "uv" {
                c.fallbacks.insert(line, generic.setup);
                c.fallbacks.extend(generic.fallbacks);
                c.lock_constraints = generic.lock_constraints;
            }
        }
        None => {
            c.setup = generic.setup;
            c.fallbacks = generic.fallbacks;
            c.lock_constraints = generic.lock_constraints;
        }
    }
    let pat = e
        .runtime_version
        .as_ref()
        .and_then(|v| version_pattern(r"Python ", &v.value, 2))
        .unwrap_or_else(|| r"Python 3\.".to_string());
    c.verify(at(format!("{py_bin} --version")), Some(pat), true);
    if let Some(pkg) = &e.package_name {
        c.verify(
            at(format!(
                "{py_bin} -c {}",
                dq(&format!("import {pkg}; print('OK')"))
            )),
            Some("OK".into()),
            true,
        );
    }
    // Installed, not importable by a guessed name: a distribution's import name
    // often differs (`py-cpuinfo` → `cpuinfo`, stub-only `types-*` have none).
    for d in installed_runtime_dependencies(e).take(3) {
        // uv (bootstrapped for every Python environment) made the virtual
        // environment without pip: `uv pip` checks it. Without uv, `python -m
        // venv` made it, with pip.
        let show = if uv {
            format!("uv pip show --python {py_bin} {}", d.name)
        } else {
            format!("{py_bin} -m pip show {}", d.name)
        };
        c.verify(at(show), Some("Name: ".into()), false);
    }
    if e.dependencies
        .iter()
        .any(|d| d.name.eq_ignore_ascii_case("pytest"))
    {
        c.verify(
            at(format!("{py_bin} -m pytest --version")),
            Some("pytest".into()),
            true,
        );
    }
    if uv {
        // The exit code is the check: `uv pip list` prints nothing at all for an
        // environment without packages (a project with no dependencies).
        c.verify(at(format!("uv pip list --python {py_bin}")), None, false);
    } else {
        c.verify(
            at(format!("{py_bin} -m pip list")),
            Some("(?i)package".into()),
            false,
        );
    }
}

/// The virtual environment and `pip`/`uv pip` installs of a Python project
/// without its own tool: requirement files, the project editable with its test
/// extras and groups, the fallback rungs; `constraints` (a file written from
/// the lock) limits every install to the locked versions.
fn pip_commands(
    e: &Ecosystem,
    tools: &Toolchain,
    constraints: Option<&str>,
    c: &mut Commands,
    at: &dyn Fn(String) -> String,
) {
    let uv = tools.has("uv");
    let py_bin = format!("{VENV_DIR}/bin/python");
    let has = |n: &str| e.has_file(n);
    let project = has("pyproject.toml") || has("setup.py") || has("setup.cfg");
    let pin = e
        .runtime_version
        .as_ref()
        .filter(|v| v.value.chars().all(|ch| ch.is_ascii_digit() || ch == '.'))
        .map(|v| format!(" --python {}", v.value))
        .unwrap_or_default();
    if uv {
        c.setup
            .push(at(format!("uv venv {VENV_DIR} --allow-existing{pin}")));
    } else {
        let py = if tools.has("python3") {
            "python3"
        } else {
            "python"
        };
        c.setup.push(at(format!("{py} -m venv {VENV_DIR}")));
    }
    let mut args: Vec<String> = Vec::new();
    let req_files = requirement_files(
        e.files
            .iter()
            .filter(|f| f.ends_with(".txt") && !f.ends_with("runtime.txt"))
            .filter(|f| analyzer_dir_of(f, e))
            .map(|f| rel_in(e, f))
            .collect(),
    );
    for f in &req_files {
        // A constraints file limits versions; it does not ask for packages.
        let constraints = file_name_of(f).contains("constraint");
        args.push(if constraints { "-c" } else { "-r" }.into());
        args.push(q(f));
    }
    if let Some(f) = constraints {
        args.push("-c".into());
        args.push(q(f));
    }
    let dev = explicit_dev_requirements(e, &[]);
    if project {
        let extras = test_groups(e, true);
        let target = if extras.is_empty() {
            ".".to_string()
        } else {
            format!(".[{}]", extras.join(","))
        };
        let installer = if uv {
            format!("uv pip install --python {py_bin}")
        } else {
            format!("{py_bin} -m pip install")
        };
        let mut editable = args.clone();
        editable.push("-e".into());
        editable.push(q(&target));
        // PEP 735 groups by name when the installer knows `--group` (pip ≥ 25.1,
        // uv): it resolves `include-group` and environment markers itself. An
        // older installer refuses the option: the explicit list is the next rung.
        let groups: Vec<String> = e
            .dependency_groups
            .iter()
            .filter(|g| is_test_group(g))
            .cloned()
            .collect();
        let grouped = (!groups.is_empty()).then(|| {
            let mut with_groups = editable.clone();
            for g in &groups {
                with_groups.push("--group".into());
                with_groups.push(q(g));
            }
            with_groups.extend(explicit_dev_requirements(e, &groups));
            at(format!("{installer} {}", with_groups.join(" ")))
        });
        editable.extend(dev.iter().cloned());
        let line = at(format!("{installer} {}", editable.join(" ")));
        // §9.2.2 without a model: when the editable install fails (flat layout,
        // broken build backend), install the declared dependencies without the
        // project and make the project importable from its directory.
        let mut plain = args.clone();
        plain.extend(dependencies_without_project(e));
        plain.extend(dev.iter().cloned());
        let mut rung = Vec::new();
        if !plain.is_empty() {
            rung.push(at(format!("{installer} {}", plain.join(" "))));
        }
        rung.push(at(importable_from_source(&py_bin)));
        c.fallbacks.insert(line.clone(), rung);
        match grouped {
            Some(first) => {
                c.fallbacks.insert(first.clone(), vec![line]);
                c.setup.push(first);
            }
            None => c.setup.push(line),
        }
        args.clear();
    } else if has("Pipfile") {
        // No pipenv here: install what the Pipfile declares.
        for d in &e.dependencies {
            let spec = d
                .version_spec
                .as_deref()
                .filter(|s| !s.starts_with("git") && !s.starts_with("path"));
            args.push(q(&format!("{}{}", d.name, spec.unwrap_or(""))));
        }
    }
    if !project && !has("Pipfile") {
        args.extend(dev);
    }
    // Constraints alone ask for nothing: no install line then.
    let asks = args
        .iter()
        .enumerate()
        .any(|(i, a)| a != "-c" && (i == 0 || args[i - 1] != "-c"));
    if asks {
        let line = if uv {
            format!("uv pip install --python {py_bin} {}", args.join(" "))
        } else {
            format!("{py_bin} -m pip install {}", args.join(" "))
        };
        c.setup.push(at(line));
    }
}

/// The runtime dependencies that the setup commands install: declared by the
/// project's own manifest or by a requirements file of its directory (or its
/// `requirements/`), not those of a benchmark or docs folder; names that are
/// safe as a shell word.
fn installed_runtime_dependencies(e: &Ecosystem) -> impl Iterator<Item = &analyzer::Dependency> {
    e.prod_dependencies().filter(move |d| {
        let installed = if d.source.ends_with(".txt") {
            analyzer_dir_of(&d.source, e)
        } else {
            !rel_in(e, &d.source).contains('/')
        };
        // Behind an environment marker: maybe not for this Python.
        installed
            && d.marker.is_none()
            && !d.name.is_empty()
            && d.name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.'))
    })
}

/// A dependency group or extra that the tests need (`test`, `tests`,
/// `testing`, `dev`, `unit-tests`, …), not docs, lint or typing.
fn is_test_group(g: &str) -> bool {
    let n = g.to_ascii_lowercase();
    n.contains("test") || matches!(n.as_str(), "dev" | "develop" | "development")
}

/// Test-like `[project.optional-dependencies]` extras (`extras`) or PEP 735
/// `[dependency-groups]` (`!extras`) that the project declares.
fn test_groups(e: &Ecosystem, extras: bool) -> Vec<String> {
    let set: BTreeSet<String> = e
        .dependencies
        .iter()
        .filter(|d| d.kind == DependencyKind::Dev && d.optional == extras)
        .filter(|d| !d.source.ends_with(".txt"))
        .filter_map(|d| d.group.clone())
        .filter(|g| is_test_group(g))
        .collect();
    if !extras && e.package_manager == "poetry" {
        // Poetry groups are not PEP 735 groups: `uv sync --group` does not know them.
        return Vec::new();
    }
    set.into_iter().collect()
}

/// The test and development requirements no installer reads on its own when the
/// project's tool (uv, poetry, pdm) is absent: `tests_require`, PEP 735
/// dependency groups, poetry's dev dependencies and groups, pdm and uv dev
/// dependencies, Pipfile dev packages. PEP 508 strings, quoted for the shell.
fn explicit_dev_requirements(e: &Ecosystem, named_groups: &[String]) -> Vec<String> {
    let own = e
        .package_name
        .as_deref()
        .map(|n| n.to_ascii_lowercase().replace('_', "-"));
    let mut seen = BTreeSet::new();
    let mut reqs = e
        .dependencies
        .iter()
        .filter(|d| d.kind == DependencyKind::Dev && !d.optional)
        .filter(|d| !d.source.ends_with(".txt"))
        .filter(|d| d.group.as_deref().is_none_or(is_test_group))
        // Groups asked for with `--group` (PEP 735, this directory's pyproject.toml).
        .filter(|d| {
            !(d.group.as_ref().is_some_and(|g| named_groups.contains(g))
                && !rel_in(e, &d.source).contains('/')
                && d.source.ends_with("pyproject.toml"))
        })
        .filter(|d| own.as_deref() != Some(d.name.to_ascii_lowercase().replace('_', "-").as_str()))
        .collect::<Vec<_>>()
        .pipe_requirements(&mut seen);
    // The tests run with pytest (configured, or test files) but nothing
    // declares it: install it too.
    let pytest_declared = e
        .dependencies
        .iter()
        .any(|d| d.name.eq_ignore_ascii_case("pytest"));
    if !pytest_declared
        && e.test_command
            .as_deref()
            .is_some_and(|t| t.contains("pytest"))
    {
        reqs.push("pytest".to_string());
    }
    reqs
}

/// What the project itself would have installed: its runtime dependencies and
/// its test extras, as PEP 508 strings quoted for the shell.
fn dependencies_without_project(e: &Ecosystem) -> Vec<String> {
    let mut seen = BTreeSet::new();
    e.dependencies
        .iter()
        .filter(|d| !d.source.ends_with(".txt"))
        .filter(|d| {
            (d.kind == DependencyKind::Prod && !d.optional)
                || (d.optional && d.group.as_deref().is_some_and(is_test_group))
        })
        .collect::<Vec<_>>()
        .pipe_requirements(&mut seen)
}

trait Requirements {
    fn pipe_requirements(self, seen: &mut BTreeSet<String>) -> Vec<String>;
}

impl Requirements for Vec<&analyzer::Dependency> {
    /// PEP 508 strings quoted for the shell, one per package: a package declared
    /// twice with different constraints (usually behind environment markers,
    /// which the analysis does not keep) is asked for by name only.
    fn pipe_requirements(self, seen: &mut BTreeSet<String>) -> Vec<String> {
        let key = |n: &str| n.to_ascii_lowercase().replace('_', "-");
        let mut specs: BTreeMap<String, BTreeSet<Option<String>>> = BTreeMap::new();
        for d in &self {
            specs
                .entry(key(&d.name))
                .or_default()
                .insert(d.version_spec.clone());
        }
        self.into_iter()
            .filter_map(|d| {
                if specs.get(&key(&d.name)).is_some_and(|s| s.len() > 1) {
                    // Still skip git and path sources.
                    pep508(d).map(|_| d.name.clone())
                } else {
                    pep508(d)
                }
            })
            .filter(|r| seen.insert(r.clone()))
            .map(|r| q(&r))
            .collect()
    }
}

/// One dependency as a PEP 508 requirement; poetry constraints (`^1.2`,
/// `~1.2`, `1.2.3`) are translated, git and path sources skipped.
fn pep508(d: &analyzer::Dependency) -> Option<String> {
    let req = pep508_without_marker(d)?;
    Some(match d.marker.as_deref() {
        Some(m) => format!("{req}; {m}"),
        None => req,
    })
}

fn pep508_without_marker(d: &analyzer::Dependency) -> Option<String> {
    let Some(spec) = d.version_spec.as_deref().map(str::trim) else {
        return Some(d.name.clone());
    };
    if spec.starts_with("git") || spec.starts_with("path") || spec.contains('@') {
        return None;
    }
    if spec.is_empty() || spec == "*" || spec.contains("||") {
        return Some(d.name.clone());
    }
    let nums = |v: &str| -> Option<Vec<u64>> {
        v.trim()
            .split('.')
            .map(|p| p.trim_end_matches('*').parse::<u64>().ok())
            .collect()
    };
    let translated = if let Some(v) = spec.strip_prefix('^') {
        let n = nums(v)?;
        let upper = match n.iter().position(|x| *x != 0) {
            Some(i) => {
                let mut u: Vec<u64> = n[..=i].to_vec();
                u[i] += 1;
                u
            }
            None => {
                let mut u = n.clone();
                if let Some(last) = u.last_mut() {
                    *last += 1;
                }
                u
            }
        };
        let up: Vec<String> = upper.iter().map(u64::to_string).collect();
        format!(">={},<{}", v.trim(), up.join("."))
    } else if let Some(v) = spec.strip_prefix('~').filter(|v| !v.starts_with('=')) {
        let n = nums(v)?;
        let upper = if n.len() >= 2 {
            format!("{}.{}", n[0], n[1] + 1)
        } else {
            format!("{}", n.first()? + 1)
        };
        format!(">={},<{upper}", v.trim())
    } else if spec.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        format!("=={spec}")
    } else {
        spec.replace(' ', "")
    };
    Some(format!("{}{translated}", d.name))
}

/// The last rung of the editable-install fallback: a `.pth` file in the
/// environment's site-packages that puts the project directory (and `src/` when
/// the project uses that layout) on `sys.path`.
fn importable_from_source(py_bin: &str) -> String {
    let code = "import os, sysconfig; d = os.getcwd(); s = os.path.join(d, 'src'); paths = [d] + ([s] if os.path.isdir(s) else []); open(os.path.join(sysconfig.get_paths()['purelib'], '_dandori_project.pth'), 'w').write(chr(10).join(paths) + chr(10)); print('OK')";
    format!("{py_bin} -c {}", dq(code))
}

/// The requirement files a test run needs: all of this directory's but those
/// whose names give them to another job of the project's matrix (docs, build,
/// typing, lint, release) or to its oldest-version run (`tests-min.txt`), whose
/// pins conflict with the others'. The base `requirements.txt` first.
fn requirement_files(mut files: Vec<String>) -> Vec<String> {
    const OTHER_JOBS: &[&str] = &[
        "doc",
        "docs",
        "build",
        "typing",
        "mypy",
        "lint",
        "linting",
        "style",
        "release",
        "publish",
        "min",
        "minimum",
        "lowest",
        "oldest",
        "bench",
        "benchmark",
        "precommit",
        "upload",
        "deploy",
    ];
    let other_job = |f: &String| {
        let name = file_name_of(f)
            .trim_end_matches(".txt")
            .to_ascii_lowercase();
        name.split(['-', '_', '.']).any(|w| OTHER_JOBS.contains(&w))
    };
    files.sort_by_key(|f| (f != "requirements.txt", f.clone()));
    let chosen: Vec<String> = files.iter().filter(|f| !other_job(f)).cloned().collect();
    if chosen.is_empty() { files } else { chosen }
}

fn analyzer_dir_of(f: &str, e: &Ecosystem) -> bool {
    // Only requirement files of this directory (or its `requirements/`), not members.
    // `requirements/3.3/…` (a folder per old Python version) is not.
    let rest = rel_in(e, f);
    match rest.split_once('/') {
        None => true,
        Some((dir, file)) => dir == "requirements" && !file.contains('/'),
    }
}

fn conda_commands(
    e: &Ecosystem,
    tools: &Toolchain,
    c: &mut Commands,
    at: &dyn Fn(String) -> String,
) {
    let file = e
        .files
        .iter()
        .map(|f| rel_in(e, f))
        .find(|f| f.starts_with("environment.") || f.starts_with("condaenv."))
        .unwrap_or_else(|| "environment.yml".to_string());
    let tool = ["mamba", "conda", "micromamba"]
        .into_iter()
        .find(|t| tools.has(t))
        .unwrap_or("conda");
    if tool == "micromamba" {
        c.setup.push(at(format!(
            "micromamba create -y -f {} -p {CONDA_PREFIX_DIR}",
            q(&file)
        )));
    } else {
        c.setup.push(at(format!(
            "{tool} env create -f {} -p {CONDA_PREFIX_DIR}",
            q(&file)
        )));
    }
    let py = format!("{CONDA_PREFIX_DIR}/bin/python");
    let pat = e
        .runtime_version
        .as_ref()
        .and_then(|v| version_pattern("Python ", &v.value, 2))
        .unwrap_or_else(|| r"Python 3\.".to_string());
    c.verify(at(format!("{py} --version")), Some(pat), true);
    c.verify(
        at(format!("{tool} list -p {CONDA_PREFIX_DIR}")),
        None,
        false,
    );
    for d in e.prod_dependencies().filter(|d| d.group.is_none()).take(3) {
        let m = analyzer::import_name(&d.name);
        c.verify(
            at(format!(
                "{py} -c {}",
                dq(&format!("import {m}; print('OK')"))
            )),
            Some("OK".into()),
            false,
        );
    }
}

fn node_commands(
    e: &Ecosystem,
    tools: &Toolchain,
    c: &mut Commands,
    at: &dyn Fn(String) -> String,
) {
    let lock = |names: &[&str]| names.iter().any(|n| e.has_file(n));
    let pinned = e.package_manager_version.as_deref();
    let corepack = tools.has("corepack");
    let berry = e.package_manager_flavor.as_deref() == Some("berry");
    // yarn classic and pnpm run as installed (dandori bootstraps them into its
    // tool cache when missing, at the pinned version); yarn berry goes through
    // corepack, with the installed yarn (which runs the repository's `yarnPath`
    // release) as the fallback when corepack cannot fetch it.
    let runner = |pm: &str| -> (String, Option<String>) {
        let direct = tools.has(pm).then(|| pm.to_string());
        let via_corepack =
            corepack.then(|| format!("COREPACK_ENABLE_DOWNLOAD_PROMPT=0 corepack {pm}"));
        let classic = pm == "yarn" && !berry;
        let npx = if pm == "yarn" && berry {
            // The `yarn` package on npm is yarn 1; later releases are published as
            // `@yarnpkg/cli-dist`.
            format!(
                "npx --yes -p @yarnpkg/cli-dist@{} yarn",
                pinned.unwrap_or("latest")
            )
        } else {
            format!(
                "npx --yes {pm}@{}",
                pinned.unwrap_or(if classic { "1" } else { "latest" })
            )
        };
        if pm == "yarn" && berry {
            // The installed yarn first (dandori's tool-cache launcher runs the
            // pinned release; yarn 1 runs a checked-in `yarnPath` release and
            // refuses a `packageManager` pin it cannot honour); corepack, which
            // downloads the release from repo.yarnpkg.com, next.
            match (direct, via_corepack) {
                (Some(d), c) => (d, c),
                (None, Some(c)) => (c, None),
                (None, None) => (npx, None),
            }
        } else {
            match (direct, via_corepack) {
                (Some(d), _) => (d, None),
                (None, Some(c)) => (c, Some(npx)),
                (None, None) => (npx, None),
            }
        }
    };
    let mut alt: Option<String> = None;
    let mut alt_run: Option<String> = None;
    let (install, list, run) = match e.package_manager.as_str() {
        "pnpm" => {
            let (r, a) = runner("pnpm");
            alt = a;
            let frozen = if lock(&["pnpm-lock.yaml"]) {
                " --frozen-lockfile"
            } else {
                ""
            };
            alt_run = alt.as_ref().map(|a| format!("{a} run"));
            alt = alt.map(|a| format!("{a} install{frozen}"));
            (
                format!("{r} install{frozen}"),
                format!("{r} list --depth 0"),
                format!("{r} run"),
            )
        }
        "yarn" => {
            let (r, a) = runner("yarn");
            // Without a lock file yarn ≥ 2 must be told it may write one: under
            // `CI=true` it defaults to immutable installs and refuses.
            let frozen = match (lock(&["yarn.lock"]), berry) {
                (false, true) => " --no-immutable",
                (false, false) => "",
                (true, true) => " --immutable",
                (true, false) => " --frozen-lockfile",
            };
            alt_run = a.as_ref().map(|a| format!("{a} run"));
            // The check runs the yarn that `env exec -- yarn …` runs: the installed
            // one when corepack is only preferred for the install (corepack may not
            // reach its download host while the installed yarn works).
            let check = if tools.has("yarn") {
                "yarn --version".to_string()
            } else {
                format!("{r} --version")
            };
            alt = a.map(|a| format!("{a} install{frozen}"));
            (format!("{r} install{frozen}"), check, format!("{r} run"))
        }
        "bun" => {
            let frozen = if lock(&["bun.lockb", "bun.lock"]) {
                " --frozen-lockfile"
            } else {
                ""
            };
            (
                format!("bun install{frozen}"),
                "bun --version".to_string(),
                "bun run".to_string(),
            )
        }
        _ => {
            let install = if lock(&["package-lock.json", "npm-shrinkwrap.json"]) {
                "npm ci --no-audit --no-fund"
            } else {
                "npm install --no-audit --no-fund"
            };
            (
                install.to_string(),
                "npm ls --depth=0".to_string(),
                "npm run".to_string(),
            )
        }
    };
    // yarn 1 refuses to install when a dependency's `engines` excludes this node
    // (a release tool that wants a newer node), where npm only warns: the last
    // rung ignores engines.
    let last = alt.clone().unwrap_or_else(|| install.clone());
    if let Some(a) = alt {
        c.fallbacks.insert(at(install.clone()), vec![at(a)]);
    }
    if e.package_manager == "yarn" && !berry {
        c.fallbacks.insert(
            at(last.clone()),
            vec![at(format!("{last} --ignore-engines"))],
        );
    }
    c.setup.push(at(install));
    if e.needs_build {
        // The package's own entry points come from its build script and are not
        // in the checkout: tests that import the package by name need them.
        let build = at(format!("{run} build"));
        if let Some(a) = alt_run {
            c.fallbacks
                .insert(build.clone(), vec![at(format!("{a} build"))]);
        }
        c.setup.push(build);
    }
    let pat = runtime_pattern(e, "^v", 1).unwrap_or_else(|| r"^v\d+\.".to_string());
    // `engines.node` is advisory (npm installs and runs on an older node with a
    // warning): an older node is a partial success, not a failed environment.
    let advisory = e
        .runtime_version
        .as_ref()
        .is_some_and(|v| v.source.ends_with("engines.node"));
    c.verify("node --version".into(), Some(pat), !advisory);
    c.verify(at(list), None, true);
    // A dependency of the project's own manifest or of a workspace member: a
    // nested `package.json` of a folder that is not a workspace (scripts,
    // benchmarks, a docs website) is not installed.
    let root_manifest = e.rel("package.json");
    let workspaces = e.workspaces || e.has_file("pnpm-workspace.yaml");
    if let Some(pkg) = e
        .prod_dependencies()
        .find(|d| d.source == root_manifest || workspaces)
    {
        let check = format!(
            "require('fs').accessSync('node_modules/{}/package.json'); console.log('OK')",
            pkg.name
        );
        c.verify(
            at(format!("node -e {}", dq(&check))),
            Some("OK".into()),
            false,
        );
    }
}

fn java_commands(e: &Ecosystem, c: &mut Commands, at: &dyn Fn(String) -> String) {
    let wrapper = e.package_manager_flavor.as_deref() == Some("wrapper");
    if e.package_manager == "maven" {
        let mvn = if wrapper { "./mvnw" } else { "mvn" };
        c.setup.push(at(format!("{mvn} -B -q -DskipTests install")));
        c.verify(
            at(format!("{mvn} --version")),
            Some("Apache Maven".into()),
            true,
        );
        c.verify(at(format!("{mvn} -B -q dependency:tree")), None, false);
    } else {
        let gradle = if wrapper { "./gradlew" } else { "gradle" };
        c.setup
            .push(at(format!("{gradle} build -x test --console=plain")));
        c.verify(
            at(format!("{gradle} --version")),
            Some("Gradle".into()),
            true,
        );
    }
    let pat = runtime_pattern(e, r#"version "(1\.)?"#, 1).unwrap_or_else(|| "version".to_string());
    c.verify("java -version".into(), Some(pat), true);
}
