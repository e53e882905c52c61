//! Python (pip / uv / poetry / pdm / pipenv) and miniforge (conda / mamba).

use std::collections::BTreeSet;

use super::{
    Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name, split_requirement,
};

fn dep(
    name: String,
    spec: Option<String>,
    kind: DependencyKind,
    optional: bool,
    group: Option<String>,
    source: &str,
) -> Dependency {
    Dependency {
        name,
        version_spec: spec,
        kind,
        optional,
        group,
        source: source.to_string(),
        marker: None,
    }
}

fn is_dev_name(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["dev", "test", "lint", "doc", "ci", "typing", "check"]
        .iter()
        .any(|k| n.contains(k))
}

fn parse_requirements(
    text: &str,
    rel: &str,
    kind: DependencyKind,
    reader: &mut Reader<'_>,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<Dependency>,
) {
    if !seen.insert(rel.to_string()) {
        return;
    }
    for raw in text.lines() {
        let line = match raw.find(" #") {
            Some(i) => &raw[..i],
            None => raw,
        }
        .trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(inc) = line
            .strip_prefix("-r ")
            .or_else(|| line.strip_prefix("--requirement "))
        {
            let inc_rel = super::join_rel(super::parent_dir(rel), inc.trim());
            if let Some(t) = reader.read(&inc_rel) {
                parse_requirements(&t, &inc_rel, kind, reader, seen, out);
            }
            continue;
        }
        if line.starts_with('-') {
            // -e, -c, --index-url …: `-e git+…#egg=name` still names a package.
            if let Some(egg) = line.split("#egg=").nth(1) {
                out.push(dep(egg.trim().to_string(), None, kind, false, None, rel));
            }
            continue;
        }
        if let Some((name, spec, marker)) = split_requirement(line) {
            let optional = marker.as_deref().is_some_and(|m| m.contains("extra"));
            let mut d = dep(name, spec, kind, optional, None, rel);
            d.marker = marker.filter(|m| !optional && !m.is_empty());
            out.push(d);
        }
    }
}

fn toml_str_deps(
    v: Option<&toml::Value>,
    kind: DependencyKind,
    optional: bool,
    group: Option<&str>,
    source: &str,
    out: &mut Vec<Dependency>,
) {
    if let Some(arr) = v.and_then(|v| v.as_array()) {
        for s in arr.iter().filter_map(|x| x.as_str()) {
            if let Some((name, spec, marker)) = split_requirement(s) {
                let mut d = dep(
                    name,
                    spec,
                    kind,
                    optional,
                    group.map(str::to_string),
                    source,
                );
                d.marker = marker.filter(|m| !m.is_empty() && !m.contains("extra"));
                out.push(d);
            }
        }
    }
}

/// Poetry / Pipfile style tables: `name = "^1.0"` or `name = { version = "…", optional = true }`.
fn toml_table_deps(
    v: Option<&toml::Value>,
    kind: DependencyKind,
    group: Option<&str>,
    source: &str,
    out: &mut Vec<Dependency>,
) {
    let Some(t) = v.and_then(|v| v.as_table()) else {
        return;
    };
    for (name, val) in t {
        if name == "python" {
            continue;
        }
        let (spec, optional) = match val {
            toml::Value::String(s) => (Some(s.clone()), false),
            toml::Value::Table(t) => (
                t.get("version")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .or_else(|| {
                        t.get("git")
                            .and_then(|v| v.as_str())
                            .map(|g| format!("git {g}"))
                    })
                    .or_else(|| {
                        t.get("path")
                            .and_then(|v| v.as_str())
                            .map(|p| format!("path {p}"))
                    }),
                t.get("optional").and_then(|v| v.as_bool()).unwrap_or(false),
            ),
            _ => (None, false),
        };
        let spec = spec.filter(|s| s != "*");
        let mut d = dep(
            name.clone(),
            spec,
            kind,
            optional,
            group.map(str::to_string),
            source,
        );
        if let toml::Value::Table(t) = val {
            let python = t
                .get("python")
                .and_then(|v| v.as_str())
                .and_then(poetry_python_marker);
            let markers = t
                .get("markers")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            d.marker = match (python, markers) {
                (Some(p), Some(m)) => Some(format!("({p}) and ({m})")),
                (p, m) => p.or(m),
            };
        }
        out.push(d);
    }
}

