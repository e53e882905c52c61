//! The shape of `planning.json` as data: which keys exist, which are required and
//! what type each holds. The structural pass walks a `serde_json::Value` with
//! these tables so that every missing key and wrong type is found in one go
//! (serde stops at the first). A test checks the tables against the types.

/// How a key may be absent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Presence {
    /// Must be present and not null.
    Required,
    /// May be absent or null (an `Option` field).
    Optional,
    /// May be absent, not null (a field with a serde default).
    Defaulted,
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Any,
    Str,
    Bool,
    /// A non-negative integer (u64).
    UInt,
    /// An integer 0–255.
    U8,
    /// Any JSON number.
    Num,
    StrArray,
    UIntArray,
    /// A string, one of these.
    Enum(&'static [&'static str]),
    /// An object with these known keys (others allowed).
    Obj(&'static [Field]),
    /// An array of such objects.
    ObjArray(&'static [Field]),
    /// A free-form object.
    AnyObj,
    /// An object whose values are strings.
    StrMap,
    /// A complexity score 0–255 or "low" | "medium" | "high".
    Complexity,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub key: &'static str,
    pub presence: Presence,
    pub kind: Kind,
}

const fn req(key: &'static str, kind: Kind) -> Field {
    Field {
        key,
        presence: Presence::Required,
        kind,
    }
}
const fn opt(key: &'static str, kind: Kind) -> Field {
    Field {
        key,
        presence: Presence::Optional,
        kind,
    }
}
const fn def(key: &'static str, kind: Kind) -> Field {
    Field {
        key,
        presence: Presence::Defaulted,
        kind,
    }
}

pub(crate) const ROLES: &[&str] = &["implementer", "reviewer", "qa", "planner"];
pub(crate) const RISK_LEVELS: &[&str] = &["low", "mid", "high"];
pub(crate) const AC_KINDS: &[&str] = &["functional", "regression", "nonfunctional"];
pub(crate) const SIZE_CATEGORIES: &[&str] = &["XS", "S", "M", "L", "XL"];
pub(crate) const EDGE_TYPES: &[&str] = &["data", "resource", "logical"];
pub(crate) const GROUP_MODES: &[&str] = &["parallel", "sequential"];
pub(crate) const EXECUTION_MODES: &[&str] = &["single", "parallel", "sequential", "hybrid"];
pub(crate) const WORKER_STRATEGIES: &[&str] = &["single", "round_robin", "least_loaded"];
pub(crate) const COMPLEXITY_LEVELS: &[&str] = &["low", "medium", "high"];
pub(crate) const PLAN_MODES: &[&str] = &["simple", "standard", "complex"];
pub(crate) const EXECUTION_STRATEGIES: &[&str] = &["parallel", "sequential", "dag"];

const LIMITS: &[Field] = &[
    req("max_diff_lines", Kind::UInt),
    opt("max_files_changed", Kind::UInt),
    req("timeout_sec", Kind::UInt),
    req("max_steps_per_run", Kind::UInt),
    req("max_autofix_cycles", Kind::UInt),
];

const AC: &[Field] = &[
    req("id", Kind::Str),
    req("given", Kind::Str),
    req("when", Kind::Str),
    req("then", Kind::Str),
    opt("type", Kind::Enum(AC_KINDS)),
];

const TEST_INSTRUCTIONS: &[Field] = &[opt("unit", Kind::Str), opt("e2e", Kind::Str)];

const CONTEXT: &[Field] = &[
    req("summary", Kind::Str),
    req("constraints", Kind::StrArray),
    req("acceptance_criteria", Kind::ObjArray(AC)),
    req("test_instructions", Kind::Obj(TEST_INSTRUCTIONS)),
    opt("project_facts", Kind::AnyObj),
];

const SCOPE: &[Field] = &[
    req("target_paths", Kind::StrArray),
    opt("forbidden_paths", Kind::StrArray),
    req("max_diff_lines", Kind::UInt),
    opt("max_files_changed", Kind::UInt),
];

const INPUTS: &[Field] = &[
    req("request_path", Kind::Str),
    opt("context_files", Kind::StrArray),
    opt("code_files_hint", Kind::StrArray),
];

const COMMANDS: &[Field] = &[opt("unit", Kind::StrArray), opt("e2e", Kind::StrArray)];

const EXPECTED_DIFF: &[Field] = &[
    req("lines_max", Kind::UInt),
    req("files_max", Kind::UInt),
    req("risk_level", Kind::Enum(RISK_LEVELS)),
];

const STEP_OUTPUTS: &[Field] = &[req("patch_path", Kind::Str), req("log_prefix", Kind::Str)];

const BOUNDARIES: &[Field] = &[
    def("in_scope", Kind::StrArray),
    def("out_of_scope", Kind::StrArray),
];

pub(crate) const STEP: &[Field] = &[
    req("step_id", Kind::Str),
    req("title", Kind::Str),
    req("role", Kind::Enum(ROLES)),
    req("intent", Kind::Str),
    req("scope", Kind::Obj(SCOPE)),
    req("inputs", Kind::Obj(INPUTS)),
    req("commands", Kind::Obj(COMMANDS)),
    req("success_criteria", Kind::StrArray),
    req("links_to_ac", Kind::StrArray),
    req("expected_diff", Kind::Obj(EXPECTED_DIFF)),
    req("outputs", Kind::Obj(STEP_OUTPUTS)),
    opt("fallback", Kind::AnyObj),
    opt("stop_conditions", Kind::StrArray),
    opt("depends_on", Kind::StrArray),
    opt("produces", Kind::StrArray),
    opt("consumes", Kind::StrArray),
    opt("boundaries", Kind::Obj(BOUNDARIES)),
    opt("estimated_complexity", Kind::Complexity),
    opt("required_tools", Kind::StrArray),
    opt("suggested_tools", Kind::StrArray),
    opt("suggested_persona", Kind::Str),
];

const GATES: &[Field] = &[
    req("require_clean_worktree", Kind::Bool),
    req("require_work_branch", Kind::Bool),
    req("require_unit_pass", Kind::Bool),
    req("require_e2e_for_regression_ac", Kind::Bool),
    req("forbid_gh", Kind::Bool),
    req("max_step_too_large_retries", Kind::UInt),
];

const RUN_OUTPUTS: &[Field] = &[
    req("planning_json", Kind::Str),
    req("stage_json", Kind::Str),
    req("report_md", Kind::Str),
    opt("errors_json", Kind::Str),
];

const GOAL_UNDERSTANDING: &[Field] = &[
    req("main_objective", Kind::Str),
    def("success_criteria", Kind::StrArray),
    def("constraints", Kind::StrArray),
    def("context", Kind::Str),
];

const SIZE_ESTIMATION: &[Field] = &[
    req("task_id", Kind::Str),
    req("estimated_at", Kind::Str),
    req("estimated_tokens", Kind::UInt),
    req("estimated_file_count", Kind::UInt),
    req("complexity_score", Kind::U8),
    req("dependency_depth", Kind::UInt),
    req("total_score", Kind::Num),
    req("size_category", Kind::Enum(SIZE_CATEGORIES)),
    req("llm_reasoning", Kind::Str),
    req("confidence", Kind::Num),
];

const DECISION_CRITERION: &[Field] = &[
    req("name", Kind::Str),
    req("value", Kind::Any),
    req("threshold", Kind::Any),
    req("met", Kind::Bool),
];

const SUBTASK_PLAN: &[Field] = &[
    req("subtask_index", Kind::UInt),
    req("prompt", Kind::Str),
    req("estimated_size", Kind::Enum(SIZE_CATEGORIES)),
    def("dependencies", Kind::UIntArray),
];

const CHUNKING_DECISION: &[Field] = &[
    req("task_id", Kind::Str),
    req("decided_at", Kind::Str),
    req("should_chunk", Kind::Bool),
    req("chunk_count", Kind::UInt),
    req("decision_criteria", Kind::ObjArray(DECISION_CRITERION)),
    req("llm_reasoning", Kind::Str),
    opt("subtask_definitions", Kind::ObjArray(SUBTASK_PLAN)),
];

const EDGE: &[Field] = &[
    req("from", Kind::Str),
    req("to", Kind::Str),
    req("type", Kind::Enum(EDGE_TYPES)),
];

const EXECUTION_GROUP: &[Field] = &[
    req("group_index", Kind::UInt),
    req("mode", Kind::Enum(GROUP_MODES)),
    req("step_ids", Kind::StrArray),
    def("depends_on_groups", Kind::UIntArray),
];

const DEPENDENCY_GRAPH: &[Field] = &[
    def("edges", Kind::ObjArray(EDGE)),
    def("execution_groups", Kind::ObjArray(EXECUTION_GROUP)),
    def("critical_path", Kind::StrArray),
];

const WORKER_STRATEGY: &[Field] = &[
    req("type", Kind::Enum(WORKER_STRATEGIES)),
    req("max_parallel_workers", Kind::UInt),
    req("worker_timeout_ms", Kind::UInt),
];

const EXECUTION_PLAN: &[Field] = &[
    req("execution_mode", Kind::Enum(EXECUTION_MODES)),
    def("execution_groups", Kind::ObjArray(EXECUTION_GROUP)),
    def("estimated_total_duration_ms", Kind::UInt),
    opt("worker_strategy", Kind::Obj(WORKER_STRATEGY)),
];

const SELECTED_ENVIRONMENT: &[Field] = &[
    req("name", Kind::Str),
    req("reason", Kind::Str),
    def("detected_files", Kind::StrArray),
    def("setup_commands", Kind::StrArray),
    def("verification_commands", Kind::StrArray),
    def("expected_results", Kind::StrMap),
];

/// The root object of `planning.json`.
pub(crate) const PLANNING: &[Field] = &[
    req("version", Kind::Str),
    req("request_id", Kind::Str),
    req("run_id", Kind::Str),
    req("created_at", Kind::Str),
    req("base_branch", Kind::Str),
    req("work_branch", Kind::Str),
    req("limits", Kind::Obj(LIMITS)),
    req("context", Kind::Obj(CONTEXT)),
    req("steps", Kind::ObjArray(STEP)),
    req("gates", Kind::Obj(GATES)),
    req("outputs", Kind::Obj(RUN_OUTPUTS)),
    opt("assumptions", Kind::StrArray),
    opt("risks", Kind::StrArray),
    opt("goal_understanding", Kind::Obj(GOAL_UNDERSTANDING)),
    opt("size_estimation", Kind::Obj(SIZE_ESTIMATION)),
    opt("chunking_decision", Kind::Obj(CHUNKING_DECISION)),
    opt("dependency_graph", Kind::Obj(DEPENDENCY_GRAPH)),
    opt("execution_plan", Kind::Obj(EXECUTION_PLAN)),
    opt("selected_environment", Kind::Obj(SELECTED_ENVIRONMENT)),
    opt("mode", Kind::Enum(PLAN_MODES)),
    opt("complexity_score", Kind::Num),
    opt("execution_strategy", Kind::Enum(EXECUTION_STRATEGIES)),
];

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::{Field, Kind, PLANNING, Presence};

    /// The first `$ref` inside a property schema (through anyOf / items).
    fn find_ref(v: &Value) -> Option<&str> {
        match v {
            Value::Object(m) => m
                .get("$ref")
                .and_then(Value::as_str)
                .or_else(|| m.values().find_map(find_ref)),
            Value::Array(a) => a.iter().find_map(find_ref),
            _ => None,
        }
    }

    fn compare(fields: &[Field], schema: &Value, defs: &Value, at: &str) {
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for f in fields {
            let prop = props
                .get(f.key)
                .unwrap_or_else(|| panic!("{at}.{} is not in the schema", f.key));
            assert_eq!(
                required.contains(&f.key),
                f.presence == Presence::Required,
                "{at}.{}: required differs",
                f.key
            );
            if let Kind::Obj(inner) | Kind::ObjArray(inner) = f.kind {
                let name = find_ref(prop)
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .unwrap_or_else(|| panic!("{at}.{} has no $ref", f.key));
                compare(inner, &defs[name], defs, &format!("{at}.{}", f.key));
            }
        }
        for key in props.keys() {
            assert!(
                fields.iter().any(|f| f.key == key),
                "{at}.{key} is in the schema but not in the shape table"
            );
        }
    }

    #[test]
    fn shape_tables_match_the_types() {
        let schema = crate::schema::planning();
        compare(PLANNING, &schema, &schema["$defs"], "$");
    }
}
