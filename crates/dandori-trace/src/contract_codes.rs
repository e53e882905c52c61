//! The upper-snake identifiers of dandori's contract — reason codes and event
//! names (`TOKEN_BUDGET_EXCEEDED`, `SECRET_DETECTED`, `PLANNING_SKIPPED`) —
//! which the masker never takes for the name of a secret assignment:
//! `TOKEN_BUDGET_EXCEEDED: budget exceeded` is a reason and its message, not a
//! token and its value.
//!
//! The list is every `const X: &str = "X"` and every `=> "X"` match arm of
//! the crates' sources (environment variables aside); a test fails when it
//! drifts. Regenerate it with
//! `UPDATE_CONTRACT_CODES=1 cargo test -p dandori-trace --lib contract_codes`.

/// Sorted (byte order), for [`is_contract_code`].
pub const CONTRACT_CODES: &[&str] = &[
    "AC_ID_DUPLICATE",
    "AC_NOT_COVERED",
    "AC_TOO_FEW",
    "AC_UNVERIFIED",
    "AGENT_CLI_BAD_OUTPUT",
    "AGENT_CLI_ERROR",
    "AGENT_CLI_EXIT",
    "AGENT_CLI_REFUSED",
    "AGENT_CLI_TIMEOUT",
    "AGENT_FAILED",
    "AGENT_TIMEOUT",
    "ALREADY_SATISFIED",
    "APPROVAL_DENIED",
    "APPROVAL_PENDING",
    "APPROVAL_REQUIRED",
    "APPROVAL_TIMEOUT",
    "ARGUMENT_INVALID",
    "AUTH_REQUIRED",
    "BASE_BRANCH_MISSING",
    "BINARY_FILE",
    "BIND_REFUSED",
    "CHUNKING_DECISION",
    "CI_EVENT_IGNORED",
    "CI_EVENT_INVALID",
    "COMMAND_FAILED",
    "COMMAND_FORBIDDEN",
    "COMMAND_TIMEOUT",
    "CONFIG_WARNING",
    "COVERAGE_EVALUATION",
    "DANDORI_CONFIG_HOME",
    "DANDORI_DATA_HOME",
    "DECOMPOSITION_FAILED",
    "DEMO_DIR_NOT_EMPTY",
    "DEMO_GIT_FAILED",
    "DEPENDENCY_ANALYSIS",
    "DEPENDENCY_CYCLE",
    "DEPENDENCY_FAILED",
    "E2E_REQUIRED",
    "EARLY_TERMINATION",
    "ENVIRONMENT_FAILED",
    "ENVIRONMENT_SETUP",
    "ENV_NETWORK_DOMAIN_REFUSED",
    "ENV_PACKAGE_UNAVAILABLE",
    "ENV_PLUGIN_FAILED",
    "ENV_PLUGIN_INVALID",
    "ENV_PLUGIN_UNTRUSTED",
    "ENV_REGISTRY_UNREACHABLE",
    "ENV_SUBMODULE_MISSING",
    "ENV_TOOL_MISSING",
    "EXECUTION_END",
    "EXECUTION_PLAN",
    "EXECUTION_RESUME",
    "EXECUTION_START",
    "EXECUTOR_ERROR",
    "EXPECTED_DIFF_OVER_LIMIT",
    "FILES_MAX_HIGH",
    "FILE_NOT_FOUND",
    "FILE_TOO_LARGE",
    "FORBIDDEN_PATH_CHANGED",
    "FORGE_CONFIG_INVALID",
    "FORGE_FORBIDDEN",
    "FORGE_HTTP_ERROR",
    "FORGE_INTERNAL",
    "FORGE_IO_ERROR",
    "FORGE_NOTHING_TO_PUBLISH",
    "FORGE_NOT_FOUND",
    "FORGE_OPERATION_NOT_PERMITTED",
    "FORGE_PERMISSION_DENIED",
    "FORGE_PUSH_FAILED",
    "FORGE_PUSH_REJECTED",
    "FORGE_RATE_LIMITED",
    "FORGE_RECORD_INVALID",
    "FORGE_REF_INVALID",
    "FORGE_RESPONSE_INVALID",
    "FORGE_UNAUTHORIZED",
    "FORGE_UNREACHABLE",
    "GATE_CHECK",
    "GH_FORBIDDEN",
    "GH_NOT_FORBIDDEN",
    "GIT_CONFIG_TAMPERED",
    "GIT_DIR_PROTECTED",
    "GIT_ERROR",
    "GIT_FAILED",
    "HARD_LINK_REFUSED",
    "INTERNAL_ERROR",
    "INVALID_ARGUMENTS",
    "INVALID_REGEX",
    "INVALID_TYPE",
    "INVALID_VALUE",
    "IO_ERROR",
    "JSON_PARSE_ERROR",
    "LLM_ANSWER_INVALID",
    "LLM_ANSWER_TRUNCATED",
    "LLM_CALL",
    "LLM_HTTP_ERROR",
    "LLM_PLANNING_FAILED",
    "LLM_PLAN_INVALID",
    "LLM_PROVIDER_INVALID",
    "LLM_TIMEOUT",
    "LLM_UNREACHABLE",
    "LLM_USAGE",
    "LOOP_DETECTED",
    "MAX_ITERATIONS",
    "MAX_REVISIONS_EXCEEDED",
    "MAX_STEPS_PER_RUN",
    "MCP_ERROR",
    "MCP_TOOL_ERROR",
    "MERGE_CONFLICT",
    "MISSING_REQUIRED_KEY",
    "MODEL_ERROR",
    "MODEL_NOT_CONFIGURED",
    "NODE_OPTIONS",
    "NOT_A_DIRECTORY",
    "NOT_A_FILE",
    "NOT_FOUND",
    "NO_STEPS",
    "ORIGIN_REFUSED",
    "OTLP_CONFIG_INVALID",
    "OTLP_EXPORT_FAILED",
    "PATCH_AMBIGUOUS",
    "PATCH_NO_MATCH",
    "PATH_FORBIDDEN",
    "PATH_OUTSIDE_WORKTREE",
    "PLANNING_ASSEMBLE_FAILED",
    "PLANNING_DRAFT_FAILED",
    "PLANNING_END",
    "PLANNING_FALLBACK",
    "PLANNING_SKIPPED",
    "PLANNING_START",
    "PLANNING_UNCLEAR_GOAL",
    "PLAN_BACKGROUND_PROCESS",
    "PLAN_CACHE_HIT",
    "PLAN_CACHE_MISS",
    "PLAN_CACHE_STORE",
    "PLAN_CACHE_SWEEP",
    "PLAN_COMMAND_NEEDS_APPROVAL",
    "PLAN_COMMAND_REFUSED",
    "PLAN_INFINITE_LOOP",
    "PLAN_INVALID",
    "PLAN_ORDER_INVALID",
    "PLAN_PATH_OUTSIDE_REPO",
    "PLAN_PRIVILEGE_ESCALATION",
    "PLAN_REVISION",
    "PLAN_REVISION_MODEL_FAILED",
    "PLAN_SECRET_READ",
    "PLAN_TOO_LARGE",
    "PLAN_VALIDATION",
    "POLICY_BACKGROUND_PROCESS",
    "POLICY_CREDENTIAL_ACCESS",
    "POLICY_DANGEROUS_ENV",
    "POLICY_DANGEROUS_PERMISSIONS",
    "POLICY_DESTRUCTIVE_DELETE",
    "POLICY_DYNAMIC_COMMAND",
    "POLICY_EMPTY_COMMAND",
    "POLICY_EVAL",
    "POLICY_FORBIDDEN_PATTERN",
    "POLICY_FORK_BOMB",
    "POLICY_GIT_EXEC_OPTION",
    "POLICY_GIT_INTERNALS",
    "POLICY_INFINITE_LOOP",
    "POLICY_INTERPRETER_CODE",
    "POLICY_LINK_OUTSIDE",
    "POLICY_LISTEN_ALL_INTERFACES",
    "POLICY_NETWORK_CONFIG",
    "POLICY_NOT_ALLOWED",
    "POLICY_OPERATOR_ABUSE",
    "POLICY_OUTSIDE_WORKTREE",
    "POLICY_PARSE_ERROR",
    "POLICY_PERSISTENCE",
    "POLICY_PIPE_TO_SHELL",
    "POLICY_PRIVILEGE_ESCALATION",
    "POLICY_REMOTE_CODE",
    "POLICY_REMOTE_WRITE",
    "POLICY_SECRET_READ",
    "POLICY_SHELL_FUNCTION",
    "POLICY_SYSTEM_CONTROL",
    "POLICY_SYSTEM_PATH",
    "POLICY_TOO_DEEP",
    "POLICY_TOO_LONG",
    "POLICY_UNRESOLVED_EXPANSION",
    "POLICY_UNSUPPORTED_SYNTAX",
    "PREFLIGHT_FAILED",
    "PROCESS_ERROR",
    "PYTEST_ADDOPTS",
    "REPO_MISMATCH",
    "REPO_NOT_FOUND",
    "REPO_SCAN_FAILED",
    "REQUEST_EMPTY",
    "REQUEST_INVALID",
    "REQUEST_TOO_LARGE",
    "REQUEST_UNREADABLE",
    "REQUIRES_HUMAN_INTERVENTION",
    "RESOURCE_UNKNOWN",
    "RESTATE_IDENTITY_INVALID",
    "RESTATE_UNAVAILABLE",
    "REVISION_COMMAND_REFUSED",
    "REVISION_INVALID",
    "REVISION_LIMIT_REACHED",
    "REVISION_NO_CHANGES",
    "RUNS_ROOT_MISSING",
    "RUN_ACTIVE",
    "RUN_DIR_INVALID",
    "RUN_FAILED",
    "RUSTUP_AUTO_INSTALL",
    "SANDBOX_UNAVAILABLE",
    "SCOPE_DIFF_OVER_LIMIT",
    "SECRET_DETECTED",
    "SINCE_INVALID",
    "SIZE_ESTIMATION",
    "STEP_ACTION",
    "STEP_END",
    "STEP_ID_DUPLICATE",
    "STEP_ID_INVALID",
    "STEP_NOT_READY",
    "STEP_NO_CHANGE",
    "STEP_SCOPE_EXCEEDED",
    "STEP_SKIPPED",
    "STEP_START",
    "STEP_TOO_LARGE",
    "STEP_UNKNOWN",
    "STEP_WARNING",
    "STEP_WORKSPACE",
    "SYMLINK_ESCAPE",
    "SYMLINK_WRITE_REFUSED",
    "TOKEN_BUDGET_EXCEEDED",
    "TOOL_CALL",
    "TOOL_FORBIDDEN",
    "TOOL_NOT_ALLOWED",
    "TOOL_UNKNOWN",
    "TOO_MANY_ASSUMPTIONS",
    "TOO_MANY_STEPS",
    "TOTAL_TIMEOUT",
    "TRACE_ERROR",
    "TRIGGER_PAYLOAD",
    "UNIT_TEST",
    "UNIT_TEST_FAILED",
    "UNIT_TEST_TIMEOUT",
    "UNKNOWN_AC_LINK",
    "UNKNOWN_DEPENDENCY",
    "UNKNOWN_TOOL",
    "UNSUPPORTED_VERSION",
    "UNTRUSTED_CONFIG_KEY",
    "USAGE_ERROR",
    "UV_EXCLUDE_NEWER",
    "WORKTREE_DIRTY",
    "WORK_BRANCH_NOT_FROM_BASE",
    "WORK_BRANCH_REQUIRED",
];