/// Poetry's `python = ">=3.5,<3.8"` / `"^3.7"` / `"3.8"` as a PEP 508 marker on
/// `python_version`; `None` for what does not translate (`||`, wildcards).
fn poetry_python_marker(constraint: &str) -> Option<String> {
    let mut parts = Vec::new();
    for c in constraint
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
    {
        let (op, v) = if let Some(v) = c.strip_prefix('^').or_else(|| c.strip_prefix('~')) {
            (">=", v)
        } else if let Some(i) = c.find(|ch: char| ch.is_ascii_digit()) {
            match c[..i].trim() {
                "" | "=" | "==" => ("==", &c[i..]),
                op @ (">=" | "<=" | "<" | ">" | "!=") => (op, &c[i..]),
                _ => return None,
            }
        } else {
            return None;
        };
        let v = v.trim();
        if v.is_empty() || !v.chars().all(|ch| ch.is_ascii_digit() || ch == '.') {
            return None;
        }
        parts.push(format!("python_version {op} \"{v}\""));
    }
    (!parts.is_empty()).then(|| parts.join(" and "))
}

pub(super) fn analyze(e: &mut Ecosystem, reader: &mut Reader<'_>, all: &BTreeSet<&str>) {
    let mut deps = Vec::new();
    let mut seen = BTreeSet::new();
    let mut pm: Option<(&str, String)> = None;
    let mut version: Option<RuntimeVersion> = None;
    let mut requires_python: Option<RuntimeVersion> = None;
    let mut name: Option<String> = None;
    let mut pytest_configured = false;
    let mut tox_test: Option<String> = None;

    let files = e.files.clone();
    for rel in &files {
        let fname = file_name(rel);
        match fname {
            "pyproject.toml" => {
                e.has_build_file = true;
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                let doc: toml::Table = match text.parse() {
                    Ok(d) => d,
                    Err(err) => {
                        if super::parent_dir(rel) == e.dir {
                            e.manifest_errors
                                .push(crate::lockfile::syntax_error(rel, &text, &err));
                        }
                        reader.warn(rel, format!("TOML parse error: {err}"));
                        continue;
                    }
                };
                let project = doc.get("project");
                toml_str_deps(
                    project.and_then(|p| p.get("dependencies")),
                    DependencyKind::Prod,
                    false,
                    None,
                    rel,
                    &mut deps,
                );
                if let Some(opt) = project
                    .and_then(|p| p.get("optional-dependencies"))
                    .and_then(|v| v.as_table())
                {
                    for (group, list) in opt {
                        let kind = if is_dev_name(group) {
                            DependencyKind::Dev
                        } else {
                            DependencyKind::Prod
                        };
                        toml_str_deps(Some(list), kind, true, Some(group), rel, &mut deps);
                    }
                }
                if let Some(groups) = doc.get("dependency-groups").and_then(|v| v.as_table()) {
                    if super::parent_dir(rel) == e.dir {
                        e.dependency_groups.extend(groups.keys().cloned());
                    }
                    for group in groups.keys() {
                        // PEP 735 `{include-group = "…"}` entries are expanded.
                        let list = toml::Value::Array(expand_group(groups, group, &mut Vec::new()));
                        toml_str_deps(
                            Some(&list),
                            DependencyKind::Dev,
                            false,
                            Some(group),
                            rel,
                            &mut deps,
                        );
                    }
                }
                if let Some(rp) = project
                    .and_then(|p| p.get("requires-python"))
                    .and_then(|v| v.as_str())
                {
                    requires_python = Some(RuntimeVersion {
                        value: rp.to_string(),
                        source: rel.clone(),
                    });
                }
                if let Some(n) = project.and_then(|p| p.get("name")).and_then(|v| v.as_str()) {
                    name = Some(n.to_string());
                }
                let tool = doc.get("tool");
                if let Some(poetry) = tool.and_then(|t| t.get("poetry")) {
                    pm.get_or_insert(("poetry", format!("[tool.poetry] in {rel}")));
                    toml_table_deps(
                        poetry.get("dependencies"),
                        DependencyKind::Prod,
                        None,
                        rel,
                        &mut deps,
                    );
                    toml_table_deps(
                        poetry.get("dev-dependencies"),
                        DependencyKind::Dev,
                        None,
                        rel,
                        &mut deps,
                    );
                    if let Some(groups) = poetry.get("group").and_then(|g| g.as_table()) {
                        for (g, body) in groups {
                            toml_table_deps(
                                body.get("dependencies"),
                                DependencyKind::Dev,
                                Some(g),
                                rel,
                                &mut deps,
                            );
                        }
                    }
                    if let Some(py) = poetry
                        .get("dependencies")
                        .and_then(|d| d.get("python"))
                        .and_then(|v| v.as_str())
                    {
                        requires_python.get_or_insert(RuntimeVersion {
                            value: py.to_string(),
                            source: rel.clone(),
                        });
                    }
                    if name.is_none() {
                        name = poetry
                            .get("name")
                            .and_then(|v| v.as_str())
                            .map(str::to_string);
                    }
                }
                if let Some(pdm) = tool.and_then(|t| t.get("pdm")) {
                    pm.get_or_insert(("pdm", format!("[tool.pdm] in {rel}")));
                    if let Some(groups) = pdm.get("dev-dependencies").and_then(|v| v.as_table()) {
                        for (g, list) in groups {
                            toml_str_deps(
                                Some(list),
                                DependencyKind::Dev,
                                false,
                                Some(g),
                                rel,
                                &mut deps,
                            );
                        }
                    }
                }
                if let Some(uv) = tool.and_then(|t| t.get("uv")) {
                    pm.get_or_insert(("uv", format!("[tool.uv] in {rel}")));
                    toml_str_deps(
                        uv.get("dev-dependencies"),
                        DependencyKind::Dev,
                        false,
                        None,
                        rel,
                        &mut deps,
                    );
                }
                // Hatch environments: `[tool.hatch.envs.test] dependencies = [...]`.
                if let Some(envs) = tool
                    .and_then(|t| t.get("hatch"))
                    .and_then(|h| h.get("envs"))
                    .and_then(|v| v.as_table())
                {
                    for (env_name, body) in envs {
                        let n = env_name.to_ascii_lowercase();
                        if n == "default" || n.contains("test") || n == "dev" {
                            for key in ["dependencies", "extra-dependencies"] {
                                toml_str_deps(
                                    body.get(key),
                                    DependencyKind::Dev,
                                    false,
                                    None,
                                    rel,
                                    &mut deps,
                                );
                            }
                        }
                    }
                }
                if tool.and_then(|t| t.get("pytest")).is_some() {
                    pytest_configured = true;
                }
            }
            "setup.py" => {
                e.has_build_file = true;
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                parse_setup_py(&text, rel, &mut deps, &mut name);
            }
            "setup.cfg" => {
                e.has_build_file = true;
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                pytest_configured |= text.contains("[tool:pytest]");
                parse_setup_cfg(&text, rel, &mut deps, &mut name);
            }
            "Pipfile" => {
                pm.get_or_insert(("pipenv", format!("{rel} present")));
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                match text.parse::<toml::Table>() {
                    Ok(doc) => {
                        toml_table_deps(
                            doc.get("packages"),
                            DependencyKind::Prod,
                            None,
                            rel,
                            &mut deps,
                        );
                        toml_table_deps(
                            doc.get("dev-packages"),
                            DependencyKind::Dev,
                            None,
                            rel,
                            &mut deps,
                        );
                        if let Some(v) = doc
                            .get("requires")
                            .and_then(|r| {
                                r.get("python_version")
                                    .or_else(|| r.get("python_full_version"))
                            })
                            .and_then(|v| v.as_str())
                        {
                            requires_python.get_or_insert(RuntimeVersion {
                                value: v.to_string(),
                                source: rel.clone(),
                            });
                        }
                    }
                    Err(err) => reader.warn(rel, format!("TOML parse error: {err}")),
                }
            }
            "uv.lock" => {
                pm = Some(("uv", format!("{rel} present")));
            }
            "noxfile.py" => {
                if let Some(text) = reader.read(rel) {
                    parse_noxfile(&text, rel, reader, &mut seen, &mut deps);
                }
            }
            "tox.ini" => {
                if let Some(text) = reader.read(rel) {
                    parse_tox(&text, rel, reader, &mut seen, &mut deps);
                    if super::parent_dir(rel) == e.dir {
                        tox_test = tox_test_command(e, &text, all);
                    }
                }
            }
            "poetry.lock" if pm.as_ref().is_none_or(|(p, _)| *p != "uv") => {
                pm = Some(("poetry", format!("{rel} present")));
            }
            "pdm.lock" => {
                pm.get_or_insert(("pdm", format!("{rel} present")));
            }
            "Pipfile.lock" => {
                pm.get_or_insert(("pipenv", format!("{rel} present")));
            }
            ".python-version" => {
                if let Some(t) = reader.read(rel)
                    && let Some(v) = t
                        .lines()
                        .map(str::trim)
                        .find(|l| !l.is_empty() && !l.starts_with('#'))
                {
                    version = Some(RuntimeVersion {
                        value: v.to_string(),
                        source: rel.clone(),
                    });
                }
            }
            "runtime.txt" => {
                if let Some(t) = reader.read(rel) {
                    let v = t.trim();
                    if let Some(v) = v.strip_prefix("python-") {
                        version.get_or_insert(RuntimeVersion {
                            value: v.to_string(),
                            source: rel.clone(),
                        });
                    }
                }
            }
            n if n.ends_with(".txt") => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                let kind = if is_dev_name(n) {
                    DependencyKind::Dev
                } else {
                    DependencyKind::Prod
                };
                parse_requirements(&text, rel, kind, reader, &mut seen, &mut deps);
            }
            _ => {}
        }
    }
    let (pm, reason) = pm.unwrap_or(("pip", "no lock file or tool table: pip".to_string()));
    e.package_manager = pm.to_string();
    e.package_manager_reason = reason;
    e.runtime_version = version.or(requires_python);
    let pytest_declared = deps.iter().any(|d| d.name.eq_ignore_ascii_case("pytest"));
    e.test_command = tox_test.or_else(|| {
        test_command_from_files(e, pytest_configured || pytest_declared, &deps, all, reader)
    });
    e.dependencies = deps;
    e.package_name = import_package(e, name.as_deref(), all);
}

