//! Flag definitions: the one source of truth for help.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

#[derive(Debug, Parser)]
#[command(
    name = "dandori",
    version,
    about = "Plan and run the work of LLM coding agents"
)]
pub struct Cli {
    /// Config file (default: ./dandori.yaml or ./config.yaml in the repository, if present).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a config value: `-c planning.max_subtasks=5` (repeatable).
    #[arg(short = 'c', global = true, value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The command sandbox: auto (bubblewrap, else the built-in Landlock fallback,
    /// else refuse), bubblewrap, landlock, or off (run commands unconfined).
    /// Same as `-c sandbox.mode=MODE`.
    #[arg(long, global = true, value_name = "MODE")]
    pub sandbox: Option<dandori_config::SandboxMode>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a planning.json (exit 0 ok, 1 FAIL findings, 2 usage or IO error).
    Validate(ValidateArgs),
    /// Print the dependency graph and execution groups of a planning.json.
    Graph(GraphArgs),
    /// Print a JSON Schema.
    Schema(SchemaArgs),
    /// Plan a request: write planning.json, stage.json and trace.jsonl to a run directory.
    Plan(PlanArgs),
    /// Evaluations.
    #[command(subcommand)]
    Eval(EvalCommand),
    /// The files the planner would look at for a request: ranked, with scores and reasons.
    Locate(LocateArgs),
    /// The environment sub-phase: detect, set up, verify, exec.
    #[command(subcommand)]
    Env(EnvCommand),
    /// Execute a plan (a planning.json or a run directory).
    Run(RunArgs),
    /// Resume a run directory where it stopped.
    Resume(ResumeArgs),
    /// Serve the step handler of distributed runs (`run --engine restate`) as a
    /// Restate service endpoint (HTTP/2); see docs/distributed.md.
    Worker(WorkerArgs),
    /// The whole loop in a minute, no model: copies the example todo-api into a new
    /// git repository, plans a request and runs it with a scripted demo agent.
    Demo(DemoArgs),
    /// Print a shell completion script: `dandori completions bash > /etc/bash_completion.d/dandori`.
    Completions(CompletionsArgs),
    /// Print a man page (roff) generated from these definitions: `dandori man plan | man -l -`.
    Man(ManArgs),
    /// Trust a repository: its own dandori.yaml may then set providers, MCP servers,
    /// commands and sandbox settings (user config `trusted_projects`).
    Trust(TrustArgs),
    /// Serve dandori over MCP (stdio): plan, then be the executor of a run step by step.
    Mcp(McpArgs),
    /// List the runs of a repository with their state, newest first.
    Runs(RunsArgs),
    /// Show one run's progress: steps, groups, current step, tokens, time.
    Status(StatusArgs),
    /// Planning-quality, performance and quality metrics over all runs.
    Metrics(crate::commands::metrics::MetricsArgs),
    /// Render a finished run's report.md again from its records and print it.
    Report(ReportArgs),
    /// Filter and pretty-print a run's trace.jsonl.
    Trace(TraceArgs),
    /// The command policy: check command lines the way `run_command` does.
    #[command(subcommand)]
    Policy(PolicyCommand),
    /// The command sandbox: what this machine supports, and why not.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Interactive shell: `/planning show|set|result`, plan, run, status, help
    /// (history, tab completion; reads commands line by line when stdin is not a
    /// terminal).
    Repl(ReplArgs),
    /// Revise a run's plan from human feedback: new issue / review comments
    /// (--from-issue), --text or --file.
    Revise(ReviseArgs),
    /// Approve a revision that waits for approval (planning.revision.require_human_approval).
    Approve(ApproveArgs),
    /// In GitHub Actions / GitLab CI: read the event (an issue labelled, a
    /// `/dandori plan|approve|revise|run` comment) and do that step, ending in a
    /// pull / merge request (docs/forges.md, "CI").
    Ci(CiArgs),
    /// Write a CI workflow file for dandori (least-privilege permissions).
    #[command(subcommand)]
    Init(InitCommand),
    /// The plan cache (sealed with the user's key): list or clear its entries.
    #[command(subcommand)]
    Cache(CacheCommand),
}

