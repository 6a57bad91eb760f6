//! An agent's MCP servers: set (added or replaced) and removed.

use serde::Serialize;

use hermes_core::{ErrorCode, TenantId};
use hermes_mcp_config::{McpServerSpec, valid_server_name};
use hermes_net_policy::outbound::Policy;
use hermes_store::admin::{Audit, Change};
use hermes_store::{Agent, SecretBox, Store};
use hermes_wire::admin::McpServerSet;

use crate::{OpsError, Result};

/// What of a server's configuration is sealed at rest.
#[derive(Serialize)]
struct Secrets<'a> {
    env: &'a std::collections::BTreeMap<String, String>,
    headers: &'a std::collections::BTreeMap<String, String>,
}

/// Sets `agent`'s server `name` to `spec`, checked: a configuration that can work, a URL
/// `policy` allows (`mcp.allow_private_hosts`), and `${NAME}`s that each name one of the
/// team's keys (in a stdio server's env, one the agent's code may read). Its secrets are
/// sealed with `secrets`; the agent's next turn uses it.
pub async fn set(
    store: &Store,
    by: Audit,
    (tenant, agent): (TenantId, &Agent),
    name: &str,
    spec: &McpServerSpec,
    (policy, secrets): (&Policy, Option<&SecretBox>),
) -> Result<McpServerSet> {
    if !valid_server_name(name) {
        let why = format!("{name:?} is not a server name: letters, digits, - and _, at most 40");
        return Err(OpsError::invalid("name", why));
    }
    spec.validate().map_err(|e| OpsError::invalid("config", e.0))?;
    if let Some(why) = spec.url.as_deref().and_then(|u| url::Url::parse(u).ok()).and_then(|u| policy.refuse(&u)) {
        return Err(OpsError::invalid("url", format!("the server's url is refused: {why}")));
    }
    // `${NAME}` must name one of the team's keys in a header, one of the agent's bound secrets
    // in a stdio server's env (its placeholder: the key never enters the sandbox), now; the
    // turn fills them in when it connects.
    let in_headers = spec.headers_only().secret_refs().map_err(|e| OpsError::invalid("headers", e.0))?;
    store.tenancy().check_secret_refs(tenant, &in_headers).await?;
    let in_env = spec.env_only().secret_refs().map_err(|e| OpsError::invalid("env", e.0))?;
    check_bound(store, (tenant, agent), &in_env).await?;
    let masked = serde_json::to_value(spec.masked()).map_err(|e| OpsError::invalid("config", e.to_string()))?;
    let sealed = serde_json::to_value(Secrets { env: &spec.env, headers: &spec.headers })
        .map_err(|e| OpsError::invalid("config", e.to_string()))?;
    let mut tx = store.audited(tenant, by).await?;
    let replaced = tx.set_mcp_server(agent.id, name, (&masked, spec.enabled), &sealed, secrets).await?;
    let action = if replaced { "mcp_server.updated" } else { "mcp_server.added" };
    tx.commit(Change::new(action, "mcp_server", format!("{}/{name}", agent.id)).after(&masked)).await?;
    Ok(McpServerSet { name: name.to_owned(), enabled: spec.enabled, config: masked })
}

/// Each of `names` names one of `agent`'s bound secrets: its variable, or its credential pool
/// (case-insensitively).
async fn check_bound(store: &Store, (tenant, agent): (TenantId, &Agent), names: &[String]) -> Result<()> {
    if names.is_empty() {
        return Ok(());
    }
    let bound = store.agents().secret_bindings(tenant, agent.id).await?;
    let is_bound = |name: &String| bound.iter().any(|b| &b.env_name == name || b.pool.eq_ignore_ascii_case(name));
    match names.iter().find(|name| !is_bound(name)) {
        None => Ok(()),
        Some(name) => Err(OpsError::invalid(
            "env",
            format!(
                "`${{{name}}}` in a stdio server's env must name one of the agent's bound secrets (its program gets \
                 the sandbox's placeholder, swapped for the key only on the way to the key's hosts): bind the team's \
                 key to {} first (hermesctl secret bind, or the agent's Secrets in the console)",
                agent.name
            ),
        )),
    }
}

/// Removes `agent`'s server `name`; its next turn no longer has its tools.
pub async fn remove(store: &Store, by: Audit, (tenant, agent): (TenantId, &Agent), name: &str) -> Result<()> {
    let mut tx = store.audited(tenant, by).await?;
    let gone = tx.delete_mcp_server(agent.id, name).await;
    let gone = gone.map_err(|e| OpsError::missing(e, ErrorCode::NotFound, "MCP server"))?;
    let change = Change::new("mcp_server.removed", "mcp_server", format!("{}/{name}", agent.id)).before(&gone.spec);
    tx.commit(change).await?;
    Ok(())
}
