//! Node: npm / yarn (classic, berry) / pnpm / bun.

use super::{Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name};

pub(super) fn analyze(
    e: &mut Ecosystem,
    reader: &mut Reader<'_>,
    all: &std::collections::BTreeSet<&str>,
) {
    let files = e.files.clone();
    let mut pinned: Option<(String, Option<String>, String)> = None;
    let mut lock_pm: Option<(&str, String)> = None;
    let mut nvmrc: Option<RuntimeVersion> = None;
    let mut engines: Option<RuntimeVersion> = None;
    let mut flavor: Option<String> = None;
    let root_manifest = e.rel("package.json");
    let mut test_run: Option<TestRun> = None;

    for rel in &files {
        match file_name(rel) {
            "package.json" => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                let doc: serde_json::Value = match serde_json::from_str(&text) {
                    Ok(d) => d,
                    Err(err) => {
                        if *rel == root_manifest {
                            e.manifest_errors.push(format!(
                                "{rel}:{}:{}: JSON parse error: {err}",
                                err.line(),
                                err.column()
                            ));
                        }
                        reader.warn(rel, format!("JSON parse error: {err}"));
                        continue;
                    }
                };
                if *rel == root_manifest && doc.get("workspaces").is_some() {
                    e.workspaces = true;
                }
                let peer_optional = |name: &str| {
                    doc.pointer(&format!("/peerDependenciesMeta/{name}/optional"))
                        .and_then(|v| v.as_bool())
                        .unwrap_or(false)
                };
                for (field, kind, optional) in [
                    ("dependencies", DependencyKind::Prod, false),
                    ("devDependencies", DependencyKind::Dev, false),
                    ("optionalDependencies", DependencyKind::Prod, true),
                    ("peerDependencies", DependencyKind::Peer, false),
                ] {
                    if let Some(map) = doc.get(field).and_then(|v| v.as_object()) {
                        for (name, spec) in map {
                            e.dependencies.push(Dependency {
                                name: name.clone(),
                                version_spec: spec.as_str().map(str::to_string),
                                kind,
                                optional: optional
                                    || (field == "peerDependencies" && peer_optional(name)),
                                group: None,
                                source: rel.clone(),
                                marker: None,
                            });
                        }
                    }
                }
                if *rel != root_manifest {
                    continue;
                }
                if let Some(pmf) = doc.get("packageManager").and_then(|v| v.as_str()) {
                    let (name, ver) = match pmf.split_once('@') {
                        Some((n, v)) => (
                            n.to_string(),
                            Some(v.split('+').next().unwrap_or(v).to_string()),
                        ),
                        None => (pmf.to_string(), None),
                    };
                    pinned = Some((name, ver, format!("`packageManager: {pmf}` in {rel}")));
                }
                if let Some(v) = doc.pointer("/engines/node").and_then(|v| v.as_str()) {
                    engines = Some(RuntimeVersion {
                        value: v.to_string(),
                        source: format!("{rel} engines.node"),
                    });
                } else if let Some(v) = doc.pointer("/volta/node").and_then(|v| v.as_str()) {
                    engines = Some(RuntimeVersion {
                        value: v.to_string(),
                        source: format!("{rel} volta.node"),
                    });
                }
                if let Some(n) = doc.get("name").and_then(|v| v.as_str()) {
                    e.package_name = Some(n.to_string());
                }
                let scripts = doc.get("scripts").and_then(|v| v.as_object());
                if scripts.is_some_and(|s| s.contains_key("build")) {
                    e.has_build_file = true;
                    if *rel == root_manifest {
                        let entries = entry_points(&doc);
                        let dir = super::parent_dir(rel);
                        let present = |p: &str| {
                            let p = p.trim_start_matches("./");
                            reader.exists(&if dir == "." {
                                p.to_string()
                            } else {
                                format!("{dir}/{p}")
                            })
                        };
                        e.needs_build = !entries.is_empty()
                            && !entries.iter().any(|p| present(p))
                            && doc
                                .get("name")
                                .and_then(|v| v.as_str())
                                .is_some_and(|n| tests_import_package(n, dir, all, reader));
                    }
                }
                if let Some(all_scripts) = scripts
                    && let Some(t) = all_scripts.get("test").and_then(|v| v.as_str())
                    && !t.contains("no test specified")
                    && (test_run.is_none() || *rel == root_manifest)
                {
                    test_run = Some(test_run_of(all_scripts, t));
                }
            }
            "pnpm-lock.yaml" => lock_pm = Some(("pnpm", format!("{rel} present"))),
            "yarn.lock" => {
                let head = reader.head(rel, 2048).unwrap_or_default();
                let berry = head.contains("__metadata:") || e.has_file(".yarnrc.yml");
                flavor = Some(if berry { "berry" } else { "classic" }.to_string());
                if lock_pm.as_ref().is_none_or(|(p, _)| *p == "npm") {
                    lock_pm = Some((
                        "yarn",
                        format!(
                            "{rel} present ({} format)",
                            flavor.as_deref().unwrap_or("classic")
                        ),
                    ));
                }
            }
            "bun.lockb" | "bun.lock" if lock_pm.as_ref().is_none_or(|(p, _)| *p == "npm") => {
                lock_pm = Some(("bun", format!("{rel} present")));
            }
            "package-lock.json" | "npm-shrinkwrap.json" => {
                lock_pm.get_or_insert(("npm", format!("{rel} present")));
            }
            ".nvmrc" | ".node-version" => {
                if (nvmrc.is_none() || file_name(rel) == ".nvmrc")
                    && let Some(t) = reader.read(rel)
                {
                    let v = t.trim();
                    if !v.is_empty() {
                        nvmrc = Some(RuntimeVersion {
                            value: v.to_string(),
                            source: rel.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    match (pinned, lock_pm) {
        (Some((name, ver, why)), _) => {
            if name == "yarn" && flavor.is_none() {
                let major = ver
                    .as_deref()
                    .and_then(|v| v.split('.').next())
                    .unwrap_or("1");
                flavor = Some(if major == "1" { "classic" } else { "berry" }.to_string());
            }
            e.package_manager = name;
            e.package_manager_version = ver;
            e.package_manager_reason = why;
        }
        (None, Some((pm, why))) => {
            e.package_manager = pm.to_string();
            e.package_manager_reason = why;
        }
        (None, None) => {
            e.package_manager = "npm".to_string();
            e.package_manager_reason = "no lock file: npm".to_string();
        }
    }
    if e.package_manager == "yarn" {
        e.package_manager_flavor = flavor;
    }
    e.runtime_version = nvmrc.or(engines);
    let pm = e.package_manager.clone();
    e.test_command = test_run.map(|r| match r {
        TestRun::Test => format!("{pm} test"),
        TestRun::Script(name) => format!("{pm} run {name}"),
        TestRun::Chain(line) => line,
    });
}

/// How the project's tests run without its linters.
#[derive(Debug, Clone, PartialEq, Eq)]
enum TestRun {
    /// `<pm> test`.
    Test,
    /// `<pm> run <script>`: a script that runs the tests only (`test:unit`,
    /// `tests-only`).
    Script(String),
    /// The `test` script without its leading lint commands (`xo && npm run
    /// build && ava` → `npm run build && ava`).
    Chain(String),
}

/// Scripts that run the tests without linting, by their usual names.
const TESTS_ONLY_SCRIPTS: &[&str] = &["test:unit", "tests-only", "test-only", "test:only", "unit"];
/// Programs that lint or type-check instead of running tests.
const LINTERS: &[&str] = &[
    "xo",
    "eslint",
    "standard",
    "semistandard",
    "prettier",
    "oxlint",
    "biome",
    "tsd",
    "tslint",
    "jshint",
    "jscs",
    "dtslint",
    "attw",
    "publint",
];

/// A `test` script that lints first (`xo && ava`, `npm run lint && jest`) fails
/// on a lint finding of an unlocked linter release before any test runs: the
/// project's tests-only script when it has one, else the chain without its
/// leading lint commands (`pretest`/`posttest` hooks then do not run).
fn test_run_of(scripts: &serde_json::Map<String, serde_json::Value>, test: &str) -> TestRun {
    if let Some(name) = TESTS_ONLY_SCRIPTS
        .iter()
        .find(|n| scripts.get(**n).and_then(|v| v.as_str()).is_some())
    {
        return TestRun::Script((*name).to_string());
    }
    let is_lint = |segment: &str| {
        let words: Vec<&str> = segment.split_whitespace().collect();
        match words.first().copied() {
            Some(w) if LINTERS.contains(&w) => true,
            Some("npm" | "yarn" | "pnpm" | "bun") => words[1..]
                .iter()
                .rfind(|w| !w.starts_with('-') && **w != "run")
                .is_some_and(|script| script.contains("lint")),
            _ => false,
        }
    };
    if test.contains(['|', ';', '`', '$', '>', '<']) || test.contains("||") {
        return TestRun::Test;
    }
    let segments: Vec<&str> = test.split("&&").map(str::trim).collect();
    let lints = segments.iter().take_while(|s| is_lint(s)).count();
    if lints == 0 || lints == segments.len() {
        return TestRun::Test;
    }
    // Only a chain the command policy runs (the runner's unit-test steps check
    // it): `ava && tsd` stays `<pm> test` where `tsd` is not allowed.
    let chain = segments[lints..].join(" && ");
    if dandori_exec::CommandPolicy::default()
        .check(&chain)
        .is_err()
    {
        return TestRun::Test;
    }
    TestRun::Chain(chain)
}

/// The relative files a package.json names as its own entry points: `main`,
/// `module`, and the string targets of `exports` (its `.` entry or the whole
/// object); paths leaving the package and patterns are ignored.
fn entry_points(doc: &serde_json::Value) -> Vec<String> {
    fn strings(v: &serde_json::Value, out: &mut Vec<String>, depth: usize) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Object(m) if depth < 4 => {
                // Subpath keys other than `.` name other entry points.
                let dot = m.get(".");
                match dot {
                    Some(d) => strings(d, out, depth + 1),
                    None => {
                        for (k, v) in m {
                            if !k.starts_with("./") {
                                strings(v, out, depth + 1);
                            }
                        }
                    }
                }
            }
            serde_json::Value::Array(a) if depth < 4 => {
                for v in a {
                    strings(v, out, depth + 1);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for key in ["main", "module"] {
        if let Some(s) = doc.get(key).and_then(|v| v.as_str()) {
            out.push(s.to_string());
        }
    }
    if let Some(x) = doc.get("exports") {
        strings(x, &mut out, 0);
    }
    out.retain(|p| {
        !p.is_empty() && !p.starts_with('/') && !p.contains('*') && !p.split('/').any(|c| c == "..")
    });
    out
}

/// Whether a test file under `dir` imports the package by its own name
/// (`from 'tinyspy'`, `require("tinyspy")`, subpaths too): at most 64 test files,
/// their first 8 KiB.
fn tests_import_package(
    name: &str,
    dir: &str,
    all: &std::collections::BTreeSet<&str>,
    reader: &mut Reader<'_>,
) -> bool {
    const EXTS: &[&str] = &[".js", ".mjs", ".cjs", ".ts", ".mts", ".cts", ".jsx", ".tsx"];
    let under = |p: &str| dir == "." || p.starts_with(&format!("{dir}/"));
    let is_test = |p: &str| {
        let lower = p.to_ascii_lowercase();
        !lower.contains("node_modules/")
            && EXTS.iter().any(|x| lower.ends_with(x))
            && (lower.contains("test") || lower.contains("spec"))
    };
    let quoted = [
        format!("'{name}'"),
        format!("\"{name}\""),
        format!("'{name}/"),
        format!("\"{name}/"),
    ];
    all.iter()
        .filter(|p| under(p) && is_test(p))
        .take(64)
        .filter_map(|p| reader.head(p, 8192))
        .any(|text| quoted.iter().any(|q| text.contains(q.as_str())))
}
