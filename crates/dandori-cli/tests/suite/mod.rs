mod env;
// --
mod plan;
