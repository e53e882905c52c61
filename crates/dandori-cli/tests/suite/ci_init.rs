//! `dandori init github-action | gitlab-ci`: the files it writes pass a security
//! audit (zizmor, offline) with no findings and the forges' published schemas
//! (check-jsonschema's vendored `github-workflows` and `gitlab-ci`), for each agent
//! and with allowed users configured. Both tools come from PyPI, installed by
//! scripts/test.sh into target/test-tools/ci-lint.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_dandori");

fn ci_lint(tool: &str) -> PathBuf {
    let tools = std::env::var_os("DANDORI_TEST_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/test-tools"));
    let exe = tools.join("ci-lint/bin").join(tool);
    assert!(
        exe.is_file(),
        "{} is missing: run the tests with ./scripts/test.sh, which installs zizmor and check-jsonschema from PyPI into target/test-tools/ci-lint",
        exe.display()
    );
    exe
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A git repository with `config` as its `.dandori/config.yaml` (when given).
fn repo(config: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let ok = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir.path())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    if let Some(c) = config {
        std::fs::create_dir_all(dir.path().join(".dandori")).unwrap();
        std::fs::write(dir.path().join(".dandori/config.yaml"), c).unwrap();
    }
    dir
}

fn init(repo: &Path, args: &[&str]) -> Output {
    let home = repo.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    Command::new(BIN)
        .arg("init")
        .args(args)
        .arg("--repo")
        .arg(repo)
        .env("HOME", &home)
        .output()
        .unwrap()
}

/// zizmor's offline audit of one workflow: no finding at all (any persona's
/// default), and check-jsonschema with GitHub's workflow schema.
fn audit_github(file: &Path) -> String {
    let home = file.parent().unwrap().join("zizmor-home");
    std::fs::create_dir_all(&home).unwrap();
    // The auditor persona: every audit, pedantic ones included.
    let z = Command::new(ci_lint("zizmor"))
        // `--color never`: zizmor colours its output whenever `CI` is set,
        // as it is in CI, and the report is matched as text below.
        .args([
            "--offline",
            "--persona",
            "auditor",
            "--format",
            "plain",
            "--color",
            "never",
        ])
        .arg(file)
        .env("HOME", &home)
        .env("XDG_CACHE_HOME", &home)
        .output()
        .unwrap();
    let report = text(&z);
    assert_eq!(
        z.status.code(),
        Some(0),
        "zizmor found something:\n{report}"
    );
    // The one ignore: `issue_comment`, which zizmor always reports, gated in
    // the job's `if:` (the ignore comment says so on that line).
    assert!(
        report.contains("No findings to report. Good job! (1 ignored)"),
        "{report}"
    );
    let text = std::fs::read_to_string(file).unwrap();
    assert_eq!(text.matches("zizmor: ignore[").count(), 1, "{text}");
    assert!(
        text.contains(
            "issue_comment: # zizmor: ignore[dangerous-triggers] gated on author_association"
        ),
        "{text}"
    );
    schema(file, "vendor.github-workflows");
    report
}

fn schema(file: &Path, builtin: &str) {
    let o = Command::new(ci_lint("check-jsonschema"))
        .args(["--builtin-schema", builtin])
        .arg(file)
        .output()
        .unwrap();
    assert!(o.status.success(), "{builtin}: {}", text(&o));
}

