mod fake_llm;
mod git;