#[derive(Debug, Subcommand)]
pub enum CacheCommand {
    /// The entries of the repository's plan cache, newest first (age, expiry,
    /// the first words of the request, the planner).
    List(CacheArgs),
    /// Remove every entry of the repository's plan cache (or only the expired and
    /// unreadable ones with --expired).
    Clear(CacheClearArgs),
}

#[derive(Debug, Args)]
pub struct CacheArgs {
    /// The repository whose cache to read.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct CacheClearArgs {
    #[command(flatten)]
    pub common: CacheArgs,
    /// Only the expired entries, those the user's key does not open and those kept
    /// in clear by an earlier version.
    #[arg(long)]
    pub expired: bool,
}

#[derive(Debug, Args)]
pub struct CiArgs {
    /// The repository (the CI checkout).
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// The label that asks dandori to plan an issue.
    #[arg(long, default_value = "dandori")]
    pub label: String,
    /// External agent command template for the run, e.g. `claude -p {prompt}`
    /// (default: config `runner.agent_cmd`).
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// An agent CLI preset for the run: `claude`, `codex` or `gemini`.
    #[arg(long, value_enum, conflicts_with = "agent_cmd")]
    pub agent: Option<AgentCli>,
    /// Run without pushing the branch or opening a pull / merge request.
    #[arg(long)]
    pub no_open_pr: bool,
    /// The event payload (default: `GITHUB_EVENT_PATH`; on GitLab CI,
    /// `TRIGGER_PAYLOAD`).
    #[arg(long, value_name = "FILE")]
    pub event: Option<PathBuf>,
    /// The GitHub event name of --event (default: `GITHUB_EVENT_NAME`).
    #[arg(long, value_name = "NAME")]
    pub event_name: Option<String>,
    /// Print the outcome as JSON on stdout (the steps' own output goes to stderr only).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum InitCommand {
    /// `.github/workflows/dandori.yml`: issues labelled and `/dandori …` comments
    /// run `dandori ci`, with GITHUB_TOKEN limited to contents, issues and pull
    /// requests (write).
    GithubAction(InitArgs),
    /// `.gitlab/dandori.gitlab-ci.yml`: a job for pipelines triggered by the
    /// project's issue and note webhooks.
    GitlabCi(InitArgs),
}

#[derive(Debug, Args)]
pub struct InitArgs {
    /// The repository to write the file into.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// The label that asks dandori to plan an issue.
    #[arg(long, default_value = "dandori")]
    pub label: String,
    /// The agent CLI the workflow installs (npm) and runs the steps with; its key
    /// comes from the repository secret (GitHub) / CI/CD variable (GitLab) named
    /// after its variable (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`).
    /// Default: claude.
    #[arg(long, value_enum, conflicts_with = "agent_cmd")]
    pub agent: Option<AgentCli>,
    /// An agent command the workflow runs steps with instead, e.g. `my-agent {prompt}`
    /// (you install it and pass its key).
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// Replace an existing file.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct ReplArgs {
    /// The repository the session works in.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// History file (default: `$DANDORI_REPL_HISTORY`, else
    /// `$XDG_DATA_HOME/dandori/repl_history`, else `~/.local/share/dandori/repl_history`).
    #[arg(long, value_name = "FILE")]
    pub history: Option<PathBuf>,
    /// Keep no history.
    #[arg(long)]
    pub no_history: bool,
}

