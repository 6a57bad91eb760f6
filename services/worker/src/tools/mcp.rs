//! An agent's MCP servers in its turns: the servers' tools join the turn's registry
//! (`mcp_<server>_<tool>`), from the worker's live sessions (`hermes_mcp::McpServers`), which
//! it keeps between turns and closes when idle.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use hermes_core::{AgentId, TenantId, Workspace};
use hermes_mcp::spec::substitute;
use hermes_mcp::{HttpConnector, McpServerSpec, McpServers};
use hermes_net_policy::outbound::Policy;
use hermes_sandbox::SandboxKey;
use hermes_store::{CredentialPools, SecretBox, StoredMcpServer};
use hermes_tools::ToolRegistry;

/// The worker's sessions: HTTP servers through a client that reaches public addresses only,
/// plus the hosts the operator allowed (`mcp.allow_private_hosts`); stdio servers in the
/// agent's sandbox.
pub(crate) fn servers(
    config: &hermes_config::McpConfig,
    sandboxes: Arc<dyn hermes_sandbox::Sandboxes>,
) -> Result<Arc<McpServers>, reqwest::Error> {
    let policy = Arc::new(Policy::trusting(&config.allow_private_hosts));
    // No redirects; calls have their server's `timeout`, listings at most 30 s (`ListLimits`).
    let http = HttpConnector::new(policy)?;
    let connector = hermes_mcp::SandboxConnector { sandboxes, http };
    Ok(McpServers::new(Box::new(connector), Duration::from_secs(config.idle_seconds.max(10))))
}

