use pretty_assertions::assert_eq;

use dandori_repo::scan::Priority;
use dandori_repo::{EnvironmentFile, ScanOptions, TestMapping, scan};

use super::support::write;

fn paths(s: &dandori_repo::RepoScan) -> Vec<&str> {
    s.files.iter().map(|f| f.path.as_str()).collect()
}

#[test]
fn respects_gitignore_and_default_skips() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, ".gitignore", "build/\n*.log\n");
    write(r, "src/app.py", "print('x')\n");
    write(r, "build/out.py", "x = 1\n");
    write(r, "debug.log", "log\n");
    write(r, "node_modules/left-pad/index.js", "module.exports = 1\n");
    write(r, "target/debug/x.rs", "fn main() {}\n");
    write(r, ".git/config", "[core]\n");
    write(r, "env1/pyvenv.cfg", "home = /usr\n");
    write(r, "env1/lib/site.py", "x = 1\n");
    write(r, ".hidden/secret.txt", "x\n");
    let s = scan(r, &ScanOptions::default()).unwrap();
    assert_eq!(paths(&s), vec!["src/app.py"]);
    assert!(!s.truncated);
}

#[test]
fn depth_and_size_limits_and_binary_detection() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "a/b/c/deep.py", "x = 1\n");
    write(r, "a/shallow.py", "x = 1\n");
    write(r, "big.txt", vec![b'a'; 5000]);
    write(r, "blob.dat2", b"abc\0def");
    write(r, "logo.png", b"not really a png");
    let opts = ScanOptions {
        max_depth: 2,
        max_file_size: 4096,
        ..ScanOptions::default()
    };
    let s = scan(r, &opts).unwrap();
    assert_eq!(paths(&s), vec!["a/shallow.py", "blob.dat2", "logo.png"]);
    assert_eq!(s.skipped.too_large, 1);
    let binary: Vec<(&str, bool)> = s
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.is_binary))
        .collect();
    assert_eq!(
        binary,
        vec![
            ("a/shallow.py", false),
            ("blob.dat2", true),
            ("logo.png", true)
        ]
    );
    assert_eq!(s.files[0].depth, 2);
}

#[test]
fn missing_root_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = scan(dir.path().join("nope"), &ScanOptions::default()).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.starts_with("REPO_NOT_FOUND") && msg.contains("nope"),
        "{msg}"
    );
}

#[test]
fn environment_files_follow_seed_tables_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "requirements.txt", "requests==2\n");
    write(r, "web/package.json", "{}\n");
    write(r, "web/package-lock.json", vec![b' '; 200_000]);
    write(r, "a/b/c/d/e/go.mod", "module x\n");
    write(r, "Makefile", "all:\n");
    let s = scan(r, &ScanOptions::default()).unwrap();
    let env =
        |path: &str, eco: &str, purpose: &str, p: Priority, size: u64, ok: bool| EnvironmentFile {
            path: path.into(),
            ecosystem: eco.into(),
            purpose: purpose.into(),
            priority: p,
            size,
            within_size_limit: ok,
        };
    assert_eq!(
        s.environment_files,
        vec![
            env(
                "Makefile",
                "common",
                "build and task automation",
                Priority::Medium,
                5,
                true
            ),
            env(
                "requirements.txt",
                "python",
                "pip dependencies",
                Priority::High,
                12,
                true
            ),
            env(
                "web/package-lock.json",
                "node",
                "npm lock",
                Priority::Medium,
                200_000,
                false
            ),
            env(
                "web/package.json",
                "node",
                "npm dependencies and scripts",
                Priority::High,
                3,
                true
            ),
        ],
        "go.mod at depth 6 is beyond analysis.max_search_depth 5"
    );
}

#[test]
fn readme_is_read_and_truncated() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    write(r, "README.md", "# 段取り\nplan the work\n");
    let opts = ScanOptions {
        readme_max_chars: 5,
        ..ScanOptions::default()
    };
    let s = scan(r, &opts).unwrap();
    let readme = s.readme.unwrap();
    assert_eq!(
        (readme.path.as_str(), readme.text.as_str(), readme.truncated),
        ("README.md", "# 段取り", true)
    );
}

#[test]
fn tests_map_to_sources() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for p in [
        "pkg/core/query.py",
        "pkg/core/tests/test_query.py",
        "pkg/other/query.py",
        "tests/other/test_query.py",
        "server/server.go",
        "server/server_test.go",
        "web/src/Button.tsx",
        "web/src/Button.test.tsx",
        "src/main/java/a/Parser.java",
        "src/test/java/a/ParserTest.java",
        "tests/test_unknown.py",
    ] {
        write(r, p, "x\n");
    }
    let s = scan(r, &ScanOptions::default()).unwrap();
    let m = |t: &str, src: &[&str]| TestMapping {
        test: t.into(),
        sources: src.iter().map(|s| (*s).to_string()).collect(),
    };
    assert_eq!(
        s.test_map,
        vec![
            m("pkg/core/tests/test_query.py", &["pkg/core/query.py"]),
            m("server/server_test.go", &["server/server.go"]),
            m(
                "src/test/java/a/ParserTest.java",
                &["src/main/java/a/Parser.java"]
            ),
            m("tests/other/test_query.py", &["pkg/other/query.py"]),
            m("web/src/Button.test.tsx", &["web/src/Button.tsx"]),
        ]
    );
    assert_eq!(
        s.tests_for("server/server.go"),
        vec!["server/server_test.go"]
    );
    assert_eq!(s.summary.test_files, 6);
}

#[test]
fn summary_and_tree_within_budget() {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    for i in 0..30 {
        write(r, &format!("lib/mod{i}/file{i}.py"), "x = 1\n");
    }
    write(r, "docs/index.md", "# docs\n");
    write(r, "setup.py", "setup()\n");
    let s = scan(r, &ScanOptions::default()).unwrap();
    assert_eq!(s.summary.total_files, 32);
    assert_eq!(s.summary.primary_language.as_deref(), Some("python"));
    assert_eq!(s.summary.by_extension[0].name, "py");
    assert_eq!(s.summary.top_directories[0].path, "lib");
    assert!(s.tree.starts_with("./ (32 files)\n"), "{}", s.tree);
    assert!(s.tree.contains("lib/ (30 files)"), "{}", s.tree);
    let small = scan(
        r,
        &ScanOptions {
            tree_max_chars: 120,
            ..ScanOptions::default()
        },
    )
    .unwrap();
    assert!(small.tree.len() <= 120, "{}", small.tree);
    assert!(small.tree.contains("lib/ (30 files)"), "{}", small.tree);
}
