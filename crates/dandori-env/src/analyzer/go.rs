//! Go modules: go.mod (module, go / toolchain directives, require blocks).

use super::{Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name};

pub(super) fn analyze(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "go".to_string();
    e.package_manager_reason = "go.mod present".to_string();
    e.has_build_file = true;
    e.test_command = Some("go test ./...".to_string());
    let files = e.files.clone();
    for rel in files.iter().filter(|f| file_name(f) == "go.mod") {
        let Some(text) = reader.read(rel) else {
            continue;
        };
        let mut in_require = false;
        let mut go_version = None;
        let mut toolchain = None;
        for raw in text.lines() {
            let (line, comment) = match raw.split_once("//") {
                Some((l, c)) => (l.trim(), c.trim()),
                None => (raw.trim(), ""),
            };
            if in_require {
                if line == ")" {
                    in_require = false;
                    continue;
                }
            } else if let Some(rest) = line.strip_prefix("module ") {
                e.package_name.get_or_insert(rest.trim().to_string());
                continue;
            } else if let Some(v) = line.strip_prefix("go ") {
                go_version = Some(v.trim().to_string());
                continue;
            } else if let Some(v) = line.strip_prefix("toolchain ") {
                toolchain = Some(v.trim().trim_start_matches("go").to_string());
                continue;
            } else if line == "require (" {
                in_require = true;
                continue;
            }
            let req = if in_require {
                line
            } else if let Some(r) = line.strip_prefix("require ") {
                r.trim()
            } else {
                continue;
            };
            let mut parts = req.split_whitespace();
            if let (Some(name), Some(ver)) = (parts.next(), parts.next()) {
                let indirect = comment == "indirect";
                e.dependencies.push(Dependency {
                    name: name.to_string(),
                    version_spec: Some(ver.to_string()),
                    kind: DependencyKind::Prod,
                    optional: false,
                    group: indirect.then(|| "indirect".to_string()),
                    source: rel.clone(),
                    marker: None,
                });
            }
        }
        if e.runtime_version.is_none() {
            e.runtime_version = toolchain.or(go_version).map(|v| RuntimeVersion {
                value: v,
                source: rel.clone(),
            });
        }
    }
}
