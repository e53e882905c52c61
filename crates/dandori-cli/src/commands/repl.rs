//! `dandori repl`: an interactive shell over the CLI.
//!
//! * Seed 003 §8.2: `/planning show`, `/planning set KEY VALUE` (written through
//!   the config layering by `dandori_config::edit`; the answer names the file),
//!   `/planning result TASK_ID` (a request id or run id: its status and graph).
//! * Every CLI command as it is typed on the command line (`plan …`, `run …`,
//!   `status [RUN_DIR]`, `runs`, `validate …`), parsed by the same clap
//!   definitions, with the session's `--config` / `-c`.
//! * `help`, `exit` / `quit` (or Ctrl-D).
//!
//! On a terminal: line editing, history (see [`history_path`]) and tab completion
//! of commands, `/planning` subcommands, config keys, run ids and paths. When
//! stdin is not a terminal the commands are read line by line (scripts); the exit
//! status is that of the last failing command (0 when none failed).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{CommandFactory, Parser};
use rustyline::completion::{Completer, FilenameCompleter, Pair};
use rustyline::error::ReadlineError;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Context, Editor, Helper};

use crate::cli::{Cli, ReplArgs};
use crate::output;

/// The prompt on a terminal.
pub const PROMPT: &str = "dandori> ";
/// Names the REPL understands besides the CLI's subcommands.
const REPL_WORDS: &[&str] = &["/planning", "help", "exit", "quit"];
const PLANNING_SUBCOMMANDS: &[&str] = &["show", "set", "result"];