#[test]
fn the_github_workflow_of_each_agent_passes_zizmor_and_the_schema() {
    for agent in ["claude", "codex", "gemini"] {
        let r = repo(None);
        let o = init(r.path(), &["github-action", "--agent", agent]);
        assert!(o.status.success(), "{}", text(&o));
        let file = r.path().join(".github/workflows/dandori.yml");
        let wf = std::fs::read_to_string(&file).unwrap();
        let (secret, package) = match agent {
            "claude" => ("ANTHROPIC_API_KEY", "@anthropic-ai/claude-code@"),
            "codex" => ("OPENAI_API_KEY", "@openai/codex@"),
            _ => ("GEMINI_API_KEY", "@google/gemini-cli@"),
        };
        // The next steps name the secret to create.
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.contains(&format!("create the repository secret {secret}")),
            "{stderr}"
        );
        assert!(
            wf.contains(&format!("{secret}: ${{{{ secrets.{secret} }}}}")),
            "{wf}"
        );
        // Installed, from the lock file next to the workflow.
        let pkg = std::fs::read_to_string(r.path().join(".github/dandori/package.json")).unwrap();
        assert!(
            pkg.contains(&format!("\"{}\"", package.trim_end_matches('@'))),
            "{pkg}"
        );
        assert!(pkg.contains("\"dandori\": \""), "{pkg}");
        assert!(
            wf.contains("npm ci --no-audit --no-fund --prefix=\"$RUNNER_TEMP/dandori\""),
            "{wf}"
        );
        assert!(
            stderr.contains("npm install --package-lock-only"),
            "{stderr}"
        );
        assert!(
            wf.contains(&format!("dandori ci --label 'dandori' --agent {agent}")),
            "{wf}"
        );
        // Installed, not built; pinned by commit; gated before any step.
        assert!(!wf.contains("cargo install"), "{wf}");
        assert!(
            wf.contains("actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2"),
            "{wf}"
        );
        assert!(
            wf.contains("actions/cache@5a3ec84eff668545956fd18022155c47e93e2684 # v4.2.3"),
            "{wf}"
        );
        assert!(wf.contains("permissions: {}"), "{wf}");
        assert!(
            wf.contains(
                "contains(fromJSON('[\"OWNER\", \"MEMBER\", \"COLLABORATOR\"]'), github.event.comment.author_association)"
            ),
            "{wf}"
        );
        let report = audit_github(&file);
        if agent == "claude" {
            eprintln!("{wf}\n--- zizmor --offline ---\n{report}");
        }
    }
}

#[test]
fn allowed_users_gate_the_job_and_an_agent_command_passes_the_audit_too() {
    let r = repo(Some(
        "planning:\n  permissions:\n    allowed_users: [alice, \"@bob\"]\n",
    ));
    let o = init(
        r.path(),
        &[
            "github-action",
            "--label",
            "it's dandori",
            "--agent-cmd",
            "my-agent {prompt}",
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let file = r.path().join(".github/workflows/dandori.yml");
    let wf = std::fs::read_to_string(&file).unwrap();
    assert!(
        wf.contains(r#"contains(fromJSON('["alice", "bob"]'), github.event.comment.user.login)"#),
        "{wf}"
    );
    assert!(
        wf.contains(r#"contains(fromJSON('["alice", "bob"]'), github.event.sender.login)"#),
        "{wf}"
    );
    assert!(
        wf.contains("github.event.label.name == 'it''s dandori'"),
        "{wf}"
    );
    assert!(!wf.contains("secrets."), "{wf}");
    audit_github(&file);
    // Again without --force: refused; with it, replaced.
    let o = init(r.path(), &["github-action"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = init(r.path(), &["github-action", "--force"]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn the_gitlab_file_of_each_agent_passes_gitlabs_schema() {
    for agent in ["claude", "codex", "gemini"] {
        let r = repo(None);
        let o = init(r.path(), &["gitlab-ci", "--agent", agent]);
        assert!(o.status.success(), "{}", text(&o));
        let file = r.path().join(".gitlab/dandori.gitlab-ci.yml");
        let gl = std::fs::read_to_string(&file).unwrap();
        assert!(
            gl.contains("$CI_PIPELINE_SOURCE == \"trigger\" && $TRIGGER_PAYLOAD"),
            "{gl}"
        );
        assert!(gl.contains("GITLAB_TOKEN: $DANDORI_GITLAB_TOKEN"), "{gl}");
        assert!(
            gl.contains(&format!("dandori ci --label 'dandori' --agent {agent}")),
            "{gl}"
        );
        assert!(
            gl.contains("npm ci --no-audit --no-fund --prefix=\"$DANDORI_TOOLS\""),
            "{gl}"
        );
        assert!(r.path().join(".gitlab/dandori/package.json").is_file());
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains("DANDORI_GITLAB_TOKEN"), "{stderr}");
        schema(&file, "vendor.gitlab-ci");
    }
}
