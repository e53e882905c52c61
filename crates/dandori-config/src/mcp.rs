//! `mcp:`: MCP servers whose tools the runner's LLM tool loop may use.
//!
//! ```yaml
//! mcp:
//!   servers:
//!     - name: fs
//!       command: mcp-server-filesystem
//!       args: ["{worktree}"]
//!     - name: git
//!       command: mcp-server-git
//!       args: ["--repository", "{worktree}"]
//! ```

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    pub servers: Vec<McpServerConfig>,
}

/// A stdio MCP server. Its tools are exposed as `<name>__<tool>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Letters, digits, `_` and `-`; no `__`; unique.
    pub name: String,
    /// The program, found on the command environment's `PATH`.
    pub command: String,
    /// Arguments; `{worktree}` is replaced by the step's worktree root.
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the command environment; `{worktree}` is replaced in values.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Run the server inside the command sandbox (worktree writable, the rest
    /// read-only) when one is available.
    #[serde(default = "default_true")]
    pub sandbox: bool,
}

fn default_true() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn servers_from_yaml_with_defaults() {
        let yaml = "servers:\n  - name: git\n    command: mcp-server-git\n    args: [\"--repository\", \"{worktree}\"]\n  - name: fs\n    command: mcp-server-filesystem\n    sandbox: false\n    env: {A: b}\n";
        let config: McpConfig = serde_norway::from_str(yaml).unwrap();
        assert_eq!(
            config,
            McpConfig {
                servers: vec![
                    McpServerConfig {
                        name: "git".into(),
                        command: "mcp-server-git".into(),
                        args: vec!["--repository".into(), "{worktree}".into()],
                        env: BTreeMap::new(),
                        sandbox: true,
                    },
                    McpServerConfig {
                        name: "fs".into(),
                        command: "mcp-server-filesystem".into(),
                        args: vec![],
                        env: BTreeMap::from([("A".into(), "b".into())]),
                        sandbox: false,
                    },
                ]
            }
        );
    }
}