/// The importable top-level package of the project, checked against the files.
fn import_package(e: &Ecosystem, declared: Option<&str>, all: &BTreeSet<&str>) -> Option<String> {
    let exists = |pkg: &str| {
        ["", "src/"].iter().any(|pre| {
            all.contains(e.rel(&format!("{pre}{pkg}/__init__.py")).as_str())
                || all.contains(e.rel(&format!("{pre}{pkg}.py")).as_str())
        })
    };
    if let Some(d) = declared {
        let n = d.to_ascii_lowercase().replace(['-', '.'], "_");
        if exists(&n) {
            return Some(n);
        }
    }
    // Otherwise a top-level package directory (not tests).
    let prefixes = [e.rel(""), e.rel("src/")];
    let mut found: Vec<String> = all
        .iter()
        .filter_map(|p| {
            prefixes.iter().find_map(|pre| {
                let rest = p.strip_prefix(pre.as_str())?;
                let pkg = rest.strip_suffix("/__init__.py")?;
                (!pkg.contains('/') && !pkg.starts_with("test") && pkg != "docs")
                    .then(|| pkg.to_string())
            })
        })
        .collect();
    found.sort();
    found.into_iter().next()
}

const PYTEST: &str = "python -m pytest";

/// The project's test command when its `tox.ini` does not name one: pytest when
/// it is configured or declared (or a `conftest.py` exists); else a
/// `runtests.py` script, Django's `manage.py test`; else what the test files
/// use: `unittest` test cases only → `python -m unittest discover`, anything
/// else (bare `def test_…` functions, `import pytest`) → pytest.
fn test_command_from_files(
    e: &Ecosystem,
    pytest_known: bool,
    deps: &[Dependency],
    all: &BTreeSet<&str>,
    reader: &mut Reader<'_>,
) -> Option<String> {
    let has = |p: &str| all.contains(e.rel(p).as_str());
    let prefix = if e.dir == "." {
        String::new()
    } else {
        format!("{}/", e.dir)
    };
    let ours: Vec<&str> = all
        .iter()
        .copied()
        .filter(|p| p.starts_with(&prefix) && !p.contains("/.") && !p.starts_with('.'))
        .filter(|p| !p[prefix.len()..].split('/').any(|c| c == "node_modules"))
        .collect();
    if pytest_known || has("pytest.ini") || ours.iter().any(|p| file_name(p) == "conftest.py") {
        return Some(PYTEST.into());
    }
    if has("runtests.py") {
        return Some("python runtests.py".into());
    }
    let django = deps.iter().any(|d| d.name.eq_ignore_ascii_case("django"));
    if has("manage.py") && django {
        return Some("python manage.py test".into());
    }
    let tests: Vec<&str> = ours
        .iter()
        .copied()
        .filter(|p| {
            let n = file_name(p);
            n.ends_with(".py")
                && (n.starts_with("test_") || n.ends_with("_test.py") || n == "tests.py")
        })
        .collect();
    if tests.is_empty() {
        return None;
    }
    let mut unittest_only = true;
    for t in tests.iter().take(30) {
        let Some(text) = reader.read(t) else {
            continue;
        };
        let pytest_style = text.contains("import pytest")
            || text.contains("from pytest")
            || !text.contains("unittest");
        if pytest_style {
            unittest_only = false;
            break;
        }
    }
    if !unittest_only {
        return Some(PYTEST.into());
    }
    // `discover` recurses into packages only: a `tests/` folder that is not one
    // is its start directory.
    let start = ["tests", "test"].into_iter().find(|d| {
        tests
            .iter()
            .any(|t| t.starts_with(&format!("{prefix}{d}/")))
            && !has(&format!("{d}/__init__.py"))
    });
    Some(match start {
        Some(d) => format!("python -m unittest discover -s {d}"),
        None => "python -m unittest discover".into(),
    })
}

