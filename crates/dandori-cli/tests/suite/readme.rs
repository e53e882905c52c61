//! README accuracy: every command in the README's shell code blocks runs, in
//! order, against a temporary copy of the repository's example, so a path or flag
//! that drifts fails the build. Each command is handled explicitly below; a
//! command the harness does not know fails the test (no silent skips).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::first_run::copy_dir;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(line number, command)` of every command line in the README's `sh`/untagged
/// fenced blocks, with trailing `# comments` removed.
fn readme_commands() -> Vec<(usize, String)> {
    let text = std::fs::read_to_string(root().join("README.md")).unwrap();
    let mut out = Vec::new();
    let mut in_shell: Option<bool> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(tag) = t.strip_prefix("```") {
            in_shell = match in_shell {
                Some(_) => None,
                None => Some(matches!(
                    tag.trim(),
                    "" | "sh" | "bash" | "shell" | "console"
                )),
            };
            continue;
        }
        if in_shell != Some(true) || t.is_empty() || t.starts_with('#') {
            continue;
        }
        out.push((i + 1, strip_comment(t)));
    }
    out
}

/// Drops a trailing `# …` comment outside quotes.
fn strip_comment(line: &str) -> String {
    let mut quote: Option<char> = None;
    let chars: Vec<char> = line.chars().collect();
    for (i, c) in chars.iter().enumerate() {
        match (quote, c) {
            (Some(q), c) if *c == q => quote = None,
            (None, '\'' | '"') => quote = Some(*c),
            (None, '#') if i > 0 && chars[i - 1].is_whitespace() => {
                return chars[..i].iter().collect::<String>().trim().to_string();
            }
            _ => {}
        }
    }
    line.trim().to_string()
}

/// The newest run directory under `cwd/.dandori/runs/<request>/` (run ids sort by time).
fn newest_run(cwd: &Path, request: &str) -> String {
    let dir = cwd.join(".dandori/runs").join(request);
    let mut runs: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    runs.sort();
    runs.pop().expect("a run directory")
}

#[test]
fn every_readme_command_runs() {
    let commands = readme_commands();
    assert!(commands.len() >= 10, "{commands:?}");
    let tmp = tempfile::tempdir().unwrap();
    let clone = tmp.path().join("clone");
    // Setup: the files the README's commands use, in a fresh directory.
    copy_dir(
        &root().join("examples/todo-api"),
        &clone.join("examples/todo-api"),
    );
    // Setup: `--agent-cmd 'claude -p {prompt}'` needs a `claude`: one that does nothing.
    let bin = tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("claude"), "#!/bin/sh\nexit 0\n").unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(bin.join("claude"))
        .status()
        .unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cwd = clone.clone();
    let mut ran = 0;
    for (line, cmd) in &commands {
        let words = shell_words::split(cmd).unwrap_or_else(|e| panic!("README.md:{line}: {e}"));
        // Not run here, each for a stated reason, each still checked:
        match words.first().map(String::as_str) {
            Some("./scripts/test.sh") => {
                // The test suite itself: recursing would run this test again.
                let script = std::fs::read_to_string(root().join("scripts/test.sh")).unwrap();
                assert!(
                    script.contains("cargo test --workspace"),
                    "README.md:{line}"
                );
                continue;
            }
            Some("cd") => {
                cwd = cwd.join(&words[1]);
                assert!(
                    cwd.is_dir(),
                    "README.md:{line}: {} does not exist",
                    cwd.display()
                );
                continue;
            }
            Some("cargo") if words.get(1).map(String::as_str) == Some("install") => {
                // A 10-minute release build: check that the path is the binary's crate.
                let i = words.iter().position(|w| w == "--path").unwrap();
                let manifest =
                    std::fs::read_to_string(root().join(&words[i + 1]).join("Cargo.toml"))
                        .unwrap_or_else(|e| panic!("README.md:{line}: {e}"));
                assert!(manifest.contains("name = \"dandori\""), "README.md:{line}");
                continue;
            }
            Some("./scripts/package.sh") => {
                // A release build: suite::package runs the script (dev profile) and
                // installs what it writes; checked: its default output directory.
                let script = std::fs::read_to_string(root().join("scripts/package.sh")).unwrap();
                assert!(
                    script.contains("OUT=\"$ROOT/target/package\""),
                    "README.md:{line}"
                );
                continue;
            }
            Some("npm" | "pip" | "uv") => {
                // Installs of package.sh's artefacts (suite::package installs them
                // into a fresh prefix and venv): checked, the path is where they are.
                let artefact = words.last().map(String::as_str).unwrap_or_default();
                assert!(
                    (artefact.starts_with("target/package/dandori-") && artefact.ends_with(".tgz"))
                        || (artefact.starts_with("target/package/dandori_cli-")
                            && artefact.ends_with(".whl")),
                    "README.md:{line}: `{cmd}`"
                );
                continue;
            }
            _ => {}
        }
        // `cargo run -p dandori -- ARGS` and `dandori ARGS` run the built binary.
        let (mut args, redirect) = match words.iter().position(|w| w == ">") {
            Some(i) => (words[..i].to_vec(), Some(words[i + 1].clone())),
            None => (words.clone(), None),
        };
        if args.starts_with(&[
            "cargo".into(),
            "run".into(),
            "-p".into(),
            "dandori".into(),
            "--".into(),
        ]) {
            args.drain(..5);
        } else if args.first().map(String::as_str) == Some("dandori") {
            args.remove(0);
        } else {
            panic!("README.md:{line}: the harness does not know how to run `{cmd}`; teach it");
        }
        for a in &mut args {
            if a.contains("<run>") {
                let request = a.split('/').nth(2).unwrap_or_default().to_string();
                *a = a.replace("<run>", &newest_run(&cwd, &request));
            }
        }
        let out = Command::new(env!("CARGO_BIN_EXE_dandori"))
            .args(&args)
            .current_dir(&cwd)
            .env_clear()
            .env("PATH", &path)
            .env("HOME", tmp.path())
            // Setup: no installs from the network during the test (seed 002 switch).
            .env("ENVIRONMENT_SETUP_ENABLED", "false")
            .output()
            .unwrap();
        let code = out.status.code();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Exit 2 is a usage or input error: exactly what a drifted path or flag gives.
        // `run` / `resume` with an agent that does nothing end with a failed or
        // waiting step, or ask for a human after a detected loop (1, 3, 6);
        // everything else succeeds.
        let allowed: &[i32] = match args[0].as_str() {
            "run" | "resume" => &[0, 1, 3, 6],
            _ => &[0],
        };
        assert!(
            code.is_some_and(|c| allowed.contains(&c)),
            "README.md:{line}: `{cmd}` exited {code:?}\nstdout:\n{}\nstderr:\n{stderr}",
            String::from_utf8_lossy(&out.stdout)
        );
        if let Some(file) = redirect {
            std::fs::write(cwd.join(file), &out.stdout).unwrap();
            assert!(!out.stdout.is_empty(), "README.md:{line}: no output");
        }
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} README commands ran");
}