#[derive(Debug, Args)]
pub struct ReviseArgs {
    /// A run directory.
    pub run_dir: PathBuf,
    /// Read the new comments (and reviews) on the run's issue / pull request /
    /// merge request from users allowed to steer.
    #[arg(long, conflicts_with_all = ["text", "file"])]
    pub from_issue: bool,
    /// The feedback as text (it may start with `-`).
    #[arg(long, conflicts_with = "file", allow_hyphen_values = true)]
    pub text: Option<String>,
    /// Read the feedback from a file.
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Report the revision on the issue (default: as `dandori plan --comment` chose).
    #[arg(long)]
    pub comment: bool,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The model that writes the seed's `plan_revision` (default:
    /// `llm.default_provider`). Without one, or when its answer is unusable,
    /// the feedback's explicit edits are applied.
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// Apply only the explicit edits, even with a provider configured.
    #[arg(long, conflicts_with_all = ["provider", "base_url", "model", "api_key_env"])]
    pub offline: bool,
}

/// The LLM provider flags of `plan` and `revise`.
#[derive(Debug, Clone, Default, Args)]
pub struct ProviderArgs {
    /// A provider named in config (`llm.providers[].name`), or `openai` / `anthropic`
    /// for an ad-hoc endpoint with --base-url and --model.
    #[arg(long)]
    pub provider: Option<String>,
    /// The endpoint of an ad-hoc provider, e.g. `http://localhost:11434/v1` (with
    /// --provider openai|anthropic), or an override of the configured one.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model name to ask (overrides the provider's configured model).
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// The environment variable that holds the API key (its value is never logged).
    #[arg(long, value_name = "VAR")]
    pub api_key_env: Option<String>,
}

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// A run directory.
    pub run_dir: PathBuf,
    /// Approve only if a permitted user replied `/approve` on the issue.
    #[arg(long)]
    pub from_issue: bool,
    /// Print the outcome as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// A subcommand (`plan`, `env setup`, …) for its own page; omit for dandori(1).
    #[arg(value_name = "COMMAND", num_args = 0..)]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// A new or empty directory for the demo repository (nothing else is touched).
    #[arg(default_value = "dandori-demo", value_name = "DIR")]
    pub dir: PathBuf,
    /// Print the run's completion record as JSON instead of the summary.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The repository directory (default: the current directory).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// List the trusted repositories.
    #[arg(long, conflicts_with_all = ["remove", "dir"])]
    pub list: bool,
    /// Stop trusting DIR.
    #[arg(long)]
    pub remove: bool,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum McpToolSet {
    /// plan, next, step, step_update, report.
    Core,
    /// core + validate, graph, status, runs, env_detect, locate.
    Standard,
    /// standard + trace.
    All,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Which tools to expose (smaller sets cost the client less context).
    #[arg(long, value_enum, default_value = "core")]
    pub tools: McpToolSet,
    /// Print the tool list with the size of its schemas instead of serving.
    #[arg(long)]
    pub list: bool,
    /// Serve MCP over streamable HTTP on ADDR (`PORT`, `HOST:PORT`, `[IPv6]:PORT`;
    /// port 0 picks a free one) at `/mcp` instead of stdio. Loopback only unless
    /// --allow-remote; a token in DANDORI_MCP_TOKEN is then required as
    /// `Authorization: Bearer`.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// Allow --http on a non-loopback address (requires DANDORI_MCP_TOKEN).
    #[arg(long, requires = "http")]
    pub allow_remote: bool,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// The repository whose runs to list.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// Root of run directories (default from config `runs.root`).
    #[arg(long)]
    pub runs_root: Option<PathBuf>,
    /// Print the runs as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A run directory.
    pub run_dir: PathBuf,
    /// Print the status as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A run directory.
    pub run_dir: PathBuf,
    /// Print only the path of the re-rendered report.md.
    #[arg(long)]
    pub path_only: bool,
    /// Also write report.html (one self-contained page: the dependency graph and
    /// the timeline drawn as inline SVG, no script) and print its path.
    #[arg(long)]
    pub html: bool,
    /// Where to write report.html (default: the run directory).
    #[arg(long, value_name = "FILE", requires = "html")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct TraceArgs {
    /// A run directory (or its trace.jsonl).
    pub run_dir: PathBuf,
    /// Only these events (repeatable, or comma-separated), e.g. `--event STEP_END`.
    #[arg(long, value_delimiter = ',')]
    pub event: Vec<String>,
    /// Only events of this step (`data.step_id`).
    #[arg(long)]
    pub step: Option<String>,
    /// Only events since an RFC 3339 time or a duration back from now (`15m`, `2h`).
    #[arg(long)]
    pub since: Option<String>,
    /// Which events: `summary` (each phase's start, decisions and end) or
    /// `full` (every event, the details too).
    #[arg(long, value_name = "summary|full")]
    pub visibility: Option<String>,
    /// Keep printing new events until the run ends (`EXECUTION_END`).
    #[arg(long)]
    pub follow: bool,
    /// One JSON event per line instead of the readable form.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Print the verdict (allowed / refused / needs approval), the reason code and
    /// the rule for each command line (exit 0 all allowed, 1 otherwise, 2 usage error).
    Check(PolicyCheckArgs),
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Probe each mechanism (bubblewrap, the built-in Landlock fallback) here:
    /// which works, which `auto` picks, and why the others do not (exit 0 when one
    /// works, 1 when commands would be refused).
    Check(SandboxCheckArgs),
}

