mod e2e_command;
mod llm_loop;
mod parallel;
mod support;
