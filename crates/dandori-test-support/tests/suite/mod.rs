mod agent_clis;
mod fake_llm;
mod git;
