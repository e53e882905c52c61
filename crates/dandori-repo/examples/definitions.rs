//! Prints the definitions the keyword rules find, one `path<TAB>name<TAB>line`
//! row per definition, for the files listed on standard input (paths relative
//! to ROOT). Used to compare the rules with a parser's tags
//! (docs/retrieval.md, issue 26 session 3).
//!
//! `cargo run -p dandori-repo --example definitions -- ROOT LANGUAGE < files.txt`

#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::io::{BufRead, Write};
use std::path::PathBuf;

use dandori_repo::retrieval::definitions;

fn main() -> std::process::ExitCode {
    let mut args = std::env::args().skip(1);
    let (Some(root), Some(language)) = (args.next(), args.next()) else {
        eprintln!("usage: definitions ROOT LANGUAGE < files.txt");
        return std::process::ExitCode::from(2);
    };
    let root = PathBuf::from(root);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for rel in std::io::stdin().lock().lines() {
        let rel = match rel {
            Ok(r) => r,
            Err(e) => {
                eprintln!("reading the file list: {e}");
                return std::process::ExitCode::FAILURE;
            }
        };
        // Files that are not UTF-8 are skipped, as the index skips them.
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else {
            continue;
        };
        for d in definitions::extract(&text, Some(&language)) {
            if writeln!(out, "{rel}\t{}\t{}", d.name, d.line).is_err() {
                return std::process::ExitCode::FAILURE;
            }
        }
    }
    if out.flush().is_err() {
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}
