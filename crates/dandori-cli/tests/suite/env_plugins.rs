//! Ecosystem plugins (seed 002 §13.2) on the dandori binary: the Ruby (Bundler)
//! and PHP (Composer) plugins shipped in `plugins/` prepare a real Bundler and a
//! real Composer repository — detect, setup, verify, then the project's own tests
//! through `env exec` — under bubblewrap and the Landlock fallback, installing
//! from a gem source and a Composer repository served from 127.0.0.1; the
//! minimal plugin of docs/environment.md runs as a repository's own plugin only
//! once the repository is trusted; an answer outside the protocol is named.
//!
//! Needs `ruby`, `bundle`, `gem`, `php` and `composer` (scripts/test.sh installs
//! them) and bwrap (target/test-tools).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use dandori_test_support::PackageIndex;
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn test_tools() -> PathBuf {
    std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/test-tools"))
}

fn require_tools() {
    for tool in ["ruby", "bundle", "gem", "php", "composer"] {
        let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .any(|d| d.join(tool).is_file());
        assert!(
            found,
            "`{tool}` not found: run the tests with ./scripts/test.sh, which installs ruby, bundler, php-cli and composer"
        );
    }
}

fn sh(cwd: &Path, argv: &[&str]) {
    let out = Command::new(argv[0])
        .args(&argv[1..])
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    assert!(
        out.status.success(),
        "{argv:?} in {}: {}{}",
        cwd.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn write(root: &Path, files: &[(&str, String)]) {
    for (path, text) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
    }
}

/// A gem source (`gems/`: `fixture_fmt` 1.2.0, built with `gem build` and indexed
/// with `gem generate_index`) and a Composer repository (`composer/`:
/// `dandori/fixture-fmt` 1.2.0 as a tar dist), started once.
fn registry() -> &'static PackageIndex {
    static INDEX: std::sync::OnceLock<(tempfile::TempDir, PackageIndex)> =
        std::sync::OnceLock::new();
    &INDEX
        .get_or_init(|| {
            require_tools();
            let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
            let index = PackageIndex::start(&dir.path().join("served"));
            let root = index.root().to_path_buf();
            // The gem.
            let src = dir.path().join("gem-src");
            write(
                &src,
                &[
                    (
                        "fixture_fmt.gemspec",
                        "Gem::Specification.new do |s|\n  s.name = \"fixture_fmt\"\n  s.version = \"1.2.0\"\n  s.summary = \"Formats amounts\"\n  s.authors = [\"dandori\"]\n  s.license = \"MIT\"\n  s.files = [\"lib/fixture_fmt.rb\"]\nend\n".into(),
                    ),
                    (
                        "lib/fixture_fmt.rb",
                        "module FixtureFmt\n  def self.money(x) = format(\"%.2f\", x)\nend\n".into(),
                    ),
                ],
            );
            sh(&src, &["gem", "build", "--silent", "fixture_fmt.gemspec"]);
            std::fs::create_dir_all(root.join("gems/gems")).unwrap();
            std::fs::copy(
                src.join("fixture_fmt-1.2.0.gem"),
                root.join("gems/gems/fixture_fmt-1.2.0.gem"),
            )
            .unwrap();
            let gems = root.join("gems").display().to_string();
            sh(&src, &["gem", "generate_index", "--directory", &gems]);
            // The Composer package.
            let pkg = dir.path().join("composer-src");
            write(
                &pkg,
                &[
                    (
                        "composer.json",
                        r#"{"name": "dandori/fixture-fmt", "version": "1.2.0", "autoload": {"psr-4": {"Dandori\\FixtureFmt\\": "src/"}}}"#.into(),
                    ),
                    (
                        "src/Money.php",
                        "<?php\nnamespace Dandori\\FixtureFmt;\nfinal class Money { public static function format(float $x): string { return number_format($x, 2, '.', ''); } }\n".into(),
                    ),
                ],
            );
            std::fs::create_dir_all(root.join("composer/dist")).unwrap();
            let tar = root.join("composer/dist/fixture-fmt-1.2.0.tar");
            sh(
                &pkg,
                &["tar", "-cf", &tar.display().to_string(), "composer.json", "src"],
            );
            let packages = serde_json::json!({"packages": {"dandori/fixture-fmt": {"1.2.0": {
                "name": "dandori/fixture-fmt",
                "version": "1.2.0",
                "type": "library",
                "dist": {"type": "tar", "url": index.url("composer/dist/fixture-fmt-1.2.0.tar")},
                "autoload": {"psr-4": {"Dandori\\FixtureFmt\\": "src/"}}
            }}}});
            std::fs::write(root.join("composer/packages.json"), packages.to_string()).unwrap();
            (dir, index)
        })
        .1
}

