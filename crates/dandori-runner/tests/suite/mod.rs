mod e2e_command;
mod evidence;
mod guardrails;
mod llm_loop;
mod parallel;
mod snapshots_report;
mod support;