const HELP: &str = "\
Commands:
  /planning show                 the effective planning settings (task-planning.json and planning.*) and their files
  /planning set KEY VALUE        set a value (short key like auto_chunk_threshold, or a dotted key);
                                 written to the file the configuration is read from, which is named
  /planning result TASK_ID       the planning result of a request id or run id: progress and execution graph
  plan REQUEST [flags]           plan a request (same flags as `dandori plan`)
  run PLANNING [flags]           run a plan (same flags as `dandori run`)
  status [RUN_DIR]               a run's progress (default: the newest run)
  runs | report | trace | validate | graph | env | …   any dandori command, as on the command line
  help                           this text (`COMMAND --help` for a command's flags)
  exit | quit                    leave (Ctrl-D too)
Tab completes commands, /planning subcommands, config keys, run ids and paths.";

struct Session {
    config: Option<PathBuf>,
    sets: Vec<String>,
    env: BTreeMap<String, String>,
}

pub fn repl(config: Option<&Path>, sets: &[String], args: &ReplArgs) -> anyhow::Result<ExitCode> {
    // Paths typed in the session are relative to the repository.
    let config = config.map(|c| std::path::absolute(c).unwrap_or_else(|_| c.to_path_buf()));
    let history = if args.no_history {
        None
    } else {
        args.history
            .as_ref()
            .map(|h| std::path::absolute(h).unwrap_or_else(|_| h.clone()))
            .or_else(|| history_path(&std::env::vars().collect()))
    };
    std::env::set_current_dir(&args.repo).map_err(|e| {
        anyhow::anyhow!(
            "{}: --repo {}: {e}",
            dandori_report::reason::FILE_NOT_FOUND,
            args.repo.display()
        )
    })?;
    let session = Session {
        config,
        sets: sets.to_vec(),
        env: std::env::vars().collect(),
    };
    if std::io::stdin().is_terminal() {
        interactive(&session, history.as_deref())
    } else {
        scripted(&session)
    }
}

/// The history file: `$DANDORI_REPL_HISTORY`, else
/// `$XDG_DATA_HOME/dandori/repl_history`, else `$HOME/.local/share/dandori/repl_history`
/// (only absolute values count); None without any of them.
pub fn history_path(env: &BTreeMap<String, String>) -> Option<PathBuf> {
    let abs = |k: &str| env.get(k).map(PathBuf::from).filter(|p| p.is_absolute());
    abs("DANDORI_REPL_HISTORY")
        .or_else(|| abs("XDG_DATA_HOME").map(|d| d.join("dandori/repl_history")))
        .or_else(|| abs("HOME").map(|h| h.join(".local/share/dandori/repl_history")))
}

fn scripted(session: &Session) -> anyhow::Result<ExitCode> {
    let mut last_failure: Option<u8> = None;
    for line in std::io::stdin().lock().lines() {
        let line =
            line.map_err(|e| anyhow::anyhow!("{}: stdin: {e}", dandori_report::reason::IO_ERROR))?;
        match execute(session, &line) {
            Step::Exit => break,
            Step::Done(0) => {}
            Step::Done(code) => last_failure = Some(code),
        }
    }
    Ok(ExitCode::from(last_failure.unwrap_or(0)))
}

fn interactive(session: &Session, history: Option<&Path>) -> anyhow::Result<ExitCode> {
    let config = Config::builder()
        .completion_type(CompletionType::List)
        .auto_add_history(true)
        .max_history_size(5000)?
        .build();
    let mut editor: Editor<ReplHelper, FileHistory> = Editor::with_config(config)?;
    editor.set_helper(Some(ReplHelper::new(session)));
    if let Some(h) = history {
        if let Some(dir) = h.parent() {
            let _ = dandori_fs::create_dir_all(dir);
        }
        // A missing file is the first session.
        let _ = editor.load_history(h);
    }
    output::line("dandori repl — `help` for commands, Ctrl-D to leave");
    loop {
        match editor.readline(PROMPT) {
            Ok(line) => {
                let step = execute(session, &line);
                if let Some(h) = history
                    && let Err(e) = editor.save_history(h)
                {
                    output::progress(&format!("warning: history {}: {e}", h.display()));
                }
                if matches!(step, Step::Exit) {
                    break;
                }
                // New runs and keys become completions.
                if let Some(helper) = editor.helper_mut() {
                    helper.refresh(session);
                }
            }
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                return Err(anyhow::anyhow!(
                    "{}: reading the terminal: {e}",
                    dandori_report::reason::IO_ERROR
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

enum Step {
    Done(u8),
    Exit,
}

fn execute(session: &Session, line: &str) -> Step {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Step::Done(0);
    }
    let words = match shell_words::split(line) {
        Ok(w) => w,
        Err(e) => {
            output::error(&format!(
                "{}: {e} in `{line}`",
                dandori_report::reason::USAGE_ERROR
            ));
            return Step::Done(2);
        }
    };
    let first = words[0].as_str();
    let result = match first {
        "exit" | "quit" | "/exit" | "/quit" => return Step::Exit,
        "help" | "/help" | "?" => {
            output::line(HELP);
            Ok(ExitCode::SUCCESS)
        }
        "/planning" => planning(session, &words[1..]),
        "repl" => Err(anyhow::anyhow!(
            "{}: already in the REPL",
            dandori_report::reason::USAGE_ERROR
        )),
        _ => cli_command(session, &words),
    };
    match result {
        Ok(code) if code == ExitCode::SUCCESS => Step::Done(0),
        Ok(code) => Step::Done(exit_byte(code)),
        Err(e) => {
            output::error(&format!("{e:#}"));
            Step::Done(2)
        }
    }
}

/// The number inside an `ExitCode` (it has no getter): its `Debug` form.
fn exit_byte(code: ExitCode) -> u8 {
    format!("{code:?}")
        .chars()
        .filter(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or(1)
}

/// A CLI command typed in the session, with the session's `--config` and `-c`.
fn cli_command(session: &Session, words: &[String]) -> anyhow::Result<ExitCode> {
    let mut words: Vec<String> = words.to_vec();
    if words.first().map(String::as_str) == Some("dandori") {
        words.remove(0);
    }
    if let Some(w) = words.first_mut()
        && let Some(bare) = w.strip_prefix('/')
    {
        *w = bare.to_string();
    }
    // `status` alone: the newest run.
    if words.len() == 1 && words[0] == "status" {
        let runs = list_runs(session)?;
        let newest = runs.first().ok_or_else(|| {
            anyhow::anyhow!(
                "{}: no runs yet; `plan` a request first",
                dandori_report::reason::RUN_DIR_INVALID
            )
        })?;
        words.push(newest.run_dir.display().to_string());
    }
    let mut argv = vec!["dandori".to_string()];
    if let Some(c) = &session.config {
        argv.push("--config".to_string());
        argv.push(c.display().to_string());
    }
    for s in &session.sets {
        argv.push("-c".to_string());
        argv.push(s.clone());
    }
    argv.extend(words);
    match Cli::try_parse_from(&argv) {
        Ok(cli) => super::dispatch(cli),
        Err(e) => {
            use clap::error::ErrorKind;
            let text = e.render().to_string();
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                output::line(text.trim_end());
                Ok(ExitCode::SUCCESS)
            } else {
                output::progress(text.trim_end());
                Err(anyhow::anyhow!(
                    "{}: see `help`, or `COMMAND --help`",
                    dandori_report::reason::USAGE_ERROR
                ))
            }
        }
    }
}

fn load_options(session: &Session) -> dandori_config::LoadOptions {
    dandori_config::LoadOptions {
        repo: std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
        config_path: session.config.clone(),
        task_planning_path: None,
        env: session.env.clone(),
        overrides: session.sets.clone(),
        task_type: None,
        user_config_path: None,
    }
}

fn load(session: &Session) -> anyhow::Result<dandori_config::Loaded> {
    super::load_config(
        session.config.as_deref(),
        &session.sets,
        Path::new("."),
        &session.env,
    )
}

fn list_runs(session: &Session) -> anyhow::Result<Vec<dandori_mcp::inspect::RunSummary>> {
    runs_of(&load(session)?)
}

/// The runs under the runs root of a loaded configuration, newest first.
fn runs_of(
    loaded: &dandori_config::Loaded,
) -> anyhow::Result<Vec<dandori_mcp::inspect::RunSummary>> {
    let root = dandori_planner::run_dir::runs_root(Path::new("."), None, &loaded.config.runs.root);
    dandori_mcp::inspect::list_runs(&root).map_err(|e| anyhow::anyhow!("{e}"))
}

fn planning(session: &Session, args: &[String]) -> anyhow::Result<ExitCode> {
    let usage = || {
        anyhow::anyhow!(
            "{}: usage: /planning show | /planning set KEY VALUE | /planning result TASK_ID",
            dandori_report::reason::USAGE_ERROR
        )
    };
    match args.first().map(String::as_str) {
        Some("show") if args.len() == 1 || (args.len() == 2 && args[1] == "--json") => {
            show(session, args.len() == 2)
        }
        Some("set") if args.len() >= 3 => set(session, &args[1], &args[2..].join(" ")),
        Some("result") if args.len() == 2 => result(session, &args[1]),
        _ => Err(usage()),
    }
}

/// Keys `/planning show` lists from config.yaml (task-planning.json is listed
/// whole): the planning section without its nested maps, and the provider.
fn shown_config_key(key: &str) -> bool {
    (key.starts_with("planning.")
        && !key.starts_with("planning.environment_setup.")
        && !key.starts_with("planning.task_specific")
        && !key.starts_with("planning.permissions.")
        && !key.starts_with("planning.security."))
        || key == "llm.default_provider"
        || key == "sandbox.mode"
}

fn show(session: &Session, json: bool) -> anyhow::Result<ExitCode> {
    let loaded = load(session)?;
    let keys = dandori_config::edit::known_keys(&loaded);
    let value = |k: &str| dandori_config::edit::effective_value(&loaded, k).unwrap_or_default();
    let describe = |f: &Option<PathBuf>| match f {
        Some(p) => p.display().to_string(),
        None => "defaults (no file)".to_string(),
    };
    let task: Vec<&String> = keys
        .iter()
        .filter(|k| k.starts_with("task_planning."))
        .collect();
    let config: Vec<&String> = keys.iter().filter(|k| shown_config_key(k)).collect();
    if json {
        let obj = |ks: &[&String]| {
            ks.iter()
                .map(|k| ((*k).clone(), value(k)))
                .collect::<serde_json::Map<_, _>>()
        };
        output::json(&serde_json::json!({
            "task_planning_file": loaded.task_planning_file,
            "config_file": loaded.config_file,
            "task_planning": obj(&task),
            "config": obj(&config),
        }));
        return Ok(ExitCode::SUCCESS);
    }
    output::line(&format!(
        "task-planning.json: {}",
        describe(&loaded.task_planning_file)
    ));
    for k in task {
        let short = k.trim_start_matches("task_planning.");
        output::line(&format!("  {short} = {}", value(k)));
    }
    output::line(&format!("config: {}", describe(&loaded.config_file)));
    for k in config {
        output::line(&format!("  {k} = {}", value(k)));
    }
    Ok(ExitCode::SUCCESS)
}

fn set(session: &Session, key: &str, raw: &str) -> anyhow::Result<ExitCode> {
    let outcome = dandori_config::edit::set_value(&load_options(session), key, raw)
        .map_err(|e| anyhow::anyhow!("CONFIG_INVALID: {e}"))?;
    for w in &outcome.reloaded.warnings {
        output::progress(&format!("warning: {w}"));
    }
    output::line(&format!(
        "{} = {} → {}{}",
        outcome.key,
        outcome.value,
        outcome.file.display(),
        if outcome.created { " (created)" } else { "" }
    ));
    if let Some(effective) = &outcome.overridden_by_later_layer {
        output::line(&format!(
            "note: the effective value is still {effective}: an environment variable, a -c of this session, or the repository's trust decides (see `/planning show`)"
        ));
    }
    Ok(ExitCode::SUCCESS)
}

fn result(session: &Session, id: &str) -> anyhow::Result<ExitCode> {
    let runs = list_runs(session)?;
    let run = runs
        .iter()
        .find(|r| r.run_id == id)
        .or_else(|| runs.iter().find(|r| r.request_id == id))
        .ok_or_else(|| {
            let known: Vec<String> = runs
                .iter()
                .map(|r| format!("{}/{}", r.request_id, r.run_id))
                .take(10)
                .collect();
            anyhow::anyhow!(
                "{}: no run of `{id}` (a request id or run id); runs: {}",
                dandori_report::reason::RUN_DIR_INVALID,
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )
        })?;
    output::line(&format!(
        "{} / {} — {} ({}/{} steps done) — {}",
        run.request_id,
        run.run_id,
        run.status,
        run.done,
        run.total,
        run.run_dir.display()
    ));
    let dir = run.run_dir.display().to_string();
    let status = cli_command(session, &["status".to_string(), dir.clone()])?;
    let graph = cli_command(session, &["graph".to_string(), dir])?;
    Ok(if status == ExitCode::SUCCESS {
        graph
    } else {
        status
    })
}

/// Completion of commands, `/planning` subcommands, config keys, run ids and paths.
struct ReplHelper {
    commands: Vec<String>,
    keys: Vec<String>,
    runs: Vec<String>,
    files: FilenameCompleter,
}

impl ReplHelper {
    fn new(session: &Session) -> ReplHelper {
        let mut commands: Vec<String> = REPL_WORDS.iter().map(|s| s.to_string()).collect();
        commands.extend(
            Cli::command()
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .filter(|n| n != "repl" && n != "help"),
        );
        let mut helper = ReplHelper {
            commands,
            keys: Vec::new(),
            runs: Vec::new(),
            files: FilenameCompleter::new(),
        };
        helper.refresh(session);
        helper
    }

    fn refresh(&mut self, session: &Session) {
        // Quietly: completion must not repeat config warnings.
        let Ok(loaded) = dandori_config::load(&load_options(session)) else {
            return;
        };
        let full = dandori_config::edit::known_keys(&loaded);
        let mut keys: Vec<String> = Vec::new();
        // Short names where unique (the seed's `auto_chunk_threshold`), then
        // every full key.
        for k in &full {
            let last = k.rsplit('.').next().unwrap_or(k);
            if dandori_config::edit::resolve_key(&loaded, last).is_ok() {
                keys.push(last.to_string());
            }
        }
        keys.extend(full);
        keys.sort();
        keys.dedup();
        self.keys = keys;
        if let Ok(runs) = runs_of(&loaded) {
            let mut ids: Vec<String> = runs
                .iter()
                .flat_map(|r| [r.request_id.clone(), r.run_id.clone()])
                .collect();
            ids.sort();
            ids.dedup();
            self.runs = ids;
        }
    }
}

fn pairs<'a>(candidates: impl Iterator<Item = &'a String>, word: &str) -> Vec<Pair> {
    candidates
        .filter(|c| c.starts_with(word))
        .map(|c| Pair {
            display: c.clone(),
            replacement: format!("{c} "),
        })
        .collect()
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .rfind(char::is_whitespace)
            .map(|i| i + 1)
            .unwrap_or(0);
        let word = &before[start..];
        let previous: Vec<&str> = before[..start].split_whitespace().collect();
        let candidates = match previous.as_slice() {
            [] => pairs(self.commands.iter(), word),
            ["/planning"] => {
                let subs: Vec<String> =
                    PLANNING_SUBCOMMANDS.iter().map(|s| s.to_string()).collect();
                pairs(subs.iter(), word)
            }
            ["/planning", "set"] => pairs(self.keys.iter(), word),
            ["/planning", "result"] => pairs(self.runs.iter(), word),
            ["/planning", ..] => Vec::new(),
            _ => return self.files.complete(line, pos, ctx),
        };
        Ok((start, candidates))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ReplHelper {}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_path_order() {
        let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            history_path(&env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
            Some(PathBuf::from("/x/dandori/repl_history"))
        );
        assert_eq!(
            history_path(&env(&[("HOME", "/h"), ("XDG_DATA_HOME", "rel")])),
            Some(PathBuf::from("/h/.local/share/dandori/repl_history"))
        );
        assert_eq!(history_path(&env(&[])), None);
    }
}
