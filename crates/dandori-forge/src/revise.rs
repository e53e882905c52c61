//! Human feedback → plan revision (seed 000 §2.5 human reflection, §10.4,
//! §11.3.1).
//!
//! Feedback (issue comments, pull request reviews, or text given explicitly)
//! is recorded as a seed-format reflection with `feedback_type: "human"` and
//! `feedback_source: "issue_comment" | "pr_review" | "explicit"`, and its
//! explicit edits are applied to planning.json:
//!
//! | Feedback line | Edit |
//! | --- | --- |
//! | `add file src/a.rs, src/b.rs [to S02]` (`also change …`, `include …`, `ファイル追加: …`) | the paths join the step's `scope.target_paths` (default: the last implementer step) |
//! | `drop S02` (`remove step S02`, `skip S02`, `S02 を削除`) | the step goes; its dependents inherit its dependencies |
//! | `add step: Write the docs in docs/x.md` (`ステップ追加: …`) | a new step after the last one (paths in the title become its targets) |
//! | `language: go` (`use go instead`, `言語: go`) | the environment and the file extensions of the targets change, with a constraint |
//! | `constraint: …` (`制約: …`) | a new `context.constraints` entry |
//!
//! The execution groups and the dependency graph are computed again and the
//! revised plan is validated before it replaces the old one. Each revision bumps
//! `revision_attempts`; at `planning.revision.max_revisions` the revision is
//! refused (`REVISION_LIMIT_REACHED`, seed 000 §10.4).
//!
//! **History** (`revisions/` in the run directory): `history.json` keeps the
//! last `max_history_in_memory` revisions in full and one-line summaries of
//! older ones; `planning.rN.json` (the plan before revision N+1) is kept for the
//! last `max_history_on_disk` revisions.
//!
//! **Approval**: when approval is needed the revised plan waits in
//! `revisions/pending.json` until `dandori approve` (or an approving comment)
//! within `approval_timeout` seconds.

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use dandori_config::RevisionConfig;
use dandori_plan::{Planning, Role, SelectedEnvironment, Stage, StepStatus as StageStepStatus};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::ForgeError;
use crate::model_revision::ModelRevision;
use crate::record::{read_json, write_json};
use dandori_plan::validation::CommandJudge;

pub const DIR: &str = "revisions";
pub const HISTORY: &str = "history.json";
pub const PENDING: &str = "pending.json";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FeedbackSource {
    IssueComment,
    PrReview,
    Explicit,
}

impl FeedbackSource {
    pub fn as_str(self) -> &'static str {
        match self {
            FeedbackSource::IssueComment => "issue_comment",
            FeedbackSource::PrReview => "pr_review",
            FeedbackSource::Explicit => "explicit",
        }
    }
}

/// One piece of human feedback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feedback {
    pub source: FeedbackSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub author: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment_id: Option<u64>,
    pub text: String,
}

/// An explicit edit found in feedback.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "edit", rename_all = "snake_case")]
pub enum Edit {
    AddFiles {
        step: Option<String>,
        paths: Vec<String>,
    },
    DropStep {
        step: String,
    },
    AddStep {
        title: String,
        paths: Vec<String>,
        /// The step the new one must precede (a model's `before_task`);
        /// None: after the last step.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        before: Option<String>,
        /// Its unit commands (a model's `commands`); None: the template's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commands: Option<Vec<String>>,
    },
    /// A model's `modify_action`: what is given replaces the step's.
    ModifyStep {
        step: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Replaces `scope.target_paths`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<Vec<String>>,
        /// Replaces `commands.unit`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commands: Option<Vec<String>>,
    },
    Language {
        language: String,
    },
    Constraint {
        text: String,
    },
}

const LANGUAGES: &[(&str, &str, &str)] = &[
    // (name, environment, file extension)
    ("python", "python", "py"),
    ("go", "go", "go"),
    ("golang", "go", "go"),
    ("rust", "rust", "rs"),
    ("typescript", "node", "ts"),
    ("javascript", "node", "js"),
    ("java", "java", "java"),
    ("kotlin", "java", "kt"),
    ("ruby", "ruby", "rb"),
    ("c#", "dotnet", "cs"),
    ("csharp", "dotnet", "cs"),
];

