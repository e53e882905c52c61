//! The packaged artefacts of scripts/package.sh, installed the way users install
//! them: the npm wrapper and platform package into a fresh global prefix (offline,
//! from the tarballs), the Python wheel into a fresh virtual environment; each
//! installed `dandori` runs `--version`, the demo, finds the shipped Ruby
//! plugin, and has the Restate worker.
//!
//! The script builds with the dev profile here (a release build would take
//! minutes more), into a target directory of its own under target/tmp: the
//! binary the other tests run is not replaced while they run it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use dandori_test_support::openapi::test_tools;

use super::first_run::run_clean as installed;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(what: &str, o: &Output) {
    assert!(
        o.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// maturin from the test tools' venv (scripts/test.sh installs it).
fn maturin() -> PathBuf {
    let m = test_tools().join("venv/bin/maturin");
    assert!(
        m.is_file(),
        "{} is missing: run the tests with ./scripts/test.sh, which installs maturin from PyPI into target/test-tools/venv",
        m.display()
    );
    m
}

/// Runs scripts/package.sh with the dev profile; the artefacts' directory.
fn package(out: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("bash")
        .arg(root.join("scripts/package.sh"))
        .args(["--profile", "dev", "--out"])
        .arg(out)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("package-build"),
        )
        .env("CARGO_INCREMENTAL", "0")
        .env("MATURIN", maturin())
        .output()
        .expect("run scripts/package.sh");
    ok("scripts/package.sh", &o);
}

/// `tar -xzOf TGZ package/package.json`, parsed.
fn manifest(tgz: &Path) -> serde_json::Value {
    let o = Command::new("tar")
        .arg("-xzOf")
        .arg(tgz)
        .arg("package/package.json")
        .output()
        .unwrap();
    ok("tar", &o);
    serde_json::from_slice(&o.stdout).unwrap()
}

/// What every install must do: say its version, run the demo to the end with a
/// commit per step, pass a usage error's exit code through, and carry the
/// Restate worker (which checks its identity keys before it listens).
fn check_install(bin: &Path, dir: &Path, label: &str) {
    let v = installed(bin, dir, &["--version"]);
    ok(&format!("{label}: dandori --version"), &v);
    assert_eq!(
        text(&v.stdout).trim(),
        format!("dandori {VERSION}"),
        "{label}"
    );

    let demo = installed(bin, dir, &["demo", "demo-repo"]);
    ok(&format!("{label}: dandori demo"), &demo);
    let out = text(&demo.stdout);
    assert!(
        out.contains("demo agent, scripted, no model"),
        "{label}: {out}"
    );
    assert!(out.contains("Dandori-Step: S01"), "{label}: {out}");
    assert!(
        out.contains("completed: All steps are done."),
        "{label}: {out}"
    );
    let repo = dir.join("demo-repo");
    let runs: Vec<_> = std::fs::read_dir(repo.join(".dandori/runs/RQ-001"))
        .unwrap()
        .collect();
    assert_eq!(runs.len(), 1, "{label}");
    let log = Command::new("git")
        .args([
            "log",
            "--all",
            "--format=%(trailers:key=Dandori-Step,valueonly)",
        ])
        .current_dir(&repo)
        .output()
        .unwrap();
    ok("git log", &log);
    assert!(
        text(&log.stdout).contains("S01"),
        "{label}: {}",
        text(&log.stdout)
    );

    // The shipped plugins (share/dandori/plugins beside the binary's bin/): a
    // Bundler project is detected by the Ruby plugin, with no configuration.
    let ruby = dir.join("ruby-project");
    std::fs::create_dir_all(&ruby).unwrap();
    std::fs::write(
        ruby.join("Gemfile"),
        "source \"https://rubygems.org\"\n\ngem \"rake\"\n",
    )
    .unwrap();
    let detect = installed(bin, &ruby, &["env", "detect", "--json"]);
    ok(&format!("{label}: dandori env detect"), &detect);
    let detected: serde_json::Value = serde_json::from_slice(&detect.stdout).unwrap();
    let plugin = detected["selected_environment"]["plugin"]
        .as_str()
        .unwrap_or_default();
    assert!(
        plugin.ends_with("share/dandori/plugins/ruby/dandori-env-ruby"),
        "{label}: {detected:#}"
    );

    let usage = installed(bin, dir, &["no-such-command"]);
    assert_eq!(
        usage.status.code(),
        Some(2),
        "{label}: {}",
        text(&usage.stderr)
    );
    assert!(text(&usage.stderr).contains("USAGE_ERROR"), "{label}");

    let worker = installed(
        bin,
        dir,
        &[
            "worker",
            "--listen",
            "127.0.0.1:0",
            "--work-dir",
            "worker",
            "--identity-key",
            "not-a-key",
        ],
    );
    let err = text(&worker.stderr);
    assert_eq!(worker.status.code(), Some(2), "{label}: {err}");
    assert!(err.contains("RESTATE_IDENTITY_INVALID"), "{label}: {err}");
}

#[test]
fn npm_and_python_packages_install_and_run_dandori() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("artefacts");
    package(&out);

    // The npm packages: a platform package with the binary and the os/cpu/libc
    // npm chooses it by, and the wrapper whose bin is the shim.
    let platform = format!("dandori-{}-x64", std::env::consts::OS);
    let platform_tgz = out.join(format!("{platform}-{VERSION}.tgz"));
    let wrapper_tgz = out.join(format!("dandori-{VERSION}.tgz"));
    let p = manifest(&platform_tgz);
    assert_eq!(p["name"], platform.as_str());
    assert_eq!(p["os"], serde_json::json!(["linux"]));
    assert_eq!(p["cpu"], serde_json::json!(["x64"]));
    assert_eq!(p["libc"], serde_json::json!(["glibc"]));
    let w = manifest(&wrapper_tgz);
    assert_eq!(w["bin"]["dandori"], "bin/dandori.js");
    assert_eq!(w["optionalDependencies"][&platform], VERSION);

    // npm install -g into a fresh prefix, offline: from the two tarballs, with an
    // empty cache and a registry nothing listens on.
    let npm_dir = tmp.path().join("npm");
    std::fs::create_dir_all(&npm_dir).unwrap();
    std::fs::write(npm_dir.join("npmrc-user"), "").unwrap();
    std::fs::write(npm_dir.join("npmrc-global"), "").unwrap();
    let prefix = npm_dir.join("prefix");
    let o = Command::new("npm")
        .args([
            "install",
            "--global",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--prefix",
        ])
        .arg(&prefix)
        .arg(&platform_tgz)
        .arg(&wrapper_tgz)
        .env("npm_config_cache", npm_dir.join("cache"))
        .env("npm_config_userconfig", npm_dir.join("npmrc-user"))
        .env("npm_config_globalconfig", npm_dir.join("npmrc-global"))
        .env("npm_config_registry", "http://127.0.0.1:9/")
        .env("npm_config_update_notifier", "false")
        .output()
        .expect("npm (Node.js) on PATH");
    ok("npm install --global", &o);
    let shim = prefix.join("bin/dandori");
    assert!(
        std::fs::read_link(&shim)
            .unwrap()
            .ends_with("dandori/bin/dandori.js"),
        "the npm bin is the wrapper's shim"
    );
    check_install(&shim, &npm_dir, "npm");

    // Without the platform package the shim says what is missing.
    std::fs::remove_dir_all(prefix.join("lib/node_modules").join(&platform)).unwrap();
    let missing = installed(&shim, &npm_dir, &["--version"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        text(&missing.stderr).contains(&format!("the package {platform} with the binary")),
        "{}",
        text(&missing.stderr)
    );

    // The wheel: binary only (no Python code), for any Python 3, into a fresh venv.
    let wheels: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    let wheel_name = wheels[0]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(
        wheel_name.starts_with(&format!("dandori_cli-{VERSION}-py3-none-manylinux_"))
            && wheel_name.ends_with("_x86_64.whl"),
        "{wheel_name}"
    );
    let py_dir = tmp.path().join("py");
    std::fs::create_dir_all(&py_dir).unwrap();
    let venv = py_dir.join("venv");
    ok(
        "python3 -m venv",
        &Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .output()
            .expect("python3 on PATH"),
    );
    ok(
        "pip install the wheel",
        &Command::new(venv.join("bin/pip"))
            .args([
                "install",
                "--no-index",
                "--no-deps",
                "--disable-pip-version-check",
                "--quiet",
            ])
            .arg(&wheels[0])
            .output()
            .unwrap(),
    );
    check_install(&venv.join("bin/dandori"), &py_dir, "wheel");
}

/// A build without the `restate` feature (a plain `cargo install`) keeps the
/// commands and says how to get the worker.
#[cfg(not(feature = "restate"))]
#[test]
fn a_build_without_the_restate_feature_says_how_to_get_the_worker() {
    let tmp = tempfile::tempdir().unwrap();
    let o = installed(
        Path::new(env!("CARGO_BIN_EXE_dandori")),
        tmp.path(),
        &["worker", "--listen", "127.0.0.1:0", "--work-dir", "w"],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("RESTATE_NOT_BUILT: dandori worker needs the Restate worker"),
        "{err}"
    );
    assert!(err.contains("--features restate"), "{err}");
}