/// The test command of `tox.ini`'s `[testenv]` `commands`: the first line that
/// runs pytest, unittest or a script of the repository (through `coverage run`
/// too), as a command of the prepared environment (`python -m pytest tests`,
/// `python -m unittest -v`, `python runtests.py`); tox substitutions dropped.
fn tox_test_command(e: &Ecosystem, text: &str, all: &BTreeSet<&str>) -> Option<String> {
    let lines = tox_testenv_values(text, "commands");
    let exists = |p: &str| {
        let p = e.rel(p.trim_start_matches("./").trim_end_matches('/'));
        all.contains(p.as_str()) || all.iter().any(|f| f.starts_with(&format!("{p}/")))
    };
    lines.iter().find_map(|l| tox_line_command(l, &exists))
}

fn tox_line_command(line: &str, exists: &dyn Fn(&str) -> bool) -> Option<String> {
    // `py38: pytest` → `pytest`; `- cmd` (errors ignored) → `cmd`.
    let line = match line.split_once(": ") {
        Some((factors, rest)) if !factors.contains(' ') => rest,
        _ => line,
    };
    let words: Vec<&str> = line.trim_start_matches("- ").split_whitespace().collect();
    let mut w = words.as_slice();
    let python = |x: &str| {
        matches!(
            x,
            "python" | "python3" | "{envpython}" | "{envbindir}/python"
        )
    };
    if w.first().is_some_and(|x| python(x)) {
        w = &w[1..];
    }
    if w.first() == Some(&"-m") {
        w = &w[1..];
    }
    if w.starts_with(&["coverage", "run"]) {
        w = &w[2..];
        while let Some(opt) = w.first().filter(|o| o.starts_with('-') && **o != "-m") {
            let takes_value = !opt.contains('=')
                && matches!(
                    *opt,
                    "--rcfile" | "--source" | "--include" | "--omit" | "--context" | "--data-file"
                );
            w = &w[if takes_value { 2 } else { 1 }.min(w.len())..];
        }
        if w.first() == Some(&"-m") {
            w = &w[1..];
        }
    }
    let (&head, args) = w.split_first()?;
    let plain = |a: &&&str| !a.contains('{') && !a.contains('}');
    match head {
        "pytest" | "py.test" => {
            let paths: Vec<&str> = args
                .iter()
                .filter(plain)
                .filter(|a| !a.starts_with('-') && exists(a))
                .copied()
                .collect();
            let mut cmd = PYTEST.to_string();
            for p in paths {
                cmd.push(' ');
                cmd.push_str(p);
            }
            Some(cmd)
        }
        "unittest" => {
            let mut cmd = "python -m unittest".to_string();
            for a in args.iter().filter(plain) {
                if a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=".contains(c))
                {
                    cmd.push(' ');
                    cmd.push_str(a);
                }
            }
            Some(cmd)
        }
        s if s.ends_with(".py")
            && !s.contains('{')
            && !s.ends_with("setup.py")
            && exists(s)
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c)) =>
        {
            Some(format!("python {}", s.trim_start_matches("./")))
        }
        _ => None,
    }
}

