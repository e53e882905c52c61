//! The shipped plugins (`plugins/`: Ruby, PHP) found by an installed binary,
//! and every detection path going through the one ecosystem registry (seed 002
//! §13.2): a binary in the installed layout (`PREFIX/bin/dandori` beside
//! `PREFIX/share/dandori/plugins`, as scripts/package.sh lays out the npm
//! platform package and the wheel) detects a Bundler and a Composer project
//! through the shipped plugins in `dandori env detect`, `dandori plan` and the
//! MCP server's `env_detect`, with no configuration.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::first_run::{copy_dir, run_clean};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `PREFIX/bin/dandori` (a hard link to the binary under test, a copy where
/// that fails) and `PREFIX/share/dandori/plugins` (a copy of `plugins/`).
fn installed_layout(prefix: &Path) -> PathBuf {
    let bin = prefix.join("bin/dandori");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    if std::fs::hard_link(env!("CARGO_BIN_EXE_dandori"), &bin).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_dandori"), &bin).unwrap();
    }
    copy_dir(
        &workspace().join("plugins"),
        &prefix.join("share/dandori/plugins"),
    );
    bin
}

fn git_repo(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "-m",
            "init",
        ],
    ] {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }
}

fn json_of(what: &str, o: &std::process::Output) -> Value {
    assert!(
        o.status.success(),
        "{what}: {}\n{}\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{what}: {e}\n{}", String::from_utf8_lossy(&o.stdout)))
}

const RUBY: &[(&str, &str)] = &[
    (
        "Gemfile",
        "source \"https://rubygems.org\"\n\ngem \"rake\", \"~> 13.0\"\n",
    ),
    (
        "lib/calc.rb",
        "module Calc\n  def self.add(a, b) = a + b\nend\n",
    ),
    (
        "test/calc_test.rb",
        "require_relative \"../lib/calc\"\nraise unless Calc.add(1, 2) == 3\n",
    ),
    (
        "requests/RQ-1.md",
        "---\nid: RQ-1\ntitle: Subtract\n---\n# Subtract\n\nAdd `Calc.sub(a, b)` to `lib/calc.rb`.\n\n## Acceptance criteria\n\n- Given 5 and 3, when sub is called, then it returns 2\n",
    ),
];

const PHP: &[(&str, &str)] = &[
    (
        "composer.json",
        "{\"name\": \"acme/calc\", \"require\": {\"php\": \">=8.1\"}, \"scripts\": {\"test\": \"php tests/run.php\"}}\n",
    ),
    (
        "src/Calc.php",
        "<?php\nfinal class Calc { public static function add($a, $b) { return $a + $b; } }\n",
    ),
    (
        "tests/run.php",
        "<?php\nrequire __DIR__ . '/../src/Calc.php';\nexit(Calc::add(1, 2) === 3 ? 0 : 1);\n",
    ),
];

/// The ecosystem `name` of an analysis, with the plugin that detected it.
fn plugin_of(analysis: &Value, name: &str) -> String {
    analysis["ecosystems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no {name} ecosystem: {analysis:#}"))["plugin"]["path"]
        .as_str()
        .unwrap_or_else(|| panic!("{name} was not detected by a plugin: {analysis:#}"))
        .to_string()
}

#[test]
fn an_installed_binary_detects_through_the_shipped_plugins_in_env_plan_and_mcp() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let root = dir.path().canonicalize().unwrap();
    let bin = installed_layout(&root.join("prefix"));
    let shipped = root.join("prefix/share/dandori/plugins");
    for (eco, files) in [("ruby", RUBY), ("php", PHP)] {
        let repo = root.join(eco);
        git_repo(&repo, files);
        let expected = shipped
            .join(eco)
            .join(format!("dandori-env-{eco}"))
            .display()
            .to_string();

        // `dandori env detect`.
        let detect = json_of(
            "env detect",
            &run_clean(&bin, &repo, &["env", "detect", "--json"]),
        );
        assert_eq!(plugin_of(&detect["analysis"], eco), expected, "{eco}");
        assert_eq!(detect["selected_environment"]["name"], eco);
        assert_eq!(
            detect["selected_environment"]["plugin"], expected,
            "{detect:#}"
        );

        // The MCP server's `env_detect`.
        let mcp = super::mcp::inspector_call(
            &repo,
            &[bin.to_str().unwrap(), "mcp", "--tools", "all"],
            &[
                "tools/call",
                "--tool-name",
                "env_detect",
                "--tool-arg",
                &format!("repo={}", repo.display()),
            ],
        );
        let sc = &mcp["structuredContent"];
        assert_eq!(sc["selected"]["name"], eco, "{mcp:#}");
        assert_eq!(sc["selected"]["plugin"], expected, "{mcp:#}");
    }

    // `dandori plan`: the plan's environment comes from the shipped plugin.
    let repo = root.join("ruby");
    let out = json_of(
        "plan",
        &run_clean(&bin, &repo, &["plan", "requests/RQ-1.md", "--json"]),
    );
    let planning: Value = serde_json::from_str(
        &std::fs::read_to_string(out["planning_json"].as_str().unwrap()).unwrap(),
    )
    .unwrap();
    let env = &planning["selected_environment"];
    assert_eq!(env["name"], "ruby", "{planning:#}");
    assert_eq!(
        env["plugin"],
        shipped.join("ruby/dandori-env-ruby").display().to_string(),
        "{env:#}"
    );
}
