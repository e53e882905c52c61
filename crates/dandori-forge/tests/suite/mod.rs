mod bot;
mod ci_events;
mod client;
mod model_revision;
mod openapi;
mod reference;
mod revise;
mod scopes;
