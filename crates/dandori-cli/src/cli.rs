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

#[derive(Debug, Args)]
pub struct LocateArgs {
    /// The request or issue text. Omit with --file.
    pub text: Option<String>,
    /// Read the text from a file (a request, an issue).
    #[arg(long, value_name = "FILE", conflicts_with = "text")]
    pub file: Option<PathBuf>,
    /// The repository to search.
    #[arg(long, default_value = ".")]
    pub repo: PathBuf,
    /// How many files to list.
    #[arg(short = 'n', long, default_value_t = 10, value_name = "N")]
    pub limit: usize,
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
