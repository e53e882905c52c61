//! dandori as an MCP server, and the reading of runs back from their directories.
//!
//! - [`server::DandoriServer`]: `dandori mcp`, an MCP server over stdio (rmcp)
//!   whose tools plan a request, show the graph, and let the client be the
//!   executor of a run step by step ([`handoff`]): the runner keeps its gates,
//!   worktrees, unit commands, commits with trailers and stage.json.
//! - [`http`]: the same server over streamable HTTP (`dandori mcp --http ADDR`),
//!   loopback by default, bearer token for anything else.
//! - [`tools`]: the catalogue and the tool sets (`core`, `standard`, `all`).
//! - [`inspect`]: runs listing, one run's progress, report re-rendering and trace
//!   filtering, shared with `dandori runs | status | report | trace`.

pub mod error;
pub mod guard;
pub mod handoff;
pub mod http;
pub mod inspect;
pub mod server;
pub mod service;
pub mod tools;

pub use error::McpError;
pub use server::DandoriServer;
pub use service::{Host, ServiceOptions};
pub use tools::ToolSet;
