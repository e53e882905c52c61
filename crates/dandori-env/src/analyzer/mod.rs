//! EnvironmentAnalyzer (seed 002 §3): finds the environment files of a repository
//! (depth ≤ `max_search_depth`, files ≤ `max_file_size`), groups them into
//! ecosystems (python, miniforge, node, java, go, rust), and extracts package
//! managers, runtime versions and dependencies (§3.3).
//!
//! `analyze` walks the tree itself; `analyze_paths` takes a list of relative paths
//! (the planner's own scan) and only reads the environment files named in it.

mod go;
pub mod info;
mod java;
mod node;
mod other;
mod python;
mod rust;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use dandori_config::AnalysisConfig;
use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

pub const PYTHON: &str = "python";
pub const MINIFORGE: &str = "miniforge";
pub const NODE: &str = "node";
pub const JAVA: &str = "java";
pub const GO: &str = "go";
pub const RUST: &str = "rust";
pub const RUBY: &str = "ruby";
pub const PHP: &str = "php";
pub const DOTNET: &str = "dotnet";
pub const DENO: &str = "deno";
/// Files of §3.2.5 that belong to no single ecosystem.
pub const COMMON: &str = "common";

/// Directories never searched: dependencies, build output, prepared environments.
const SKIP_DIRS: &[&str] = &[
    ".git",
    ".hg",
    ".svn",
    "node_modules",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    "target",
    ".dandori",
    ".conda-env",
    ".gradle",
    ".idea",
    ".vscode",
    "vendor",
    "bower_components",
    ".yarn",
    ".next",
    ".cache",
];

/// What a detected file is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    /// Declares dependencies (requirements.txt, package.json, pom.xml, …).
    Manifest,
    /// Pins resolved versions (package-lock.json, poetry.lock, go.sum, …).
    Lock,
    /// Pins the runtime version (.python-version, .nvmrc, rust-toolchain, …).
    Version,
    /// Tool configuration or wrapper (.yarnrc.yml, mvnw, settings.gradle, …).
    Config,
    /// Dockerfile, Makefile, README.md, …
    Common,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DetectedFile {
    /// Relative to the repository, `/`-separated.
    pub path: String,
    pub ecosystem: String,
    pub kind: FileKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyKind {
    /// Needed at run time (production).
    Prod,
    /// Development and test only.
    Dev,
    /// Build time only (build-dependencies, provided, annotation processors).
    Build,
    /// Peer dependencies (node).
    Peer,
}

/// One declared dependency (§3.3.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub name: String,
    /// The version requirement as written (`>=2,<3`, `^1.2.0`, `v1.9.0`); `None` when absent.
    pub version_spec: Option<String>,
    pub kind: DependencyKind,
    /// Optional extras, optionalDependencies, `optional = true`, Maven `<optional>`.
    pub optional: bool,
    /// The extra or group name (`[project.optional-dependencies] docs`, `indirect`, `pip`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The file that declares it.
    pub source: String,
    /// The PEP 508 environment marker it is installed under (`python_version <
    /// "3.8"`; poetry's `python` / `markers` translated): not installed everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marker: Option<String>,
}

/// A required runtime version and where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuntimeVersion {
    pub value: String,
    pub source: String,
}

