use pretty_assertions::assert_eq;
use serde_json::json;

use dandori_tools::{ReasonCode, ToolStatus};

use super::{Repo, call};

#[test]
fn read_file_whole_range_and_errors() {
    let repo = Repo::new();
    let reg = repo.registry();
    let r = call(&reg, "read_file", json!({"path": "src/lib.rs"}));
    assert_eq!(r.status, ToolStatus::Ok);
    assert_eq!(
        r.content,
        "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n"
    );

    let r = call(
        &reg,
        "read_file",
        json!({"path": "./src/lib.rs", "start_line": 2, "end_line": 2}),
    );
    assert_eq!(r.content, "    a + b\n");

    let r = call(&reg, "read_file", json!({"path": "nope.txt"}));
    assert_eq!(r.code(), Some(ReasonCode::NotFound));
    assert!(
        r.content
            .starts_with("error [NOT_FOUND]: `nope.txt` does not exist"),
        "{}",
        r.content
    );

    let r = call(&reg, "read_file", json!({"path": "src"}));
    assert_eq!(r.code(), Some(ReasonCode::NotAFile));

    std::fs::write(repo.path().join("blob.bin"), [0u8, 1, 2, 3]).unwrap();
    let r = call(&reg, "read_file", json!({"path": "blob.bin"}));
    assert_eq!(r.code(), Some(ReasonCode::BinaryFile));

    let big = std::fs::File::create(repo.path().join("big.log")).unwrap();
    big.set_len(17 * 1024 * 1024).unwrap();
    let r = call(&reg, "read_file", json!({"path": "big.log"}));
    assert_eq!(r.code(), Some(ReasonCode::FileTooLarge));

    let r = call(&reg, "read_file", json!({"file": "x"}));
    assert_eq!(r.code(), Some(ReasonCode::InvalidArguments));
}

#[test]
fn read_file_cuts_long_files_and_says_so() {
    let repo = Repo::new();
    let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
    repo.write("long.txt", &text);
    let r = call(&repo.registry(), "read_file", json!({"path": "long.txt"}));
    assert!(r.content.starts_with("line 1\n"));
    assert!(r.content.contains("line 2000\n"));
    assert!(!r.content.contains("line 2001\n"));
    assert!(
        r.content
            .ends_with("[output cut: lines 1-2000 of 2500 shown; read on with start_line=2001]"),
        "{}",
        &r.content[r.content.len() - 120..]
    );
}

#[test]
fn list_dir_plain_recursive_and_gitignore() {
    let repo = Repo::new();
    repo.write("target/debug/big", "x");
    repo.write(".github/workflows/ci.yml", "on: push\n");
    let reg = repo.registry();
    let r = call(&reg, "list_dir", json!({}));
    assert_eq!(r.content, ".github/\n.gitignore\nREADME.md\nsrc/");
    let r = call(&reg, "list_dir", json!({"path": "src"}));
    assert_eq!(r.content, "lib.rs");
    let r = call(&reg, "list_dir", json!({"recursive": true}));
    assert_eq!(
        r.content,
        ".github/\n.github/workflows/\n.github/workflows/ci.yml\n.gitignore\nREADME.md\nsrc/\nsrc/lib.rs"
    );
    let r = call(&reg, "list_dir", json!({"path": "README.md"}));
    assert_eq!(r.code(), Some(ReasonCode::NotADirectory));
}

#[test]
fn search_substring_regex_gitignore_and_bounds() {
    let repo = Repo::new();
    repo.write("target/gen.rs", "fn add() {}\n");
    repo.write("docs/a.md", "Add numbers with add().\n");
    let reg = repo.registry();

    let r = call(&reg, "search", json!({"pattern": "add("}));
    assert_eq!(
        r.content,
        "docs/a.md:1: Add numbers with add().\nsrc/lib.rs:1: pub fn add(a: i32, b: i32) -> i32 {\n[2 matches in 2 files]"
    );

    let r = call(
        &reg,
        "search",
        json!({"pattern": "^pub fn \\w+", "regex": true, "path": "src"}),
    );
    assert_eq!(
        r.content,
        "src/lib.rs:1: pub fn add(a: i32, b: i32) -> i32 {\n[1 matches in 1 files]"
    );

    let r = call(
        &reg,
        "search",
        json!({"pattern": "ADD NUMBERS", "case_insensitive": true}),
    );
    assert!(r.content.starts_with("docs/a.md:1:"), "{}", r.content);

    let r = call(&reg, "search", json!({"pattern": "(", "regex": true}));
    assert_eq!(r.code(), Some(ReasonCode::InvalidRegex));

    let r = call(&reg, "search", json!({"pattern": "zzz_not_there"}));
    assert_eq!(r.content, "no matches for `zzz_not_there`");

    let many: String = (0..50).map(|i| format!("hit {i}\n")).collect();
    repo.write("many.txt", &many);
    let r = call(&reg, "search", json!({"pattern": "hit", "max_results": 3}));
    assert_eq!(
        r.content,
        "many.txt:1: hit 0\nmany.txt:2: hit 1\nmany.txt:3: hit 2\n[output cut at 3 matches; narrow the pattern or the path]"
    );
}

