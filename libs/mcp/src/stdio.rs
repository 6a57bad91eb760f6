//! Stdio MCP servers run inside the agent's sandbox, never on the worker
//! (`hermes_sandbox::process`): their stdio is the MCP client's byte stream. Dropping the
//! session closes the stream, and sandboxd kills the program's process group.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use hermes_sandbox::proto::StdioStart;
use hermes_sandbox::{SandboxKey, Sandboxes};

use crate::{Connect, HttpConnector, McpConnection, McpError, McpServerSpec, ServerKey, Transport};

/// HTTP servers from the worker, stdio servers in the sandbox.
pub struct SandboxConnector {
    pub sandboxes: Arc<dyn Sandboxes>,
    pub http: HttpConnector,
}

impl Connect for SandboxConnector {
    fn connect<'a>(
        &'a self,
        key: &'a ServerKey,
        spec: &'a McpServerSpec,
    ) -> BoxFuture<'a, Result<McpConnection, McpError>> {
        match spec.transport() {
            Ok(Transport::Stdio) => Box::pin(stdio(self.sandboxes.clone(), key, spec)),
            _ => self.http.connect(key, spec),
        }
    }
}

/// Starts `spec`'s program in `key`'s sandbox and opens a session over its stdio.
async fn stdio(
    sandboxes: Arc<dyn Sandboxes>,
    key: &ServerKey,
    spec: &McpServerSpec,
) -> Result<McpConnection, McpError> {
    let start = StdioStart {
        command: spec.command.clone().unwrap_or_default(),
        args: spec.args.clone(),
        env: spec.env.clone().into_iter().collect(),
        // Its own user: the agent can neither read its secrets nor change its code.
        as_mcp_user: true,
    };
    let process = hermes_sandbox::process::spawn(
        sandboxes.as_ref(),
        SandboxKey { tenant: key.tenant, agent: key.agent, workspace: hermes_core::Workspace::Shared },
        start,
    )
    .await
    .map_err(McpError::Connect)?;
    let ended = process.ended.clone();
    McpConnection::start(process.io, key, spec).await.map_err(|e| {
        let why = ended.lock().ok().and_then(|w| w.clone());
        let secrets = spec.secret_values();
        match why {
            Some(why) => McpError::Connect(hermes_tools::text::redact(&format!("{e}; {why}"), &secrets)),
            None => e,
        }
    })
}
