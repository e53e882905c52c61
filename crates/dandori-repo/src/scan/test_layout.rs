//! Which files are tests, and which sources they test (naming conventions:
//! `test_foo.py`, `foo_test.go`, `foo.test.ts`, `FooTest.java`, `foo_spec.rb`,
//! and `tests/` trees mirroring the source tree).

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use super::FileEntry;
use super::language::extension;

/// A test file and the source files it tests (best matches first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestMapping {
    pub test: String,
    pub sources: Vec<String>,
}

/// Directory names that hold tests.
const TEST_DIRS: &[&str] = &["tests", "test", "__tests__", "spec", "specs", "testing"];

/// True for files that are tests by name or by directory.
pub fn is_test_path(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    if test_subject_stem(name).is_some() || name == "conftest.py" || name == "tests.py" {
        return true;
    }
    let Some(ext) = extension(name) else {
        return false;
    };
    let code = matches!(
        ext,
        "py" | "js"
            | "jsx"
            | "ts"
            | "tsx"
            | "mjs"
            | "go"
            | "rs"
            | "java"
            | "kt"
            | "rb"
            | "php"
            | "cs"
    );
    if !code {
        return false;
    }
    let mut dirs = path.split('/').rev().skip(1);
    // `test/` is also a source package name in some Python projects (django.test),
    // so only `tests/`-style names count for Python.
    dirs.any(|d| TEST_DIRS.contains(&d) && !(ext == "py" && (d == "test" || d == "testing")))
}

/// Directories that hold nothing but tests and their data.
const TESTS_ONLY_DIRS: &[&str] = &["tests", "test", "__tests__"];

/// Whether `path` belongs to the tests, for a file that may not exist yet (a
/// plan's target): a test file by name or place ([`is_test_path`], names in any
/// case: `Test_Parser.py`), or any file under a directory that holds only tests
/// (`tests/`, `test/`, `__tests__/`, any case), fixtures and data included
/// (`tests/fixtures/users.json`, `test/helpers.py`). Wider than
/// [`is_test_path`], which decides what the scan counts as test code.
pub fn belongs_to_tests(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    is_test_path(path)
        || is_test_path(&lower)
        || lower
            .split('/')
            .rev()
            .skip(1)
            .any(|d| TESTS_ONLY_DIRS.contains(&d))
}

/// The name of the unit a test file tests: `test_foo.py` → `foo`, `foo_test.go` →
/// `foo`, `foo.test.ts` / `foo.spec.ts` → `foo`, `FooTest.java` → `Foo`,
/// `foo_spec.rb` → `foo`. `None` when the name is not a test name.
pub fn test_subject_stem(file_name: &str) -> Option<&str> {
    let (stem, ext) = file_name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    let candidates: [Option<&str>; 8] = [
        stem.strip_prefix("test_"),
        stem.strip_suffix("_test"),
        stem.strip_suffix("_tests"),
        stem.strip_suffix(".test"),
        stem.strip_suffix(".spec"),
        stem.strip_suffix("_spec"),
        if matches!(ext, "java" | "kt" | "scala" | "cs" | "php" | "swift") {
            stem.strip_suffix("Tests")
                .or_else(|| stem.strip_suffix("Test"))
        } else {
            None
        },
        if matches!(ext, "java" | "kt" | "cs") {
            stem.strip_prefix("Test")
                .filter(|s| s.chars().next().is_some_and(char::is_uppercase))
        } else {
            None
        },
    ];
    candidates.into_iter().flatten().find(|s| !s.is_empty())
}

/// Directory components that say nothing about which unit is tested.
fn is_neutral_dir(d: &str) -> bool {
    TEST_DIRS.contains(&d) || matches!(d, "src" | "lib" | "main" | "java" | "kotlin" | "unit")
}

