mod protocol;
// --
mod workflow;
