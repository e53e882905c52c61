//! Per-test results from the real runners, each run as a user writes its
//! command (issue 36): jest, vitest, `node --test`, `go test` and Maven Surefire
//! on small real projects, in the command sandbox, through the runner's own
//! test-command path.
//! Each project has a passing test, a failing one and a skipped one in two
//! files, so jest and vitest print no per-test line of their own for the passing
//! file: the ids come from dandori's hooks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dandori_runner::evidence::{CommandRun, TestResults};
use dandori_runner::step::{TestCommand, run_test_command, sandbox_policy};
use pretty_assertions::assert_eq;

fn test_tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"))
}

/// jest and vitest as scripts/test.sh installs them.
fn test_runners() -> PathBuf {
    let dir = test_tools().join("test-runners/node_modules");
    assert!(
        dir.join(".bin/jest").is_file() && dir.join(".bin/vitest").is_file(),
        "jest and vitest not found in {}: run the tests with ./scripts/test.sh, which installs them",
        dir.display()
    );
    dir
}

fn on_path(tool: &str) -> bool {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|d| d.join(tool).is_file())
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// Runs `command` in `dir` as the runner runs a step's unit command: in the
/// sandbox (whichever mechanism works here), with the hooks of a run directory.
fn run_tests(dir: &Path, command: &str, extra_path: Option<&Path>) -> (CommandRun, String) {
    let run_dir = tempfile::tempdir().unwrap();
    let mut env = BTreeMap::new();
    let path = std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_string());
    let path = match extra_path {
        Some(p) => format!("{}:{path}", p.display()),
        None => path,
    };
    env.insert("PATH".to_string(), path);
    // The user's home, as a run has it: the sandbox puts a fresh one over it
    // (Java's `user.home`, where Maven keeps its repository, is the account's).
    let home = std::env::var("HOME").unwrap_or_else(|_| run_dir.path().display().to_string());
    env.insert("HOME".to_string(), home);
    let sandbox = dandori_exec::Sandbox::detect(
        &dandori_exec::SandboxOptions::new(dandori_exec::SandboxMode::Auto).env(&env),
    );
    // A machine without any sandbox runs the command unconfined, as `--sandbox off`.
    let sandbox = if sandbox.refusal().is_some() {
        dandori_exec::Sandbox::off()
    } else {
        sandbox
    };
    let log = run_dir.path().join("unit.log");
    let (_, run) = run_test_command(&TestCommand {
        sandbox: &sandbox,
        policy: &sandbox_policy(dir, run_dir.path()),
        dir,
        run_dir: run_dir.path(),
        command,
        env: &env,
        import_roots: &Default::default(),
        timeout: Duration::from_secs(600),
        log: &log,
        masker: &dandori_trace::Masker::default(),
    })
    .unwrap();
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    (run, text)
}

