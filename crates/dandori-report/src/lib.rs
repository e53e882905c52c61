//! Report of a run: `report.md` (acceptance criteria ↔ steps ↔ commits, status,
//! timings, tokens, a Mermaid DAG and a Gantt chart of the real timeline),
//! `report.html` (the same report as one page, its charts drawn as inline SVG),
//! `errors.json` with reason codes, and the seed 000 completion summary types.
//!
//! Pure: functions from a documented input to text or serialisable values. The
//! runner gathers the input and writes the files (atomically).

pub mod charts;
pub mod completion;
pub mod errors;
pub mod html;
pub mod markdown;
pub mod reason;

pub use completion::{
    Completion, CompletionStatus, CoverageResult, FollowUp, StepSummary, StepTiming, Summary,
    TokenUsage, exit,
};
pub use errors::{ErrorEntry, ErrorsFile};
pub use markdown::{ReportInput, StepMetrics, render};

use dandori_plan::StepStatus;

/// The JSON spelling of a step status (`done`, `needs_input`, …).
pub fn step_status_str(s: StepStatus) -> &'static str {
    match s {
        StepStatus::Pending => "pending",
        StepStatus::Running => "running",
        StepStatus::Done => "done",
        StepStatus::Failed => "failed",
        StepStatus::Skipped => "skipped",
        StepStatus::NeedsInput => "needs_input",
    }
}