/// One ecosystem rooted in one directory (nested roots of the same ecosystem,
/// such as workspace members, are merged into the outermost one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ecosystem {
    /// python | miniforge | node | java | go | rust
    pub name: String,
    /// Relative directory, `.` for the repository root.
    pub dir: String,
    /// Its environment files, relative to the repository.
    pub files: Vec<String>,
    /// pip | uv | poetry | pdm | pipenv | conda | npm | yarn | pnpm | bun | maven | gradle | go | cargo
    pub package_manager: String,
    /// Pinned version (`packageManager: pnpm@9.1.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_manager_version: Option<String>,
    /// yarn: classic | berry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_manager_flavor: Option<String>,
    /// Why this package manager.
    pub package_manager_reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtime_version: Option<RuntimeVersion>,
    pub dependencies: Vec<Dependency>,
    /// A build configuration (pyproject.toml/setup.py, pom.xml, build.gradle, go.mod,
    /// Cargo.toml, a package.json `build` script): rule 3 of §4.2.2.
    pub has_build_file: bool,
    /// Python import name, node package name, Go module path, crate name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_name: Option<String>,
    /// How to run its tests, when that can be told.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_command: Option<String>,
    /// Directories of nested roots merged into this one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<String>,
    /// PEP 735 `[dependency-groups]` declared by the `pyproject.toml` of `dir`
    /// itself (what `pip install --group` / `uv sync --group` can name there).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependency_groups: Vec<String>,
    /// Node: the package's own entry points (`main`, `module`, `exports`) are all
    /// missing from the checkout and a `build` script exists: setup builds it,
    /// since tests that import the package by name need them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub needs_build: bool,
    /// The ecosystem's own manifest (`pyproject.toml`, `package.json` of `dir`)
    /// does not parse: `file:line:column: reason`. Setup fails on it rather
    /// than install something other than what the project declares.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub manifest_errors: Vec<String>,
    /// Node: the root manifest declares `workspaces` (or a `pnpm-workspace.yaml`
    /// exists), so the members' dependencies are installed with the root's.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub workspaces: bool,
    /// Detected by an ecosystem plugin (seed 002 §13.2) rather than built in:
    /// the plugin and the setup code it generated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin: Option<crate::plugins::PluginEcosystem>,
}

impl Ecosystem {
    pub fn new(name: &str, dir: &str) -> Self {
        Ecosystem {
            name: name.to_string(),
            dir: dir.to_string(),
            files: Vec::new(),
            package_manager: String::new(),
            package_manager_version: None,
            package_manager_flavor: None,
            package_manager_reason: String::new(),
            runtime_version: None,
            dependencies: Vec::new(),
            has_build_file: false,
            package_name: None,
            test_command: None,
            members: Vec::new(),
            dependency_groups: Vec::new(),
            needs_build: false,
            manifest_errors: Vec::new(),
            workspaces: false,
            plugin: None,
        }
    }

    /// Path of `name` inside this ecosystem's directory, relative to the repository.
    pub fn rel(&self, name: &str) -> String {
        join_rel(&self.dir, name)
    }

    pub fn has_file(&self, name: &str) -> bool {
        let p = self.rel(name);
        self.files.contains(&p)
    }

    /// Dependencies that are neither dev nor optional.
    pub fn prod_dependencies(&self) -> impl Iterator<Item = &Dependency> {
        self.dependencies
            .iter()
            .filter(|d| d.kind == DependencyKind::Prod && !d.optional)
    }
}

/// A file that could not be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AnalysisWarning {
    pub path: String,
    pub message: String,
}

/// The result of the analysis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentAnalysis {
    pub ecosystems: Vec<Ecosystem>,
    pub detected_files: Vec<DetectedFile>,
    /// Source files per language (`py`, `js`, `ts`, `java`, `go`, `rs`, …), a hint
    /// when no manifest exists.
    pub source_files: BTreeMap<String, usize>,
    pub files_scanned: usize,
    pub warnings: Vec<AnalysisWarning>,
}

impl EnvironmentAnalysis {
    pub fn ecosystem(&self, name: &str) -> Option<&Ecosystem> {
        self.ecosystems.iter().find(|e| e.name == name)
    }

