//! Ruby (Bundler), PHP (Composer) and .NET (NuGet through `dotnet`), seed 002
//! §13.1.1, and Deno (`deno.json`): package manager, runtime version,
//! dependencies and test command.

use super::{Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name};

fn dep(
    name: &str,
    spec: Option<String>,
    kind: DependencyKind,
    group: Option<&str>,
    source: &str,
) -> Dependency {
    Dependency {
        name: name.to_string(),
        version_spec: spec,
        kind,
        optional: false,
        group: group.map(str::to_string),
        source: source.to_string(),
        marker: None,
    }
}

/// The first quoted string of `s` and the rest after it.
fn quoted(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let q = s.chars().next().filter(|c| *c == '\'' || *c == '"')?;
    let rest = &s[1..];
    let end = rest.find(q)?;
    Some((&rest[..end], &rest[end + 1..]))
}

/// `Gemfile`: `gem 'name', '~> 1.0'`, `group :test, :development do … end`;
/// `.ruby-version`.
pub(super) fn analyze_ruby(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "bundler".to_string();
    e.package_manager_reason = "Gemfile present".to_string();
    e.has_build_file = true;
    let files = e.files.clone();
    for rel in &files {
        match file_name(rel) {
            "Gemfile" | "gems.rb" => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                let mut group: Option<String> = None;
                for raw in text.lines() {
                    let line = raw.split('#').next().unwrap_or("").trim();
                    if let Some(g) = line.strip_prefix("group ") {
                        group = Some(
                            g.trim_end_matches("do")
                                .replace([':', ' '], "")
                                .trim()
                                .to_string(),
                        );
                    } else if line == "end" {
                        group = None;
                    } else if let Some(rest) = line.strip_prefix("gem ") {
                        let Some((name, rest)) = quoted(rest) else {
                            continue;
                        };
                        let spec = rest
                            .trim_start()
                            .strip_prefix(',')
                            .and_then(quoted)
                            .map(|(v, _)| v.to_string());
                        let dev = group
                            .as_deref()
                            .is_some_and(|g| g.contains("test") || g.contains("development"));
                        let kind = if dev {
                            DependencyKind::Dev
                        } else {
                            DependencyKind::Prod
                        };
                        e.dependencies
                            .push(dep(name, spec, kind, group.as_deref(), rel));
                        if name == "rspec" || name == "rspec-core" {
                            e.test_command = Some("bundle exec rspec".to_string());
                        }
                    } else if let Some(rest) = line.strip_prefix("ruby ")
                        && let Some((v, _)) = quoted(rest)
                    {
                        e.runtime_version.get_or_insert(RuntimeVersion {
                            value: v.to_string(),
                            source: rel.clone(),
                        });
                    }
                }
            }
            ".ruby-version" => {
                if let Some(t) = reader.read(rel) {
                    let v = t.trim().trim_start_matches("ruby-").to_string();
                    if !v.is_empty() {
                        e.runtime_version = Some(RuntimeVersion {
                            value: v,
                            source: rel.clone(),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    if e.test_command.is_none() {
        e.test_command = Some("bundle exec rake test".to_string());
    }
}

/// `composer.json`: `require` (prod; `php` is the runtime), `require-dev`.
pub(super) fn analyze_php(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "composer".to_string();
    e.package_manager_reason = "composer.json present".to_string();
    e.has_build_file = true;
    let files = e.files.clone();
    for rel in files.iter().filter(|f| file_name(f) == "composer.json") {
        let Some(text) = reader.read(rel) else {
            continue;
        };
        let doc: serde_json::Value = match serde_json::from_str(&text) {
            Ok(d) => d,
            Err(err) => {
                reader.warn(rel, format!("JSON parse error: {err}"));
                continue;
            }
        };
        if let Some(n) = doc.get("name").and_then(|v| v.as_str()) {
            e.package_name.get_or_insert(n.to_string());
        }
        for (key, kind) in [
            ("require", DependencyKind::Prod),
            ("require-dev", DependencyKind::Dev),
        ] {
            let Some(map) = doc.get(key).and_then(|v| v.as_object()) else {
                continue;
            };
            for (name, v) in map {
                let spec = v.as_str().map(str::to_string);
                if name == "php" {
                    if let Some(s) = spec {
                        e.runtime_version.get_or_insert(RuntimeVersion {
                            value: s,
                            source: rel.clone(),
                        });
                    }
                    continue;
                }
                if name.starts_with("ext-") {
                    continue;
                }
                if name == "phpunit/phpunit" {
                    e.test_command = Some("vendor/bin/phpunit".to_string());
                }
                e.dependencies.push(dep(name, spec, kind, None, rel));
            }
        }
    }
}

/// `*.csproj` / `*.fsproj`: `<PackageReference Include="X" Version="Y" />`
/// (test SDKs are dev); `global.json` `sdk.version`.
pub(super) fn analyze_dotnet(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "dotnet".to_string();
    e.package_manager_reason = "a .NET project or solution file".to_string();
    e.has_build_file = true;
    let re = regex::Regex::new(
        r#"<PackageReference\s+Include\s*=\s*"([^"]+)"(?:\s+Version\s*=\s*"([^"]*)")?"#,
    )
    .ok();
    let files = e.files.clone();
    for rel in &files {
        let n = file_name(rel);
        if n == "global.json" {
            if let Some(t) = reader.read(rel)
                && let Ok(v) = serde_json::from_str::<serde_json::Value>(&t)
                && let Some(sdk) = v.pointer("/sdk/version").and_then(|x| x.as_str())
            {
                e.runtime_version = Some(RuntimeVersion {
                    value: sdk.to_string(),
                    source: rel.clone(),
                });
            }
            continue;
        }
        if !(n.ends_with("proj")) {
            continue;
        }
        let Some(text) = reader.read(rel) else {
            continue;
        };
        let test_project = n.contains("Test") || text.contains("Microsoft.NET.Test.Sdk");
        if let Some(re) = &re {
            for c in re.captures_iter(&text) {
                let kind = if test_project {
                    DependencyKind::Dev
                } else {
                    DependencyKind::Prod
                };
                e.dependencies.push(dep(
                    &c[1],
                    c.get(2).map(|m| m.as_str().to_string()),
                    kind,
                    None,
                    rel,
                ));
            }
        }
    }
    e.test_command = Some("dotnet test".to_string());
}

/// Deno: `deno.json(c)` `imports` (`jsr:` / `npm:` specifiers) as dependencies;
/// tests run with `deno test`.
pub(super) fn analyze_deno(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    e.package_manager = "deno".to_string();
    e.package_manager_reason = "deno.json present".to_string();
    e.has_build_file = true;
    let files = e.files.clone();
    for rel in files
        .iter()
        .filter(|f| file_name(f).starts_with("deno.json"))
    {
        let Some(text) = reader.read(rel) else {
            continue;
        };
        // deno.jsonc may carry comments: only whole-line ones are dropped here.
        let json: String = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let doc: serde_json::Value = match serde_json::from_str(&json) {
            Ok(d) => d,
            Err(err) => {
                reader.warn(rel, format!("JSON parse error: {err}"));
                continue;
            }
        };
        for (alias, target) in doc
            .get("imports")
            .and_then(|v| v.as_object())
            .into_iter()
            .flatten()
        {
            let Some(spec) = target.as_str() else {
                continue;
            };
            // `jsr:@std/assert@^1.0.0`, `npm:chalk@5`: the package and its range.
            let bare = spec
                .strip_prefix("jsr:")
                .or_else(|| spec.strip_prefix("npm:"))
                .unwrap_or(spec)
                .trim_start_matches('/');
            let (name, version) = match bare.get(1..).and_then(|r| r.find('@')) {
                Some(i) => (&bare[..=i], Some(bare[i + 2..].to_string())),
                None => (bare, None),
            };
            let name = if name.is_empty() {
                alias.as_str()
            } else {
                name
            };
            e.dependencies
                .push(dep(name, version, DependencyKind::Prod, None, rel));
        }
    }
    e.test_command = Some("deno test".to_string());
}
