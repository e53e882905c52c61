//! Rust: Cargo.toml (dependencies, dev-, build-, target-specific, workspace),
//! rust-toolchain(.toml), `rust-version`.

use super::{Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name};

fn table_deps(
    t: Option<&toml::Value>,
    kind: DependencyKind,
    source: &str,
    out: &mut Vec<Dependency>,
) {
    let Some(t) = t.and_then(|v| v.as_table()) else {
        return;
    };
    for (name, v) in t {
        let (spec, optional) = match v {
            toml::Value::String(s) => (Some(s.clone()), false),
            toml::Value::Table(t) => (
                t.get("version")
                    .and_then(|v| v.as_str())
                    .map(str::to_string)
                    .or_else(|| {
                        t.get("path")
                            .and_then(|v| v.as_str())
                            .map(|p| format!("path {p}"))
                    })
                    .or_else(|| {
                        t.get("git")
                            .and_then(|v| v.as_str())
                            .map(|g| format!("git {g}"))
                    })
                    .or_else(|| {
                        t.get("workspace")
                            .and_then(|v| v.as_bool())
                            .filter(|b| *b)
                            .map(|_| "workspace".to_string())
                    }),
                t.get("optional").and_then(|v| v.as_bool()).unwrap_or(false),
            ),
            _ => (None, false),
        };
        out.push(Dependency {
            name: name.clone(),
            version_spec: spec,
            kind,
            optional,
            group: None,
            source: source.to_string(),
            marker: None,
        });
    }
}

pub(super) fn analyze(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "cargo".to_string();
    e.package_manager_reason = "Cargo.toml present".to_string();
    e.has_build_file = true;
    e.test_command = Some("cargo test".to_string());
    let files = e.files.clone();
    let mut toolchain = None;
    let mut rust_version = None;
    for rel in &files {
        match file_name(rel) {
            "Cargo.toml" => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                let doc: toml::Table = match text.parse() {
                    Ok(d) => d,
                    Err(err) => {
                        reader.warn(rel, format!("TOML parse error: {err}"));
                        continue;
                    }
                };
                table_deps(
                    doc.get("dependencies"),
                    DependencyKind::Prod,
                    rel,
                    &mut e.dependencies,
                );
                table_deps(
                    doc.get("dev-dependencies"),
                    DependencyKind::Dev,
                    rel,
                    &mut e.dependencies,
                );
                table_deps(
                    doc.get("build-dependencies"),
                    DependencyKind::Build,
                    rel,
                    &mut e.dependencies,
                );
                table_deps(
                    doc.get("workspace").and_then(|w| w.get("dependencies")),
                    DependencyKind::Prod,
                    rel,
                    &mut e.dependencies,
                );
                if let Some(targets) = doc.get("target").and_then(|v| v.as_table()) {
                    for body in targets.values() {
                        table_deps(
                            body.get("dependencies"),
                            DependencyKind::Prod,
                            rel,
                            &mut e.dependencies,
                        );
                        table_deps(
                            body.get("dev-dependencies"),
                            DependencyKind::Dev,
                            rel,
                            &mut e.dependencies,
                        );
                    }
                }
                let package = doc.get("package");
                if let Some(rv) = package
                    .and_then(|p| p.get("rust-version"))
                    .and_then(|v| v.as_str())
                    .or_else(|| {
                        doc.get("workspace")
                            .and_then(|w| w.get("package"))
                            .and_then(|p| p.get("rust-version"))
                            .and_then(|v| v.as_str())
                    })
                {
                    rust_version.get_or_insert(RuntimeVersion {
                        value: rv.to_string(),
                        source: rel.clone(),
                    });
                }
                if e.package_name.is_none() {
                    e.package_name = package
                        .and_then(|p| p.get("name"))
                        .and_then(|v| v.as_str())
                        .map(str::to_string);
                }
            }
            "rust-toolchain.toml" => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                match text.parse::<toml::Table>() {
                    Ok(doc) => {
                        if let Some(c) = doc
                            .get("toolchain")
                            .and_then(|t| t.get("channel"))
                            .and_then(|v| v.as_str())
                        {
                            toolchain = Some(RuntimeVersion {
                                value: c.to_string(),
                                source: rel.clone(),
                            });
                        }
                    }
                    Err(err) => reader.warn(rel, format!("TOML parse error: {err}")),
                }
            }
            "rust-toolchain" => {
                if let Some(t) = reader.read(rel) {
                    let line = t.lines().next().unwrap_or("").trim().to_string();
                    // The legacy file may also be TOML.
                    let value = match t.parse::<toml::Table>() {
                        Ok(doc) => doc
                            .get("toolchain")
                            .and_then(|t| t.get("channel"))
                            .and_then(|v| v.as_str())
                            .map(str::to_string)
                            .unwrap_or(line),
                        Err(_) => line,
                    };
                    if !value.is_empty() {
                        toolchain.get_or_insert(RuntimeVersion {
                            value,
                            source: rel.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    e.runtime_version = toolchain.or(rust_version);
}
