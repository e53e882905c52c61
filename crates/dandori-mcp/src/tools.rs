//! The tool catalogue: names, descriptions, input and output schemas, and which
//! tool set each belongs to. Schemas are written by hand and kept small: every
//! character of them is context an agent pays for on every turn (docs/mcp.md
//! gives the measured size of each set).

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// `--tools core|standard|all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ToolSet {
    /// Plan, then execute the plan step by step as the executor.
    Core,
    /// Core plus validation, graph, status, run listing, environment detection,
    /// file location.
    Standard,
    /// Standard plus trace filtering, environment setup and plan revision.
    All,
}

impl ToolSet {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "core" => Some(ToolSet::Core),
            "standard" => Some(ToolSet::Standard),
            "all" => Some(ToolSet::All),
            _ => None,
        }
    }
}

struct Def {
    name: &'static str,
    set: ToolSet,
    read_only: bool,
    description: &'static str,
    input: fn() -> Value,
    output: fn() -> Value,
}

fn run_dir() -> Value {
    json!({"type": "string", "description": "run directory"})
}

fn obj(props: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required})
}

/// Output schemas name the top-level keys only: results stay free to grow.
fn out(keys: &[&str]) -> Value {
    let props: serde_json::Map<String, Value> =
        keys.iter().map(|k| (k.to_string(), json!({}))).collect();
    json!({"type": "object", "properties": props})
}