/// The lines of `key` in `tox.ini`'s `[testenv]`: the value after `key =` and
/// its indented continuation lines, comments and blank lines dropped.
fn tox_testenv_values(text: &str, key: &str) -> Vec<String> {
    let mut in_testenv = false;
    let mut in_key = false;
    let mut out = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_testenv = t == "[testenv]";
            in_key = false;
            continue;
        }
        if !in_testenv || t.is_empty() || t.starts_with('#') {
            continue;
        }
        if line.starts_with(' ') || line.starts_with('\t') {
            if in_key {
                out.push(t.to_string());
            }
            continue;
        }
        in_key = false;
        if let Some((k, v)) = t.split_once('=')
            && k.trim() == key
        {
            in_key = true;
            if !v.trim().is_empty() {
                out.push(v.trim().to_string());
            }
        }
    }
    out
}

/// `tox.ini` `[testenv]` `deps` (the simple cases): requirement lines, and
/// `-r{toxinidir}/file` includes; lines with other substitutions are skipped.
/// A factor-conditional line counts only when its factors are Python versions
/// (`py311: pytest` → `pytest`): `min: -r requirements/min.txt` or
/// `dev: https://…/main.tar.gz` belong to other environments of the matrix
/// (oldest pins, development heads), not to the one a plain run uses. Dev
/// dependencies.
fn parse_tox(
    text: &str,
    rel: &str,
    reader: &mut Reader<'_>,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<Dependency>,
) {
    for value in tox_testenv_values(text, "deps") {
        let value = value.as_str();
        if value.is_empty() {
            continue;
        }
        // `py38,py39: pytest<8` → `pytest<8`; `min: …` → skipped.
        let value = match value.split_once(": ") {
            Some((factors, dep)) if !factors.contains(' ') => {
                if !factors.split([',', '-']).all(is_python_factor) {
                    continue;
                }
                dep.trim()
            }
            _ => value,
        };
        if let Some(inc) = value.strip_prefix("-r") {
            let inc = inc.trim().replace("{toxinidir}/", "");
            if !inc.contains('{') {
                let inc_rel = super::join_rel(super::parent_dir(rel), &inc);
                if let Some(t) = reader.read(&inc_rel) {
                    parse_requirements(&t, &inc_rel, DependencyKind::Dev, reader, seen, out);
                }
            }
            continue;
        }
        if value.contains('{') || value.starts_with('-') {
            continue;
        }
        if let Some((name, spec, _)) = split_requirement(value) {
            out.push(dep(name, spec, DependencyKind::Dev, false, None, rel));
        }
    }
}

