mod examples;
mod fail_closed;
mod intake;
mod llm;
mod run_dir;
mod support;