/// A Bundler project whose test needs the gem from the local source.
fn ruby_repo() -> Vec<(&'static str, String)> {
    vec![
        (
            "Gemfile",
            format!(
                "source \"{}\"\n\ngem \"fixture_fmt\", \"~> 1.2\"\n",
                registry().url("gems/")
            ),
        ),
        (
            "lib/calc.rb",
            "require \"fixture_fmt\"\n\nmodule Calc\n  def self.total(items) = FixtureFmt.money(items.sum)\nend\n"
                .into(),
        ),
        (
            "test/calc_test.rb",
            "require_relative \"../lib/calc\"\n\ngot = Calc.total([1, 2.5])\nraise \"total: #{got}\" unless got == \"3.50\"\nputs \"1 test passed\"\n"
                .into(),
        ),
    ]
}

/// A Composer project (packagist.org off, the local repository on) whose
/// `composer test` script needs the package.
fn php_repo() -> Vec<(&'static str, String)> {
    let composer = serde_json::json!({
        "name": "acme/calc",
        "require": {"php": ">=8.1", "dandori/fixture-fmt": "^1.2"},
        "repositories": [{"type": "composer", "url": registry().url("composer")}, {"packagist.org": false}],
        "config": {"secure-http": false},
        "autoload": {"psr-4": {"Acme\\Calc\\": "src/"}},
        "scripts": {"test": "php tests/run.php"}
    });
    vec![
        ("composer.json", serde_json::to_string_pretty(&composer).unwrap()),
        (
            "src/Calc.php",
            "<?php\nnamespace Acme\\Calc;\n\nuse Dandori\\FixtureFmt\\Money;\n\nfinal class Calc { public static function total(array $xs): string { return Money::format(array_sum($xs)); } }\n"
                .into(),
        ),
        (
            "tests/run.php",
            "<?php\nrequire __DIR__ . '/../vendor/autoload.php';\n$got = Acme\\Calc\\Calc::total([1, 2.5]);\nif ($got !== '3.50') { fwrite(STDERR, \"total: $got\\n\"); exit(1); }\necho \"1 test passed\\n\";\n"
                .into(),
        ),
    ]
}

/// A fresh HOME whose user config names `plugin_paths`, and a git repository of
/// `files`.
struct Cell {
    _dir: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
    env: BTreeMap<String, String>,
}