/// A tox factor naming a Python version: `py`, `py3`, `py311`, `pypy39`, `py3.12`.
fn is_python_factor(f: &str) -> bool {
    let f = f.trim();
    let rest = f
        .strip_prefix("pypy")
        .or_else(|| f.strip_prefix("py"))
        .unwrap_or("x");
    rest.chars().all(|c| c.is_ascii_digit() || c == '.')
}

/// `noxfile.py`: the `session.install(…)` string arguments of the test sessions
/// (a `def` whose name contains `test` or is `unit`), the simple cases:
/// requirement strings, `-r file` includes; the project itself (`.`, `-e .`) and
/// other options are left to the install line. Dev dependencies.
fn parse_noxfile(
    text: &str,
    rel: &str,
    reader: &mut Reader<'_>,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<Dependency>,
) {
    // The bodies of the test sessions, then their `session.install(…)` calls
    // (arguments may span lines).
    let mut in_test = false;
    let mut body = String::new();
    for line in text.lines() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("def ") {
            let name = rest.split('(').next().unwrap_or("").to_ascii_lowercase();
            in_test = name.contains("test") || name == "unit";
            continue;
        }
        let top_level = !line.starts_with(' ') && !line.starts_with('\t');
        if top_level && !t.is_empty() && !t.starts_with('@') && !t.starts_with('#') {
            in_test = false;
        }
        if in_test {
            body.push_str(t);
            body.push('\n');
        }
    }
    // The call's own arguments: what nested calls take
    // (`nox.project.dependency_groups(PYPROJECT, "test")`) is left out.
    let calls: Vec<String> = body
        .split("session.install(")
        .skip(1)
        .map(|rest| {
            let mut depth = 1;
            let mut own = String::new();
            for c in rest.chars() {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ if depth == 1 => own.push(c),
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
            }
            own
        })
        .collect();
    for args in calls {
        let words = py_strings(&args);
        let mut it = words.iter();
        while let Some(w) = it.next() {
            if w == "-r" || w == "--requirement" {
                if let Some(f) = it.next() {
                    let inc = super::join_rel(super::parent_dir(rel), f);
                    if let Some(t) = reader.read(&inc) {
                        // Declared through the noxfile: the install lists them (a
                        // requirements file elsewhere is not on its `-r` list).
                        let mut included = Vec::new();
                        parse_requirements(
                            &t,
                            &inc,
                            DependencyKind::Dev,
                            reader,
                            seen,
                            &mut included,
                        );
                        for mut d in included {
                            d.source = rel.to_string();
                            out.push(d);
                        }
                    }
                }
                continue;
            }
            // Options and their values (`--group test`, `-c constraints.txt`).
            if matches!(
                w.as_str(),
                "-c" | "--constraint"
                    | "-e"
                    | "--editable"
                    | "--group"
                    | "--extra"
                    | "-i"
                    | "--index-url"
                    | "--extra-index-url"
                    | "-f"
                    | "--find-links"
                    | "--python"
            ) {
                it.next();
                continue;
            }
            if w.starts_with('-') || w.starts_with('.') || w.contains('{') || w.contains('/') {
                continue;
            }
            if let Some((n, s, marker)) = split_requirement(w) {
                let mut d = dep(n, s, DependencyKind::Dev, false, None, rel);
                d.marker = marker;
                out.push(d);
            }
        }
    }
}

