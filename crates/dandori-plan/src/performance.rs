//! Seed 000 §13.4 performance targets: the time each planning phase and a whole
//! task may take. One table, read by `dandori metrics` (dandori-obs) and by
//! report.md (dandori-report).

/// One time target of seed 000 §13.4.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimeTarget {
    /// The measure's name in `dandori metrics` and report.md.
    pub name: &'static str,
    /// The target as the seed writes it, in seconds (`<5`).
    pub target: &'static str,
    /// The limit in seconds (the value must be below it).
    pub limit_secs: f64,
    /// What the seed measures.
    pub description: &'static str,
}

impl TimeTarget {
    /// Whether `secs` meets the target (strictly below the limit).
    pub fn met(&self, secs: f64) -> bool {
        secs < self.limit_secs
    }
}

/// Seed 000 §13.4 planning time, one per phase of §2, with the key of
/// `PLANNING_END.data.phase_durations_ms` that records it.
pub const PLANNING_PHASES: [(&str, TimeTarget); 3] = [
    (
        "goal_understanding",
        TimeTarget {
            name: "goal_understanding_time",
            target: "<5",
            limit_secs: 5.0,
            description: "planning: goal understanding (request intake and repository gathering)",
        },
    ),
    (
        "task_decomposition",
        TimeTarget {
            name: "task_decomposition_time",
            target: "<10",
            limit_secs: 10.0,
            description: "planning: task decomposition (the planner's draft)",
        },
    ),
    (
        "action_plan",
        TimeTarget {
            name: "action_plan_time",
            target: "<5",
            limit_secs: 5.0,
            description: "planning: action plan generation (ordering, sizing, dependencies, validation)",
        },
    ),
];

/// Seed 000 §13.4 processing time of a whole task (planning + execution) by its
/// size: simple < 1 min, moderate < 5 min, complex < 15 min.
pub const TASK_TIMES: [TimeTarget; 3] = [
    TimeTarget {
        name: "task_time_simple",
        target: "<60",
        limit_secs: 60.0,
        description: "a simple task (size XS or S), planning + execution",
    },
    TimeTarget {
        name: "task_time_moderate",
        target: "<300",
        limit_secs: 300.0,
        description: "a moderate task (size M), planning + execution",
    },
    TimeTarget {
        name: "task_time_complex",
        target: "<900",
        limit_secs: 900.0,
        description: "a complex task (size L or XL), planning + execution",
    },
];

/// The task target of a seed 003 §3.2 size category (XS, S simple; M moderate;
/// L, XL complex); None outside XS–XL.
pub fn task_time_target(size_category: &str) -> Option<TimeTarget> {
    match size_category {
        "XS" | "S" => Some(TASK_TIMES[0]),
        "M" => Some(TASK_TIMES[1]),
        "L" | "XL" => Some(TASK_TIMES[2]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_follow_the_seed() {
        assert_eq!(task_time_target("XS").map(|t| t.limit_secs), Some(60.0));
        assert_eq!(task_time_target("M").map(|t| t.limit_secs), Some(300.0));
        assert_eq!(task_time_target("XL").map(|t| t.limit_secs), Some(900.0));
        assert_eq!(task_time_target("Q"), None);
        let t = PLANNING_PHASES[1].1;
        assert!(t.met(9.9) && !t.met(10.0));
    }
}