    /// Ecosystem names found, sorted, without duplicates.
    pub fn ecosystem_names(&self) -> Vec<String> {
        self.ecosystems
            .iter()
            .map(|e| e.name.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect()
    }
}

pub(crate) fn join_rel(dir: &str, name: &str) -> String {
    if dir == "." || dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

fn parent_dir(path: &str) -> &str {
    match path.rfind('/') {
        Some(i) => &path[..i],
        None => ".",
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The built-in detection rules: file name → (ecosystem, kind).
fn classify(path: &str) -> Option<(&'static str, FileKind)> {
    use FileKind::*;
    let name = file_name(path);
    let parent = file_name(parent_dir(path));
    let r = match name {
        "pyproject.toml" | "setup.py" | "setup.cfg" | "Pipfile" => (PYTHON, Manifest),
        "Pipfile.lock" | "poetry.lock" | "uv.lock" | "pdm.lock" => (PYTHON, Lock),
        "tox.ini" | "noxfile.py" => (PYTHON, Config),
        ".python-version" | "runtime.txt" => (PYTHON, Version),
        "environment.yml" | "environment.yaml" | "condaenv.yaml" | "condaenv.yml" => {
            (MINIFORGE, Manifest)
        }
        "conda-lock.yml" | "conda-lock.yaml" => (MINIFORGE, Lock),
        "package.json" => (NODE, Manifest),
        "package-lock.json"
        | "npm-shrinkwrap.json"
        | "yarn.lock"
        | "pnpm-lock.yaml"
        | "bun.lockb"
        | "bun.lock" => (NODE, Lock),
        ".nvmrc" | ".node-version" => (NODE, Version),
        ".yarnrc.yml" | ".yarnrc" | "pnpm-workspace.yaml" | ".npmrc" => (NODE, Config),
        "pom.xml" | "build.gradle" | "build.gradle.kts" => (JAVA, Manifest),
        "settings.gradle" | "settings.gradle.kts" | "mvnw" | "gradlew" => (JAVA, Config),
        "gradle.lockfile" => (JAVA, Lock),
        ".java-version" | ".sdkmanrc" => (JAVA, Version),
        "go.mod" => (GO, Manifest),
        "go.sum" => (GO, Lock),
        "go.work" => (GO, Config),
        "Cargo.toml" => (RUST, Manifest),
        "Cargo.lock" => (RUST, Lock),
        "rust-toolchain" | "rust-toolchain.toml" => (RUST, Version),
        "Gemfile" | "gems.rb" => (RUBY, Manifest),
        "Gemfile.lock" | "gems.locked" => (RUBY, Lock),
        ".ruby-version" => (RUBY, Version),
        "composer.json" => (PHP, Manifest),
        "composer.lock" => (PHP, Lock),
        "deno.json" | "deno.jsonc" => (DENO, Manifest),
        "deno.lock" => (DENO, Lock),
        "global.json" => (DOTNET, Version),
        "packages.lock.json" => (DOTNET, Lock),
        "Directory.Packages.props" | "Directory.Build.props" | "NuGet.config" | "nuget.config" => {
            (DOTNET, Config)
        }
        n if n.ends_with(".csproj")
            || n.ends_with(".fsproj")
            || n.ends_with(".vbproj")
            || n.ends_with(".sln")
            || n.ends_with(".slnx") =>
        {
            (DOTNET, Manifest)
        }
        "Dockerfile"
        | "docker-compose.yml"
        | "docker-compose.yaml"
        | "compose.yaml"
        | "compose.yml"
        | "Makefile"
        | "README.md" => (COMMON, Common),
        n if n.ends_with(".txt") && (n.contains("requirements") || parent == "requirements") => {
            (PYTHON, Manifest)
        }
        _ => return None,
    };
    Some(r)
}

fn source_language(name: &str) -> Option<&'static str> {
    let ext = name.rsplit_once('.')?.1;
    Some(match ext {
        "py" => "py",
        "js" | "mjs" | "cjs" | "jsx" => "js",
        "ts" | "tsx" | "mts" => "ts",
        "java" => "java",
        "kt" | "kts" => "kt",
        "go" => "go",
        "rs" => "rs",
        _ => return None,
    })
}

/// Reads repository files for the parsers, honouring `max_file_size`.
pub(crate) struct Reader<'a> {
    root: &'a Path,
    max_size: u64,
    pub(crate) warnings: Vec<AnalysisWarning>,
}

impl Reader<'_> {
    /// The file's text, or `None` (with a warning) when unreadable or too large.
    pub(crate) fn read(&mut self, rel: &str) -> Option<String> {
        let p = self.root.join(rel);
        match std::fs::metadata(&p) {
            Ok(m) if m.len() > self.max_size => {
                self.warn(
                    rel,
                    format!(
                        "{} bytes exceeds max_file_size {}; not parsed",
                        m.len(),
                        self.max_size
                    ),
                );
                return None;
            }
            Ok(_) => {}
            Err(e) => {
                self.warn(rel, format!("cannot read: {e}"));
                return None;
            }
        }
        match std::fs::read(&p) {
            Ok(b) => Some(String::from_utf8_lossy(&b).into_owned()),
            Err(e) => {
                self.warn(rel, format!("cannot read: {e}"));
                None
            }
        }
    }

    /// The first `n` bytes, whatever the file's size (lock file headers).
    /// Whether `rel` exists in the repository.
    pub(crate) fn exists(&self, rel: &str) -> bool {
        self.root.join(rel).exists()
    }

    pub(crate) fn head(&mut self, rel: &str, n: usize) -> Option<String> {
        use std::io::Read;
        let mut f = std::fs::File::open(self.root.join(rel)).ok()?;
        let mut buf = vec![0u8; n];
        let got = f.read(&mut buf).ok()?;
        buf.truncate(got);
        Some(String::from_utf8_lossy(&buf).into_owned())
    }

    pub(crate) fn warn(&mut self, rel: &str, message: impl Into<String>) {
        self.warnings.push(AnalysisWarning {
            path: rel.to_string(),
            message: message.into(),
        });
    }
}

fn config_globs(config: &AnalysisConfig) -> (GlobSet, Vec<String>) {
    let mut b = GlobSetBuilder::new();
    let mut owners = Vec::new();
    for (eco, pats) in &config.file_patterns {
        for p in pats {
            if let Ok(g) = Glob::new(p) {
                b.add(g);
                owners.push(eco.clone());
            }
        }
    }
    (b.build().unwrap_or_else(|_| GlobSet::empty()), owners)
}

/// Walks `root` (depth ≤ `max_search_depth`, skipping dependency and build
/// directories and git-ignored files) and analyses what it finds.
pub fn analyze(root: &Path, config: &AnalysisConfig) -> EnvironmentAnalysis {
    let (paths, walk_warnings) = walk(root, config);
    let mut a = analyze_inner(root, &paths, config);
    a.warnings.splice(0..0, walk_warnings);
    a
}

/// The relative (`/`-separated) paths of the files [`analyze`] looks at, and
/// what could not be walked.
pub fn walk(root: &Path, config: &AnalysisConfig) -> (Vec<String>, Vec<AnalysisWarning>) {
    let mut paths = Vec::new();
    let mut walk_warnings = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .git_global(false)
        .max_depth(Some(config.max_search_depth as usize))
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && SKIP_DIRS.contains(&e.file_name().to_string_lossy().as_ref()))
        })
        .build();
    for entry in walker {
        match entry {
            Ok(e) if e.file_type().is_some_and(|t| t.is_file()) => {
                if let Ok(rel) = e.path().strip_prefix(root) {
                    let rel = rel
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/");
                    paths.push(rel);
                }
            }
            Ok(_) => {}
            Err(e) => walk_warnings.push(AnalysisWarning {
                path: ".".to_string(),
                message: format!("walking {}: {e}", root.display()),
            }),
        }
    }
    (paths, walk_warnings)
}