fn cell(files: &[(&str, String)], plugin_paths: &[PathBuf]) -> Cell {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let config = home.join(".config/dandori");
    std::fs::create_dir_all(&config).unwrap();
    if !plugin_paths.is_empty() {
        let paths: Vec<String> = plugin_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        std::fs::write(
            config.join("config.yaml"),
            format!(
                "planning:\n  environment_setup:\n    plugins:\n      paths: {}\n",
                serde_json::to_string(&paths).unwrap()
            ),
        )
        .unwrap();
    }
    let mut env = BTreeMap::new();
    for var in ["USER", "LOGNAME", "LANG", "LC_ALL", "TZ"] {
        if let Ok(v) = std::env::var(var) {
            env.insert(var.to_string(), v);
        }
    }
    env.insert("HOME".into(), home.display().to_string());
    let bwrap = test_tools().join("bubblewrap/usr/bin");
    let path = std::env::join_paths(std::iter::once(bwrap).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    env.insert("PATH".into(), path.into_string().unwrap());
    // As root (CI), Composer's scripts need this, as for any user running as root.
    env.insert("COMPOSER_ALLOW_SUPERUSER".into(), "1".into());
    env.insert("GIT_AUTHOR_NAME".into(), "t".into());
    env.insert("GIT_AUTHOR_EMAIL".into(), "t@example.invalid".into());
    env.insert("GIT_COMMITTER_NAME".into(), "t".into());
    env.insert("GIT_COMMITTER_EMAIL".into(), "t@example.invalid".into());
    let repo = dir.path().join("repo");
    write(&repo, files);
    for argv in [
        &["git", "init", "-q", "-b", "main"][..],
        &["git", "add", "-A"],
        &["git", "commit", "-q", "-m", "init"],
    ] {
        let ok = Command::new(argv[0])
            .args(&argv[1..])
            .current_dir(&repo)
            .env_clear()
            .envs(&env)
            .status()
            .unwrap()
            .success();
        assert!(ok, "{argv:?}");
    }
    Cell {
        _dir: dir,
        home,
        repo,
        env,
    }
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn both(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

fn dandori(c: &Cell, args: &[&str]) -> Ran {
    let out = Command::new(BIN)
        .args(args)
        .current_dir(&c.repo)
        .env_clear()
        .envs(&c.env)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn detect_json(c: &Cell) -> Value {
    let repo = c.repo.display().to_string();
    let ran = dandori(c, &["env", "detect", "--repo", &repo, "--json"]);
    assert_eq!(ran.code, 0, "env detect: {}", ran.both());
    serde_json::from_str(&ran.stdout).unwrap()
}

/// detect → setup → verify → the project's own tests, under `mech`.
fn journey(eco: &str, files: &[(&str, String)], test: &[&str], mech: &str) {
    let plugin = workspace()
        .join("plugins")
        .join(eco)
        .join(format!("dandori-env-{eco}"))
        .canonicalize()
        .unwrap();
    let c = cell(files, &[workspace().join("plugins")]);
    let repo = c.repo.display().to_string();
    let detected = detect_json(&c);
    let selected = &detected["selected_environment"];
    assert_eq!(selected["name"], eco, "{detected:#}");
    assert_eq!(
        selected["plugin"].as_str(),
        Some(plugin.display().to_string().as_str()),
        "{eco}: the shipped plugin detected it: {detected:#}"
    );
    let manifest = if eco == "ruby" {
        "Gemfile"
    } else {
        "composer.json"
    };
    assert!(
        selected["detected_files"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == manifest),
        "{selected:#}"
    );

    // Seed 002 §3.5.1's return format: the files with their contents.
    let info = &detected["environment_info"];
    assert_eq!(info["environment_type"], eco, "{info:#}");
    assert!(
        info["detected_files"][manifest]
            .as_str()
            .unwrap()
            .contains("fixture"),
        "{info:#}"
    );
    assert!(
        info["dependencies"].to_string().contains("fixture"),
        "{info:#}"
    );
    assert_eq!(info["setup_commands"], selected["setup_commands"]);

    let setup = dandori(&c, &["env", "setup", "--repo", &repo, "--sandbox", mech]);
    assert_eq!(
        setup.code,
        0,
        "{eco} under {mech}: env setup: {}",
        setup.both()
    );
    let plugin_check = if eco == "ruby" {
        "success bundle list --name-only"
    } else {
        "success composer show --name-only"
    };
    assert!(
        setup.stdout.contains(plugin_check),
        "{eco} under {mech}: the plugin's verify_environment ran: {}",
        setup.both()
    );
    assert!(
        setup.stderr.contains(&format!("sandbox: {mech}")),
        "{}",
        setup.stderr
    );
    let setup_json: Value = serde_json::from_str(
        &std::fs::read_to_string(c.repo.join(".git/dandori/environment/setup.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(setup_json["overall_status"], "success", "{setup_json:#}");

    let verify = dandori(&c, &["env", "verify", "--repo", &repo, "--sandbox", mech]);
    assert_eq!(
        verify.code,
        0,
        "{eco} under {mech}: env verify: {}",
        verify.both()
    );
    assert!(verify.stdout.contains(plugin_check), "{}", verify.both());

    let mut args = vec!["env", "exec", "--repo", &repo, "--sandbox", mech, "--"];
    args.extend(test);
    let tests = dandori(&c, &args);
    assert_eq!(
        tests.code,
        0,
        "{eco} under {mech}: {test:?}: {}",
        tests.both()
    );
    assert!(tests.stdout.contains("1 test passed"), "{}", tests.both());
}

#[test]
fn ruby_plugin_prepares_a_bundler_repository_under_bubblewrap() {
    journey(
        "ruby",
        &ruby_repo(),
        &["bundle", "exec", "ruby", "test/calc_test.rb"],
        "bubblewrap",
    );
}

#[test]
fn ruby_plugin_prepares_a_bundler_repository_under_landlock() {
    journey(
        "ruby",
        &ruby_repo(),
        &["bundle", "exec", "ruby", "test/calc_test.rb"],
        "landlock",
    );
}

#[test]
fn php_plugin_prepares_a_composer_repository_under_bubblewrap() {
    journey("php", &php_repo(), &["composer", "test"], "bubblewrap");
}

#[test]
fn php_plugin_prepares_a_composer_repository_under_landlock() {
    journey("php", &php_repo(), &["composer", "test"], "landlock");
}

/// The fenced plugin of docs/environment.md's "A minimal plugin to copy".
fn minimal_plugin() -> String {
    let doc = std::fs::read_to_string(workspace().join("docs/environment.md")).unwrap();
    let start = doc.find("<!-- minimal-plugin -->\n```python\n").unwrap();
    let body = &doc[start..];
    let body = &body[body.find('\n').unwrap() + 1..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```\n").unwrap()].to_string()
}

fn install_plugin(dir: &Path, name: &str, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_repository_plugin_runs_only_once_the_repository_is_trusted() {
    let c = cell(&[("toy.txt", "a toy\n".to_string())], &[]);
    install_plugin(
        &c.repo.join(".dandori/plugins"),
        "dandori-env-toy",
        &minimal_plugin(),
    );
    let repo = c.repo.display().to_string();

    // Untrusted: not run, and said so.
    let untrusted = detect_json(&c);
    let warnings = untrusted["analysis"]["warnings"].to_string();
    assert!(
        warnings.contains("ENV_PLUGIN_UNTRUSTED") && warnings.contains("dandori trust"),
        "{untrusted:#}"
    );
    assert_ne!(untrusted["selected_environment"]["name"], "toy");

    let trust = dandori(&c, &["trust", &repo]);
    assert_eq!(trust.code, 0, "{}", trust.both());
    let trusted = detect_json(&c);
    let selected = &trusted["selected_environment"];
    assert_eq!(selected["name"], "toy", "{trusted:#}");
    assert_eq!(selected["setup_commands"][0], "touch toy.built");
    let toy = trusted["analysis"]["ecosystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "toy")
        .cloned()
        .unwrap();
    assert_eq!(toy["files"][0], "toy.txt", "{toy:#}");

    for mech in ["bubblewrap", "landlock"] {
        let _ = std::fs::remove_file(c.repo.join("toy.built"));
        let setup = dandori(
            &c,
            &[
                "env",
                "setup",
                "--repo",
                &repo,
                "--sandbox",
                mech,
                "--force",
            ],
        );
        assert_eq!(setup.code, 0, "{mech}: {}", setup.both());
        assert!(c.repo.join("toy.built").is_file(), "{}", setup.both());
        assert!(
            setup.stdout.contains("success toy.built exists"),
            "{mech}: {}",
            setup.both()
        );
    }
    assert!(c.home.join(".config/dandori/config.yaml").is_file());
}

#[test]
fn a_plugin_answer_outside_the_protocol_is_named_with_its_json_path() {
    let dir = tempfile::tempdir().unwrap();
    install_plugin(
        dir.path(),
        "dandori-env-broken",
        "#!/bin/sh\ncat >/dev/null\necho '{\"detected\": true, \"environment_type\": 5}'\n",
    );
    let c = cell(
        &[("requirements.txt", "requests\n".to_string())],
        &[dir.path().to_path_buf()],
    );
    let detected = detect_json(&c);
    let warnings = detected["analysis"]["warnings"].to_string();
    assert!(
        warnings.contains("ENV_PLUGIN_INVALID")
            && warnings.contains("$.environment_type")
            && warnings.contains("dandori-env-broken"),
        "{detected:#}"
    );
    // The built-in ecosystems still count.
    assert_eq!(detected["selected_environment"]["name"], "python");
}

/// Seed 002 §11.3: with `network.allowed_domains`, a setup command that reaches
/// for a host outside the list (the Gemfile's source) is refused by dandori's
/// proxy, and the setup is blocked with the host named.
#[test]
fn a_setup_reaching_a_host_outside_allowed_domains_is_refused_with_the_host_named() {
    let mut files = ruby_repo();
    files[0].1 =
        "source \"http://gems.outside.example/\"\n\ngem \"fixture_fmt\", \"~> 1.2\"\n".into();
    let c = cell(&files, &[workspace().join("plugins")]);
    let repo = c.repo.display().to_string();
    let setup = dandori(
        &c,
        &[
            "-c",
            r#"planning.environment_setup.network.allowed_domains=["rubygems.org"]"#,
            "env",
            "setup",
            "--repo",
            &repo,
            "--sandbox",
            "bubblewrap",
        ],
    );
    assert_eq!(setup.code, 3, "blocked: {}", setup.both());
    assert!(
        setup.stderr.contains("ENV_NETWORK_DOMAIN_REFUSED")
            && setup.stderr.contains("`gems.outside.example`"),
        "{}",
        setup.both()
    );
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(c.repo.join(".git/dandori/environment/setup.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(record["blocked"]["code"], "ENV_NETWORK_DOMAIN_REFUSED");
    assert!(
        record["blocked"]["reason"]
            .as_str()
            .unwrap()
            .contains("gems.outside.example"),
        "{record:#}"
    );
    // The listed host and the ecosystem's registries were allowed.
    let allowed = record["network_allowed"].to_string();
    assert!(
        allowed.contains("\"rubygems.org\"") && allowed.contains("index.rubygems.org"),
        "{allowed}"
    );
    // One attempt: a refused host is not retried.
    let installs = record["commands_executed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["command"] == "bundle install")
        .count();
    assert_eq!(installs, 1, "{record:#}");
}

/// A registry on 127.0.0.1 stays reachable with a filter on (loopback is not
/// proxied), and `resources.*` sets the limits setup commands run under.
#[test]
fn allowed_domains_keep_loopback_registries_and_resources_set_the_limits() {
    let c = cell(&ruby_repo(), &[workspace().join("plugins")]);
    let repo = c.repo.display().to_string();
    let setup = dandori(
        &c,
        &[
            "-c",
            r#"planning.environment_setup.network.allowed_domains=["example.org"]"#,
            "-c",
            "planning.environment_setup.resources.memory_limit=3g",
            "-c",
            "planning.environment_setup.resources.disk_limit=512m",
            "-c",
            "planning.environment_setup.resources.cpu_limit=1",
            "-c",
            "planning.environment_setup.resources.timeout_seconds=600",
            "env",
            "setup",
            "--repo",
            &repo,
            "--sandbox",
            "landlock",
        ],
    );
    assert_eq!(setup.code, 0, "{}", setup.both());
    let record: Value = serde_json::from_str(
        &std::fs::read_to_string(c.repo.join(".git/dandori/environment/setup.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["limits_applied"],
        serde_json::json!([
            format!("RLIMIT_DATA={}", 3u64 << 30),
            "RLIMIT_CPU=600",
            format!("RLIMIT_FSIZE={}", 512u64 << 20)
        ]),
        "{record:#}"
    );

    // A size the seed's format does not allow is a config error naming the key.
    let bad = dandori(
        &c,
        &[
            "-c",
            "planning.environment_setup.resources.memory_limit=4x",
            "env",
            "detect",
            "--repo",
            &repo,
        ],
    );
    assert_eq!(bad.code, 2, "{}", bad.both());
    assert!(
        bad.stderr.contains("CONFIG_INVALID")
            && bad
                .stderr
                .contains("planning.environment_setup.resources.memory_limit")
            && bad.stderr.contains("unknown unit"),
        "{}",
        bad.stderr
    );
}