/// The Python string literals of `body` in order: `"…"` and `'…'`, each up to
/// its own closing quote (a marker such as `os_name == 'nt'` inside a
/// double-quoted requirement stays whole).
fn py_strings(body: &str) -> Vec<String> {
    let Ok(re) = regex::Regex::new(r#""([^"\n]*)"|'([^'\n]*)'"#) else {
        return Vec::new();
    };
    re.captures_iter(body)
        .filter_map(|c| c.get(1).or_else(|| c.get(2)))
        .map(|m| m.as_str().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A `setup.py` requirement string as a dependency, its marker kept.
fn setup_py_dep(
    req: &str,
    kind: DependencyKind,
    optional: bool,
    group: Option<String>,
    rel: &str,
) -> Option<Dependency> {
    let (n, s, marker) = split_requirement(req)?;
    let mut d = dep(n, s, kind, optional, group, rel);
    d.marker = marker;
    Some(d)
}

/// The body of the bracketed literal that opens at `open` (`[`, `(` or `{`),
/// nested brackets and quoted strings (`"requests[socks]"`) skipped.
fn literal_body(text: &str, open: usize) -> Option<&str> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    let mut quote: Option<u8> = None;
    let mut i = open;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) => {
                if b == b'\\' {
                    i += 1;
                } else if b == q {
                    quote = None;
                }
            }
            None => match b {
                b'"' | b'\'' => quote = Some(b),
                b'#' => {
                    // A comment runs to the end of the line.
                    i = text[i..].find('\n').map_or(bytes.len(), |n| i + n);
                    continue;
                }
                b'[' | b'(' | b'{' => depth += 1,
                b']' | b')' | b'}' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return text.get(open + 1..i);
                    }
                }
                _ => {}
            },
        }
        i += 1;
    }
    None
}

/// The literal a `setup()` keyword argument is given: written in place
/// (`install_requires=["a", "b"]`) or through a module-level variable
/// (`install_requires=INSTALL_REQUIRES` with `INSTALL_REQUIRES = [...]`
/// earlier). `None` for anything else (a function call, a file read).
fn setup_py_argument<'t>(text: &'t str, key: &str) -> Option<&'t str> {
    let re = regex::Regex::new(&format!(r"\b{key}\s*=\s*")).ok()?;
    for m in re.find_iter(text) {
        let rest = &text[m.end()..];
        let Some(first) = rest.chars().next() else {
            continue;
        };
        if matches!(first, '[' | '(' | '{') {
            return literal_body(text, m.end());
        }
        let ident: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if ident.is_empty() || ident == key {
            continue;
        }
        // The variable's own assignment: `NAME = [` (also `NAME: list = [`).
        let assign = regex::Regex::new(&format!(
            r"(?m)^\s*{}\s*(?::[^=\n]+)?=\s*[\[({{]",
            regex::escape(&ident)
        ))
        .ok()?;
        let a = assign.find(text)?;
        return literal_body(text, a.end() - 1);
    }
    None
}

