mod client;
mod openapi;
mod reference;
mod revise;
