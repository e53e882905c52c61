mod corpus;
mod examples;
mod fail_closed;
mod intake;
mod llm;
mod offline_quality;
mod run_dir;
mod support;