fn language(name: &str) -> Option<(&'static str, &'static str, &'static str)> {
    let n = name
        .trim()
        .trim_matches(|c: char| c == '`' || c == '.' || c == '"')
        .to_lowercase();
    LANGUAGES.iter().copied().find(|(l, _, _)| *l == n)
}

/// The explicit edits of a feedback text, one or more per line.
pub fn parse_edits(text: &str) -> Vec<Edit> {
    let mut edits = Vec::new();
    for raw in text.lines() {
        let line = raw
            .trim()
            .trim_start_matches(['-', '*', '>'])
            .trim()
            .trim_start_matches("/dandori")
            .trim();
        if line.is_empty() {
            continue;
        }
        let lower = line.to_lowercase();
        let after = |prefixes: &[&str]| -> Option<String> {
            prefixes.iter().find_map(|p| {
                lower.starts_with(p).then(|| {
                    line[p.len()..]
                        .trim()
                        .trim_start_matches(':')
                        .trim()
                        .to_string()
                })
            })
        };
        if let Some(rest) = after(&["add step", "new step", "ステップ追加", "ステップを追加"])
        {
            if !rest.is_empty() {
                edits.push(Edit::AddStep {
                    paths: backticked_paths(&rest),
                    title: rest.replace('`', ""),
                    before: None,
                    commands: None,
                });
            }
            continue;
        }
        if let Some(rest) = after(&[
            "add files",
            "add file",
            "also change",
            "also edit",
            "include file",
            "include",
            "ファイル追加",
            "ファイルを追加",
        ]) {
            let (list, step) = match split_to_step(&rest) {
                Some((l, s)) => (l, Some(s)),
                None => (rest.clone(), None),
            };
            let paths = path_list(&list);
            if !paths.is_empty() {
                edits.push(Edit::AddFiles { step, paths });
            }
            continue;
        }
        if let Some(rest) = after(&[
            "drop step",
            "remove step",
            "delete step",
            "skip step",
            "drop",
            "remove",
            "skip",
        ]) {
            if let Some(step) = step_id_in(&rest) {
                edits.push(Edit::DropStep { step });
            }
            continue;
        }
        if (line.contains("を削除") || line.contains("を省略"))
            && let Some(step) = step_id_in(line)
        {
            edits.push(Edit::DropStep { step });
            continue;
        }
        if let Some(rest) = after(&["language", "言語"]) {
            if let Some((name, _, _)) = language(&rest) {
                edits.push(Edit::Language {
                    language: name.to_string(),
                });
            }
            continue;
        }
        if let Some(rest) = after(&["use", "switch to", "rewrite in", "implement in"]) {
            let word = rest.split_whitespace().next().unwrap_or_default();
            if let Some((name, _, _)) = language(word) {
                edits.push(Edit::Language {
                    language: name.to_string(),
                });
                continue;
            }
        }
        if let Some(rest) = after(&["constraint", "制約"]) {
            if !rest.is_empty() {
                edits.push(Edit::Constraint { text: rest });
            }
            continue;
        }
    }
    edits
}

/// `src/a.rs, src/b.rs to S02` → the list and `S02`.
fn split_to_step(rest: &str) -> Option<(String, String)> {
    let lower = rest.to_lowercase();
    for sep in [" to ", " in ", " for "] {
        if let Some(i) = lower.rfind(sep)
            && let Some(step) = step_id_in(&rest[i + sep.len()..])
        {
            return Some((rest[..i].to_string(), step));
        }
    }
    None
}

fn step_id_in(s: &str) -> Option<String> {
    s.split(|c: char| !c.is_ascii_alphanumeric()).find_map(|w| {
        let w = w.to_ascii_uppercase();
        let digits = w.strip_prefix('S')?;
        (!digits.is_empty() && digits.len() <= 3 && digits.chars().all(|c| c.is_ascii_digit()))
            .then(|| format!("S{:02}", digits.parse::<u32>().unwrap_or(0)))
    })
}

