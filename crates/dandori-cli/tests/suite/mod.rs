mod env;
// --
mod plan;
// --
mod plan_llm;
// --
mod run;
// --
