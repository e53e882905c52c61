mod log;
// --
mod metrics;
// --
mod otlp;
// --