/// Closes idle sessions every minute until `shutdown`.
pub(crate) async fn reap(servers: Arc<McpServers>, shutdown: CancellationToken) {
    let mut rounds = crate::every::Every::new(Duration::from_secs(60), shutdown);
    while rounds.next().await {
        let closed = servers.reap();
        if closed > 0 {
            tracing::debug!(closed, "closed idle MCP sessions");
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

/// The key of the tenant's credential pool `name` (case-insensitively), the first by priority
/// that may go to `host` (an HTTP server's header).
fn credential(
    tenant: TenantId,
    pools: &CredentialPools,
    secrets: Option<&SecretBox>,
    name: &str,
    host: &str,
) -> Result<String, String> {
    let (_, (creds, _)) = pools
        .iter()
        .find(|(pool, _)| pool.eq_ignore_ascii_case(name))
        .ok_or_else(|| format!("`${{{name}}}` names none of the team's keys (add a credential named {name})"))?;
    let key = creds
        .iter()
        .find(|c| c.allows(host))
        .ok_or_else(|| format!("the team's {name} key is not allowed to go to {host}"))?;
    let secrets = SecretBox::required(secrets, "the team's keys").map_err(|e| e.to_string())?;
    key.open(tenant, secrets).map_err(|e| format!("the team's {name} key cannot be opened: {e}"))
}

/// What a stdio server's `${NAME}`s stand for: the placeholders its sandbox (the agent's
/// shared one) holds for the agent's bound secrets, which the egress proxy swaps for the keys
/// on the way to their hosts only. The key itself never enters the sandbox (issue 39).
type Placeholders = BTreeMap<String, String>;

async fn placeholders(
    kit: &crate::tools::Toolkit,
    (tenant, agent): (TenantId, AgentId),
    spec: &McpServerSpec,
) -> Result<Placeholders, String> {
    let refs = spec.env_only().secret_refs().map_err(|e| e.0)?;
    if refs.is_empty() {
        return Ok(Placeholders::new());
    }
    let secrets = kit
        .sandbox_secrets
        .as_ref()
        .ok_or("team secrets cannot reach this worker's sandboxes (its egress proxy has no trusted roots)")?;
    let key = SandboxKey { tenant, agent, workspace: Workspace::Shared };
    let mut found = Placeholders::new();
    for name in refs {
        let placeholder = secrets.placeholder_for(key, &name).await?;
        found.insert(name, placeholder);
    }
    Ok(found)
}

/// Fills `${NAME}` in a server's `env` values with `placeholders` and in its `headers` values
/// with the tenant's keys (each only where it is allowed to go: the server's host), as upstream
/// fills them from its environment. The filled headers are secrets like the rest: redacted
/// from everything the model reads.
fn fill_secrets(
    spec: &mut McpServerSpec,
    tenant: TenantId,
    (pools, secrets): (&CredentialPools, Option<&SecretBox>),
    placeholders: &Placeholders,
) -> Result<(), String> {
    for value in spec.env.values_mut() {
        *value = substitute(value, &|name| {
            placeholders.get(name).cloned().ok_or_else(|| format!("`${{{name}}}` is not a bound secret of the agent"))
        })?;
    }
    let host =
        spec.url.as_deref().and_then(|u| reqwest::Url::parse(u).ok()).and_then(|u| u.host_str().map(str::to_owned));
    for value in spec.headers.values_mut() {
        let host = host.as_deref().unwrap_or_default();
        *value = substitute(value, &|name| credential(tenant, pools, secrets, name, host))?;
    }
    Ok(())
}

/// A stored server as the turn connects to it: sealed values put back, `${NAME}`s filled in.
async fn usable(
    kit: &crate::tools::Toolkit,
    models: &crate::models::Models,
    stored: &StoredMcpServer,
) -> Result<McpServerSpec, String> {
    let (tenant, agent) = (models.tenant, models.agent.id);
    let mut spec = spec_of(tenant, stored, kit.secrets.as_ref())?;
    let placeholders = placeholders(kit, (tenant, agent), &spec).await?;
    fill_secrets(&mut spec, tenant, (&models.pools, kit.secrets.as_ref()), &placeholders)?;
    Ok(spec)
}

/// Keeps the pictures of MCP results with the turn (`mcp/<name>`), for the chat to be sent
/// (when the answer names them: unlike a generated image, a result's picture may be for the
/// model alone) or, in an API turn, linked.
struct TurnFiles {
    store: hermes_store::Store,
    links: Option<crate::tools::image::FileLinks>,
}

impl hermes_mcp::FileKeeper for TurnFiles {
    fn keep<'a>(
        &'a self,
        ctx: &'a hermes_tools::ToolCtx,
        name: String,
        mime: String,
        bytes: Vec<u8>,
    ) -> futures_util::future::BoxFuture<'a, Result<String, String>> {
        Box::pin(async move {
            let target = format!("mcp/{name}");
            let how = match self.links.as_ref().and_then(|links| links.url(ctx.turn_id, &name)) {
                Some(url) => format!("kept; to show it, put ![a short description]({url}) in your answer"),
                None => format!("kept; to show it, put MEDIA:{target} on a line of its own in your answer"),
            };
            let file = hermes_store::turn_files::TurnFile { target, name, mime, data: Ok(bytes) };
            self.store.turns().save_turn_file(ctx.tenant_id, ctx.turn_id, &file).await.map_err(|e| e.to_string())?;
            Ok(how)
        })
    }
}

/// Adds the tools of the agent's enabled servers to `tools`; servers with sampling on get
/// their requests answered by the turn's model (`models`), and their results' pictures are
/// kept with the turn (`links`: an API turn's).
pub(crate) async fn register(
    kit: &crate::tools::Toolkit,
    models: &crate::models::Models,
    stored: &[StoredMcpServer],
    tools: &mut ToolRegistry,
    links: Option<crate::tools::image::FileLinks>,
) {
    let (tenant, agent) = (models.tenant, models.agent.id);
    let mut specs: Vec<(String, McpServerSpec)> = Vec::new();
    for server in stored.iter().filter(|s| s.enabled) {
        match usable(kit, models, server).await {
            Ok(spec) => specs.push((server.name.clone(), spec)),
            Err(e) => tracing::warn!(server = %server.name, error = %e, "an MCP server's configuration cannot be used"),
        }
    }
    let Some(servers) = kit.mcp.as_ref().filter(|_| !specs.is_empty()) else { return };
    let sampler: Arc<dyn hermes_mcp::Sampler> = Arc::new(crate::tools::mcp_sampling::TurnSampler {
        models: models.clone(),
        counters: kit.window_counters.clone(),
        tenant,
    });
    let keeper: Arc<dyn hermes_mcp::FileKeeper> = Arc::new(TurnFiles { store: kit.store.clone(), links });
    let hooks = hermes_mcp::TurnHooks { sampler: Some(sampler), keeper: Some(keeper) };
    let (found, unavailable) = servers.tools(tenant, agent, specs, hooks).await;
    for server in unavailable {
        tracing::warn!(server = %server.server, reason = %server.reason, "an MCP server is unavailable this turn");
    }
    for tool in found {
        tools.register(tool);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pools() -> CredentialPools {
        let key = hermes_store::PooledCredential {
            id: hermes_core::CredentialId::new(),
            provider: "openai".into(),
            label: "team".into(),
            sealed: Vec::new(),
            priority: 0,
            allowed_hosts: vec!["api.openai.com".into()],
            created_at: chrono::Utc::now(),
        };
        CredentialPools::from([("openai".to_owned(), (vec![key], "fill_first".to_owned()))])
    }

    /// The security review of 2026-12 (H2): a team key never goes into a stdio server's
    /// environment, where the agent's own code could read it; `${NAME}` there is the sandbox's
    /// placeholder of the agent's bound secret, and nothing else.
    #[test]
    fn a_stdio_env_gets_placeholders_never_keys() {
        #[expect(clippy::disallowed_methods, reason = "a test's tenant")]
        let tenant = TenantId::from_authenticated(uuid::Uuid::now_v7());
        let mut spec: McpServerSpec =
            serde_json::from_value(serde_json::json!({"command": "sh", "env": {"K": "${openai}"}})).unwrap();
        let refused = fill_secrets(&mut spec.clone(), tenant, (&pools(), None), &Placeholders::new()).unwrap_err();
        assert!(refused.contains("not a bound secret"), "the pool alone is not enough: {refused}");
        let bound = Placeholders::from([("openai".to_owned(), "hermes_placeholder_ab12".to_owned())]);
        fill_secrets(&mut spec, tenant, (&pools(), None), &bound).unwrap();
        assert_eq!(spec.env["K"], "hermes_placeholder_ab12");
    }
}
