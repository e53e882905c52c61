//! Issue 26, session 3: the commit history as evidence — how often a file
//! changed and how much the subjects of its commits read like the request —
//! read from real git repositories, only up to the commit being ranked.

use dandori_repo::eval::{Checkout, Instance};
use dandori_repo::retrieval::history::{HISTORY_COMMITS, History};
use dandori_repo::retrieval::{TokenOptions, analyze, rerank, tokens};
use dandori_repo::{Index, ScanOptions, scan};

use super::support::{commit_all, git, write};

const QUERY: &str = "Pipes in table cells are not escaped\n\
    A cell holding `a|b` breaks the table when `render_table` prints it.";

/// A project of 70 files, committed: a table module every candidate list
/// reaches (it defines `render_table`) and a markdown writer, each in a
/// commit of its own, then filler in one sweep (a commit of more than
/// `SWEEP_FILES` files, whose subject is nobody's history). Returns the
/// last commit.
fn project(dir: &std::path::Path) -> String {
    write(
        dir,
        "doc/table.py",
        "def render_table(rows):\n    return [cell(r) for r in rows]\n\ndef cell(r):\n    return str(r)\n",
    );
    commit_all(dir, "Add the table module");
    write(
        dir,
        "doc/markdown.py",
        "def write_row(cells):\n    return '|'.join(cells)\n\ndef escape(text):\n    return text\n",
    );
    commit_all(dir, "Add a markdown writer");
    for i in 0..68 {
        write(
            dir,
            &format!("doc/part{i:02}.py"),
            format!("def part{i}():\n    return 'table part {i}'\n"),
        );
    }
    commit_all(dir, "Import the parts")
}

fn features(index: &Index, path: &str) -> Vec<f32> {
    let names = rerank::FEATURE_NAMES;
    let churn = names.iter().position(|n| *n == "churn").unwrap();
    let past = names.iter().position(|n| *n == "history_bm25").unwrap();
    let feats = index.rank_features(&analyze(QUERY), 50);
    let f = &feats
        .iter()
        .find(|(p, _)| p == path)
        .expect("a candidate")
        .1;
    vec![f[churn], f[past]]
}

#[test]
fn past_commit_subjects_and_change_counts_become_features() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    for (n, subject) in [
        (1, "markdown: escape pipes in table cells"),
        (2, "markdown: escaped cells keep their width"),
    ] {
        write(
            dir.path(),
            "doc/markdown.py",
            format!("def write_row(cells):\n    return '|'.join(cells)  # {n}\n"),
        );
        commit_all(dir.path(), subject);
    }
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let mut index = Index::build(&s);
    assert_eq!(
        features(&index, "doc/markdown.py"),
        vec![0.0, 0.0],
        "no history attached yet"
    );
    assert!(index.attach_git_history());
    let markdown = features(&index, "doc/markdown.py");
    let table = features(&index, "doc/table.py");
    assert_eq!(
        markdown,
        vec![1.0, 1.0],
        "most changes, subjects most like the request"
    );
    assert!(table[0] < 1.0 && table[0] > 0.0, "one commit: {table:?}");
    assert!(
        table[1] < 0.5,
        "its one subject says nothing of cells: {table:?}"
    );

    // A tree inside another repository (a fixture, a vendored copy) does not
    // take that repository's history.
    let sub = scan(dir.path().join("doc"), &ScanOptions::default()).unwrap();
    let mut sub_index = Index::build(&sub);
    assert!(!sub_index.attach_git_history());
    assert_eq!(features(&sub_index, "markdown.py"), vec![0.0, 0.0]);
}

#[test]
fn a_tree_without_history_keeps_none() {
    let dir = tempfile::tempdir().unwrap();
    project(dir.path());
    std::fs::remove_dir_all(dir.path().join(".git")).unwrap();
    let s = scan(dir.path(), &ScanOptions::default()).unwrap();
    let mut index = Index::build(&s);
    assert!(!index.attach_git_history(), "not a git repository");
    assert!(History::read(dir.path(), "HEAD", HISTORY_COMMITS).is_err());
}

#[test]
fn an_evaluation_checkout_sees_only_the_history_before_its_base_commit() {
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("acme__doc");
    let base = project(&clone);
    // The fix of the instance, after its base commit: its subject must not
    // be evidence when the instance is ranked.
    write(
        &clone,
        "doc/markdown.py",
        "def write_row(cells):\n    return 'x'\n",
    );
    commit_all(&clone, "Fix escaping of pipes in table cells");
    git(&clone, &["checkout", "-q", "--detach", &base]);
    let inst = Instance {
        instance_id: "acme__doc-1".into(),
        repo: "acme/doc".into(),
        base_commit: base,
        problem_statement: QUERY.into(),
        patched_files: vec!["doc/markdown.py".into()],
    };
    let checkout = Checkout::prepare(dir.path(), &inst).unwrap();
    let history = checkout.history().expect("history of the clone");
    assert_eq!(history.commits(), 3);
    let file = history
        .file("doc/markdown.py")
        .expect("changed by the second commit");
    let fix = tokens("Fix escaping of pipes in table cells", TokenOptions::TEXT);
    assert!(!fix.is_empty());
    assert!(
        file.words.iter().all(|w| !fix.iter().any(|f| f == &**w)),
        "{:?} holds words of {fix:?}",
        file.words
    );
}
