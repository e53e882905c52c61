//! Environment files of seed 002 §3.2 (and §8.1 `analysis.file_patterns`).

use serde::{Deserialize, Serialize};

use super::{FileEntry, ScanOptions};

/// Collection priority from the seed 002 §3.2 tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    High,
    Medium,
    Low,
}

/// A detected environment file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvironmentFile {
    pub path: String,
    /// `python`, `node`, `java`, `go`, `rust` or `common` (the seed's groups).
    pub ecosystem: String,
    /// What the file is for (seed 002 §3.2 用途), in English.
    pub purpose: String,
    pub priority: Priority,
    pub size: u64,
    /// Within `analysis.max_file_size`, so its contents may be analysed.
    pub within_size_limit: bool,
}

/// The seed 002 §3.2 row for a file name: (ecosystem, purpose, priority).
pub fn environment_file_kind(name: &str) -> Option<(&'static str, &'static str, Priority)> {
    use Priority::{High, Low, Medium};
    let row = match name {
        "requirements.txt" => ("python", "pip dependencies", High),
        "pyproject.toml" => ("python", "project settings and build system", High),
        "setup.py" => ("python", "package installation", Medium),
        "Pipfile" => ("python", "Pipenv dependencies", Medium),
        "poetry.lock" => ("python", "Poetry lock", Medium),
        "environment.yml" | "environment.yaml" | "condaenv.yaml" | "condaenv.yml" => {
            ("python", "Conda environment (Miniforge)", High)
        }
        "package.json" => ("node", "npm dependencies and scripts", High),
        "package-lock.json" => ("node", "npm lock", Medium),
        "yarn.lock" => ("node", "Yarn lock", Medium),
        "pnpm-lock.yaml" => ("node", "pnpm lock", Medium),
        "pom.xml" => ("java", "Maven dependencies", High),
        "build.gradle" => ("java", "Gradle dependencies", High),
        "build.gradle.kts" => ("java", "Gradle (Kotlin DSL) dependencies", High),
        "go.mod" => ("go", "Go module", High),
        "go.sum" => ("go", "Go dependency checksums", Medium),
        "Cargo.toml" => ("rust", "Cargo manifest", High),
        "Cargo.lock" => ("rust", "Cargo lock", Medium),
        "Dockerfile" => ("common", "Docker environment", Medium),
        "docker-compose.yml" | "docker-compose.yaml" => ("common", "Docker Compose", Medium),
        "Makefile" => ("common", "build and task automation", Medium),
        "README.md" => ("common", "setup instructions", Low),
        _ => {
            // requirements-dev.txt, requirements/test.txt and the like.
            if name.starts_with("requirements") && name.ends_with(".txt") {
                ("python", "pip dependencies", Medium)
            } else {
                return None;
            }
        }
    };
    Some(row)
}

pub(super) fn detect(files: &[FileEntry], options: &ScanOptions) -> Vec<EnvironmentFile> {
    files
        .iter()
        .filter(|f| f.depth <= options.env_max_search_depth)
        .filter_map(|f| {
            let name = f.path.rsplit('/').next().unwrap_or(&f.path);
            let in_requirements_dir = f.path.contains("requirements/") && name.ends_with(".txt");
            let (ecosystem, purpose, priority) =
                environment_file_kind(name).or(if in_requirements_dir {
                    Some(("python", "pip dependencies", Priority::Medium))
                } else {
                    None
                })?;
            Some(EnvironmentFile {
                path: f.path.clone(),
                ecosystem: ecosystem.to_string(),
                purpose: purpose.to_string(),
                priority,
                size: f.size,
                within_size_limit: f.size <= options.env_max_file_size,
            })
        })
        .collect()
}
