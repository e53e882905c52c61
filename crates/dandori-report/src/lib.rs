//! Report: report.md, errors.json and the completion summary.
