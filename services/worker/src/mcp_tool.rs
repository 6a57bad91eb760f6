//! An agent's MCP servers in its turns: the servers' tools join the turn's registry
//! (`mcp_<server>_<tool>`), from the worker's live sessions (`hermes_mcp::McpServers`), which
//! it keeps between turns and closes when idle.

use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_core::TenantId;
use hermes_mcp::{HttpConnector, McpServerSpec, McpServers};
use hermes_net_policy::outbound::{Policy, client_for};
use hermes_store::{SecretBox, StoredMcpServer};
use hermes_tools::ToolRegistry;

use crate::Runtime;

/// The worker's sessions: HTTP servers through a client that reaches public addresses only,
/// plus the hosts the operator allowed (`mcp.allow_private_hosts`); stdio servers in the
/// agent's sandbox.
pub(crate) fn servers(
    config: &hermes_config::McpConfig,
    sandboxes: Arc<dyn hermes_sandbox::Sandboxes>,
) -> Result<Arc<McpServers>, reqwest::Error> {
    let policy = Arc::new(Policy::trusting(&config.allow_private_hosts));
    // Calls have their own timeouts (a server's `timeout`); this bounds a stuck connection.
    let client = client_for(policy.clone(), Duration::from_secs(10), Duration::from_secs(3_600))?;
    let connector = hermes_mcp::SandboxConnector { sandboxes, http: HttpConnector { client, policy } };
    Ok(McpServers::new(Box::new(connector), Duration::from_secs(config.idle_seconds.max(10))))
}

/// Closes idle sessions every minute until `shutdown`.
pub(crate) async fn reap(servers: Arc<McpServers>, shutdown: CancellationToken) {
    let mut tick = tokio::time::interval(Duration::from_secs(60));
    loop {
        tokio::select! {
            () = shutdown.cancelled() => return,
            _ = tick.tick() => {
                let closed = servers.reap();
                if closed > 0 {
                    tracing::debug!(closed, "closed idle MCP sessions");
                }
            }
        }
    }
}

/// A stored server as its full configuration (the sealed values put back), or why not.
pub(crate) fn spec_of(
    tenant: TenantId,
    stored: &StoredMcpServer,
    secrets: Option<&SecretBox>,
) -> Result<McpServerSpec, String> {
    let mut spec: McpServerSpec = serde_json::from_value(stored.spec.clone()).map_err(|e| e.to_string())?;
    spec.enabled = stored.enabled;
    let has_secrets = !spec.env.is_empty() || !spec.headers.is_empty();
    if has_secrets {
        let secrets = SecretBox::required(secrets, "an MCP server's env and headers").map_err(|e| e.to_string())?;
        let open = stored.secrets(tenant, secrets).map_err(|e| e.to_string())?;
        let values = |key: &str| -> std::collections::BTreeMap<String, String> {
            serde_json::from_value(open[key].clone()).unwrap_or_default()
        };
        spec.env = values("env");
        spec.headers = values("headers");
    }
    Ok(spec)
}

/// Adds the tools of the agent's enabled servers to `tools`; servers with sampling on get
/// their requests answered by the turn's model (`models`).
pub(crate) async fn register(
    rt: &Arc<Runtime>,
    models: &crate::models::Models,
    stored: &[StoredMcpServer],
    tools: &mut ToolRegistry,
) {
    let (tenant, agent) = (models.tenant, models.agent.id);
    let specs: Vec<(String, McpServerSpec)> = stored
        .iter()
        .filter(|s| s.enabled)
        .filter_map(|s| match spec_of(tenant, s, rt.ctx.secrets.as_ref()) {
            Ok(spec) => Some((s.name.clone(), spec)),
            Err(e) => {
                tracing::warn!(server = %s.name, error = %e, "an MCP server's configuration cannot be read");
                None
            }
        })
        .collect();
    let Some(servers) = rt.mcp.as_ref().filter(|_| !specs.is_empty()) else { return };
    let sampler: Arc<dyn hermes_mcp::Sampler> = Arc::new(crate::mcp_sampling::TurnSampler {
        models: models.clone(),
        counters: rt.ctx.cache.window_counters(),
        tenant,
    });
    let (found, unavailable) = servers.tools(tenant, agent, specs, Some(sampler)).await;
    for server in unavailable {
        tracing::warn!(server = %server.server, reason = %server.reason, "an MCP server is unavailable this turn");
    }
    for tool in found {
        tools.register(tool);
    }
}