fn results(pairs: &[(&str, bool)]) -> TestResults {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// A project whose `node_modules` holds the test tools' packages (links, as a
/// workspace's hoisted install has them), with room for the runner's caches.
fn node_project(files: &[(&str, &str)], packages: &[&str]) -> tempfile::TempDir {
    let modules = test_runners();
    let d = tempfile::tempdir().unwrap();
    write(d.path(), files);
    let nm = d.path().join("node_modules");
    std::fs::create_dir_all(&nm).unwrap();
    for p in packages {
        std::os::unix::fs::symlink(modules.join(p), nm.join(p)).unwrap();
    }
    d
}

const SUM_CJS: &str = "module.exports = (a, b) => a + b;\n";

#[test]
fn jest_names_every_test_without_a_flag_or_a_config() {
    let p = node_project(
        &[
            (
                "package.json",
                r#"{"name": "calc", "private": true, "scripts": {"test": "jest"}}"#,
            ),
            ("sum.js", SUM_CJS),
            (
                "test/sum.test.js",
                "const sum = require('../sum');\ndescribe('sum', () => {\n  test('adds 1 + 2', () => { expect(sum(1, 2)).toBe(3); });\n  test('is wrong', () => { expect(sum(1, 2)).toBe(4); });\n  test.skip('later', () => {});\n});\n",
            ),
            (
                "test/other.test.js",
                "test('top level', () => { expect(1).toBe(1); });\n",
            ),
        ],
        &[],
    );
    let bin = test_runners().join(".bin");
    let (run, log) = run_tests(p.path(), "jest", Some(&bin));
    assert_eq!(run.exit_code, Some(1), "{log}");
    assert_eq!(
        run.tests,
        results(&[
            ("test/other.test.js > top level", true),
            ("test/sum.test.js > sum > adds 1 + 2", true),
            ("test/sum.test.js > sum > is wrong", false),
        ]),
        "{log}"
    );
    assert!(
        log.contains("dandori: 3 test result(s) from the JUnit report"),
        "{log}"
    );
}

#[test]
fn vitest_names_every_test_without_a_flag_or_a_config() {
    let p = node_project(
        &[
            (
                "package.json",
                r#"{"name": "calc", "private": true, "type": "module", "scripts": {"test": "vitest run"}}"#,
            ),
            ("sum.js", "export const sum = (a, b) => a + b;\n"),
            (
                "test/sum.test.js",
                "import { describe, test, expect } from 'vitest';\nimport { sum } from '../sum.js';\ndescribe('sum', () => {\n  test('adds 1 + 2', () => { expect(sum(1, 2)).toBe(3); });\n  test('is wrong', () => { expect(sum(1, 2)).toBe(4); });\n  test.skip('later', () => {});\n});\n",
            ),
            (
                "test/other.test.js",
                "import { test, expect } from 'vitest';\ntest('top level', () => { expect(1).toBe(1); });\n",
            ),
        ],
        &["vitest", "vite"],
    );
    let bin = test_runners().join(".bin");
    // As `npm test` runs it: the project's script.
    let (run, log) = run_tests(p.path(), "vitest run", Some(&bin));
    assert_eq!(run.exit_code, Some(1), "{log}");
    assert_eq!(
        run.tests,
        results(&[
            ("test/other.test.js > top level", true),
            ("test/sum.test.js > sum > adds 1 + 2", true),
            ("test/sum.test.js > sum > is wrong", false),
        ]),
        "{log}"
    );
    // Its summary is counted even though vitest colours it.
    assert_eq!(
        run.counted.map(|c| (c.ran, c.failed)),
        Some((3, 1)),
        "{log}"
    );
}

#[test]
fn node_test_names_every_test() {
    let p = tempfile::tempdir().unwrap();
    write(
        p.path(),
        &[
            ("package.json", r#"{"name": "calc", "private": true}"#),
            ("sum.js", SUM_CJS),
            (
                "test/sum.test.js",
                "const test = require('node:test');\nconst assert = require('node:assert');\nconst sum = require('../sum');\ntest.describe('sum', () => {\n  test('adds 1 + 2', () => assert.strictEqual(sum(1, 2), 3));\n  test('is wrong', () => assert.strictEqual(sum(1, 2), 4));\n  test('later', { skip: true }, () => {});\n});\n",
            ),
            (
                "test/other.test.js",
                "const test = require('node:test');\ntest('top level', () => {});\n",
            ),
        ],
    );
    let (run, log) = run_tests(p.path(), "node --test", None);
    assert_eq!(run.exit_code, Some(1), "{log}");
    assert_eq!(
        run.tests,
        results(&[
            ("sum > adds 1 + 2", true),
            ("sum > is wrong", false),
            ("top level", true),
        ]),
        "{log}"
    );
}

#[test]
fn go_test_names_every_test() {
    assert!(
        on_path("go"),
        "`go` not found: run the tests with ./scripts/test.sh, which installs golang-go"
    );
    let p = tempfile::tempdir().unwrap();
    write(
        p.path(),
        &[
            ("go.mod", "module example.com/calc\n\ngo 1.19\n"),
            (
                "calc.go",
                "package calc\n\nfunc Sum(a, b int) int { return a + b }\n",
            ),
            (
                "calc_test.go",
                "package calc\n\nimport \"testing\"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(1, 2) != 3 {\n\t\tt.Fatal(\"sum\")\n\t}\n}\n\nfunc TestWrong(t *testing.T) {\n\tif Sum(1, 2) != 4 {\n\t\tt.Fatal(\"wrong\")\n\t}\n}\n\nfunc TestLater(t *testing.T) { t.Skip(\"later\") }\n\nfunc TestTable(t *testing.T) {\n\tt.Run(\"zero\", func(t *testing.T) {})\n}\n",
            ),
        ],
    );
    // `go test ./...` as written: no -v, no -json.
    let (run, log) = run_tests(p.path(), "go test ./...", None);
    assert_eq!(run.exit_code, Some(1), "{log}");
    assert_eq!(
        run.tests,
        results(&[
            ("TestSum", true),
            ("TestTable", true),
            ("TestTable/zero", true),
            ("TestWrong", false),
        ]),
        "{log}"
    );
}

/// Maven as an offline Debian user sets it up: the project's `.mvn/` points
/// Maven at the Debian packages' repository (`/usr/share/maven-repo`), no
/// registry; `mvn test` as written. Surefire's reports name the tests.
#[test]
fn maven_surefire_names_every_test() {
    assert!(
        on_path("mvn")
            && Path::new("/usr/share/maven-repo/org/apache/maven/plugins/maven-surefire-plugin")
                .is_dir(),
        "`mvn` or Debian's Surefire not found: run the tests with ./scripts/test.sh, which installs maven, libsurefire-java, junit4 and the compiler and resources plugins"
    );
    let p = tempfile::tempdir().unwrap();
    write(
        p.path(),
        &[
            (
                "pom.xml",
                r#"<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>ex</groupId><artifactId>calc</artifactId><version>1.0</version>
  <properties>
    <maven.compiler.source>11</maven.compiler.source>
    <maven.compiler.target>11</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
    <dependency><groupId>junit</groupId><artifactId>junit</artifactId><version>4.13.2</version><scope>test</scope></dependency>
  </dependencies>
</project>
"#,
            ),
            (".mvn/maven.config", "--settings .mvn/settings.xml
"),
            (
                ".mvn/settings.xml",
                "<settings><mirrors><mirror><id>debian</id><mirrorOf>*</mirrorOf><url>file:///usr/share/maven-repo</url></mirror></mirrors></settings>
",
            ),
            (
                "src/main/java/ex/Calc.java",
                "package ex;
public class Calc { public static int sum(int a, int b) { return a + b; } }
",
            ),
            (
                "src/test/java/ex/CalcTest.java",
                "package ex;
import static org.junit.Assert.assertEquals;
import org.junit.Ignore;
import org.junit.Test;
public class CalcTest {
  @Test public void adds() { assertEquals(3, Calc.sum(1, 2)); }
  @Test public void isWrong() { assertEquals(4, Calc.sum(1, 2)); }
  @Ignore @Test public void later() {}
}
",
            ),
        ],
    );
    let (run, log) = run_tests(p.path(), "mvn -B test", None);
    assert_eq!(run.exit_code, Some(1), "{log}");
    assert_eq!(
        run.tests,
        results(&[("ex.CalcTest.adds", true), ("ex.CalcTest.isWrong", false)]),
        "{log}"
    );
    assert!(
        log.contains("dandori: 2 test result(s) from the JUnit report target/surefire-reports/TEST-ex.CalcTest.xml"),
        "{log}"
    );
}
