//! Tools for the LLM tool loop: files, search, commands, git, MCP servers; tool policy.
