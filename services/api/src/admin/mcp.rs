//! An agent's MCP servers (upstream Hermes's `mcp_servers`): listed with every `env` and
//! `headers` value masked, set whole by name (the values sealed), removed. Editing them is
//! editing the agent (`agents.edit`); each change is audited without its secret values.

use axum::Json;
use axum::extract::Path;
use axum::http::StatusCode;

use hermes_core::access::AdminOp;
use hermes_mcp_config::McpServerSpec;
use hermes_wire::List;
use hermes_wire::admin::{McpServer, McpServerSet};

use crate::admin::errors::{Result, ops_error, store_error};
use crate::admin::tenant_call::{AgentCall, Body};
use crate::documented::{AgentPath, MayNotEditAgents, NoSuchAgent, TenantPath};

fn shown(server: hermes_store::StoredMcpServer) -> McpServer {
    McpServer { name: server.name, enabled: server.enabled, config: server.spec, updated_at: server.updated_at }
}

#[utoipa::path(get, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers", tag = "admin: agents",
    params(TenantPath, AgentPath),
    responses((status = 200, description = "The agent's MCP servers, secret values masked", body = List<McpServer>),
        (status = 404, description = "No such agent (or not yours)", body = hermes_wire::ErrorBody)))]
pub(crate) async fn list(call: AgentCall) -> Result<Json<List<McpServer>>> {
    let (t, agent) = call.allow_agent(AdminOp::ViewAgents).await?;
    let servers = call.state.store.agents().mcp_servers(t.id, agent.id).await.map_err(store_error)?;
    Ok(Json(List::of(servers.into_iter().map(shown).collect())))
}

#[utoipa::path(put, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}", tag = "admin: agents",
    request_body(content = Object, description = "Upstream's shape: `command`, `args`, `env` (stdio) or `url`, `headers` (HTTP); `timeout`, `connect_timeout`, `enabled`, `tools` {`include`, `exclude`, `resources`, `prompts`}, `sampling` {`enabled` (off by default), `model`, `max_tokens_cap`, `timeout`, `max_rpm`, `allowed_models`, `log_level`}. `${NAME}` in `env` and `headers` values is the team's key named NAME (a credential)"),
    params(TenantPath, AgentPath,
        ("name" = String, Path, description = "The server's name (letters, digits, `-`, `_`; at most 40)")),
    responses((status = 200, description = "Set; the agent's next turn uses it", body = McpServerSet),
        (status = 400, description = "A configuration that cannot work, or a URL the outbound policy refuses", body = hermes_wire::ErrorBody),
        MayNotEditAgents,
        NoSuchAgent))]
pub(crate) async fn set(
    call: AgentCall,
    Path((_, _, name)): Path<(String, String, String)>,
    body: Body<McpServerSpec>,
) -> Result<Json<McpServerSet>> {
    let (t, agent) = call.allow_agent(AdminOp::EditAgents).await?;
    let hermes_http::ApiJson(spec) = body?;
    let checks = (&call.state.mcp_policy(), call.state.secrets.as_ref());
    let set = hermes_ops::mcp::set(&call.state.store, call.caller.audit(), (t.id, &agent), &name, &spec, checks).await;
    Ok(Json(set.map_err(ops_error)?))
}

#[utoipa::path(delete, path = "/admin/v1/tenants/{tenant}/agents/{agent}/mcp-servers/{name}", tag = "admin: agents",
    params(TenantPath, AgentPath,
        ("name" = String, Path, description = "The server's name")),
    responses((status = 204, description = "Removed; the agent's next turn no longer has its tools"),
        MayNotEditAgents,
        (status = 404, description = "No such agent or server", body = hermes_wire::ErrorBody)))]
pub(crate) async fn remove(call: AgentCall, Path((_, _, name)): Path<(String, String, String)>) -> Result<StatusCode> {
    let (t, agent) = call.allow_agent(AdminOp::EditAgents).await?;
    hermes_ops::mcp::remove(&call.state.store, call.caller.audit(), (t.id, &agent), &name).await.map_err(ops_error)?;
    Ok(StatusCode::NO_CONTENT)
}