pub(super) fn map_tests(files: &[FileEntry]) -> Vec<TestMapping> {
    // Source files by (stem, language).
    let mut by_stem: FxHashMap<(&str, Option<&str>), Vec<usize>> = FxHashMap::default();
    for (i, f) in files.iter().enumerate() {
        if f.is_test || f.is_binary {
            continue;
        }
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let stem = match name.split_once('.') {
            Some((s, _)) => s,
            None => continue,
        };
        by_stem
            .entry((stem, f.language.as_deref()))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for f in files.iter().filter(|f| f.is_test) {
        let name = f.path.rsplit('/').next().unwrap_or(&f.path);
        let Some(stem) = test_subject_stem(name) else {
            continue;
        };
        let lang = f.language.as_deref();
        // `foo.test.ts` may test `foo.tsx` or `foo.js`: look in the sibling
        // languages of the same family as well.
        let langs: &[Option<&str>] = match lang {
            Some("typescript") | Some("javascript") => &[Some("typescript"), Some("javascript")],
            _ => &[lang],
        };
        let candidates: Vec<usize> = langs
            .iter()
            .filter_map(|l| by_stem.get(&(stem, *l)))
            .flatten()
            .copied()
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let test_dirs: Vec<&str> = f
            .path
            .split('/')
            .rev()
            .skip(1)
            .filter(|d| !is_neutral_dir(d))
            .collect();
        let scored: Vec<(usize, usize)> = candidates
            .iter()
            .map(|&i| {
                let src_dirs: Vec<&str> = files[i]
                    .path
                    .split('/')
                    .rev()
                    .skip(1)
                    .filter(|d| !is_neutral_dir(d))
                    .collect();
                // Shared directory names, nearest first counts most.
                let shared = src_dirs.iter().filter(|d| test_dirs.contains(d)).count();
                (i, shared)
            })
            .collect();
        let best = scored.iter().map(|s| s.1).max().unwrap_or(0);
        let mut sources: Vec<String> = scored
            .iter()
            .filter(|s| s.1 == best)
            .map(|s| files[s.0].path.clone())
            .collect();
        // An ambiguous name with no directory evidence is no mapping.
        if best == 0 && sources.len() > 1 {
            continue;
        }
        sources.truncate(3);
        out.push(TestMapping {
            test: f.path.clone(),
            sources,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subject_stems() {
        assert_eq!(test_subject_stem("test_query.py"), Some("query"));
        assert_eq!(test_subject_stem("server_test.go"), Some("server"));
        assert_eq!(test_subject_stem("button.test.tsx"), Some("button"));
        assert_eq!(test_subject_stem("button.spec.ts"), Some("button"));
        assert_eq!(test_subject_stem("ParserTest.java"), Some("Parser"));
        assert_eq!(test_subject_stem("TestParser.java"), Some("Parser"));
        assert_eq!(test_subject_stem("user_spec.rb"), Some("user"));
        assert_eq!(test_subject_stem("query.py"), None);
        assert_eq!(test_subject_stem("Testing.java"), None);
        assert_eq!(test_subject_stem("test_.py"), None);
    }

    #[test]
    fn test_paths() {
        assert!(is_test_path("tests/queries/tests.py"));
        assert!(is_test_path("sympy/core/tests/test_basic.py"));
        assert!(is_test_path("src/__tests__/App.tsx"));
        assert!(is_test_path("src/test/java/a/FooTest.java"));
        assert!(is_test_path("src/test/java/a/Helper.java"));
        assert!(!is_test_path("django/test/testcases.py"));
        assert!(!is_test_path("src/query.py"));
        assert!(!is_test_path("tests/README.md"));
    }

    #[test]
    fn paths_that_belong_to_tests() {
        for yes in [
            // Test files, as the scan sees them.
            "tests/test_basic.py",
            "pkg/server_test.go",
            "web/src/button.spec.ts",
            "src/app.test.ts",
            "src/test/java/a/FooTest.java",
            "spec/models/user_spec.rb",
            "conftest.py",
            // Names in any case.
            "Test_Parser.py",
            "src/Widget.Test.tsx",
            // Anything under a directory of tests: data, fixtures, docs, helpers.
            "tests/README.md",
            "tests/fixtures/users.json",
            "Tests/Snapshots/page.snap",
            "pkg/test/helpers.py",
            "web/__tests__/data.txt",
        ] {
            assert!(belongs_to_tests(yes), "{yes}");
        }
        for no in [
            "src/query.py",
            "README.md",
            "docs/testing.md",
            "src/contest.py",
            "latest/notes.txt",
            // `spec/` also holds specifications: only its code is tests.
            "spec/openapi.yaml",
            "attestation/verify.rs",
        ] {
            assert!(!belongs_to_tests(no), "{no}");
        }
    }
}
