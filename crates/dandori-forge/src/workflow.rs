//! The CI files of `dandori init github-action | gitlab-ci`. Pure: the options in,
//! the YAML text out.
//!
//! The GitHub Actions workflow passes a security audit (`zizmor --offline`) with
//! no findings and GitHub's workflow schema:
//!
//! * who may start a job is decided in the job's `if:`, before the runner starts
//!   and checks the code out: a label is added by a user with triage access; a
//!   comment counts only from an `OWNER`, `MEMBER` or `COLLABORATOR` (GitHub's
//!   `author_association`), and, when `planning.permissions.allowed_users` lists
//!   plain logins, only from one of them;
//! * actions are pinned by commit, the tag in a comment ([`CHECKOUT`], [`CACHE`]);
//! * no permission at the workflow level, the job's own least privilege;
//! * no `${{ … }}` of the event inside a script (the one event value a script
//!   needs comes through `env`); the checkout keeps no credential;
//! * a released dandori and the agent CLI are installed from npm with `npm ci`
//!   from a lock file committed next to the workflow ([`package_json`], its
//!   lock made once with `npm install --package-lock-only`), cached, not built;
//! * the job runs in the environment `dandori`, and the agent's key comes from
//!   the secret [`AgentSetup::secret`] (of that environment, or the repository);
//! * `issue_comment` is a trigger zizmor always reports (`dangerous-triggers`):
//!   the workflow says why it is safe here (the job's `if:`) in zizmor's own
//!   ignore comment on that line.
//!
//! GitLab has no `author_association` in its pipeline rules: the job runs for a
//! triggered pipeline with a payload, and `dandori ci` checks who asked before any
//! step of dandori's runs (docs/forges.md, "CI").

use dandori_config::AgentPreset;

/// `actions/checkout` v4.2.2, by commit.
pub const CHECKOUT: (&str, &str) = ("11bd71901bbe5b1630ceea73d27597364c9af683", "v4.2.2");
/// `actions/cache` v4.2.3, by commit.
pub const CACHE: (&str, &str) = ("5a3ec84eff668545956fd18022155c47e93e2684", "v4.2.3");

/// The commands a comment may carry: `/dandori WORD` and, answered with what to
/// type instead, a bare `/WORD`.
pub const COMMAND_WORDS: [&str; 4] = ["plan", "approve", "revise", "run"];

/// What the workflow installs and passes for one agent CLI.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentSetup {
    pub preset: AgentPreset,
    /// The npm package and the version dandori is tested with.
    pub package: &'static str,
    pub version: &'static str,
    /// The environment variable the CLI reads its key from; the repository
    /// secret (GitHub) or CI/CD variable (GitLab) has the same name.
    pub secret: &'static str,
}

/// The agent CLIs' npm packages at the versions scripts/test.sh installs.
pub fn agent_setup(preset: AgentPreset) -> AgentSetup {
    match preset {
        AgentPreset::Claude => AgentSetup {
            preset,
            package: "@anthropic-ai/claude-code",
            version: "2.1.197",
            secret: "ANTHROPIC_API_KEY",
        },
        AgentPreset::Codex => AgentSetup {
            preset,
            package: "@openai/codex",
            version: "0.171.0",
            secret: "OPENAI_API_KEY",
        },
        AgentPreset::Gemini => AgentSetup {
            preset,
            package: "@google/gemini-cli",
            version: "0.61.0",
            secret: "GEMINI_API_KEY",
        },
    }
}

/// Who does the steps' work in CI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkflowAgent {
    /// An agent CLI preset: installed, its key passed.
    Preset(AgentPreset),
    /// An agent command template the user installs and keys themselves.
    Command(String),
}

#[derive(Debug, Clone)]
pub struct WorkflowOptions {
    /// The label that asks dandori to plan an issue.
    pub label: String,
    pub agent: WorkflowAgent,
    /// The dandori release the job installs (npm package `dandori`).
    pub dandori_version: String,
    /// `planning.permissions.allowed_users`: plain logins gate the job; a team,
    /// group or `*` leaves the check to `dandori ci`.
    pub allowed_users: Vec<String>,
}

