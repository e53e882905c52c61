//! The words users read: `--help` of `dandori` and of every subcommand (found by
//! walking the "Commands:" lists) carries no seed section numbers (`§16.1.1`);
//! those belong in docs and code comments.

use std::process::Command;

fn help(path: &[String]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_dandori"))
        .args(path)
        .arg("--help")
        .env_clear()
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "dandori {} --help: {}",
        path.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The names listed under "Commands:" (without clap's own `help`).
fn subcommands(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn no_help_text_carries_seed_section_numbers() {
    let mut todo = vec![Vec::<String>::new()];
    let mut seen = 0;
    while let Some(path) = todo.pop() {
        let text = help(&path);
        seen += 1;
        assert!(
            !text.contains('§'),
            "dandori {} --help names a seed section:\n{text}",
            path.join(" ")
        );
        for sub in subcommands(&text) {
            let mut next = path.clone();
            next.push(sub);
            todo.push(next);
        }
    }
    // The walk reached the subcommands and their own subcommands (env, eval, …).
    assert!(seen > 30, "only {seen} help pages walked");
}