fn path_list(s: &str) -> Vec<String> {
    s.split([',', ' ', '、'])
        .map(|p| {
            p.trim()
                .trim_matches(['`', '"', '\''])
                .trim_end_matches('.')
        })
        .filter(|p| p.len() > 1 && looks_like_path(p))
        .map(str::to_string)
        .collect()
}

fn backticked_paths(s: &str) -> Vec<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .filter(|p| looks_like_path(p))
        .map(str::to_string)
        .collect()
}

fn looks_like_path(p: &str) -> bool {
    !p.starts_with('/')
        && !p.contains("..")
        && !p.contains(char::is_whitespace)
        && (p.contains('/') || p.contains('.'))
        && p.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '*'))
}

/// Applies `edits` to `p`; returns what changed, one sentence each. Edits that
/// name an unknown step are reported as skipped.
pub fn apply_edits(p: &mut Planning, edits: &[Edit]) -> Result<Vec<String>, ForgeError> {
    let mut changes = Vec::new();
    for e in edits {
        match e {
            Edit::AddFiles { step, paths } => {
                let idx = match step {
                    Some(id) => p.steps.iter().position(|s| &s.step_id == id),
                    None => p
                        .steps
                        .iter()
                        .rposition(|s| s.role == Role::Implementer)
                        .or(p.steps.len().checked_sub(1)),
                };
                let Some(i) = idx else {
                    changes.push(format!(
                        "skipped: no step {} to add {} to",
                        step.as_deref().unwrap_or("at all"),
                        paths.join(", ")
                    ));
                    continue;
                };
                let s = &mut p.steps[i];
                let mut added = Vec::new();
                for path in paths {
                    if !s.scope.target_paths.contains(path) {
                        s.scope.target_paths.push(path.clone());
                        added.push(path.clone());
                    }
                }
                if !added.is_empty() {
                    changes.push(format!(
                        "{}: added target files {}",
                        s.step_id,
                        added.join(", ")
                    ));
                }
            }
            Edit::DropStep { step } => {
                let Some(i) = p.steps.iter().position(|s| &s.step_id == step) else {
                    changes.push(format!("skipped: no step {step} to drop"));
                    continue;
                };
                if p.steps.len() == 1 {
                    changes.push(format!("skipped: {step} is the only step"));
                    continue;
                }
                let dropped = p.steps.remove(i);
                let inherited = dropped.depends_on.clone().unwrap_or_default();
                for s in &mut p.steps {
                    if let Some(d) = &mut s.depends_on
                        && d.contains(step)
                    {
                        d.retain(|x| x != step);
                        for x in &inherited {
                            if !d.contains(x) {
                                d.push(x.clone());
                            }
                        }
                    }
                }
                changes.push(format!("dropped {step} ({})", dropped.title));
            }
            Edit::ModifyStep {
                step,
                title,
                description,
                files,
                commands,
            } => {
                let Some(s) = p.steps.iter_mut().find(|s| &s.step_id == step) else {
                    changes.push(format!("skipped: no step {step} to modify"));
                    continue;
                };
                let mut what = Vec::new();
                if let Some(t) = title.as_ref().or(description.as_ref()) {
                    s.title = t.lines().next().unwrap_or(t).to_string();
                    what.push(format!("title \"{}\"", s.title));
                }
                if let Some(d) = description {
                    s.intent = d.clone();
                }
                if let Some(f) = files {
                    s.scope.target_paths = f.clone();
                    what.push(format!("target files {}", f.join(", ")));
                }
                if let Some(c) = commands {
                    s.commands.unit = Some(c.clone());
                    what.push(format!("unit commands {}", c.join("; ")));
                }
                changes.push(format!(
                    "{step}: {}",
                    if what.is_empty() {
                        "unchanged".to_string()
                    } else {
                        what.join(", ")
                    }
                ));
            }
            Edit::AddStep {
                title,
                paths,
                before,
                commands,
            } => {
                let before_idx = match before {
                    Some(b) => match p.steps.iter().position(|s| &s.step_id == b) {
                        Some(i) => Some(i),
                        None => {
                            changes.push(format!("skipped: no step {b} to add a step before"));
                            continue;
                        }
                    },
                    None => None,
                };
                let Some(template) = p.steps.last().cloned() else {
                    changes.push("skipped: no step to model a new one on".to_string());
                    continue;
                };
                let next = p
                    .steps
                    .iter()
                    .filter_map(|s| s.step_id.strip_prefix('S')?.parse::<u32>().ok())
                    .max()
                    .unwrap_or(0)
                    + 1;
                let id = format!("S{next:02}");
                let mut s = template.clone();
                let old = template.step_id.clone();
                s.step_id = id.clone();
                s.title = title.clone();
                s.intent = title.clone();
                s.role = Role::Implementer;
                s.depends_on = Some(vec![old.clone()]);
                if !paths.is_empty() {
                    s.scope.target_paths = paths.clone();
                }
                s.produces = None;
                s.consumes = None;
                s.outputs.patch_path = s.outputs.patch_path.replace(&old, &id);
                s.outputs.log_prefix = s.outputs.log_prefix.replace(&old, &id);
                s.success_criteria = vec![format!("{title} (added by human feedback)")];
                if let Some(c) = commands {
                    s.commands.unit = Some(c.clone());
                }
                match before_idx {
                    Some(i) => {
                        // Before `before`: the new step takes its dependencies,
                        // and `before` waits for the new step.
                        let target = p.steps[i].step_id.clone();
                        s.depends_on = p.steps[i].depends_on.clone();
                        p.steps[i].depends_on = Some(vec![id.clone()]);
                        changes.push(format!("added {id}: {title} (before {target})"));
                        p.steps.insert(i, s);
                    }
                    None => {
                        changes.push(format!("added {id}: {title} (after {old})"));
                        p.steps.push(s);
                    }
                }
            }
            Edit::Language { language: name } => {
                let Some((lang, env, ext)) = language(name) else {
                    continue;
                };
                let mut renamed = Vec::new();
                for s in &mut p.steps {
                    for t in &mut s.scope.target_paths {
                        if let Some((stem, old_ext)) = t.rsplit_once('.')
                            && !stem.is_empty()
                            && !stem.ends_with('/')
                            && old_ext != ext
                            && LANGUAGES.iter().any(|(_, _, e)| *e == old_ext)
                        {
                            let new = format!("{stem}.{ext}");
                            renamed.push(format!("{t} → {new}"));
                            *t = new;
                        }
                    }
                }
                let reason = format!("changed to {lang} by human feedback");
                match &mut p.selected_environment {
                    Some(e) => {
                        e.name = env.to_string();
                        e.reason = reason;
                    }
                    None => {
                        p.selected_environment = Some(SelectedEnvironment {
                            name: env.to_string(),
                            reason,
                            detected_files: Vec::new(),
                            setup_commands: Vec::new(),
                            verification_commands: Vec::new(),
                            expected_results: Default::default(),
                            extra: Default::default(),
                        })
                    }
                }
                let c = format!("Implement in {lang}");
                if !p.context.constraints.contains(&c) {
                    p.context.constraints.push(c);
                }
                changes.push(if renamed.is_empty() {
                    format!("language changed to {lang}")
                } else {
                    format!("language changed to {lang}: {}", renamed.join(", "))
                });
            }
            Edit::Constraint { text } => {
                if !p.context.constraints.contains(text) {
                    p.context.constraints.push(text.clone());
                    changes.push(format!("added constraint: {text}"));
                }
            }
        }
    }
    // A plan that grew still runs to its end: the step budget follows it
    // (otherwise the run pauses after the old count, exit 5).
    p.limits.max_steps_per_run = p.limits.max_steps_per_run.max(p.steps.len() as u64);
    // Groups and the dependency graph follow the new steps.
    let analysis = dandori_plan::graph::analyze(&p.steps)
        .map_err(|e| ForgeError::RevisionInvalid(e.to_string()))?;
    if p.execution_plan.is_some() {
        let mut plan = analysis.execution_plan();
        if let Some(old) = &p.execution_plan {
            plan.estimated_total_duration_ms = old.estimated_total_duration_ms;
        }
        p.execution_plan = Some(plan);
    }
    if p.dependency_graph.is_some() {
        p.dependency_graph = Some(analysis.dependency_graph());
    }
    Ok(changes)
}