#[derive(Debug, Args)]
pub struct SandboxCheckArgs {
    /// Print the result as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct PolicyCheckArgs {
    /// Print the verdicts as JSON.
    #[arg(long)]
    pub json: bool,
    /// Check every line of FILE (`#` starts a comment line, blank lines are skipped).
    #[arg(long, value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The repository whose config extends the allowlist; absolute paths under it
    /// count as inside the worktree.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// The command line (its words are joined by spaces; quote it to keep shell syntax).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// A planning.json, or a run directory holding one.
    #[arg(value_name = "PLANNING_OR_RUN_DIR")]
    pub file: PathBuf,
    /// Print the findings as JSON (`{"status", "errors", "warnings"}`) on stdout.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    /// Edges, execution groups and the critical path, one per line.
    Text,
    /// The analysis as JSON.
    Json,
    /// A Mermaid flowchart.
    Mermaid,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    /// A planning.json, or a run directory holding one.
    #[arg(value_name = "PLANNING_OR_RUN_DIR")]
    pub file: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: GraphFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    /// planning.json.
    Planning,
    /// stage.json.
    Stage,
    /// dandori.yaml (the configuration).
    Config,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// Which document's JSON Schema to print.
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A request file (requests/<id>.md). Omit with --text or --issue.
    pub request: Option<PathBuf>,
    /// Plan an issue, pull request or merge request: `github:OWNER/REPO#N`,
    /// `github-pr:OWNER/REPO#N`, `gitlab:GROUP/PROJECT#N`, `gitlab-mr:GROUP/PROJECT!N`
    /// or its URL. Token: GITHUB_TOKEN / GH_TOKEN, GITLAB_TOKEN.
    #[arg(long, value_name = "REF", conflicts_with_all = ["request", "text"])]
    pub issue: Option<String>,
    /// With --issue: post the plan summary and a status comment on the issue
    /// (also config `forges.comment: true`).
    #[arg(long, requires = "issue")]
    pub comment: bool,
    /// The repository to plan for.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// The request as free text instead of a file (it may start with `-`, as a
    /// pasted bullet does).
    #[arg(long, allow_hyphen_values = true)]
    pub text: Option<String>,
    /// Print the outcome (run directory, files, validation, usage) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// Root of run directories (default from config `runs.root`).
    #[arg(long)]
    pub runs_root: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LocateArgs {
    /// The request or issue text. Omit with --file.
    pub text: Option<String>,
    /// Read the text from a file (a request, an issue).
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// The repository to search.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// How many files to list.
    #[arg(short = 'n', long, default_value_t = 10, value_name = "N")]
    pub limit: usize,
    /// Print the ranked files, scores and reasons as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum EvalCommand {
    /// File-level localisation on SWE-bench-format instances.
    Localize(LocalizeArgs),
}

#[derive(Debug, Args)]
pub struct LocalizeArgs {
    /// SWE-bench-format instances: a JSON array or JSON lines with `instance_id`,
    /// `repo`, `base_commit`, `problem_statement` and `patch`, `golden_patch` or
    /// `patch_files`.
    pub dataset: PathBuf,
    /// Checkouts: `DIR/<instance_id>/`, or clones `DIR/<owner>__<name>/` or
    /// `DIR/<owner>/<name>/` (read only; each base commit is checked out into a
    /// temporary directory).
    #[arg(long, value_parser = existing_path, value_name = "DIR")]
    pub repos: PathBuf,
    /// Print the figures and per-instance results as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Also report a baseline beside dandori's retrieval.
    #[arg(long, value_enum)]
    pub baseline: Option<LocalizeBaseline>,
    /// Evaluate at most N instances.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Only one half of the dataset: `tune` = instances at even positions (what
    /// the ranking weights were tuned on), `held-out` = odd positions.
    #[arg(long, value_enum, default_value = "all")]
    pub split: LocalizeSplit,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LocalizeSplit {
    /// Every instance.
    All,
    /// Instances at even positions (the ranking weights were tuned on them).
    Tune,
    /// Instances at odd positions.
    HeldOut,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum LocalizeBaseline {
    /// Plain BM25 over whole-file contents.
    Bm25,
}

#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Analyse the environment files and show the selected environment and its commands.
    Detect(EnvArgs),
    /// Set up and verify the environment (exit 0 success or partial, 1 failed, 3 blocked).
    Setup(EnvSetupArgs),
    /// Verify the prepared environment again (exit 0 success or partial, 1 failed).
    Verify(EnvArgs),
    /// Run a command inside the prepared environment (venv, node_modules/.bin on PATH).
    Exec(EnvExecArgs),
}

#[derive(Debug, Args)]
pub struct EnvArgs {
    /// The repository.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// Print the result as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// The task's target language (python, node/typescript, java, go, rust): rule 1
    /// of the primary-environment choice.
    #[arg(long)]
    pub language: Option<String>,
    /// Where setup.json, verification.json and the logs go (default
    /// <repo>/.git/dandori/environment in a git repository, else <repo>/.dandori/environment).
    #[arg(long, value_name = "DIR")]
    pub record_dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct EnvSetupArgs {
    #[command(flatten)]
    pub common: EnvArgs,
    /// Prepare again even when manifests and lock files are unchanged.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct EnvExecArgs {
    /// The repository whose prepared environment to use.
    #[arg(long, value_parser = existing_path, default_value = ".")]
    pub repo: PathBuf,
    /// Run the command unconfined (default: inside the command sandbox).
    #[arg(long)]
    pub no_sandbox: bool,
    /// Allow network access inside the sandbox (default: off).
    #[arg(long)]
    pub network: bool,
    /// The command and its arguments, after `--`.
    #[arg(trailing_var_arg = true, required = true)]
    pub cmd: Vec<String>,
}

/// The agent CLIs of `--agent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentCli {
    /// Claude Code (`claude`).
    Claude,
    /// Codex CLI (`codex`).
    Codex,
    /// Gemini CLI (`gemini`).
    Gemini,
}

impl AgentCli {
    pub fn preset(self) -> dandori_config::AgentPreset {
        match self {
            AgentCli::Claude => dandori_config::AgentPreset::Claude,
            AgentCli::Codex => dandori_config::AgentPreset::Codex,
            AgentCli::Gemini => dandori_config::AgentPreset::Gemini,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExecutorKind {
    /// The built-in tool loop over the configured model.
    Llm,
    /// An external agent command (--agent-cmd or config `runner.agent_cmd`).
    Command,
    /// No executor: gates and environment run, steps wait for a model (exit 3).
    None,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A planning.json or a run directory.
    pub target: PathBuf,
    /// The repository (default: the one the plan was made for, recorded in the run
    /// directory; a different repository is refused with REPO_MISMATCH).
    #[arg(long, value_parser = existing_path, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Who does the steps' work (default: the one stage.json records, else `command`
    /// when config `runner.agent_cmd` is set, else `llm` when `llm.default_provider`
    /// is set, else `none`).
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorKind>,
    /// External agent command template, e.g. `claude -p {prompt}`; placeholders
    /// {prompt} {prompt_file} {step_id} {workdir}, each replaced inside one argument.
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// An agent CLI preset: `claude` (Claude Code), `codex` (Codex CLI) or
    /// `gemini` (Gemini CLI), run headless inside the sandbox with its key,
    /// sessions and usage (docs/agents.md). Default: config `runner.agent`.
    #[arg(long, value_enum, conflicts_with = "agent_cmd")]
    pub agent: Option<AgentCli>,
    /// Approve tools that require approval when not on a terminal.
    #[arg(long)]
    pub approve: bool,
    /// Print the completion record (or the error) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// For a run planned from an issue: push the work branch to `origin`
    /// (branch `dandori-pr/REQUEST_ID`, the forge token passed to that one push)
    /// and open or update a pull request (GitHub) / merge request (GitLab) whose
    /// body is the run report; a draft while the goal is not achieved.
    #[arg(long)]
    pub open_pr: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    /// The run directory to resume (`.dandori/runs/<request-id>/<run-id>`).
    pub run_dir: PathBuf,
    /// The repository (default: the one the plan was made for, recorded in the run
    /// directory; a different repository is refused with REPO_MISMATCH).
    #[arg(long, value_parser = existing_path, value_name = "DIR")]
    pub repo: Option<PathBuf>,
    /// Switch executor (default: the one the run started with, kept in stage.json).
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorKind>,
    /// External agent command template, e.g. `claude -p {prompt}`.
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// An agent CLI preset: `claude` (Claude Code), `codex` (Codex CLI) or
    /// `gemini` (Gemini CLI), run headless inside the sandbox with its key,
    /// sessions and usage (docs/agents.md). Default: config `runner.agent`.
    #[arg(long, value_enum, conflicts_with = "agent_cmd")]
    pub agent: Option<AgentCli>,
    /// Approve tools that require approval when not on a terminal.
    #[arg(long)]
    pub approve: bool,
    /// Print the completion record (or the error) as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// Push the work branch and open or update its pull / merge request, as
    /// `dandori run --open-pr`.
    #[arg(long)]
    pub open_pr: bool,
    #[command(flatten)]
    pub engine: EngineArgs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Engine {
    /// This machine: a worktree pool of this process.
    Local,
    /// Workers on any machine, through a Restate server (docs/distributed.md).
    Restate,
}

/// Where a run's steps run.
#[derive(Debug, Clone, Args)]
pub struct EngineArgs {
    /// Where steps run (default: the engine stage.json records, else `local`).
    #[arg(long, value_enum)]
    pub engine: Option<Engine>,
    /// Restate's ingress URL (default http://127.0.0.1:8080).
    #[arg(long, value_name = "URL")]
    pub restate_url: Option<String>,
    /// Restate's admin API URL (default: the ingress host, port 9070).
    #[arg(long, value_name = "URL")]
    pub restate_admin_url: Option<String>,
    /// The git remote workers fetch bases from and push step commits to
    /// (default: the repository's `origin`).
    #[arg(long, value_name = "URL")]
    pub remote: Option<String>,
    /// A worker endpoint to register with Restate when no worker is registered
    /// yet (repeatable), e.g. http://127.0.0.1:9080.
    #[arg(long, value_name = "URL")]
    pub register_worker: Vec<String>,
}

#[derive(Debug, Args)]
pub struct WorkerArgs {
    /// Address to serve the step handler on (HTTP/2), e.g. 0.0.0.0:9080.
    #[arg(long, value_name = "ADDR")]
    pub listen: String,
    /// The worker's own working directory: repositories, run logs, worktrees.
    #[arg(long, value_name = "DIR", default_value = ".dandori-worker")]
    pub work_dir: PathBuf,
    /// Who does the steps' work (default: `command` when config `runner.agent_cmd`
    /// is set, else `llm` when `llm.default_provider` is set, else `none`).
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorKind>,
    /// External agent command template, e.g. `claude -p {prompt}`.
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// An agent CLI preset: `claude` (Claude Code), `codex` (Codex CLI) or
    /// `gemini` (Gemini CLI), run headless inside the sandbox with its key,
    /// sessions and usage (docs/agents.md). Default: config `runner.agent`.
    #[arg(long, value_enum, conflicts_with = "agent_cmd")]
    pub agent: Option<AgentCli>,
    /// Approve tools that require approval (a worker has no terminal).
    #[arg(long)]
    pub approve: bool,
    /// Register this worker with Restate's admin API at start (e.g. http://127.0.0.1:9070).
    #[arg(long, value_name = "ADMIN_URL")]
    pub register: Option<String>,
    /// The URL Restate reaches this worker at (default: http://<listen>).
    #[arg(long, value_name = "URL")]
    pub advertise: Option<String>,
    /// A Restate request identity public key (`publickeyv1_…`, repeatable; also
    /// DANDORI_RESTATE_IDENTITY_KEYS): only requests signed by that server are answered.
    #[arg(long, value_name = "KEY")]
    pub identity_key: Vec<String>,
}

/// Every command, flag and argument has a help line. The test walks the clap
/// tree, so flags added later (by any command's owner) are covered too. It lives
/// here because the definitions belong to the binary.
#[cfg(test)]
mod help_lines {
    use clap::CommandFactory;

    fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "help" || id == "version" {
                continue;
            }
            if arg.get_help().is_none() && arg.get_long_help().is_none() {
                missing.push(format!("{path} {id}"));
            }
            for v in arg.get_possible_values() {
                if v.get_help().is_none()
                    && !v.is_hide_set()
                    && arg.get_value_parser().type_id()
                        != clap::builder::ValueParser::bool().type_id()
                {
                    // Enum values of our own ValueEnums need a line too.
                    if !matches!(
                        v.get_name(),
                        "bash" | "zsh" | "fish" | "elvish" | "powershell"
                    ) {
                        missing.push(format!("{path} {id}={}", v.get_name()));
                    }
                }
            }
        }
        for sub in cmd.get_subcommands() {
            let sub_path = format!("{path} {}", sub.get_name());
            if sub.get_about().is_none() && sub.get_long_about().is_none() {
                missing.push(sub_path.clone());
            }
            walk(sub, &sub_path, missing);
        }
    }

    #[test]
    fn every_command_flag_and_argument_has_a_help_line() {
        let mut cmd = super::Cli::command();
        cmd.build();
        let mut missing = Vec::new();
        walk(&cmd, "dandori", &mut missing);
        assert!(missing.is_empty(), "no help line: {missing:#?}");
    }
}

/// A path argument that must exist (`--repo`): resolved against the current
/// directory, checked before any command reads it.
#[derive(Debug)]
pub struct PathNotFound {
    pub path: PathBuf,
    pub cwd: PathBuf,
}

impl std::fmt::Display for PathNotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: no such file or directory (a relative path is read from the current directory {})",
            self.path.display(),
            self.cwd.display()
        )
    }
}

impl std::error::Error for PathNotFound {}

/// [`PathNotFound`] unless `s` names something that exists.
pub fn existing_path(s: &str) -> Result<PathBuf, PathNotFound> {
    let path = PathBuf::from(s);
    if std::fs::symlink_metadata(&path).is_ok() {
        return Ok(path);
    }
    Err(PathNotFound {
        path,
        cwd: std::env::current_dir().unwrap_or_default(),
    })
}
