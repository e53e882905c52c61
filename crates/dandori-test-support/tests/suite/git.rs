use dandori_test_support::TempGitRepo;

#[test]
fn commits_files_and_reports_head() {
    let repo =
        TempGitRepo::with_files(&[("src/lib.rs", "pub fn a() {}\n"), ("README.md", "# x\n")]);
    let first = repo.head();
    assert_eq!(first.len(), 40);
    repo.write("src/b.rs", "pub fn b() {}\n");
    let second = repo.commit_all("add b");
    assert_ne!(first, second);
    assert_eq!(repo.read("src/b.rs"), "pub fn b() {}\n");
    let log = repo.git(&["log", "--format=%s"]);
    assert_eq!(log, "add b\ninitial\n");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
