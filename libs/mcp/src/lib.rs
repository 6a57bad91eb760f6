//! The MCP client: the servers an agent is configured with (upstream Hermes's `mcp_servers`),
//! their tools offered to the model as `mcp_<server>_<tool>`, over the official `rmcp` SDK.
//! HTTP servers are reached from the worker through the public-address client; stdio servers
//! run inside the agent's sandbox, their stdio carried over sandboxd's protocol (the worker
//! gives a [`Connect`] that does so).

mod connection;
mod naming;
mod pool;
mod sampling;
mod server_key;
/// An MCP server's configuration (its own crate, for the admin API and hermesctl).
pub use hermes_mcp_config as spec;
mod stdio;
mod tool;
mod turn_tools;

pub use connection::{ListLimits, ListedTool, McpConnection, McpError, Offers};
pub use pool::{Connect, HttpConnector, McpServers};
pub use sampling::{Callers, Calling, SampleAnswer, SampleMessage, SampleRequest, Sampler};
pub use server_key::ServerKey;
pub use spec::{McpServerSpec, SamplingSpec, ToolFilter, Transport};
pub use stdio::SandboxConnector;
pub use tool::{FileKeeper, McpTool, TurnHooks, retained_tool_names, strip_invisible};
pub use turn_tools::Unavailable;

#[cfg(test)]
mod tests;
