//! Java: Maven (pom.xml, mvnw) and Gradle (build.gradle(.kts), gradlew).

use regex::Regex;

use super::{Dependency, DependencyKind, Ecosystem, Reader, RuntimeVersion, file_name};

fn tag<'a>(body: &'a str, name: &str) -> Option<&'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let i = body.find(&open)? + open.len();
    let j = body[i..].find(&close)? + i;
    Some(body[i..j].trim())
}

pub(super) fn analyze(e: &mut Ecosystem, reader: &mut Reader<'_>) {
    let files = e.files.clone();
    let maven = files.iter().any(|f| file_name(f) == "pom.xml");
    let gradle = files
        .iter()
        .any(|f| file_name(f).starts_with("build.gradle"));
    e.has_build_file = maven || gradle;
    if maven {
        e.package_manager = "maven".to_string();
        e.package_manager_reason = "pom.xml present".to_string();
        if e.has_file("mvnw") {
            e.package_manager_flavor = Some("wrapper".to_string());
        }
        e.test_command = Some(
            if e.has_file("mvnw") {
                "./mvnw -q test"
            } else {
                "mvn -q test"
            }
            .to_string(),
        );
    } else {
        e.package_manager = "gradle".to_string();
        e.package_manager_reason = "build.gradle present".to_string();
        if e.has_file("gradlew") {
            e.package_manager_flavor = Some("wrapper".to_string());
        }
        e.test_command = Some(
            if e.has_file("gradlew") {
                "./gradlew test"
            } else {
                "gradle test"
            }
            .to_string(),
        );
    }
    let dep_block = Regex::new(r"(?s)<dependency>(.*?)</dependency>").ok();
    let gradle_dep = Regex::new(
        r#"(?m)^\s*(implementation|api|compileOnly|runtimeOnly|testImplementation|testCompileOnly|testRuntimeOnly|annotationProcessor|kapt)\s*\(?\s*["']([^"':\s]+):([^"':\s]+)(?::([^"'\s]+))?["']"#,
    )
    .ok();
    let java_ver_gradle = Regex::new(
        r#"(?:JavaLanguageVersion\.of\(\s*(\d+)\s*\)|sourceCompatibility\s*=\s*(?:JavaVersion\.VERSION_|["']?)(\d+(?:\.\d+)?)|jvmToolchain\(\s*(\d+)\s*\))"#,
    )
    .ok();
    for rel in &files {
        match file_name(rel) {
            "pom.xml" => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                if !text.contains("<project") {
                    reader.warn(rel, "not a Maven POM (no <project> element)");
                    continue;
                }
                if let Some(re) = &dep_block {
                    for c in re.captures_iter(&text) {
                        let body = &c[1];
                        let (Some(g), Some(a)) = (tag(body, "groupId"), tag(body, "artifactId"))
                        else {
                            continue;
                        };
                        let kind = match tag(body, "scope") {
                            Some("test") => DependencyKind::Dev,
                            Some("provided") => DependencyKind::Build,
                            _ => DependencyKind::Prod,
                        };
                        e.dependencies.push(Dependency {
                            name: format!("{g}:{a}"),
                            version_spec: tag(body, "version").map(str::to_string),
                            kind,
                            optional: tag(body, "optional") == Some("true"),
                            group: None,
                            source: rel.clone(),
                            marker: None,
                        });
                    }
                }
                if e.runtime_version.is_none() {
                    for key in [
                        "maven.compiler.release",
                        "maven.compiler.source",
                        "java.version",
                        "release",
                    ] {
                        if let Some(v) = tag(&text, key) {
                            e.runtime_version = Some(RuntimeVersion {
                                value: v.to_string(),
                                source: format!("{rel} <{key}>"),
                            });
                            break;
                        }
                    }
                }
                if e.package_name.is_none() {
                    // The project's own artifactId: the first one outside <parent>/<dependencies>.
                    let head = text.split("<dependencies>").next().unwrap_or("");
                    let head = match (head.find("<parent>"), head.find("</parent>")) {
                        (Some(i), Some(j)) if j > i => format!("{}{}", &head[..i], &head[j..]),
                        _ => head.to_string(),
                    };
                    e.package_name = tag(&head, "artifactId").map(str::to_string);
                }
            }
            n if n.starts_with("build.gradle") => {
                let Some(text) = reader.read(rel) else {
                    continue;
                };
                if let Some(re) = &gradle_dep {
                    for c in re.captures_iter(&text) {
                        let conf = &c[1];
                        let kind = if conf.starts_with("test") {
                            DependencyKind::Dev
                        } else if matches!(conf, "compileOnly" | "annotationProcessor" | "kapt") {
                            DependencyKind::Build
                        } else {
                            DependencyKind::Prod
                        };
                        e.dependencies.push(Dependency {
                            name: format!("{}:{}", &c[2], &c[3]),
                            version_spec: c.get(4).map(|m| m.as_str().to_string()),
                            kind,
                            optional: false,
                            group: Some(conf.to_string()),
                            source: rel.clone(),
                            marker: None,
                        });
                    }
                }
                if e.runtime_version.is_none()
                    && let Some(c) = java_ver_gradle.as_ref().and_then(|re| re.captures(&text))
                    && let Some(v) = c.get(1).or(c.get(2)).or(c.get(3))
                {
                    e.runtime_version = Some(RuntimeVersion {
                        value: v.as_str().to_string(),
                        source: rel.clone(),
                    });
                }
            }
            ".java-version" => {
                if let Some(t) = reader.read(rel) {
                    e.runtime_version = Some(RuntimeVersion {
                        value: t.trim().to_string(),
                        source: rel.clone(),
                    });
                }
            }
            _ => {}
        }
    }
}
