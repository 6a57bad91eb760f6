//! The MCP client's settings (`[mcp]`): which private hosts tenants' HTTP MCP servers may be
//! on, and how long an idle session is kept.

use serde::{Deserialize, Serialize};

/// `[mcp]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Hosts (`name`, `name:port`, an address) an agent's HTTP MCP server may be on although
    /// they are private: the MCP servers the operator runs inside the cluster. Every other
    /// server must be on a public address.
    pub allow_private_hosts: Vec<String>,
    /// A session unused this long is closed (a stdio server's process goes with it).
    pub idle_seconds: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self { allow_private_hosts: Vec::new(), idle_seconds: 600 }
    }
}
