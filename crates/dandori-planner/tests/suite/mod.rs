mod examples;
mod fail_closed;
mod intake;
mod run_dir;
mod support;
