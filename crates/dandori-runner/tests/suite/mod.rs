mod e2e_command;
mod parallel;
mod support;
