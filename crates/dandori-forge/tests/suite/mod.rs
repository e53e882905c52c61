mod bot;
mod client;
mod model_revision;
mod openapi;
mod reference;
mod revise;
mod scopes;
