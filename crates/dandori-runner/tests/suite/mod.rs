mod e2e_command;
mod support;