fn parse_setup_py(text: &str, rel: &str, deps: &mut Vec<Dependency>, name: &mut Option<String>) {
    for (key, kind) in [
        ("install_requires", DependencyKind::Prod),
        ("tests_require", DependencyKind::Dev),
    ] {
        for req in setup_py_argument(text, key)
            .map(py_strings)
            .unwrap_or_default()
        {
            deps.extend(setup_py_dep(&req, kind, false, None, rel));
        }
    }
    if let Some(body) = setup_py_argument(text, "extras_require") {
        // "group": ["a", "b"], …
        for part in body.split(']') {
            let Some((g, list)) = part.split_once('[') else {
                continue;
            };
            let group = py_strings(g).into_iter().next();
            let kind = if group.as_deref().is_some_and(is_dev_name) {
                DependencyKind::Dev
            } else {
                DependencyKind::Prod
            };
            for req in py_strings(list) {
                deps.extend(setup_py_dep(&req, kind, true, group.clone(), rel));
            }
        }
    }
    if name.is_none()
        && let Some(c) = regex::Regex::new(r#"name\s*=\s*["']([^"']+)["']"#)
            .ok()
            .and_then(|re| re.captures(text).map(|c| c[1].to_string()))
    {
        *name = Some(c);
    }
}

fn parse_setup_cfg(text: &str, rel: &str, deps: &mut Vec<Dependency>, name: &mut Option<String>) {
    let mut section = String::new();
    let mut key = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            section = t[1..t.len() - 1].to_string();
            key.clear();
            continue;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let continuation = line.starts_with(' ') || line.starts_with('\t');
        let value = if !continuation {
            match t.split_once('=') {
                Some((k, v)) => {
                    key = k.trim().to_string();
                    v.trim()
                }
                None => continue,
            }
        } else {
            t
        };
        if section == "metadata" && key == "name" && !value.is_empty() && name.is_none() {
            *name = Some(value.to_string());
        }
        if value.is_empty() {
            continue;
        }
        let (kind, optional, group) = match (section.as_str(), key.as_str()) {
            ("options", "install_requires") => (DependencyKind::Prod, false, None),
            ("options", "tests_require") => (DependencyKind::Dev, false, None),
            ("options.extras_require", g) => (
                if is_dev_name(g) {
                    DependencyKind::Dev
                } else {
                    DependencyKind::Prod
                },
                true,
                Some(g.to_string()),
            ),
            _ => continue,
        };
        if let Some((n, s, _)) = split_requirement(value) {
            deps.push(dep(n, s, kind, optional, group, rel));
        }
    }
}

/// miniforge: `environment.yml` / `condaenv.yaml`.
pub(super) fn analyze_conda(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "conda".to_string();
    e.package_manager_reason = "conda environment file".to_string();
    let files = e.files.clone();
    for rel in &files {
        let n = file_name(rel);
        if !(n.starts_with("environment.") || n.starts_with("condaenv.")) {
            continue;
        }
        e.has_build_file = true;
        let Some(text) = reader.read(rel) else {
            continue;
        };
        let doc: serde_norway::Value = match serde_norway::from_str(&text) {
            Ok(d) => d,
            Err(err) => {
                reader.warn(rel, format!("YAML parse error: {err}"));
                continue;
            }
        };
        if let Some(name) = doc.get("name").and_then(|v| v.as_str()) {
            e.package_name.get_or_insert(name.to_string());
        }
        let Some(list) = doc.get("dependencies").and_then(|v| v.as_sequence()) else {
            continue;
        };
        for item in list {
            if let Some(s) = item.as_str() {
                let s = s.trim();
                let s = s.split_once("::").map(|(_, r)| r).unwrap_or(s);
                let end = s.find(|c: char| "=<>!~ ".contains(c)).unwrap_or(s.len());
                let (name, spec) = (&s[..end], s[end..].trim());
                let spec = (!spec.is_empty()).then(|| spec.to_string());
                if name == "python" {
                    if let Some(v) = &spec {
                        e.runtime_version = Some(RuntimeVersion {
                            value: v.trim_start_matches('=').to_string(),
                            source: rel.clone(),
                        });
                    }
                    continue;
                }
                e.dependencies.push(dep(
                    name.to_string(),
                    spec,
                    DependencyKind::Prod,
                    false,
                    None,
                    rel,
                ));
            } else if let Some(pip) = item.get("pip").and_then(|v| v.as_sequence()) {
                for p in pip.iter().filter_map(|v| v.as_str()) {
                    if let Some((n, s, _)) = split_requirement(p) {
                        e.dependencies.push(dep(
                            n,
                            s,
                            DependencyKind::Prod,
                            false,
                            Some("pip".into()),
                            rel,
                        ));
                    }
                }
            }
        }
    }
    if e.dependencies.iter().any(|d| d.name == "pytest") {
        e.test_command = Some("python -m pytest".to_string());
    }
}

/// The requirement strings of PEP 735 group `name`, its `{include-group = "…"}`
/// entries expanded (a cycle or an unknown group contributes nothing).
fn expand_group(groups: &toml::Table, name: &str, seen: &mut Vec<String>) -> Vec<toml::Value> {
    if seen.iter().any(|s| s == name) {
        return Vec::new();
    }
    seen.push(name.to_string());
    let mut out = Vec::new();
    for item in groups
        .get(name)
        .and_then(|v| v.as_array())
        .into_iter()
        .flatten()
    {
        match item {
            toml::Value::String(_) => out.push(item.clone()),
            toml::Value::Table(t) => {
                if let Some(inc) = t.get("include-group").and_then(|v| v.as_str()) {
                    out.extend(expand_group(groups, inc, seen));
                }
            }
            _ => {}
        }
    }
    seen.pop();
    out
}