/// One revision in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryEntry {
    pub revision: u64,
    pub at: String,
    pub feedback_source: FeedbackSource,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_by: Option<String>,
    pub changes: Vec<String>,
    /// The seed-format human reflection.
    pub reflection: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct History {
    pub revision_attempts: u64,
    /// The newest `max_history_in_memory` revisions, oldest first.
    pub entries: Vec<HistoryEntry>,
    /// One line per older revision (at most `max_history_on_disk` in all).
    #[serde(default)]
    pub summarized: Vec<String>,
}

/// A revision waiting for approval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    pub revision: u64,
    pub requested_at: String,
    pub approval_timeout: u64,
    pub entry: HistoryEntry,
    pub planning: Planning,
}

/// What [`revise`] did.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// planning.json was replaced.
    Applied { revision: u64, changes: Vec<String> },
    /// The revised plan waits for approval.
    AwaitingApproval {
        revision: u64,
        changes: Vec<String>,
        timeout: u64,
    },
}

fn dir(run_dir: &Path) -> PathBuf {
    run_dir.join(DIR)
}

pub fn load_history(run_dir: &Path) -> Result<History, ForgeError> {
    read_json(&dir(run_dir).join(HISTORY)).map(Option::unwrap_or_default)
}

pub fn load_pending(run_dir: &Path) -> Result<Option<Pending>, ForgeError> {
    read_json(&dir(run_dir).join(PENDING))
}

