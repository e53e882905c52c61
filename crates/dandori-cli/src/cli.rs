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
    /// The environment sub-phase: detect, set up, verify, exec.
    #[command(subcommand)]
    Env(EnvCommand),
    /// Execute a plan (a planning.json or a run directory).
    Run(RunArgs),
    /// Resume a run directory where it stopped.
    Resume(ResumeArgs),
    /// Trust a repository: its own dandori.yaml may then set providers, MCP servers,
    /// commands and sandbox settings (user config `trusted_projects`).
    Trust(TrustArgs),
    /// Serve dandori over MCP (stdio): plan, then be the executor of a run step by step.
    Mcp(McpArgs),
    /// List the runs of a repository with their state, newest first.
    Runs(RunsArgs),
    /// Show one run's progress: steps, groups, current step, tokens, time.
    Status(StatusArgs),
    /// Render a finished run's report.md again from its records and print it.
    Report(ReportArgs),
    /// Filter and pretty-print a run's trace.jsonl.
    Trace(TraceArgs),
    /// The command policy: check command lines the way `run_command` does.
    #[command(subcommand)]
    Policy(PolicyCommand),
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
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Root of run directories (default from config `runs.root`).
    #[arg(long)]
    pub runs_root: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// A run directory.
    pub run_dir: PathBuf,
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
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The command line (its words are joined by spaces; quote it to keep shell syntax).
    #[arg(last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ValidateArgs {
    pub file: PathBuf,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Text,
    Json,
    Mermaid,
}

#[derive(Debug, Args)]
pub struct GraphArgs {
    pub file: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: GraphFormat,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SchemaKind {
    Planning,
    Stage,
    Config,
}

#[derive(Debug, Args)]
pub struct SchemaArgs {
    #[arg(value_enum)]
    pub kind: SchemaKind,
}

#[derive(Debug, Args)]
pub struct PlanArgs {
    /// A request file (requests/<id>.md). Omit with --text.
    pub request: Option<PathBuf>,
    /// The repository to plan for.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// The request as free text instead of a file.
    #[arg(long)]
    pub text: Option<String>,
    #[arg(long)]
    pub json: bool,
    /// A provider named in config (`llm.providers[].name`), or `openai` / `anthropic`
    /// for an ad-hoc endpoint with --base-url and --model.
    #[arg(long)]
    pub provider: Option<String>,
    #[arg(long)]
    pub base_url: Option<String>,
    #[arg(long)]
    pub model: Option<String>,
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// Root of run directories (default from config `runs.root`).
    #[arg(long)]
    pub runs_root: Option<PathBuf>,
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
    #[arg(long, value_name = "DIR")]
    pub repos: PathBuf,
    #[arg(long)]
    pub json: bool,
    /// Also report a baseline beside dandori's retrieval.
    #[arg(long, value_enum)]
    pub baseline: Option<LocalizeBaseline>,
    /// Evaluate at most N instances.
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
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
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    #[arg(long)]
    pub json: bool,
    /// The task's target language (python, node/typescript, java, go, rust): rule 1
    /// of the primary-environment choice.
    #[arg(long)]
    pub language: Option<String>,
    /// Where setup.json, verification.json and the logs go (default
    /// <repo>/.dandori/environment).
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
    #[arg(long, default_value = ".")]
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

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExecutorKind {
    Llm,
    Command,
    None,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A planning.json or a run directory.
    pub target: PathBuf,
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorKind>,
    /// External agent command template, e.g. `claude -p {prompt}`; placeholders
    /// {prompt} {prompt_file} {step_id} {workdir}, each replaced inside one argument.
    #[arg(long)]
    pub agent_cmd: Option<String>,
    /// Approve tools that require approval when not on a terminal.
    #[arg(long)]
    pub approve: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ResumeArgs {
    pub run_dir: PathBuf,
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// Switch executor (default: the one the run started with, kept in stage.json).
    #[arg(long, value_enum)]
    pub executor: Option<ExecutorKind>,
    /// External agent command template, e.g. `claude -p {prompt}`.
    #[arg(long)]
    pub agent_cmd: Option<String>,
    #[arg(long)]
    pub approve: bool,
    #[arg(long)]
    pub json: bool,
}