/// Analyses a list of relative (`/`-separated) paths the caller already scanned,
/// with the default [`AnalysisConfig`]; only the environment files are read.
pub fn analyze_paths<S: AsRef<str>>(root: &Path, paths: &[S]) -> EnvironmentAnalysis {
    analyze_paths_with(root, paths, &AnalysisConfig::default())
}

/// [`analyze_paths`] with an explicit config.
pub fn analyze_paths_with<S: AsRef<str>>(
    root: &Path,
    paths: &[S],
    config: &AnalysisConfig,
) -> EnvironmentAnalysis {
    analyze_inner(root, &scanned_paths(paths, config), config)
}

/// The paths of a caller's scan that [`analyze`] would have walked (depth,
/// dependency and build directories).
pub(crate) fn scanned_paths<S: AsRef<str>>(paths: &[S], config: &AnalysisConfig) -> Vec<String> {
    let max_depth = config.max_search_depth as usize;
    paths
        .iter()
        .map(|p| p.as_ref().trim_start_matches("./").to_string())
        .filter(|p| {
            p.split('/').count() <= max_depth
                && !p
                    .split('/')
                    .rev()
                    .skip(1)
                    .any(|seg| SKIP_DIRS.contains(&seg))
        })
        .collect()
}

pub(crate) fn analyze_inner(
    root: &Path,
    paths: &[String],
    config: &AnalysisConfig,
) -> EnvironmentAnalysis {
    let (globs, owners) = config_globs(config);
    let mut detected: Vec<DetectedFile> = Vec::new();
    let mut source_files: BTreeMap<String, usize> = BTreeMap::new();
    let all_paths: BTreeSet<&str> = paths.iter().map(String::as_str).collect();
    for p in paths {
        let name = file_name(p);
        if let Some((eco, kind)) = classify(p) {
            // README.md counts only at the root (§3.2.5 "setup instructions").
            if !(name == "README.md" && p.contains('/')) {
                detected.push(DetectedFile {
                    path: p.clone(),
                    ecosystem: eco.to_string(),
                    kind,
                });
            }
        } else if let Some(i) = globs.matches(name).first() {
            detected.push(DetectedFile {
                path: p.clone(),
                ecosystem: owners[*i].clone(),
                kind: FileKind::Common,
            });
        } else if let Some(lang) = source_language(name) {
            *source_files.entry(lang.to_string()).or_default() += 1;
        }
    }
    detected.sort_by(|a, b| a.path.cmp(&b.path));

    // Roots: a directory holding a manifest of an ecosystem.
    let mut roots: BTreeMap<(String, String), Ecosystem> = BTreeMap::new();
    for f in &detected {
        if f.kind == FileKind::Manifest {
            let mut dir = parent_dir(&f.path).to_string();
            // requirements/dev.txt belongs to the directory above `requirements/`.
            if f.ecosystem == PYTHON && file_name(&dir) == "requirements" {
                dir = parent_dir(&dir).to_string();
            }
            roots
                .entry((f.ecosystem.clone(), dir.clone()))
                .or_insert_with(|| Ecosystem::new(&f.ecosystem, &dir));
        }
    }
    // Attach every file to its root: same directory, else the nearest ancestor
    // root of the same ecosystem; version files also to descendants.
    for f in &detected {
        if f.ecosystem == COMMON {
            continue;
        }
        let mut dir = parent_dir(&f.path).to_string();
        if f.ecosystem == PYTHON && file_name(&dir) == "requirements" {
            dir = parent_dir(&dir).to_string();
        }
        let mut d = dir.clone();
        let mut attached = false;
        loop {
            if let Some(e) = roots.get_mut(&(f.ecosystem.clone(), d.clone())) {
                e.files.push(f.path.clone());
                attached = true;
                break;
            }
            if d == "." {
                break;
            }
            d = parent_dir(&d).to_string();
        }
        if !attached && f.kind == FileKind::Version {
            for ((eco, rdir), e) in roots.iter_mut() {
                if *eco == f.ecosystem && (dir == "." || rdir.starts_with(&format!("{dir}/"))) {
                    e.files.push(f.path.clone());
                }
            }
        }
    }

    let mut reader = Reader {
        root,
        max_size: config.max_file_size,
        warnings: Vec::new(),
    };
    let mut parsed: Vec<Ecosystem> = roots
        .into_values()
        .map(|mut e| {
            e.files.sort();
            e.files.dedup();
            match e.name.as_str() {
                PYTHON => python::analyze(&mut e, &mut reader, &all_paths),
                MINIFORGE => python::analyze_conda(&mut e, &mut reader),
                NODE => node::analyze(&mut e, &mut reader, &all_paths),
                JAVA => java::analyze(&mut e, &mut reader),
                GO => go::analyze(&mut e, &mut reader),
                RUST => rust::analyze(&mut e, &mut reader),
                RUBY => other::analyze_ruby(&mut e, &mut reader),
                PHP => other::analyze_php(&mut e, &mut reader),
                DOTNET => other::analyze_dotnet(&mut e, &mut reader),
                DENO => other::analyze_deno(&mut e, &mut reader),
                _ => {}
            }
            e
        })
        .collect();

    // Merge nested roots into the outermost root of the same ecosystem.
    parsed.sort_by_key(|e| {
        (
            e.dir.matches('/').count() + usize::from(e.dir != "."),
            e.dir.clone(),
        )
    });
    let mut merged: Vec<Ecosystem> = Vec::new();
    for e in parsed {
        let host = merged.iter_mut().find(|m| {
            m.name == e.name && (m.dir == "." || e.dir.starts_with(&format!("{}/", m.dir)))
        });
        match host {
            Some(m) => {
                m.files.extend(e.files);
                m.files.sort();
                m.files.dedup();
                // A Python project nested in another (`examples/celery`,
                // `docs/tutorial`) is a project of its own unless the outer one
                // names it (a uv workspace member, a path dependency): its
                // dependencies (often the outer package itself, from the index)
                // are not the outer project's.
                if e.name != PYTHON || python_member(m, &e.dir, &mut reader) {
                    m.dependencies.extend(e.dependencies);
                }
                m.members.push(e.dir);
                m.has_build_file |= e.has_build_file;
                // A member's pin stands for the project when it has none; a
                // member's (or a local dependency's) `engines.node` range does not.
                let member_range = e
                    .runtime_version
                    .as_ref()
                    .is_some_and(|v| v.source.ends_with("engines.node"));
                if m.runtime_version.is_none() && !member_range {
                    m.runtime_version = e.runtime_version;
                }
            }
            None => merged.push(e),
        }
    }
    merged.sort_by(|a, b| (&a.name, &a.dir).cmp(&(&b.name, &b.dir)));

    EnvironmentAnalysis {
        ecosystems: merged,
        detected_files: detected,
        source_files,
        files_scanned: paths.len(),
        warnings: reader.warnings,
    }
}