/// Whether `word` is one of [`CONTRACT_CODES`].
pub fn is_contract_code(word: &str) -> bool {
    CONTRACT_CODES.binary_search(&word).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mask::Masker;
    use std::collections::BTreeSet;
    use std::path::{Path, PathBuf};

    fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path.file_name().is_some_and(|n| n != "env_vars.rs")
            {
                out.push(path);
            }
        }
    }

    /// Every contract identifier in the crates' sources, by the rule above.
    fn scanned() -> BTreeSet<String> {
        let crates = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut files = Vec::new();
        for krate in std::fs::read_dir(&crates).unwrap().flatten() {
            sources(&krate.path().join("src"), &mut files);
        }
        let re = regex::Regex::new(
            r#"(?:const ([A-Z0-9_]+): &str = |=> )"([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)""#,
        )
        .unwrap();
        let mut out = BTreeSet::new();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for c in re.captures_iter(&text) {
                let code = &c[2];
                if c.get(1).is_none_or(|name| name.as_str() == code) {
                    out.insert(code.to_string());
                }
            }
        }
        out
    }

    #[test]
    fn contract_codes_list_every_code_of_the_sources() {
        let scanned = scanned();
        let listed: BTreeSet<String> = CONTRACT_CODES.iter().map(|c| c.to_string()).collect();
        let mut sorted = CONTRACT_CODES.to_vec();
        sorted.sort_unstable();
        if scanned != listed || sorted != CONTRACT_CODES {
            if std::env::var_os("UPDATE_CONTRACT_CODES").is_some() {
                let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/contract_codes.rs");
                let text = std::fs::read_to_string(&path).unwrap();
                let start = text.find("&[\n").unwrap() + 3;
                let end = text.find("];\n").unwrap();
                let body: String = scanned.iter().map(|c| format!("    \"{c}\",\n")).collect();
                std::fs::write(&path, format!("{}{body}{}", &text[..start], &text[end..])).unwrap();
                return;
            }
            let missing: Vec<_> = scanned.difference(&listed).collect();
            let stale: Vec<_> = listed.difference(&scanned).collect();
            panic!(
                "CONTRACT_CODES drifted (missing {missing:?}, stale {stale:?}); run UPDATE_CONTRACT_CODES=1 cargo test -p dandori-trace --lib contract_codes"
            );
        }
    }

    /// No code of the contract is masked, in the forms reports and traces
    /// write it, by the default masker or one whose patterns are the code's
    /// own words.
    #[test]
    fn no_reason_code_is_masked() {
        for code in CONTRACT_CODES {
            let words: Vec<String> = code.split('_').map(str::to_lowercase).collect();
            for masker in [Masker::default(), Masker::new(true, words)] {
                for text in [
                    format!("{code}: budget exceeded"),
                    format!("{code}: token budget exceeded (4577 used + 3527 needed > 5000)"),
                    format!("step S01 failed: {code}: the diff contains a key"),
                    format!("reason={code} next"),
                    format!("{{\"reason\":\"{code}: budget exceeded\"}}"),
                    format!("| `{code}` | budget exceeded |"),
                ] {
                    assert_eq!(masker.mask_str(&text), text, "{code}");
                }
            }
        }
        // A secret assignment is still masked.
        let m = Masker::default();
        assert_eq!(m.mask_str("DB_PASSWORD: hunter22"), "DB_PASSWORD: ***");
        assert_eq!(m.mask_str("GITLAB_TOKEN=abcdef12"), "GITLAB_TOKEN=***");
    }
}