#[test]
fn write_file_creates_and_replaces_keeping_mode() {
    let repo = Repo::new();
    let reg = repo.registry();
    let r = call(
        &reg,
        "write_file",
        json!({"path": "src/new/mod.rs", "content": "pub mod x;\n"}),
    );
    assert_eq!(r.content, "created `src/new/mod.rs` (11 bytes, 1 lines)");
    assert_eq!(repo.read("src/new/mod.rs"), "pub mod x;\n");

    repo.write("run.sh", "#!/bin/sh\necho 1\n");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        repo.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let r = call(
        &reg,
        "write_file",
        json!({"path": "run.sh", "content": "#!/bin/sh\necho 2\n"}),
    );
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    let mode = std::fs::metadata(repo.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o755);
    let mode = std::fs::metadata(repo.path().join("src/new/mod.rs"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o644);

    let r = call(&reg, "write_file", json!({"path": "src", "content": "x"}));
    assert_eq!(r.code(), Some(ReasonCode::NotAFile));
}

#[test]
fn apply_patch_edits_all_or_nothing() {
    let repo = Repo::new();
    let reg = repo.registry();
    let r = call(
        &reg,
        "apply_patch",
        json!({"path": "src/lib.rs", "edits": [
            {"old": "a + b", "new": "a.wrapping_add(b)"},
            {"old": "pub fn add", "new": "/// Adds.\npub fn add"}
        ]}),
    );
    assert_eq!(r.content, "applied 2 edit(s) to `src/lib.rs`");
    assert_eq!(
        repo.read("src/lib.rs"),
        "/// Adds.\npub fn add(a: i32, b: i32) -> i32 {\n    a.wrapping_add(b)\n}\n"
    );

    // The second edit fails: nothing is written.
    let before = repo.read("src/lib.rs");
    let r = call(
        &reg,
        "apply_patch",
        json!({"path": "src/lib.rs", "edits": [
            {"old": "/// Adds.", "new": "/// Sum."},
            {"old": "no such text", "new": "x"}
        ]}),
    );
    assert_eq!(r.code(), Some(ReasonCode::PatchNoMatch));
    assert!(r.content.contains("`src/lib.rs` edits[1]"), "{}", r.content);
    assert_eq!(repo.read("src/lib.rs"), before);

    let r = call(
        &reg,
        "apply_patch",
        json!({"path": "src/lib.rs", "edits": [{"old": "i32", "new": "i64"}]}),
    );
    assert_eq!(r.code(), Some(ReasonCode::PatchAmbiguous));

    let r = call(
        &reg,
        "apply_patch",
        json!({"path": "missing.rs", "edits": [{"old": "a", "new": "b"}]}),
    );
    assert_eq!(r.code(), Some(ReasonCode::NotFound));
}

#[test]
fn specs_describe_every_builtin_with_a_schema() {
    let repo = Repo::new();
    let names: Vec<String> = repo
        .registry()
        .specs()
        .into_iter()
        .map(|s| {
            assert_eq!(s.input_schema["type"], "object", "{}", s.name);
            assert!(!s.description.is_empty());
            s.name
        })
        .collect();
    assert_eq!(
        names,
        [
            "read_file",
            "list_dir",
            "search",
            "write_file",
            "apply_patch",
            "run_command",
            "git_status",
            "git_diff"
        ]
    );
}

#[test]
fn unknown_tool_lists_the_available_ones() {
    let repo = Repo::new();
    let r = call(&repo.registry(), "delete_everything", json!({}));
    assert_eq!(r.code(), Some(ReasonCode::UnknownTool));
    assert!(
        r.content.contains("available: read_file, list_dir"),
        "{}",
        r.content
    );
}

#[test]
fn raw_arguments_from_the_model_are_parsed_or_refused() {
    let repo = Repo::new();
    let reg = repo.registry();
    let r = reg.call_raw(Some("c1"), "read_file", r#"{"path": "README.md"}"#);
    assert_eq!(
        (r.call_id.as_deref(), r.content.as_str()),
        (Some("c1"), "# demo\n")
    );
    let r = reg.call_raw(Some("c2"), "git_status", "");
    assert_eq!(r.status, ToolStatus::Ok, "{}", r.content);
    let r = reg.call_raw(Some("c3"), "read_file", r#"{"path": "README.md""#);
    assert_eq!(r.code(), Some(ReasonCode::InvalidArguments));
    assert_eq!(r.call_id.as_deref(), Some("c3"));
    assert!(
        r.content.starts_with(
            "error [INVALID_ARGUMENTS]: the arguments of `read_file` are not valid JSON: "
        ),
        "{}",
        r.content
    );
    let json = serde_json::to_value(&r).unwrap();
    assert_eq!(json["error"]["code"], "INVALID_ARGUMENTS");
    assert_eq!(json["status"], "error");
}