/// Whether the Python project in `dir` belongs to `host`: the host has no
/// project of its own, or its `pyproject.toml` names the directory (a workspace
/// member, `members = ["packages/*"]`, or a path dependency).
fn python_member(host: &Ecosystem, dir: &str, reader: &mut Reader<'_>) -> bool {
    if !host.has_build_file {
        return true;
    }
    let Some(text) = reader.read(&host.rel("pyproject.toml")) else {
        return false;
    };
    let rel = if host.dir == "." {
        dir
    } else {
        dir.strip_prefix(&format!("{}/", host.dir)).unwrap_or(dir)
    };
    let parent = parent_dir(rel);
    text.contains(rel) || (parent != "." && text.contains(&format!("{parent}/*")))
}

/// Splits a PEP 508 requirement (`name[extra]>=1; marker`) into name and spec.
pub(crate) fn split_requirement(req: &str) -> Option<(String, Option<String>, Option<String>)> {
    let req = req.trim();
    // A bare URL or path (`https://…/main.tar.gz`, `./vendor/pkg`) names no
    // distribution; `name @ https://…` does.
    if (req.contains("://") && !req.contains(" @ ")) || req.starts_with(['.', '/']) {
        return None;
    }
    let (body, marker) = match req.split_once(';') {
        Some((b, m)) => (b.trim(), Some(m.trim().to_string())),
        None => (req, None),
    };
    let end = body
        .find(|c: char| !(c.is_ascii_alphanumeric() || "._-".contains(c)))
        .unwrap_or(body.len());
    let name = &body[..end];
    if name.is_empty() {
        return None;
    }
    let mut rest = body[end..].trim();
    if rest.starts_with('[') {
        rest = rest.find(']').map(|i| rest[i + 1..].trim()).unwrap_or("");
    }
    let spec = rest.trim_start_matches('(').trim_end_matches(')').trim();
    Some((
        name.to_string(),
        (!spec.is_empty()).then(|| spec.to_string()),
        marker,
    ))
}

/// A crude import-name guess for a distribution name.
pub fn import_name(dist: &str) -> String {
    let lower = dist.to_ascii_lowercase();
    let known = match lower.as_str() {
        "pyyaml" => Some("yaml"),
        "beautifulsoup4" => Some("bs4"),
        "pillow" => Some("PIL"),
        "scikit-learn" => Some("sklearn"),
        "scikit-image" => Some("skimage"),
        "python-dateutil" => Some("dateutil"),
        "opencv-python" | "opencv-python-headless" => Some("cv2"),
        "protobuf" => Some("google.protobuf"),
        "pyjwt" => Some("jwt"),
        "python-dotenv" => Some("dotenv"),
        "typing-extensions" | "typing_extensions" => Some("typing_extensions"),
        "attrs" => Some("attr"),
        "msgpack-python" => Some("msgpack"),
        "pymysql" => Some("pymysql"),
        _ => None,
    };
    known
        .map(str::to_string)
        .unwrap_or_else(|| lower.replace(['-', '.'], "_"))
}