const DEFS: &[Def] = &[
    Def {
        name: "plan",
        set: ToolSet::Core,
        read_only: false,
        description: "Plan a request (file or text) in a repository; writes a run directory.",
        input: || {
            obj(
                json!({"repo": {"type": "string"}, "request": {"type": "string", "description": "request file"},
                       "text": {"type": "string", "description": "request as text"}}),
                &[],
            )
        },
        output: || out(&["run_dir", "run_id", "steps", "groups", "valid"]),
    },
    Def {
        name: "next",
        set: ToolSet::Core,
        read_only: false,
        description: "Start or resume the run with you as executor; wait for steps ready to work on (each in its own git worktree `workdir`).",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "repo": {"type": "string"}, "wait_sec": {"type": "integer", "description": "default 30"}}),
                &["run_dir"],
            )
        },
        output: || out(&["status", "ready", "completion"]),
    },
    Def {
        name: "step",
        set: ToolSet::Core,
        read_only: true,
        description: "A step: scope, unit commands, acceptance criteria, workdir and the prompt to follow.",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "step_id": {"type": "string"}}),
                &["run_dir", "step_id"],
            )
        },
        output: || out(&["step_id", "status", "workdir", "prompt"]),
    },
    Def {
        name: "step_update",
        set: ToolSet::Core,
        read_only: false,
        description: "Mark a ready step started, done (edits left in workdir; dandori checks, tests and commits) or failed. Returns the verdict.",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "step_id": {"type": "string"},
                       "status": {"enum": ["started", "done", "failed"]},
                       "summary": {"type": "string", "description": "evidence or failure reason"}}),
                &["run_dir", "step_id", "status"],
            )
        },
        output: || out(&["step_id", "status", "commit", "reason_code"]),
    },
    Def {
        name: "report",
        set: ToolSet::Core,
        read_only: true,
        description: "Outcome of a run; report.md as a resource.",
        input: || obj(json!({"run_dir": run_dir()}), &["run_dir"]),
        output: || out(&["status", "total", "done", "report"]),
    },
    Def {
        name: "validate",
        set: ToolSet::Standard,
        read_only: true,
        description: "Validate a planning.json (its rules and reason codes).",
        input: || obj(json!({"path": {"type": "string"}}), &["path"]),
        output: || out(&["ok", "errors", "warnings"]),
    },
    Def {
        name: "graph",
        set: ToolSet::Standard,
        read_only: true,
        description: "Execution groups, critical path and mode of a plan.",
        input: || obj(json!({"path": {"type": "string"}}), &["path"]),
        output: || out(&["mode", "groups", "critical_path"]),
    },
    Def {
        name: "status",
        set: ToolSet::Standard,
        read_only: true,
        description: "A run's progress: steps, groups, current step, tokens, time.",
        input: || obj(json!({"run_dir": run_dir()}), &["run_dir"]),
        output: || out(&["status", "current_step", "steps"]),
    },
    Def {
        name: "runs",
        set: ToolSet::Standard,
        read_only: true,
        description: "Runs of a repository, newest first.",
        input: || obj(json!({"repo": {"type": "string"}}), &[]),
        output: || out(&["runs"]),
    },
    Def {
        name: "env_detect",
        set: ToolSet::Standard,
        read_only: true,
        description: "Detect a repository's environment and its setup commands.",
        input: || {
            obj(
                json!({"repo": {"type": "string"}, "language": {"type": "string"}}),
                &[],
            )
        },
        output: || out(&["selected", "ecosystems"]),
    },
    Def {
        name: "revise",
        set: ToolSet::All,
        read_only: false,
        description: "Revise a stopped run's plan from feedback: lines like `add file P`, `drop S02`, `add step: …`, `language: …`, `constraint: …`.",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "feedback": {"type": "string"}, "repo": {"type": "string"}}),
                &["run_dir", "feedback"],
            )
        },
        output: || out(&["status", "revision", "changes"]),
    },
    Def {
        name: "env_setup",
        set: ToolSet::All,
        read_only: false,
        description: "Set up and verify a planned run's environment (sandboxed, as `dandori run` does first).",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "repo": {"type": "string"}}),
                &["run_dir"],
            )
        },
        output: || out(&["status", "message", "setup_record", "summary"]),
    },
    Def {
        name: "locate",
        set: ToolSet::Standard,
        read_only: true,
        description: "Rank a repository's files for a query.",
        input: || {
            obj(
                json!({"repo": {"type": "string"}, "query": {"type": "string"}, "k": {"type": "integer"}}),
                &["query"],
            )
        },
        output: || out(&["files"]),
    },
    Def {
        name: "trace",
        set: ToolSet::All,
        read_only: true,
        description: "Events of a run's trace.jsonl, filtered.",
        input: || {
            obj(
                json!({"run_dir": run_dir(), "event": {"type": "string"}, "step": {"type": "string"},
                       "since": {"type": "string", "description": "RFC 3339 or 15m"},
                       "visibility": {"enum": ["summary", "full"], "description": "seed 003 §7.1: summary events only, or every event"},
                       "limit": {"type": "integer"}}),
                &["run_dir"],
            )
        },
        output: || out(&["events"]),
    },
];

fn as_object(v: Value) -> Arc<JsonObject> {
    Arc::new(match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    })
}

/// The tools of a set, in catalogue order.
pub fn tools(set: ToolSet) -> Vec<Tool> {
    DEFS.iter()
        .filter(|d| d.set <= set)
        .map(|d| {
            let mut annotations = ToolAnnotations::new().read_only(d.read_only);
            if !d.read_only {
                annotations = annotations.destructive(false);
            }
            Tool {
                name: d.name.into(),
                title: None,
                description: Some(d.description.into()),
                input_schema: as_object((d.input)()),
                output_schema: Some(as_object((d.output)())),
                annotations: Some(annotations),
                icons: None,
            }
        })
        .collect()
}

/// Whether `name` is a tool of `set`.
pub fn in_set(name: &str, set: ToolSet) -> bool {
    DEFS.iter().any(|d| d.name == name && d.set <= set)
}

/// Characters of the set's `tools/list` entries as JSON: the context cost.
pub fn schema_chars(set: ToolSet) -> usize {
    tools(set)
        .iter()
        .map(|t| serde_json::to_string(t).map_or(0, |s| s.chars().count()))
        .sum()
}