impl WorkflowOptions {
    fn agent_setup(&self) -> Option<AgentSetup> {
        match &self.agent {
            WorkflowAgent::Preset(p) => Some(agent_setup(*p)),
            WorkflowAgent::Command(_) => None,
        }
    }

    /// The `dandori ci` arguments after `ci`.
    fn ci_args(&self) -> String {
        let agent = match &self.agent {
            WorkflowAgent::Preset(p) => format!(" --agent {}", p.name()),
            WorkflowAgent::Command(c) => format!(" --agent-cmd {}", shell_quote(c)),
        };
        format!("--label {}{agent}", shell_quote(&self.label))
    }

    /// The allowed users the workflow can check itself: all plain logins, else none.
    fn gate_logins(&self) -> Option<Vec<&str>> {
        let plain = |u: &&str| {
            !u.is_empty()
                && u.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        let users: Vec<&str> = self
            .allowed_users
            .iter()
            .map(|u| u.trim().trim_start_matches('@'))
            .collect();
        (!users.is_empty() && users.iter().all(plain)).then_some(users)
    }
}

/// What to do after writing the file.
pub fn next_steps_github(o: &WorkflowOptions) -> Vec<String> {
    let mut steps = vec![lock_step(GITHUB_PACKAGE_DIR)];
    if let Some(a) = o.agent_setup() {
        steps.push(format!(
            "create the repository secret {} (Settings → Secrets and variables → Actions → New repository secret; or, narrower, a secret of the environment `dandori`, which the job runs in): the key the job passes to {}",
            a.secret,
            a.preset.name()
        ));
    } else {
        steps.push(
            "the job runs your --agent-cmd: install that agent and pass its key in the `dandori ci` step yourself".to_string(),
        );
    }
    steps.push(format!(
        "create the label `{}`; labelling an issue with it asks for a plan",
        o.label
    ));
    steps.push(format!(
        "commit .github/workflows/dandori.yml and {GITHUB_PACKAGE_DIR}/ on the default branch (issue events run the workflow of the default branch)"
    ));
    steps
}

/// Where the npm manifest and lock of the GitHub workflow's tools live.
pub const GITHUB_PACKAGE_DIR: &str = ".github/dandori";
/// Where the npm manifest and lock of the GitLab job's tools live.
pub const GITLAB_PACKAGE_DIR: &str = ".gitlab/dandori";

fn lock_step(dir: &str) -> String {
    format!(
        "make the lock file the job installs from (npm ci: exactly the versions and hashes it names): `npm install --package-lock-only --ignore-scripts --prefix {dir}`, and commit {dir}/package.json and {dir}/package-lock.json"
    )
}

/// The npm manifest of the job's tools: dandori and the agent CLI at exact
/// versions (`package.json` in [`GITHUB_PACKAGE_DIR`] / [`GITLAB_PACKAGE_DIR`]).
pub fn package_json(o: &WorkflowOptions) -> String {
    let mut deps = serde_json::Map::new();
    deps.insert("dandori".into(), o.dandori_version.clone().into());
    if let Some(a) = o.agent_setup() {
        deps.insert(a.package.into(), a.version.into());
    }
    let v = serde_json::json!({
        "name": "dandori-ci-tools",
        "private": true,
        "description": "What the dandori CI job installs (npm ci): written by `dandori init`",
        "dependencies": deps,
    });
    let mut text = serde_json::to_string_pretty(&v).unwrap_or_default();
    text.push('\n');
    text
}

/// What to do after writing the GitLab file.
pub fn next_steps_gitlab(o: &WorkflowOptions) -> Vec<String> {
    let mut steps = vec![
        lock_step(GITLAB_PACKAGE_DIR),
        "include .gitlab/dandori.gitlab-ci.yml from .gitlab-ci.yml".to_string(),
        "create a pipeline trigger token and a project webhook (issue and comment events) to the trigger URL".to_string(),
        "add the masked CI/CD variable DANDORI_GITLAB_TOKEN: a project access token, role Developer, scopes api and write_repository".to_string(),
    ];
    if let Some(a) = o.agent_setup() {
        steps.push(format!(
            "add the masked CI/CD variable {}: the key {} reads",
            a.secret,
            a.preset.name()
        ));
    }
    steps
}

/// `.github/workflows/dandori.yml`.
pub fn github_actions(o: &WorkflowOptions) -> String {
    let label_expr = expr_str(&o.label);
    let words: Vec<String> = COMMAND_WORDS.iter().map(|w| format!("/{w}")).collect();
    let mut starts = vec!["startsWith(github.event.comment.body, '/dandori')".to_string()];
    starts.extend(
        words
            .iter()
            .map(|w| format!("startsWith(github.event.comment.body, '{w}')")),
    );
    let (sender_gate, commenter_gate, users_note) = match o.gate_logins() {
        Some(users) => {
            let list = format!(
                "fromJSON('[{}]')",
                users
                    .iter()
                    .map(|u| format!("\"{u}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            (
                format!("\n        && contains({list}, github.event.sender.login)"),
                format!("\n        && contains({list}, github.event.comment.user.login)"),
                "# and, as planning.permissions.allowed_users lists, only from these users.",
            )
        }
        None => (
            String::new(),
            String::new(),
            "# (planning.permissions.allowed_users: checked again by `dandori ci`).",
        ),
    };
    let (install_name, agent_env) = match o.agent_setup() {
        Some(a) => (
            format!("dandori and {} from the lock file (npm ci)", a.package),
            format!("\n          {}: ${{{{ secrets.{} }}}}", a.secret, a.secret),
        ),
        None => (
            "dandori from the lock file (npm ci)".to_string(),
            String::new(),
        ),
    };
    format!(
        r#"# dandori: label an issue `{label}` to get a plan; comment `/dandori approve` to
# run it, `/dandori revise` (with your feedback) to change it, `/dandori plan` to
# plan again. The run ends in a pull request. Written by `dandori init
# github-action`; see docs/forges.md ("CI").
name: dandori
on:
  issues:
    types: [labeled]
  # Comments steer dandori. Safe here: the job's `if:` below lets a comment start
  # the job only from an owner, member or collaborator, before any step runs.
  issue_comment: # zizmor: ignore[dangerous-triggers] gated on author_association in the job's if:
    types: [created]
# No permission at the workflow level: the job asks for its own.
permissions: {{}}
# One job per issue at a time; a second comment waits for the first.
concurrency:
  group: dandori-${{{{ github.event.issue.number }}}}
  cancel-in-progress: false
jobs:
  dandori:
    name: dandori ci
    # Decided before the runner starts: the label, added by a user with triage
    # access; or a `/dandori …` (or bare `/approve`, `/run`, `/revise`, `/plan`,
    # answered with what to type) comment from an owner, member or collaborator
    {users_note}
    if: >-
      (github.event_name == 'issues' && github.event.action == 'labeled'
        && github.event.label.name == {label_expr}{sender_gate})
      || (github.event_name == 'issue_comment' && github.event.action == 'created'
        && github.event.comment.user.type != 'Bot'
        && contains(fromJSON('["OWNER", "MEMBER", "COLLABORATOR"]'), github.event.comment.author_association){commenter_gate}
        && ({starts}))
    runs-on: ubuntu-latest
    timeout-minutes: 60
    # The agent's key is a secret of this environment (or of the repository).
    environment: dandori
    # Least privilege for GITHUB_TOKEN. Nothing else.
    permissions:
      contents: write # push the dandori-pr/* branch
      issues: write # the plan, status and reply comments; the help label
      pull-requests: write # open and update the pull request, mark it ready
    steps:
      - name: Check out the repository
        uses: actions/checkout@{checkout_sha} # {checkout_tag}
        with:
          fetch-depth: 0
          # dandori passes the token to its own push only.
          persist-credentials: false
      - name: Cache the npm downloads
        uses: actions/cache@{cache_sha} # {cache_tag}
        with:
          path: ~/.npm
          key: dandori-npm-${{{{ hashFiles('{pkg_dir}/package-lock.json') }}}}
      # The runs of earlier jobs (plans, revisions), so `/dandori approve` runs
      # the plan that was commented.
      - name: Cache dandori's runs of this issue
        uses: actions/cache@{cache_sha} # {cache_tag}
        with:
          path: .dandori/runs
          key: dandori-runs-${{{{ github.event.issue.number }}}}-${{{{ github.run_id }}}}
          restore-keys: dandori-runs-${{{{ github.event.issue.number }}}}-
      - name: Install {install_name}
        run: |
          mkdir -p "$RUNNER_TEMP/dandori"
          cp {pkg_dir}/package.json {pkg_dir}/package-lock.json "$RUNNER_TEMP/dandori/"
          npm ci --no-audit --no-fund --prefix="$RUNNER_TEMP/dandori"
      - name: dandori ci
        env:
          GITHUB_TOKEN: ${{{{ github.token }}}}{agent_env}
        run: |
          export PATH="$RUNNER_TEMP/dandori/node_modules/.bin:$PATH"
          git config user.name 'github-actions[bot]'
          git config user.email '41898282+github-actions[bot]@users.noreply.github.com'
          dandori ci {ci_args}
"#,
        label = o.label,
        starts = starts.join("\n          || "),
        checkout_sha = CHECKOUT.0,
        checkout_tag = CHECKOUT.1,
        cache_sha = CACHE.0,
        cache_tag = CACHE.1,
        pkg_dir = GITHUB_PACKAGE_DIR,
        ci_args = o.ci_args(),
    )
}

/// `.gitlab/dandori.gitlab-ci.yml`.
pub fn gitlab_ci(o: &WorkflowOptions) -> String {
    let key_line = match o.agent_setup() {
        Some(a) => format!(
            "\n# masked CI/CD variable {} ({}'s key; GitLab passes it to the job as is).",
            a.secret,
            a.preset.name()
        ),
        None => "\n# Your --agent-cmd's key: a masked CI/CD variable of your own.".to_string(),
    };
    format!(
        r#"# dandori on GitLab CI: include this file from .gitlab-ci.yml, add a project
# webhook (issue and comment events) to the pipeline trigger URL, and store a
# project access token (role Developer, scopes api and write_repository) as the
# masked CI/CD variable DANDORI_GITLAB_TOKEN, and the{key_line}
# Label an issue `{label}` or comment `/dandori approve|run|revise|plan`; who may
# ask is checked by `dandori ci` before any step. Written by `dandori init
# gitlab-ci`; see docs/forges.md ("CI"). CI_JOB_TOKEN cannot post notes or open
# merge requests.
dandori:
  image: node:22-bookworm
  rules:
    - if: '$CI_PIPELINE_SOURCE == "trigger" && $TRIGGER_PAYLOAD'
  variables:
    GIT_DEPTH: "0"
    GITLAB_TOKEN: $DANDORI_GITLAB_TOKEN
    npm_config_cache: $CI_PROJECT_DIR/.dandori/npm-cache
  cache:
    - key:
        files: [{pkg_dir}/package-lock.json]
        prefix: dandori-npm
      paths: [.dandori/npm-cache]
    - key: dandori-runs
      paths: [.dandori/runs]
  script:
    # A directory of this job's own (a shell executor shares /tmp between jobs).
    - DANDORI_TOOLS="$(mktemp -d)"
    - cp {pkg_dir}/package.json {pkg_dir}/package-lock.json "$DANDORI_TOOLS/"
    - npm ci --no-audit --no-fund --prefix="$DANDORI_TOOLS"
    - export PATH="$DANDORI_TOOLS/node_modules/.bin:$PATH"
    - git config user.name 'dandori'
    - git config user.email 'dandori@noreply.invalid'
    - git remote set-url origin "$CI_PROJECT_URL.git"
    - dandori ci {ci_args}
"#,
        label = o.label,
        pkg_dir = GITLAB_PACKAGE_DIR,
        ci_args = o.ci_args(),
    )
}

/// A string literal of a GitHub Actions expression.
fn expr_str(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// POSIX shell single quotes.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The CI system of `dandori init`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CiSystem {
    GitHubActions,
    GitLabCi,
}

/// The files `dandori init` writes (the workflow and the npm manifest of what
/// it installs), each with its text, and what to set up on the forge next.
pub fn init_files(
    repo: &std::path::Path,
    system: CiSystem,
    o: &WorkflowOptions,
) -> (Vec<(std::path::PathBuf, String)>, Vec<String>) {
    let (rel, text, next, pkg_dir) = match system {
        CiSystem::GitHubActions => (
            ".github/workflows/dandori.yml",
            github_actions(o),
            next_steps_github(o),
            GITHUB_PACKAGE_DIR,
        ),
        CiSystem::GitLabCi => (
            ".gitlab/dandori.gitlab-ci.yml",
            gitlab_ci(o),
            next_steps_gitlab(o),
            GITLAB_PACKAGE_DIR,
        ),
    };
    let files = vec![
        (repo.join(rel), text),
        (repo.join(pkg_dir).join("package.json"), package_json(o)),
    ];
    (files, next)
}

/// Writes [`init_files`] (atomically, directories made); the paths written.
pub fn write_init_files(
    files: &[(std::path::PathBuf, String)],
) -> Result<Vec<std::path::PathBuf>, dandori_fs::FsError> {
    let mut written = Vec::new();
    for (file, text) in files {
        if let Some(dir) = file.parent() {
            dandori_fs::create_dir_all(dir)?;
        }
        dandori_fs::write_atomic(file, text)?;
        written.push(file.clone());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(agent: WorkflowAgent, users: &[&str]) -> WorkflowOptions {
        WorkflowOptions {
            label: "dandori".into(),
            agent,
            dandori_version: "0.1.0".into(),
            allowed_users: users.iter().map(|u| u.to_string()).collect(),
        }
    }

    #[test]
    fn plain_logins_gate_the_job_and_teams_leave_it_to_dandori_ci() {
        let wf = github_actions(&opts(
            WorkflowAgent::Preset(AgentPreset::Codex),
            &["alice", "@bob"],
        ));
        assert!(
            wf.contains(
                r#"contains(fromJSON('["alice", "bob"]'), github.event.comment.user.login)"#
            ),
            "{wf}"
        );
        assert!(
            wf.contains("OPENAI_API_KEY: ${{ secrets.OPENAI_API_KEY }}"),
            "{wf}"
        );
        let pkg = package_json(&opts(WorkflowAgent::Preset(AgentPreset::Codex), &[]));
        assert!(pkg.contains(r#""@openai/codex": "0.171.0""#), "{pkg}");
        let wf = github_actions(&opts(
            WorkflowAgent::Preset(AgentPreset::Claude),
            &["alice", "my-org/reviewers"],
        ));
        assert!(!wf.contains("github.event.comment.user.login"), "{wf}");
        assert!(wf.contains("author_association"), "{wf}");
    }

    #[test]
    fn an_agent_command_installs_no_agent_and_is_shell_quoted() {
        let o = opts(WorkflowAgent::Command("my agent '{prompt}'".into()), &[]);
        let wf = github_actions(&o);
        assert!(
            wf.contains(r"--agent-cmd 'my agent '\''{prompt}'\'''"),
            "{wf}"
        );
        assert!(!wf.contains("secrets."), "{wf}");
        assert!(next_steps_github(&o)[1].contains("--agent-cmd"));
        let pkg = package_json(&o);
        assert!(
            pkg.contains(r#""dandori": "0.1.0""#) && !pkg.contains('@'),
            "{pkg}"
        );
    }

    #[test]
    fn no_event_value_is_expanded_inside_a_script() {
        let wf = github_actions(&opts(WorkflowAgent::Preset(AgentPreset::Gemini), &[]));
        // From the first script on, an expression only as an `env` value.
        for line in wf.lines().skip_while(|l| !l.contains("run: ")) {
            if line.contains("${{") {
                let (key, value) = line.trim().split_once(": ").unwrap();
                assert!(
                    key.chars().all(|c| c.is_ascii_uppercase() || c == '_'),
                    "{line}"
                );
                assert!(
                    value == "${{ github.token }}" || value == format!("${{{{ secrets.{key} }}}}"),
                    "{line}"
                );
            }
        }
    }
}
