//! Environment analysis and selection, following the `dandori-env` contract
//! (`analyze_paths(root, &[paths]) -> EnvironmentAnalysis`,
//! `select_environment(&analysis, target_language) -> SelectedEnvironment`).
//!
//! Detection is the seed 002 §3.2 file table (depth ≤ `max_search_depth`) and
//! selection the seed 002 §4.2 rules: conda files → miniforge, requirements /
//! pyproject → python, package.json → node, pom.xml / build.gradle → java,
//! go.mod → go, Cargo.toml → rust; several → the one with the most detected files at
//! the shallowest depth; none → python (§4.2.3). Each comes with default setup,
//! verification and unit test commands.

use std::collections::BTreeMap;

use dandori_config::AnalysisConfig;
use dandori_plan::SelectedEnvironment;
use serde::Serialize;

use super::RepoScan;

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct EnvironmentAnalysis {
    /// Ecosystem → detected files (relative paths), shallowest first.
    pub detected: BTreeMap<String, Vec<String>>,
    /// Every detected file, sorted.
    pub detected_files: Vec<String>,
}

/// Rust is not in seed 002's table; dandori detects it too.
const RUST_FILES: &[&str] = &["Cargo.toml", "Cargo.lock"];

pub fn analyze_environment(scan: &RepoScan, config: &AnalysisConfig) -> EnvironmentAnalysis {
    let mut detected: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut all = Vec::new();
    for f in &scan.files {
        let depth = f.path.matches('/').count() as u32;
        if depth > config.max_search_depth {
            continue;
        }
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let mut eco: Option<&str> = None;
        for (ecosystem, names) in &config.file_patterns {
            if names.iter().any(|n| n == name) {
                eco = Some(ecosystem);
                break;
            }
        }
        if eco.is_none() && RUST_FILES.contains(&name) {
            eco = Some("rust");
        }
        if let Some(e) = eco {
            detected
                .entry(e.to_string())
                .or_default()
                .push(f.path.clone());
            all.push(f.path.clone());
        }
    }
    for v in detected.values_mut() {
        v.sort_by_key(|p| (p.matches('/').count(), p.clone()));
    }
    all.sort();
    EnvironmentAnalysis {
        detected,
        detected_files: all,
    }
}

fn has(files: &[String], name: &str) -> bool {
    files
        .iter()
        .any(|f| f == name || f.ends_with(&format!("/{name}")))
}

fn root_has(files: &[String], name: &str) -> bool {
    files.iter().any(|f| f == name)
}

/// Seed 002 §4.2 selection. `target_language` (the task's main language, §4.2.2 rule
/// 1) wins when it was detected.
pub fn select_environment(
    analysis: &EnvironmentAnalysis,
    target_language: Option<&str>,
) -> SelectedEnvironment {
    let py = analysis.detected.get("python").cloned().unwrap_or_default();
    let conda = py
        .iter()
        .any(|f| f.ends_with("environment.yml") || f.ends_with("condaenv.yaml"));
    let mut candidates: Vec<(&str, Vec<String>)> = Vec::new();
    if conda {
        candidates.push(("miniforge", py.clone()));
    } else if !py.is_empty() {
        candidates.push(("python", py.clone()));
    }
    for (eco, name) in [
        ("node", "node"),
        ("java", "java"),
        ("go", "go"),
        ("rust", "rust"),
    ] {
        if let Some(files) = analysis.detected.get(eco)
            && !files.is_empty()
        {
            candidates.push((name, files.clone()));
        }
    }
    let chosen = target_language
        .and_then(|t| candidates.iter().find(|(n, _)| *n == t))
        .or_else(|| {
            // Prefer manifests at the root, then the most detected files.
            candidates.iter().max_by_key(|(_, files)| {
                (
                    files.iter().filter(|f| !f.contains('/')).count(),
                    files.len(),
                )
            })
        })
        .cloned();
    let Some((name, files)) = chosen else {
        return defaults(
            "python",
            "環境ファイルが検出されなかったため、既定の python を選択 (seed 002 §4.2.3)"
                .to_string(),
            Vec::new(),
        );
    };
    let others: Vec<&str> = candidates
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| *n != name)
        .collect();
    let first = files.first().cloned().unwrap_or_default();
    let mut reason = format!("{first} が存在し、{name} プロジェクトと判定");
    if !others.is_empty() {
        reason.push_str(&format!("（他に {} も検出）", others.join(", ")));
    }
    defaults(name, reason, files)
}

fn defaults(name: &str, reason: String, detected_files: Vec<String>) -> SelectedEnvironment {
    let f = &detected_files;
    let (setup, verify, expected): (Vec<String>, Vec<&str>, Vec<(&str, &str)>) = match name {
        "miniforge" => {
            let env_file = f
                .iter()
                .find(|x| x.ends_with("environment.yml") || x.ends_with("condaenv.yaml"))
                .cloned()
                .unwrap_or_else(|| "environment.yml".to_string());
            (
                vec![format!("conda env create -f {env_file}")],
                vec!["conda --version", "python --version"],
                vec![
                    ("conda --version", "conda "),
                    ("python --version", "Python 3"),
                ],
            )
        }
        "node" => (
            vec![if has(f, "package-lock.json") {
                "npm ci".to_string()
            } else {
                "npm install".to_string()
            }],
            vec!["node --version", "npm --version"],
            vec![("node --version", "v"), ("npm --version", ".")],
        ),
        "java" => {
            if has(f, "pom.xml") {
                (
                    vec!["mvn -q -DskipTests dependency:resolve".to_string()],
                    vec!["java -version", "mvn -v"],
                    vec![("mvn -v", "Apache Maven")],
                )
            } else {
                (
                    vec!["gradle dependencies".to_string()],
                    vec!["java -version", "gradle --version"],
                    vec![("gradle --version", "Gradle")],
                )
            }
        }
        "go" => (
            vec!["go mod download".to_string()],
            vec!["go version"],
            vec![("go version", "go version go")],
        ),
        "rust" => (
            vec!["cargo fetch".to_string()],
            vec!["cargo --version"],
            vec![("cargo --version", "cargo ")],
        ),
        _ => {
            let mut setup = vec!["python -m pip install --upgrade pip".to_string()];
            if root_has(f, "requirements.txt") {
                setup.push("pip install -r requirements.txt".to_string());
            }
            if root_has(f, "pyproject.toml") || root_has(f, "setup.py") {
                setup.push("pip install -e .".to_string());
            }
            (
                setup,
                vec!["python --version", "pip list"],
                vec![("python --version", "Python 3"), ("pip list", "Package")],
            )
        }
    };
    SelectedEnvironment {
        name: name.to_string(),
        reason,
        detected_files,
        setup_commands: setup,
        verification_commands: verify.iter().map(|s| s.to_string()).collect(),
        expected_results: expected
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        extra: Default::default(),
    }
}

/// The environment's unit test command(s) for `commands.unit`.
pub fn unit_test_commands(env: &SelectedEnvironment, scan: &RepoScan) -> Vec<String> {
    let cmd = match env.name.as_str() {
        "node" => "npm test",
        "java" => {
            if scan.file("pom.xml").is_some() {
                "mvn -q test"
            } else if scan.file("gradlew").is_some() {
                "./gradlew test"
            } else {
                "gradle test"
            }
        }
        "go" => "go test ./...",
        "rust" => "cargo test",
        // python, miniforge and the default
        _ => "python -m pytest -q",
    };
    vec![cmd.to_string()]
}
