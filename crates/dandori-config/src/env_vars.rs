//! Every environment variable dandori reads for configuration, with exactly the
//! names of seed 000 §9.2 and seed 002 §8.2. Each overrides one config key
//! ([`OVERRIDES`]); its value is read as YAML (`true`, `5`, `warn`).

/// `planning.enabled` (true/false). Seed 000 §9.2.
pub const PLANNING_ENABLED: &str = "PLANNING_ENABLED";
/// `planning.strategy` (chain_of_thought | hierarchical | simple). Seed 000 §9.2.
pub const PLANNING_STRATEGY: &str = "PLANNING_STRATEGY";
/// `planning.max_subtasks`. Seed 000 §9.2.
pub const PLANNING_MAX_SUBTASKS: &str = "PLANNING_MAX_SUBTASKS";
/// `planning.reflection.enabled`. Seed 000 §9.2.
pub const REFLECTION_ENABLED: &str = "REFLECTION_ENABLED";
/// `planning.reflection.trigger_interval`. Seed 000 §9.2.
pub const REFLECTION_INTERVAL: &str = "REFLECTION_INTERVAL";
/// `planning.revision.max_revisions`. Seed 000 §9.2.
pub const MAX_PLAN_REVISIONS: &str = "MAX_PLAN_REVISIONS";
/// `planning.environment_setup.enabled`. Seed 002 §8.2.
pub const ENVIRONMENT_SETUP_ENABLED: &str = "ENVIRONMENT_SETUP_ENABLED";
/// `planning.environment_setup.execution.command_timeout_seconds`. Seed 002 §8.2.
pub const ENVIRONMENT_SETUP_COMMAND_TIMEOUT: &str = "ENVIRONMENT_SETUP_COMMAND_TIMEOUT";
/// `planning.environment_setup.verification.on_failure` (fail | warn | ignore).
/// Seed 002 §8.2.
pub const ENVIRONMENT_SETUP_VERIFICATION_ON_FAILURE: &str =
    "ENVIRONMENT_SETUP_VERIFICATION_ON_FAILURE";
/// `planning.environment_setup.regeneration.enabled`. Seed 002 §8.2.
pub const ENVIRONMENT_SETUP_REGENERATION_ENABLED: &str = "ENVIRONMENT_SETUP_REGENERATION_ENABLED";

/// Variable → the dotted config key it overrides, in the order they are applied.
pub const OVERRIDES: &[(&str, &str)] = &[
    (PLANNING_ENABLED, "planning.enabled"),
    (PLANNING_STRATEGY, "planning.strategy"),
    (PLANNING_MAX_SUBTASKS, "planning.max_subtasks"),
    (REFLECTION_ENABLED, "planning.reflection.enabled"),
    (REFLECTION_INTERVAL, "planning.reflection.trigger_interval"),
    (MAX_PLAN_REVISIONS, "planning.revision.max_revisions"),
    (
        ENVIRONMENT_SETUP_ENABLED,
        "planning.environment_setup.enabled",
    ),
    (
        ENVIRONMENT_SETUP_COMMAND_TIMEOUT,
        "planning.environment_setup.execution.command_timeout_seconds",
    ),
    (
        ENVIRONMENT_SETUP_VERIFICATION_ON_FAILURE,
        "planning.environment_setup.verification.on_failure",
    ),
    (
        ENVIRONMENT_SETUP_REGENERATION_ENABLED,
        "planning.environment_setup.regeneration.enabled",
    ),
];
