mod env;
// --
mod plan;
// --
mod run;
// --