fn load_planning(run_dir: &Path) -> Result<Planning, ForgeError> {
    let path = run_dir.join("planning.json");
    let bytes = dandori_fs::read(&path)?;
    serde_json::from_slice(&bytes).map_err(|e| ForgeError::Record {
        path,
        message: format!("not a planning.json: {e}"),
    })
}

/// The seed 000 §5 reflection record of human feedback. With a model's
/// revision, its `reason`, `changes` (as written) and `feedback_summary` are
/// recorded verbatim.
pub fn human_reflection(
    revision: u64,
    feedback: &[Feedback],
    changes: &[String],
    model: Option<&ModelRevision>,
) -> Value {
    let source = feedback
        .first()
        .map_or(FeedbackSource::Explicit, |f| f.source);
    let issues: Vec<String> = feedback
        .iter()
        .map(|f| {
            let who = f
                .author
                .as_deref()
                .map(|a| format!("@{a}: "))
                .unwrap_or_default();
            format!(
                "{who}{}",
                f.text.split_whitespace().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    let mut v = json!({
        "phase": "reflection",
        "trigger": "human_feedback",
        "feedback_type": "human",
        "feedback_source": source.as_str(),
        "reflection": {
            "action_id": format!("human_feedback_{revision}"),
            "status": "partial",
            "evaluation": "a person asked for changes to the plan",
            "alignment_with_plan": "diverges from the plan",
            "issues_identified": issues,
            "plan_revision_needed": true,
            "feedback_type": "human",
            "feedback_source": source.as_str(),
        },
        "plan_revision": {
            "reason": "human feedback",
            "changes": changes,
        },
        "revised_by": "offline_edits",
        "comment": "計画を修正しました",
    });
    if let Some(m) = model {
        v["revised_by"] = json!("model");
        v["plan_revision"] = json!({
            "reason": m.reason,
            "changes": m.changes,
            "applied": changes,
        });
        if let Some(summary) = &m.feedback_summary {
            v["reflection"]["feedback_summary"] = json!(summary);
        }
    }
    v
}

/// Revises the plan of `run_dir` from `feedback`. `approval_needed` comes from
/// [`crate::permissions::Permissions::approval_needed`] (or the config alone).
///
/// `model` is the model's checked revision ([`crate::model_revision::check`]);
/// None: the offline edits of the feedback. `judge` is the command policy of
/// plan sanitisation: the revised plan's paths must stay in the repository and
/// its commands must pass the policy (`REVISION_INVALID` otherwise).
pub fn revise(
    run_dir: &Path,
    feedback: &[Feedback],
    model: Option<&ModelRevision>,
    judge: &dyn CommandJudge,
    config: &RevisionConfig,
    approval_needed: bool,
    now: DateTime<Utc>,
) -> Result<Outcome, ForgeError> {
    if let Some(p) = load_pending(run_dir)? {
        return Err(ForgeError::ApprovalPending(format!(
            "revision {} waits for approval (dandori approve {}); approve or let it time out before revising again",
            p.revision,
            run_dir.display()
        )));
    }
    let history = load_history(run_dir)?;
    if history.revision_attempts >= u64::from(config.max_revisions) {
        return Err(ForgeError::RevisionLimit {
            attempts: history.revision_attempts,
            max: u64::from(config.max_revisions),
        });
    }
    let edits: Vec<Edit> = match model {
        Some(m) => m.edits.clone(),
        None => feedback.iter().flat_map(|f| parse_edits(&f.text)).collect(),
    };
    if edits.is_empty() {
        return Err(ForgeError::NothingToRevise(
            "the feedback asks for no edit dandori can apply (add file …, drop S02, add step: …, language: …, constraint: …)".to_string(),
        ));
    }
    let mut planning = load_planning(run_dir)?;
    let changes = apply_edits(&mut planning, &edits)?;
    if changes.iter().all(|c| c.starts_with("skipped")) {
        return Err(ForgeError::NothingToRevise(changes.join("; ")));
    }
    let revision = history.revision_attempts + 1;
    planning
        .extra
        .insert("revision_attempts".to_string(), json!(revision));
    let mut fails = match model {
        Some(m) => crate::model_revision::command_problems(&m.edits, judge),
        None => Vec::new(),
    };
    fails.extend(crate::model_revision::plan_problems(&planning, judge));
    if !fails.is_empty() {
        return Err(ForgeError::RevisionInvalid(fails.join("; ")));
    }
    let entry = HistoryEntry {
        revision,
        at: now.to_rfc3339(),
        feedback_source: feedback
            .first()
            .map_or(FeedbackSource::Explicit, |f| f.source),
        approved_by: None,
        reflection: human_reflection(revision, feedback, &changes, model),
        changes: changes.clone(),
    };
    dandori_fs::create_dir_all(dir(run_dir))?;
    if approval_needed {
        write_json(
            &dir(run_dir).join(PENDING),
            &Pending {
                revision,
                requested_at: now.to_rfc3339(),
                approval_timeout: config.approval_timeout,
                entry,
                planning,
            },
        )?;
        return Ok(Outcome::AwaitingApproval {
            revision,
            changes,
            timeout: config.approval_timeout,
        });
    }
    commit(run_dir, history, entry, &planning, config)?;
    Ok(Outcome::Applied { revision, changes })
}

/// The fields of the `PLAN_REVISION` trace event for a revision's result;
/// `revised_by` is `model` or `offline_edits`.
pub fn revision_event(result: &Result<Outcome, ForgeError>, revised_by: &str) -> Value {
    match result {
        Ok(Outcome::Applied { revision, changes })
        | Ok(Outcome::AwaitingApproval {
            revision, changes, ..
        }) => json!({
            "revision": revision,
            "revised_by": revised_by,
            "changes": changes,
            "awaiting_approval": matches!(result, Ok(Outcome::AwaitingApproval { .. })),
        }),
        Err(e) => json!({
            "revised_by": revised_by,
            "error": e.to_string(),
            "reason_code": e.code(),
        }),
    }
}

/// Approves the pending revision: it replaces planning.json. Past
/// `approval_timeout` the pending revision is dropped (`APPROVAL_TIMEOUT`).
pub fn approve(
    run_dir: &Path,
    approver: &str,
    config: &RevisionConfig,
    now: DateTime<Utc>,
) -> Result<u64, ForgeError> {
    let Some(mut pending) = load_pending(run_dir)? else {
        return Err(ForgeError::Record {
            path: dir(run_dir).join(PENDING),
            message: "no revision waits for approval".to_string(),
        });
    };
    if expired(&pending, now) {
        dandori_fs::remove_file(dir(run_dir).join(PENDING))?;
        return Err(ForgeError::ApprovalTimeout(format!(
            "revision {} was requested at {} and not approved within approval_timeout ({} s); it was dropped, the plan is unchanged",
            pending.revision, pending.requested_at, pending.approval_timeout
        )));
    }
    pending.entry.approved_by = Some(approver.to_string());
    let history = load_history(run_dir)?;
    commit(
        run_dir,
        history,
        pending.entry.clone(),
        &pending.planning,
        config,
    )?;
    dandori_fs::remove_file(dir(run_dir).join(PENDING))?;
    Ok(pending.revision)
}

/// Whether the approval window of `p` has closed at `now`.
pub fn expired(p: &Pending, now: DateTime<Utc>) -> bool {
    DateTime::parse_from_rfc3339(&p.requested_at).is_ok_and(|at| {
        (now - at.with_timezone(&Utc)).num_seconds()
            > i64::try_from(p.approval_timeout).unwrap_or(i64::MAX)
    })
}

fn commit(
    run_dir: &Path,
    mut history: History,
    entry: HistoryEntry,
    planning: &Planning,
    config: &RevisionConfig,
) -> Result<(), ForgeError> {
    let d = dir(run_dir);
    dandori_fs::create_dir_all(&d)?;
    let before = run_dir.join("planning.json");
    let snapshot = d.join(format!("planning.r{}.json", entry.revision - 1));
    let old = dandori_fs::read(&before)?;
    dandori_fs::write_atomic(&snapshot, &old)?;
    let old_planning: Option<Planning> = serde_json::from_slice(&old).ok();
    write_json(&before, planning)?;
    restage(run_dir, old_planning.as_ref(), planning)?;
    history.revision_attempts = entry.revision;
    history.entries.push(entry);
    let keep = config.max_history_in_memory.max(1) as usize;
    while history.entries.len() > keep {
        let old = history.entries.remove(0);
        history.summarized.push(format!(
            "revision {} ({}, {}): {}",
            old.revision,
            old.at,
            old.feedback_source.as_str(),
            old.changes.join("; ")
        ));
    }
    let on_disk = config.max_history_on_disk.max(1) as usize;
    let older_cap = on_disk.saturating_sub(history.entries.len());
    if history.summarized.len() > older_cap {
        let cut = history.summarized.len() - older_cap;
        history.summarized.drain(..cut);
    }
    write_json(&d.join(HISTORY), &history)?;
    // Snapshots beyond max_history_on_disk go.
    let newest = history.revision_attempts;
    if newest > on_disk as u64 {
        for n in 0..newest - on_disk as u64 {
            let p = d.join(format!("planning.r{n}.json"));
            match dandori_fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

/// stage.json follows the revised steps (seed 004 §6: its steps are the plan's):
/// a step left unchanged keeps its progress, every other step is pending again.
fn restage(run_dir: &Path, old: Option<&Planning>, new: &Planning) -> Result<(), ForgeError> {
    let path = run_dir.join("stage.json");
    let Some(previous) = read_json::<Stage>(&path)? else {
        return Ok(());
    };
    let now = Utc::now().to_rfc3339();
    let mut stage = Stage::for_planning(new, &now);
    stage.created_at = previous.created_at.clone();
    stage.extra = previous.extra.clone();
    for st in &mut stage.steps {
        let unchanged = old
            .and_then(|o| o.steps.iter().find(|s| s.step_id == st.step_id))
            .zip(new.steps.iter().find(|s| s.step_id == st.step_id))
            .is_some_and(|(a, b)| a == b);
        if unchanged
            && let Some(prev) = previous.steps.iter().find(|p| p.step_id == st.step_id)
            && prev.status == StageStepStatus::Done
        {
            *st = prev.clone();
        }
    }
    stage.current_step_index = stage
        .steps
        .iter()
        .position(|s| s.status != StageStepStatus::Done)
        .unwrap_or(stage.steps.len());
    write_json(&path, &stage)
}
